// -O2 a noinline function returning a struct in registers.
struct range {
  int start;
  int len;
};

volatile int bounds[4] = {3, 9, 14, 20};

__attribute__((noinline)) struct range span(int i) {
  struct range r;
  r.start = bounds[i];
  r.len = bounds[i + 1] - bounds[i];
  return r;
}

int test_main(void) {
  int total = 0;
  for (int i = 0; i < 3; i++) {
    struct range r = span(i);
    total += r.start * r.len;
  }
  return total & 63;
}
