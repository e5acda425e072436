// pipeline: three kernels in one image, launched one after another by the host
// (examples/host/pipeline_main.c). The argument block names the stage; every thread of a launch
// runs the same one, so the switch is warp-uniform. The stages stay functions of their own
// (noinline) so that a breakpoint on one stops only in its launch.
#include "vx_runtime.h"

enum { FILL = 0, SCALE = 1, ADD = 2 };

struct pipeline_args {
  uint32_t stage, n;
  uint32_t x, y;  // device addresses of two float arrays
  float k;
};

__attribute__((noinline)) static void fill(float* x, uint32_t i) { x[i] = (float)i; }
__attribute__((noinline)) static void scale(const float* x, float* y, float k, uint32_t i) { y[i] = k * x[i]; }
__attribute__((noinline)) static void add(float* x, const float* y, uint32_t i) { x[i] = x[i] + y[i]; }

void pipeline(void* arg) {
  const struct pipeline_args* p = arg;
  float* x = (float*)(uintptr_t)p->x;
  float* y = (float*)(uintptr_t)p->y;
  uint32_t i = vx_global_linear();
  VX_IF(i < p->n) {
    switch (p->stage) {
      case FILL: fill(x, i); break;
      case SCALE: scale(x, y, p->k, i); break;
      default: add(x, y, i); break;
    }
  }
  VX_ENDIF
}

VX_LAUNCH(pipeline, 0, 1, 1, 1, 16, 1, 1, 0);
