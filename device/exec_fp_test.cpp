// The F extension: IEEE 754 binary32 with RISC-V rounding modes, NaN rules and fflags.
#include <bit>
#include <catch2/catch.hpp>
#include <cfenv>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <random>

#include "device/fp_lanes.hpp"
#include "device/test_support.hpp"

using namespace vx;
using namespace vx::test;

namespace {

constexpr uint32_t kRne = 0, kRtz = 1, kRdn = 2, kRup = 3, kRmm = 4, kDyn = 7;
constexpr uint32_t kNX = 1, kUF = 2, kOF = 4, kDZ = 8, kNV = 16;
constexpr uint32_t kCanonicalNan = 0x7fc00000;
constexpr uint32_t kQNanPayload = 0x7fc12345;
constexpr uint32_t kSNan = 0x7f800001;
constexpr uint32_t kPlusInf = 0x7f800000, kMinusInf = 0xff800000;
constexpr uint32_t kMinusZero = 0x80000000;
constexpr uint32_t kFltMax = 0x7f7fffff;
constexpr uint32_t kSentinel = 0xdeadbeef;

constexpr uint32_t bits(float v) { return std::bit_cast<uint32_t>(v); }
constexpr uint32_t frm(uint32_t rm) { return rm << 5; }

// Float register numbers used by the tests: fa0 is the destination, fa1..fa3 the sources.
constexpr uint32_t fa0 = 10, fa1 = 11, fa2 = 12, fa3 = 13;

// F-extension encoders.
namespace fpi {
constexpr uint32_t op(uint32_t f7, uint32_t rs2, uint32_t rs1, uint32_t rm, uint32_t rd) {
  return r_type(f7, rs2, rs1, rm, rd, 0x53);
}
constexpr uint32_t add(uint32_t rd, uint32_t rs1, uint32_t rs2, uint32_t rm = kDyn) {
  return op(0x00, rs2, rs1, rm, rd);
}
constexpr uint32_t sub(uint32_t rd, uint32_t rs1, uint32_t rs2, uint32_t rm = kDyn) {
  return op(0x04, rs2, rs1, rm, rd);
}
constexpr uint32_t mul(uint32_t rd, uint32_t rs1, uint32_t rs2, uint32_t rm = kDyn) {
  return op(0x08, rs2, rs1, rm, rd);
}
constexpr uint32_t div(uint32_t rd, uint32_t rs1, uint32_t rs2, uint32_t rm = kDyn) {
  return op(0x0c, rs2, rs1, rm, rd);
}
constexpr uint32_t sqrt(uint32_t rd, uint32_t rs1, uint32_t rm = kDyn) { return op(0x2c, 0, rs1, rm, rd); }
constexpr uint32_t sgnj(uint32_t rd, uint32_t rs1, uint32_t rs2) { return op(0x10, rs2, rs1, 0, rd); }
constexpr uint32_t sgnjn(uint32_t rd, uint32_t rs1, uint32_t rs2) { return op(0x10, rs2, rs1, 1, rd); }
constexpr uint32_t sgnjx(uint32_t rd, uint32_t rs1, uint32_t rs2) { return op(0x10, rs2, rs1, 2, rd); }
constexpr uint32_t min(uint32_t rd, uint32_t rs1, uint32_t rs2) { return op(0x14, rs2, rs1, 0, rd); }
constexpr uint32_t max(uint32_t rd, uint32_t rs1, uint32_t rs2) { return op(0x14, rs2, rs1, 1, rd); }
constexpr uint32_t cvt_w_s(uint32_t rd, uint32_t rs1, uint32_t rm = kDyn) { return op(0x60, 0, rs1, rm, rd); }
constexpr uint32_t cvt_wu_s(uint32_t rd, uint32_t rs1, uint32_t rm = kDyn) { return op(0x60, 1, rs1, rm, rd); }
constexpr uint32_t mv_x_w(uint32_t rd, uint32_t rs1) { return op(0x70, 0, rs1, 0, rd); }
constexpr uint32_t fclass(uint32_t rd, uint32_t rs1) { return op(0x70, 0, rs1, 1, rd); }
constexpr uint32_t feq(uint32_t rd, uint32_t rs1, uint32_t rs2) { return op(0x50, rs2, rs1, 2, rd); }
constexpr uint32_t flt(uint32_t rd, uint32_t rs1, uint32_t rs2) { return op(0x50, rs2, rs1, 1, rd); }
constexpr uint32_t fle(uint32_t rd, uint32_t rs1, uint32_t rs2) { return op(0x50, rs2, rs1, 0, rd); }
constexpr uint32_t cvt_s_w(uint32_t rd, uint32_t rs1, uint32_t rm = kDyn) { return op(0x68, 0, rs1, rm, rd); }
constexpr uint32_t cvt_s_wu(uint32_t rd, uint32_t rs1, uint32_t rm = kDyn) { return op(0x68, 1, rs1, rm, rd); }
constexpr uint32_t mv_w_x(uint32_t rd, uint32_t rs1) { return op(0x78, 0, rs1, 0, rd); }
constexpr uint32_t madd(uint32_t rd, uint32_t rs1, uint32_t rs2, uint32_t rs3, uint32_t rm = kDyn) {
  return r4_type(rs3, 0, rs2, rs1, rm, rd, 0x43);
}
constexpr uint32_t msub(uint32_t rd, uint32_t rs1, uint32_t rs2, uint32_t rs3, uint32_t rm = kDyn) {
  return r4_type(rs3, 0, rs2, rs1, rm, rd, 0x47);
}
constexpr uint32_t nmsub(uint32_t rd, uint32_t rs1, uint32_t rs2, uint32_t rs3, uint32_t rm = kDyn) {
  return r4_type(rs3, 0, rs2, rs1, rm, rd, 0x4b);
}
constexpr uint32_t nmadd(uint32_t rd, uint32_t rs1, uint32_t rs2, uint32_t rs3, uint32_t rm = kDyn) {
  return r4_type(rs3, 0, rs2, rs1, rm, rd, 0x4f);
}
constexpr uint32_t flw(uint32_t rd, uint32_t rs1, int32_t imm) { return i_type(imm, rs1, 2, rd, 0x07); }
constexpr uint32_t fsw(uint32_t rs2, uint32_t rs1, int32_t imm) { return s_type(imm, rs2, rs1, 2, 0x27); }
}  // namespace fpi

struct Run {
  uint32_t f = 0;       // fa0 of lane 0
  uint32_t x = 0;       // a0 of lane 0
  uint32_t fflags = 0;  // fcsr bits 4..0
  uint32_t fcsr = 0;
  DeviceException exc;
};

// Runs `insn` on lane 0 with fa1, fa2, fa3 = a, b, c and a1 = a (the integer
// source of fcvt.s.w and fmv.w.x). fa0 and a0 start as a sentinel.
Run run_one(uint32_t insn, uint32_t a, uint32_t b = 0, uint32_t c = 0, uint32_t fcsr = 0) {
  Bench bench;
  bench.load({insn, vxi::tmc(zero)});
  bench.f(fa1, 0) = a;
  bench.f(fa2, 0) = b;
  bench.f(fa3, 0) = c;
  bench.x(a1, 0) = a;
  bench.f(fa0, 0) = kSentinel;
  bench.x(a0, 0) = kSentinel;
  bench.warp().fcsr = fcsr;
  Run r;
  r.exc = bench.run_warp(1);
  r.f = bench.f(fa0, 0);
  r.x = bench.x(a0, 0);
  r.fcsr = bench.warp().fcsr;
  r.fflags = r.fcsr & 0x1f;
  return r;
}

// The same with a static rounding mode put into the instruction by `make`.
template <class Make>
Run run_rm(Make make, uint32_t rm, uint32_t a, uint32_t b = 0, uint32_t c = 0) {
  return run_one(make(rm), a, b, c);
}

struct RoundCase {
  uint32_t rm;
  uint32_t expected;
};

const char* rm_name(uint32_t rm) {
  static const char* const names[] = {"rne", "rtz", "rdn", "rup", "rmm", "rm5", "rm6", "dyn"};
  return names[rm & 7];
}

// --- An exact reference for the random checks -------------------------------
// The exact value v (held in long double without rounding) rounded to binary32
// in mode rm, using only comparisons: the two neighbours around v and their midpoint.
uint32_t reference_round(long double v, uint32_t rm) {
  const float nearest = float(v);  // the test runs in the default round-to-nearest-even mode
  if (static_cast<long double>(nearest) == v) {
    if (v == 0) return rm == kRdn ? kMinusZero : 0u;  // an exact zero sum (the operands are never zero)
    return bits(nearest);
  }
  float lo, hi;  // lo toward zero, hi away from zero
  if (std::fabs(static_cast<long double>(nearest)) > std::fabs(v)) {
    hi = nearest;
    lo = std::nextafter(nearest, 0.0f);
  } else {
    lo = nearest;
    hi = std::nextafter(nearest, v < 0 ? -INFINITY : INFINITY);
  }
  const long double mid = (static_cast<long double>(lo) + static_cast<long double>(hi)) / 2;
  switch (rm) {
    case kRne: return bits(nearest);
    case kRtz: return bits(lo);
    case kRdn: return bits(v < 0 ? hi : lo);
    case kRup: return bits(v > 0 ? hi : lo);
    default: return bits(std::fabs(v) >= std::fabs(mid) ? hi : lo);
  }
}

// A normal binary32 in [2^-3, 2^4) of random sign with 1 to 24 significant
// bits: short significands make exact results and exact ties common.
uint32_t random_operand(std::mt19937& rng) {
  const uint32_t sig_bits = 1 + rng() % 24;
  const uint32_t sig = (rng() & ((1u << (sig_bits - 1)) - 1)) | (1u << (sig_bits - 1));
  const uint32_t mantissa = (sig << (24 - sig_bits)) & 0x7fffff;
  const uint32_t exponent = 127 - 3 + rng() % 7;
  return (rng() & 1) << 31 | exponent << 23 | mantissa;
}

long double as_ld(uint32_t b) { return static_cast<long double>(std::bit_cast<float>(b)); }

}  // namespace

// --- Basic arithmetic ----------------------------------------------------------

TEST_CASE("fadd, fsub, fmul, fdiv and fsqrt compute exact results without flags") {
  CHECK(run_one(fpi::add(fa0, fa1, fa2), bits(1.5f), bits(2.25f)).f == bits(3.75f));
  CHECK(run_one(fpi::sub(fa0, fa1, fa2), bits(5.0f), bits(7.5f)).f == bits(-2.5f));
  CHECK(run_one(fpi::mul(fa0, fa1, fa2), bits(3.0f), bits(-4.0f)).f == bits(-12.0f));
  CHECK(run_one(fpi::div(fa0, fa1, fa2), bits(10.0f), bits(4.0f)).f == bits(2.5f));
  CHECK(run_one(fpi::sqrt(fa0, fa1), bits(2.25f)).f == bits(1.5f));
  CHECK(run_one(fpi::sqrt(fa0, fa1), kMinusZero).f == kMinusZero);
  for (uint32_t insn : {fpi::add(fa0, fa1, fa2), fpi::sub(fa0, fa1, fa2), fpi::mul(fa0, fa1, fa2),
                        fpi::div(fa0, fa1, fa2), fpi::sqrt(fa0, fa1)})
    CHECK(run_one(insn, bits(4.0f), bits(2.0f)).fflags == 0);
}

TEST_CASE("the fused multiply-adds negate the product and the addend as the spec defines") {
  const uint32_t a = bits(2.0f), b = bits(3.0f), c = bits(1.0f);
  CHECK(run_one(fpi::madd(fa0, fa1, fa2, fa3), a, b, c).f == bits(7.0f));    // a*b+c
  CHECK(run_one(fpi::msub(fa0, fa1, fa2, fa3), a, b, c).f == bits(5.0f));    // a*b-c
  CHECK(run_one(fpi::nmsub(fa0, fa1, fa2, fa3), a, b, c).f == bits(-5.0f));  // -(a*b)+c
  CHECK(run_one(fpi::nmadd(fa0, fa1, fa2, fa3), a, b, c).f == bits(-7.0f));  // -(a*b)-c
}

TEST_CASE("the fused multiply-adds negate operands, so an exact zero takes the rounding mode's sign") {
  const uint32_t one = bits(1.0f), zero_bits = 0;
  // -(1*0) - 0 = -0 - 0 = -0 in every mode.
  CHECK(run_one(fpi::nmadd(fa0, fa1, fa2, fa3, kRne), one, zero_bits, zero_bits).f == kMinusZero);
  // -(1*0) + 0 = -0 + +0: +0 except when rounding down. Negating the result of
  // a*b-c instead would give the opposite signs.
  CHECK(run_one(fpi::nmsub(fa0, fa1, fa2, fa3, kRne), one, zero_bits, zero_bits).f == 0u);
  CHECK(run_one(fpi::nmsub(fa0, fa1, fa2, fa3, kRmm), one, zero_bits, zero_bits).f == 0u);
  CHECK(run_one(fpi::nmsub(fa0, fa1, fa2, fa3, kRdn), one, zero_bits, zero_bits).f == kMinusZero);
  CHECK(run_one(fpi::msub(fa0, fa1, fa2, fa3, kRdn), one, zero_bits, zero_bits).f == kMinusZero);
  CHECK(run_one(fpi::msub(fa0, fa1, fa2, fa3, kRup), one, zero_bits, zero_bits).f == 0u);
}

TEST_CASE("fused multiply-add rounds once") {
  // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: rounding the product first would lose the 2^-24.
  const uint32_t a = 0x3f800800, c = 0x3f801000;  // 1 + 2^-12, 1 + 2^-11
  for (uint32_t rm : {kRne, kRtz, kRdn, kRup, kRmm}) {
    INFO(rm_name(rm));
    Run r = run_one(fpi::msub(fa0, fa1, fa2, fa3, rm), a, a, c);
    CHECK(r.f == 0x33800000);  // 2^-24, exact
    CHECK(r.fflags == 0);
  }
}

// --- Rounding modes ------------------------------------------------------------

TEST_CASE("fadd rounds a result exactly halfway between two floats in every rounding mode") {
  auto fadd = [](uint32_t rm) { return fpi::add(fa0, fa1, fa2, rm); };
  SECTION("1 + 2^-24: the lower neighbour is even") {
    for (RoundCase k : {RoundCase{kRne, 0x3f800000},
                        {kRtz, 0x3f800000},
                        {kRdn, 0x3f800000},
                        {kRup, 0x3f800001},
                        {kRmm, 0x3f800001}}) {
      INFO(rm_name(k.rm));
      Run r = run_rm(fadd, k.rm, 0x3f800000, 0x33800000);
      CHECK(r.f == k.expected);
      CHECK(r.fflags == kNX);
    }
  }
  SECTION("1 + 3 * 2^-24: the upper neighbour is even") {
    for (RoundCase k : {RoundCase{kRne, 0x3f800002},
                        {kRtz, 0x3f800001},
                        {kRdn, 0x3f800001},
                        {kRup, 0x3f800002},
                        {kRmm, 0x3f800002}}) {
      INFO(rm_name(k.rm));
      CHECK(run_rm(fadd, k.rm, 0x3f800001, 0x33800000).f == k.expected);
    }
  }
  SECTION("-1 - 2^-24") {
    for (RoundCase k : {RoundCase{kRne, 0xbf800000},
                        {kRtz, 0xbf800000},
                        {kRdn, 0xbf800001},
                        {kRup, 0xbf800000},
                        {kRmm, 0xbf800001}}) {
      INFO(rm_name(k.rm));
      Run r = run_rm(fadd, k.rm, 0xbf800000, 0xb3800000);
      CHECK(r.f == k.expected);
      CHECK(r.fflags == kNX);
    }
  }
}

TEST_CASE("fadd rounds an inexact result that is not halfway in every rounding mode") {
  auto fadd = [](uint32_t rm) { return fpi::add(fa0, fa1, fa2, rm); };
  SECTION("1 + 0.75 ulp") {
    for (RoundCase k : {RoundCase{kRne, 0x3f800001},
                        {kRtz, 0x3f800000},
                        {kRdn, 0x3f800000},
                        {kRup, 0x3f800001},
                        {kRmm, 0x3f800001}}) {
      INFO(rm_name(k.rm));
      Run r = run_rm(fadd, k.rm, 0x3f800000, 0x33c00000);
      CHECK(r.f == k.expected);
      CHECK(r.fflags == kNX);
    }
  }
  SECTION("1 + 0.25 ulp") {
    for (RoundCase k : {RoundCase{kRne, 0x3f800000},
                        {kRtz, 0x3f800000},
                        {kRdn, 0x3f800000},
                        {kRup, 0x3f800001},
                        {kRmm, 0x3f800000}}) {
      INFO(rm_name(k.rm));
      CHECK(run_rm(fadd, k.rm, 0x3f800000, 0x33000000).f == k.expected);
    }
  }
  SECTION("-1 - 0.75 ulp") {
    for (RoundCase k : {RoundCase{kRne, 0xbf800001},
                        {kRtz, 0xbf800000},
                        {kRdn, 0xbf800001},
                        {kRup, 0xbf800000},
                        {kRmm, 0xbf800001}}) {
      INFO(rm_name(k.rm));
      CHECK(run_rm(fadd, k.rm, 0xbf800000, 0xb3c00000).f == k.expected);
    }
  }
}

TEST_CASE("fcvt.w.s rounds halfway and other fractions in every rounding mode") {
  struct Case {
    float in;
    int32_t rne, rtz, rdn, rup, rmm;
  };
  for (Case k : {Case{2.5f, 2, 2, 2, 3, 3}, Case{3.5f, 4, 3, 3, 4, 4}, Case{-2.5f, -2, -2, -3, -2, -3},
                 Case{2.75f, 3, 2, 2, 3, 3}, Case{-2.25f, -2, -2, -3, -2, -2}, Case{-0.5f, 0, 0, -1, 0, -1}}) {
    const int32_t expected[] = {k.rne, k.rtz, k.rdn, k.rup, k.rmm};
    for (uint32_t rm : {kRne, kRtz, kRdn, kRup, kRmm}) {
      INFO(k.in << " " << rm_name(rm));
      Run r = run_one(fpi::cvt_w_s(a0, fa1, rm), bits(k.in));
      CHECK(int32_t(r.x) == expected[rm]);
      CHECK(r.fflags == kNX);
    }
  }
}

TEST_CASE("fmul rounds an exact tie away from zero under RMM and to even under RNE") {
  auto fmul = [](uint32_t rm) { return fpi::mul(fa0, fa1, fa2, rm); };
  // (1 + 3 * 2^-23) * 1.5 = 1.5 + 4.5 * 2^-23: halfway between 0x3fc00004 and 0x3fc00005.
  for (RoundCase k :
       {RoundCase{kRne, 0x3fc00004}, {kRtz, 0x3fc00004}, {kRdn, 0x3fc00004}, {kRup, 0x3fc00005}, {kRmm, 0x3fc00005}}) {
    INFO(rm_name(k.rm));
    Run r = run_rm(fmul, k.rm, 0x3f800003, bits(1.5f));
    CHECK(r.f == k.expected);
    CHECK(r.fflags == kNX);
    CHECK(run_rm(fmul, k.rm, 0xbf800003, bits(1.5f)).f == (k.rm == kRdn   ? 0xbfc00005
                                                           : k.rm == kRup ? 0xbfc00004
                                                                          : (k.expected | 0x80000000)));
  }
  // 0x3eaaaaab * 3 = 1 + 2^-25, a quarter ulp above 1: RMM rounds to nearest like RNE.
  CHECK(run_rm(fmul, kRmm, 0x3eaaaaab, bits(3.0f)).f == 0x3f800000);
  CHECK(run_rm(fmul, kRup, 0x3eaaaaab, bits(3.0f)).f == 0x3f800001);
}

TEST_CASE("fdiv rounds a subnormal tie away from zero under RMM and to even under RNE") {
  auto fdiv = [](uint32_t rm) { return fpi::div(fa0, fa1, fa2, rm); };
  // A quotient of binary32 values ties only below the normal range: 5 * 2^-149 / 2 = 2.5 * 2^-149.
  for (RoundCase k : {RoundCase{kRne, 0x2}, {kRtz, 0x2}, {kRdn, 0x2}, {kRup, 0x3}, {kRmm, 0x3}}) {
    INFO(rm_name(k.rm));
    Run r = run_rm(fdiv, k.rm, 0x00000005, bits(2.0f));
    CHECK(r.f == k.expected);
    CHECK(r.fflags == (kUF | kNX));
  }
  CHECK(run_rm(fdiv, kRmm, 0x80000001, bits(2.0f)).f == 0x80000001);  // -2^-150: away from zero
  CHECK(run_rm(fdiv, kRne, 0x80000001, bits(2.0f)).f == kMinusZero);
  // 1/3 is not a tie: RMM and RNE agree, RTZ truncates.
  CHECK(run_rm(fdiv, kRmm, bits(1.0f), bits(3.0f)).f == 0x3eaaaaab);
  CHECK(run_rm(fdiv, kRne, bits(1.0f), bits(3.0f)).f == 0x3eaaaaab);
  CHECK(run_rm(fdiv, kRtz, bits(1.0f), bits(3.0f)).f == 0x3eaaaaaa);
}

TEST_CASE("fcvt.s.w and fcvt.s.wu round integers wider than 24 bits in every rounding mode") {
  struct Case {
    bool is_unsigned;
    uint32_t in;
    uint32_t rne, rtz, rdn, rup, rmm;
  };
  for (Case k : {Case{false, 16777217, 0x4b800000, 0x4b800000, 0x4b800000, 0x4b800001, 0x4b800001},  // 2^24 + 1
                 Case{false, 16777219, 0x4b800002, 0x4b800001, 0x4b800001, 0x4b800002, 0x4b800002},  // 2^24 + 3
                 Case{false, uint32_t(-16777217), 0xcb800000, 0xcb800000, 0xcb800001, 0xcb800000, 0xcb800001},
                 Case{true, 0xffffffff, 0x4f800000, 0x4f7fffff, 0x4f7fffff, 0x4f800000, 0x4f800000}}) {
    const uint32_t expected[] = {k.rne, k.rtz, k.rdn, k.rup, k.rmm};
    for (uint32_t rm : {kRne, kRtz, kRdn, kRup, kRmm}) {
      INFO(k.in << " " << rm_name(rm));
      Run r = run_one(k.is_unsigned ? fpi::cvt_s_wu(fa0, a1, rm) : fpi::cvt_s_w(fa0, a1, rm), k.in);
      CHECK(r.f == expected[rm]);
      CHECK(r.fflags == kNX);
    }
  }
  Run exact = run_one(fpi::cvt_s_w(fa0, a1, kRmm), uint32_t(-7));
  CHECK(exact.f == bits(-7.0f));
  CHECK(exact.fflags == 0);
  CHECK(run_one(fpi::cvt_s_wu(fa0, a1, kRne), 0x80000000).f == bits(2147483648.0f));
}

TEST_CASE("a DYN rounding mode takes frm from fcsr, and a static rm overrides frm") {
  const uint32_t one = 0x3f800000, half_ulp = 0x33800000;
  CHECK(run_one(fpi::add(fa0, fa1, fa2, kDyn), one, half_ulp, 0, frm(kRne)).f == 0x3f800000);
  CHECK(run_one(fpi::add(fa0, fa1, fa2, kDyn), one, half_ulp, 0, frm(kRup)).f == 0x3f800001);
  CHECK(run_one(fpi::add(fa0, fa1, fa2, kDyn), one, half_ulp, 0, frm(kRmm)).f == 0x3f800001);
  CHECK(run_one(fpi::add(fa0, fa1, fa2, kDyn), 0xbf800000, 0xb3800000, 0, frm(kRdn)).f == 0xbf800001);
  CHECK(run_one(fpi::add(fa0, fa1, fa2, kRne), one, half_ulp, 0, frm(kRup)).f == 0x3f800000);
  CHECK(int32_t(run_one(fpi::cvt_w_s(a0, fa1, kDyn), bits(2.5f), 0, 0, frm(kRup)).x) == 3);
  CHECK(int32_t(run_one(fpi::cvt_w_s(a0, fa1, kDyn), bits(2.5f), 0, 0, frm(kRtz)).x) == 2);
}

TEST_CASE("a reserved rounding mode traps as an illegal instruction and changes nothing") {
  const uint32_t ops[] = {fpi::add(fa0, fa1, fa2),        fpi::sub(fa0, fa1, fa2), fpi::mul(fa0, fa1, fa2),
                          fpi::div(fa0, fa1, fa2),        fpi::sqrt(fa0, fa1),     fpi::madd(fa0, fa1, fa2, fa3),
                          fpi::nmadd(fa0, fa1, fa2, fa3), fpi::cvt_w_s(a0, fa1),   fpi::cvt_wu_s(a0, fa1),
                          fpi::cvt_s_w(fa0, a1),          fpi::cvt_s_wu(fa0, a1)};
  for (uint32_t dyn_insn : ops) {
    const uint32_t rm_field = 7u << 12;
    struct Variant {
      uint32_t insn;
      uint32_t fcsr;
    };
    // Static rm 5 and 6, and DYN with frm 5, 6 and 7. fflags start as OF to show they stay.
    for (Variant v : {Variant{(dyn_insn & ~rm_field) | (5u << 12), kOF},
                      {(dyn_insn & ~rm_field) | (6u << 12), kOF},
                      {dyn_insn, frm(5) | kOF},
                      {dyn_insn, frm(6) | kOF},
                      {dyn_insn, frm(7) | kOF}}) {
      INFO(disassemble(v.insn, 0) << " fcsr=" << v.fcsr);
      Run r = run_one(v.insn, bits(1.0f), bits(3.0f), bits(1.0f), v.fcsr);
      CHECK(r.exc.cause == Cause::IllegalInstruction);
      CHECK(r.exc.addr == v.insn);
      CHECK(r.f == kSentinel);
      CHECK(r.x == kSentinel);
      CHECK(r.fcsr == v.fcsr);
    }
  }
}

TEST_CASE("the host rounding mode is back to round-to-nearest after every instruction") {
  for (uint32_t rm : {kRne, kRtz, kRdn, kRup, kRmm}) {
    INFO(rm_name(rm));
    (void)run_one(fpi::div(fa0, fa1, fa2, rm), bits(1.0f), bits(3.0f));
    CHECK(std::fegetround() == FE_TONEAREST);
    (void)run_one(fpi::cvt_s_w(fa0, a1, rm), 16777217);
    CHECK(std::fegetround() == FE_TONEAREST);
  }
}

// --- Exception flags -----------------------------------------------------------

TEST_CASE("each exception flag is raised by its textbook case in every rounding mode") {
  for (uint32_t rm : {kRne, kRtz, kRdn, kRup, kRmm}) {
    INFO(rm_name(rm));
    Run third = run_one(fpi::div(fa0, fa1, fa2, rm), bits(1.0f), bits(3.0f));
    CHECK(third.fflags == kNX);
    Run by_zero = run_one(fpi::div(fa0, fa1, fa2, rm), bits(1.0f), 0);
    CHECK(by_zero.f == kPlusInf);
    CHECK(by_zero.fflags == kDZ);
    Run overflow = run_one(fpi::mul(fa0, fa1, fa2, rm), kFltMax, bits(2.0f));
    // Overflow goes to infinity or to the largest finite value, as the mode rounds.
    CHECK(overflow.f == (rm == kRtz || rm == kRdn ? kFltMax : kPlusInf));
    CHECK(overflow.fflags == (kOF | kNX));
    Run underflow = run_one(fpi::mul(fa0, fa1, fa2, rm), 0x0d800000, 0x0d800000);  // 2^-100 * 2^-100
    CHECK(underflow.f == (rm == kRup ? 0x00000001u : 0u));
    CHECK(underflow.fflags == (kUF | kNX));
    Run root = run_one(fpi::sqrt(fa0, fa1, rm), bits(-1.0f));
    CHECK(root.f == kCanonicalNan);
    CHECK(root.fflags == kNV);
    Run inf_minus_inf = run_one(fpi::sub(fa0, fa1, fa2, rm), kPlusInf, kPlusInf);
    CHECK(inf_minus_inf.f == kCanonicalNan);
    CHECK(inf_minus_inf.fflags == kNV);
    Run zero_times_inf = run_one(fpi::madd(fa0, fa1, fa2, fa3, rm), 0, kPlusInf, bits(1.0f));
    CHECK(zero_times_inf.f == kCanonicalNan);
    CHECK(zero_times_inf.fflags == kNV);
  }
  Run neg_overflow = run_one(fpi::mul(fa0, fa1, fa2, kRdn), kFltMax, bits(-2.0f));
  CHECK(neg_overflow.f == kMinusInf);
  CHECK(run_one(fpi::mul(fa0, fa1, fa2, kRup), kFltMax, bits(-2.0f)).f == (kFltMax | 0x80000000));
}

TEST_CASE("underflow is detected after rounding") {
  // 2^-126 * (1 - 2^-46): below the smallest normal, but with an unbounded
  // exponent it rounds to 2^-126 in the nearest modes and up: not tiny, so no UF.
  auto fmul = [](uint32_t rm) { return fpi::mul(fa0, fa1, fa2, rm); };
  const uint32_t a = 0x0d800001, b = 0x327ffffe;  // 2^-100 * (1 + 2^-23), 2^-26 * (1 - 2^-23)
  struct Case {
    uint32_t rm, result, flags;
  };
  for (Case k : {Case{kRne, 0x00800000, kNX},
                 {kRmm, 0x00800000, kNX},
                 {kRup, 0x00800000, kNX},
                 {kRtz, 0x007fffff, kUF | kNX},
                 {kRdn, 0x007fffff, kUF | kNX}}) {
    INFO(rm_name(k.rm));
    Run r = run_rm(fmul, k.rm, a, b);
    CHECK(r.f == k.result);
    CHECK(r.fflags == k.flags);
  }
  // 2^-126 - 2^-150 is exact at 24 bits yet tiny: it rounds to 2^-126 in the
  // subnormal format with UF.
  const uint32_t just_below = 0x3f7fffff;  // 1 - 2^-24
  for (uint32_t rm : {kRne, kRmm}) {
    INFO(rm_name(rm));
    Run r = run_rm(fmul, rm, just_below, 0x00800000);
    CHECK(r.f == 0x00800000);
    CHECK(r.fflags == (kUF | kNX));
  }
  // An exact subnormal result raises nothing.
  Run exact = run_rm(fmul, kRmm, 0x00000006, bits(0.5f));
  CHECK(exact.f == 0x00000003);
  CHECK(exact.fflags == 0);
}

TEST_CASE("an exact result raises no flag in any rounding mode") {
  for (uint32_t rm : {kRne, kRtz, kRdn, kRup, kRmm}) {
    INFO(rm_name(rm));
    CHECK(run_one(fpi::add(fa0, fa1, fa2, rm), bits(1.0f), bits(2.0f)).fflags == 0);
    CHECK(run_one(fpi::div(fa0, fa1, fa2, rm), bits(1.0f), bits(4.0f)).fflags == 0);
    CHECK(run_one(fpi::sqrt(fa0, fa1, rm), bits(16.0f)).fflags == 0);
    CHECK(run_one(fpi::madd(fa0, fa1, fa2, fa3, rm), bits(2.0f), bits(2.0f), bits(1.0f)).fflags == 0);
    CHECK(run_one(fpi::add(fa0, fa1, fa2, rm), kPlusInf, bits(1.0f)).fflags == 0);
  }
}

// --- NaNs ---------------------------------------------------------------------

TEST_CASE("arithmetic producing a NaN returns the canonical NaN") {
  for (uint32_t rm : {kRne, kRmm}) {
    INFO(rm_name(rm));
    Run payload = run_one(fpi::add(fa0, fa1, fa2, rm), kQNanPayload, bits(1.0f));
    CHECK(payload.f == kCanonicalNan);
    CHECK(payload.fflags == 0);
    CHECK(run_one(fpi::mul(fa0, fa1, fa2, rm), bits(2.0f), 0xffc00000).f == kCanonicalNan);
    CHECK(run_one(fpi::div(fa0, fa1, fa2, rm), 0, 0).f == kCanonicalNan);
    CHECK(run_one(fpi::sqrt(fa0, fa1, rm), 0xffc00001).f == kCanonicalNan);
    CHECK(run_one(fpi::nmadd(fa0, fa1, fa2, fa3, rm), bits(1.0f), bits(1.0f), kQNanPayload).f == kCanonicalNan);
    CHECK(run_one(fpi::cvt_s_w(fa0, a1, rm), 0xffffffff).f == bits(-1.0f));
  }
}

TEST_CASE("an sNaN operand raises NV in arithmetic and a qNaN does not") {
  for (uint32_t rm : {kRne, kRmm}) {
    INFO(rm_name(rm));
    Run s = run_one(fpi::add(fa0, fa1, fa2, rm), bits(1.0f), kSNan);
    CHECK(s.f == kCanonicalNan);
    CHECK(s.fflags == kNV);
    CHECK(run_one(fpi::sqrt(fa0, fa1, rm), 0xff800005).fflags == kNV);
    CHECK(run_one(fpi::madd(fa0, fa1, fa2, fa3, rm), bits(1.0f), bits(1.0f), kSNan).fflags == kNV);
    CHECK(run_one(fpi::add(fa0, fa1, fa2, rm), bits(1.0f), kCanonicalNan).fflags == 0);
    // Registers an instruction does not read do not count: fsqrt has no rs2, fadd no rs3.
    CHECK(run_one(fpi::sqrt(fa0, fa1, rm), bits(4.0f), kSNan, kSNan).fflags == 0);
    CHECK(run_one(fpi::add(fa0, fa1, fa2, rm), bits(4.0f), bits(4.0f), kSNan).fflags == 0);
  }
}

TEST_CASE("fma raises NV for infinity times zero even when the addend is a quiet NaN") {
  for (uint32_t rm : {kRne, kRup, kRmm}) {
    INFO(rm_name(rm));
    Run r = run_one(fpi::madd(fa0, fa1, fa2, fa3, rm), kMinusInf, 0, kCanonicalNan);
    CHECK(r.f == kCanonicalNan);
    CHECK(r.fflags == kNV);
    CHECK(run_one(fpi::nmsub(fa0, fa1, fa2, fa3, rm), kMinusZero, kPlusInf, kQNanPayload).fflags == kNV);
  }
}

TEST_CASE("feq is quiet on a qNaN while flt and fle signal on any NaN") {
  Run eq_q = run_one(fpi::feq(a0, fa1, fa2), kCanonicalNan, bits(1.0f));
  CHECK(eq_q.x == 0);
  CHECK(eq_q.fflags == 0);
  Run eq_s = run_one(fpi::feq(a0, fa1, fa2), bits(1.0f), kSNan);
  CHECK(eq_s.x == 0);
  CHECK(eq_s.fflags == kNV);
  for (uint32_t insn : {fpi::flt(a0, fa1, fa2), fpi::fle(a0, fa1, fa2)}) {
    INFO(disassemble(insn, 0));
    Run q = run_one(insn, kCanonicalNan, bits(1.0f));
    CHECK(q.x == 0);
    CHECK(q.fflags == kNV);
    CHECK(run_one(insn, bits(1.0f), kSNan).fflags == kNV);
    CHECK(run_one(insn, kQNanPayload, kQNanPayload).x == 0);
  }
}

TEST_CASE("feq, flt and fle compare ordered values with -0 equal to +0") {
  CHECK(run_one(fpi::feq(a0, fa1, fa2), bits(1.0f), bits(1.0f)).x == 1);
  CHECK(run_one(fpi::feq(a0, fa1, fa2), bits(1.0f), bits(2.0f)).x == 0);
  CHECK(run_one(fpi::feq(a0, fa1, fa2), kMinusZero, 0).x == 1);
  CHECK(run_one(fpi::flt(a0, fa1, fa2), bits(1.0f), bits(2.0f)).x == 1);
  CHECK(run_one(fpi::flt(a0, fa1, fa2), bits(2.0f), bits(1.0f)).x == 0);
  CHECK(run_one(fpi::flt(a0, fa1, fa2), kMinusZero, 0).x == 0);
  CHECK(run_one(fpi::flt(a0, fa1, fa2), kMinusInf, bits(-1e30f)).x == 1);
  CHECK(run_one(fpi::fle(a0, fa1, fa2), bits(2.0f), bits(2.0f)).x == 1);
  CHECK(run_one(fpi::fle(a0, fa1, fa2), kMinusZero, 0).x == 1);
  CHECK(run_one(fpi::fle(a0, fa1, fa2), bits(3.0f), bits(2.0f)).x == 0);
  CHECK(run_one(fpi::fle(a0, fa1, fa2), bits(3.0f), bits(2.0f)).fflags == 0);
}

TEST_CASE("fmin and fmax return the other operand for one NaN and the canonical NaN for two") {
  Run min_q = run_one(fpi::min(fa0, fa1, fa2), kQNanPayload, bits(2.0f));
  CHECK(min_q.f == bits(2.0f));
  CHECK(min_q.fflags == 0);
  CHECK(run_one(fpi::max(fa0, fa1, fa2), bits(2.0f), kQNanPayload).f == bits(2.0f));
  Run min_s = run_one(fpi::min(fa0, fa1, fa2), kSNan, bits(-3.0f));
  CHECK(min_s.f == bits(-3.0f));
  CHECK(min_s.fflags == kNV);
  Run both_q = run_one(fpi::min(fa0, fa1, fa2), kQNanPayload, 0xffc00000);
  CHECK(both_q.f == kCanonicalNan);
  CHECK(both_q.fflags == 0);
  Run both_s = run_one(fpi::max(fa0, fa1, fa2), kQNanPayload, kSNan);
  CHECK(both_s.f == kCanonicalNan);
  CHECK(both_s.fflags == kNV);
}

TEST_CASE("fmin and fmax order -0 below +0 and compare other values numerically") {
  CHECK(run_one(fpi::min(fa0, fa1, fa2), kMinusZero, 0).f == kMinusZero);
  CHECK(run_one(fpi::min(fa0, fa1, fa2), 0, kMinusZero).f == kMinusZero);
  CHECK(run_one(fpi::max(fa0, fa1, fa2), kMinusZero, 0).f == 0u);
  CHECK(run_one(fpi::max(fa0, fa1, fa2), 0, kMinusZero).f == 0u);
  CHECK(run_one(fpi::min(fa0, fa1, fa2), bits(1.0f), bits(2.0f)).f == bits(1.0f));
  CHECK(run_one(fpi::max(fa0, fa1, fa2), bits(-1.0f), bits(-2.0f)).f == bits(-1.0f));
  CHECK(run_one(fpi::min(fa0, fa1, fa2), bits(5.0f), kMinusInf).f == kMinusInf);
  CHECK(run_one(fpi::max(fa0, fa1, fa2), bits(5.0f), kMinusInf).fflags == 0);
}

// --- Conversions to integers -----------------------------------------------------

TEST_CASE("fcvt.w.s saturates NaN, infinities and out-of-range values with NV") {
  struct Case {
    uint32_t in, out, flags;
  };
  for (Case k : {Case{bits(3e9f), 0x7fffffff, kNV},
                 {bits(-3e9f), 0x80000000, kNV},
                 {kCanonicalNan, 0x7fffffff, kNV},
                 {0xffc00000, 0x7fffffff, kNV},
                 {kSNan, 0x7fffffff, kNV},
                 {kPlusInf, 0x7fffffff, kNV},
                 {kMinusInf, 0x80000000, kNV},
                 {bits(2147483648.0f), 0x7fffffff, kNV},
                 {bits(-2147483648.0f), 0x80000000, 0},
                 {0x4effffff, 0x7fffff80, 0},
                 {kMinusZero, 0, 0},
                 {bits(-7.0f), uint32_t(-7), 0}}) {
    INFO(std::hex << k.in);
    Run r = run_one(fpi::cvt_w_s(a0, fa1, kRtz), k.in);
    CHECK(r.x == k.out);
    CHECK(r.fflags == k.flags);
  }
}

TEST_CASE("fcvt.wu.s saturates with NV, while a negative value rounding to zero is only inexact") {
  struct Case {
    uint32_t in, rm, out, flags;
  };
  for (Case k : {Case{bits(-1.0f), kRtz, 0, kNV},
                 {bits(-0.4f), kRtz, 0, kNX},
                 {bits(-0.4f), kRne, 0, kNX},
                 {bits(-0.4f), kRup, 0, kNX},
                 {bits(-0.4f), kRdn, 0, kNV},
                 {bits(-0.5f), kRmm, 0, kNV},
                 {bits(5e9f), kRtz, 0xffffffff, kNV},
                 {kCanonicalNan, kRtz, 0xffffffff, kNV},
                 {0xffc00000, kRne, 0xffffffff, kNV},
                 {kPlusInf, kRtz, 0xffffffff, kNV},
                 {kMinusInf, kRtz, 0, kNV},
                 {bits(4294967296.0f), kRtz, 0xffffffff, kNV},
                 {0x4f7fffff, kRtz, 0xffffff00, 0},
                 {bits(3e9f), kRne, 3000000000u, 0},
                 {kMinusZero, kRne, 0, 0},
                 {bits(2.5f), kRmm, 3, kNX}}) {
    INFO(std::hex << k.in << " " << rm_name(k.rm));
    Run r = run_one(fpi::cvt_wu_s(a0, fa1, k.rm), k.in);
    CHECK(r.x == k.out);
    CHECK(r.fflags == k.flags);
  }
}

TEST_CASE("float-to-integer conversions to x0 write nothing but still raise flags") {
  Run r = run_one(fpi::cvt_w_s(zero, fa1, kRtz), kCanonicalNan);
  CHECK(r.fflags == kNV);
  CHECK(r.exc.cause == Cause::None);
}

// --- Bit operations ---------------------------------------------------------------

TEST_CASE("fclass.s reports each of the ten classes") {
  struct Case {
    uint32_t in, mask;
  };
  for (Case k : {Case{kMinusInf, 1u << 0},
                 {bits(-1.0f), 1u << 1},
                 {0x80000001, 1u << 2},
                 {kMinusZero, 1u << 3},
                 {0, 1u << 4},
                 {0x007fffff, 1u << 5},
                 {bits(1.0f), 1u << 6},
                 {kPlusInf, 1u << 7},
                 {kSNan, 1u << 8},
                 {0xffa00000, 1u << 8},
                 {kCanonicalNan, 1u << 9},
                 {0xffc00001, 1u << 9}}) {
    INFO(std::hex << k.in);
    Run r = run_one(fpi::fclass(a0, fa1), k.in);
    CHECK(r.x == k.mask);
    CHECK(r.fflags == 0);
  }
}

TEST_CASE("fsgnj, fsgnjn and fsgnjx move sign bits only, without flags or NaN canonicalization") {
  CHECK(run_one(fpi::sgnj(fa0, fa1, fa2), bits(1.0f), bits(-2.0f)).f == bits(-1.0f));
  CHECK(run_one(fpi::sgnj(fa0, fa1, fa2), bits(-1.0f), bits(2.0f)).f == bits(1.0f));
  CHECK(run_one(fpi::sgnjn(fa0, fa1, fa2), bits(1.0f), bits(-2.0f)).f == bits(1.0f));
  CHECK(run_one(fpi::sgnjn(fa0, fa1, fa2), bits(1.0f), bits(2.0f)).f == bits(-1.0f));
  CHECK(run_one(fpi::sgnjx(fa0, fa1, fa2), bits(-1.0f), bits(-2.0f)).f == bits(1.0f));
  CHECK(run_one(fpi::sgnjx(fa0, fa1, fa2), bits(-1.0f), bits(2.0f)).f == bits(-1.0f));
  Run nan = run_one(fpi::sgnj(fa0, fa1, fa2), kSNan, bits(-1.0f));
  CHECK(nan.f == (kSNan | 0x80000000));
  CHECK(nan.fflags == 0);
  // fneg and fabs are fsgnjn and fsgnjx of a register with itself.
  CHECK(run_one(fpi::sgnjn(fa0, fa1, fa1), kQNanPayload).f == (kQNanPayload | 0x80000000));
  CHECK(run_one(fpi::sgnjx(fa0, fa1, fa1), 0xffc12345).f == kQNanPayload);
}

TEST_CASE("fmv.x.w and fmv.w.x copy bits unchanged") {
  Run to_x = run_one(fpi::mv_x_w(a0, fa1), 0xffc12345);
  CHECK(to_x.x == 0xffc12345);
  CHECK(to_x.fflags == 0);
  Run to_f = run_one(fpi::mv_w_x(fa0, a1), kSNan);
  CHECK(to_f.f == kSNan);
  CHECK(to_f.fflags == 0);
  CHECK(run_one(fpi::mv_x_w(zero, fa1), 0x12345678).exc.cause == Cause::None);
}

// --- Loads and stores ---------------------------------------------------------------

TEST_CASE("flw and fsw move raw bits through memory in every active lane") {
  Bench b;
  b.load({fpi::flw(fa0, a0, 4), fpi::fsw(fa1, a0, 8), vxi::tmc(zero)});
  for (uint32_t l = 0; l < 4; ++l) {
    b.x(a0, l) = Bench::kData + 16 * l;
    b.write32(Bench::kData + 16 * l + 4, l == 1 ? kSNan : 0x40000000 + l);
    b.f(fa1, l) = 0xffc00000 + l;
    b.f(fa0, l) = kSentinel;
  }
  b.write32(Bench::kData + 16 * 2 + 8, kSentinel);
  CHECK(b.run_warp(0b1011).cause == Cause::None);
  CHECK(b.f(fa0, 0) == 0x40000000);
  CHECK(b.f(fa0, 1) == kSNan);
  CHECK(b.f(fa0, 2) == kSentinel);  // inactive
  CHECK(b.f(fa0, 3) == 0x40000003);
  CHECK(b.read32(Bench::kData + 8) == 0xffc00000);
  CHECK(b.read32(Bench::kData + 16 + 8) == 0xffc00001);
  CHECK(b.read32(Bench::kData + 32 + 8) == kSentinel);
  CHECK(b.read32(Bench::kData + 48 + 8) == 0xffc00003);
  CHECK((b.warp().fcsr & 0x1f) == 0);
}

TEST_CASE("a misaligned flw faults and writes no lane") {
  Bench b;
  b.load({fpi::flw(fa0, a0, 0), vxi::tmc(zero)});
  for (uint32_t l = 0; l < 4; ++l) {
    b.x(a0, l) = Bench::kData + 4 * l;
    b.f(fa0, l) = kSentinel;
  }
  b.x(a0, 2) = Bench::kData + 10;
  DeviceException e = b.run_warp(0b1111);
  CHECK(e.cause == Cause::MisalignedLoad);
  CHECK(e.lane == 2);
  CHECK(e.addr == Bench::kData + 10);
  for (uint32_t l = 0; l < 4; ++l) CHECK(b.f(fa0, l) == kSentinel);
}

TEST_CASE("an fsw to an unmapped address faults and stores no lane") {
  Bench b;
  b.load({fpi::fsw(fa1, a0, 0), vxi::tmc(zero)});
  for (uint32_t l = 0; l < 4; ++l) {
    b.x(a0, l) = Bench::kData + 4 * l;
    b.f(fa1, l) = bits(1.0f);
  }
  b.x(a0, 3) = Bench::kData + 0x10000;  // just past the mapped data
  DeviceException e = b.run_warp(0b1111);
  CHECK(e.cause == Cause::StoreFault);
  CHECK(e.lane == 3);
  for (uint32_t l = 0; l < 3; ++l) CHECK(b.read32(Bench::kData + 4 * l) == 0);
}

// --- Lanes and fflags ----------------------------------------------------------------

TEST_CASE("each active lane computes its own result and inactive lanes keep theirs") {
  for (uint32_t rm : {kRne, kRmm}) {
    INFO(rm_name(rm));
    Bench b;
    // fa1 = fa1 * fa2: the destination is also a source.
    b.load({fpi::mul(fa1, fa1, fa2, rm), fpi::cvt_w_s(a0, fa1, rm), vxi::tmc(zero)});
    for (uint32_t l = 0; l < 4; ++l) {
      b.f(fa1, l) = bits(float(l + 1));
      b.f(fa2, l) = bits(2.5f);
      b.x(a0, l) = kSentinel;
    }
    CHECK(b.run_warp(0b1011).cause == Cause::None);
    CHECK(b.f(fa1, 0) == bits(2.5f));
    CHECK(b.f(fa1, 1) == bits(5.0f));
    CHECK(b.f(fa1, 2) == bits(3.0f));  // inactive: unchanged
    CHECK(b.f(fa1, 3) == bits(10.0f));
    CHECK(b.x(a0, 0) == (rm == kRmm ? 3u : 2u));  // 2.5: RNE to even, RMM away from zero
    CHECK(b.x(a0, 1) == 5);
    CHECK(b.x(a0, 2) == kSentinel);
    CHECK(b.x(a0, 3) == 10);
  }
}

TEST_CASE("fflags ORs the flags of the active lanes only") {
  for (uint32_t rm : {kRne, kRup, kRmm}) {
    INFO(rm_name(rm));
    Bench b;
    b.load({fpi::div(fa0, fa1, fa2, rm), vxi::tmc(zero)});
    const uint32_t num[] = {bits(1.0f), bits(1.0f), bits(8.0f), kFltMax};
    const uint32_t den[] = {bits(3.0f), 0, bits(2.0f), bits(0.5f)};
    for (uint32_t l = 0; l < 4; ++l) {
      b.f(fa1, l) = num[l];
      b.f(fa2, l) = den[l];
    }
    CHECK(b.run_warp(0b1111).cause == Cause::None);
    CHECK((b.warp().fcsr & 0x1f) == (kNX | kDZ | kOF));
    b.warp().fcsr = 0;
    CHECK(b.run_warp(0b0101).cause == Cause::None);  // the division by zero is in inactive lane 1
    CHECK((b.warp().fcsr & 0x1f) == kNX);
    b.warp().fcsr = 0;
    CHECK(b.run_warp(0b0100).cause == Cause::None);
    CHECK((b.warp().fcsr & 0x1f) == 0);
  }
}

TEST_CASE("fflags are sticky across instructions and keep frm") {
  Bench b;
  b.load({fpi::div(fa0, fa1, fa2), fpi::add(fa3, fa1, fa1), fpi::sqrt(fa3, fa2), vxi::tmc(zero)});
  b.f(fa1, 0) = bits(1.0f);
  b.f(fa2, 0) = 0;
  b.warp().fcsr = frm(kRup) | kNV;
  CHECK(b.run_warp(1).cause == Cause::None);
  // NV from before, DZ from 1/0; the exact add and sqrt(0) clear nothing.
  CHECK(b.warp().fcsr == (frm(kRup) | kNV | kDZ));
  b.load({fpi::div(fa0, fa1, fa2), vxi::tmc(zero)});
  b.f(fa2, 0) = bits(3.0f);
  CHECK(b.run_warp(1).cause == Cause::None);
  CHECK(b.warp().fcsr == (frm(kRup) | kNV | kDZ | kNX));
  CHECK(b.f(fa0, 0) == 0x3eaaaaab);  // 1/3 rounded up under DYN = RUP
}

// --- Random checks against an exact reference --------------------------------------

TEST_CASE("fadd, fsub, fmul and the fmas match an exact reference in every rounding mode") {
  std::mt19937 rng(20240611);
  Bench b;
  enum class Kind { Add, Sub, Mul, Madd, Nmsub };
  for (Kind kind : {Kind::Add, Kind::Sub, Kind::Mul, Kind::Madd, Kind::Nmsub}) {
    for (uint32_t rm : {kRne, kRtz, kRdn, kRup, kRmm}) {
      uint32_t insn = 0;
      switch (kind) {
        case Kind::Add: insn = fpi::add(fa0, fa1, fa2, rm); break;
        case Kind::Sub: insn = fpi::sub(fa0, fa1, fa2, rm); break;
        case Kind::Mul: insn = fpi::mul(fa0, fa1, fa2, rm); break;
        case Kind::Madd: insn = fpi::madd(fa0, fa1, fa2, fa3, rm); break;
        case Kind::Nmsub: insn = fpi::nmsub(fa0, fa1, fa2, fa3, rm); break;
      }
      b.load({insn, vxi::tmc(zero)});
      int mismatches = 0;
      for (int i = 0; i < 3000; ++i) {
        const uint32_t x = random_operand(rng), y = random_operand(rng), z = random_operand(rng);
        // Exact in long double: operands lie in [2^-3, 2^4), so a*b+c spans at most 61 bits.
        long double exact = 0;
        switch (kind) {
          case Kind::Add: exact = as_ld(x) + as_ld(y); break;
          case Kind::Sub: exact = as_ld(x) - as_ld(y); break;
          case Kind::Mul: exact = as_ld(x) * as_ld(y); break;
          case Kind::Madd: exact = as_ld(x) * as_ld(y) + as_ld(z); break;
          case Kind::Nmsub: exact = -(as_ld(x) * as_ld(y)) + as_ld(z); break;
        }
        b.f(fa1, 0) = x;
        b.f(fa2, 0) = y;
        b.f(fa3, 0) = z;
        b.warp().fcsr = 0;
        REQUIRE(b.run_warp(1).cause == Cause::None);
        const uint32_t expected = reference_round(exact, rm);
        const uint32_t expected_flags = static_cast<long double>(std::bit_cast<float>(expected)) == exact ? 0 : kNX;
        if (b.f(fa0, 0) != expected || (b.warp().fcsr & 0x1f) != expected_flags) {
          if (++mismatches <= 3)
            UNSCOPED_INFO(disassemble(insn, 0) << std::hex << " x=" << x << " y=" << y << " z=" << z
                                               << " got=" << b.f(fa0, 0) << " want=" << expected);
        }
      }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("fcvt.s.w matches an exact reference in every rounding mode") {
  std::mt19937 rng(7);
  Bench b;
  for (uint32_t rm : {kRne, kRtz, kRdn, kRup, kRmm}) {
    b.load({fpi::cvt_s_w(fa0, a1, rm), vxi::tmc(zero)});
    int mismatches = 0;
    for (int i = 0; i < 3000; ++i) {
      // Magnitudes of 2^20 to 2^31 with short and long bit patterns, so ties are frequent.
      const uint32_t width = 20 + rng() % 12;
      uint32_t v = (rng() & ((1u << width) - 1)) | (1u << (width - 1));
      if (rng() & 1) v &= ~((1u << (rng() % 8)) - 1);
      const int32_t s = (rng() & 1) ? -int32_t(v) : int32_t(v);
      b.x(a1, 0) = uint32_t(s);
      b.warp().fcsr = 0;
      REQUIRE(b.run_warp(1).cause == Cause::None);
      const uint32_t expected = reference_round(static_cast<long double>(s), rm);
      if (b.f(fa0, 0) != expected && ++mismatches <= 3)
        UNSCOPED_INFO(rm_name(rm) << " " << s << std::hex << " got=" << b.f(fa0, 0) << " want=" << expected);
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("RMM fdiv and fsqrt agree with RNE, since their normal results never tie") {
  std::mt19937 rng(99);
  Bench rne, rmm;
  rne.load({fpi::div(fa0, fa1, fa2, kRne), fpi::sqrt(fa3, fa1, kRne), vxi::tmc(zero)});
  rmm.load({fpi::div(fa0, fa1, fa2, kRmm), fpi::sqrt(fa3, fa1, kRmm), vxi::tmc(zero)});
  int mismatches = 0;
  for (int i = 0; i < 3000; ++i) {
    const uint32_t x = random_operand(rng) & 0x7fffffff, y = random_operand(rng);
    for (Bench* b : {&rne, &rmm}) {
      b->f(fa1, 0) = x;
      b->f(fa2, 0) = y;
      b->warp().fcsr = 0;
      REQUIRE(b->run_warp(1).cause == Cause::None);
    }
    if (rne.f(fa0, 0) != rmm.f(fa0, 0) || rne.f(fa3, 0) != rmm.f(fa3, 0) || rne.warp().fcsr != rmm.warp().fcsr)
      ++mismatches;
  }
  CHECK(mismatches == 0);
}

// --- Decoding --------------------------------------------------------------------

TEST_CASE("the F rows decode and disassemble with their operand syntax") {
  CHECK(disassemble(fpi::add(fa0, fa1, fa2), 0) == "fadd.s fa0, fa1, fa2");
  CHECK(disassemble(fpi::add(fa0, fa1, fa2, kRtz), 0) == "fadd.s fa0, fa1, fa2, rtz");
  CHECK(disassemble(fpi::madd(fa0, fa1, fa2, fa3, kRmm), 0) == "fmadd.s fa0, fa1, fa2, fa3, rmm");
  CHECK(disassemble(fpi::sqrt(fa0, fa1), 0) == "fsqrt.s fa0, fa1");
  CHECK(disassemble(fpi::cvt_w_s(a0, fa1, kRtz), 0) == "fcvt.w.s a0, fa1, rtz");
  CHECK(disassemble(fpi::cvt_s_wu(fa0, a1), 0) == "fcvt.s.wu fa0, a1");
  CHECK(disassemble(fpi::flw(fa0, a0, -8), 0) == "flw fa0, -8(a0)");
  CHECK(disassemble(fpi::fsw(fa1, sp, 12), 0) == "fsw fa1, 12(sp)");
  CHECK(disassemble(fpi::feq(a0, fa1, fa2), 0) == "feq.s a0, fa1, fa2");
  CHECK(disassemble(fpi::mv_w_x(fa0, a1), 0) == "fmv.w.x fa0, a1");
  CHECK(disassemble(fpi::fclass(a0, fa1), 0) == "fclass.s a0, fa1");
  // Non-zero rs2 in a unary encoding, or a double-precision fmt, is not an RV32F instruction.
  CHECK(find_row(fpi::sqrt(fa0, fa1) | (1u << 20)) == nullptr);
  CHECK(find_row(fpi::add(fa0, fa1, fa2) | (1u << 25)) == nullptr);
  CHECK(find_row(fpi::madd(fa0, fa1, fa2, fa3) | (1u << 25)) == nullptr);
  CHECK(fp_rows().size() == 26);
}

// Round-to-nearest arithmetic leaves its flags in the host FPU until the machine settles them into the
// warp that raised them (Machine::fp_claim). Four one-thread CTAs interleave by quantum on one core:
// odd CTAs divide inexactly, even ones add exactly, then each reads fflags mid-run and stores it. Host
// flags raised before run() (by the debugger's own code) belong to no warp.
TEST_CASE("lazily read FP flags reach only the warp that raised them, whatever interleaves") {
  constexpr uint32_t kBidX = 0xCD6;
  auto andi = [](uint32_t rd, uint32_t rs1, int32_t imm) { return i_type(imm, rs1, 7, rd, 0x13); };
  auto slli = [](uint32_t rd, uint32_t rs1, uint32_t sh) { return i_type(int32_t(sh), rs1, 1, rd, 0x13); };
  for (uint64_t seed : {1u, 2u, 3u}) {
    Bench b(DeviceConfig{}, RunOptions{seed, 1'000'000});
    const std::vector<uint32_t> kernel = {
        rv::lui(t3, 0x20),    // t3 = kData
        rv::csrr(t0, kBidX),  // t0 = blockIdx.x
        rv::li(t1, 1),
        fpi::cvt_s_w(fa1, t1),  // fa1 = 1.0
        rv::li(t1, 3),
        fpi::cvt_s_w(fa2, t1),          // fa2 = 3.0
        rv::li(t2, 40),                 // 40 iterations
        andi(t1, t0, 1),                // odd CTA?
        rv::beq(t1, zero, 20),          // even: to the exact loop
        fpi::div(fa0, fa1, fa2, kRne),  // odd loop: 1/3 is inexact
        rv::addi(t2, t2, -1),
        rv::bne(t2, zero, -8),
        rv::jal(zero, 16),
        fpi::add(fa0, fa1, fa1, kRne),  // even loop: 1 + 1 is exact
        rv::addi(t2, t2, -1),
        rv::bne(t2, zero, -8),
        rv::csrr(t1, 0x001),  // fflags, read mid-run
        slli(t6, t0, 2),
        rv::add(t6, t6, t3),
        rv::sw(t1, t6, 0),
        rv::ret(),
    };
    b.load_kernel(kernel);
    std::feraiseexcept(FE_INEXACT | FE_OVERFLOW);  // stray host flags before the run
    REQUIRE(b.run_grid({4, 1, 1}, {1, 1, 1}).stop == RunStop::LaunchDone);
    for (uint32_t cta = 0; cta < 4; ++cta) {
      INFO("seed " << seed << " CTA " << cta);
      CHECK(b.read32(Bench::kData + 4 * cta) == (cta % 2 ? kNX : 0u));
    }
  }
}

// The settle happens before every public entry returns: fcsr read straight from the state after step()
// holds what the instruction raised, and the host is left with no flag of an exact instruction.
TEST_CASE("fflags are settled into the warp state when step() returns") {
  Bench b;
  b.load({fpi::div(fa0, fa1, fa2, kRne), fpi::add(fa3, fa1, fa1, kRne), vxi::tmc(zero)});
  b.m.activate_warp(0, 0, Bench::kCode, 1);
  b.f(fa1, 0) = bits(1.0f);
  b.f(fa2, 0) = bits(3.0f);
  DeviceException exc;
  REQUIRE(b.m.step(0, 0, &exc).step == Step::Retire);
  CHECK((b.warp().fcsr & 0x1f) == kNX);
  std::feclearexcept(FE_ALL_EXCEPT);
  REQUIRE(b.m.step(0, 0, &exc).step == Step::Retire);
  CHECK((b.warp().fcsr & 0x1f) == kNX);
  CHECK(std::fetestexcept(FE_ALL_EXCEPT) == 0);  // the exact add raised nothing on the host either
}

// Fully active warps in round-to-nearest take fixed-width lane loops (vectorized, with the host's FMA
// when it has one): every lane's result and the warp's fflags must be those of the lane-by-lane path,
// which a one-lane mask takes. Operands mix ordinary values with every special class.
TEST_CASE("full warps in round-to-nearest compute what the lane-by-lane path computes, flags included") {
  std::mt19937 rng(977);
  const uint32_t specials[] = {0,       kMinusZero, kPlusInf,   kMinusInf,  kCanonicalNan, kQNanPayload, kSNan,
                               kFltMax, 0x00000001, 0x807fffff, 0x00800000, bits(1.0f),    bits(-3.0f),  bits(0.1f)};
  auto operand = [&]() {
    const uint32_t r = rng() % 4;
    if (r == 0) return specials[rng() % std::size(specials)];
    if (r == 1) return uint32_t(rng());  // anything, subnormals and NaN payloads too
    return random_operand(rng);
  };
  const uint32_t insns[] = {fpi::add(fa0, fa1, fa2, kRne),
                            fpi::sub(fa0, fa1, fa2, kRne),
                            fpi::mul(fa0, fa1, fa2, kRne),
                            fpi::div(fa0, fa1, fa2, kRne),
                            fpi::sqrt(fa0, fa1, kRne),
                            fpi::madd(fa0, fa1, fa2, fa3, kRne),
                            fpi::msub(fa0, fa1, fa2, fa3, kRne),
                            fpi::nmsub(fa0, fa1, fa2, fa3, kRne),
                            fpi::nmadd(fa0, fa1, fa2, fa3, kRne),
                            fpi::add(fa1, fa1, fa1, kRne)};  // rd == rs1 == rs2
  Bench one(DeviceConfig{1, 1, 4, 4});
  for (uint32_t n : {1u, 4u, 32u}) {
    Bench full(DeviceConfig{1, 1, 4, n});
    const uint32_t mask = n == 32 ? 0xffffffffu : (1u << n) - 1;
    for (uint32_t insn : insns) {
      full.load({insn, vxi::tmc(zero)});
      one.load({insn, vxi::tmc(zero)});
      for (int round = 0; round < 200; ++round) {
        uint32_t want_flags = 0;
        std::vector<uint32_t> want(n);
        for (uint32_t l = 0; l < n; ++l) {
          const uint32_t x = operand(), y = operand(), z = operand();
          full.f(fa1, l) = one.f(fa1, 0) = x;
          full.f(fa2, l) = one.f(fa2, 0) = y;
          full.f(fa3, l) = one.f(fa3, 0) = z;
          one.warp().fcsr = 0;
          REQUIRE(one.run_warp(1).cause == Cause::None);
          want[l] = insn == insns[9] ? one.f(fa1, 0) : one.f(fa0, 0);
          want_flags |= one.warp().fcsr & 0x1f;
        }
        full.warp().fcsr = 0;
        REQUIRE(full.run_warp(mask).cause == Cause::None);
        for (uint32_t l = 0; l < n; ++l) {
          INFO(disassemble(insn, 0) << " on " << n << " lanes, lane " << l << ", round " << round);
          REQUIRE((insn == insns[9] ? full.f(fa1, l) : full.f(fa0, l)) == want[l]);
        }
        INFO(disassemble(insn, 0) << " on " << n << " lanes, round " << round);
        REQUIRE((full.warp().fcsr & 0x1f) == want_flags);
      }
    }
  }
}

// The machine runs the AVX2+FMA copy of the round-to-nearest lane loops when the host has those
// instructions: the baseline copy, which other hosts run, must give the same bits and host flags.
TEST_CASE("the baseline and the AVX2+FMA round-to-nearest lane loops agree bit for bit, flags included") {
  std::mt19937 rng(31337);
  const uint32_t specials[] = {0,     kMinusZero, kPlusInf,   kMinusInf, kCanonicalNan,
                               kSNan, kFltMax,    0x00000001, 0x00800000};
  auto operand = [&]() { return rng() % 3 == 0 ? specials[rng() % std::size(specials)] : uint32_t(rng()); };
  for (FpOp op :
       {FpOp::Add, FpOp::Sub, FpOp::Mul, FpOp::Div, FpOp::Sqrt, FpOp::MAdd, FpOp::MSub, FpOp::NMSub, FpOp::NMAdd}) {
    for (unsigned nt : {1u, 2u, 4u, 8u, 16u, 32u}) {
      for (int round = 0; round < 100; ++round) {
        uint32_t a[32], b[32], c[32], out1[32], out2[32];
        for (unsigned l = 0; l < nt; ++l) a[l] = operand(), b[l] = operand(), c[l] = operand();
        uint32_t f1 = 0, f2 = 0;
        std::feclearexcept(FE_ALL_EXCEPT);
        REQUIRE(rne_full_lanes_baseline(op, nt, out1, a, b, c, &f1));
        const int host1 = std::fetestexcept(FE_ALL_EXCEPT);
        std::feclearexcept(FE_ALL_EXCEPT);
        REQUIRE(rne_full_lanes(op, nt, out2, a, b, c, &f2));
        const int host2 = std::fetestexcept(FE_ALL_EXCEPT);
        std::feclearexcept(FE_ALL_EXCEPT);
        INFO("op " << int(op) << " width " << nt << " round " << round);
        REQUIRE(std::equal(out1, out1 + nt, out2));
        REQUIRE(f1 == f2);
        REQUIRE(host1 == host2);
      }
    }
  }
}
