// -O0 float arithmetic, float parameters and a float return value.
float scale = 1.5f;
float results[4];

float lerp(float a, float b, float t) {
  float d = b - a;
  return a + d * t;
}

int test_main(void) {
  float acc = 0.0f;
  for (int i = 0; i < 4; i++) {
    float t = (float)i / 4.0f;
    results[i] = lerp(1.0f, 5.0f, t) * scale;
    acc += results[i];
  }
  return (int)acc;
}
