// fixed: a kernel that writes a table at a fixed device address (FIXED_TABLE_ADDR) instead of one
// it is given; the host maps it there with vx_mem_reserve before the launch.
#include "vx_runtime.h"

#define FIXED_TABLE_ADDR 0x20000000u

struct fixed_args {
  uint32_t n;
};

void fixed(void* arg) {
  const struct fixed_args* p = arg;
  volatile uint32_t* table = (volatile uint32_t*)(uintptr_t)FIXED_TABLE_ADDR;
  uint32_t i = vx_global_linear();
  VX_IF(i < p->n) { table[i] = i * i + 1u; }
  VX_ENDIF
}

VX_LAUNCH(fixed, 0, 1, 1, 1, 16, 1, 1, 0);
