// -O2 until and advance through an optimized loop.
volatile int n_items = 5;
int prefix[5];

__attribute__((noinline)) int prefix_sums(int count) {
  int run = 0;
  for (int i = 0; i < count; i++) {
    run += i + 1;
    prefix[i] = run;
  }
  return run;
}

int test_main(void) {
  int total = prefix_sums(n_items);
  prefix[0] = total;
  return total;
}
