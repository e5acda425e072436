// -O2 a state machine over an enum in a noinline function.
enum state { IDLE, RUNNING, BLOCKED, DONE };
volatile int events[6] = {1, 1, 2, 1, 3, 0};
enum state final_state;

__attribute__((noinline)) enum state next_state(enum state s, int ev) {
  switch (s) {
  case IDLE:
    return ev == 1 ? RUNNING : IDLE;
  case RUNNING:
    return ev == 2 ? BLOCKED : ev == 3 ? DONE : RUNNING;
  case BLOCKED:
    return ev == 1 ? RUNNING : BLOCKED;
  default:
    return DONE;
  }
}

int test_main(void) {
  enum state s = IDLE;
  for (int i = 0; i < 6; i++)
    s = next_state(s, events[i]);
  final_state = s;
  return (int)s;
}
