// vecadd: c[i] = a[i] + b[i], one element per thread.
//
// Each thread generates its own inputs from its global index, stores them,
// reads them back through the argument block's pointers, adds, and checks its
// element against the value computed in integer arithmetic (the inputs are
// small integers, so the float sum is exact). One vx_fail per wrong element.
//
// Launch limits: any grid/block whose CTAs fit the configuration; at most
// VECADD_CAPACITY threads in total (the extra threads count as failures).
#include "vx_runtime.h"

#define VECADD_CAPACITY (64u * 1024u)

struct vecadd_args {
  float* a;
  float* b;
  float* c;
  uint32_t capacity;
};

static float a_buf[VECADD_CAPACITY];
static float b_buf[VECADD_CAPACITY];
static float c_buf[VECADD_CAPACITY];

// The arrays reach the kernel through mscratch, as with a host-built
// argument block.
static struct vecadd_args args = {a_buf, b_buf, c_buf, VECADD_CAPACITY};

static inline uint32_t gen_a(uint32_t i) { return i % 1000u; }
static inline uint32_t gen_b(uint32_t i) { return (i * 7u) % 500u; }

void vecadd(void* arg) {
  const struct vecadd_args* p = arg;
  uint32_t i = vx_global_linear();
  uint32_t fits = i < p->capacity;
  vx_fail(!fits);
  VX_IF(fits) {
    p->a[i] = (float)gen_a(i);
    p->b[i] = (float)gen_b(i);
    p->c[i] = p->a[i] + p->b[i];
    vx_fail(p->c[i] != (float)(gen_a(i) + gen_b(i)));
  }
  VX_ENDIF
}

VX_LAUNCH(vecadd, &args, 64, 1, 1, 16, 1, 1, 0);
