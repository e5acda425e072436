// The basic blocks of the fast loop and of the thread-entry routine's loop (Machine::build_block,
// Machine::run_fast, Machine::run_routine): a block's instructions run one after another without the
// per-instruction checks, so each test here is a case where running ahead would be wrong, checked
// against the reference interpreter (RunOptions::reference), which steps one instruction at a time:
// code rewritten by a store (in a launch, where it ends its block, and in a routine, where it does
// not) and by an atomic (which ends its block), a fault in the middle of a block, budgets and quanta
// that end inside one, floating-point flags raised inside blocks. The first six fail when their part of the rule is
// taken out of the loops (stores ending run_fast's blocks; the code check after a store inside one of run_routine's;
// the code check after a block; the cache generation in a block's key; the count of the instructions before a fault;
// running only as far as the quantum and the limit allow: checked).
#include <catch2/catch.hpp>
#include <memory>
#include <tuple>
#include <vector>

#include "device/test_support.hpp"

using namespace vx;
using namespace vx::test;

namespace {

constexpr uint32_t auipc(uint32_t rd, uint32_t imm20) { return u_type(imm20, rd, 0x17); }

// rd = word, in two instructions (lui, addi).
std::vector<uint32_t> load_word(uint32_t rd, uint32_t word) {
  const uint32_t hi = (word + 0x800) >> 12;
  return {rv::lui(rd, hi & 0xfffff), rv::addi(rd, rd, int32_t(word - (hi << 12)))};
}

void append(std::vector<uint32_t>& to, const std::vector<uint32_t>& words) {
  to.insert(to.end(), words.begin(), words.end());
}

constexpr uint32_t sub(uint32_t rd, uint32_t rs1, uint32_t rs2) { return r_type(0x20, rs2, rs1, 0, rd, 0x33); }
constexpr uint32_t and_(uint32_t rd, uint32_t rs1, uint32_t rs2) { return r_type(0, rs2, rs1, 7, rd, 0x33); }
constexpr uint32_t sltiu(uint32_t rd, uint32_t rs1, int32_t imm) { return i_type(imm, rs1, 3, rd, 0x13); }

// t4 = t3 + (a2 == value ? offset : 0), without a branch (a branch would end the block); uses t5.
std::vector<uint32_t> select_if_a2_is(int32_t value, uint32_t offset) {
  return {rv::addi(t5, a2, -value), sltiu(t5, t5, 1), sub(t5, zero, t5), and_(t5, t5, offset), rv::add(t4, t3, t5)};
}

// t3 = Bench::kData; then kData = a1.
const std::vector<uint32_t> kStoreA1 = {rv::lui(t3, 0x20), rv::sw(a1, t3, 0)};

struct Run {
  std::unique_ptr<Bench> bench;
  RunResult result;
  std::vector<uint64_t> budget_stops;  // the instruction count at each Budget stop
};

// One launch of `kernel` in fast or reference mode, in run() calls of at most `slice` instructions.
Run run(const std::vector<uint32_t>& kernel, bool reference, std::array<uint32_t, 3> block, uint64_t slice) {
  RunOptions o{7, 1'000'000};
  o.reference = reference;
  Run r{std::make_unique<Bench>(DeviceConfig{}, o), {}, {}};
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

// Every test loops: a block is built the second time its first pc is reached, so what goes wrong
// in a built block shows from the second iteration on.

// Five iterations; the fourth one's store writes `addi a1, a1, 16` over `target` (the others store to
// data), right after it in the code. If the fast loop's block did not end at the store, or the
// routine's loop (whose blocks go on past stores) did not check the code generation after it, the
// block built on the second iteration would run the old `addi a1, a1, 1` once more: a1 = 20 instead
// of 3 + 16 + 16 = 35. `end`: what follows the loop (a1 is stored at kData first);
// `store`: the instruction that stores t1 at t4.
std::vector<uint32_t> rewrite_after_store(const std::vector<uint32_t>& end, uint32_t store = rv::sw(t1, t4, 0)) {
  std::vector<uint32_t> k =
      concat({{rv::li(a1, 0), rv::li(a2, 5), rv::lui(t3, 0x20), auipc(t0, 0)}, load_word(t1, rv::addi(a1, a1, 16))});
  const size_t set_t2 = k.size();
  k.push_back(0);  // addi t2, t0, <target - the auipc>, filled in below
  k.push_back(sub(t2, t2, t3));
  const size_t loop = k.size();
  k.push_back(rv::addi(a2, a2, -1));
  append(k, select_if_a2_is(1, t2));  // t4 = a2 == 1 ? &target : kData
  k.push_back(store);
  const size_t target = k.size();
  k.push_back(rv::addi(a1, a1, 1));
  k.push_back(rv::bne(a2, zero, -4 * int32_t(k.size() - loop)));
  append(k, kStoreA1);
  append(k, end);
  k[set_t2] = rv::addi(t2, t0, int32_t(4 * (target - 3)));
  return k;
}

TEST_CASE("a store that rewrites the instruction after it runs that instruction in its new form") {
  const std::vector<uint32_t> k = rewrite_after_store({rv::ret()});
  Run fast = run(k, false, {1, 1, 1}, UINT64_MAX);
  Run ref = run(k, true, {1, 1, 1}, UINT64_MAX);
  REQUIRE(ref.result.stop == RunStop::LaunchDone);
  CHECK(ref.bench->read32(Bench::kData) == 35);
  require_same(fast, ref);
}

TEST_CASE("an atomic that rewrites the instruction after it runs that instruction in its new form") {
  // An atomic ends its block: the code check after the block is what sees the rewrite here.
  constexpr uint32_t amoswap_w = r_type(0x04, t1, t4, 2, zero, 0x2f);  // amoswap.w x0, t1, (t4)
  const std::vector<uint32_t> k = rewrite_after_store({rv::ret()}, amoswap_w);
  Run fast = run(k, false, {1, 1, 1}, UINT64_MAX);
  Run ref = run(k, true, {1, 1, 1}, UINT64_MAX);
  REQUIRE(ref.result.stop == RunStop::LaunchDone);
  CHECK(ref.bench->read32(Bench::kData) == 35);
  require_same(fast, ref);
}

TEST_CASE(
    "a thread-entry routine whose store rewrites the instruction after it runs that instruction in its new form") {
  // The re-launch's routine runs in blocks too (Machine::run_routine) unless the reference mode
  // steps it. The same loop as a routine: it ends in VXR.RESUME, and the device then refuses the
  // restore (the routine restored no register), with a1 stored at kData by then.
  auto restore = [](bool reference) {
    RunOptions o{7, 1'000'000};
    o.reference = reference;
    auto b = std::make_unique<Bench>(DeviceConfig{}, o);
    b->load_kernel({rv::jal(zero, 0)});  // parks the warp: the launch stays in flight
    REQUIRE(b->m.start_launch(Bench::grid_launch({1, 1, 1}, {1, 1, 1})).ok());
    REQUIRE(b->m.run(50).stop == RunStop::Budget);
    auto ctx = b->m.save_context();
    REQUIRE(ctx.ok());
    b->m.abort_launch();
    b->m.scrub_cores();
    const uint32_t routine_pc = Bench::kCode + 0x1000;
    const std::vector<uint32_t> code = rewrite_after_store({0x0000007b});  // VXR.RESUME
    REQUIRE(b->m.memory().write(routine_pc, code.data(), code.size() * 4));
    ResumeRequest req;
    req.context = *ctx;
    req.routine_pc = routine_pc;
    req.placements.push_back(RestorePlacement{0, 0, 0, true});
    REQUIRE(b->m.start_resume(std::move(req)).ok());
    const RunResult r = b->m.run(UINT64_MAX);
    CHECK(r.stop == RunStop::Exception);
    CHECK(r.exception.cause == Cause::RestoreFailed);
    // What the routine left: its registers and pc, and how many instructions it ran.
    return std::tuple{b->read32(Bench::kData), r.message, b->m.stats().restore_instructions, b->m.core(0)};
  };
  const auto lean = restore(false);
  const auto stepped = restore(true);
  CHECK(std::get<0>(stepped) == 35);
  CHECK(std::get<0>(lean) == std::get<0>(stepped));
  CHECK(std::get<1>(lean) == std::get<1>(stepped));
  CHECK(std::get<2>(lean) == std::get<2>(stepped));
  CHECK(std::get<2>(lean) > 0);
  CHECK(std::get<3>(lean) == std::get<3>(stepped));
}

TEST_CASE("a loop that rewrites the first instruction of its built block runs the new one from the next iteration") {
  // The block from `loop` is built on the second iteration, whose store writes `addi a1, a1, 16`
  // over its first instruction: a1 = 1 + 1 + 16 * 3 = 50.
  std::vector<uint32_t> k =
      concat({{rv::li(a1, 0), rv::li(a2, 5), rv::lui(t3, 0x20), auipc(t0, 0)}, load_word(t1, rv::addi(a1, a1, 16))});
  const size_t set_t2 = k.size();
  k.push_back(0);  // addi t2, t0, <loop - the auipc>
  k.push_back(sub(t2, t2, t3));
  const size_t loop = k.size();
  k.push_back(rv::addi(a1, a1, 1));
  k.push_back(rv::addi(a2, a2, -1));
  append(k, select_if_a2_is(3, t2));  // t4 = a2 == 3 ? &loop : kData
  k.push_back(rv::sw(t1, t4, 0));
  k.push_back(rv::bne(a2, zero, -4 * int32_t(k.size() - loop)));
  append(k, kStoreA1);
  k.push_back(rv::ret());
  k[set_t2] = rv::addi(t2, t0, int32_t(4 * (loop - 3)));
  Run fast = run(k, false, {1, 1, 1}, UINT64_MAX);
  Run ref = run(k, true, {1, 1, 1}, UINT64_MAX);
  REQUIRE(ref.result.stop == RunStop::LaunchDone);
  CHECK(ref.bench->read32(Bench::kData) == 50);
  require_same(fast, ref);
}

TEST_CASE("a load that faults in the middle of a built block leaves the ones before it retired and the rest not run") {
  // The fourth iteration's load reads 0x30000, past the bench's data memory, from the middle of the
  // block built on the second: the instructions before it in that iteration retired, `addi a5` did not.
  std::vector<uint32_t> k = {rv::li(a5, 0), rv::li(a2, 5), rv::lui(t3, 0x20), rv::lui(t2, 0x10)};
  const size_t loop = k.size();
  k.push_back(rv::addi(a2, a2, -1));
  append(k, select_if_a2_is(1, t2));  // t4 = a2 == 1 ? 0x30000 : kData
  const size_t load = k.size();
  k.push_back(rv::lw(a3, t4, 0));
  k.push_back(rv::addi(a5, a5, 1));
  k.push_back(rv::bne(a2, zero, -4 * int32_t(k.size() - loop)));
  k.push_back(rv::ret());
  Run fast = run(k, false, {1, 1, 1}, UINT64_MAX);
  Run ref = run(k, true, {1, 1, 1}, UINT64_MAX);
  REQUIRE(ref.result.stop == RunStop::Exception);
  CHECK(ref.result.exception.cause == Cause::LoadFault);
  CHECK(ref.result.exception.pc == Bench::kKernel + 4 * load);
  CHECK(fast.bench->x(a5, 0) == 3);
  CHECK(fast.bench->x(t4, 0) == 0x30000);
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

TEST_CASE("floating-point flags raised inside blocks read the same as the reference's at every budget") {
  // Four warps of four lanes divide and add in a loop (one block): fdiv.s by 3 is inexact for
  // most lanes and iterations. The flags stay in the host's FPU between instructions and are
  // settled when the loop leaves; at every budget stop each warp's fcsr must be the reference's.
  constexpr uint32_t fcvt_s_w = 0x68, fdiv = 0x0c, fadd = 0x00;
  auto fp = [](uint32_t f7, uint32_t rd, uint32_t rs1, uint32_t rs2) { return r_type(f7, rs2, rs1, 7, rd, 0x53); };
  const uint32_t slli_t6_t0_2 = i_type(2, t0, 1, t6, 0x13);
  std::vector<uint32_t> k = {rv::li(t1, 3), fp(fcvt_s_w, 2, t1, 0), rv::csrr(t0, 0xCD3), rv::addi(a2, t0, 9)};
  const size_t loop = k.size();
  k.push_back(fp(fcvt_s_w, 0, a2, 0));  // ft0 = a2
  k.push_back(fp(fdiv, 1, 0, 2));       // ft1 = ft0 / 3
  k.push_back(fp(fadd, 3, 3, 1));       // ft3 += ft1
  k.push_back(rv::addi(a2, a2, -1));
  k.push_back(rv::bne(a2, t0, -4 * int32_t(k.size() - loop)));
  append(k, {rv::lui(t3, 0x20), rv::csrr(a1, 0x001), slli_t6_t0_2, rv::add(t6, t6, t3), rv::sw(a1, t6, 0), rv::ret()});
  for (uint64_t slice = 1; slice <= 23; ++slice) {
    INFO("budget " << slice);
    Run fast = run(k, false, {16, 1, 1}, slice);
    Run ref = run(k, true, {16, 1, 1}, slice);
    REQUIRE(ref.result.stop == RunStop::LaunchDone);
    CHECK(ref.bench->read32(Bench::kData + 4) == 1);  // NX: thread 1 divided 10/3 first
    require_same(fast, ref);
  }
}
