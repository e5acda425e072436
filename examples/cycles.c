// cycles: the only schedule dependence is a read of mcycle.
//
// Every thread computes the same data-parallel result (out[g] = 3 * g), but thread 0 of each
// CTA also records the launch's cycle counter (mcycle, which counts the launch's warp
// instructions and so depends on how the warps were interleaved) into stamps[block]. Two seeds
// give the same out[] and different stamps[]: a diff reports the CSR read.
//
// Launch limits: any grid of at most 64 blocks.
#include "vx_runtime.h"

volatile uint32_t out[4096];
volatile uint32_t stamps[64];

void cycles(void* arg) {
  (void)arg;
  const uint32_t g = vx_global_linear();
  out[g & 4095u] = 3u * g;
  VX_IF(vx_thread_linear() == 0) { stamps[vx_block_linear() & 63u] = vx_cycles(); }
  VX_ENDIF
}

VX_LAUNCH(cycles, 0, 4, 1, 1, 16, 1, 1, 0);
