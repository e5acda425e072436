// -O0 void functions that change globals; tbreak and step into them.
int counter;
int log_[4];

void bump(int by) {
  counter += by;
}

void record(int slot) {
  log_[slot] = counter;
  bump(slot + 1);
}

int test_main(void) {
  for (int s = 0; s < 4; s++)
    record(s);
  return counter;
}
