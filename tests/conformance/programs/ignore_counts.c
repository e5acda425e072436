// -O0 ignore counts and conditions on a loop body.
int hits;

void tick(int k) {
  hits += k;
}

int test_main(void) {
  for (int i = 0; i < 10; i++) {
    tick(i);
  }
  return hits;
}
