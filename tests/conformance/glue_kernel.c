// Kernel-side glue of the conformance suite: a one-thread Vortex kernel (run with
// `vxreplay run k.elf --config 1x1x1x1`) that calls the program's test_main() and makes
// its result the kernel's exit code.
#include "vx_runtime.h"

int test_main(void);

void conformance_kernel(void* arg) {
  (void)arg;
  vx_set_exit_code(test_main());
}

VX_LAUNCH(conformance_kernel, 0, 1, 1, 1, 1, 1, 1, 0);
