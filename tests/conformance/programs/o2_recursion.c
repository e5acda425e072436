// -O2 a non-tail recursion that stays a call.
volatile int depth = 6;

__attribute__((noinline)) int tree(int d) {
  if (d <= 0)
    return 1;
  int l = tree(d - 1);
  int r = tree(d - 2);
  return l + r + 1;
}

int test_main(void) {
  return tree(depth) & 63;
}
