# ignore counts, conditions added later with condition, tbreak in a loop.
break test_main
continue
break tick
ignore 2 3
continue
info args
print hits
condition 2 k == 7
continue
info args
condition 2
continue
info args
delete
tbreak ignore_counts.c:10
continue
print i
continue
