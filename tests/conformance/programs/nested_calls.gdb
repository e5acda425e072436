# Nested calls: step into each level, bt at the deepest, up/down/frame, finish back out.
break test_main
continue
step
step
step
step
step
backtrace
frame 2
info locals
info args
up
info args
down 2
info args
frame 0
finish
finish
finish
next
print a
print depth_log
delete
continue
