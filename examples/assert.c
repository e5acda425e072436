// assert: a vx_assert that fails in one thread after some work.
//
// Each thread normalizes a score by a weight from a 64-entry table indexed by
// its global index mod 64. Entry 51 is 0 (a data-entry error) and the kernel
// asserts the weight is non-zero before dividing. In the default launch (4
// blocks of 16) only global thread 51 (block 3, thread 3) fails. Per the
// assertion convention (vx_runtime.h) it prints "ASSERT FAILED: ...", adds 1
// to the exit code and executes ebreak followed by the marker word.
//
// Launch limits: any grid/block that fits the configuration; the assertion
// fails for every thread whose global index is 51 mod 64 (none if the launch
// has at most 51 threads).
#include "vx_runtime.h"

#define ASSERT_CAPACITY 4096u

static const uint8_t weights[64] = {
    3, 5, 2, 7, 1, 4, 6, 2, 3, 5, 2, 7, 1, 4, 6, 2, 3, 5, 2, 7, 1, 4, 6, 2, 3, 5, 2, 7, 1, 4, 6, 2,
    3, 5, 2, 7, 1, 4, 6, 2, 3, 5, 2, 7, 1, 4, 6, 2, 3, 5, 2, 0, 1, 4, 6, 2, 3, 5, 2, 7, 1, 4, 6, 2,
};

// Not static: the results stay in the image for inspection.
uint32_t assert_normalized[ASSERT_CAPACITY];

void assert_kernel(void* arg) {
  (void)arg;
  const uint32_t g = vx_global_linear();
  const uint32_t score = (g * 37u + 11u) % 101u;
  const uint32_t weight = weights[g % 64u];
  vx_assert(weight != 0);
  // After a resumed assertion the divisor may be 0: RISC-V division by zero
  // does not trap, it yields all ones.
  VX_IF(g < ASSERT_CAPACITY) { assert_normalized[g] = score / weight; }
  VX_ENDIF
}

VX_LAUNCH(assert_kernel, 0, 4, 1, 1, 16, 1, 1, 0);
