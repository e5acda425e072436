// fault: an out-of-range store after valid work.
//
// Every thread stores a value into one of two result arrays, chosen through
// a routing table. The table's third entry was never filled in (a null
// pointer); thread FAULT_THREAD (global index 21, slot 10) is routed
// through it and stores to address 0x28, below the I/O region: the model
// stops with a store fault there. All other stores are valid.
//
// Launch limits: any grid/block that fits the configuration; the fault
// happens when the launch has more than FAULT_THREAD threads.
#include "vx_runtime.h"

#define FAULT_THREAD 21u
#define FAULT_CAPACITY 4096u

static uint32_t even_results[FAULT_CAPACITY];
static uint32_t odd_results[FAULT_CAPACITY];
// Entry 2 is meant for a third kind of result that is never set up.
static uint32_t* volatile route[3] = {even_results, odd_results, 0};

void fault(void* arg) {
  (void)arg;
  const uint32_t g = vx_global_linear();
  const uint32_t slot = g / 2u;
  VX_IF(slot < FAULT_CAPACITY) {
    // Warp-level data movement first, so the fault comes after real work.
    uint32_t left = vx_shfl_up(g * g, 1);
    uint32_t which = vx_select(g == FAULT_THREAD, 2u, g & 1u);
    uint32_t* dst = route[which];
    dst[slot] = left + g;
  }
  VX_ENDIF
}

VX_LAUNCH(fault, 0, 2, 1, 1, 16, 1, 1, 0);
