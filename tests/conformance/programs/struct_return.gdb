# Structs returned by value: finish shows the struct; locals that are structs.
break test_main
continue
break minmax
continue
info args
print v[0]@len
print *v@3
next
print p
finish
next
print a
print a.hi - a.lo
ptype a
continue
print len
finish
delete
continue
