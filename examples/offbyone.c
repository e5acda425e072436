// offbyone: a kernel with a real bug, for the walkthrough of docs/time-travel.md ("Questions over
// the history"). Each thread fills its row of a table, ROW entries of row * 100 + column, but the
// loop runs one entry too far (`<=`): a thread's last store lands on the first entry of the next
// thread's row. Within a warp the lanes run the loop together, so the neighbour's own store comes
// first and is overwritten. After a barrier each thread checks the first entry of its row, and
// thread 0 reports how many rows start wrong. `origin table[4]` names the culprit in one command.
#include "vx_runtime.h"

#define ROW 4u
#define THREADS 16u

uint32_t table[(THREADS + 1) * ROW];
static volatile uint32_t wrong;

void offbyone(void* arg) {
  (void)arg;
  const uint32_t i = vx_global_linear();
  for (uint32_t j = 0; j <= ROW; j++) table[i * ROW + j] = i * 100u + j;  // the bug: j < ROW
  __syncthreads();
  VX_IF(table[i * ROW] != i * 100u) { vx_atomic_add(&wrong, 1); }
  VX_ENDIF
  __syncthreads();
  VX_IF(i == 0) { vx_printf("offbyone: %u of %u rows start wrong\n", wrong, THREADS); }
  VX_ENDIF
}

VX_LAUNCH(offbyone, 0, 1, 1, 1, THREADS, 1, 1, 0);
