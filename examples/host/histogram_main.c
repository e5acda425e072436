// histogram: counts n keys (-n, default 2000) into 16 bins on the device with atomics; checks
// the counts against the host's.
#include "common.h"

#define NBINS 16u

struct histogram_args {
  uint32_t n, nbins, data, bins;
};

int main(int argc, char** argv) {
  struct options o = parse_options(argc, argv, VX_EXAMPLE_KERNEL_DIR "/histogram_kernel.elf", 2000);
  const uint32_t n = o.n;
  uint32_t* data = malloc(n * sizeof(uint32_t));
  uint32_t expected[NBINS] = {0}, bins[NBINS] = {0};
  uint32_t x = 12345;  // a fixed linear congruential sequence
  for (uint32_t i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    data[i] = x >> 16;
    expected[data[i] % NBINS]++;
  }

  vx_device_h dev;
  vx_buffer_h kernel, ddata, dbins, dargs;
  CHECK(vx_dev_open(&dev));
  CHECK(vx_upload_kernel_file(dev, o.kernel, &kernel));
  CHECK(vx_upload_bytes(dev, data, n * sizeof(uint32_t), &ddata));
  CHECK(vx_mem_alloc(dev, sizeof bins, VX_MEM_READ_WRITE, &dbins));
  CHECK(vx_copy_to_dev(dbins, bins, 0, sizeof bins));
  uint64_t addr;
  struct histogram_args args = {n, NBINS, 0, 0};
  CHECK(vx_mem_address(ddata, &addr));
  args.data = (uint32_t)addr;
  CHECK(vx_mem_address(dbins, &addr));
  args.bins = (uint32_t)addr;
  CHECK(vx_upload_bytes(dev, &args, sizeof args, &dargs));

  const uint32_t bt = block_threads(dev);
  set_launch(dev, (n + bt - 1) / bt, 1, bt, 1, 0);
  CHECK(vx_start(dev, kernel, dargs));
  CHECK(vx_ready_wait(dev, VX_MAX_TIMEOUT));
  CHECK(vx_copy_from_dev(bins, dbins, 0, sizeof bins));
  vx_dev_close(dev);
  free(data);

  uint32_t wrong = 0;
  for (uint32_t b = 0; b < NBINS; b++) {
    printf("bin %2u: %u\n", b, bins[b]);
    wrong += bins[b] != expected[b];
  }
  if (wrong) {
    printf("FAILED: %u wrong bins\n", wrong);
    return 1;
  }
  printf("PASSED\n");
  return 0;
}
