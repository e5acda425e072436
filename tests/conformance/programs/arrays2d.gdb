# A two-dimensional array: element and row prints, ptype, a watchpoint on one element.
break test_main
continue
watch grid[1][2]
continue
print grid[1]
print r
print c
print grid[1][2]
info locals
delete
break arrays2d.c:15
continue
print s
print grid
print row_sum
ptype grid
whatis grid[0]
next
print row_sum[0]
delete
continue
