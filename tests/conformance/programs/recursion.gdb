# Recursion: a condition on the parameter, a backtrace through the recursive calls, finish, up/down.
break test_main
continue
break fact if n == 2
continue
info args
backtrace
print calls
up
info locals
print n
down
print calls * 2 + 1
finish
delete
tbreak recursion.c:14
continue
step
info args
next
next
print n
delete
continue
