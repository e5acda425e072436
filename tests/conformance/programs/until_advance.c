// -O0 a while loop left with until and a later line reached with advance.
int steps;

int collatz(int x) {
  int n = 0;
  while (x != 1) {
    if (x % 2)
      x = 3 * x + 1;
    else
      x = x / 2;
    n++;
  }
  return n;
}

int test_main(void) {
  int a = collatz(6);
  steps = a;
  int b = collatz(7);
  steps += b;
  return steps;
}
