// -O2 static inline helpers inlined into a loop; breakpoints and stops inside the inlined code.
volatile int input[5] = {1, 2, 3, 4, 5};
volatile int count = 5;
int squares[5];

static inline int square(int x) {
  int y = x * x;
  return y;
}

static inline int cube(int x) {
  return square(x) * x;
}

int test_main(void) {
  int sum = 0;
  for (int i = 0; i < count; i++) {
    int v = input[i];
    squares[i] = square(v);
    sum += cube(v);
  }
  return sum & 63;
}
