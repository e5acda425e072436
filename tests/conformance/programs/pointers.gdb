# Pointers: pointer values, dereference, pointer arithmetic, pointers to pointers.
break test_main
continue
next
next
print *cursor
print cursor[1]
print **pp
print *pp == cursor
print cursor - table
print *(cursor + 2)
print table[3]@2
ptype pp
whatis *pp
break sum_range
continue
info args
print *from
print to - from
print from[5]
next
next
next
info locals
print *p
delete
continue
