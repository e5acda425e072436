// The fast loop's basic blocks (Machine::build_block, Machine::run_fast): a block's instructions run
// one after another without the per-instruction checks, so each test here is a case where running
// ahead would be wrong, checked against the reference interpreter (RunOptions::reference), which
// steps one instruction at a time: code rewritten by the block's own store, a fault in the middle
// of a block, budgets and quanta that end inside one.
#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "device/test_support.hpp"

using namespace vx;
using namespace vx::test;

namespace {

constexpr uint32_t auipc(uint32_t rd, uint32_t imm20) { return u_type(imm20, rd, 0x17); }
constexpr uint32_t nop() { return rv::addi(zero, zero, 0); }

// rd = word, in two instructions (lui, addi).
std::vector<uint32_t> load_word(uint32_t rd, uint32_t word) {
  const uint32_t hi = (word + 0x800) >> 12;
  return {rv::lui(rd, hi & 0xfffff), rv::addi(rd, rd, int32_t(word - (hi << 12)))};
}

std::vector<uint32_t> concat(std::initializer_list<std::vector<uint32_t>> parts) {
  std::vector<uint32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// t3 = Bench::kData; then kData = a1.
const std::vector<uint32_t> kStoreA1 = {rv::lui(t3, 0x20), rv::sw(a1, t3, 0)};

struct Run {
  std::unique_ptr<Bench> bench;
  RunResult result;
  std::vector<uint64_t> budget_stops;  // the instruction count at each Budget stop
};

// One launch of `kernel` in fast or reference mode, in run() calls of at most `slice` instructions.
Run run(const std::vector<uint32_t>& kernel, bool reference, std::array<uint32_t, 3> block, uint64_t slice,
        DeviceConfig cfg = {}) {
  RunOptions o{7, 1'000'000};
  o.reference = reference;
  Run r{std::make_unique<Bench>(cfg, o), {}, {}};
  r.bench->load_kernel(kernel);
  REQUIRE(r.bench->m.start_launch(Bench::grid_launch({1, 1, 1}, block)).ok());
  for (;;) {
    r.result = r.bench->m.run(slice);
    if (r.result.stop != RunStop::Budget) break;
    r.budget_stops.push_back(r.bench->m.stats().instructions);
  }
  return r;
}

void require_same(const Run& fast, const Run& ref) {
  REQUIRE(fast.result.stop == ref.result.stop);
  CHECK(fast.result.exception.cause == ref.result.exception.cause);
  CHECK(fast.result.exception.pc == ref.result.exception.pc);
  CHECK(fast.budget_stops == ref.budget_stops);
  CHECK(fast.bench->m.stats().instructions == ref.bench->m.stats().instructions);
  CHECK(fast.bench->m.stats().lane_instructions == ref.bench->m.stats().lane_instructions);
  CHECK(fast.bench->m.core(0) == ref.bench->m.core(0));
  CHECK(fast.bench->m.scheduler() == ref.bench->m.scheduler());
  for (uint32_t a = 0; a < 0x100; a += 4)
    CHECK(fast.bench->read32(Bench::kData + a) == ref.bench->read32(Bench::kData + a));
}

}  // namespace

TEST_CASE("a store that rewrites the next instructions of its own straight-line code runs them in their new form") {
  // The word at kKernel + 20 becomes `addi a1, zero, 2` before it runs; in a block built before the
  // store it would still be `addi a1, zero, 1`.
  const auto kernel = concat({{auipc(t0, 0)},
                              load_word(t1, rv::addi(a1, zero, 2)),
                              {rv::sw(t1, t0, 20), nop(), rv::addi(a1, zero, 1)},
                              kStoreA1,
                              {rv::ret()}});
  REQUIRE(kernel[5] == rv::addi(a1, zero, 1));
  Run fast = run(kernel, false, {1, 1, 1}, UINT64_MAX);
  Run ref = run(kernel, true, {1, 1, 1}, UINT64_MAX);
  REQUIRE(ref.result.stop == RunStop::LaunchDone);
  CHECK(ref.bench->read32(Bench::kData) == 2);
  require_same(fast, ref);
}

TEST_CASE("a loop that rewrites its own first instruction runs the new one from the next iteration") {
  // kKernel + 8 is `addi a1, a1, 1` on the first pass and `addi a1, a1, 16` on the second: a1 = 17.
  const auto kernel = concat({{auipc(t0, 0), rv::addi(a2, zero, 2), rv::addi(a1, a1, 1)},
                              load_word(t1, rv::addi(a1, a1, 16)),
                              {rv::sw(t1, t0, 8), rv::addi(a2, a2, -1), rv::bne(a2, zero, -20)},
                              kStoreA1,
                              {rv::ret()}});
  REQUIRE(kernel[7] == rv::bne(a2, zero, -20));
  Run fast = run(kernel, false, {1, 1, 1}, UINT64_MAX);
  Run ref = run(kernel, true, {1, 1, 1}, UINT64_MAX);
  REQUIRE(ref.result.stop == RunStop::LaunchDone);
  CHECK(ref.bench->read32(Bench::kData) == 17);
  require_same(fast, ref);
}

TEST_CASE("a load that faults in the middle of a block leaves the ones before it retired and the ones after not run") {
  // 0x30000 is past the bench's data memory: the load at kKernel + 12 faults.
  const auto kernel = concat(
      {{rv::addi(a1, zero, 5), rv::addi(a2, zero, 6), rv::lui(a4, 0x30), rv::lw(a3, a4, 0), rv::addi(a5, zero, 7)},
       kStoreA1,
       {rv::ret()}});
  Run fast = run(kernel, false, {1, 1, 1}, UINT64_MAX);
  Run ref = run(kernel, true, {1, 1, 1}, UINT64_MAX);
  REQUIRE(ref.result.stop == RunStop::Exception);
  CHECK(ref.result.exception.cause == Cause::LoadFault);
  CHECK(ref.result.exception.pc == Bench::kKernel + 12);
  CHECK(fast.bench->x(a2, 0) == 6);
  CHECK(fast.bench->x(a5, 0) == 0);
  require_same(fast, ref);
}

TEST_CASE("budgets and quanta that end inside a block stop after exactly as many instructions as the reference") {
  // Four warps of a 1x1x4x4 device run a loop whose body is one block of 20 instructions: quanta
  // (1..64 instructions) and budgets of 1 to 23 instructions end at every offset inside it.
  std::vector<uint32_t> body;
  for (int i = 0; i < 18; ++i) body.push_back(rv::addi(a1, a1, i + 1));
  const uint32_t slli_t6_t0_2 = i_type(2, t0, 1, t6, 0x13);
  const auto kernel = concat(
      {{rv::addi(a2, zero, 9)},
       body,
       {rv::addi(a2, a2, -1), rv::bne(a2, zero, -4 * 19)},
       {rv::lui(t3, 0x20), rv::csrr(t0, 0xCD3), slli_t6_t0_2, rv::add(t6, t6, t3), rv::sw(a1, t6, 0), rv::ret()}});
  REQUIRE(kernel[20] == rv::bne(a2, zero, -4 * 19));
  for (uint64_t slice = 1; slice <= 23; ++slice) {
    INFO("budget " << slice);
    Run fast = run(kernel, false, {16, 1, 1}, slice);
    Run ref = run(kernel, true, {16, 1, 1}, slice);
    REQUIRE(ref.result.stop == RunStop::LaunchDone);
    CHECK(ref.bench->read32(Bench::kData + 60) == 9 * (18 * 19 / 2));
    require_same(fast, ref);
  }
}
