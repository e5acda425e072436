// -O2 a struct passed by pointer (the parameter is named n) to a noinline function.
struct vec3 {
  int x, y, z;
};

struct vec3 points[3] = {{1, 2, 3}, {4, 5, 6}, {-1, 0, 7}};

__attribute__((noinline)) int dot(const struct vec3 *n, const struct vec3 *m) {
  int d = n->x * m->x + n->y * m->y + n->z * m->z;
  return d;
}

int test_main(void) {
  int s = 0;
  for (int i = 0; i < 3; i++)
    s += dot(&points[i], &points[(i + 1) % 3]);
  return s & 63;
}
