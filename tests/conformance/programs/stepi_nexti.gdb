# stepi and nexti: instruction steps inside a line, over a call and into a call.
break test_main
continue
stepi
stepi
stepi
nexti
nexti
nexti
nexti
nexti
print a
print b
stepi
stepi
stepi
stepi
stepi
stepi
stepi
stepi
info args
bt
stepi 3
nexti 2
print out
delete
continue
