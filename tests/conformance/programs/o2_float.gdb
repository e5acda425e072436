# -O2 float arguments and a float returned from a noinline function.
break test_main
continue
break poly
continue
info args
print x * 2
print coeff
print coeff[1]
finish
continue
info args
finish
next
info locals
delete
continue
