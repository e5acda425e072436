// fixed: maps a table at the fixed device address the kernel writes (0x20000000) with
// vx_mem_reserve, launches, and checks table[i] == i * i + 1 for n entries (-n, default 100).
#include "common.h"

#define FIXED_TABLE_ADDR 0x20000000u

struct fixed_args {
  uint32_t n;
};

int main(int argc, char** argv) {
  struct options o = parse_options(argc, argv, VX_EXAMPLE_KERNEL_DIR "/fixed_kernel.elf", 100);
  const uint32_t n = o.n;
  vx_device_h dev;
  vx_buffer_h kernel, table, dargs;
  CHECK(vx_dev_open(&dev));
  CHECK(vx_upload_kernel_file(dev, o.kernel, &kernel));
  CHECK(vx_mem_reserve(dev, FIXED_TABLE_ADDR, n * sizeof(uint32_t), VX_MEM_READ_WRITE, &table));
  uint64_t addr;
  CHECK(vx_mem_address(table, &addr));
  printf("table reserved at 0x%08llx\n", (unsigned long long)addr);
  struct fixed_args args = {n};
  CHECK(vx_upload_bytes(dev, &args, sizeof args, &dargs));
  const uint32_t bt = block_threads(dev);
  set_launch(dev, (n + bt - 1) / bt, 1, bt, 1, 0);
  CHECK(vx_start(dev, kernel, dargs));
  CHECK(vx_ready_wait(dev, VX_MAX_TIMEOUT));
  uint32_t* t = malloc(n * sizeof(uint32_t));
  CHECK(vx_copy_from_dev(t, table, 0, n * sizeof(uint32_t)));
  vx_dev_close(dev);
  uint32_t errors = 0;
  for (uint32_t i = 0; i < n; i++) errors += t[i] != i * i + 1;
  free(t);
  if (errors) {
    printf("FAILED: %u wrong entries\n", errors);
    return 1;
  }
  printf("PASSED\n");
  return 0;
}
