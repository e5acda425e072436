// histogram for a host program: bins[data[i] % nbins] += 1 for i < n, with atomics in global
// memory. The host fills data, zeroes the bins and checks the counts.
#include "vx_runtime.h"

struct histogram_args {
  uint32_t n, nbins;
  uint32_t data, bins;  // device addresses
};

void histogram(void* arg) {
  const struct histogram_args* p = arg;
  const uint32_t* data = (const uint32_t*)(uintptr_t)p->data;
  volatile uint32_t* bins = (volatile uint32_t*)(uintptr_t)p->bins;
  uint32_t i = vx_global_linear();
  VX_IF(i < p->n) { vx_atomic_add(&bins[data[i] % p->nbins], 1); }
  VX_ENDIF
}

VX_LAUNCH(histogram, 0, 1, 1, 1, 16, 1, 1, 0);
