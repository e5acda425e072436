// Device runtime for the example kernels: launch descriptor, exit code,
// assertions, index helpers and atomics.
//
// Kernel model. A kernel is `void NAME(void* arg)`; the startup code
// (start.S) calls it once per warp with a0 = the warp's mscratch (the
// argument block of the launch). The image names its default launch with
// VX_LAUNCH, which the runner reads from the symbol __vx_launch in section
// .vx_launch; the runner may override grid and block.
//
// Self-checking kernels call vx_fail() for every wrong result: the exit-code
// word then counts failures, and exit code 0 means "verified".
//
// Assertion convention (the debugger recognizes it). When vx_assert(cond)
// fails, each failing lane
//   1. prints "ASSERT FAILED: file:line: expr (block x,y,z thread x,y,z)"
//      through vx_printf,
//   2. adds 1 to the exit-code word,
//   3. executes `ebreak` with a0 = address of a struct vx_assert_info,
//      IMMEDIATELY followed by the marker word 0x41a05013
//      (`srai x0, x0, 26`, a RISC-V HINT). The marker is never executed on the
//      failure path: it only tags the ebreak as an assertion. A debugger that
//      resumes skips it; the lane then continues after the vx_assert.
// The failure path runs inside VX_IF, so only the failing lanes take it.
#pragma once

#include <stdint.h>

#include "vx_intrinsics.h"
#include "vx_print.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---------------------------------------------------------------- launch descriptor
#define VX_LAUNCH_MAGIC 0x4e4c5856u  // "VXLN"
#define VX_LAUNCH_VERSION 1u

struct vx_launch_desc {  // all fields little-endian u32
  uint32_t magic;
  uint32_t version;
  uint32_t entry;  // kernel function address (CTA_ENTRY); 0 = legacy main() launch
  uint32_t arg;    // argument block address (each warp's mscratch); 0 = none
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t lmem;   // local memory bytes per CTA
};

// Defines the image's default launch. `fn` is a kernel `void fn(void*)`,
// `argp` a pointer (or 0) that every warp receives as its argument.
#define VX_LAUNCH(fn, argp, gx, gy, gz, bx, by, bz, lmem_bytes)                                 \
  __attribute__((section(".vx_launch"), used)) const struct vx_launch_desc __vx_launch = {    \
      VX_LAUNCH_MAGIC,                                                                          \
      VX_LAUNCH_VERSION,                                                                        \
      (uint32_t)(uintptr_t)(fn),                                                                \
      (uint32_t)(uintptr_t)(argp),                                                              \
      {(gx), (gy), (gz)},                                                                       \
      {(bx), (by), (bz)},                                                                       \
      (lmem_bytes)}

// Where RUN_INSTANCES kernels return to: a TMC x0 that retires the warp.
void vx_instance_return(void);

// Runs fn(arg, lane) once per active lane, lowest lane first, with only that
// lane active; ordinary (branchy) C is safe inside fn. `arg` is the calling
// lane's own value.
void vx_serial(void (*fn)(void* arg, int lane), void* arg);

// ---------------------------------------------------------------- exit code
#define VX_EXIT_CODE_ADDR 0x8348u

VX_INLINE void vx_set_exit_code(int code) { *(volatile int32_t*)(uintptr_t)VX_EXIT_CODE_ADDR = code; }
// Adds n (0 allowed) to the exit-code word; per lane, atomically. Passing a
// 0/1 comparison result counts a failure without a branch.
VX_INLINE void vx_fail(uint32_t n) {
  __atomic_fetch_add((volatile uint32_t*)(uintptr_t)VX_EXIT_CODE_ADDR, n, __ATOMIC_RELAXED);
}

// ---------------------------------------------------------------- atomics
VX_INLINE uint32_t vx_atomic_add(volatile uint32_t* p, uint32_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
VX_INLINE uint32_t vx_atomic_max(volatile uint32_t* p, uint32_t v) {
  return __atomic_fetch_max(p, v, __ATOMIC_RELAXED);
}

// ---------------------------------------------------------------- index helpers
VX_INLINE uint32_t vx_block_threads(void) { return vx_block_dim_x() * vx_block_dim_y() * vx_block_dim_z(); }
VX_INLINE uint32_t vx_grid_blocks(void) { return vx_grid_dim_x() * vx_grid_dim_y() * vx_grid_dim_z(); }
// Linear index of this CTA in the grid (x fastest).
VX_INLINE uint32_t vx_block_linear(void) {
  return vx_block_idx_x() + vx_grid_dim_x() * (vx_block_idx_y() + vx_grid_dim_y() * vx_block_idx_z());
}
// Linear index of this thread in its CTA (x fastest).
VX_INLINE uint32_t vx_thread_linear(void) {
  return vx_thread_idx_x() + vx_block_dim_x() * (vx_thread_idx_y() + vx_block_dim_y() * vx_thread_idx_z());
}
VX_INLINE uint32_t vx_global_linear(void) { return vx_block_linear() * vx_block_threads() + vx_thread_linear(); }
VX_INLINE uint32_t vx_total_threads(void) { return vx_grid_blocks() * vx_block_threads(); }

// ---------------------------------------------------------------- assertions
struct vx_assert_info {
  const char* expr;
  const char* file;
  uint32_t line;
  const char* func;
};

#define VX_ASSERT_MARKER 0x41a05013u

// The failure path of vx_assert; call it only from the failing lanes.
void vx_assert_fail(const struct vx_assert_info* info);

#define vx_assert(cond)                                                                  \
  {                                                                                      \
    VX_IF(!(cond)) {                                                                     \
      static const struct vx_assert_info __vx_assert_site = {#cond, __FILE__, __LINE__,  \
                                                             __func__};                  \
      vx_assert_fail(&__vx_assert_site);                                                 \
    }                                                                                    \
    VX_ENDIF                                                                             \
  }

#ifdef __cplusplus
}
#endif
