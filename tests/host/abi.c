// Uses every function of vortex.h, built against the installed header and library only
// (pkg-config vortex): the ABI a host program links to. Argument: a kernel image that adds two
// vectors (the vecadd example's kernel).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vortex.h>

#define OK(call)                                        \
  do {                                                  \
    if ((call) != 0) {                                  \
      fprintf(stderr, "abi: %s failed\n", #call);        \
      return 1;                                         \
    }                                                   \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  vx_device_h dev;
  OK(vx_dev_open(&dev));
  uint64_t caps[VX_CAPS_VM_PINNED_FREE + 1];
  for (uint32_t id = VX_CAPS_VERSION; id <= VX_CAPS_VM_PINNED_FREE; id++)
    if (id != VX_CAPS_CLOCK_RATE && id != VX_CAPS_PEAK_MEM_BW) OK(vx_dev_caps(dev, id, &caps[id]));
  if (!(caps[VX_CAPS_ISA_FLAGS] & VX_ISA_STD_I)) return 1;

  vx_buffer_h kernel, kernel2, a, b, c, args, fixed;
  OK(vx_upload_kernel_file(dev, argv[1], &kernel));
  FILE* f = fopen(argv[1], "rb");
  if (!f) return 1;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* image = malloc((size_t)size);
  if (fread(image, 1, (size_t)size, f) != (size_t)size) return 1;
  fclose(f);
  OK(vx_mem_free(kernel));  // the same image again, from memory
  OK(vx_upload_kernel_bytes(dev, image, (uint64_t)size, &kernel2));
  free(image);

  enum { N = 64 };
  float x[N], y[N], z[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = (float)(2 * i);
  }
  OK(vx_mem_alloc(dev, sizeof x, VX_MEM_READ, &a));
  OK(vx_upload_bytes(dev, y, sizeof y, &b));
  OK(vx_mem_reserve(dev, 0x28000000, sizeof z, VX_MEM_READ_WRITE, &c));
  OK(vx_mem_access(c, 0, sizeof z, VX_MEM_READ_WRITE));
  OK(vx_copy_to_dev(a, x, 0, sizeof x));
  uint64_t aa, ba, ca, mem_free, mem_used;
  OK(vx_mem_address(a, &aa));
  OK(vx_mem_address(b, &ba));
  OK(vx_mem_address(c, &ca));
  if (ca != 0x28000000) return 1;
  OK(vx_mem_info(dev, &mem_free, &mem_used));
  if (mem_used == 0) return 1;
  uint32_t block[4] = {N, (uint32_t)aa, (uint32_t)ba, (uint32_t)ca};
  const char* tmp = getenv("TMPDIR");
  char path[512];
  snprintf(path, sizeof path, "%s/vortex-abi-args.bin", tmp && *tmp ? tmp : "/tmp");
  f = fopen(path, "wb");
  if (!f || fwrite(block, 1, sizeof block, f) != sizeof block) return 1;
  fclose(f);
  OK(vx_upload_file(dev, path, &args));
  remove(path);
  OK(vx_dcr_write(dev, VX_DCR_KMU_GRID_DIM_X, N / 16));
  OK(vx_dcr_write(dev, VX_DCR_KMU_BLOCK_DIM_X, 16));
  uint32_t grid = 0;
  OK(vx_dcr_read(dev, VX_DCR_KMU_GRID_DIM_X, 0, &grid));
  if (grid != N / 16) return 1;
  OK(vx_start(dev, kernel2, args));
  OK(vx_ready_wait(dev, VX_MAX_TIMEOUT));
  OK(vx_copy_from_dev(z, c, 0, sizeof z));
  for (int i = 0; i < N; i++)
    if (z[i] != x[i] + y[i]) return 1;
  OK(vx_dump_perf(dev, stdout));
  OK(vx_mem_free(fixed = c));
  OK(vx_mem_free(a));
  OK(vx_mem_free(b));
  OK(vx_mem_free(args));
  OK(vx_dev_close(dev));
  printf("ABI OK\n");
  return 0;
}
