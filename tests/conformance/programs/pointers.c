// -O0 pointers into arrays, pointer arithmetic and pointers to pointers.
int table[6] = {5, 8, 13, 21, 34, 55};
int *cursor;

int sum_range(int *from, int *to) {
  int s = 0;
  for (int *p = from; p < to; p++)
    s += *p;
  return s;
}

int test_main(void) {
  cursor = &table[2];
  int **pp = &cursor;
  int a = **pp + cursor[1];
  int b = sum_range(table, table + 6);
  return (a + b) & 63;
}
