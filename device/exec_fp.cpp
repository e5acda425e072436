// RV32F, IEEE 754 exact (shared/spec/vortex-v3.md, "Platform shape": "Float must
// be IEEE exact (rounding modes, NaN boxing not needed at XLEN=32, fflags)").
//
// The host FPU does the arithmetic in the four rounding modes it has (RNE, RTZ,
// RDN, RUP). RMM (round to nearest, ties to max magnitude) has no host mode: the
// operation runs in double toward zero and is made round-to-odd, then rounded to
// binary32 in software. This file is built with -frounding-math -fno-fast-math so
// the compiler neither folds nor reorders FP operations across mode changes.
//
// GCC does not model the FP status flags, so every computation between clearing
// and testing the flags reads its operands from the register file (memory that
// the host_* functions below declare they touch) and leaves its result in memory
// before the test.
#include <array>
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstring>

#include "device/fp_lanes.hpp"
#include "device/machine.hpp"

namespace vx {

namespace {

// The host FPU's flags and rounding mode. On x86-64 all float arithmetic is SSE,
// so MXCSR is the whole state: reading and writing it directly costs a few cycles,
// where glibc's fenv functions also save and restore the x87 unit (they were the
// top of the profile). The asm statements clobber memory, which keeps the lane
// computations between them.
#if defined(__x86_64__)
// MXCSR flag bits 0..5 have the same positions as glibc's FE_* flags on x86, and
// its rounding field (bits 14..13) holds FE_* rounding constants shifted left by 3.
inline uint32_t read_mxcsr() {
  uint32_t v;
  asm volatile("stmxcsr %0" : "=m"(v) : : "memory");
  return v;
}
inline void write_mxcsr(uint32_t v) { asm volatile("ldmxcsr %0" : : "m"(v) : "memory"); }
inline void host_clear_flags() { write_mxcsr(read_mxcsr() & ~uint32_t(FE_ALL_EXCEPT)); }
inline int host_flags() { return int(read_mxcsr() & FE_ALL_EXCEPT); }
inline void host_set_rounding(int mode) { write_mxcsr((read_mxcsr() & ~0x6000u) | (uint32_t(mode) << 3)); }
#else
inline void host_clear_flags() { std::feclearexcept(FE_ALL_EXCEPT); }
inline int host_flags() { return std::fetestexcept(FE_ALL_EXCEPT); }
inline void host_set_rounding(int mode) { std::fesetround(mode); }
#endif

// fflags bits.
constexpr uint32_t kNX = 1, kUF = 2, kOF = 4, kDZ = 8, kNV = 16;
constexpr uint32_t kCanonicalNan = 0x7fc00000;
constexpr uint32_t kSignBit = 0x80000000;
constexpr uint32_t kInfBits = 0x7f800000;

// Static rounding modes (the rm field; 5 and 6 are reserved, 7 is DYN).
constexpr unsigned kRne = 0, kRtz = 1, kRdn = 2, kRup = 3, kRmm = 4, kDyn = 7;

bool is_nan(uint32_t b) { return (b & ~kSignBit) > kInfBits; }
bool is_snan(uint32_t b) { return is_nan(b) && (b & 0x00400000) == 0; }
bool is_inf(uint32_t b) { return (b & ~kSignBit) == kInfBits; }
bool is_zero(uint32_t b) { return (b & ~kSignBit) == 0; }
float as_float(uint32_t b) { return std::bit_cast<float>(b); }

// The register value of an arithmetic result: "any operation producing a NaN
// returns the canonical NaN", never the host's default NaN or a payload.
uint32_t result_bits(float v) {
  uint32_t b = std::bit_cast<uint32_t>(v);
  return is_nan(b) ? kCanonicalNan : b;
}

uint32_t flags_from_host(int ex) {
  uint32_t f = 0;
  if (ex & FE_INVALID) f |= kNV;
  if (ex & FE_DIVBYZERO) f |= kDZ;
  if (ex & FE_OVERFLOW) f |= kOF;
  if (ex & FE_UNDERFLOW) f |= kUF;
  if (ex & FE_INEXACT) f |= kNX;
  return f;
}

// The host flags that fflags bits stand for (the inverse of flags_from_host).
int host_from_flags(uint32_t f) {
  int ex = 0;
  if (f & kNV) ex |= FE_INVALID;
  if (f & kDZ) ex |= FE_DIVBYZERO;
  if (f & kOF) ex |= FE_OVERFLOW;
  if (f & kUF) ex |= FE_UNDERFLOW;
  if (f & kNX) ex |= FE_INEXACT;
  return ex;
}

int host_mode(unsigned rm) {
  switch (rm) {
    case kRtz: return FE_TOWARDZERO;
    case kRdn: return FE_DOWNWARD;
    case kRup: return FE_UPWARD;
    default: return FE_TONEAREST;
  }
}

// The rounding mode an instruction uses: its rm field, or frm (fcsr bits 7..5)
// for DYN. -1 when reserved: rm 5 or 6, or DYN with frm >= 5, is an illegal instruction.
int rounding_mode(const ExecCtx& c, const Decoded& d) {
  unsigned rm = d.rm == kDyn ? (c.w.fcsr >> 5) & 7 : d.rm;
  return rm <= kRmm ? int(rm) : -1;
}

Outcome illegal(ExecCtx& c, const Decoded& d) {
  return Outcome::fault(Cause::IllegalInstruction, c.last_lane(), d.raw);
}

// fflags is per warp and sticky: the lanes' flags are ORed into it.
void raise_flags(ExecCtx& c, uint32_t flags) { c.w.fcsr |= flags & 0x1f; }

// Runs the host FPU in a directed rounding mode (never round-to-nearest: that is the lazy path,
// Machine::fp_claim) for one warp instruction, and puts round-to-nearest (the host's default) back
// afterwards. flags() is what the instruction raised. The lazily kept flags of whichever warp owns
// them are settled first, since the flags are cleared here. Writing MXCSR costs more than most operations.
class HostRounding {
 public:
  HostRounding(Machine& m, int mode) {
    m.fp_settle();
    host_set_rounding(mode);
    host_clear_flags();
  }
  ~HostRounding() {
    host_set_rounding(FE_TONEAREST);
    host_clear_flags();  // what this instruction raised was taken by flags()
  }
  HostRounding(const HostRounding&) = delete;
  HostRounding& operator=(const HostRounding&) = delete;
  uint32_t flags() const { return flags_from_host(host_flags()); }
};

// Rounds a double to binary32 with ties away from zero (RMM), adding NX, OF and
// UF to *flags. The double must be exact or round-to-odd: with 29 bits more than
// binary32 keeps (more still for subnormal results), a sticky last bit makes one
// more rounding correct. Tininess is detected after rounding, as RISC-V requires.
uint32_t round_rmm(double v, uint32_t* flags) {
  const uint64_t b = std::bit_cast<uint64_t>(v);
  const uint32_t sign = uint32_t(b >> 32) & kSignBit;
  const int biased = int(b >> 52) & 0x7ff;
  const uint64_t frac = b & ((uint64_t(1) << 52) - 1);
  if (biased == 0x7ff) return frac != 0 ? kCanonicalNan : sign | kInfBits;
  if (biased == 0 && frac == 0) return sign;
  // v = sig * 2^(exp - 52). Double subnormals lie far below binary32's range and
  // round to zero below.
  const uint64_t sig = biased != 0 ? frac | (uint64_t(1) << 52) : frac;
  int exp = biased != 0 ? biased - 1023 : -1022;
  // Bits dropped: 29 for a normal result, more below 2^-126 where the precision
  // shrinks. From 54 on every bit of sig is below half an ulp; 60 keeps shifts defined.
  int shift = 29 + (exp < -126 ? -126 - exp : 0);
  if (shift > 60) shift = 60;
  const uint64_t rem = sig & ((uint64_t(1) << shift) - 1);
  uint64_t q = (sig >> shift) + (rem >= (uint64_t(1) << (shift - 1)) ? 1 : 0);
  const bool inexact = rem != 0;
  if (inexact) *flags |= kNX;
  if (exp >= -126) {
    if (q == (uint64_t(1) << 24)) {
      q >>= 1;
      ++exp;
    }
    if (exp > 127) {
      *flags |= kOF | kNX;
      return sign | kInfBits;  // RMM overflows to infinity
    }
    return sign | (uint32_t(exp + 127) << 23) | (uint32_t(q) & 0x7fffff);
  }
  // Tiny unless rounding to 24 bits with an unbounded exponent reaches 2^-126,
  // which only a value just below it (exp == -127) can do.
  const uint64_t low29 = sig & ((uint64_t(1) << 29) - 1);
  const uint64_t q24 = (sig >> 29) + (low29 >= (uint64_t(1) << 28) ? 1 : 0);
  const bool tiny = exp < -127 || q24 < (uint64_t(1) << 24);
  if (tiny && inexact) *flags |= kUF;
  return sign | uint32_t(q);  // q == 2^23 is the encoding of the smallest normal
}

// Sets the last bit of a double computed toward zero when it was inexact, making
// it round-to-odd.
double make_odd(double v, bool inexact) {
  uint64_t b = std::bit_cast<uint64_t>(v);
  if (inexact && ((b >> 52) & 0x7ff) != 0x7ff) b |= 1;
  return std::bit_cast<double>(b);
}

// --- Rounded arithmetic ------------------------------------------------------
// Each operation is written once for T = float (the host rounds) and T = double
// (RMM: exact, or the single rounding toward zero that make_odd repairs).

struct Add {
  static constexpr FpOp kOp = FpOp::Add;
  static constexpr int kArity = 2;
  template <class T>
  static T apply(T a, T b) {
    return a + b;
  }
};
struct Sub {
  static constexpr FpOp kOp = FpOp::Sub;
  static constexpr int kArity = 2;
  template <class T>
  static T apply(T a, T b) {
    return a - b;
  }
};
struct Mul {
  static constexpr FpOp kOp = FpOp::Mul;
  static constexpr int kArity = 2;
  template <class T>
  static T apply(T a, T b) {
    return a * b;
  }
};
struct Div {
  static constexpr FpOp kOp = FpOp::Div;
  static constexpr int kArity = 2;
  template <class T>
  static T apply(T a, T b) {
    return a / b;
  }
};
struct Sqrt {
  static constexpr FpOp kOp = FpOp::Sqrt;
  static constexpr int kArity = 1;
  template <class T>
  static T apply(T a) {
    return std::sqrt(a);
  }
};
// Fused: one rounding of (+-a*b) +- c. The operands are negated, not the result,
// so the sign of an exact zero follows the rounding mode (FNMSUB = -(a*b)+c,
// FNMADD = -(a*b)-c, FMSUB = a*b-c).
template <bool NegProduct, bool NegAddend>
struct MulAdd {
  static constexpr int kArity = 3;
  static constexpr FpOp kOp =
      NegProduct ? (NegAddend ? FpOp::NMAdd : FpOp::NMSub) : (NegAddend ? FpOp::MSub : FpOp::MAdd);
  static float apply(float a, float b, float c) { return std::fmaf(NegProduct ? -a : a, b, NegAddend ? -c : c); }
  // The product of two binary32 values is exact in double (48 bits), so the sum
  // is the only rounding.
  static double apply(double a, double b, double c) { return (NegProduct ? -a : a) * b + (NegAddend ? -c : c); }
};

template <class T, class Op>
T apply_lane(ExecCtx& c, const Decoded& d, unsigned l) {
  // Only the operands the instruction has are read: converting an unused sNaN
  // register to double would raise NV.
  const T a = T(as_float(c.F(d.rs1, l)));
  if constexpr (Op::kArity == 1) {
    return Op::apply(a);
  } else if constexpr (Op::kArity == 2) {
    return Op::apply(a, T(as_float(c.F(d.rs2, l))));
  } else {
    return Op::apply(a, T(as_float(c.F(d.rs2, l))), T(as_float(c.F(d.rs3, l))));
  }
}

// Fully active warps in round-to-nearest: fixed-width lane loops (fp_lanes.cpp). *flags gets NV
// when an fma multiplied infinity by zero.
template <class Op>
bool rne_full(ExecCtx& c, const Decoded& d, uint32_t* flags) {
  if (c.tmask != full_lane_mask(c.nt)) return false;
  return rne_full_lanes(Op::kOp, c.nt, &c.F(d.rd, 0), &c.F(d.rs1, 0), &c.F(d.rs2, 0), &c.F(d.rs3, 0), flags);
}

template <class Op>
Outcome exec_rounded(ExecCtx& c, const Decoded& d) {
  const int rm = rounding_mode(c, d);
  if (rm < 0) return illegal(c, d);
  uint32_t flags = 0;
  if (rm == int(kRne)) {
    // Round to nearest: the flags stay in the host FPU until settled (Machine::fp_claim).
    c.m.fp_claim(c.w);
    if (rne_full<Op>(c, d, &flags)) {  // the fma's NV for infinity times zero included
      raise_flags(c, flags);
      return Outcome::retire();
    }
  }
  if constexpr (Op::kArity == 3) {
    // "The fused multiply-add instructions must set the invalid operation
    // exception flag when the multiplicands are infinity and zero, even when the
    // addend is a quiet NaN."
    for_each_lane(c.tmask, [&](unsigned l) {
      const uint32_t a = c.F(d.rs1, l), b = c.F(d.rs2, l);
      if ((is_inf(a) && is_zero(b)) || (is_zero(a) && is_inf(b))) flags |= kNV;
    });
  }
  if (rm == int(kRmm)) {
    HostRounding toward_zero(c.m, FE_TOWARDZERO);
    for_each_lane(c.tmask, [&](unsigned l) {
      host_clear_flags();
      volatile double r = apply_lane<double, Op>(c, d, l);
      const int ex = host_flags();
      flags |= flags_from_host(ex) & (kNV | kDZ);  // NX, OF and UF come from the final rounding
      c.F(d.rd, l) = round_rmm(make_odd(r, (ex & FE_INEXACT) != 0), &flags);
    });
  } else if (rm == int(kRne)) {  // claimed above: the flags stay in the host FPU
    for_each_lane(c.tmask, [&](unsigned l) { c.F(d.rd, l) = result_bits(apply_lane<float, Op>(c, d, l)); });
  } else {
    HostRounding host(c.m, host_mode(unsigned(rm)));
    for_each_lane(c.tmask, [&](unsigned l) { c.F(d.rd, l) = result_bits(apply_lane<float, Op>(c, d, l)); });
    flags |= host.flags();
  }
  raise_flags(c, flags);
  return Outcome::retire();
}

// The copy of exec_rounded<Op> for warps of N lanes: a fully active warp in round-to-nearest (the
// common case) goes straight to the fixed-width lane loop; everything else to exec_rounded<Op>.
// kFma: the host has AVX2 and FMA (specialize() picks this copy only then).
template <class Op, bool kFma, unsigned N>
Outcome exec_rounded_fixed(ExecCtx& c, const Decoded& d) {
  const unsigned rm = d.rm == kDyn ? (c.w.fcsr >> 5) & 7 : d.rm;
  if (rm == kRne && c.tmask == full_lane_mask(N)) {
    c.m.fp_claim(c.w);  // the flags stay in the host FPU until settled
    uint32_t flags = 0;
    uint32_t* f = c.f;
    if constexpr (kFma)
      rne_lanes_fma<Op::kOp, N>(f + d.rd * N, f + d.rs1 * N, f + d.rs2 * N, f + d.rs3 * N, &flags);
    else
      rne_lanes_base<Op::kOp, N>(f + d.rd * N, f + d.rs1 * N, f + d.rs2 * N, f + d.rs3 * N, &flags);
    raise_flags(c, flags);
    return Outcome::retire();
  }
  return exec_rounded<Op>(c, d);
}

// --- Conversions ---------------------------------------------------------------

// Rounds a binary32 value (held exactly in a double) to an integer in mode rm.
// Every step is exact: a value with a fraction is below 2^24 in magnitude.
double round_to_integer(double x, unsigned rm) {
  const double t = std::trunc(x);
  const double frac = x - t;
  if (frac == 0) return t;
  const double away = t + (x < 0 ? -1.0 : 1.0);
  switch (rm) {
    case kRtz: return t;
    case kRdn: return x < 0 ? away : t;
    case kRup: return x > 0 ? away : t;
    case kRmm: return std::fabs(frac) >= 0.5 ? away : t;
    default: {
      const double half = std::fabs(frac);
      if (half != 0.5) return half > 0.5 ? away : t;
      return (int64_t(t) & 1) != 0 ? away : t;  // tie: to the even neighbour
    }
  }
}

// FCVT.W.S / FCVT.WU.S in software: the x86 conversion's out-of-range result is
// not RISC-V's. An invalid result (NaN, or out of range after rounding) saturates
// and raises NV instead of NX: NaN and too large give the maximum, too negative the minimum.
uint32_t float_to_int(uint32_t bits, unsigned rm, bool is_unsigned, uint32_t* flags) {
  const uint32_t max = is_unsigned ? 0xffffffffu : 0x7fffffffu;
  const uint32_t min = is_unsigned ? 0u : 0x80000000u;
  if (is_nan(bits)) {
    *flags |= kNV;
    return max;
  }
  const double x = as_float(bits);
  const double r = round_to_integer(x, rm);
  const double lo = is_unsigned ? 0.0 : -2147483648.0;
  const double hi = is_unsigned ? 4294967295.0 : 2147483647.0;
  if (r < lo) {
    *flags |= kNV;
    return min;
  }
  if (r > hi) {
    *flags |= kNV;
    return max;
  }
  if (r != x) *flags |= kNX;
  return is_unsigned ? uint32_t(r) : uint32_t(int32_t(r));
}

template <bool Unsigned>
Outcome exec_fcvt_to_int(ExecCtx& c, const Decoded& d) {
  const int rm = rounding_mode(c, d);
  if (rm < 0) return illegal(c, d);
  uint32_t flags = 0;
  for_each_lane(c.tmask, [&](unsigned l) {
    const uint32_t v = float_to_int(c.F(d.rs1, l), unsigned(rm), Unsigned, &flags);
    if (d.rd != 0) c.X(d.rd, l) = v;
  });
  raise_flags(c, flags);
  return Outcome::retire();
}

template <bool Unsigned, unsigned N = 0>
Outcome exec_fcvt_from_int(ExecCtx& c, const Decoded& d) {
  const int rm = rounding_mode(c, d);
  if (rm < 0) return illegal(c, d);
  uint32_t flags = 0;
  if (rm == int(kRmm)) {
    // A 32-bit integer is exact in double.
    for_each_lane(c.tmask, [&](unsigned l) {
      const uint32_t v = c.X(d.rs1, l);
      c.F(d.rd, l) = round_rmm(Unsigned ? double(v) : double(int32_t(v)), &flags);
    });
  } else if (rm == int(kRne)) {
    // The host rounds to nearest already, and the one flag a conversion from an integer can raise is
    // NX, exactly when the float does not give the integer back: no MXCSR read. The host raises the
    // same NX, so the warp claims the host flags first (they are its own either way).
    c.m.fp_claim(c.w);
    const uint32_t* src = xreg<N>(c, d.rs1);
    uint32_t* out = freg<N>(c, d.rd);
    if (c.tmask == full_lane_mask(width<N>(c)) && rne_full_cvt_from_int(Unsigned, width<N>(c), out, src, &flags)) {
      raise_flags(c, flags);
      return Outcome::retire();
    }
    lanes<N>(c, [&](unsigned l) {
      const uint32_t v = src[l];
      const double exact = Unsigned ? double(v) : double(int32_t(v));
      const float r = Unsigned ? float(v) : float(int32_t(v));
      if (double(r) != exact) flags |= kNX;
      out[l] = std::bit_cast<uint32_t>(r);
    });
  } else {
    HostRounding host(c.m, host_mode(unsigned(rm)));
    for_each_lane(c.tmask, [&](unsigned l) {
      const uint32_t v = c.X(d.rs1, l);
      c.F(d.rd, l) = result_bits(Unsigned ? float(v) : float(int32_t(v)));
    });
    flags |= host.flags();
  }
  raise_flags(c, flags);
  return Outcome::retire();
}

// --- Bit operations: no flags, NaN payloads pass through -------------------------

template <int Kind, unsigned N = 0>  // 0 FSGNJ, 1 FSGNJN, 2 FSGNJX
Outcome exec_fsgnj(ExecCtx& c, const Decoded& d) {
  const uint32_t *ra = freg<N>(c, d.rs1), *rb = freg<N>(c, d.rs2);
  uint32_t* out = freg<N>(c, d.rd);
  // rd may be a source: each lane reads its operands before writing its own result, and lanes are disjoint.
  lanes<N>(c, [&](unsigned l) {
    const uint32_t a = ra[l], b = rb[l];
    uint32_t sign = b & kSignBit;
    if constexpr (Kind == 1) sign ^= kSignBit;
    if constexpr (Kind == 2) sign = (a ^ b) & kSignBit;
    out[l] = (a & ~kSignBit) | sign;
  });
  return Outcome::retire();
}

template <unsigned N = 0>
Outcome exec_fmv_x_w(ExecCtx& c, const Decoded& d) {
  if (d.rd == 0) return Outcome::retire();
  const uint32_t* src = freg<N>(c, d.rs1);
  uint32_t* out = xreg<N>(c, d.rd);
  lanes<N>(c, [&](unsigned l) { out[l] = src[l]; });
  return Outcome::retire();
}

template <unsigned N = 0>
Outcome exec_fmv_w_x(ExecCtx& c, const Decoded& d) {
  const uint32_t* src = xreg<N>(c, d.rs1);
  uint32_t* out = freg<N>(c, d.rd);
  lanes<N>(c, [&](unsigned l) { out[l] = src[l]; });
  return Outcome::retire();
}

// Bit i of the FCLASS mask: 0 -inf, 1 negative normal, 2 negative subnormal,
// 3 -0, 4 +0, 5 positive subnormal, 6 positive normal, 7 +inf, 8 sNaN, 9 qNaN.
uint32_t classify(uint32_t b) {
  const bool neg = (b & kSignBit) != 0;
  const uint32_t exp = (b >> 23) & 0xff, frac = b & 0x7fffff;
  if (exp == 0xff) {
    if (frac == 0) return neg ? 1u << 0 : 1u << 7;
    return (frac & 0x400000) != 0 ? 1u << 9 : 1u << 8;
  }
  if (exp == 0) {
    if (frac == 0) return neg ? 1u << 3 : 1u << 4;
    return neg ? 1u << 2 : 1u << 5;
  }
  return neg ? 1u << 1 : 1u << 6;
}

Outcome exec_fclass(ExecCtx& c, const Decoded& d) {
  if (d.rd != 0) for_each_lane(c.tmask, [&](unsigned l) { c.X(d.rd, l) = classify(c.F(d.rs1, l)); });
  return Outcome::retire();
}

// --- Min/max and comparisons (exact, so computed without the host flags) --------

// RISC-V 2.2 semantics: a single NaN operand yields the other operand, two NaNs
// the canonical NaN; -0.0 is less than +0.0; any sNaN raises NV.
template <bool Max>
Outcome exec_fminmax(ExecCtx& c, const Decoded& d) {
  uint32_t flags = 0;
  for_each_lane(c.tmask, [&](unsigned l) {
    const uint32_t a = c.F(d.rs1, l), b = c.F(d.rs2, l);
    if (is_snan(a) || is_snan(b)) flags |= kNV;
    uint32_t r;
    if (is_nan(a) && is_nan(b)) {
      r = kCanonicalNan;
    } else if (is_nan(a)) {
      r = b;
    } else if (is_nan(b)) {
      r = a;
    } else if (as_float(a) == as_float(b)) {
      // Equal values differ in bits only as -0 and +0.
      const bool a_negative = (a & kSignBit) != 0;
      r = (Max ? !a_negative : a_negative) ? a : b;
    } else {
      r = (as_float(a) < as_float(b)) != Max ? a : b;
    }
    c.F(d.rd, l) = r;
  });
  raise_flags(c, flags);
  return Outcome::retire();
}

enum class Cmp { Eq, Lt, Le };

// FEQ is a quiet comparison (NV only for an sNaN operand); FLT and FLE signal
// (NV for any NaN operand). A comparison with a NaN writes 0.
template <Cmp K>
Outcome exec_compare(ExecCtx& c, const Decoded& d) {
  uint32_t flags = 0;
  for_each_lane(c.tmask, [&](unsigned l) {
    const uint32_t a = c.F(d.rs1, l), b = c.F(d.rs2, l);
    uint32_t v = 0;
    if (is_nan(a) || is_nan(b)) {
      if (K != Cmp::Eq || is_snan(a) || is_snan(b)) flags |= kNV;
    } else {
      const float fa = as_float(a), fb = as_float(b);
      if constexpr (K == Cmp::Eq) v = fa == fb;
      if constexpr (K == Cmp::Lt) v = fa < fb;
      if constexpr (K == Cmp::Le) v = fa <= fb;
    }
    if (d.rd != 0) c.X(d.rd, l) = v;
  });
  raise_flags(c, flags);
  return Outcome::retire();
}

// --- Loads and stores -------------------------------------------------------------

template <unsigned N = 0>
Outcome exec_flw(ExecCtx& c, const Decoded& d) {
  if constexpr (N >= 4) {
    if (load_words_direct<N>(c, d, freg<N>(c, d.rd))) return Outcome::retire();
  }
  if constexpr (N == 1) {  // one lane, and it is active: nothing to gather
    Outcome fault;
    const uint8_t* p = c.m.data_for_load(c, 0, c.x[d.rs1] + uint32_t(d.imm), 4, &fault);
    if (p == nullptr) return fault;
    std::memcpy(&c.f[d.rd], p, 4);
    return Outcome::retire();
  }
  std::array<uint32_t, 32> v;  // filled for every active lane before use
  const uint32_t* base = xreg<N>(c, d.rs1);
  Outcome fault;
  bool ok = true;
  lanes<N>(c, [&](unsigned l) {
    if (!ok) return;
    const uint8_t* p = c.m.data_for_load(c, l, base[l] + uint32_t(d.imm), 4, &fault);
    if (p == nullptr) {
      ok = false;
      return;
    }
    std::memcpy(&v[l], p, 4);
  });
  if (!ok) return fault;
  uint32_t* out = freg<N>(c, d.rd);
  lanes<N>(c, [&](unsigned l) { out[l] = v[l]; });
  return Outcome::retire();
}

template <unsigned N = 0>
Outcome exec_fsw(ExecCtx& c, const Decoded& d) {
  if constexpr (N >= 4) {
    if (store_words_direct<N>(c, d, freg<N>(c, d.rs2))) return Outcome::retire();
  }
  std::array<uint8_t*, 32> dst;  // filled for every active lane before use
  const uint32_t* base = xreg<N>(c, d.rs1);
  Outcome fault;
  bool ok = true;
  lanes<N>(c, [&](unsigned l) {
    if (ok) {
      dst[l] = c.m.data_for_store(c, l, base[l] + uint32_t(d.imm), 4, &fault);
      ok = dst[l] != nullptr;
    }
  });
  if (!ok) return fault;
  // Lowest lane first, so the highest lane wins when lanes store to the same word.
  const uint32_t* src = freg<N>(c, d.rs2);
  lanes<N>(c, [&](unsigned l) { std::memcpy(dst[l], &src[l], 4); });
  return Outcome::retire();
}

// --- The rows ---------------------------------------------------------------------

constexpr uint32_t kOpFp = 0x53;
constexpr uint32_t kMaskLoadStore = 0x0000707f;  // funct3 | opcode
constexpr uint32_t kMaskR4 = 0x0600007f;         // fmt | opcode
constexpr uint32_t kMaskF7 = 0xfe00007f;         // funct7 | opcode (funct3 is rm)
constexpr uint32_t kMaskF7Rs2 = 0xfff0007f;      // funct7 | rs2 | opcode (funct3 is rm)
constexpr uint32_t kMaskF7F3 = 0xfe00707f;       // funct7 | funct3 | opcode
constexpr uint32_t kMaskF7Rs2F3 = 0xfff0707f;    // funct7 | rs2 | funct3 | opcode

constexpr uint32_t op_fp(uint32_t funct7, uint32_t rs2 = 0, uint32_t funct3 = 0) {
  return (funct7 << 25) | (rs2 << 20) | (funct3 << 12) | kOpFp;
}

// No ',' before 'm': the disassembler prints the rounding mode with its own
// separator, and nothing at all for DYN.
const InsnRow kRows[] = {
    {"flw", kMaskLoadStore, 0x2007, ImmKind::I, "D,o", exec_flw, Ext::F},
    {"fsw", kMaskLoadStore, 0x2027, ImmKind::S, "T,o", exec_fsw, Ext::F},
    {"fmadd.s", kMaskR4, 0x43, ImmKind::None, "D,S,T,Rm", exec_rounded<MulAdd<false, false>>, Ext::F},
    {"fmsub.s", kMaskR4, 0x47, ImmKind::None, "D,S,T,Rm", exec_rounded<MulAdd<false, true>>, Ext::F},
    {"fnmsub.s", kMaskR4, 0x4b, ImmKind::None, "D,S,T,Rm", exec_rounded<MulAdd<true, false>>, Ext::F},
    {"fnmadd.s", kMaskR4, 0x4f, ImmKind::None, "D,S,T,Rm", exec_rounded<MulAdd<true, true>>, Ext::F},
    {"fadd.s", kMaskF7, op_fp(0x00), ImmKind::None, "D,S,Tm", exec_rounded<Add>, Ext::F},
    {"fsub.s", kMaskF7, op_fp(0x04), ImmKind::None, "D,S,Tm", exec_rounded<Sub>, Ext::F},
    {"fmul.s", kMaskF7, op_fp(0x08), ImmKind::None, "D,S,Tm", exec_rounded<Mul>, Ext::F},
    {"fdiv.s", kMaskF7, op_fp(0x0c), ImmKind::None, "D,S,Tm", exec_rounded<Div>, Ext::F},
    {"fsqrt.s", kMaskF7Rs2, op_fp(0x2c), ImmKind::None, "D,Sm", exec_rounded<Sqrt>, Ext::F},
    {"fsgnj.s", kMaskF7F3, op_fp(0x10, 0, 0), ImmKind::None, "D,S,T", exec_fsgnj<0>, Ext::F},
    {"fsgnjn.s", kMaskF7F3, op_fp(0x10, 0, 1), ImmKind::None, "D,S,T", exec_fsgnj<1>, Ext::F},
    {"fsgnjx.s", kMaskF7F3, op_fp(0x10, 0, 2), ImmKind::None, "D,S,T", exec_fsgnj<2>, Ext::F},
    {"fmin.s", kMaskF7F3, op_fp(0x14, 0, 0), ImmKind::None, "D,S,T", exec_fminmax<false>, Ext::F},
    {"fmax.s", kMaskF7F3, op_fp(0x14, 0, 1), ImmKind::None, "D,S,T", exec_fminmax<true>, Ext::F},
    {"fcvt.w.s", kMaskF7Rs2, op_fp(0x60, 0), ImmKind::None, "d,Sm", exec_fcvt_to_int<false>, Ext::F},
    {"fcvt.wu.s", kMaskF7Rs2, op_fp(0x60, 1), ImmKind::None, "d,Sm", exec_fcvt_to_int<true>, Ext::F},
    {"fmv.x.w", kMaskF7Rs2F3, op_fp(0x70, 0, 0), ImmKind::None, "d,S", exec_fmv_x_w, Ext::F},
    {"fclass.s", kMaskF7Rs2F3, op_fp(0x70, 0, 1), ImmKind::None, "d,S", exec_fclass, Ext::F},
    {"feq.s", kMaskF7F3, op_fp(0x50, 0, 2), ImmKind::None, "d,S,T", exec_compare<Cmp::Eq>, Ext::F},
    {"flt.s", kMaskF7F3, op_fp(0x50, 0, 1), ImmKind::None, "d,S,T", exec_compare<Cmp::Lt>, Ext::F},
    {"fle.s", kMaskF7F3, op_fp(0x50, 0, 0), ImmKind::None, "d,S,T", exec_compare<Cmp::Le>, Ext::F},
    {"fcvt.s.w", kMaskF7Rs2, op_fp(0x68, 0), ImmKind::None, "D,sm", exec_fcvt_from_int<false>, Ext::F},
    {"fcvt.s.wu", kMaskF7Rs2, op_fp(0x68, 1), ImmKind::None, "D,sm", exec_fcvt_from_int<true>, Ext::F},
    {"fmv.w.x", kMaskF7Rs2F3, op_fp(0x78, 0, 0), ImmKind::None, "D,s", exec_fmv_w_x, Ext::F},
};

// The fixed-width copies of the executors the table names, for specialize() (isa.hpp).
using FMAdd = MulAdd<false, false>;
using FMSub = MulAdd<false, true>;
using FNMSub = MulAdd<true, false>;
using FNMAdd = MulAdd<true, true>;
#define VX_ROUNDED(Op)                                                                                               \
  {                                                                                                                  \
    &exec_rounded<Op>,                                                                                               \
        {&exec_rounded_fixed<Op, false, 1>, &exec_rounded_fixed<Op, false, 2>,  &exec_rounded_fixed<Op, false, 4>,   \
         &exec_rounded_fixed<Op, false, 8>, &exec_rounded_fixed<Op, false, 16>, &exec_rounded_fixed<Op, false, 32>}, \
        {&exec_rounded_fixed<Op, true, 1>, &exec_rounded_fixed<Op, true, 2>,  &exec_rounded_fixed<Op, true, 4>,      \
         &exec_rounded_fixed<Op, true, 8>, &exec_rounded_fixed<Op, true, 16>, &exec_rounded_fixed<Op, true, 32>},    \
  }
const SpecializedExec kSpecialized[] = {
    VX_ROUNDED(FMAdd),
    VX_ROUNDED(FMSub),
    VX_ROUNDED(FNMSub),
    VX_ROUNDED(FNMAdd),
    VX_ROUNDED(Add),
    VX_ROUNDED(Sub),
    VX_ROUNDED(Mul),
    VX_ROUNDED(Div),
    VX_ROUNDED(Sqrt),
    VX_WIDTHS0(exec_flw),
    VX_WIDTHS0(exec_fsw),
    VX_WIDTHS(exec_fcvt_from_int, false),
    VX_WIDTHS(exec_fcvt_from_int, true),
    VX_WIDTHS(exec_fsgnj, 0),
    VX_WIDTHS(exec_fsgnj, 1),
    VX_WIDTHS(exec_fsgnj, 2),
    VX_WIDTHS0(exec_fmv_x_w),
    VX_WIDTHS0(exec_fmv_w_x),
};

constexpr auto kSites =
    site_table<&exec_flw<1>, &exec_flw<2>, &exec_flw<4>, &exec_flw<8>, &exec_flw<16>, &exec_flw<32>>();

}  // namespace

std::span<const InsnRow> fp_rows() { return kRows; }
std::span<const SpecializedExec> fp_specialized() { return kSpecialized; }
std::span<const SiteExec> fp_sites() { return kSites; }

void Machine::fp_switch(WarpState* next) {
  const int host = host_flags();
  if (fp_owner_) fp_owner_->fcsr |= flags_from_host(host);
  fp_owner_ = next;
  // Host flags the new owner's fflags already hold may stay: ORing them in again changes nothing.
  if (next && (host & ~host_from_flags(next->fcsr & 0x1f))) host_clear_flags();
}

}  // namespace vx
