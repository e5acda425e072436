// The integer ISA of the kernels (shared/spec/vortex-v3.md, "ISA for kernels"):
// RV32I, M, A, Zicond, Zicsr, Zifencei and the machine-mode trap return.
//
// Every executor is precise: all lanes are checked (alignment, mapping, CSR
// existence) before anything is written, so a fault leaves the warp untouched.
// When several lanes fault, the lowest faulting lane is reported.
#include <array>
#include <bit>
#include <cstring>
#include <type_traits>

#include "device/machine.hpp"

namespace vx {

namespace {

uint32_t full_mask(uint32_t nt) { return nt >= 32 ? 0xffffffffu : ((1u << nt) - 1u); }

template <unsigned N = 0>
void write_all(ExecCtx& c, unsigned rd, uint32_t v) {
  if (rd == 0) return;
  uint32_t* out = xreg<N>(c, rd);
  lanes<N>(c, [&](unsigned l) { out[l] = v; });
}

Outcome illegal(ExecCtx& c, const Decoded& d) {
  return Outcome::fault(Cause::IllegalInstruction, c.last_lane(), d.raw);
}

// --- ALU ----------------------------------------------------------------------

enum class Op : uint8_t {
  Add,
  Sub,
  Sll,
  Slt,
  Sltu,
  Xor,
  Srl,
  Sra,
  Or,
  And,
  Mul,
  Mulh,
  Mulhsu,
  Mulhu,
  Div,
  Divu,
  Rem,
  Remu,
  CzeroEqz,
  CzeroNez,
};

constexpr int32_t kIntMin = int32_t(0x80000000u);

template <Op op>
inline uint32_t alu(uint32_t a, uint32_t b) {
  const int32_t sa = int32_t(a), sb = int32_t(b);
  if constexpr (op == Op::Add) return a + b;
  if constexpr (op == Op::Sub) return a - b;
  // Register shifts use only the low 5 bits of rs2 (RV32).
  if constexpr (op == Op::Sll) return a << (b & 31);
  if constexpr (op == Op::Slt) return sa < sb;
  if constexpr (op == Op::Sltu) return a < b;
  if constexpr (op == Op::Xor) return a ^ b;
  if constexpr (op == Op::Srl) return a >> (b & 31);
  if constexpr (op == Op::Sra) return uint32_t(sa >> (b & 31));
  if constexpr (op == Op::Or) return a | b;
  if constexpr (op == Op::And) return a & b;
  if constexpr (op == Op::Mul) return a * b;
  if constexpr (op == Op::Mulh) return uint32_t(uint64_t(int64_t(sa) * int64_t(sb)) >> 32);
  // |signed| * unsigned stays below 2^63, so the product fits an int64.
  if constexpr (op == Op::Mulhsu) return uint32_t(uint64_t(int64_t(sa) * int64_t(uint64_t(b))) >> 32);
  if constexpr (op == Op::Mulhu) return uint32_t((uint64_t(a) * uint64_t(b)) >> 32);
  // RISC-V M corner cases: x / 0 = all ones, x % 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0.
  if constexpr (op == Op::Div) {
    if (b == 0) return 0xffffffffu;
    if (sa == kIntMin && sb == -1) return a;
    return uint32_t(sa / sb);
  }
  if constexpr (op == Op::Divu) return b == 0 ? 0xffffffffu : a / b;
  if constexpr (op == Op::Rem) {
    if (b == 0) return a;
    if (sa == kIntMin && sb == -1) return 0;
    return uint32_t(sa % sb);
  }
  if constexpr (op == Op::Remu) return b == 0 ? a : a % b;
  if constexpr (op == Op::CzeroEqz) return b == 0 ? 0 : a;
  if constexpr (op == Op::CzeroNez) return b != 0 ? 0 : a;
}

// A fully active warp of N lanes (1 to 32): the lanes go through a local array, so the loop has a fixed
// trip count and no possible overlap between rd and the sources, which is what the compiler needs
// to vectorize it at -O2.
// The operations with a vector form are computed on whole registers (LaneVec); multiply-high,
// division and remainder lane by lane, through a local array.
template <Op op>
constexpr bool kVectorOp =
    op == Op::Add || op == Op::Sub || op == Op::Sll || op == Op::Slt || op == Op::Sltu || op == Op::Xor ||
    op == Op::Srl || op == Op::Sra || op == Op::Or || op == Op::And || op == Op::Mul || op == Op::Mulh ||
    op == Op::Mulhsu || op == Op::Mulhu || op == Op::CzeroEqz || op == Op::CzeroNez;

template <Op op, unsigned N>
inline void alu_vec(LaneVec<N>& r, const LaneVec<N>& a, const LaneVec<N>& b) {
  using V = LaneVec<N>;
  using S = LaneVecS<N>;
  if constexpr (op == Op::Add) r = a + b;
  if constexpr (op == Op::Sub) r = a - b;
  if constexpr (op == Op::Sll) r = a << (b & 31);
  if constexpr (op == Op::Slt) r = V(S(a) < S(b)) & 1;  // comparisons give -1 for true
  if constexpr (op == Op::Sltu) r = V(a < b) & 1;
  if constexpr (op == Op::Xor) r = a ^ b;
  if constexpr (op == Op::Srl) r = a >> (b & 31);
  if constexpr (op == Op::Sra) r = V(S(a) >> S(b & 31));
  if constexpr (op == Op::Or) r = a | b;
  if constexpr (op == Op::And) r = a & b;
  if constexpr (op == Op::Mul) r = a * b;
  if constexpr (op == Op::Mulh || op == Op::Mulhsu || op == Op::Mulhu) {
    // The high word of the 64-bit product, in 64-bit lanes: sign- or zero-extended operands as the row says.
    using W = typename LaneVecTypes<N>::u64;
    using WS = typename LaneVecTypes<N>::s64;
    W wa, wb;
    if constexpr (op == Op::Mulhu) {
      wa = __builtin_convertvector(a, W);
    } else {
      wa = W(__builtin_convertvector(S(a), WS));
    }
    if constexpr (op == Op::Mulh) {
      wb = W(__builtin_convertvector(S(b), WS));
    } else {
      wb = __builtin_convertvector(b, W);
    }
    r = __builtin_convertvector((wa * wb) >> 32, V);
  }
  if constexpr (op == Op::CzeroEqz) r = a & V(b != 0);
  if constexpr (op == Op::CzeroNez) r = a & V(b == 0);
}

template <Op op, unsigned N, bool kImm>
inline void alu_full(uint32_t* out, const uint32_t* a, const uint32_t* b, uint32_t imm) {
  if constexpr (kVectorOp<op>) {
    LaneVec<N> va, vb, r;
    load_lanes<N>(va, a);
    if constexpr (kImm) {
      vb = LaneVec<N>{} + imm;
    } else {
      load_lanes<N>(vb, b);
    }
    alu_vec<op, N>(r, va, vb);
    store_lanes<N>(out, r);
  } else {
    uint32_t t[N];
    for (unsigned l = 0; l < N; ++l) t[l] = alu<op>(a[l], kImm ? imm : b[l]);
    copy_lanes<N>(out, t);
  }
}

// True when the fixed-width loop handled the instruction.
template <Op op, bool kImm, unsigned N>
inline bool alu_full_width(const ExecCtx& c, uint32_t* out, const uint32_t* a, const uint32_t* b, uint32_t imm) {
  if (c.tmask != full_mask(width<N>(c))) return false;
  if constexpr (N != 0) {
    alu_full<op, N, kImm>(out, a, b, imm);
    return true;
  }
  switch (c.nt) {
    case 1: alu_full<op, 1, kImm>(out, a, b, imm); return true;
    case 2: alu_full<op, 2, kImm>(out, a, b, imm); return true;
    case 4: alu_full<op, 4, kImm>(out, a, b, imm); return true;
    case 8: alu_full<op, 8, kImm>(out, a, b, imm); return true;
    case 16: alu_full<op, 16, kImm>(out, a, b, imm); return true;
    case 32: alu_full<op, 32, kImm>(out, a, b, imm); return true;
    default: return false;
  }
}

template <Op op, unsigned N = 0>
Outcome exec_reg(ExecCtx& c, const Decoded& d) {
  if (d.rd == 0) return Outcome::retire();
  uint32_t* out = xreg<N>(c, d.rd);
  const uint32_t* a = xreg<N>(c, d.rs1);
  const uint32_t* b = xreg<N>(c, d.rs2);
  if (!alu_full_width<op, false, N>(c, out, a, b, 0))
    for_each_lane(c.tmask, [&](unsigned l) { out[l] = alu<op>(a[l], b[l]); });
  return Outcome::retire();
}

template <Op op, unsigned N = 0>
Outcome exec_imm(ExecCtx& c, const Decoded& d) {
  if (d.rd == 0) return Outcome::retire();
  uint32_t* out = xreg<N>(c, d.rd);
  const uint32_t* a = xreg<N>(c, d.rs1);
  const uint32_t b = uint32_t(d.imm);
  if (!alu_full_width<op, true, N>(c, out, a, nullptr, b))
    for_each_lane(c.tmask, [&](unsigned l) { out[l] = alu<op>(a[l], b); });
  return Outcome::retire();
}

template <unsigned N = 0>
Outcome exec_lui(ExecCtx& c, const Decoded& d) {
  write_all<N>(c, d.rd, uint32_t(d.imm));
  return Outcome::retire();
}

template <unsigned N = 0>
Outcome exec_auipc(ExecCtx& c, const Decoded& d) {
  write_all<N>(c, d.rd, c.pc + uint32_t(d.imm));
  return Outcome::retire();
}

// --- Control flow -------------------------------------------------------------
// A misaligned target is not checked here: the model raises it at the next fetch.

template <unsigned N = 0>
Outcome exec_jal(ExecCtx& c, const Decoded& d) {
  write_all<N>(c, d.rd, c.pc + 4);
  c.next_pc = c.pc + uint32_t(d.imm);
  return Outcome::retire();
}

// The target comes from the highest active lane (scalar-operand rule); it is
// read before the link is written, since rd may equal rs1.
template <unsigned N = 0>
Outcome exec_jalr(ExecCtx& c, const Decoded& d) {
  c.next_pc = (xreg<N>(c, d.rs1)[c.last_lane()] + uint32_t(d.imm)) & ~1u;
  write_all<N>(c, d.rd, c.pc + 4);
  return Outcome::retire();
}

enum class Cond : uint8_t { Eq, Ne, Lt, Ge, Ltu, Geu };

template <Cond k>
inline bool compare(uint32_t a, uint32_t b) {
  if constexpr (k == Cond::Eq) return a == b;
  if constexpr (k == Cond::Ne) return a != b;
  if constexpr (k == Cond::Lt) return int32_t(a) < int32_t(b);
  if constexpr (k == Cond::Ge) return int32_t(a) >= int32_t(b);
  if constexpr (k == Cond::Ltu) return a < b;
  if constexpr (k == Cond::Geu) return a >= b;
}

// Spec: "A plain branch never diverges a warp": the highest active lane decides.
// Lanes that disagree are recorded (per PC), so a kernel that forgot SPLIT/JOIN shows up; with
// strict branches they are a device exception instead, before the branch executes.
template <Cond k, unsigned N = 0>
Outcome exec_branch(ExecCtx& c, const Decoded& d) {
  const uint32_t* a = xreg<N>(c, d.rs1);
  const uint32_t* b = xreg<N>(c, d.rs2);
  uint32_t true_lanes = 0;
  lanes<N>(c, [&](unsigned l) { true_lanes |= uint32_t(compare<k>(a[l], b[l])) << l; });
  const bool last_taken = (true_lanes >> c.last_lane()) & 1;
  if (true_lanes != 0 && true_lanes != c.tmask) [[unlikely]] {
    if (c.m.strict_branches()) {
      // The lane reported is the lowest one the highest active lane would have overruled.
      uint32_t overruled = last_taken ? c.tmask & ~true_lanes : true_lanes;
      return Outcome::fault(Cause::DivergentBranch, unsigned(std::countr_zero(overruled)), true_lanes);
    }
    c.m.note_divergent_branch(c, true_lanes);
  }
  if (last_taken) c.next_pc = c.pc + uint32_t(d.imm);
  return Outcome::retire();
}

// --- Loads and stores ---------------------------------------------------------

template <class T, unsigned N = 0>
Outcome exec_load(ExecCtx& c, const Decoded& d) {
  if constexpr (N >= 4 && sizeof(T) == 4) {
    if (load_words_direct<N>(c, d, d.rd != 0 ? xreg<N>(c, d.rd) : nullptr)) return Outcome::retire();
  }
  std::array<uint32_t, 32> v;
  Outcome fault;
  const uint32_t* base = xreg<N>(c, d.rs1);
  bool ok = true;
  lanes<N>(c, [&](unsigned l) {
    if (!ok) return;
    const uint8_t* p = c.m.data_for_load(c, l, base[l] + uint32_t(d.imm), sizeof(T), &fault);
    if (!p) {
      ok = false;
      return;
    }
    T t;
    std::memcpy(&t, p, sizeof t);
    // Signed types sign-extend (LB, LH); unsigned ones zero-extend (LBU, LHU).
    if constexpr (std::is_signed_v<T>) {
      v[l] = uint32_t(int32_t(t));
    } else {
      v[l] = uint32_t(t);
    }
  });
  if (!ok) return fault;
  if (d.rd != 0) {
    uint32_t* out = xreg<N>(c, d.rd);
    lanes<N>(c, [&](unsigned l) { out[l] = v[l]; });
  }
  return Outcome::retire();
}

template <class T, unsigned N = 0>
Outcome exec_store(ExecCtx& c, const Decoded& d) {
  if constexpr (N >= 4 && sizeof(T) == 4) {
    if (store_words_direct<N>(c, d, xreg<N>(c, d.rs2))) return Outcome::retire();
  }
  std::array<uint8_t*, 32> dst;
  Outcome fault;
  const uint32_t* base = xreg<N>(c, d.rs1);
  bool ok = true;
  lanes<N>(c, [&](unsigned l) {
    if (ok) {
      dst[l] = c.m.data_for_store(c, l, base[l] + uint32_t(d.imm), sizeof(T), &fault);
      ok = dst[l] != nullptr;
    }
  });
  if (!ok) return fault;
  // Lowest lane first: when lanes store to the same address the highest one wins.
  const uint32_t* src = xreg<N>(c, d.rs2);
  lanes<N>(c, [&](unsigned l) {
    T t = T(src[l]);
    std::memcpy(dst[l], &t, sizeof t);
  });
  return Outcome::retire();
}

// --- A extension --------------------------------------------------------------
//
// LR/SC keep one reservation per lane in WarpState::reservation. A successful
// SC.W breaks the reservations other lanes of its warp hold on the same word.
// Simplification: plain stores and AMOs, and stores from other warps or cores,
// do not break reservations. Warps interleave only at instruction boundaries, so
// an LR/SC pair of one lane is never split by a partial update.

std::vector<uint32_t>& reservations(ExecCtx& c) {
  if (c.w.reservation.size() < c.nt) c.w.reservation.assign(c.nt, 0);
  return c.w.reservation;
}

// The word each active lane's AMO or SC.W targets; false with *fault set when a
// lane faults. An AMO both reads and writes: alignment and mapping report as a
// store (RISC-V "store/AMO" causes), and so does a window without read permission.
template <bool kAlsoRead>
bool amo_targets(ExecCtx& c, const Decoded& d, std::array<uint8_t*, 32>& dst, Outcome* fault) {
  const uint32_t* base = &c.X(d.rs1, 0);
  bool ok = true;
  for_each_lane(c.tmask, [&](unsigned l) {
    if (!ok) return;
    dst[l] = c.m.data_for_store(c, l, base[l], 4, fault);
    ok = dst[l] != nullptr;
    if (ok && kAlsoRead && !c.m.data_for_load(c, l, base[l], 4, fault)) {
      *fault = Outcome::fault(Cause::StoreFault, l, base[l]);
      ok = false;
    }
  });
  return ok;
}

// LR.W is a word load that also reserves the address in each active lane.
Outcome exec_lr(ExecCtx& c, const Decoded& d) {
  std::array<uint32_t, 32> v;
  Outcome fault;
  const uint32_t* base = &c.X(d.rs1, 0);
  bool ok = true;
  for_each_lane(c.tmask, [&](unsigned l) {
    if (!ok) return;
    const uint8_t* p = c.m.data_for_load(c, l, base[l], 4, &fault);
    ok = p != nullptr;
    if (ok) std::memcpy(&v[l], p, 4);
  });
  if (!ok) return fault;
  // The reservation is taken before rd is written: rd may be rs1.
  std::vector<uint32_t>& res = reservations(c);
  for_each_lane(c.tmask, [&](unsigned l) { res[l] = base[l] | 1u; });
  if (d.rd != 0) for_each_lane(c.tmask, [&](unsigned l) { c.X(d.rd, l) = v[l]; });
  return Outcome::retire();
}

// SC.W stores only in lanes holding a reservation for the address (rd = 0),
// otherwise rd = 1; either way the lane's reservation is gone afterwards.
Outcome exec_sc(ExecCtx& c, const Decoded& d) {
  std::array<uint8_t*, 32> dst;
  Outcome fault;
  if (!amo_targets<false>(c, d, dst, &fault)) return fault;
  std::vector<uint32_t>& res = reservations(c);
  for_each_lane(c.tmask, [&](unsigned l) {
    const uint32_t tag = c.X(d.rs1, l) | 1u;
    const bool success = res[l] == tag;
    res[l] = 0;
    if (success) {
      uint32_t v = c.X(d.rs2, l);
      std::memcpy(dst[l], &v, 4);
      // The store breaks the other lanes' reservations on the word: of several
      // lanes in an LR/SC loop on one address, only the lowest succeeds.
      for (uint32_t& r : res)
        if (r == tag) r = 0;
    } else {
      c.m.note_sc_failed(l);  // no store happened: not a write a watchpoint sees
    }
    if (d.rd != 0) c.X(d.rd, l) = success ? 0u : 1u;
  });
  return Outcome::retire();
}

enum class Amo : uint8_t { Swap, Add, Xor, And, Or, Min, Max, Minu, Maxu };

template <Amo k>
inline uint32_t amo_op(uint32_t mem, uint32_t reg) {
  if constexpr (k == Amo::Swap) return reg;
  if constexpr (k == Amo::Add) return mem + reg;
  if constexpr (k == Amo::Xor) return mem ^ reg;
  if constexpr (k == Amo::And) return mem & reg;
  if constexpr (k == Amo::Or) return mem | reg;
  if constexpr (k == Amo::Min) return int32_t(mem) < int32_t(reg) ? mem : reg;
  if constexpr (k == Amo::Max) return int32_t(mem) > int32_t(reg) ? mem : reg;
  if constexpr (k == Amo::Minu) return mem < reg ? mem : reg;
  if constexpr (k == Amo::Maxu) return mem > reg ? mem : reg;
}

}  // namespace

uint32_t amo_value(uint32_t word, uint32_t mem, uint32_t reg) {
  switch (word >> 27) {
    case 0x01: return amo_op<Amo::Swap>(mem, reg);
    case 0x00: return amo_op<Amo::Add>(mem, reg);
    case 0x04: return amo_op<Amo::Xor>(mem, reg);
    case 0x0c: return amo_op<Amo::And>(mem, reg);
    case 0x08: return amo_op<Amo::Or>(mem, reg);
    case 0x10: return amo_op<Amo::Min>(mem, reg);
    case 0x14: return amo_op<Amo::Max>(mem, reg);
    case 0x18: return amo_op<Amo::Minu>(mem, reg);
    case 0x1c: return amo_op<Amo::Maxu>(mem, reg);
    default: return reg;
  }
}

namespace {

// Lane by lane, lowest first (spec): two lanes on one word see each other's
// update, and each lane's rd gets the value from before its own update.
template <Amo k>
Outcome exec_amo(ExecCtx& c, const Decoded& d) {
  std::array<uint8_t*, 32> dst;
  Outcome fault;
  if (!amo_targets<true>(c, d, dst, &fault)) return fault;
  for_each_lane(c.tmask, [&](unsigned l) {
    uint32_t old;
    std::memcpy(&old, dst[l], 4);
    uint32_t v = amo_op<k>(old, c.X(d.rs2, l));
    std::memcpy(dst[l], &v, 4);
    if (d.rd != 0) c.X(d.rd, l) = old;
  });
  return Outcome::retire();
}

// --- System -------------------------------------------------------------------

// FENCE and FENCE.I: a functional model has no buffered accesses or stale
// instruction cache to order (decoded instructions drop on code writes).
Outcome exec_fence(ExecCtx&, const Decoded&) { return Outcome::retire(); }

// With mtvec != 0 the machine jumps to the handler (mepc, mcause set);
// otherwise the warp stops with the cause.
Outcome exec_ecall(ExecCtx&, const Decoded&) { return Outcome::trap(Cause::EnvironmentCall); }
Outcome exec_ebreak(ExecCtx&, const Decoded&) { return Outcome::trap(Cause::Breakpoint); }

// Trap entry does not touch mstatus, so the return does not either: it only
// resumes at mepc.
Outcome exec_mret(ExecCtx& c, const Decoded&) {
  c.next_pc = c.w.mepc;
  return Outcome::retire();
}

enum class CsrOp : uint8_t { Write, Set, Clear };

// rd of every active lane gets the CSR as that lane reads it (THREAD_ID,
// MHARTID... differ per lane). The CSR is written once, with the operand and
// the old value of the highest active lane (scalar-operand rule).
template <CsrOp op, bool kImm>
Outcome exec_csr(ExecCtx& c, const Decoded& d) {
  const uint32_t csr = uint32_t(d.imm) & 0xfff;
  const unsigned last = c.last_lane();
  // RISC-V: CSRRS/CSRRC with rs1 = x0 and CSRRSI/CSRRCI with zimm = 0 do not
  // write, so they may read a read-only CSR.
  const bool writes = op == CsrOp::Write || d.rs1 != 0;
  if (writes && c.m.csr_read_only(csr)) return illegal(c, d);
  // Existence does not depend on the lane. Reads have no side effects here, so
  // CSRRW with rd = x0 reads too, just to learn that the CSR exists.
  uint32_t old_last = 0;
  if (!c.m.csr_read(c, last, csr, &old_last)) return illegal(c, d);
  std::array<uint32_t, 32> old;
  if (d.rd != 0) {
    if (Machine::csr_per_lane(csr))
      for_each_lane(c.tmask, [&](unsigned l) { (void)c.m.csr_read(c, l, csr, &old[l]); });
    else
      for_each_lane(c.tmask, [&](unsigned l) { old[l] = old_last; });
  }
  if (writes) {
    const uint32_t operand = kImm ? uint32_t(d.rs1) : c.X(d.rs1, last);
    uint32_t v = operand;
    if constexpr (op == CsrOp::Set) v = old_last | operand;
    if constexpr (op == CsrOp::Clear) v = old_last & ~operand;
    if (!c.m.csr_write(c, last, csr, v)) return illegal(c, d);
  }
  if (d.rd != 0) for_each_lane(c.tmask, [&](unsigned l) { c.X(d.rd, l) = old[l]; });
  return Outcome::retire();
}

// --- The table ----------------------------------------------------------------

constexpr uint32_t kMaskOpc = 0x0000007f;
constexpr uint32_t kMaskF3 = 0x0000707f;    // funct3 | opcode
constexpr uint32_t kMaskF7F3 = 0xfe00707f;  // funct7 | funct3 | opcode
constexpr uint32_t kMaskAmo = 0xf800707f;   // funct5 | funct3 | opcode: aq/rl are don't-care
constexpr uint32_t kMaskLr = 0xf9f0707f;    // LR.W also needs rs2 = 0
constexpr uint32_t kMaskExact = 0xffffffff;

constexpr uint32_t kLoad = 0x03, kMiscMem = 0x0f, kOpImm = 0x13, kAuipc = 0x17, kStore = 0x23, kAmo = 0x2f, kOp = 0x33,
                   kLui = 0x37, kBranch = 0x63, kJalr = 0x67, kJal = 0x6f, kSystem = 0x73;

constexpr uint32_t f3(uint32_t opc, uint32_t funct3) { return (funct3 << 12) | opc; }
constexpr uint32_t f7(uint32_t opc, uint32_t funct7, uint32_t funct3) { return (funct7 << 25) | (funct3 << 12) | opc; }
constexpr uint32_t amo(uint32_t funct5) { return (funct5 << 27) | (2u << 12) | kAmo; }

const InsnRow kRows[] = {
    {"lui", kMaskOpc, kLui, ImmKind::U, "d,u", exec_lui, Ext::I},
    {"auipc", kMaskOpc, kAuipc, ImmKind::U, "d,u", exec_auipc, Ext::I},
    {"jal", kMaskOpc, kJal, ImmKind::J, "d,a", exec_jal, Ext::I},
    {"jalr", kMaskF3, f3(kJalr, 0), ImmKind::I, "d,o", exec_jalr, Ext::I},
    {"beq", kMaskF3, f3(kBranch, 0), ImmKind::B, "s,t,b", exec_branch<Cond::Eq>, Ext::I},
    {"bne", kMaskF3, f3(kBranch, 1), ImmKind::B, "s,t,b", exec_branch<Cond::Ne>, Ext::I},
    {"blt", kMaskF3, f3(kBranch, 4), ImmKind::B, "s,t,b", exec_branch<Cond::Lt>, Ext::I},
    {"bge", kMaskF3, f3(kBranch, 5), ImmKind::B, "s,t,b", exec_branch<Cond::Ge>, Ext::I},
    {"bltu", kMaskF3, f3(kBranch, 6), ImmKind::B, "s,t,b", exec_branch<Cond::Ltu>, Ext::I},
    {"bgeu", kMaskF3, f3(kBranch, 7), ImmKind::B, "s,t,b", exec_branch<Cond::Geu>, Ext::I},
    {"lb", kMaskF3, f3(kLoad, 0), ImmKind::I, "d,o", exec_load<int8_t>, Ext::I},
    {"lh", kMaskF3, f3(kLoad, 1), ImmKind::I, "d,o", exec_load<int16_t>, Ext::I},
    {"lw", kMaskF3, f3(kLoad, 2), ImmKind::I, "d,o", exec_load<uint32_t>, Ext::I},
    {"lbu", kMaskF3, f3(kLoad, 4), ImmKind::I, "d,o", exec_load<uint8_t>, Ext::I},
    {"lhu", kMaskF3, f3(kLoad, 5), ImmKind::I, "d,o", exec_load<uint16_t>, Ext::I},
    {"sb", kMaskF3, f3(kStore, 0), ImmKind::S, "t,o", exec_store<uint8_t>, Ext::I},
    {"sh", kMaskF3, f3(kStore, 1), ImmKind::S, "t,o", exec_store<uint16_t>, Ext::I},
    {"sw", kMaskF3, f3(kStore, 2), ImmKind::S, "t,o", exec_store<uint32_t>, Ext::I},
    {"addi", kMaskF3, f3(kOpImm, 0), ImmKind::I, "d,s,i", exec_imm<Op::Add>, Ext::I},
    {"slti", kMaskF3, f3(kOpImm, 2), ImmKind::I, "d,s,i", exec_imm<Op::Slt>, Ext::I},
    {"sltiu", kMaskF3, f3(kOpImm, 3), ImmKind::I, "d,s,i", exec_imm<Op::Sltu>, Ext::I},
    {"xori", kMaskF3, f3(kOpImm, 4), ImmKind::I, "d,s,i", exec_imm<Op::Xor>, Ext::I},
    {"ori", kMaskF3, f3(kOpImm, 6), ImmKind::I, "d,s,i", exec_imm<Op::Or>, Ext::I},
    {"andi", kMaskF3, f3(kOpImm, 7), ImmKind::I, "d,s,i", exec_imm<Op::And>, Ext::I},
    // RV32: shamt[5] (bit 25) must be 0, so funct7 is matched whole.
    {"slli", kMaskF7F3, f7(kOpImm, 0x00, 1), ImmKind::Shamt, "d,s,>", exec_imm<Op::Sll>, Ext::I},
    {"srli", kMaskF7F3, f7(kOpImm, 0x00, 5), ImmKind::Shamt, "d,s,>", exec_imm<Op::Srl>, Ext::I},
    {"srai", kMaskF7F3, f7(kOpImm, 0x20, 5), ImmKind::Shamt, "d,s,>", exec_imm<Op::Sra>, Ext::I},
    {"add", kMaskF7F3, f7(kOp, 0x00, 0), ImmKind::None, "d,s,t", exec_reg<Op::Add>, Ext::I},
    {"sub", kMaskF7F3, f7(kOp, 0x20, 0), ImmKind::None, "d,s,t", exec_reg<Op::Sub>, Ext::I},
    {"sll", kMaskF7F3, f7(kOp, 0x00, 1), ImmKind::None, "d,s,t", exec_reg<Op::Sll>, Ext::I},
    {"slt", kMaskF7F3, f7(kOp, 0x00, 2), ImmKind::None, "d,s,t", exec_reg<Op::Slt>, Ext::I},
    {"sltu", kMaskF7F3, f7(kOp, 0x00, 3), ImmKind::None, "d,s,t", exec_reg<Op::Sltu>, Ext::I},
    {"xor", kMaskF7F3, f7(kOp, 0x00, 4), ImmKind::None, "d,s,t", exec_reg<Op::Xor>, Ext::I},
    {"srl", kMaskF7F3, f7(kOp, 0x00, 5), ImmKind::None, "d,s,t", exec_reg<Op::Srl>, Ext::I},
    {"sra", kMaskF7F3, f7(kOp, 0x20, 5), ImmKind::None, "d,s,t", exec_reg<Op::Sra>, Ext::I},
    {"or", kMaskF7F3, f7(kOp, 0x00, 6), ImmKind::None, "d,s,t", exec_reg<Op::Or>, Ext::I},
    {"and", kMaskF7F3, f7(kOp, 0x00, 7), ImmKind::None, "d,s,t", exec_reg<Op::And>, Ext::I},
    {"fence", kMaskF3, f3(kMiscMem, 0), ImmKind::None, "", exec_fence, Ext::I},
    {"fence.i", kMaskF3, f3(kMiscMem, 1), ImmKind::None, "", exec_fence, Ext::Zifencei},
    {"ecall", kMaskExact, 0x00000073, ImmKind::None, "", exec_ecall, Ext::I},
    {"ebreak", kMaskExact, 0x00100073, ImmKind::None, "", exec_ebreak, Ext::I},
    {"mret", kMaskExact, 0x30200073, ImmKind::None, "", exec_mret, Ext::I},

    {"mul", kMaskF7F3, f7(kOp, 0x01, 0), ImmKind::None, "d,s,t", exec_reg<Op::Mul>, Ext::M},
    {"mulh", kMaskF7F3, f7(kOp, 0x01, 1), ImmKind::None, "d,s,t", exec_reg<Op::Mulh>, Ext::M},
    {"mulhsu", kMaskF7F3, f7(kOp, 0x01, 2), ImmKind::None, "d,s,t", exec_reg<Op::Mulhsu>, Ext::M},
    {"mulhu", kMaskF7F3, f7(kOp, 0x01, 3), ImmKind::None, "d,s,t", exec_reg<Op::Mulhu>, Ext::M},
    {"div", kMaskF7F3, f7(kOp, 0x01, 4), ImmKind::None, "d,s,t", exec_reg<Op::Div>, Ext::M},
    {"divu", kMaskF7F3, f7(kOp, 0x01, 5), ImmKind::None, "d,s,t", exec_reg<Op::Divu>, Ext::M},
    {"rem", kMaskF7F3, f7(kOp, 0x01, 6), ImmKind::None, "d,s,t", exec_reg<Op::Rem>, Ext::M},
    {"remu", kMaskF7F3, f7(kOp, 0x01, 7), ImmKind::None, "d,s,t", exec_reg<Op::Remu>, Ext::M},

    {"lr.w", kMaskLr, amo(0x02), ImmKind::None, "d,A", exec_lr, Ext::A},
    {"sc.w", kMaskAmo, amo(0x03), ImmKind::None, "d,t,A", exec_sc, Ext::A},
    {"amoswap.w", kMaskAmo, amo(0x01), ImmKind::None, "d,t,A", exec_amo<Amo::Swap>, Ext::A},
    {"amoadd.w", kMaskAmo, amo(0x00), ImmKind::None, "d,t,A", exec_amo<Amo::Add>, Ext::A},
    {"amoxor.w", kMaskAmo, amo(0x04), ImmKind::None, "d,t,A", exec_amo<Amo::Xor>, Ext::A},
    {"amoand.w", kMaskAmo, amo(0x0c), ImmKind::None, "d,t,A", exec_amo<Amo::And>, Ext::A},
    {"amoor.w", kMaskAmo, amo(0x08), ImmKind::None, "d,t,A", exec_amo<Amo::Or>, Ext::A},
    {"amomin.w", kMaskAmo, amo(0x10), ImmKind::None, "d,t,A", exec_amo<Amo::Min>, Ext::A},
    {"amomax.w", kMaskAmo, amo(0x14), ImmKind::None, "d,t,A", exec_amo<Amo::Max>, Ext::A},
    {"amominu.w", kMaskAmo, amo(0x18), ImmKind::None, "d,t,A", exec_amo<Amo::Minu>, Ext::A},
    {"amomaxu.w", kMaskAmo, amo(0x1c), ImmKind::None, "d,t,A", exec_amo<Amo::Maxu>, Ext::A},

    {"czero.eqz", kMaskF7F3, f7(kOp, 0x07, 5), ImmKind::None, "d,s,t", exec_reg<Op::CzeroEqz>, Ext::Zicond},
    {"czero.nez", kMaskF7F3, f7(kOp, 0x07, 7), ImmKind::None, "d,s,t", exec_reg<Op::CzeroNez>, Ext::Zicond},

    {"csrrw", kMaskF3, f3(kSystem, 1), ImmKind::Csr, "d,c,s", exec_csr<CsrOp::Write, false>, Ext::Zicsr},
    {"csrrs", kMaskF3, f3(kSystem, 2), ImmKind::Csr, "d,c,s", exec_csr<CsrOp::Set, false>, Ext::Zicsr},
    {"csrrc", kMaskF3, f3(kSystem, 3), ImmKind::Csr, "d,c,s", exec_csr<CsrOp::Clear, false>, Ext::Zicsr},
    {"csrrwi", kMaskF3, f3(kSystem, 5), ImmKind::Csr, "d,c,z", exec_csr<CsrOp::Write, true>, Ext::Zicsr},
    {"csrrsi", kMaskF3, f3(kSystem, 6), ImmKind::Csr, "d,c,z", exec_csr<CsrOp::Set, true>, Ext::Zicsr},
    {"csrrci", kMaskF3, f3(kSystem, 7), ImmKind::Csr, "d,c,z", exec_csr<CsrOp::Clear, true>, Ext::Zicsr},
};

// The fixed-width copies of the executors the table names, for specialize() (isa.hpp).
const SpecializedExec kSpecialized[] = {
    VX_WIDTHS0(exec_lui),
    VX_WIDTHS0(exec_auipc),
    VX_WIDTHS0(exec_jal),
    VX_WIDTHS0(exec_jalr),
    VX_WIDTHS(exec_branch, Cond::Eq),
    VX_WIDTHS(exec_branch, Cond::Ne),
    VX_WIDTHS(exec_branch, Cond::Lt),
    VX_WIDTHS(exec_branch, Cond::Ge),
    VX_WIDTHS(exec_branch, Cond::Ltu),
    VX_WIDTHS(exec_branch, Cond::Geu),
    VX_WIDTHS(exec_load, int8_t),
    VX_WIDTHS(exec_load, int16_t),
    VX_WIDTHS(exec_load, uint32_t),
    VX_WIDTHS(exec_load, uint8_t),
    VX_WIDTHS(exec_load, uint16_t),
    VX_WIDTHS(exec_store, uint8_t),
    VX_WIDTHS(exec_store, uint16_t),
    VX_WIDTHS(exec_store, uint32_t),
    VX_WIDTHS(exec_imm, Op::Add),
    VX_WIDTHS(exec_imm, Op::Slt),
    VX_WIDTHS(exec_imm, Op::Sltu),
    VX_WIDTHS(exec_imm, Op::Xor),
    VX_WIDTHS(exec_imm, Op::Or),
    VX_WIDTHS(exec_imm, Op::And),
    VX_WIDTHS(exec_imm, Op::Sll),
    VX_WIDTHS(exec_imm, Op::Srl),
    VX_WIDTHS(exec_imm, Op::Sra),
    VX_WIDTHS(exec_reg, Op::Add),
    VX_WIDTHS(exec_reg, Op::Sub),
    VX_WIDTHS(exec_reg, Op::Sll),
    VX_WIDTHS(exec_reg, Op::Slt),
    VX_WIDTHS(exec_reg, Op::Sltu),
    VX_WIDTHS(exec_reg, Op::Xor),
    VX_WIDTHS(exec_reg, Op::Srl),
    VX_WIDTHS(exec_reg, Op::Sra),
    VX_WIDTHS(exec_reg, Op::Or),
    VX_WIDTHS(exec_reg, Op::And),
    VX_WIDTHS(exec_reg, Op::Mul),
    VX_WIDTHS(exec_reg, Op::Mulh),
    VX_WIDTHS(exec_reg, Op::Mulhsu),
    VX_WIDTHS(exec_reg, Op::Mulhu),
    VX_WIDTHS(exec_reg, Op::Div),
    VX_WIDTHS(exec_reg, Op::Divu),
    VX_WIDTHS(exec_reg, Op::Rem),
    VX_WIDTHS(exec_reg, Op::Remu),
    VX_WIDTHS(exec_reg, Op::CzeroEqz),
    VX_WIDTHS(exec_reg, Op::CzeroNez),
};

#define VX_LOAD_WIDTHS(T) \
  &exec_load<T, 1>, &exec_load<T, 2>, &exec_load<T, 4>, &exec_load<T, 8>, &exec_load<T, 16>, &exec_load<T, 32>
constexpr auto kSites = site_table<VX_LOAD_WIDTHS(int8_t), VX_LOAD_WIDTHS(int16_t), VX_LOAD_WIDTHS(uint32_t),
                                   VX_LOAD_WIDTHS(uint8_t), VX_LOAD_WIDTHS(uint16_t)>();
#undef VX_LOAD_WIDTHS

}  // namespace

std::span<const InsnRow> int_rows() { return kRows; }
std::span<const SpecializedExec> int_specialized() { return kSpecialized; }
std::span<const SiteExec> int_sites() { return kSites; }

}  // namespace vx
