// -O2 a loop calling a noinline helper; conditions on its parameter.
volatile int limit = 6;
int acc;

__attribute__((noinline)) int step_fn(int k, int prev) {
  return prev * 3 + k;
}

int test_main(void) {
  int v = 1;
  int n = limit;
  for (int k = 0; k < n; k++) {
    v = step_fn(k, v) % 1000;
    acc += v;
  }
  return acc & 63;
}
