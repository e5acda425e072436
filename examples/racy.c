// racy: a deliberate data race on one shared counter.
//
// Every thread does RACY_ITERS non-atomic increments (load, a few dependent
// instructions, store) of one global counter. All lanes of a warp load and
// store together, and between the load and the store of one warp other
// warps may run theirs: their updates are lost. How many depends on how the
// scheduler interleaves warps, which the model derives from its seed. The
// thread that finishes last (an atomic completion counter) prints the result.
// Exit code 0: the race is the point, not an error.
//
// Launch limits: any grid/block that fits the configuration.
#include "vx_runtime.h"

#define RACY_ITERS 8u

static volatile uint32_t counter;
static volatile uint32_t finished;

void racy(void* arg) {
  (void)arg;
  for (uint32_t k = 0; k < RACY_ITERS; k++) {
    uint32_t v = counter;
    // Widen the window between load and store: dependent no-op arithmetic
    // that clang cannot remove.
    __asm__ volatile(
        "addi %0, %0, 3\n\t"
        "xori %0, %0, 0x5a\n\t"
        "xori %0, %0, 0x5a\n\t"
        "addi %0, %0, -3"
        : "+r"(v));
    counter = v + 1u;
  }
  const uint32_t threads = vx_total_threads();
  const uint32_t order = vx_atomic_add(&finished, 1);
  VX_IF(order == threads - 1) {
    vx_printf("racy: counter = %u (expected %u without the race)\n", counter, threads * RACY_ITERS);
  }
  VX_ENDIF
}

VX_LAUNCH(racy, 0, 4, 1, 1, 16, 1, 1, 0);
