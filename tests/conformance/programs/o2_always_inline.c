// -O2 always_inline helpers with locals of their own.
volatile int seed = 3;
volatile int rounds = 4;
int out[4];

__attribute__((always_inline)) static inline int hash(int v) {
  int h = v * 2654435761u;
  h ^= h >> 13;
  return h & 1023;
}

__attribute__((noinline)) int fill(int base) {
  int last = 0;
  for (int i = 0; i < rounds; i++) {
    last = hash(base + i);
    out[i] = last;
  }
  return last;
}

int test_main(void) {
  int r = fill(seed);
  return r & 63;
}
