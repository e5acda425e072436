// -O2 an inlined helper that updates globals, with a condition on a global.
volatile int counter;
volatile int last_value;
volatile int feed[5] = {2, 4, 6, 8, 10};
volatile int feed_len = 5;

static inline void note(int v) {
  counter++;
  last_value = v;
}

__attribute__((noinline)) int consume(void) {
  int s = 0;
  for (int i = 0; i < feed_len; i++) {
    int v = feed[i];
    note(v);
    s += v;
  }
  return s;
}

int test_main(void) {
  int s = consume();
  return (s + counter) & 63;
}
