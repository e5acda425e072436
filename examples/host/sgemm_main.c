// sgemm: C = A x B for N x N floats on the device (-n N, default 32), tiles of T x T threads
// (the largest power of two whose square fits a block); checks C against the host's product.
#include "common.h"

struct sgemm_args {
  uint32_t n, a, b, c;
};

int main(int argc, char** argv) {
  struct options o = parse_options(argc, argv, VX_EXAMPLE_KERNEL_DIR "/sgemm_kernel.elf", 32);
  const uint32_t n = o.n;
  vx_device_h dev;
  CHECK(vx_dev_open(&dev));
  uint32_t t = 1;
  while ((2 * t) * (2 * t) <= block_threads(dev) && 2 * t <= 8) t *= 2;
  if (n == 0 || n % t != 0) {
    fprintf(stderr, "sgemm: N must be a positive multiple of the tile size %u\n", t);
    return 2;
  }
  const size_t bytes = (size_t)n * n * sizeof(float);
  float* A = malloc(bytes);
  float* B = malloc(bytes);
  float* C = malloc(bytes);
  // Small integers: every product and sum is exact in float, so the check can be exact.
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t k = 0; k < n; k++) {
      A[r * n + k] = (float)((int)((r * 3 + k * 5) % 7) - 3);
      B[r * n + k] = (float)((int)((r * 2 + k * 3 + 1) % 5) - 2);
    }

  vx_buffer_h kernel, da, db, dc, dargs;
  CHECK(vx_upload_kernel_file(dev, o.kernel, &kernel));
  CHECK(vx_upload_bytes(dev, A, bytes, &da));
  CHECK(vx_upload_bytes(dev, B, bytes, &db));
  CHECK(vx_mem_alloc(dev, bytes, VX_MEM_WRITE, &dc));
  uint64_t addr;
  struct sgemm_args args = {n, 0, 0, 0};
  CHECK(vx_mem_address(da, &addr));
  args.a = (uint32_t)addr;
  CHECK(vx_mem_address(db, &addr));
  args.b = (uint32_t)addr;
  CHECK(vx_mem_address(dc, &addr));
  args.c = (uint32_t)addr;
  CHECK(vx_upload_bytes(dev, &args, sizeof args, &dargs));

  set_launch(dev, n / t, n / t, t, t, 2 * t * t * sizeof(float));
  printf("sgemm: N=%u, tiles of %ux%u\n", n, t, t);
  CHECK(vx_start(dev, kernel, dargs));
  CHECK(vx_ready_wait(dev, VX_MAX_TIMEOUT));
  CHECK(vx_copy_from_dev(C, dc, 0, bytes));

  uint32_t errors = 0;
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t c = 0; c < n; c++) {
      float ref = 0;
      for (uint32_t k = 0; k < n; k++) ref += A[r * n + k] * B[k * n + c];
      if (C[r * n + c] != ref) {
        if (errors < 5) printf("C[%u][%u] = %g, expected %g\n", r, c, C[r * n + c], ref);
        errors++;
      }
    }
  vx_dev_close(dev);
  free(A);
  free(B);
  free(C);
  if (errors) {
    printf("FAILED: %u wrong elements\n", errors);
    return 1;
  }
  printf("PASSED\n");
  return 0;
}
