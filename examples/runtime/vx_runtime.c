// Freestanding support the kernels need: the memory functions clang may call
// for struct copies and initializers, the float-to-double helper that
// variadic calls with float arguments need on RV32IMAF (no double FPU and no
// compiler support library is linked), and the assertion failure path.
#include "vx_runtime.h"

#include <stddef.h>
#include <stdint.h>

void* memcpy(void* dst, const void* src, size_t n) {
  uint8_t* d = dst;
  const uint8_t* s = src;
  for (size_t i = 0; i < n; i++) d[i] = s[i];
  return dst;
}

void* memmove(void* dst, const void* src, size_t n) {
  uint8_t* d = dst;
  const uint8_t* s = src;
  if (d < s) {
    for (size_t i = 0; i < n; i++) d[i] = s[i];
  } else {
    for (size_t i = n; i > 0; i--) d[i - 1] = s[i - 1];
  }
  return dst;
}

void* memset(void* dst, int c, size_t n) {
  uint8_t* d = dst;
  for (size_t i = 0; i < n; i++) d[i] = (uint8_t)c;
  return dst;
}

int memcmp(const void* a, const void* b, size_t n) {
  const uint8_t* x = a;
  const uint8_t* y = b;
  for (size_t i = 0; i < n; i++) {
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  }
  return 0;
}

// IEEE single to double: exact, so only the fields are re-encoded.
double __extendsfdf2(float a) {
  union {
    float f;
    uint32_t u;
  } in = {a};
  uint64_t sign = (uint64_t)(in.u >> 31) << 63;
  uint32_t exp = (in.u >> 23) & 0xff;
  uint32_t man = in.u & 0x7fffff;
  uint64_t dexp;
  if (exp == 0xff) {
    dexp = 0x7ff;
  } else if (exp == 0) {
    if (man == 0) {
      dexp = 0;
    } else {
      // Subnormal single: normalize, every single subnormal is a normal double.
      int e = 1 - 127;
      while (!(man & 0x800000)) {
        man <<= 1;
        e--;
      }
      man &= 0x7fffff;
      dexp = (uint64_t)(e + 1023);
    }
  } else {
    dexp = exp - 127 + 1023;
  }
  union {
    uint64_t u;
    double d;
  } out = {sign | (dexp << 52) | ((uint64_t)man << 29)};
  return out.d;
}

void vx_assert_fail(const struct vx_assert_info* info) {
  vx_printf("ASSERT FAILED: %s:%u: %s (block %u,%u,%u thread %u,%u,%u)\n", info->file, (unsigned)info->line,
            info->expr, (unsigned)vx_block_idx_x(), (unsigned)vx_block_idx_y(), (unsigned)vx_block_idx_z(),
            (unsigned)vx_thread_idx_x(), (unsigned)vx_thread_idx_y(), (unsigned)vx_thread_idx_z());
  vx_fail(1);
  // The ebreak and the marker must be adjacent: one asm statement.
  register const struct vx_assert_info* a0 __asm__("a0") = info;
  __asm__ volatile("ebreak\n\t.word 0x41a05013" : : "r"(a0) : "memory");
}
