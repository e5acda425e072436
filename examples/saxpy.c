// saxpy: out[i] = a * x[i] + y[i], one element per thread, for i < n.
//
// Unlike the other examples, the kernel owns no data: everything comes from
// the argument block the host builds, the way a real host program launches a
// kernel. `vxreplay run saxpy.elf --launch examples/launch/saxpy.json`
// allocates x, y and out, fills them and writes the argument block
// {n, a, x, y, out} (docs/cli.md, "Launch files").
//
// Run without a launch file, the image's default argument block names small
// static arrays (x[i] = i, y[i] = 1, a = 2) and the kernel checks its own
// results: exit code 0 means verified.
#include "vx_runtime.h"

struct saxpy_args {
  uint32_t n;
  float a;
  const float* x;
  const float* y;
  float* out;
};

#define SAXPY_DEFAULT_N 256u

static float x_buf[SAXPY_DEFAULT_N];
static float y_buf[SAXPY_DEFAULT_N];
static float out_buf[SAXPY_DEFAULT_N];
static struct saxpy_args default_args = {SAXPY_DEFAULT_N, 2.0f, x_buf, y_buf, out_buf};

void saxpy(void* arg) {
  const struct saxpy_args* p = arg;
  uint32_t i = vx_global_linear();
  VX_IF(i < p->n) { p->out[i] = p->a * p->x[i] + p->y[i]; }
  VX_ENDIF
}

// The default launch: fills the static inputs, then runs saxpy and checks
// every element (the values are small integers: the float results are exact).
void saxpy_selftest(void* arg) {
  struct saxpy_args* p = arg;
  uint32_t i = vx_global_linear();
  uint32_t in = i < SAXPY_DEFAULT_N;
  VX_IF(in) {
    x_buf[i] = (float)i;
    y_buf[i] = 1.0f;
    out_buf[i] = 0.0f;
  }
  VX_ENDIF
  struct saxpy_args local = {SAXPY_DEFAULT_N, p->a, p->x, p->y, p->out};
  saxpy(&local);
  VX_IF(in) { vx_fail(out_buf[i] != 2.0f * (float)i + 1.0f); }
  VX_ENDIF
}

VX_LAUNCH(saxpy_selftest, &default_args, 16, 1, 1, 16, 1, 1, 0);
