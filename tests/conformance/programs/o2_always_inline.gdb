# -O2 an always_inline helper with locals, inside a noinline function.
break test_main
continue
break hash
break fill
continue
info args
continue
backtrace
info args
next
next
info locals
up
info locals
print out
delete
break o2_always_inline.c:16
continue
print last
print out
delete
continue
