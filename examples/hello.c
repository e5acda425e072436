// hello: vx_printf from every thread.
//
// Each thread prints its block and thread index and where it runs (core,
// warp slot, lane). vx_printf serializes the lanes of a warp, each into its
// own console ring; the host drains the rings, so lines of different warps
// may interleave in any order.
//
// Launch limits: any grid/block that fits the configuration.
#include "vx_runtime.h"

void hello(void* arg) {
  (void)arg;
  vx_printf("hello from block %u thread %u (core %u warp %u lane %u)\n", vx_block_linear(), vx_thread_linear(),
            vx_core_id(), vx_warp_id(), vx_thread_id());
}

VX_LAUNCH(hello, 0, 4, 1, 1, 16, 1, 1, 0);
