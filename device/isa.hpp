// The instruction table: one row per instruction (mask, match, immediate kind,
// operand syntax, executor, extension). Decode, execution and disassembly all
// read the same rows; a test fails when two rows overlap.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "device/state.hpp"

namespace vx {

class Machine;

// How the immediate is laid out in the encoding.
enum class ImmKind : uint8_t { None, I, S, B, U, J, Shamt, Csr };

enum class Ext : uint8_t { I, M, A, F, Zicsr, Zicond, Zifencei, Vortex };

struct Decoded;
struct ExecCtx;

// What one instruction did to its warp.
enum class Step : uint8_t {
  Retire,     // committed: next_pc / next_tmask take effect
  Stall,      // not executed; retry later (WSPAWN waiting, BAR entering a wait)
  Trap,       // ECALL/EBREAK: trap to mtvec, or a stop when no handler is installed
  Exception,  // device exception: the instruction did not execute, nothing was written
};

// Eight bytes, so it comes back from an executor in one register: with a 32-bit lane field (twelve
// bytes) GCC assembled every return on the stack, and the mismatched store and load cost more than
// most executors' work.
struct Outcome {
  Step step = Step::Retire;
  Cause cause = Cause::None;
  uint16_t lane = 0;  // < 32
  uint32_t tval = 0;  // faulting address or instruction word
  static Outcome retire() { return {}; }
  static Outcome stall() { return {Step::Stall, Cause::None, 0, 0}; }
  static Outcome trap(Cause c) { return {Step::Trap, c, 0, 0}; }
  static Outcome fault(Cause c, uint32_t lane, uint32_t tval) { return {Step::Exception, c, uint16_t(lane), tval}; }
};
static_assert(sizeof(Outcome) == 8);

using ExecFn = Outcome (*)(ExecCtx&, const Decoded&);

// Operand syntax for the disassembler, one character per operand:
//   d s t    rd, rs1, rs2 as integer registers     D S T R  rd, rs1, rs2, rs3 as float registers
//   i        I/S immediate (signed)                u        U immediate (shifted down, as assemblers print)
//   >        shift amount                           b a      branch / jal target (absolute)
//   o        load/store offset: imm(rs1)            A        AMO address: (rs1)
//   c        CSR (by name when known)               z        CSR immediate (rs1 field)
//   m        rounding mode (printed unless dyn)     ,        separator (printed as ", ")
//
// A row matches when (raw & mask) == match, except when excl_mask is non-zero
// and (raw & excl_mask) == excl_match: that is how "rd != x0" (BAR.ARRIVE) or
// "rs2 field != 0" (SPLIT.N) stay one row each.
struct InsnRow {
  const char* mnemonic;
  uint32_t mask;
  uint32_t match;
  ImmKind imm;
  const char* args;
  ExecFn exec;
  Ext ext;
  uint32_t excl_mask = 0;
  uint32_t excl_match = 0;

  bool matches(uint32_t raw) const {
    return (raw & mask) == match && !(excl_mask != 0 && (raw & excl_mask) == excl_match);
  }
};
// True when some encoding matches both rows (exact, exclusions included).
bool rows_overlap(const InsnRow& a, const InsnRow& b);
// What the AMO instruction `word` (AMO*.W) writes over `mem` with the operand `reg` (exec_int.cpp).
uint32_t amo_value(uint32_t word, uint32_t mem, uint32_t reg);

// What an instruction is to an observer (device/driver.hpp, DeviceObserver): the kinds whose
// result can depend on other threads or on the schedule, and the synchronization a race detector needs.
enum class InsnClass : uint8_t {
  Other = 0,  // results follow from the thread's own registers
  Load,       // LB..LW, FLW: rd from memory
  Store,      // SB..SW, FSW
  Atomic,     // AMO*, LR.W, SC.W: rd from memory (SC: its success code) and a write
  Csr,        // CSRR*: rd from a CSR (mcycle, the thread's placement)
  Warp,       // VOTE, SHFL: rd from other lanes
  Barrier,    // BAR, BAR.ARRIVE
  Fence,      // FENCE
};
InsnClass insn_class(const InsnRow* row);

// A decoded instruction, cached per PC by the machine.
struct Decoded {
  ExecFn exec = nullptr;
  const InsnRow* row = nullptr;
  uint32_t raw = 0;
  int32_t imm = 0;  // sign-extended per ImmKind; Csr: the CSR number
  uint8_t rd = 0, rs1 = 0, rs2 = 0, rs3 = 0;
  uint8_t rm = 0;  // funct3 (rounding mode for FP)
  InsnClass cls = InsnClass::Other;
  bool fp_rd = false;  // rd names a float register (FLW)
  // The fast loop (Machine::run_fast) runs this with the full per-instruction bookkeeping: it may read
  // the counters (mcycle, minstret) or write a CSR, or change the mask, the wait state or readiness
  // (Vortex instructions); an unknown encoding too. Everything else, reads of the other CSRs included,
  // only reads and writes registers and memory and sets the next pc.
  bool sync = true;
};

// The CSRs whose value is a counter the fast loop keeps in locals between instructions (mcycle,
// minstret and their high halves): reading one needs Decoded::sync.
constexpr bool csr_is_counter(uint32_t csr) { return csr == 0xB00 || csr == 0xB80 || csr == 0xB02 || csr == 0xB82; }

// An executor the table names (generic: any warp width) and its copies compiled for one width each
// (1, 2, 4, 8, 16, 32 lanes): for the x86-64 baseline, and for hosts with AVX2 and FMA (`wide`).
struct SpecializedExec {
  ExecFn generic;
  ExecFn by_width[6];
  ExecFn wide[6];
};
// True on an x86-64 host with AVX2 and FMA (CPUID, asked once per process); false elsewhere.
bool host_has_avx2_fma();

#if defined(__x86_64__) && defined(__GNUC__)
// The copy of executor F compiled for AVX2 and FMA hosts: everything F calls inline is inlined into
// it (flatten) and compiled for those instructions, so its lane loops use 256-bit vectors. Chosen
// by specialize() only when the host has them.
template <ExecFn F>
[[gnu::target("avx2,fma,popcnt,bmi,bmi2,lzcnt"), gnu::flatten]] Outcome exec_wide(ExecCtx& c, const Decoded& d) {
  return F(c, d);
}
#define VX_WIDE(F) &exec_wide<F>
#else
#define VX_WIDE(F) F
#endif

// The table rows for an executor template whose last parameter is the lane count.
#define VX_WIDTHS(F, ...)                                                                               \
  {                                                                                                     \
    &F<__VA_ARGS__, 0>, {&F<__VA_ARGS__, 1>, &F<__VA_ARGS__, 2>,  &F<__VA_ARGS__, 4>,                   \
                         &F<__VA_ARGS__, 8>, &F<__VA_ARGS__, 16>, &F<__VA_ARGS__, 32>},                 \
    {                                                                                                   \
      VX_WIDE((&F<__VA_ARGS__, 1>)), VX_WIDE((&F<__VA_ARGS__, 2>)), VX_WIDE((&F<__VA_ARGS__, 4>)),      \
          VX_WIDE((&F<__VA_ARGS__, 8>)), VX_WIDE((&F<__VA_ARGS__, 16>)), VX_WIDE((&F<__VA_ARGS__, 32>)) \
    }                                                                                                   \
  }
#define VX_WIDTHS0(F)                                                                                  \
  {                                                                                                    \
    &F<0>, {&F<1>, &F<2>, &F<4>, &F<8>, &F<16>, &F<32>}, {                                             \
      VX_WIDE(&F<1>), VX_WIDE(&F<2>), VX_WIDE(&F<4>), VX_WIDE(&F<8>), VX_WIDE(&F<16>), VX_WIDE(&F<32>) \
    }                                                                                                  \
  }
// The copy of `generic` for warps of `nt` lanes, or `generic` itself when it has none. The machine
// puts these in its decode cache (never in the reference mode, which keeps the table's executors).
ExecFn specialize(ExecFn generic, uint32_t nt);
std::span<const SpecializedExec> int_specialized();  // exec_int.cpp
std::span<const SpecializedExec> fp_specialized();   // exec_fp.cpp

// Load sites. A host core's stride prefetcher follows each host load instruction's addresses; when one
// executor's load serves every guest load, it sees their addresses interleaved (a column walk beside
// a row walk shows no stride) and prefetches nothing. So each fixed-width load executor is compiled
// kLoadSites times more, and the decode cache gives a load the copy its pc picks: neighbouring guest
// loads get host loads of their own. Same code, same results (specialize_test.cpp checks each copy).
constexpr unsigned kLoadSites = 4;
struct SiteExec {
  ExecFn specialized;  // a by_width or wide copy
  ExecFn at[kLoadSites];
};
std::span<const SiteExec> int_sites();  // exec_int.cpp
std::span<const SiteExec> fp_sites();   // exec_fp.cpp
// The copy of a fixed-width executor for the instruction at pc, or `specialized` itself when it has none.
ExecFn at_site(ExecFn specialized, uint32_t pc);

template <ExecFn F, unsigned S>
[[gnu::flatten]] Outcome exec_at_site(ExecCtx& c, const Decoded& d) {
  asm volatile("" ::"i"(S));  // the copies differ, or the toolchain would fold them into one
  return F(c, d);
}
#if defined(__x86_64__) && defined(__GNUC__)
template <ExecFn F, unsigned S>
[[gnu::target("avx2,fma,popcnt,bmi,bmi2,lzcnt"), gnu::flatten]] Outcome exec_wide_at_site(ExecCtx& c,
                                                                                          const Decoded& d) {
  asm volatile("" ::"i"(S));
  return F(c, d);
}
#endif
// The site copies of the baseline and the wide copy of each executor F (fixed-width instances).
template <ExecFn... F>
constexpr auto site_table() {
#if defined(__x86_64__) && defined(__GNUC__)
  return std::array<SiteExec, 2 * sizeof...(F)>{
      SiteExec{F, {&exec_at_site<F, 0>, &exec_at_site<F, 1>, &exec_at_site<F, 2>, &exec_at_site<F, 3>}}...,
      SiteExec{
          &exec_wide<F>,
          {&exec_wide_at_site<F, 0>, &exec_wide_at_site<F, 1>, &exec_wide_at_site<F, 2>, &exec_wide_at_site<F, 3>}}...};
#else
  return std::array<SiteExec, sizeof...(F)>{
      SiteExec{F, {&exec_at_site<F, 0>, &exec_at_site<F, 1>, &exec_at_site<F, 2>, &exec_at_site<F, 3>}}...};
#endif
}
static_assert(kLoadSites == 4, "site_table() lists four copies");

// The rows of each extension group, each defined beside its executors.
std::span<const InsnRow> int_rows();     // exec_int.cpp: RV32I, M, A, Zicond, Zicsr, system
std::span<const InsnRow> fp_rows();      // exec_fp.cpp: F
std::span<const InsnRow> vortex_rows();  // exec_vortex.cpp: Vortex SIMT instructions

// The whole table.
const std::vector<const InsnRow*>& all_rows();
// The row matching an encoding, or nullptr (an illegal instruction).
const InsnRow* find_row(uint32_t raw);
// Decode a word; row == nullptr and exec == an illegal-instruction executor when unknown.
Decoded decode(uint32_t raw);
// "addi a0, a1, -3"; "unknown 0x0000007f" when no row matches.
std::string disassemble(uint32_t raw, uint32_t pc);
// ABI names: "a0", "ft3"; CSR names: "mscratch", "" when unknown.
const char* xreg_name(unsigned r);
const char* freg_name(unsigned r);
const char* csr_name(uint32_t csr);

// Everything an executor sees. Executors are precise: they check every lane
// before writing anything, so an Exception outcome leaves the state untouched.
struct ExecCtx {
  Machine& m;
  uint32_t core_id;
  uint32_t warp_id;
  CoreState& core;
  WarpState& w;
  uint32_t nt;  // lanes per warp
  uint32_t* x;  // w.x.data(): x[reg * nt + lane]
  uint32_t* f;  // w.f.data()
  uint32_t pc;
  uint32_t tmask;  // active lanes (never 0 while executing)
  uint32_t next_pc;
  uint32_t next_tmask;

  uint32_t& X(unsigned reg, unsigned lane) { return x[reg * nt + lane]; }
  uint32_t& F(unsigned reg, unsigned lane) { return f[reg * nt + lane]; }
  // The scalar-operand rule: one value for the whole warp comes from the highest active lane.
  unsigned last_lane() const { return 31u - unsigned(std::countl_zero(tmask)); }
};

// Active-lane count. The x86-64 baseline has no POPCNT instruction and GCC then
// calls libgcc for std::popcount; this is the inline bit-twiddling version.
inline unsigned lane_count(uint32_t m) {
#if defined(__POPCNT__)
  return unsigned(__builtin_popcount(m));
#else
  m = m - ((m >> 1) & 0x55555555u);
  m = (m & 0x33333333u) + ((m >> 2) & 0x33333333u);
  return (((m + (m >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24;
#endif
}

// Visit each set lane of a mask, lowest first.
template <class Fn>
inline void for_each_lane(uint32_t mask, Fn&& fn) {
  while (mask) {
    unsigned l = unsigned(std::countr_zero(mask));
    fn(l);
    mask &= mask - 1;
  }
}

// Executors with a lane-count parameter N are compiled once for any width (N = 0, the one the table
// names) and once per warp width (1..32), which the machine puts in its decode cache for its own
// configuration (specialize): register addressing, the full-mask test and the lane loops then have
// constant bounds.
inline uint32_t full_lane_mask(uint32_t nt) { return nt >= 32 ? 0xffffffffu : ((1u << nt) - 1u); }
template <unsigned N>
inline unsigned width(const ExecCtx& c) {
  if constexpr (N != 0) {
    return N;
  } else {
    return c.nt;
  }
}
template <unsigned N>
inline uint32_t* xreg(const ExecCtx& c, unsigned r) {
  return c.x + r * width<N>(c);
}
template <unsigned N>
inline uint32_t* freg(const ExecCtx& c, unsigned r) {
  return c.f + r * width<N>(c);
}
// N lanes of 32 bits as one GCC vector: loads, stores and element-wise operations of a whole register
// with the widest moves the target has. Results go to the register file through these: the next
// instruction's wide load then forwards from equally wide stores (element-by-element or 16-byte
// stores under a 32-byte load stall the load).
// (A member typedef: GCC drops a vector_size attribute written on an alias template.)
template <unsigned N>
struct LaneVecTypes {
  typedef uint32_t u __attribute__((vector_size(N * 4)));
  typedef int32_t s __attribute__((vector_size(N * 4)));
  typedef uint64_t u64 __attribute__((vector_size(N * 8)));
  typedef int64_t s64 __attribute__((vector_size(N * 8)));
};
template <unsigned N>
using LaneVec = typename LaneVecTypes<N>::u;
template <unsigned N>
using LaneVecS = typename LaneVecTypes<N>::s;
static_assert(sizeof(LaneVec<32>) == 128 && sizeof(LaneVec<1>) == 4);
// (By reference: a vector passed or returned by value is an ABI question GCC warns about.)
template <unsigned N>
inline void load_lanes(LaneVec<N>& v, const uint32_t* p) {
  std::memcpy(&v, p, sizeof v);
}
template <unsigned N>
inline void store_lanes(uint32_t* p, const LaneVec<N>& v) {
  std::memcpy(p, &v, sizeof v);
}
// Copies N lanes as one vector (a result array into the register file).
template <unsigned N>
inline void copy_lanes(uint32_t* to, const uint32_t* from) {
  LaneVec<N> v;
  load_lanes<N>(v, from);
  store_lanes<N>(to, v);
}

// Every active lane, lowest first; a fully active warp takes a counted loop the compiler unrolls and
// vectorizes.
template <unsigned N, class Fn>
inline void lanes(const ExecCtx& c, Fn&& fn) {
  const unsigned nt = width<N>(c);
  if (c.tmask == full_lane_mask(nt)) {
    for (unsigned l = 0; l < nt; ++l) fn(l);
  } else {
    for_each_lane(c.tmask, fn);
  }
}

// Field extraction.
namespace enc {
inline uint32_t rd(uint32_t r) { return (r >> 7) & 31; }
inline uint32_t rs1(uint32_t r) { return (r >> 15) & 31; }
inline uint32_t rs2(uint32_t r) { return (r >> 20) & 31; }
inline uint32_t rs3(uint32_t r) { return (r >> 27) & 31; }
inline uint32_t funct3(uint32_t r) { return (r >> 12) & 7; }
inline int32_t imm_i(uint32_t r) { return int32_t(r) >> 20; }
inline int32_t imm_s(uint32_t r) { return (int32_t(r) >> 25 << 5) | int32_t((r >> 7) & 31); }
inline int32_t imm_b(uint32_t r) {
  return (int32_t(r) >> 31 << 12) | int32_t(((r >> 7) & 1) << 11) | int32_t(((r >> 25) & 63) << 5) |
         int32_t(((r >> 8) & 15) << 1);
}
inline int32_t imm_u(uint32_t r) { return int32_t(r & 0xfffff000u); }
inline int32_t imm_j(uint32_t r) {
  return (int32_t(r) >> 31 << 20) | int32_t(((r >> 12) & 255) << 12) | int32_t(((r >> 20) & 1) << 11) |
         int32_t(((r >> 21) & 1023) << 1);
}
}  // namespace enc

}  // namespace vx
