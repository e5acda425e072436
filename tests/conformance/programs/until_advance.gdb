# until leaves a loop without stopping at each iteration; advance runs to a later line (or to
# the caller, when the frame returns first).
break test_main
continue
break collatz
continue
next
next
next
next
next
until
until
info locals
advance 13
print n
print x
delete
advance until_advance.c:18
print a
advance 20
print b
print steps
continue
