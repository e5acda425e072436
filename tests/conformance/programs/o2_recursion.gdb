# -O2 recursion that stays a call: a condition on the depth, a deep backtrace, finish.
break test_main
continue
break tree if d == 1
continue
backtrace
info args
up
info args
up 2
info args
frame 1
print d
down
finish
finish
delete
tbreak tree if d == 4
continue
info args
next
next
next
next
delete
continue
