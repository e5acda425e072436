# -O2 a struct returned in registers from a noinline function.
break test_main
continue
break span
continue
info args
finish
continue
finish
next
print total
continue
info args
up
info locals
down
finish
delete
continue
