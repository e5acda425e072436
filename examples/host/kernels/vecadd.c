// vecadd for a host program: c[i] = a[i] + b[i] for i < n, one element per thread. The host
// (examples/host/vecadd_main.c) allocates the arrays, fills them, passes their addresses in the
// argument block and sets the grid through the KMU's DCRs.
#include "vx_runtime.h"

struct vecadd_args {  // every field a device address or a count: 32 bits
  uint32_t n;
  uint32_t a, b, c;
};

void vecadd(void* arg) {
  const struct vecadd_args* p = arg;
  const float* a = (const float*)(uintptr_t)p->a;
  const float* b = (const float*)(uintptr_t)p->b;
  float* c = (float*)(uintptr_t)p->c;
  uint32_t i = vx_global_linear();
  VX_IF(i < p->n) { c[i] = a[i] + b[i]; }
  VX_ENDIF
}

VX_LAUNCH(vecadd, 0, 1, 1, 1, 16, 1, 1, 0);
