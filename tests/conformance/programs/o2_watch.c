// -O2 stores to a global array element watched while a loop runs.
volatile int src[6] = {4, 8, 15, 16, 23, 42};
int hist[4];

__attribute__((noinline)) void count(int v) {
  hist[v & 3] += 1;
}

int test_main(void) {
  for (int i = 0; i < 6; i++)
    count(src[i]);
  return hist[0] * 10 + hist[3];
}
