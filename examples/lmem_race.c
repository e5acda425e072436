// lmem_race: a per-CTA sum through local memory with the barrier missing.
//
// Each thread writes its value (its thread index + 1) into the CTA's local memory, then thread 0
// adds up the block's values. The __syncthreads() that should separate the writes from the sum is
// missing: thread 0 reads the slots of the other warps before or after they wrote them, depending
// on how the scheduler interleaves the warps, so the block sum changes with the seed. Thread 0 of
// each CTA stores its sum in sums[block]; the exit code is 0 either way (the bug is silent).
//
// Launch limits: blocks of at most 64 threads.
#include "vx_runtime.h"

#define LMEM_RACE_MAX_THREADS 64u

volatile uint32_t sums[64];

void lmem_race(void* arg) {
  (void)arg;
  volatile uint32_t* slots = vx_cta_lmem_addr();
  const uint32_t tid = vx_thread_linear();
  slots[tid] = tid + 1u;
  // BUG: __syncthreads() belongs here.
  VX_IF(tid == 0) {
    uint32_t sum = 0;
    for (uint32_t i = 0; i < vx_block_threads(); i++) sum += slots[i];
    sums[vx_block_linear() & 63u] = sum;
  }
  VX_ENDIF
}

VX_LAUNCH(lmem_race, 0, 2, 1, 1, 16, 1, 1, LMEM_RACE_MAX_THREADS * 4);
