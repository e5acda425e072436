# -O2 a loop calling a noinline function: conditions on its parameters, finish values.
break test_main
continue
break step_fn if k == 3
continue
info args
bt
finish
delete
break step_fn if prev > 100
continue
print k
print prev
print prev * 3 + k
up
print acc
delete
continue
