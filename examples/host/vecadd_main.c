// vecadd: c = a + b on the device for n floats (-n, default 1000); checks every element.
#include "common.h"

struct vecadd_args {
  uint32_t n, a, b, c;
};

int main(int argc, char** argv) {
  struct options o = parse_options(argc, argv, VX_EXAMPLE_KERNEL_DIR "/vecadd_kernel.elf", 1000);
  const uint32_t n = o.n;
  float* a = malloc(n * sizeof(float));
  float* b = malloc(n * sizeof(float));
  float* c = malloc(n * sizeof(float));
  for (uint32_t i = 0; i < n; i++) {
    a[i] = (float)(i % 1000);
    b[i] = (float)((i * 7) % 500);
  }

  vx_device_h dev;
  vx_buffer_h kernel, da, db, dc, dargs;
  CHECK(vx_dev_open(&dev));
  CHECK(vx_upload_kernel_file(dev, o.kernel, &kernel));
  CHECK(vx_mem_alloc(dev, n * sizeof(float), VX_MEM_READ, &da));
  CHECK(vx_mem_alloc(dev, n * sizeof(float), VX_MEM_READ, &db));
  CHECK(vx_mem_alloc(dev, n * sizeof(float), VX_MEM_WRITE, &dc));
  CHECK(vx_copy_to_dev(da, a, 0, n * sizeof(float)));
  CHECK(vx_copy_to_dev(db, b, 0, n * sizeof(float)));

  uint64_t addr;
  struct vecadd_args args = {n, 0, 0, 0};
  CHECK(vx_mem_address(da, &addr));
  args.a = (uint32_t)addr;
  CHECK(vx_mem_address(db, &addr));
  args.b = (uint32_t)addr;
  CHECK(vx_mem_address(dc, &addr));
  args.c = (uint32_t)addr;
  CHECK(vx_upload_bytes(dev, &args, sizeof args, &dargs));

  const uint32_t bt = block_threads(dev);
  set_launch(dev, (n + bt - 1) / bt, 1, bt, 1, 0);
  printf("vecadd: %u elements, blocks of %u threads\n", n, bt);
  CHECK(vx_start(dev, kernel, dargs));
  CHECK(vx_ready_wait(dev, VX_MAX_TIMEOUT));
  CHECK(vx_copy_from_dev(c, dc, 0, n * sizeof(float)));

  uint32_t errors = 0;
  for (uint32_t i = 0; i < n; i++)
    if (c[i] != a[i] + b[i]) {
      if (errors < 5) printf("c[%u] = %g, expected %g\n", i, c[i], a[i] + b[i]);
      errors++;
    }
  vx_mem_free(da);
  vx_mem_free(db);
  vx_mem_free(dc);
  vx_mem_free(dargs);
  vx_mem_free(kernel);
  vx_dev_close(dev);
  free(a);
  free(b);
  free(c);
  if (errors) {
    printf("FAILED: %u wrong elements\n", errors);
    return 1;
  }
  printf("PASSED\n");
  return 0;
}
