// -O2 step and next through a function with inlined calls and a noinline call.
volatile int data[8] = {9, 2, 7, 4, 5, 6, 3, 8};
int best;

static inline int max2(int a, int b) {
  return a > b ? a : b;
}

__attribute__((noinline)) int reduce_max(int len) {
  int m = data[0];
  for (int i = 1; i < len; i++)
    m = max2(m, data[i]);
  return m;
}

int test_main(void) {
  int m = reduce_max(8);
  best = m;
  int h = reduce_max(4);
  return (m + h) & 63;
}
