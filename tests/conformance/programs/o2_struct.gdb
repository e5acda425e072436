# -O2 a struct passed by pointer: the parameter n, its members, the other pointer m.
break test_main
continue
break dot
continue
info args
print *n
print n->x
print m->z
print *m
print n->x * m->x + n->y * m->y + n->z * m->z
ptype n
finish
continue
print *n
print n - points
continue
info args
delete
continue
