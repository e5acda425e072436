# -O2 step and next through a function with inlined calls.
break test_main
continue
step
next
next
next
next
step
step
info locals
bt
finish
delete
continue
