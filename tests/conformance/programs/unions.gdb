# A union seen through its members, and bit fields.
break test_main
continue
break unions.c:23
continue
print w
print w.u
print/x w.u
print w.f
print fl
print fl.mode
print fl.count + 1
ptype union word
ptype fl
print bits
next
print w.b
print/x w.b[0]
delete
continue
