// -O0 a union and a struct with bit fields.
union word {
  unsigned int u;
  float f;
  unsigned char b[4];
};

struct flags {
  unsigned ready : 1;
  unsigned mode : 3;
  unsigned count : 4;
};

union word w;
struct flags fl;

int test_main(void) {
  w.f = 1.0f;
  unsigned bits = w.u;
  fl.ready = 1;
  fl.mode = 5;
  fl.count = 9;
  w.b[0] = 7;
  return (int)((bits >> 24) + fl.mode + w.b[0]) & 63;
}
