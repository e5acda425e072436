// -O0 an iterative Fibonacci with display expressions.
int fibs[10];

int test_main(void) {
  int a = 0, b = 1;
  for (int i = 0; i < 10; i++) {
    fibs[i] = a;
    int t = a + b;
    a = b;
    b = t;
  }
  return a & 63;
}
