# A -O0 loop: a condition on a parameter, finish, watch on a global, until.
break test_main
continue
break add if b == 5
continue
info args
backtrace
finish
next
watch total
continue
print data
ptype data
info locals
delete
continue
