# Globals of many types and widths, before and after test_main changes them.
break test_main
continue
print g_int
print g_uns
print g_short
print g_ll
print g_float
print g_double
print g_str
print *g_str
print g_arr
print/x g_uns
print g_int + g_short
print -g_uns
ptype g_str
whatis g_ll
break globals.c:18
continue
print g_int
print g_uns
print g_short
print g_ll
print g_float
print g_arr
delete
continue
