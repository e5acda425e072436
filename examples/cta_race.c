// cta_race: a race across CTAs in global memory.
//
// Each CTA's thread 0 publishes its block index into a shared global slot and later reads the
// slot back expecting its own index; another CTA may have written it in between. Nothing orders
// the CTAs (no atomic, no fence), so whether a CTA sees its own index depends on the schedule.
// The number of CTAs that saw another's index is counted with an atomic and printed by the last
// CTA; the exit code stays 0.
//
// Launch limits: any grid; blocks of any size.
#include "vx_runtime.h"

static volatile uint32_t slot;
static volatile uint32_t clobbered;
static volatile uint32_t finished;

void cta_race(void* arg) {
  (void)arg;
  VX_IF(vx_thread_linear() == 0) {
    const uint32_t me = vx_block_linear();
    slot = me;
    // Work between the write and the read, so other CTAs can run in between.
    uint32_t spin = me;
    for (uint32_t i = 0; i < 8u; i++) __asm__ volatile("addi %0, %0, 1" : "+r"(spin));
    if (slot != me) vx_atomic_add(&clobbered, 1);
    if (vx_atomic_add(&finished, 1) == vx_grid_blocks() - 1)
      vx_printf("cta_race: %u of %u CTAs saw another CTA's index\n", clobbered, vx_grid_blocks());
  }
  VX_ENDIF
}

VX_LAUNCH(cta_race, 0, 8, 1, 1, 4, 1, 1, 0);
