# Integers of every width and signedness, negative and large values, a 64-bit return value.
break test_main
continue
print s8
print u8
print s16
print u16
print s32
print s64
print u64
print/x s8
print/x s16
print/x s64
print s8 * 2
print u8 + 100
print s32 - 1
ptype s8
ptype u64
whatis s64 + 1
break widen
continue
info args
print a * b
finish
next
print s8
print u8
delete
continue
