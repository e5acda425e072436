# Enums: enum values by name, casts, a condition on an enum parameter, ptype of the enum.
break test_main
continue
break weight if c == ALPHA
continue
print c
print (int)c
print c == ALPHA
print current
ptype c
ptype enum color
up
print order
print order[0]
print/d order[3]
info locals
down
finish
delete
continue
