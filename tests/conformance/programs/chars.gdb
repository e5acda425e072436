# Characters: char arrays as strings, single chars, unsigned char values and parameters.
break test_main
continue
print greeting
print greeting[1]
print bytes
print/x bytes
print/d greeting[0]
ptype greeting
ptype bytes
break chars.c:16 if i == 4
continue
print ch
print upper
print/c 65
delete
break mix if b == 200
continue
info args
print a ^ (b << 1)
finish
delete
continue
