// Vortex 3.0 device intrinsics for kernels built with stock clang.
//
// Every Vortex instruction is R-type on CUSTOM0 (0x0B) and is emitted with the
// assembler's `.insn r` directive (clang 14 accepts it), so no patched
// toolchain is needed. Encodings and semantics: shared/spec/vortex-v3.md.
//
// SIMT and stock clang. A plain conditional branch never diverges a warp: it
// follows the highest active lane (the scalar-operand rule). Any branch whose
// condition differs between the active lanes therefore silently runs the
// wrong path for some of them. Kernels must:
//   - wrap lane-dependent `if`s in VX_IF / VX_ELSE / VX_ENDIF (SPLIT/JOIN),
//   - write loops with lane-dependent trip counts as VX_WHILE / VX_END_WHILE
//     (PRED),
//   - use vx_select / vx_min / vx_max instead of `?:`, min/max idioms, `&&`
//     and `||` on lane-dependent values (clang lowers those to branches on
//     RV32IMAF; vx_select uses Zicond, which the model implements),
//   - or run lane-serial code through vx_serial (one lane active at a time,
//     where ordinary C is safe).
// Branches on warp-uniform values (constants, blockDim, gridDim, loop bounds
// derived from them) are fine as ordinary C.
//
// The build passes `-Xclang -fconvergent-functions`: every inline asm is then
// `convergent`, so the optimizer may not duplicate a SPLIT/PRED or make it
// control-dependent on extra conditions (loop rotation, jump threading, tail
// duplication would otherwise clone the PRED of a VX_WHILE and leave lanes
// that exit at different copies with inconsistent registers).
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VX_INLINE static inline __attribute__((always_inline))

// ---------------------------------------------------------------- CSRs
#define VX_CSR_MSCRATCH 0x340
#define VX_CSR_MHARTID 0xF14
#define VX_CSR_THREAD_ID 0xCC0
#define VX_CSR_WARP_ID 0xCC1
#define VX_CSR_CORE_ID 0xCC2
#define VX_CSR_ACTIVE_WARPS 0xCC3
#define VX_CSR_ACTIVE_THREADS 0xCC4
#define VX_CSR_NUM_THREADS 0xFC0
#define VX_CSR_NUM_WARPS 0xFC1
#define VX_CSR_NUM_CORES 0xFC2
#define VX_CSR_LOCAL_MEM_BASE 0xFC3
#define VX_CSR_NUM_BARRIERS 0xFC4
#define VX_CSR_CTA_ID 0xCD0
#define VX_CSR_CTA_RANK 0xCD1
#define VX_CSR_CTA_SIZE 0xCD2
#define VX_CSR_THREAD_IDX_X 0xCD3
#define VX_CSR_THREAD_IDX_Y 0xCD4
#define VX_CSR_THREAD_IDX_Z 0xCD5
#define VX_CSR_BLOCK_IDX_X 0xCD6
#define VX_CSR_BLOCK_IDX_Y 0xCD7
#define VX_CSR_BLOCK_IDX_Z 0xCD8
#define VX_CSR_BLOCK_DIM_X 0xCD9
#define VX_CSR_BLOCK_DIM_Y 0xCDA
#define VX_CSR_BLOCK_DIM_Z 0xCDB
#define VX_CSR_GRID_DIM_X 0xCDC
#define VX_CSR_GRID_DIM_Y 0xCDD
#define VX_CSR_GRID_DIM_Z 0xCDE
#define VX_CSR_CTA_LMEM_ADDR 0xCDF
#define VX_CSR_CTA_CLUSTER_SIZE 0xCE0
#define VX_CSR_CTA_ENTRY 0xCE1
#define VX_CSR_MCYCLE 0xB00
#define VX_CSR_MINSTRET 0xB02

// Values that are constant for a lane during a launch: the asm is not
// volatile so clang may reuse one read.
#define VX_CSR_CONST(csr)                                        \
  ({                                                             \
    uint32_t __vx_v;                                             \
    __asm__("csrr %0, %1" : "=r"(__vx_v) : "i"(csr));            \
    __vx_v;                                                      \
  })
// Values that change while the warp runs (masks, counters).
#define VX_CSR_VOLATILE(csr)                                     \
  ({                                                             \
    uint32_t __vx_v;                                             \
    __asm__ volatile("csrr %0, %1" : "=r"(__vx_v) : "i"(csr));   \
    __vx_v;                                                      \
  })

VX_INLINE uint32_t vx_hart_id(void) { return VX_CSR_CONST(VX_CSR_MHARTID); }
VX_INLINE uint32_t vx_thread_id(void) { return VX_CSR_CONST(VX_CSR_THREAD_ID); }
VX_INLINE uint32_t vx_warp_id(void) { return VX_CSR_CONST(VX_CSR_WARP_ID); }
VX_INLINE uint32_t vx_core_id(void) { return VX_CSR_CONST(VX_CSR_CORE_ID); }
VX_INLINE uint32_t vx_active_warps(void) { return VX_CSR_VOLATILE(VX_CSR_ACTIVE_WARPS); }
VX_INLINE uint32_t vx_active_threads(void) { return VX_CSR_VOLATILE(VX_CSR_ACTIVE_THREADS); }
VX_INLINE uint32_t vx_num_threads(void) { return VX_CSR_CONST(VX_CSR_NUM_THREADS); }
VX_INLINE uint32_t vx_num_warps(void) { return VX_CSR_CONST(VX_CSR_NUM_WARPS); }
VX_INLINE uint32_t vx_num_cores(void) { return VX_CSR_CONST(VX_CSR_NUM_CORES); }
VX_INLINE uint32_t vx_local_mem_base(void) { return VX_CSR_CONST(VX_CSR_LOCAL_MEM_BASE); }
VX_INLINE uint32_t vx_num_barriers(void) { return VX_CSR_CONST(VX_CSR_NUM_BARRIERS); }
VX_INLINE uint32_t vx_cta_id(void) { return VX_CSR_CONST(VX_CSR_CTA_ID); }
VX_INLINE uint32_t vx_cta_rank(void) { return VX_CSR_CONST(VX_CSR_CTA_RANK); }
VX_INLINE uint32_t vx_cta_size(void) { return VX_CSR_CONST(VX_CSR_CTA_SIZE); }
VX_INLINE uint32_t vx_thread_idx_x(void) { return VX_CSR_CONST(VX_CSR_THREAD_IDX_X); }
VX_INLINE uint32_t vx_thread_idx_y(void) { return VX_CSR_CONST(VX_CSR_THREAD_IDX_Y); }
VX_INLINE uint32_t vx_thread_idx_z(void) { return VX_CSR_CONST(VX_CSR_THREAD_IDX_Z); }
VX_INLINE uint32_t vx_block_idx_x(void) { return VX_CSR_CONST(VX_CSR_BLOCK_IDX_X); }
VX_INLINE uint32_t vx_block_idx_y(void) { return VX_CSR_CONST(VX_CSR_BLOCK_IDX_Y); }
VX_INLINE uint32_t vx_block_idx_z(void) { return VX_CSR_CONST(VX_CSR_BLOCK_IDX_Z); }
VX_INLINE uint32_t vx_block_dim_x(void) { return VX_CSR_CONST(VX_CSR_BLOCK_DIM_X); }
VX_INLINE uint32_t vx_block_dim_y(void) { return VX_CSR_CONST(VX_CSR_BLOCK_DIM_Y); }
VX_INLINE uint32_t vx_block_dim_z(void) { return VX_CSR_CONST(VX_CSR_BLOCK_DIM_Z); }
VX_INLINE uint32_t vx_grid_dim_x(void) { return VX_CSR_CONST(VX_CSR_GRID_DIM_X); }
VX_INLINE uint32_t vx_grid_dim_y(void) { return VX_CSR_CONST(VX_CSR_GRID_DIM_Y); }
VX_INLINE uint32_t vx_grid_dim_z(void) { return VX_CSR_CONST(VX_CSR_GRID_DIM_Z); }
VX_INLINE void* vx_cta_lmem_addr(void) { return (void*)(uintptr_t)VX_CSR_CONST(VX_CSR_CTA_LMEM_ADDR); }
VX_INLINE uint32_t vx_cta_cluster_size(void) { return VX_CSR_CONST(VX_CSR_CTA_CLUSTER_SIZE); }
VX_INLINE uint32_t vx_cycles(void) { return VX_CSR_VOLATILE(VX_CSR_MCYCLE); }

// ---------------------------------------------------------------- warp control
// All Vortex control instructions are volatile with a memory clobber: they
// change which lanes execute, so nothing may be moved across them.

// TMC: the new mask is taken from the highest active lane.
VX_INLINE void vx_tmc(uint32_t mask) {
  __asm__ volatile(".insn r 0x0b, 0, 0, x0, %0, x0" ::"r"(mask) : "memory");
}
// WSPAWN: start warps 1..count-1 at pc with lane 0 active.
VX_INLINE void vx_wspawn(uint32_t count, void (*pc)(void)) {
  __asm__ volatile(".insn r 0x0b, 1, 0, x0, %0, %1" ::"r"(count), "r"(pc) : "memory");
}
// SPLIT: the returned token is the IPDOM depth before the split. `*cond` is
// passed through the asm as an in/out operand so that clang cannot branch on
// it before the SPLIT (it sees a new value after the instruction).
VX_INLINE uint32_t vx_split(uint32_t* cond) {
  uint32_t tok;
  __asm__ volatile(".insn r 0x0b, 2, 0, %0, %1, x0" : "=r"(tok), "+r"(*cond)::"memory");
  return tok;
}
// SPLIT.N (rs2 field = 1): splits on the negated predicate.
VX_INLINE uint32_t vx_split_n(uint32_t* cond) {
  uint32_t tok;
  __asm__ volatile(".insn r 0x0b, 2, 0, %0, %1, x1" : "=r"(tok), "+r"(*cond)::"memory");
  return tok;
}
VX_INLINE void vx_join(uint32_t tok) {
  __asm__ volatile(".insn r 0x0b, 3, 0, x0, %0, x0" ::"r"(tok) : "memory");
}
// PRED: tmask &= cond; when no lane remains, tmask = fallback. `*cond` is an
// in/out operand for the same reason as in vx_split.
VX_INLINE void vx_pred(uint32_t* cond, uint32_t fallback) {
  __asm__ volatile(".insn r 0x0b, 5, 0, x0, %0, %1" : "+r"(*cond) : "r"(fallback) : "memory");
}
// PRED.N (rd field = 1): keeps the lanes whose condition is false.
VX_INLINE void vx_pred_n(uint32_t* cond, uint32_t fallback) {
  __asm__ volatile(".insn r 0x0b, 5, 0, x1, %0, %1" : "+r"(*cond) : "r"(fallback) : "memory");
}
// BAR: id = (barrier number << 8) | CTA slot, bit 31 = global; count = warps.
VX_INLINE void vx_barrier(uint32_t id, uint32_t count) {
  __asm__ volatile(".insn r 0x0b, 4, 0, x0, %0, %1" ::"r"(id), "r"(count) : "memory");
}
// BAR.ARRIVE: counts this warp's arrival, returns the phase parity (token).
VX_INLINE uint32_t vx_barrier_arrive(uint32_t id, uint32_t count) {
  uint32_t tok;
  __asm__ volatile(".insn r 0x0b, 6, 0, %0, %1, %2" : "=r"(tok) : "r"(id), "r"(count) : "memory");
  return tok;
}
// BAR.WAIT: stalls while the barrier's phase parity still equals the token.
VX_INLINE void vx_barrier_wait(uint32_t id, uint32_t tok) {
  __asm__ volatile(".insn r 0x0b, 6, 0, x0, %0, %1" ::"r"(id), "r"(tok) : "memory");
}
VX_INLINE void vx_wsync(void) { __asm__ volatile(".insn r 0x0b, 7, 0, x0, x0, x0" ::: "memory"); }

// Barrier `num` of this CTA across all of its warps.
VX_INLINE void vx_cta_barrier(uint32_t num) { vx_barrier((num << 8) | vx_cta_id(), vx_cta_size()); }
VX_INLINE void __syncthreads(void) { vx_cta_barrier(0); }

// ---------------------------------------------------------------- vote / shuffle
// Volatile: the result depends on the active mask and other lanes' registers.
VX_INLINE uint32_t vx_vote_all(uint32_t pred) {
  uint32_t r;
  __asm__ volatile(".insn r 0x0b, 0, 1, %0, %1, x0" : "=r"(r) : "r"(pred) : "memory");
  return r;
}
VX_INLINE uint32_t vx_vote_any(uint32_t pred) {
  uint32_t r;
  __asm__ volatile(".insn r 0x0b, 1, 1, %0, %1, x0" : "=r"(r) : "r"(pred) : "memory");
  return r;
}
VX_INLINE uint32_t vx_vote_uni(uint32_t pred) {
  uint32_t r;
  __asm__ volatile(".insn r 0x0b, 2, 1, %0, %1, x0" : "=r"(r) : "r"(pred) : "memory");
  return r;
}
VX_INLINE uint32_t vx_vote_ballot(uint32_t pred) {
  uint32_t r;
  __asm__ volatile(".insn r 0x0b, 3, 1, %0, %1, x0" : "=r"(r) : "r"(pred) : "memory");
  return r;
}

// Shuffle control word: (mask << 12) | (c << 6) | b, 6-bit fields.
#define VX_SHFL_CTL(mask, c, b) ((((uint32_t)(mask)&63u) << 12) | (((uint32_t)(c)&63u) << 6) | ((uint32_t)(b)&63u))
// Whole-warp segment: mask 0, clamp 63 (sources past the last lane keep their own value).
#define VX_SHFL_WARP(b) VX_SHFL_CTL(0, 63, b)

VX_INLINE uint32_t vx_shfl_up_ctl(uint32_t v, uint32_t ctl) {
  uint32_t r;
  __asm__ volatile(".insn r 0x0b, 4, 1, %0, %1, %2" : "=r"(r) : "r"(v), "r"(ctl) : "memory");
  return r;
}
VX_INLINE uint32_t vx_shfl_down_ctl(uint32_t v, uint32_t ctl) {
  uint32_t r;
  __asm__ volatile(".insn r 0x0b, 5, 1, %0, %1, %2" : "=r"(r) : "r"(v), "r"(ctl) : "memory");
  return r;
}
VX_INLINE uint32_t vx_shfl_bfly_ctl(uint32_t v, uint32_t ctl) {
  uint32_t r;
  __asm__ volatile(".insn r 0x0b, 6, 1, %0, %1, %2" : "=r"(r) : "r"(v), "r"(ctl) : "memory");
  return r;
}
VX_INLINE uint32_t vx_shfl_idx_ctl(uint32_t v, uint32_t ctl) {
  uint32_t r;
  __asm__ volatile(".insn r 0x0b, 7, 1, %0, %1, %2" : "=r"(r) : "r"(v), "r"(ctl) : "memory");
  return r;
}
VX_INLINE uint32_t vx_shfl_up(uint32_t v, uint32_t delta) { return vx_shfl_up_ctl(v, VX_SHFL_WARP(delta)); }
VX_INLINE uint32_t vx_shfl_down(uint32_t v, uint32_t delta) { return vx_shfl_down_ctl(v, VX_SHFL_WARP(delta)); }
VX_INLINE uint32_t vx_shfl_bfly(uint32_t v, uint32_t lanemask) { return vx_shfl_bfly_ctl(v, VX_SHFL_WARP(lanemask)); }
VX_INLINE uint32_t vx_shfl_idx(uint32_t v, uint32_t lane) { return vx_shfl_idx_ctl(v, VX_SHFL_WARP(lane)); }

// ---------------------------------------------------------------- branch-free helpers
// Zicond: czero.eqz rd = (rs2 == 0) ? 0 : rs1; czero.nez rd = (rs2 != 0) ? 0 : rs1.
// Opaque to clang, so it cannot turn them back into a branchy select.
VX_INLINE uint32_t vx_czero_eqz(uint32_t v, uint32_t c) {
  uint32_t r;
  __asm__(".insn r 0x33, 5, 7, %0, %1, %2" : "=r"(r) : "r"(v), "r"(c));
  return r;
}
VX_INLINE uint32_t vx_czero_nez(uint32_t v, uint32_t c) {
  uint32_t r;
  __asm__(".insn r 0x33, 7, 7, %0, %1, %2" : "=r"(r) : "r"(v), "r"(c));
  return r;
}
// c != 0 ? a : b, per lane, without a branch.
VX_INLINE uint32_t vx_select(uint32_t c, uint32_t a, uint32_t b) { return vx_czero_eqz(a, c) | vx_czero_nez(b, c); }
VX_INLINE int32_t vx_select_i(uint32_t c, int32_t a, int32_t b) { return (int32_t)vx_select(c, (uint32_t)a, (uint32_t)b); }
VX_INLINE float vx_select_f(uint32_t c, float a, float b) {
  union { float f; uint32_t u; } x = {a}, y = {b}, r;
  r.u = vx_select(c, x.u, y.u);
  return r.f;
}
VX_INLINE uint32_t vx_min_u(uint32_t a, uint32_t b) { return vx_select(a < b, a, b); }
VX_INLINE uint32_t vx_max_u(uint32_t a, uint32_t b) { return vx_select(a > b, a, b); }
VX_INLINE int32_t vx_min_i(int32_t a, int32_t b) { return vx_select_i(a < b, a, b); }
VX_INLINE int32_t vx_max_i(int32_t a, int32_t b) { return vx_select_i(a > b, a, b); }

VX_INLINE float vx_float_from_bits(uint32_t u) {
  union { uint32_t u; float f; } x = {u};
  return x.f;
}
VX_INLINE uint32_t vx_float_bits(float f) {
  union { float f; uint32_t u; } x = {f};
  return x.u;
}

// ---------------------------------------------------------------- structured SIMT control flow
// VX_IF(cond) { ... } VX_ELSE { ... } VX_ENDIF
//   SPLIT on cond, run the side for the current lanes, JOIN. Between SPLIT and
//   JOIN the active lanes all agree on cond, so the plain `if` on it is
//   uniform; JOIN then re-runs the code after the SPLIT for the other lanes.
//   `cond` must itself be branch-free (use & and | instead of && and ||).
//   Never leave the body with break, continue, return or goto: the JOIN
//   would be skipped and the IPDOM stack left unbalanced.
#define VX_IF(cond)                              \
  {                                              \
    uint32_t __vx_if_c = (cond) ? 1u : 0u;       \
    uint32_t __vx_if_t = vx_split(&__vx_if_c);   \
    if (__vx_if_c) {
#define VX_ELSE \
  }             \
  else {
#define VX_ENDIF          \
  }                       \
  vx_join(__vx_if_t);     \
  }

// VX_WHILE(cond) { ... } VX_END_WHILE
//   Loop with a per-lane trip count. Each iteration PREDs the lanes whose
//   cond holds; when none is left, PRED restores the mask saved before the
//   loop and every lane leaves through the one exit. The lanes that left
//   earlier stopped right after the same PRED with cond false, so their
//   registers are consistent with the last lanes' when all resume.
//   `cond` must be branch-free; the body may contain VX_IF but no break,
//   continue, return or goto.
#define VX_WHILE(cond)                                 \
  {                                                    \
    const uint32_t __vx_wh_m = vx_active_threads();    \
    for (;;) {                                         \
      uint32_t __vx_wh_c = (cond) ? 1u : 0u;           \
      vx_pred(&__vx_wh_c, __vx_wh_m);                  \
      if (!__vx_wh_c) break;
#define VX_END_WHILE \
  }                  \
  }

#ifdef __cplusplus
}
#endif
