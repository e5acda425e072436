// Uploads one kernel file and runs it with the image's own launch (no argument block): prints
// whether vx_ready_wait succeeded. For kernel files as upstream ships them (a .vxbin, with or
// without its ELF beside it), and for vx_ready_wait's timeout (TIMEOUT_MS, default
// VX_MAX_TIMEOUT). Exit status 0: the launch completed.
#include <stdio.h>
#include <stdlib.h>

#include <vortex.h>

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: %s KERNEL [TIMEOUT_MS]\n", argv[0]);
    return 2;
  }
  vx_device_h dev;
  vx_buffer_h k;
  if (vx_dev_open(&dev) != 0 || vx_upload_kernel_file(dev, argv[1], &k) != 0) return 1;
  int rc = vx_start(dev, k, NULL);
  if (rc == 0) rc = vx_ready_wait(dev, argc == 3 ? strtoull(argv[2], NULL, 0) : VX_MAX_TIMEOUT);
  printf("run_kernel: %s\n", rc == 0 ? "completed" : "failed");
  vx_dev_close(dev);
  return rc == 0 ? 0 : 1;
}
