// -O0 a linked list in a static array, walked by pointer.
struct item {
  int value;
  struct item *next;
};

struct item pool[4];
struct item *head;

int walk(struct item *it) {
  int total = 0;
  while (it) {
    total += it->value;
    it = it->next;
  }
  return total;
}

int test_main(void) {
  for (int i = 0; i < 4; i++) {
    pool[i].value = (i + 1) * 3;
    pool[i].next = i < 3 ? &pool[i + 1] : 0;
  }
  head = &pool[0];
  return walk(head);
}
