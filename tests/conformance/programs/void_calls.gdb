# void functions: step into them, finish without a value, tbreak, a watchpoint on a global.
break test_main
continue
tbreak record
continue
info args
step
step
info args
finish
finish
print counter
print log_
watch counter
continue
continue
bt
delete
continue
