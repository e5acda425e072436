# -O2 watchpoints on global array elements changed by a noinline function.
break test_main
continue
watch hist[0]
continue
continue
print hist
watch hist[3]
continue
print hist[3]
bt
delete
break count if v > 20
continue
info args
print v & 3
print hist
delete
continue
