// rare: an order bug that only a rare interleaving shows.
//
// Warp 0 of the CTA publishes a flag after a short prologue; the last warp does a long stretch of
// work and then expects the flag to be set: it assumes, wrongly, that the first warp has long run
// by then. Under the default scheduler (a random ready warp for a random quantum of 1 to 16
// instructions) every warp advances at about the same rate, so the last warp almost never gets
// RARE_WORK instructions ahead of warp 0. A schedule that lets one warp run far ahead of another
// (--schedule pct: random warp priorities) shows the bug: the kernel then fails (exit code 1).
//
// Launch limits: one CTA of at least two warps.
#include "vx_runtime.h"

#define RARE_WORK 200u

static volatile uint32_t flag;

void rare(void* arg) {
  (void)arg;
  const uint32_t tid = vx_thread_linear();
  const uint32_t last_warp = (vx_block_threads() - 1u) / vx_num_threads();
  VX_IF(tid == 0) {
    uint32_t w = 0;
    for (uint32_t i = 0; i < 4u; i++) __asm__ volatile("addi %0, %0, 1" : "+r"(w));
    vx_atomic_add(&flag, 1);
  }
  VX_ENDIF
  VX_IF(vx_cta_rank() == last_warp && vx_thread_id() == 0) {
    uint32_t w = 0;
    for (uint32_t i = 0; i < RARE_WORK; i++) __asm__ volatile("addi %0, %0, 1" : "+r"(w));
    vx_fail(vx_atomic_add(&flag, 0) == 0 ? 1u : 0u);
  }
  VX_ENDIF
}

VX_LAUNCH(rare, 0, 1, 1, 1, 16, 1, 1, 0);
