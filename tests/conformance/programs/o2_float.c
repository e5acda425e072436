// -O2 float math in a noinline function with a float result.
volatile float coeff[4] = {0.5f, -1.25f, 2.0f, 0.125f};

__attribute__((noinline)) float poly(float x) {
  float r = 0.0f;
  for (int i = 3; i >= 0; i--)
    r = r * x + coeff[i];
  return r;
}

int test_main(void) {
  float a = poly(2.0f);
  float b = poly(-1.0f);
  return (int)(a * 4.0f + b) & 63;
}
