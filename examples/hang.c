// hang: a kernel that never finishes.
//
// After some work, every warp spins waiting for a "go" flag that nothing
// ever sets (a lost-signal bug). The loop condition is a load of one global
// word, the same in every lane, so the plain loop branch is uniform. Only
// the model's watchdog stops the launch.
//
// Launch limits: any grid/block that fits the configuration.
#include "vx_runtime.h"

static volatile uint32_t go;
static volatile uint32_t arrived;

void hang(void* arg) {
  (void)arg;
  vx_atomic_add(&arrived, 1);
  VX_IF(vx_global_linear() == 0) { vx_printf("hang: waiting for the go flag\n"); }
  VX_ENDIF
  while (go == 0) {
  }
}

VX_LAUNCH(hang, 0, 2, 1, 1, 16, 1, 1, 0);
