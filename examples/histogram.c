// histogram: atomic binning of generated keys, privatized per CTA.
//
// Thread g handles keys i = g * KEYS_PER_THREAD + k with key(i) = (7 i + 3)
// mod 16. Each CTA counts into a local-memory histogram with amoadd, then
// merges it into the global bins with amoadd. Thread 0 of each CTA bumps a
// completion counter after a barrier; the CTA that finishes last verifies
// every bin against the closed form: since 7 is invertible mod 16 (7 * 7 =
// 49 = 1), bin b receives exactly the i < total with i = 7 (b - 3) mod 16.
//
// Launch limits: any grid/block that fits the configuration.
#include "vx_runtime.h"

#define NBINS 16u
#define KEYS_PER_THREAD 4u

static volatile uint32_t bins[NBINS];
static volatile uint32_t done;

static inline uint32_t key_of(uint32_t i) { return (i * 7u + 3u) & (NBINS - 1); }

// Number of i in [0, total) that land in bin b.
static inline uint32_t expected_count(uint32_t b, uint32_t total) {
  uint32_t first = ((b - 3u) * 7u) & (NBINS - 1);
  return (total + (NBINS - 1) - first) / NBINS;
}

void histogram(void* arg) {
  (void)arg;
  volatile uint32_t* local_bins = vx_cta_lmem_addr();
  const uint32_t B = vx_block_threads();
  const uint32_t tid = vx_thread_linear();
  const uint32_t g = vx_block_linear() * B + tid;

  // Bins are spread over the threads in warp-uniform rounds, so blocks
  // smaller than NBINS work too.
  for (uint32_t base = 0; base < NBINS; base += B) {
    uint32_t b = base + tid;
    VX_IF(b < NBINS) { local_bins[b] = 0; }
    VX_ENDIF
  }
  __syncthreads();

  for (uint32_t k = 0; k < KEYS_PER_THREAD; k++) vx_atomic_add(&local_bins[key_of(g * KEYS_PER_THREAD + k)], 1);
  __syncthreads();

  for (uint32_t base = 0; base < NBINS; base += B) {
    uint32_t b = base + tid;
    VX_IF(b < NBINS) { vx_atomic_add(&bins[b], local_bins[b]); }
    VX_ENDIF
  }
  __syncthreads();

  VX_IF(tid == 0) {
    // One lane active: ordinary C is safe here.
    const uint32_t nblocks = vx_grid_blocks();
    if (vx_atomic_add(&done, 1) == nblocks - 1) {
      const uint32_t total = nblocks * B * KEYS_PER_THREAD;
      uint32_t bad = 0;
      for (uint32_t b = 0; b < NBINS; b++) bad += bins[b] != expected_count(b, total);
      vx_fail(bad);
      vx_printf("histogram: %u keys in %u bins, %u wrong bins\n", total, NBINS, bad);
    }
  }
  VX_ENDIF
}

VX_LAUNCH(histogram, 0, 8, 1, 1, 16, 1, 1, NBINS * sizeof(uint32_t));
