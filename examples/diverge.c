// diverge: nested SPLIT/JOIN and a PRED loop with per-lane trip counts.
//
// Each thread classifies x = its global index through two levels of
// VX_IF/VX_ELSE (with a float comparison in one of them), then counts the
// Collatz steps of x % 30 + 1 in a VX_WHILE whose body branches again with
// VX_IF. The same computation is run lane-serially through vx_serial, where
// ordinary C branches are safe, and each thread checks its SIMT result
// against that reference: one vx_fail per mismatch. Results are also stored
// in `out` so a debugger can inspect them.
//
// Launch limits: any grid/block that fits the configuration; at most
// DIVERGE_CAPACITY threads store their result.
#include "vx_runtime.h"

#define DIVERGE_CAPACITY 4096u

// Not static: kept for inspection although nothing reads it.
uint32_t diverge_out[DIVERGE_CAPACITY];

// Reference: plain C, only ever run with one lane active.
static __attribute__((noinline)) uint32_t reference(uint32_t x) {
  uint32_t r;
  if (x & 1u) {
    if (x % 3u == 0)
      r = x * 5u;
    else
      r = x + 100u;
  } else {
    if ((float)x * 0.75f > 6.0f)
      r = x ^ 0x55u;
    else
      r = 7u - x;
  }
  uint32_t n = x % 30u + 1u;
  uint32_t steps = 0;
  while (n != 1u) {
    if (n & 1u)
      n = 3u * n + 1u;
    else
      n >>= 1;
    steps++;
  }
  return r * 1000u + steps;
}

struct ref_job {
  uint32_t x;
  uint32_t result;
};

static void reference_lane(void* arg, int lane) {
  (void)lane;
  struct ref_job* job = arg;
  job->result = reference(job->x);
}

void diverge(void* arg) {
  (void)arg;
  const uint32_t x = vx_global_linear();
  uint32_t r = 0;
  VX_IF(x & 1u) {
    VX_IF(x % 3u == 0) { r = x * 5u; }
    VX_ELSE { r = x + 100u; }
    VX_ENDIF
  }
  VX_ELSE {
    VX_IF((float)x * 0.75f > 6.0f) { r = x ^ 0x55u; }
    VX_ELSE { r = 7u - x; }
    VX_ENDIF
  }
  VX_ENDIF

  uint32_t n = x % 30u + 1u;
  uint32_t steps = 0;
  VX_WHILE(n != 1u) {
    VX_IF(n & 1u) { n = 3u * n + 1u; }
    VX_ELSE { n >>= 1; }
    VX_ENDIF
    steps++;
  }
  VX_END_WHILE

  const uint32_t got = r * 1000u + steps;
  struct ref_job job = {x, 0};
  vx_serial(reference_lane, &job);
  vx_fail(got != job.result);
  VX_IF(x < DIVERGE_CAPACITY) { diverge_out[x] = got; }
  VX_ENDIF
}

VX_LAUNCH(diverge, 0, 4, 1, 1, 16, 1, 1, 0);
