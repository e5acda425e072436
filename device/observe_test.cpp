// The observer facility (device/driver.hpp, DeviceObserver): what a retired instruction reports, and
// that observing changes nothing about the run.
#include <catch2/catch.hpp>
#include <vector>

#include "device/driver.hpp"
#include "device/encode.hpp"
#include "device/test_support.hpp"

using namespace vx;
using namespace vx::test;

namespace {

constexpr uint32_t mul(uint32_t rd, uint32_t rs1, uint32_t rs2) { return r_type(1, rs2, rs1, 0, rd, 0x33); }
constexpr uint32_t slli(uint32_t rd, uint32_t rs1, uint32_t sh) { return i_type(int32_t(sh), rs1, 1, rd, 0x13); }

// Each thread: t0 = its global index; loads the shared word at a0, stores t0 to a0 + 64 + 4 * t0,
// reads mcycle.
std::vector<uint32_t> kernel() {
  return {rv::csrr(t0, 0xCD6),
          rv::csrr(t1, 0xCD9),
          rv::csrr(t2, 0xCD3),
          mul(t0, t0, t1),
          rv::add(t0, t0, t2),
          slli(t1, t0, 2),
          rv::add(t1, t1, a0),
          rv::lw(t4, a0, 0),
          rv::sw(t0, t1, 64),
          rv::csrr(t5, 0xB00),
          rv::ret()};
}

struct Recorder final : DeviceObserver {
  struct Copy {
    InsnClass cls;
    uint32_t pc, tmask, csr, cta;
    uint64_t instret;
    std::vector<uint32_t> values;
    std::vector<ObservedAccess> accesses;
  };
  std::vector<Copy> seen;
  int launches = 0;
  void launch_started(const LaunchState&) override { ++launches; }
  void retired(const Observation& o) override {
    seen.push_back({o.cls, o.pc, o.tmask, o.csr, o.cta_linear, o.launch_instret,
                    std::vector<uint32_t>(o.values.begin(), o.values.end()),
                    std::vector<ObservedAccess>(o.accesses.begin(), o.accesses.end())});
  }
};

}  // namespace

TEST_CASE("An observer sees each load's value and address, each store's bytes and each CSR read") {
  Bench b;
  b.load_kernel(kernel());
  b.write32(Bench::kData, 0x1234);
  Recorder rec;
  b.m.set_observer(&rec);
  RunResult r = b.run_grid({2, 1, 1}, {8, 1, 1}, 0, Bench::kData);
  REQUIRE(r.stop == RunStop::LaunchDone);
  CHECK(rec.launches == 1);
  const uint32_t load_pc = Bench::kKernel + 7 * 4, store_pc = Bench::kKernel + 8 * 4, csr_pc = Bench::kKernel + 9 * 4;
  int loads = 0, stores = 0, mcycle = 0;
  for (const Recorder::Copy& c : rec.seen) {
    if (c.pc == load_pc) {
      ++loads;
      CHECK(c.cls == InsnClass::Load);
      REQUIRE(c.accesses.size() == 4);
      for (const ObservedAccess& a : c.accesses) {
        CHECK(a.addr == Bench::kData);
        CHECK(a.kind == kWatchRead);
        CHECK(c.values[a.lane] == 0x1234);
      }
    } else if (c.pc == store_pc) {
      ++stores;
      CHECK(c.cls == InsnClass::Store);
      REQUIRE(c.accesses.size() == 4);
      for (const ObservedAccess& a : c.accesses) CHECK(a.kind == kWatchWrite);
    } else if (c.pc == csr_pc) {
      ++mcycle;
      CHECK(c.cls == InsnClass::Csr);
      CHECK(c.csr == 0xB00);
      // mcycle counts the launch's instructions before this one.
      CHECK(c.values[0] == c.instret - 1);
    }
  }
  CHECK(loads == 4);  // 2 CTAs x 2 warps
  CHECK(stores == 4);
  CHECK(mcycle == 4);
}

TEST_CASE("Observing changes nothing: the same instructions, memory and schedule with and without an observer") {
  auto run = [](bool observe, uint64_t seed) {
    Bench b(DeviceConfig{}, RunOptions{seed, 1'000'000});
    b.load_kernel(kernel());
    Recorder rec;
    if (observe) b.m.set_observer(&rec);
    RunResult r = b.run_grid({4, 1, 1}, {8, 1, 1}, 0, Bench::kData);
    REQUIRE(r.stop == RunStop::LaunchDone);
    std::vector<uint32_t> out;
    for (uint32_t i = 0; i < 32; ++i) out.push_back(b.read32(Bench::kData + 64 + 4 * i));
    return std::tuple{b.m.stats().instructions, out, b.m.scheduler().rng, rec.seen.size()};
  };
  auto [n1, m1, rng1, seen1] = run(false, 5);
  auto [n2, m2, rng2, seen2] = run(true, 5);
  CHECK(n1 == n2);
  CHECK(m1 == m2);
  CHECK(rng1 == rng2);
  CHECK(seen1 == 0);
  CHECK(seen2 > 0);
}

TEST_CASE("set_observer(nullptr) stops the reports") {
  Bench b;
  b.load_kernel(kernel());
  Recorder rec;
  b.m.set_observer(&rec);
  b.m.set_observer(nullptr);
  REQUIRE(b.run_grid({1, 1, 1}, {4, 1, 1}, 0, Bench::kData).stop == RunStop::LaunchDone);
  CHECK(rec.seen.empty());
  CHECK(rec.launches == 0);
}

TEST_CASE("Instruction classes come from the table rows") {
  CHECK(decode(rv::lw(t0, a0, 0)).cls == InsnClass::Load);
  CHECK(decode(rv::sw(t0, a0, 0)).cls == InsnClass::Store);
  CHECK(decode(r_type(0, t1, a0, 2, t0, 0x2f)).cls == InsnClass::Atomic);  // amoadd.w
  CHECK(decode(rv::csrr(t0, 0xB00)).cls == InsnClass::Csr);
  CHECK(decode(rv::addi(t0, t0, 1)).cls == InsnClass::Other);
}

TEST_CASE("A write reports the bytes it found and the bytes it wrote, lowest lane first") {
  // Every lane: an AMO adding 1 to the word at a0, with rd = rs2 (the operand is gone after it),
  // then a byte store of its global index to a0 + 64, all lanes to one byte.
  const std::vector<uint32_t> code{rv::csrr(t0, 0xCD6),
                                   rv::csrr(t1, 0xCD9),
                                   rv::csrr(t2, 0xCD3),
                                   mul(t0, t0, t1),
                                   rv::add(t0, t0, t2),
                                   rv::li(t1, 1),
                                   r_type(0, t1, a0, 2, t1, 0x2f),  // amoadd.w t1, t1, (a0)
                                   s_type(64, t0, a0, 0, 0x23),     // sb t0, 64(a0)
                                   rv::ret()};
  Bench b;
  b.load_kernel(code);
  b.write32(Bench::kData, 100);
  Recorder rec;
  b.m.set_observer(&rec);
  REQUIRE(b.run_grid({1, 1, 1}, {8, 1, 1}, 0, Bench::kData).stop == RunStop::LaunchDone);
  const uint32_t amo_pc = Bench::kKernel + 6 * 4, sb_pc = Bench::kKernel + 7 * 4;
  // The adds chain in execution order: each write's `before` is the previous one's `after`.
  uint32_t counter = 100, amos = 0, bytes = 0;
  uint32_t last_byte = 0;
  for (const Recorder::Copy& c : rec.seen) {
    if (c.pc == amo_pc) {
      uint32_t prev_lane = 0;
      bool first = true;
      for (const ObservedAccess& a : c.accesses) {
        // The AMO's write and its read are both reported, with the write's values.
        if (!first && a.lane == prev_lane) {
          CHECK(a.after == counter);
          continue;
        }
        first = false;
        prev_lane = a.lane;
        CHECK(a.before == counter);
        CHECK(a.after == counter + 1);
        ++counter;
        ++amos;
      }
    } else if (c.pc == sb_pc) {
      REQUIRE(c.accesses.size() == 4);
      for (size_t i = 0; i < c.accesses.size(); ++i) {
        const ObservedAccess& a = c.accesses[i];
        CHECK(a.size == 1);
        CHECK(a.before == (i == 0 ? last_byte : c.accesses[i - 1].after));
        last_byte = a.after;
        ++bytes;
      }
      // The highest lane's byte is what memory holds after the instruction.
    }
  }
  CHECK(amos == 8);
  CHECK(bytes == 8);
  CHECK(b.read32(Bench::kData) == 108);
  CHECK((b.read32(Bench::kData + 64) & 0xff) == last_byte);
}
