# -O2 an inlined helper that updates volatile globals; a condition on its parameter, a watchpoint last.
break test_main
continue
break note if v == 6
continue
info args
bt
print counter
print last_value
delete
break o2_globals_inline.c:17
continue
print s
print v
print feed
delete
watch last_value
continue
info locals
delete
continue
