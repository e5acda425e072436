// reduce: per-CTA and global sums of generated values, with SHFL and VOTE.
//
// Thread g (global linear index) contributes v = g % 7 + 1. Each warp sums its
// lanes with SHFL.DOWN; lane 0 stores the warp partial in local memory; after
// a barrier, warp 0 of the CTA loads the partials and reduces them with
// SHFL.DOWN again. Thread 0 checks the block sum against the closed form,
// adds it to a global total (amoadd) and bumps a completion counter; the CTA
// that finishes last checks the global total against the closed form.
// VOTE: BALLOT of "v is odd" is compared with a count made through local
// memory, VOTE.ANY with the ballot, VOTE.ALL checks 1 <= v <= 7 and
// VOTE.UNI checks that the block index is warp-uniform.
//
// Lanes of a partial warp are inactive and their registers stale: every
// shuffled value is used only when its source thread exists.
//
// Launch limits: any grid; CTAs of at most REDUCE_MAX_THREADS threads that
// fit the configuration.
#include "vx_runtime.h"

#define REDUCE_MAX_THREADS 256u
#define REDUCE_MAX_WARPS 64u

struct reduce_lmem {
  uint32_t partial[REDUCE_MAX_WARPS];
  uint32_t odd[REDUCE_MAX_THREADS];
};

static volatile uint32_t total;
static volatile uint32_t done;

// Sum of (g % 7 + 1) for g in [0, n).
static inline uint32_t prefix_sum(uint32_t n) {
  uint32_t r = n % 7u;
  return (n / 7u) * 28u + r * (r + 1u) / 2u;
}

// Population count without a branch (no Zbb).
static inline uint32_t popcount32(uint32_t x) {
  x = x - ((x >> 1) & 0x55555555u);
  x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
  x = (x + (x >> 4)) & 0x0f0f0f0fu;
  return (x * 0x01010101u) >> 24;
}

// Sum over the warp into lane 0. Lane l adds the value of lane l + off only
// if that lane's thread exists (tid + off < nthreads, tid the CTA index of
// the calling lane); the offsets are warp-uniform.
static inline uint32_t warp_sum(uint32_t v, uint32_t lane, uint32_t tid, uint32_t nthreads) {
  const uint32_t nt = vx_num_threads();
  for (uint32_t off = nt / 2; off > 0; off >>= 1) {
    uint32_t other = vx_shfl_down(v, off);
    v += vx_select((lane + off < nt) & (tid + off < nthreads), other, 0);
  }
  return v;
}

void reduce(void* arg) {
  (void)arg;
  struct reduce_lmem* lm = vx_cta_lmem_addr();
  const uint32_t B = vx_block_threads();
  if (B > REDUCE_MAX_THREADS) {  // uniform
    vx_fail(vx_global_linear() == 0);
    return;
  }
  const uint32_t tid = vx_thread_linear();
  const uint32_t lane = vx_thread_id();
  const uint32_t rank = vx_cta_rank();
  const uint32_t nwarps = vx_cta_size();
  const uint32_t nt = vx_num_threads();
  const uint32_t block = vx_block_linear();
  const uint32_t g = block * B + tid;
  const uint32_t v = g % 7u + 1u;

  uint32_t s = warp_sum(v, lane, tid, B);
  VX_IF(lane == 0) { lm->partial[rank] = s; }
  VX_ENDIF

  const uint32_t odd = v & 1u;
  lm->odd[tid] = odd;
  const uint32_t ballot = vx_vote_ballot(odd);
  vx_fail(vx_vote_any(odd) != (ballot != 0));
  vx_fail(vx_vote_all((v >= 1u) & (v <= 7u)) != 1u);
  vx_fail(vx_vote_uni(block) != 1u);
  vx_fail((ballot & ~vx_active_threads()) != 0);

  __syncthreads();

  // Lane 0 recounts its warp's odd values from local memory.
  VX_IF(lane == 0) {
    uint32_t first = rank * nt;
    uint32_t n = B - first < nt ? B - first : nt;
    uint32_t count = 0;
    for (uint32_t j = 0; j < n; j++) count += lm->odd[first + j];
    vx_fail(count != popcount32(ballot));
  }
  VX_ENDIF

  if (rank == 0) {  // whole warp 0 of the CTA: uniform within the warp
    uint32_t p = 0;
    for (uint32_t base = 0; base < nwarps; base += nt) {
      uint32_t idx = base + lane;
      uint32_t in_range = idx < nwarps;
      p += vx_select(in_range, lm->partial[vx_select(in_range, idx, 0)], 0);
    }
    uint32_t bsum = warp_sum(p, lane, tid, vx_min_u(B, nt));
    VX_IF(lane == 0) {
      // One lane active: ordinary C is safe from here on.
      uint32_t expect = prefix_sum(g + B) - prefix_sum(g);
      vx_fail(bsum != expect);
      vx_atomic_add(&total, bsum);
      uint32_t nblocks = vx_grid_blocks();
      if (vx_atomic_add(&done, 1) == nblocks - 1) {
        uint32_t t = total;
        uint32_t want = prefix_sum(nblocks * B);
        vx_fail(t != want);
        vx_printf("reduce: %u blocks of %u threads, total %u (expected %u)\n", nblocks, B, t, want);
      }
    }
    VX_ENDIF
  }
}

VX_LAUNCH(reduce, 0, 8, 1, 1, 16, 1, 1, sizeof(struct reduce_lmem));
