// -O0 compound breakpoint conditions on locals.
int trace[8];

int test_main(void) {
  int sum = 0;
  for (int i = 0; i < 8; i++) {
    sum += i * i;
    trace[i] = sum;
  }
  return sum & 63;
}
