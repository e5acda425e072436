// -O0 three levels of calls; step into and finish out of each.
int depth_log[3];

int leaf(int x) {
  depth_log[2] = x;
  return x * 2;
}

int middle(int x) {
  depth_log[1] = x;
  int y = leaf(x + 1);
  return y + 1;
}

int outer(int x) {
  depth_log[0] = x;
  int z = middle(x * 3);
  return z - x;
}

int test_main(void) {
  int a = outer(2);
  int b = outer(a);
  return b & 63;
}
