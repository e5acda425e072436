# display expressions shown at every stop, and breakpoints in a loop body.
break test_main
continue
display a
display b
display fibs[2]
break fib_display.c:9 if i >= 4
continue
continue
next
next
next
info locals
print fibs
delete
continue
