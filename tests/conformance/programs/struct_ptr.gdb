# A parameter named n pointing to a struct: print n, *n, members, ptype, through the recursion.
break test_main
continue
break visit
continue
info args
print *n
print n->weight
print n->tag
print n->next->id
print *n->next
ptype n
ptype struct node
whatis n->weight
continue
backtrace
print depth
print n->weight * depth
up
print n->id
print w
down
finish
delete
continue
