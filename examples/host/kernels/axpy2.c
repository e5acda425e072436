// Two kernels in one image for a vortex2.h program (examples/host/queues_main.c): scale
// (y[i] = a x[i]) and accumulate (z[i] += y[i]), each found by name (vx_module_get_kernel).
#include "vx_runtime.h"

struct axpy2_args {
  uint32_t n;
  float a;
  uint64_t x, y, z;  // device addresses (vx_buffer_address gives 64-bit ones)
};

void scale(void* arg) {
  const struct axpy2_args* p = arg;
  const float* x = (const float*)(uintptr_t)p->x;
  float* y = (float*)(uintptr_t)p->y;
  uint32_t i = vx_global_linear();
  VX_IF(i < p->n) {
    float v = p->a * x[i];
    y[i] = v;
  }
  VX_ENDIF
}

void accumulate(void* arg) {
  const struct axpy2_args* p = arg;
  const float* y = (const float*)(uintptr_t)p->y;
  float* z = (float*)(uintptr_t)p->z;
  uint32_t i = vx_global_linear();
  VX_IF(i < p->n) {
    float sum = z[i] + y[i];
    z[i] = sum;
  }
  VX_ENDIF
}

VX_LAUNCH(scale, 0, 1, 1, 1, 16, 1, 1, 0);
