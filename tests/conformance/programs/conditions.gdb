# Compound conditions on C locals: &&, ||, arithmetic, comparisons with a global array element.
break test_main
continue
break conditions.c:8 if sum > 10 && i % 2 == 0
continue
print i
print sum
continue
print i
print sum
delete
break conditions.c:7 if i == 7 || trace[1] == 99
continue
print i
print trace
print trace[i - 1] - trace[i - 2]
delete
break conditions.c:8 if sum * 2 >= 182
continue
info locals
delete
continue
