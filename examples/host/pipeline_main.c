// pipeline: three launches in a row on the same arrays (fill x, y = k x, x = x + y), the
// argument block rewritten between them; checks x[i] == (1 + k) i. -n N elements (default 256).
#include "common.h"

struct pipeline_args {
  uint32_t stage, n, x, y;
  float k;
};

int main(int argc, char** argv) {
  struct options o = parse_options(argc, argv, VX_EXAMPLE_KERNEL_DIR "/pipeline_kernel.elf", 256);
  const uint32_t n = o.n;
  vx_device_h dev;
  vx_buffer_h kernel, dx, dy, dargs;
  CHECK(vx_dev_open(&dev));
  CHECK(vx_upload_kernel_file(dev, o.kernel, &kernel));
  CHECK(vx_mem_alloc(dev, n * sizeof(float), VX_MEM_READ_WRITE, &dx));
  CHECK(vx_mem_alloc(dev, n * sizeof(float), VX_MEM_READ_WRITE, &dy));
  CHECK(vx_mem_alloc(dev, sizeof(struct pipeline_args), VX_MEM_READ, &dargs));
  uint64_t addr;
  struct pipeline_args args = {0, n, 0, 0, 3.0f};
  CHECK(vx_mem_address(dx, &addr));
  args.x = (uint32_t)addr;
  CHECK(vx_mem_address(dy, &addr));
  args.y = (uint32_t)addr;

  const uint32_t bt = block_threads(dev);
  set_launch(dev, (n + bt - 1) / bt, 1, bt, 1, 0);
  const char* names[] = {"fill", "scale", "add"};
  for (uint32_t stage = 0; stage < 3; stage++) {
    args.stage = stage;
    CHECK(vx_copy_to_dev(dargs, &args, 0, sizeof args));
    CHECK(vx_start(dev, kernel, dargs));
    CHECK(vx_ready_wait(dev, VX_MAX_TIMEOUT));
    printf("launch %u (%s) done\n", stage + 1, names[stage]);
  }
  float* x = malloc(n * sizeof(float));
  CHECK(vx_copy_from_dev(x, dx, 0, n * sizeof(float)));
  vx_dev_close(dev);
  uint32_t errors = 0;
  for (uint32_t i = 0; i < n; i++) errors += x[i] != (1.0f + args.k) * (float)i;
  free(x);
  if (errors) {
    printf("FAILED: %u wrong elements\n", errors);
    return 1;
  }
  printf("PASSED\n");
  return 0;
}
