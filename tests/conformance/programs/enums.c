// -O0 an enum walked through a switch.
enum color { RED, GREEN = 5, BLUE, ALPHA = 10 };
enum color current = RED;
int weights[4];

int weight(enum color c) {
  switch (c) {
  case RED:
    return 1;
  case GREEN:
    return 2;
  case BLUE:
    return 3;
  default:
    return 4;
  }
}

int test_main(void) {
  enum color order[4] = {BLUE, RED, ALPHA, GREEN};
  int sum = 0;
  for (int i = 0; i < 4; i++) {
    current = order[i];
    weights[i] = weight(current);
    sum += weights[i];
  }
  return sum;
}
