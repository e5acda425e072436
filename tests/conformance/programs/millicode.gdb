# nexti over `jal t0` runs the millicode callee through (one definition of a call: rd != x0);
# stepi enters it.
break test_main
continue
next
stepi
nexti
print $a0
stepi
print $a0
next
print out
stepi
stepi
bt
stepi
stepi
print out
delete
continue
