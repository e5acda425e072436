// API misuse, one case per line of output: each call must fail (return nonzero) and the library
// must say why on stderr; the program itself never crashes. Run plain and under vxreplay, the
// output and the status are the same. Argument: a kernel image (the vecadd example's).
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <vortex.h>

static int failed_as_expected = 0, total = 0;

static void expect_error(const char* what, int rc) {
  total++;
  if (rc != 0) failed_as_expected++;
  printf("%s: %s\n", what, rc != 0 ? "error" : "NO ERROR");
  fflush(stdout);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s KERNEL\n", argv[0]);
    return 2;
  }
  uint64_t v = 0;
  uint32_t w = 0;
  vx_buffer_h b = NULL, k = NULL, r1 = NULL, r2 = NULL;
  expect_error("null device", vx_dev_caps(NULL, VX_CAPS_NUM_WARPS, &v));
  expect_error("null buffer copy", vx_copy_to_dev(NULL, &w, 0, 4));

  vx_device_h dev;
  if (vx_dev_open(&dev) != 0) return 1;
  expect_error("unknown caps", vx_dev_caps(dev, 99, &v));
  if (vx_mem_alloc(dev, 64, VX_MEM_READ_WRITE, &b) != 0) return 1;
  char bytes[128];
  memset(bytes, 1, sizeof bytes);
  expect_error("copy past the end", vx_copy_to_dev(b, bytes, 32, 64));
  expect_error("read past the end", vx_copy_from_dev(bytes, b, 60, 8));
  expect_error("start on a data buffer", vx_start(dev, b, NULL));
  if (vx_mem_reserve(dev, 0x30000000, 8192, VX_MEM_READ_WRITE, &r1) != 0) return 1;
  expect_error("overlapping reserve", vx_mem_reserve(dev, 0x30001000, 4096, VX_MEM_READ_WRITE, &r2));
  expect_error("unaligned reserve", vx_mem_reserve(dev, 0x30100010, 4096, VX_MEM_READ_WRITE, &r2));
  expect_error("bad DCR", vx_dcr_write(dev, 0x7ff, 1));
  expect_error("bad flags", vx_mem_alloc(dev, 64, 0x10, &r2));
  expect_error("missing kernel file", vx_upload_kernel_file(dev, "/nonexistent/kernel.elf", &k));
  expect_error("not a kernel", vx_upload_kernel_bytes(dev, bytes, sizeof bytes, &k));
  if (vx_mem_free(b) != 0) return 1;
  expect_error("freed buffer", vx_copy_to_dev(b, bytes, 0, 4));
  // A good launch still works after all that.
  if (vx_upload_kernel_file(dev, argv[1], &k) != 0) return 1;
  vx_dcr_write(dev, VX_DCR_KMU_GRID_DIM_X, 1);
  vx_dcr_write(dev, VX_DCR_KMU_BLOCK_DIM_X, 4);
  vx_buffer_h args;
  uint32_t a[4] = {0, 0, 0, 0};  // n = 0: the kernel touches nothing
  if (vx_upload_bytes(dev, a, sizeof a, &args) != 0) return 1;
  if (vx_start(dev, k, args) != 0 || vx_ready_wait(dev, VX_MAX_TIMEOUT) != 0) return 1;
  vx_dev_close(dev);
  expect_error("closed device", vx_dev_caps(dev, VX_CAPS_NUM_WARPS, &v));
  printf("%d of %d misuses refused\n", failed_as_expected, total);
  return failed_as_expected == total ? 0 : 1;
}
