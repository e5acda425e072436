// -O0 instruction stepping over and into a call.
int out;

int twice(int v) {
  return v + v;
}

int test_main(void) {
  int a = 3;
  int b = twice(a);
  out = a + b;
  int c = twice(out);
  return c;
}
