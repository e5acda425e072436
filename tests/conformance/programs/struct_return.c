// -O0 functions that return small structs by value.
struct pair {
  int lo;
  int hi;
};

struct pair minmax(const int *v, int len) {
  struct pair p = {v[0], v[0]};
  for (int i = 1; i < len; i++) {
    if (v[i] < p.lo)
      p.lo = v[i];
    if (v[i] > p.hi)
      p.hi = v[i];
  }
  return p;
}

int values[5] = {7, -3, 12, 0, 5};

int test_main(void) {
  struct pair a = minmax(values, 5);
  struct pair b = minmax(values + 2, 3);
  return (a.hi - a.lo + b.hi) & 63;
}
