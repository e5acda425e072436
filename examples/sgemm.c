// sgemm: C = A x B for N x N matrices, tiled through local memory.
//
// Square 2-D launch: block T x T, grid G x G, N = G * T. Each CTA computes a
// T x T tile of C: per step it loads a T x T tile of A and of B into its
// local memory (CTA_LMEM_ADDR), synchronizes, accumulates, and synchronizes
// again before the next load. A and B are generated on the fly from (row,
// col) as small integers, so every float result is exact. Each thread then
// checks its C element against a direct (untiled) dot product: one vx_fail
// per wrong element. This is the main benchmark (several hundred thousand
// warp instructions at the default size).
//
// Launch limits: blockDim.x == blockDim.y <= SGEMM_MAX_TILE, blockDim.z == 1,
// gridDim.x == gridDim.y, gridDim.z == 1, N <= SGEMM_MAX_N; a launch outside
// them fails (exit code 1) without computing.
#include "vx_runtime.h"

#define SGEMM_MAX_TILE 8u
#define SGEMM_MAX_N 128u
#define SGEMM_LMEM_BYTES (2u * SGEMM_MAX_TILE * SGEMM_MAX_TILE * sizeof(float))

// Not static: the result stays in the image for inspection.
float sgemm_C[SGEMM_MAX_N * SGEMM_MAX_N];

// Values in -3..3 and -2..2: products and sums of up to 128 terms stay exact.
static inline float gen_a(uint32_t r, uint32_t c) { return (float)((int32_t)((r * 3u + c * 5u) % 7u) - 3); }
static inline float gen_b(uint32_t r, uint32_t c) { return (float)((int32_t)((r * 2u + c * 3u + 1u) % 5u) - 2); }

void sgemm(void* arg) {
  (void)arg;
  const uint32_t T = vx_block_dim_x();
  const uint32_t N = vx_grid_dim_x() * T;
  // Warp-uniform launch check: a plain branch is safe here.
  if (T != vx_block_dim_y() || T > SGEMM_MAX_TILE || vx_block_dim_z() != 1 || vx_grid_dim_x() != vx_grid_dim_y() ||
      vx_grid_dim_z() != 1 || N > SGEMM_MAX_N) {
    vx_fail(vx_global_linear() == 0);
    return;
  }
  const uint32_t tx = vx_thread_idx_x(), ty = vx_thread_idx_y();
  const uint32_t row = vx_block_idx_y() * T + ty;
  const uint32_t col = vx_block_idx_x() * T + tx;
  float* As = vx_cta_lmem_addr();
  float* Bs = As + T * T;

  float acc = 0.0f;
  for (uint32_t k0 = 0; k0 < N; k0 += T) {
    As[ty * T + tx] = gen_a(row, k0 + tx);
    Bs[ty * T + tx] = gen_b(k0 + ty, col);
    __syncthreads();
    for (uint32_t k = 0; k < T; k++) acc += As[ty * T + k] * Bs[k * T + tx];
    __syncthreads();
  }
  sgemm_C[row * N + col] = acc;

  float ref = 0.0f;
  for (uint32_t k = 0; k < N; k++) ref += gen_a(row, k) * gen_b(k, col);
  vx_fail(sgemm_C[row * N + col] != ref);
}

VX_LAUNCH(sgemm, 0, 8, 8, 1, 4, 4, 1, SGEMM_LMEM_BYTES);
