// -O0 a counted loop with a helper call.
int total;
int data[8] = {3, 1, 4, 1, 5, 9, 2, 6};

int add(int a, int b) {
  int s = a + b;
  return s;
}

int test_main(void) {
  int sum = 0;
  for (int i = 0; i < 8; i++) {
    sum = add(sum, data[i]);
    total = sum;
  }
  return sum & 63;
}
