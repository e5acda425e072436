# -O2 unsigned char and char parameters, a char array global, unsigned char returns.
break test_main
continue
print message
print message[4]
print/x message[0]
break fold
continue
info args
print h << 3
print/x h
finish
continue
finish
print digest
print/x digest
delete
break fold if c == 'G'
continue
info args
print c
delete
continue
