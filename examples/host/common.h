// Shared by the example host programs: checked vortex.h calls, the command line (-k KERNEL,
// -n N) and the launch shape through the KMU's DCRs, as upstream Vortex's regression programs
// set it.
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vortex.h>

// The library has said why on stderr; the program stops there.
#define CHECK(call)                                                \
  do {                                                             \
    int rc_ = (call);                                              \
    if (rc_ != 0) {                                                \
      fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #call); \
      exit(1);                                                     \
    }                                                              \
  } while (0)

struct options {
  const char* kernel;
  uint32_t n;
};

// -k KERNEL (default: the image built beside the program), -n N.
static inline struct options parse_options(int argc, char** argv, const char* default_kernel, uint32_t default_n) {
  struct options o = {default_kernel, default_n};
  int c;
  while ((c = getopt(argc, argv, "k:n:h")) != -1) {
    switch (c) {
      case 'k': o.kernel = optarg; break;
      case 'n': o.n = (uint32_t)strtoul(optarg, NULL, 0); break;
      default:
        fprintf(stderr, "usage: %s [-k KERNEL] [-n N]\n", argv[0]);
        exit(2);
    }
  }
  return o;
}

static inline void set_launch(vx_device_h dev, uint32_t gx, uint32_t gy, uint32_t bx, uint32_t by, uint32_t lmem) {
  CHECK(vx_dcr_write(dev, VX_DCR_KMU_GRID_DIM_X, gx));
  CHECK(vx_dcr_write(dev, VX_DCR_KMU_GRID_DIM_Y, gy));
  CHECK(vx_dcr_write(dev, VX_DCR_KMU_GRID_DIM_Z, 1));
  CHECK(vx_dcr_write(dev, VX_DCR_KMU_BLOCK_DIM_X, bx));
  CHECK(vx_dcr_write(dev, VX_DCR_KMU_BLOCK_DIM_Y, by));
  CHECK(vx_dcr_write(dev, VX_DCR_KMU_BLOCK_DIM_Z, 1));
  CHECK(vx_dcr_write(dev, VX_DCR_KMU_LMEM_SIZE, lmem));
}

// Threads per block: the device's warps x threads, at most 64.
static inline uint32_t block_threads(vx_device_h dev) {
  uint64_t warps = 0, threads = 0;
  CHECK(vx_dev_caps(dev, VX_CAPS_NUM_WARPS, &warps));
  CHECK(vx_dev_caps(dev, VX_CAPS_NUM_THREADS, &threads));
  uint64_t b = warps * threads;
  return (uint32_t)(b > 64 ? 64 : b);
}
