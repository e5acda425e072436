// The integer ISA: RV32I, M, A, Zicond, Zicsr and the trap instructions, run
// on one warp of a bare machine (default shape: 4 lanes per warp).
#include <catch2/catch.hpp>

#include "device/test_support.hpp"

using namespace vx;
using namespace vx::test;

namespace {

constexpr uint32_t kOp = 0x33, kOpImm = 0x13, kLoad = 0x03, kStore = 0x23, kAmo = 0x2f, kSystem = 0x73;

constexpr uint32_t op(uint32_t f7, uint32_t f3, uint32_t rd, uint32_t rs1, uint32_t rs2) {
  return r_type(f7, rs2, rs1, f3, rd, kOp);
}
constexpr uint32_t opimm(uint32_t f3, uint32_t rd, uint32_t rs1, int32_t imm) {
  return i_type(imm, rs1, f3, rd, kOpImm);
}
constexpr uint32_t shifti(uint32_t f7, uint32_t f3, uint32_t rd, uint32_t rs1, uint32_t shamt) {
  return i_type(int32_t((f7 << 5) | shamt), rs1, f3, rd, kOpImm);
}
constexpr uint32_t load(uint32_t f3, uint32_t rd, uint32_t rs1, int32_t imm) { return i_type(imm, rs1, f3, rd, kLoad); }
constexpr uint32_t store(uint32_t f3, uint32_t rs2, uint32_t rs1, int32_t imm) {
  return s_type(imm, rs2, rs1, f3, kStore);
}
constexpr uint32_t branch(uint32_t f3, uint32_t rs1, uint32_t rs2, int32_t off) { return b_type(off, rs2, rs1, f3); }
constexpr uint32_t amo(uint32_t f5, uint32_t rd, uint32_t rs1, uint32_t rs2) {
  return r_type(f5 << 2, rs2, rs1, 2, rd, kAmo);
}
constexpr uint32_t csr(uint32_t f3, uint32_t rd, uint32_t number, uint32_t rs1_or_zimm) {
  return i_type(int32_t(number), rs1_or_zimm, f3, rd, kSystem);
}
constexpr uint32_t jalr(uint32_t rd, uint32_t rs1, int32_t imm) { return i_type(imm, rs1, 0, rd, 0x67); }
constexpr uint32_t auipc(uint32_t rd, uint32_t imm20) { return u_type(imm20, rd, 0x17); }
constexpr uint32_t fence() { return 0x0ff0000f; }
constexpr uint32_t fence_i() { return 0x0000100f; }
constexpr uint32_t mret() { return 0x30200073; }

// funct3 / funct5 values.
enum : uint32_t { kLb = 0, kLh = 1, kLw = 2, kLbu = 4, kLhu = 5 };
enum : uint32_t { kBeq = 0, kBne = 1, kBlt = 4, kBge = 5, kBltu = 6, kBgeu = 7 };
enum : uint32_t {
  kAmoAdd = 0x00,
  kAmoSwap = 0x01,
  kLr = 0x02,
  kSc = 0x03,
  kAmoXor = 0x04,
  kAmoOr = 0x08,
  kAmoAnd = 0x0c,
  kAmoMin = 0x10,
  kAmoMax = 0x14,
  kAmoMinu = 0x18,
  kAmoMaxu = 0x1c
};
enum : uint32_t { kCsrrw = 1, kCsrrs = 2, kCsrrc = 3, kCsrrwi = 5, kCsrrsi = 6, kCsrrci = 7 };

constexpr uint32_t kThreadId = 0xCC0, kWarpId = 0xCC1, kNumThreads = 0xFC0, kMhartid = 0xF14, kMscratch = 0x340,
                   kMtvec = 0x305, kMepc = 0x341, kMcause = 0x342;

constexpr uint32_t kAll = 0xf;              // every lane of the default 4-lane warp
constexpr uint32_t kUnmapped = 0x10000000;  // neither the bench nor the machine maps it
constexpr uint32_t kIntMin = 0x80000000u;

// Sets `reg` in lanes 0..3 to the given values.
void set_lanes(Bench& b, uint32_t reg, std::array<uint32_t, 4> v) {
  for (uint32_t l = 0; l < 4; ++l) b.x(reg, l) = v[l];
}

std::array<uint32_t, 4> lanes(Bench& b, uint32_t reg) { return {b.x(reg, 0), b.x(reg, 1), b.x(reg, 2), b.x(reg, 3)}; }

using Lanes = std::array<uint32_t, 4>;

// Runs the program and requires that the warp retired without an exception.
void run_ok(Bench& b, uint32_t tmask = kAll) {
  DeviceException e = b.run_warp(tmask);
  INFO(e.to_string());
  REQUIRE(e.cause == Cause::None);
  REQUIRE_FALSE(b.warp().active);
}

}  // namespace

TEST_CASE("ADD and SUB wrap around on overflow") {
  Bench b;
  b.load({rv::add(a0, a1, a2), op(0x20, 0, a3, a1, a2), op(0x20, 0, a4, zero, a1), vxi::tmc(zero)});
  set_lanes(b, a1, {0x7fffffff, 0xffffffff, kIntMin, 5});
  set_lanes(b, a2, {1, 1, 1, 7});
  run_ok(b);
  CHECK(lanes(b, a0) == Lanes{kIntMin, 0, 0x80000001, 12});
  CHECK(lanes(b, a3) == Lanes{0x7ffffffe, 0xfffffffe, 0x7fffffff, 0xfffffffe});
  CHECK(lanes(b, a4) == Lanes{0x80000001, 1, kIntMin, 0xfffffffb});
}

TEST_CASE("SLT and SLTI compare signed while SLTU and SLTIU compare unsigned") {
  Bench b;
  b.load({op(0, 2, a0, a1, a2), op(0, 3, a3, a1, a2), opimm(2, a4, a1, 0), opimm(3, a5, a1, -1), vxi::tmc(zero)});
  set_lanes(b, a1, {0xffffffff, 1, 0xfffffffe, 0});
  set_lanes(b, a2, {1, 0xffffffff, 0xffffffff, 0});
  run_ok(b);
  CHECK(lanes(b, a0) == Lanes{1, 0, 1, 0});  // signed: -1 < 1, 1 > -1, -2 < -1, 0 == 0
  CHECK(lanes(b, a3) == Lanes{0, 1, 1, 0});  // unsigned: 0xffffffff > 1
  CHECK(lanes(b, a4) == Lanes{1, 0, 1, 0});  // slti x, 0: negative
  CHECK(lanes(b, a5) == Lanes{0, 1, 1, 1});  // sltiu x, -1 compares with 0xffffffff
}

TEST_CASE("register shifts use only the low five bits of rs2 and SRA fills with the sign bit") {
  Bench b;
  b.load({op(0, 1, a0, a1, a2), op(0, 5, a3, a1, a2), op(0x20, 5, a4, a1, a2), shifti(0x20, 5, a5, a1, 31),
          shifti(0, 5, a6, a1, 31), shifti(0, 1, a7, a1, 31), vxi::tmc(zero)});
  set_lanes(b, a1, {0x80000001, 0x80000001, 0x40000000, 0xf0000000});
  set_lanes(b, a2, {33, 32, 63, 4});
  run_ok(b);
  CHECK(lanes(b, a0) == Lanes{0x00000002, 0x80000001, 0x00000000, 0x00000000});
  CHECK(lanes(b, a3) == Lanes{0x40000000, 0x80000001, 0x00000000, 0x0f000000});
  CHECK(lanes(b, a4) == Lanes{0xc0000000, 0x80000001, 0x00000000, 0xff000000});
  CHECK(lanes(b, a5) == Lanes{0xffffffff, 0xffffffff, 0x00000000, 0xffffffff});
  CHECK(lanes(b, a6) == Lanes{1, 1, 0, 1});
  CHECK(lanes(b, a7) == Lanes{kIntMin, kIntMin, 0, 0});
}

TEST_CASE("XOR, OR, AND and their immediate forms sign-extend the immediate") {
  Bench b;
  b.load({op(0, 4, a0, a1, a2), op(0, 6, a3, a1, a2), op(0, 7, a4, a1, a2), opimm(4, a5, a1, -1),
          opimm(6, a6, a1, 0x800), opimm(7, a7, a1, 0x7f0), vxi::tmc(zero)});
  set_lanes(b, a1, {0x0ff00ff0, 0, 0xffffffff, 0x12345678});
  set_lanes(b, a2, {0x00ffff00, 0, 0x0000ffff, 0x12345678});
  run_ok(b);
  CHECK(lanes(b, a0) == Lanes{0x0f0ff0f0, 0, 0xffff0000, 0});
  CHECK(lanes(b, a3) == Lanes{0x0ffffff0, 0, 0xffffffff, 0x12345678});
  CHECK(lanes(b, a4) == Lanes{0x00f00f00, 0, 0x0000ffff, 0x12345678});
  CHECK(lanes(b, a5) == Lanes{0xf00ff00f, 0xffffffff, 0, 0xedcba987});
  CHECK(lanes(b, a6) == Lanes{0xfffff800 | 0x0ff00ff0, 0xfffff800, 0xffffffff, 0xfffffe78});
  CHECK(lanes(b, a7) == Lanes{0x000007f0 & 0x0ff00ff0, 0, 0x7f0, 0x670});
}

TEST_CASE("ADDI adds a sign-extended immediate and only active lanes are written") {
  Bench b;
  b.load({rv::addi(a0, a1, -2048), rv::addi(a3, a1, 2047), vxi::tmc(zero)});
  set_lanes(b, a1, {0, 1, 2, 3});
  set_lanes(b, a0, {9, 9, 9, 9});
  run_ok(b, 0b0101);
  CHECK(lanes(b, a0) == Lanes{0xfffff800, 9, 0xfffff802, 9});
  CHECK(lanes(b, a3) == Lanes{2047, 0, 2049, 0});
}

TEST_CASE("LB and LH sign-extend while LBU and LHU zero-extend") {
  Bench b;
  b.write32(Bench::kData, 0xff81807f);  // bytes 7f 80 81 ff
  b.load({load(kLb, a0, a1, 0), load(kLb, a2, a1, 1), load(kLbu, a3, a1, 1), load(kLh, a4, a1, 2),
          load(kLhu, a5, a1, 2), load(kLh, a6, a1, 0), load(kLw, a7, a1, 0), vxi::tmc(zero)});
  b.x(a1, 0) = Bench::kData;
  run_ok(b, 0b1);
  CHECK(b.x(a0, 0) == 0x7f);
  CHECK(b.x(a2, 0) == 0xffffff80);
  CHECK(b.x(a3, 0) == 0x80);
  CHECK(b.x(a4, 0) == 0xffffff81);
  CHECK(b.x(a5, 0) == 0xff81);
  CHECK(b.x(a6, 0) == 0xffff807f);
  CHECK(b.x(a7, 0) == 0xff81807f);
}

TEST_CASE("each lane loads from its own address, including a negative offset") {
  Bench b;
  for (uint32_t i = 0; i < 4; ++i) b.write32(Bench::kData + 4 * i, 100 + i);
  b.load({rv::lw(a0, a1, -4), vxi::tmc(zero)});
  set_lanes(b, a1, {Bench::kData + 16, Bench::kData + 8, Bench::kData + 12, Bench::kData + 4});
  run_ok(b);
  CHECK(lanes(b, a0) == Lanes{103, 101, 102, 100});
}

TEST_CASE("SB and SH store the low bytes of rs2 and leave the rest of the word") {
  Bench b;
  for (uint32_t i = 0; i < 4; ++i) b.write32(Bench::kData + 4 * i, 0xaaaaaaaa);
  b.load({store(0, a2, a1, 0), store(1, a3, a1, 2), vxi::tmc(zero)});
  for (uint32_t l = 0; l < 4; ++l) {
    b.x(a1, l) = Bench::kData + 4 * l;
    b.x(a2, l) = 0x11223340 + l;
    b.x(a3, l) = 0x55667780 + l;
  }
  run_ok(b);
  for (uint32_t l = 0; l < 4; ++l) CHECK(b.read32(Bench::kData + 4 * l) == ((0x7780 + l) << 16 | 0xaa00 | (0x40 + l)));
}

TEST_CASE("lanes storing to the same word leave the highest lane's value") {
  Bench b;
  b.load({rv::sw(a2, a1, 0), vxi::tmc(zero)});
  set_lanes(b, a1, {Bench::kData, Bench::kData, Bench::kData, Bench::kData + 4});
  set_lanes(b, a2, {10, 11, 12, 13});
  run_ok(b);
  CHECK(b.read32(Bench::kData) == 12);
  CHECK(b.read32(Bench::kData + 4) == 13);
}

TEST_CASE("DIV and REM by zero give all ones and the dividend, INT_MIN / -1 gives INT_MIN remainder 0") {
  Bench b;
  b.load({op(1, 4, a0, a1, a2), op(1, 5, a3, a1, a2), op(1, 6, a4, a1, a2), op(1, 7, a5, a1, a2), vxi::tmc(zero)});
  set_lanes(b, a1, {7, kIntMin, uint32_t(-7), 7});
  set_lanes(b, a2, {0, uint32_t(-1), 2, uint32_t(-2)});
  run_ok(b);
  CHECK(lanes(b, a0) == Lanes{0xffffffff, kIntMin, uint32_t(-3), uint32_t(-3)});  // div rounds toward zero
  CHECK(lanes(b, a3) == Lanes{0xffffffff, 0, 0x7ffffffc, 0});                     // divu
  CHECK(lanes(b, a4) == Lanes{7, 0, uint32_t(-1), 1});                            // rem has the dividend's sign
  CHECK(lanes(b, a5) == Lanes{7, kIntMin, 1, 7});                                 // remu
}

TEST_CASE("MUL keeps the low word and MULH, MULHSU, MULHU give the high word with their signedness") {
  Bench b;
  b.load({op(1, 0, a0, a1, a2), op(1, 1, a3, a1, a2), op(1, 2, a4, a1, a2), op(1, 3, a5, a1, a2), vxi::tmc(zero)});
  set_lanes(b, a1, {uint32_t(-2), 3, kIntMin, 0xffffffff});
  set_lanes(b, a2, {3, uint32_t(-2), kIntMin, 0xffffffff});
  run_ok(b);
  CHECK(lanes(b, a0) == Lanes{uint32_t(-6), uint32_t(-6), 0, 1});
  CHECK(lanes(b, a3) == Lanes{0xffffffff, 0xffffffff, 0x40000000, 0});  // (-1) * (-1) = 1
  CHECK(lanes(b, a4) == Lanes{0xffffffff, 2, 0xc0000000, 0xffffffff});  // rs1 signed, rs2 unsigned
  CHECK(lanes(b, a5) == Lanes{2, 2, 0x40000000, 0xfffffffe});
}

TEST_CASE("CZERO.EQZ zeroes rd when rs2 is zero and CZERO.NEZ when it is not") {
  Bench b;
  b.load({op(7, 5, a0, a1, a2), op(7, 7, a3, a1, a2), vxi::tmc(zero)});
  set_lanes(b, a1, {11, 22, 33, 44});
  set_lanes(b, a2, {0, 1, 0, kIntMin});
  run_ok(b);
  CHECK(lanes(b, a0) == Lanes{0, 22, 0, 44});
  CHECK(lanes(b, a3) == Lanes{11, 0, 33, 0});
}

TEST_CASE("LUI loads the upper immediate and AUIPC adds it to the pc") {
  Bench b;
  b.load({rv::lui(a0, 0x12345), auipc(a1, 0x1), auipc(a2, 0xfffff), vxi::tmc(zero)});
  run_ok(b);
  CHECK(lanes(b, a0) == Lanes{0x12345000, 0x12345000, 0x12345000, 0x12345000});
  CHECK(b.x(a1, 3) == Bench::kCode + 4 + 0x1000);
  CHECK(b.x(a2, 0) == Bench::kCode + 8 - 0x1000);
}

TEST_CASE("JAL writes pc + 4 to rd in every active lane and jumps") {
  Bench b;
  b.load({rv::jal(ra, 8), rv::li(a0, 1), rv::li(a1, 2), vxi::tmc(zero)});
  run_ok(b);
  CHECK(lanes(b, ra) == Lanes{Bench::kCode + 4, Bench::kCode + 4, Bench::kCode + 4, Bench::kCode + 4});
  CHECK(lanes(b, a0) == Lanes{0, 0, 0, 0});
  CHECK(lanes(b, a1) == Lanes{2, 2, 2, 2});
}

TEST_CASE("JALR jumps to the highest active lane's rs1 + imm with bit 0 cleared and links even when rd is rs1") {
  Bench b;
  b.load({jalr(a1, a1, 1), rv::li(a0, 1), rv::li(a0, 2), rv::li(a2, 3), vxi::tmc(zero)});
  // Lanes 0..2 would land on the first li; the highest active lane (3) decides: (kCode + 12 + 1) & ~1.
  set_lanes(b, a1, {Bench::kCode + 3, Bench::kCode + 3, Bench::kCode + 3, Bench::kCode + 12});
  run_ok(b);
  CHECK(lanes(b, a1) == Lanes{Bench::kCode + 4, Bench::kCode + 4, Bench::kCode + 4, Bench::kCode + 4});
  CHECK(lanes(b, a0) == Lanes{0, 0, 0, 0});
  CHECK(lanes(b, a2) == Lanes{3, 3, 3, 3});
}

TEST_CASE("conditional branches are taken or not per their comparison") {
  Bench b;
  b.load({branch(kBeq, a1, a2, 8), rv::li(t0, 1), branch(kBne, a1, a2, 8), rv::li(t1, 1), branch(kBlt, a1, a2, 8),
          rv::li(t2, 1), branch(kBge, a1, a2, 8), rv::li(s0, 1), branch(kBltu, a1, a2, 8), rv::li(s1, 1),
          branch(kBgeu, a1, a2, 8), rv::li(a3, 1), branch(kBeq, a1, a1, 8), rv::li(a4, 1), vxi::tmc(zero)});
  set_lanes(b, a1, {uint32_t(-1), uint32_t(-1), uint32_t(-1), uint32_t(-1)});
  set_lanes(b, a2, {1, 1, 1, 1});
  run_ok(b);
  CHECK(b.x(t0, 0) == 1);  // beq -1, 1: not taken
  CHECK(b.x(t1, 0) == 0);  // bne: taken
  CHECK(b.x(t2, 0) == 0);  // blt -1 < 1: taken
  CHECK(b.x(s0, 0) == 1);  // bge: not taken
  CHECK(b.x(s1, 0) == 1);  // bltu 0xffffffff < 1: not taken
  CHECK(b.x(a3, 0) == 0);  // bgeu: taken
  CHECK(b.x(a4, 0) == 0);  // beq x, x: taken
  CHECK(b.m.stats().divergent_branches == 0);
}

TEST_CASE("a branch whose lanes disagree follows the highest active lane and counts a divergent branch") {
  auto program = {branch(kBeq, a1, zero, 8), rv::li(a0, 1), vxi::tmc(zero)};
  {
    Bench b;  // lane 0 wants the branch, lane 3 does not: not taken
    b.load(program);
    set_lanes(b, a1, {0, 1, 1, 1});
    run_ok(b);
    CHECK(lanes(b, a0) == Lanes{1, 1, 1, 1});
    CHECK(b.m.stats().divergent_branches == 1);
  }
  {
    Bench b;  // lane 3 wants it: taken by the whole warp
    b.load(program);
    set_lanes(b, a1, {1, 1, 1, 0});
    run_ok(b);
    CHECK(lanes(b, a0) == Lanes{0, 0, 0, 0});
    CHECK(b.m.stats().divergent_branches == 1);
  }
  {
    Bench b;  // only the agreeing lanes are active: no divergence, inactive lanes do not vote
    b.load(program);
    set_lanes(b, a1, {0, 1, 0, 1});
    run_ok(b, 0b0101);
    CHECK(b.x(a0, 0) == 0);
    CHECK(b.m.stats().divergent_branches == 0);
  }
}

TEST_CASE("a divergent branch is recorded once per pc with the lanes' directions of its first time") {
  // A loop around the branch: it diverges on every iteration at the same pc.
  auto program = {rv::li(a2, 3),        branch(kBeq, a1, zero, 8),   rv::li(a0, 1),
                  rv::addi(a2, a2, -1), branch(kBne, a2, zero, -12), vxi::tmc(zero)};
  Bench b;
  b.load(program);
  set_lanes(b, a1, {0, 1, 0, 1});
  run_ok(b);
  CHECK(b.m.stats().divergent_branches == 3);
  const auto& d = b.m.divergent_branches();
  REQUIRE(d.size() == 1);
  CHECK(d[0].pc == Bench::kCode + 4);
  CHECK(d[0].taken == 0b0101);
  CHECK(d[0].not_taken == 0b1010);
  CHECK(d[0].count == 3);
}

TEST_CASE("with strict branches a divergent branch is a device exception before it executes") {
  RunOptions opts{1, 1'000'000};
  opts.strict_branches = true;
  Bench b(DeviceConfig{}, opts);
  b.load({rv::li(a0, 7), branch(kBeq, a1, zero, 8), rv::li(a0, 1), vxi::tmc(zero)});
  set_lanes(b, a1, {0, 1, 1, 1});  // lane 3 decides "not taken", overruling lane 0
  DeviceException e = b.run_warp(kAll);
  CHECK(e.cause == Cause::DivergentBranch);
  CHECK(e.pc == Bench::kCode + 4);
  CHECK(e.lane == 0);
  CHECK(e.addr == 0b0001);
  CHECK(b.warp().pc == Bench::kCode + 4);
  CHECK(b.m.divergent_branches().empty());
  CHECK(lanes(b, a0) == Lanes{7, 7, 7, 7});
}

TEST_CASE("a misaligned load faults with the lane and address and writes no lane") {
  Bench b;
  b.load({rv::lw(a0, a1, 2), vxi::tmc(zero)});
  set_lanes(b, a1, {Bench::kData - 2, Bench::kData + 2, Bench::kData + 4, Bench::kData + 7});
  set_lanes(b, a0, {5, 6, 7, 8});
  b.write32(Bench::kData, 0x1234);
  DeviceException e = b.run_warp(kAll);
  CHECK(e.cause == Cause::MisalignedLoad);
  CHECK(e.lane == 2);  // lanes 2 and 3 are misaligned: the lowest faulting lane is reported
  CHECK(e.addr == Bench::kData + 6);
  CHECK(e.pc == Bench::kCode);
  CHECK(lanes(b, a0) == Lanes{5, 6, 7, 8});
  CHECK(b.warp().pc == Bench::kCode);
}

TEST_CASE("a load from unmapped memory is a load fault that leaves rd untouched") {
  Bench b;
  b.load({load(kLh, a0, a1, 0), vxi::tmc(zero)});
  set_lanes(b, a1, {Bench::kData, Bench::kData, kUnmapped + 2, Bench::kData});
  DeviceException e = b.run_warp(kAll);
  CHECK(e.cause == Cause::LoadFault);
  CHECK(e.lane == 2);
  CHECK(e.addr == kUnmapped + 2);
  CHECK(lanes(b, a0) == Lanes{0, 0, 0, 0});
}

TEST_CASE("addresses below 0x40 fault even after the page that holds them was accessed") {
  // The I/O region starts at 0x40 in page 0: once a console word of that page was read and
  // written, the data path's page cache must still refuse 0x0..0x3f (a null pointer).
  Bench b;
  b.load({rv::lw(a2, a1, 0), rv::sw(a2, a1, 0), rv::lw(a0, a3, 0), vxi::tmc(zero)});
  set_lanes(b, a1, {0x800, 0x804, 0x808, 0x80c});
  set_lanes(b, a3, {0x40, 0x44, 0x3c, 0x48});
  set_lanes(b, a0, {5, 6, 7, 8});
  DeviceException e = b.run_warp(kAll);
  CHECK(e.cause == Cause::LoadFault);
  CHECK(e.lane == 2);
  CHECK(e.addr == 0x3c);
  CHECK(lanes(b, a0) == Lanes{5, 6, 7, 8});
  Bench s;
  s.load({rv::sw(a2, a1, 0), rv::sw(a2, a3, 0), vxi::tmc(zero)});
  set_lanes(s, a1, {0x800, 0x804, 0x808, 0x80c});
  set_lanes(s, a3, {0x0, 0x800, 0x804, 0x808});
  e = s.run_warp(kAll);
  CHECK(e.cause == Cause::StoreFault);
  CHECK(e.lane == 0);
  CHECK(e.addr == 0x0);
}

TEST_CASE("a misaligned store faults precisely: no lane's store happens") {
  Bench b;
  b.load({store(1, a2, a1, 0), vxi::tmc(zero)});
  set_lanes(b, a1, {Bench::kData, Bench::kData + 4, Bench::kData + 9, Bench::kData + 12});
  set_lanes(b, a2, {0xffff, 0xffff, 0xffff, 0xffff});
  DeviceException e = b.run_warp(kAll);
  CHECK(e.cause == Cause::MisalignedStore);
  CHECK(e.lane == 2);
  CHECK(e.addr == Bench::kData + 9);
  for (uint32_t i = 0; i < 4; ++i) CHECK(b.read32(Bench::kData + 4 * i) == 0);
}

TEST_CASE("a store to unmapped memory in the highest lane is a store fault and lower lanes store nothing") {
  Bench b;
  b.load({rv::sw(a2, a1, 0), vxi::tmc(zero)});
  set_lanes(b, a1, {Bench::kData, Bench::kData + 4, Bench::kData + 8, kUnmapped});
  set_lanes(b, a2, {1, 2, 3, 4});
  DeviceException e = b.run_warp(kAll);
  CHECK(e.cause == Cause::StoreFault);
  CHECK(e.lane == 3);
  CHECK(e.addr == kUnmapped);
  for (uint32_t i = 0; i < 3; ++i) CHECK(b.read32(Bench::kData + 4 * i) == 0);
}

TEST_CASE("AMOADD and AMOSWAP on one word run lane by lane, lowest lane first") {
  Bench b;
  b.write32(Bench::kData, 100);
  b.load({amo(kAmoAdd, a0, a1, a2), amo(kAmoSwap, a3, a1, a2), vxi::tmc(zero)});
  set_lanes(b, a1, {Bench::kData, Bench::kData, Bench::kData, Bench::kData});
  set_lanes(b, a2, {1, 2, 4, 8});
  run_ok(b);
  CHECK(lanes(b, a0) == Lanes{100, 101, 103, 107});  // each lane sees the value before its own add
  CHECK(lanes(b, a3) == Lanes{115, 1, 2, 4});
  CHECK(b.read32(Bench::kData) == 8);
}

TEST_CASE("AMOMIN and AMOMAX compare signed, AMOMINU and AMOMAXU unsigned") {
  Bench b;
  for (uint32_t i = 0; i < 4; ++i) b.write32(Bench::kData + 4 * i, uint32_t(-5));
  b.load({amo(kAmoMin, a0, a1, a2), amo(kAmoMax, a0, a3, a2), amo(kAmoMinu, a0, a4, a2), amo(kAmoMaxu, a5, a6, a2),
          vxi::tmc(zero)});
  b.x(a1, 0) = Bench::kData;
  b.x(a3, 0) = Bench::kData + 4;
  b.x(a4, 0) = Bench::kData + 8;
  b.x(a6, 0) = Bench::kData + 12;
  b.x(a2, 0) = 3;
  run_ok(b, 0b1);
  CHECK(b.read32(Bench::kData) == uint32_t(-5));
  CHECK(b.read32(Bench::kData + 4) == 3);
  CHECK(b.read32(Bench::kData + 8) == 3);
  CHECK(b.read32(Bench::kData + 12) == uint32_t(-5));
  CHECK(b.x(a0, 0) == uint32_t(-5));
  CHECK(b.x(a5, 0) == uint32_t(-5));
}

TEST_CASE("AMOXOR, AMOAND and AMOOR combine memory with rs2 and return the old value") {
  Bench b;
  for (uint32_t i = 0; i < 3; ++i) b.write32(Bench::kData + 4 * i, 0x0ff0);
  b.load({amo(kAmoXor, a0, a1, a2), amo(kAmoAnd, a3, a4, a2), amo(kAmoOr, a5, a6, a2), vxi::tmc(zero)});
  b.x(a1, 0) = Bench::kData;
  b.x(a4, 0) = Bench::kData + 4;
  b.x(a6, 0) = Bench::kData + 8;
  b.x(a2, 0) = 0x00ff;
  run_ok(b, 0b1);
  CHECK(b.read32(Bench::kData) == 0x0f0f);
  CHECK(b.read32(Bench::kData + 4) == 0x00f0);
  CHECK(b.read32(Bench::kData + 8) == 0x0fff);
  CHECK(b.x(a0, 0) == 0x0ff0);
  CHECK(b.x(a3, 0) == 0x0ff0);
  CHECK(b.x(a5, 0) == 0x0ff0);
}

TEST_CASE("an AMO checks every lane before updating any: a misaligned lane faults as a store") {
  Bench b;
  b.write32(Bench::kData, 1);
  b.load({amo(kAmoAdd, a0, a1, a2), vxi::tmc(zero)});
  set_lanes(b, a1, {Bench::kData, Bench::kData, Bench::kData, Bench::kData + 2});
  set_lanes(b, a2, {1, 1, 1, 1});
  set_lanes(b, a0, {9, 9, 9, 9});
  DeviceException e = b.run_warp(kAll);
  CHECK(e.cause == Cause::MisalignedStore);
  CHECK(e.lane == 3);
  CHECK(e.addr == Bench::kData + 2);
  CHECK(b.read32(Bench::kData) == 1);
  CHECK(lanes(b, a0) == Lanes{9, 9, 9, 9});
}

TEST_CASE("SC.W succeeds after LR.W on the same address and any SC.W, failed or not, clears the reservation") {
  Bench b;
  b.write32(Bench::kData, 41);
  b.load({amo(kLr, a0, a1, zero), amo(kSc, a3, a1, a2), amo(kSc, a4, a1, a2), amo(kLr, a0, a1, zero),
          amo(kSc, a5, a6, a2), amo(kSc, a7, a1, a2), vxi::tmc(zero)});
  b.x(a1, 0) = Bench::kData;
  b.x(a6, 0) = Bench::kData + 4;
  b.x(a2, 0) = 42;
  run_ok(b, 0b1);
  CHECK(b.x(a0, 0) == 42);  // the second LR sees the first SC's store
  CHECK(b.x(a3, 0) == 0);   // success
  CHECK(b.x(a4, 0) == 1);   // the reservation was consumed
  CHECK(b.x(a5, 0) == 1);   // reserved kData, not kData + 4: no store there
  CHECK(b.x(a7, 0) == 1);   // the failed SC to kData + 4 still cleared the reservation of kData
  CHECK(b.read32(Bench::kData + 4) == 0);
}

TEST_CASE("of several lanes holding a reservation on one word, only the lowest lane's SC.W succeeds") {
  Bench b;
  b.write32(Bench::kData, 5);
  b.load({amo(kLr, a0, a1, zero), rv::addi(a2, a0, 1), amo(kSc, a3, a1, a2), vxi::tmc(zero)});
  set_lanes(b, a1, {Bench::kData, Bench::kData, Bench::kData, Bench::kData});
  run_ok(b);
  CHECK(lanes(b, a3) == Lanes{0, 1, 1, 1});
  CHECK(b.read32(Bench::kData) == 6);  // one increment, not four lost ones
}

TEST_CASE("SC.W without a reservation fails in that lane and stores nothing there") {
  Bench b;
  b.load({amo(kLr, a0, a1, zero), amo(kSc, a3, a4, a2), vxi::tmc(zero)});
  // Every lane reserves its own word; lanes 1 and 3 then store to a different word.
  for (uint32_t l = 0; l < 4; ++l) {
    b.x(a1, l) = Bench::kData + 4 * l;
    b.x(a4, l) = Bench::kData + ((l & 1) ? 0x100 : 0) + 4 * l;
    b.x(a2, l) = 50 + l;
  }
  run_ok(b);
  CHECK(lanes(b, a3) == Lanes{0, 1, 0, 1});
  CHECK(b.read32(Bench::kData) == 50);
  CHECK(b.read32(Bench::kData + 8) == 52);
  CHECK(b.read32(Bench::kData + 0x104) == 0);
  CHECK(b.read32(Bench::kData + 0x10c) == 0);
  CHECK(b.warp().reservation == std::vector<uint32_t>{0, 0, 0, 0});
}

TEST_CASE("CSR reads of THREAD_ID, WARP_ID, MHARTID and NUM_THREADS give each lane its own value") {
  Bench b;
  b.load({rv::csrr(a0, kThreadId), rv::csrr(a1, kWarpId), rv::csrr(a2, kMhartid), rv::csrr(a3, kNumThreads),
          vxi::tmc(zero)});
  DeviceException e = b.run_warp(kAll, 2);
  REQUIRE(e.cause == Cause::None);
  for (uint32_t l = 0; l < 4; ++l) {
    CHECK(b.x(a0, l, 2) == l);
    CHECK(b.x(a1, l, 2) == 2);
    CHECK(b.x(a2, l, 2) == 2 * 4 + l);  // (core * NW + warp) * NT + lane
    CHECK(b.x(a3, l, 2) == 4);
  }
}

TEST_CASE("a CSR write takes the operand and old value of the highest active lane") {
  Bench b;
  b.load({rv::csrw(kMscratch, a1), csr(kCsrrs, a0, kMscratch, a2), csr(kCsrrc, a3, kMscratch, a4),
          csr(kCsrrw, a5, kMscratch, a5), vxi::tmc(zero)});
  set_lanes(b, a1, {0x100, 0x200, 0x300, 0x400});
  set_lanes(b, a2, {0x1, 0x2, 0x4, 0x8});
  set_lanes(b, a4, {0x300, 0x100, 0x200, 0x8});
  set_lanes(b, a5, {7, 8, 9, 10});
  run_ok(b, 0b0111);  // lane 2 is the highest active lane
  CHECK(lanes(b, a0) == Lanes{0x300, 0x300, 0x300, 0});
  CHECK(lanes(b, a3) == Lanes{0x304, 0x304, 0x304, 0});   // CSRRC then clears lane 2's 0x200
  CHECK(lanes(b, a5) == Lanes{0x104, 0x104, 0x104, 10});  // CSRRW reads before writing, even into rs1
  CHECK(b.warp().mscratch == 9);
}

TEST_CASE("the CSR immediate forms use the zimm field") {
  Bench b;
  b.load({csr(kCsrrwi, a0, kMscratch, 5), csr(kCsrrsi, a1, kMscratch, 18), csr(kCsrrci, a2, kMscratch, 1),
          rv::csrr(a3, kMscratch), vxi::tmc(zero)});
  b.warp().mscratch = 0xdead;
  run_ok(b);
  CHECK(b.x(a0, 1) == 0xdead);
  CHECK(b.x(a1, 1) == 5);
  CHECK(b.x(a2, 1) == 23);
  CHECK(b.x(a3, 1) == 22);
}

TEST_CASE("an unknown CSR and a write to a read-only CSR are illegal instructions") {
  const uint32_t unknown = rv::csrr(a0, 0x7c0);
  const uint32_t write_ro = rv::csrw(kMhartid, a1);
  const uint32_t set_ro_imm = csr(kCsrrsi, a0, kNumThreads, 1);
  for (uint32_t word : {unknown, write_ro, set_ro_imm}) {
    Bench b;
    b.load({word, vxi::tmc(zero)});
    set_lanes(b, a0, {1, 2, 3, 4});
    DeviceException e = b.run_warp(0b0011);
    INFO(disassemble(word, Bench::kCode));
    CHECK(e.cause == Cause::IllegalInstruction);
    CHECK(e.lane == 1);
    CHECK(e.addr == word);
    CHECK(lanes(b, a0) == Lanes{1, 2, 3, 4});
  }
}

TEST_CASE("CSRRS and CSRRSI that do not write may read a read-only CSR") {
  Bench b;
  b.load({csr(kCsrrs, a0, kMhartid, zero), csr(kCsrrsi, a1, kNumThreads, 0), csr(kCsrrc, a2, kWarpId, zero),
          vxi::tmc(zero)});
  run_ok(b);
  CHECK(lanes(b, a0) == Lanes{0, 1, 2, 3});
  CHECK(lanes(b, a1) == Lanes{4, 4, 4, 4});
  CHECK(lanes(b, a2) == Lanes{0, 0, 0, 0});
}

TEST_CASE("only CSR writes and counter reads take the fast loop's full bookkeeping (Decoded::sync)") {
  // Pure reads of the other CSRs run in the fast loop's plain path, which keeps pc and counters in locals.
  for (uint32_t f3 : {kCsrrs, kCsrrc}) {
    CHECK_FALSE(decode(csr(f3, a0, kMhartid, zero)).sync);
    CHECK_FALSE(decode(csr(f3, a0, 0x001, zero)).sync);  // fflags: the read settles the host flags itself
    CHECK(decode(csr(f3, a0, kMhartid, a1)).sync);       // writes (rs1 != x0), even a read-only CSR's trap
  }
  for (uint32_t f3 : {kCsrrsi, kCsrrci}) {
    CHECK_FALSE(decode(csr(f3, a0, kNumThreads, 0)).sync);
    CHECK(decode(csr(f3, a0, kMscratch, 1)).sync);
  }
  for (uint32_t f3 : {kCsrrw, kCsrrwi}) CHECK(decode(csr(f3, zero, kMscratch, zero)).sync);
  for (uint32_t counter : {0xB00u, 0xB80u, 0xB02u, 0xB82u}) {
    CHECK(decode(csr(kCsrrs, a0, counter, zero)).sync);
    CHECK(decode(csr(kCsrrsi, a0, counter, 0)).sync);
  }
  CHECK(decode(vxi::tmc(zero)).sync);
  CHECK_FALSE(decode(rv::addi(a0, a0, 1)).sync);
}

TEST_CASE("mcycle and minstret read in the fast loop count every instruction before them") {
  // Four warps, straight-line code between the reads: the counters read in the fast loop equal the
  // reference interpreter's, with other CSR reads (plain path) in between.
  std::vector<uint32_t> prog = {csr(kCsrrs, a2, kMhartid, zero)};
  for (int i = 0; i < 20; ++i) prog.push_back(rv::addi(a3, a3, 1));
  prog.push_back(csr(kCsrrs, a0, 0xB00, zero));
  prog.push_back(csr(kCsrrs, a4, kNumThreads, zero));
  prog.push_back(csr(kCsrrs, a1, 0xB02, zero));
  prog.push_back(rv::ret());
  std::vector<std::array<uint32_t, 2>> seen;
  for (bool reference : {false, true}) {
    RunOptions o{7, 1'000'000};
    o.reference = reference;
    Bench b(DeviceConfig{}, o);
    b.load_kernel(prog);
    REQUIRE(b.m.start_launch(Bench::grid_launch({4, 1, 1}, {16, 1, 1})).ok());
    std::array<uint32_t, 2> sum{};
    for (;;) {
      RunResult r = b.m.run(37);  // budgets that end inside quanta
      for (const WarpState& w : b.m.core(0).warps) {
        sum[0] += w.x[size_t(a0) * 4] * 3 + w.x[size_t(a1) * 4];
        sum[1] += w.x[size_t(a4) * 4];
      }
      if (r.stop == RunStop::LaunchDone) break;
      REQUIRE(r.stop == RunStop::Budget);
    }
    seen.push_back(sum);
  }
  CHECK(seen[0] == seen[1]);
  CHECK(seen[0][1] != 0);
}

TEST_CASE("ECALL and EBREAK without a trap handler stop the warp with their cause") {
  for (auto [word, cause] :
       {std::pair{rv::ecall(), Cause::EnvironmentCall}, std::pair{rv::ebreak(), Cause::Breakpoint}}) {
    Bench b;
    b.load({rv::li(a0, 1), word, rv::li(a0, 2), vxi::tmc(zero)});
    DeviceException e = b.run_warp(kAll);
    CHECK(e.cause == cause);
    CHECK(e.pc == Bench::kCode + 4);
    CHECK(b.warp().active);
    CHECK(b.x(a0, 3) == 1);
  }
}

TEST_CASE("ECALL and EBREAK with mtvec set enter the handler with mepc and mcause, and MRET returns to mepc") {
  for (auto [word, code] : {std::pair{rv::ecall(), 11u}, std::pair{rv::ebreak(), 3u}}) {
    Bench b;
    constexpr uint32_t kHandler = Bench::kCode + 0x40;
    std::vector<uint32_t> code_words = {rv::lui(t0, Bench::kCode >> 12),
                                        rv::addi(t0, t0, 0x40),
                                        rv::csrw(kMtvec, t0),
                                        word,
                                        rv::li(a1, 7),
                                        vxi::tmc(zero)};
    code_words.resize(0x40 / 4, 0);
    for (uint32_t w : {rv::csrr(a0, kMcause), rv::csrr(a2, kMepc), rv::addi(a3, a2, 4), rv::csrw(kMepc, a3), mret()})
      code_words.push_back(w);
    b.load(code_words);
    run_ok(b);
    CHECK(b.x(a0, 0) == code);
    CHECK(b.x(a2, 0) == Bench::kCode + 12);  // mepc: the trapping instruction
    CHECK(b.x(a1, 3) == 7);                  // MRET resumed after it
    CHECK(b.warp().mtvec == kHandler);
  }
}

TEST_CASE("FENCE and FENCE.I change nothing but the pc") {
  Bench b;
  b.load({fence(), fence_i(), rv::li(a0, 1), vxi::tmc(zero)});
  for (uint32_t r = 1; r < 32; ++r)
    for (uint32_t l = 0; l < 4; ++l) b.x(r, l) = r * 100 + l;
  std::vector<uint32_t> before = b.warp().x;
  run_ok(b);
  std::vector<uint32_t> after = b.warp().x;
  for (uint32_t l = 0; l < 4; ++l) {
    CHECK(after[a0 * 4 + l] == 1);
    after[a0 * 4 + l] = before[a0 * 4 + l];
  }
  CHECK(after == before);
  CHECK(b.m.stats().instructions == 4);
}

TEST_CASE("instructions with rd = x0 leave x0 zero") {
  Bench b;
  b.write32(Bench::kData, 0x1234);
  b.load({rv::add(zero, a1, a1), rv::lui(zero, 0xfffff), rv::lw(zero, a2, 0), rv::jal(zero, 4),
          rv::csrr(zero, kThreadId), amo(kAmoAdd, zero, a2, a1), op(1, 0, zero, a1, a1), rv::add(a0, zero, zero),
          vxi::tmc(zero)});
  set_lanes(b, a1, {3, 3, 3, 3});
  set_lanes(b, a2, {Bench::kData, Bench::kData, Bench::kData, Bench::kData});
  set_lanes(b, a0, {9, 9, 9, 9});
  run_ok(b);
  CHECK(lanes(b, zero) == Lanes{0, 0, 0, 0});
  CHECK(lanes(b, a0) == Lanes{0, 0, 0, 0});
  CHECK(b.read32(Bench::kData) == 0x1234 + 12);  // the AMO still updated memory
}

TEST_CASE("the disassembler prints integer instructions from the table") {
  CHECK(disassemble(0x00a50513, 0x80000000) == "addi a0, a0, 10");
  CHECK(disassemble(rv::addi(a0, a1, -3), 0) == "addi a0, a1, -3");
  CHECK(disassemble(rv::lw(a0, sp, 8), 0) == "lw a0, 8(sp)");
  CHECK(disassemble(store(0, a1, s0, -4), 0) == "sb a1, -4(s0)");
  CHECK(disassemble(branch(kBne, a0, a1, -8), 0x80000010) == "bne a0, a1, 0x80000008");
  CHECK(disassemble(rv::jal(ra, 16), 0x80000000) == "jal ra, 0x80000010");
  CHECK(disassemble(jalr(zero, ra, 0), 0) == "jalr zero, 0(ra)");
  CHECK(disassemble(rv::lui(a0, 0x12345), 0) == "lui a0, 0x12345");
  CHECK(disassemble(shifti(0x20, 5, a0, a0, 3), 0) == "srai a0, a0, 3");
  CHECK(disassemble(csr(kCsrrs, a0, kMhartid, zero), 0) == "csrrs a0, mhartid, zero");
  CHECK(disassemble(csr(kCsrrwi, zero, 0x7c0, 5), 0) == "csrrwi zero, 0x7c0, 5");
  CHECK(disassemble(amo(kAmoAdd, a0, a2, a1) | (3u << 25), 0) == "amoadd.w a0, a1, (a2)");  // aq and rl set
  CHECK(disassemble(amo(kLr, a0, a2, zero), 0) == "lr.w a0, (a2)");
  CHECK(disassemble(op(7, 5, a0, a1, a2), 0) == "czero.eqz a0, a1, a2");
  CHECK(disassemble(op(1, 2, a0, a1, a2), 0) == "mulhsu a0, a1, a2");
  CHECK(disassemble(rv::ecall(), 0) == "ecall");
  CHECK(disassemble(mret(), 0) == "mret");
  CHECK(disassemble(fence(), 0) == "fence");
}

TEST_CASE("reserved integer encodings are not decoded") {
  CHECK(find_row(shifti(0x01, 1, a0, a0, 3)) == nullptr);   // slli with shamt[5] set (RV64 only)
  CHECK(find_row(amo(kLr, a0, a2, a1)) == nullptr);         // lr.w with rs2 != 0
  CHECK(find_row(op(7, 6, a0, a1, a2)) == nullptr);         // funct7 = 7, funct3 = 6: not Zicond
  CHECK(find_row(0x0000200f) == nullptr);                   // MISC-MEM funct3 = 2
  CHECK(find_row(0x10500073) == nullptr);                   // wfi is not modelled
  CHECK(find_row(i_type(0, a1, 3, a0, kLoad)) == nullptr);  // ld (RV64)
}

TEST_CASE("every integer row decodes its own match value to itself") {
  for (const InsnRow& r : int_rows()) {
    INFO(r.mnemonic);
    CHECK(find_row(r.match) == &r);
  }
  CHECK(int_rows().size() == 69);
}
