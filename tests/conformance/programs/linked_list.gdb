# A linked list: pointer-chasing prints, a struct pointer parameter, watch on a struct member.
break test_main
continue
break linked_list.c:24
continue
print pool[1]
print pool[3].next
print *pool[0].next
print pool[0].next->next->value
print head
next
print *head
print head->next->next->next->value
ptype head
ptype struct item
break walk
continue
print it->value
print *it
watch pool[2].value
next
next
next
info locals
delete
continue
