// branchy: a data-dependent `if` written as a plain C branch, without VX_IF.
//
// Odd and even threads want different sides of the `if` in branchy() below. A
// compiler without Vortex's divergence pass (a stock clang) emits it as a plain
// branch, and a plain branch never splits a warp: the model follows the highest
// active lane (the spec's rule), so the even lanes of every warp run the odd
// side and the kernel's own check counts them. vxreplay reports the branch with
// its source line (docs/host-kernels.md, "The divergence report"), and
// `--strict-branches` stops there as a device exception.
//
// Launch limits: at most BRANCHY_CAPACITY threads.
#include "vx_runtime.h"

#define BRANCHY_CAPACITY 1024u

static uint32_t out[BRANCHY_CAPACITY];

// Out of line, so the compiler cannot turn the `if` into a select.
__attribute__((noinline)) static uint32_t odd_side(uint32_t i) { return i * 3u + 1u; }
__attribute__((noinline)) static uint32_t even_side(uint32_t i) { return i / 2u; }

void branchy(void* arg) {
  uint32_t* o = arg;
  uint32_t i = vx_global_linear();
  uint32_t v;
  if (i & 1u)
    v = odd_side(i);
  else
    v = even_side(i);
  o[i % BRANCHY_CAPACITY] = v;
  // The check is arithmetic, not another branch.
  uint32_t odd = i & 1u;
  vx_fail(v != odd * (i * 3u + 1u) + (1u - odd) * (i / 2u));
}

VX_LAUNCH(branchy, out, 2, 1, 1, 8, 1, 1, 0);
