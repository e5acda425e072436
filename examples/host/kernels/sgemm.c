// sgemm for a host program: C = A x B for N x N matrices the host provides, tiled through
// local memory. Block T x T, grid N/T x N/T (set by the host through the KMU's DCRs); each CTA
// loads a T x T tile of A and of B per step, synchronizes, accumulates, and synchronizes again.
#include "vx_runtime.h"

struct sgemm_args {
  uint32_t n;
  uint32_t a, b, c;  // device addresses of A, B and C (row-major floats)
};

void sgemm(void* arg) {
  const struct sgemm_args* p = arg;
  const float* A = (const float*)(uintptr_t)p->a;
  const float* B = (const float*)(uintptr_t)p->b;
  float* C = (float*)(uintptr_t)p->c;
  const uint32_t N = p->n;
  const uint32_t T = vx_block_dim_x();
  const uint32_t tx = vx_thread_idx_x(), ty = vx_thread_idx_y();
  const uint32_t row = vx_block_idx_y() * T + ty;
  const uint32_t col = vx_block_idx_x() * T + tx;
  float* As = vx_cta_lmem_addr();
  float* Bs = As + T * T;

  float acc = 0.0f;
  for (uint32_t k0 = 0; k0 < N; k0 += T) {
    As[ty * T + tx] = A[row * N + k0 + tx];
    Bs[ty * T + tx] = B[(k0 + ty) * N + col];
    __syncthreads();
    for (uint32_t k = 0; k < T; k++) acc += As[ty * T + k] * Bs[k * T + tx];
    __syncthreads();
  }
  C[row * N + col] = acc;
}

VX_LAUNCH(sgemm, 0, 1, 1, 1, 4, 4, 1, 2 * 4 * 4 * sizeof(float));
