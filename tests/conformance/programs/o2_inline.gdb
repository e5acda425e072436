# -O2 inlined static functions: a breakpoint on an inlined function, its frames, its arguments.
break test_main
continue
break square
continue
backtrace
info args
print x
up
print i
print v
down
continue
backtrace
info args
print squares
delete
break cube
continue
info args
bt
delete
continue
