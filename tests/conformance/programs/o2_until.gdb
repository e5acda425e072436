# -O2 until and advance through an optimized loop.
break test_main
continue
step
next
next
until
until
info locals
advance o2_until.c:11
info locals
print prefix
delete
continue
