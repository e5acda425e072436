// twokernels: two kernel images in one program, one after the other at the same link address
// (vecadd, then pipeline's scale stage on its result): c = a + b, then y = k c; checks y. A
// debugger reads each launch with its own image's symbols. -n N elements (default 64).
#include "common.h"

struct vecadd_args {
  uint32_t n, a, b, c;
};
struct pipeline_args {
  uint32_t stage, n, x, y;
  float k;
};

int main(int argc, char** argv) {
  struct options o = parse_options(argc, argv, VX_EXAMPLE_KERNEL_DIR "/vecadd_kernel.elf", 64);
  const uint32_t n = o.n;
  float* a = malloc(n * sizeof(float));
  float* b = malloc(n * sizeof(float));
  float* y = malloc(n * sizeof(float));
  for (uint32_t i = 0; i < n; i++) {
    a[i] = (float)i;
    b[i] = (float)(2 * i);
  }
  vx_device_h dev;
  vx_buffer_h kernel, da, db, dc, dy, dargs;
  CHECK(vx_dev_open(&dev));
  CHECK(vx_mem_alloc(dev, n * sizeof(float), VX_MEM_READ, &da));
  CHECK(vx_mem_alloc(dev, n * sizeof(float), VX_MEM_READ, &db));
  CHECK(vx_mem_alloc(dev, n * sizeof(float), VX_MEM_READ_WRITE, &dc));
  CHECK(vx_mem_alloc(dev, n * sizeof(float), VX_MEM_WRITE, &dy));
  CHECK(vx_copy_to_dev(da, a, 0, n * sizeof(float)));
  CHECK(vx_copy_to_dev(db, b, 0, n * sizeof(float)));
  uint64_t addr;
  const uint32_t bt = block_threads(dev);
  set_launch(dev, (n + bt - 1) / bt, 1, bt, 1, 0);

  // The first image: vecadd.
  struct vecadd_args va = {n, 0, 0, 0};
  CHECK(vx_mem_address(da, &addr));
  va.a = (uint32_t)addr;
  CHECK(vx_mem_address(db, &addr));
  va.b = (uint32_t)addr;
  CHECK(vx_mem_address(dc, &addr));
  va.c = (uint32_t)addr;
  CHECK(vx_upload_kernel_file(dev, o.kernel, &kernel));
  CHECK(vx_upload_bytes(dev, &va, sizeof va, &dargs));
  CHECK(vx_start(dev, kernel, dargs));
  CHECK(vx_ready_wait(dev, VX_MAX_TIMEOUT));
  printf("launch 1 (vecadd) done\n");
  CHECK(vx_mem_free(kernel));
  CHECK(vx_mem_free(dargs));

  // The second image, at the same addresses: pipeline's scale stage, y = k c.
  struct pipeline_args pa = {1, n, 0, 0, 3.0f};
  CHECK(vx_mem_address(dc, &addr));
  pa.x = (uint32_t)addr;
  CHECK(vx_mem_address(dy, &addr));
  pa.y = (uint32_t)addr;
  CHECK(vx_upload_kernel_file(dev, VX_EXAMPLE_KERNEL_DIR "/pipeline_kernel.elf", &kernel));
  CHECK(vx_upload_bytes(dev, &pa, sizeof pa, &dargs));
  CHECK(vx_start(dev, kernel, dargs));
  CHECK(vx_ready_wait(dev, VX_MAX_TIMEOUT));
  printf("launch 2 (pipeline) done\n");
  CHECK(vx_copy_from_dev(y, dy, 0, n * sizeof(float)));
  vx_dev_close(dev);

  uint32_t errors = 0;
  for (uint32_t i = 0; i < n; i++)
    if (y[i] != 3.0f * (float)(3 * i)) {
      if (errors < 5) printf("y[%u] = %g, expected %g\n", i, y[i], 3.0f * (float)(3 * i));
      errors++;
    }
  printf("twokernels: %s\n", errors ? "FAILED" : "PASSED");
  free(a);
  free(b);
  free(y);
  return errors ? 1 : 0;
}
