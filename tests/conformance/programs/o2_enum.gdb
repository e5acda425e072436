# -O2 an enum state machine: enum parameters and return values, conditions on enums.
break test_main
continue
break next_state if s == BLOCKED
continue
info args
print s
print (int)s + 1
print ev
finish
delete
break next_state
continue
info args
ptype s
finish
print final_state
delete
continue
