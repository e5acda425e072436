// The block translator (device/jit.hpp) against the same blocks run through their executors
// (RunOptions::jit false) and against the reference interpreter: random loops of every instruction
// the translator emits itself, with loads that hit, miss the translation entries, are misaligned or
// fall in local memory, and instructions it calls executors for, run in budgets of every length so
// that blocks end early; every register, counter, the scheduler and memory must agree.
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "device/test_support.hpp"

using namespace vx;
using namespace vx::test;

namespace {

constexpr uint32_t kOpImm = 0x13, kOp = 0x33, kBranch = 0x63;

// Registers the random code may write: not x0, ra (the kernel returns through it), sp, gp, tp, nor
// the loop's counter (s11) and the data base (s10).
constexpr uint32_t kCounter = 27, kBase = 26;
uint32_t any_reg(std::mt19937& rng) {
  for (;;) {
    const uint32_t r = 5 + rng() % 27;
    if (r != kCounter && r != kBase) return r;
  }
}
uint32_t src_reg(std::mt19937& rng) { return rng() % 8 == 0 ? 0 : any_reg(rng); }

// A loop of `body` random instructions, `trips` times, then a return.
std::vector<uint32_t> random_kernel(std::mt19937& rng, uint32_t body, uint32_t trips, bool local_loads) {
  std::vector<uint32_t> k;
  // s10 = Bench::kData; registers start as assorted words.
  k.push_back(rv::lui(kBase, Bench::kData >> 12));
  for (uint32_t r = 5; r < 26; ++r)
    k.push_back(rv::lui(r, rng() & 0xfffff)), k.push_back(rv::addi(r, r, int32_t(rng() % 4096) - 2048));
  k.push_back(rv::li(kCounter, int32_t(trips)));
  const size_t loop = k.size();
  for (uint32_t i = 0; i < body; ++i) {
    const uint32_t rd = rng() % 16 == 0 ? 0 : any_reg(rng), rs1 = src_reg(rng), rs2 = src_reg(rng);
    const int32_t imm = int32_t(rng() % 4096) - 2048;
    switch (rng() % 12) {
      case 0:
      case 1:
      case 2: {  // OP-IMM: addi slti sltiu xori ori andi, or a shift
        const uint32_t f3 = rng() % 8;
        if (f3 == 1)
          k.push_back(r_type(0, rng() % 32, rs1, 1, rd, kOpImm));
        else if (f3 == 5)
          k.push_back(r_type(rng() % 2 ? 0x20 : 0, rng() % 32, rs1, 5, rd, kOpImm));
        else
          k.push_back(i_type(imm, rs1, f3, rd, kOpImm));
        break;
      }
      case 3:
      case 4:
      case 5: {  // OP: the base ten, mul, and the M instructions the translator calls executors for
        const uint32_t f3 = rng() % 8;
        const uint32_t pick = rng() % 4;
        const uint32_t f7 = pick == 0 ? 1 : (pick == 1 && (f3 == 0 || f3 == 5)) ? 0x20 : 0;
        k.push_back(r_type(f7, rs2, rs1, f3, rd, kOp));
        break;
      }
      case 6: k.push_back(rv::lui(rd, rng() & 0xfffff)); break;
      case 7: k.push_back(u_type(rng() & 0xfffff, rd, 0x17)); break;  // auipc
      case 8:
      case 9: {  // lw or flw from the data page: aligned mostly, sometimes not
        const int32_t off = int32_t(rng() % 64) * 4 + (rng() % 64 == 0 ? 2 : 0);
        k.push_back(rng() % 2 ? rv::lw(rd, kBase, off) : i_type(off, kBase, 2, rd, 0x07));
        break;
      }
      case 10:  // a store (it ends the block) to the data page, so later loads see new words
        k.push_back(rv::sw(src_reg(rng), kBase, int32_t(rng() % 64) * 4));
        break;
      default:
        if (local_loads) {  // a load from local memory (its executor), through a register set up here
          k.push_back(rv::lui(rd == 0 ? 5 : rd, 0xFFFF0));
          k.push_back(rv::lw(rd, rd == 0 ? 5 : rd, int32_t(rng() % 64) * 4));
        } else {  // a forward conditional branch over the next instruction
          k.push_back(b_type(8, rs2, rs1, std::array{0u, 1u, 4u, 5u, 6u, 7u}[rng() % 6], kBranch));
          k.push_back(rv::addi(any_reg(rng), rs1, imm));
        }
        break;
    }
  }
  k.push_back(rv::addi(kCounter, kCounter, -1));
  k.push_back(rv::bne(kCounter, 0, -int32_t(4 * (k.size() - loop))));
  k.push_back(rv::ret());
  return k;
}

struct Run {
  std::unique_ptr<Bench> bench;
  RunResult result;
  std::vector<uint64_t> stops;
};

Run run(const std::vector<uint32_t>& kernel, bool jit, bool reference, uint64_t seed, uint64_t slice) {
  RunOptions o{seed, 10'000'000};
  o.jit = jit;
  o.reference = reference;
  Run r{std::make_unique<Bench>(DeviceConfig{1, 1, 1, 1}, o), {}, {}};
  r.bench->load_kernel(kernel);
  for (uint32_t a = 0; a < 0x100; a += 4) r.bench->write32(Bench::kData + a, a * 0x9e3779b9u);
  REQUIRE(r.bench->m.start_launch(Bench::grid_launch({1, 1, 1}, {1, 1, 1})).ok());
  for (;;) {
    r.result = r.bench->m.run(slice);
    if (r.result.stop != RunStop::Budget) break;
    r.stops.push_back(r.bench->m.stats().instructions);
  }
  return r;
}

void require_same(const Run& a, const Run& b) {
  REQUIRE(a.result.stop == b.result.stop);
  CHECK(a.result.exception == b.result.exception);
  CHECK(a.stops == b.stops);
  CHECK(a.bench->m.stats().instructions == b.bench->m.stats().instructions);
  CHECK(a.bench->m.core(0) == b.bench->m.core(0));
  CHECK(a.bench->m.scheduler() == b.bench->m.scheduler());
  for (uint32_t at = 0; at < 0x100; at += 4)
    CHECK(a.bench->read32(Bench::kData + at) == b.bench->read32(Bench::kData + at));
}

}  // namespace

TEST_CASE("translated blocks leave exactly what their executors and the reference leave", "[jit]") {
  std::mt19937 rng(37);
  uint32_t faulted = 0;
  uint64_t instructions = 0;
  for (uint32_t program = 0; program < 60; ++program) {
    const bool local_loads = program % 3 == 2;
    const auto kernel = random_kernel(rng, 4 + rng() % 60, 1 + rng() % 30, local_loads);
    // Budgets of one instruction, of a few (ending blocks at every offset) and of the whole run.
    for (uint64_t slice : {uint64_t(1), uint64_t(1 + rng() % 13), uint64_t(10'000'000)}) {
      INFO("program " << program << ", budget " << slice);
      const Run jit = run(kernel, true, false, program + 1, slice);
      const Run plain = run(kernel, false, false, program + 1, slice);
      const Run ref = run(kernel, true, true, program + 1, slice);
      require_same(jit, plain);
      require_same(jit, ref);
      if (jit.result.stop == RunStop::Exception) ++faulted;
      instructions += jit.bench->m.stats().instructions;
    }
  }
  // Most programs run their loops to the end (a misaligned load or a division's executor ends a few).
  CHECK(faulted < 60);
  CHECK(instructions > 50'000);
}

TEST_CASE("a translated block stops at a faulting load with the instructions before it retired", "[jit]") {
  // x5 = 0x10000000 (unmapped); two additions, the load faults, the addition after it never runs.
  const std::vector<uint32_t> kernel = {rv::lui(5, 0x10000), rv::li(6, 1),      rv::addi(6, 6, 1), rv::addi(6, 6, 1),
                                        rv::lw(7, 5, 0),     rv::addi(6, 6, 1), rv::ret()};
  for (uint64_t slice : {uint64_t(1), uint64_t(3), uint64_t(1000)}) {
    const Run jit = run(kernel, true, false, 1, slice);
    const Run ref = run(kernel, true, true, 1, slice);
    REQUIRE(jit.result.stop == RunStop::Exception);
    CHECK(jit.result.exception.cause == Cause::LoadFault);
    CHECK(jit.result.exception.addr == 0x10000000);
    CHECK(jit.bench->x(6, 0) == 3);
    require_same(jit, ref);
  }
}
