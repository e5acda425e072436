// -O0 signed and unsigned integers of every width, negative values included.
#include <stdint.h>

int8_t s8 = -100;
uint8_t u8 = 200;
int16_t s16 = -30000;
uint16_t u16 = 60000;
int32_t s32 = -2000000000;
int64_t s64 = -5000000000LL;
uint64_t u64 = 18000000000000000000ULL;

int64_t widen(int8_t a, int16_t b) {
  int64_t w = (int64_t)a * b;
  return w;
}

int test_main(void) {
  int64_t w = widen(s8, s16);
  s8 = (int8_t)(s8 - 50);
  u8 = (uint8_t)(u8 + 100);
  s64 += w;
  return (int)(w & 63);
}
