// legacy_tls: a legacy-style kernel with thread-local storage.
//
// Linked with runtime/start_legacy.S instead of start.S: every hart's TLS block
// lies past the image at _end + 63 + mhartid * __tbss_size (upstream's runtime
// convention), so on a device with many harts the blocks run far past the
// image's last page; the loader maps them (docs/device.md, "Kernel images").
// Each thread clears its block (as upstream's __init_tls does), fills it with
// values of its own hart id, and checks them: one vx_fail per wrong word, so a
// block shared or clobbered by another hart shows in the exit code.
//
// Launch: the legacy one (one CTA of NT threads per core, entry main).
#include "vx_runtime.h"

#define TLS_WORDS 64u

static __thread uint32_t scratch[TLS_WORDS];

extern char __tbss_size[];

// Zeroes this hart's block: tp points at it (the image has no .tdata).
void __init_tls(void) {
  uint32_t* block;
  __asm__("mv %0, tp" : "=r"(block));
  for (uint32_t k = 0; k < (uint32_t)(uintptr_t)__tbss_size / 4u; ++k) block[k] = 0;
}

int main(void) {
  uint32_t hart = vx_hart_id();
  for (uint32_t k = 0; k < TLS_WORDS; ++k) vx_fail(scratch[k] != 0u);
  for (uint32_t k = 0; k < TLS_WORDS; ++k) scratch[k] = hart * 1000u + k;
  for (uint32_t k = 0; k < TLS_WORDS; ++k) vx_fail(scratch[k] != hart * 1000u + k);
  return 0;
}
