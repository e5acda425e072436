// -O0 recursion: a recursive factorial, conditions on its parameter, backtraces and finish.
int calls;

int fact(int n) {
  calls++;
  if (n <= 1)
    return 1;
  int r = n * fact(n - 1);
  return r;
}

int test_main(void) {
  int f5 = fact(5);
  int f3 = fact(3);
  return (f5 + f3) & 63;
}
