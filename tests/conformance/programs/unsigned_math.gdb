# Unsigned wrap-around at three widths; hexadecimal, unsigned and binary formats.
break test_main
continue
print acc32
print/x acc32
print acc16
print acc8
print/t acc8
break unsigned_math.c:16
continue
print acc32
print/x acc32
print acc16
print acc8
print/x acc8
print acc32 + 20
print acc8 + 10
step
info args
print v << s
print/x v >> (32 - s)
finish
delete
continue
