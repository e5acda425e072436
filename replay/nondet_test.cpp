// The race detector's rules (replay/races.hpp) and the per-thread diff (replay/diff.hpp) on
// observations made by hand, as the device reports them.
#include <catch2/catch.hpp>
#include <vector>

#include "device/encode.hpp"
#include "replay/diff.hpp"
#include "replay/races.hpp"

using namespace vx;
using namespace vx::replay;
using namespace vx::test;

namespace {

constexpr uint32_t kAddr = 0x20000;

LaunchState grid(uint32_t ctas, uint32_t warps_per_cta) {
  LaunchState l;
  l.kind = LaunchKind::Grid;
  l.grid = {ctas, 1, 1};
  l.block = {warps_per_cta * 4, 1, 1};
  l.warps_per_cta = warps_per_cta;
  l.total_units = ctas;
  return l;
}

// One instruction of warp `rank` of CTA `cta` (lanes in `lanes`), each lane accessing addr.
struct Insn {
  InsnClass cls;
  uint32_t cta, rank, pc;
  std::vector<uint32_t> lanes;
  uint32_t addr = kAddr;
  bool local = false;
  std::vector<uint32_t> values = std::vector<uint32_t>(4, 0);
  uint64_t instret = 1;
  uint32_t core = 0;
  uint32_t instance_base = 0;  // instance launches
};

void feed(DeviceObserver& obs, const Insn& i) {
  std::vector<ObservedAccess> acc;
  const uint8_t kind = i.cls == InsnClass::Load    ? uint8_t(kWatchRead)
                       : i.cls == InsnClass::Store ? uint8_t(kWatchWrite)
                                                   : uint8_t(kWatchRead | kWatchWrite);
  uint32_t mask = 0;
  for (uint32_t l : i.lanes) {
    mask |= 1u << l;
    if (i.cls == InsnClass::Load || i.cls == InsnClass::Store || i.cls == InsnClass::Atomic)
      acc.push_back(ObservedAccess{l, i.addr, 4, kind, i.local});
  }
  Observation o;
  o.cls = i.cls;
  o.core = i.core;
  o.slot = i.rank;
  o.instance_base = i.instance_base;
  o.pc = i.pc;
  o.word = i.cls == InsnClass::Atomic ? r_type(0, t1, a0, 2, t0, 0x2f) : rv::lw(t0, a0, 0);
  o.tmask = mask;
  o.launch_instret = i.instret;
  o.cta_linear = i.cta;
  o.cta_rank = i.rank;
  o.values = i.values;
  o.accesses = acc;
  obs.retired(o);
}

std::vector<RaceKind> kinds(const RaceDetector& d) {
  std::vector<RaceKind> k;
  for (const Race& r : d.races()) k.push_back(r.kind);
  return k;
}

}  // namespace

TEST_CASE("Two warps of a CTA writing one word race unless a barrier separates them") {
  RaceDetector d(DeviceConfig{});
  d.launch_started(grid(1, 2));
  feed(d, {InsnClass::Store, 0, 0, 0x100, {0}});
  feed(d, {InsnClass::Store, 0, 1, 0x200, {0}});
  CHECK(kinds(d) == std::vector{RaceKind::WriteWrite});

  RaceDetector ok(DeviceConfig{});
  ok.launch_started(grid(1, 2));
  feed(ok, {InsnClass::Store, 0, 0, 0x100, {0}});
  feed(ok, {InsnClass::Barrier, 0, 0, 0x104, {0, 1, 2, 3}});
  feed(ok, {InsnClass::Barrier, 0, 1, 0x104, {0, 1, 2, 3}});
  feed(ok, {InsnClass::Load, 0, 1, 0x200, {0}});
  CHECK(ok.races().empty());
}

TEST_CASE("Lanes of one warp: ordered between instructions, their own kind within one store") {
  RaceDetector d(DeviceConfig{});
  d.launch_started(grid(1, 1));
  feed(d, {InsnClass::Store, 0, 0, 0x100, {0}});
  feed(d, {InsnClass::Load, 0, 0, 0x104, {1}});
  CHECK(d.races().empty());
  feed(d, {InsnClass::Store, 0, 0, 0x108, {0, 1, 2}});
  CHECK(kinds(d) == std::vector{RaceKind::SameInstruction});
}

TEST_CASE("Atomics never race with each other, and an atomic release orders another CTA's later reads") {
  RaceDetector d(DeviceConfig{});
  d.launch_started(grid(2, 1));
  feed(d, {InsnClass::Atomic, 0, 0, 0x100, {0}});
  feed(d, {InsnClass::Atomic, 1, 0, 0x100, {0}});
  CHECK(d.races().empty());
  // CTA 0 writes data, then releases a flag; CTA 1 acquires the flag, then reads the data.
  feed(d, {InsnClass::Store, 0, 0, 0x200, {0}, kAddr + 64});
  feed(d, {InsnClass::Atomic, 0, 0, 0x204, {0}, kAddr + 128});
  feed(d, {InsnClass::Atomic, 1, 0, 0x300, {0}, kAddr + 128});
  feed(d, {InsnClass::Load, 1, 0, 0x304, {0}, kAddr + 64});
  CHECK(d.races().empty());
  // Without the acquire, CTA 1's write to the data races with CTA 0's.
  feed(d, {InsnClass::Store, 0, 0, 0x400, {0}, kAddr + 256});
  feed(d, {InsnClass::Store, 1, 0, 0x500, {0}, kAddr + 256});
  CHECK(kinds(d) == std::vector{RaceKind::WriteWrite});
}

TEST_CASE("Local memory belongs to its CTA, the launch boundary orders everything, stacks are not checked") {
  RaceDetector d(DeviceConfig{});
  d.launch_started(grid(2, 1));
  feed(d, {InsnClass::Store, 0, 0, 0x100, {0}, 0xFFFF0000, true});
  feed(d, {InsnClass::Store, 1, 0, 0x200, {0}, 0xFFFF0000, true});
  feed(d, {InsnClass::Store, 0, 0, 0x100, {0}, 0xFFFEF000});
  feed(d, {InsnClass::Store, 1, 0, 0x200, {0}, 0xFFFEF000});
  feed(d, {InsnClass::Store, 0, 0, 0x300, {0}});
  d.launch_started(grid(2, 1));
  feed(d, {InsnClass::Store, 1, 0, 0x400, {0}});
  CHECK(d.races().empty());
}

TEST_CASE("A race's two accesses say when and where they ran: the launch's count, core, slot, lane") {
  DeviceConfig cfg;
  cfg.cores_per_cluster = 2;
  RaceDetector d(cfg);
  d.launch_started(grid(2, 2));
  const std::vector<uint32_t> v(4, 0);
  feed(d, {InsnClass::Store, 0, 1, 0x100, {1}, kAddr, false, v, 7, 0});
  feed(d, {InsnClass::Store, 1, 0, 0x200, {2}, kAddr, false, v, 12, 1});
  REQUIRE(d.races().size() == 1);
  const Race& r = d.races()[0];
  CHECK((r.first.launch_instret == 7 && r.first.core == 0 && r.first.slot == 1 && r.first.lane == 1));
  CHECK((r.first.unit == 0 && r.first.thread == 5));
  CHECK((r.second.launch_instret == 12 && r.second.core == 1 && r.second.slot == 0 && r.second.lane == 2));
  CHECK((r.second.unit == 1 && r.second.thread == 2));

  // Lanes of one store: one point and warp, two lanes.
  feed(d, {InsnClass::Store, 1, 1, 0x300, {0, 3}, kAddr + 64, false, v, 20, 1});
  REQUIRE(d.races().size() == 2);
  const Race& s = d.races()[1];
  CHECK(s.kind == RaceKind::SameInstruction);
  CHECK((s.first.launch_instret == 20 && s.first.core == 1 && s.first.slot == 1 && s.first.lane == 0));
  CHECK((s.second.launch_instret == 20 && s.second.core == 1 && s.second.slot == 1 && s.second.lane == 3));

  // The earlier access's count is exact past 2^32 too (kept modulo 2^32: within 2^32 of the race).
  const uint64_t late = (1ull << 32) + 3;
  feed(d, {InsnClass::Load, 1, 0, 0x400, {3}, kAddr + 64, false, v, late, 1});
  REQUIRE(d.races().size() == 3);
  CHECK(d.races()[2].first.launch_instret == 20);
  CHECK(d.races()[2].second.launch_instret == late);
  feed(d, {InsnClass::Store, 0, 0, 0x500, {1}, kAddr + 128, false, v, late + 5, 0});
  feed(d, {InsnClass::Store, 1, 0, 0x600, {0}, kAddr + 128, false, v, late + (1ull << 31), 1});
  REQUIRE(d.races().size() == 4);
  CHECK(d.races()[3].first.launch_instret == late + 5);

  // Instances: each its own unit; the lane is where the instance ran.
  RaceDetector in(cfg);
  LaunchState l;
  l.kind = LaunchKind::Instances;
  l.total_units = 16;
  in.launch_started(l);
  feed(in, {InsnClass::Store, 0, 2, 0x100, {3}, kAddr, false, v, 4, 1, 8});
  feed(in, {InsnClass::Store, 0, 0, 0x200, {1}, kAddr, false, v, 9, 0, 0});
  REQUIRE(in.races().size() == 1);
  const Race& i = in.races()[0];
  CHECK((i.first.thread == 11 && i.first.core == 1 && i.first.slot == 2 && i.first.lane == 3));
  CHECK((i.second.thread == 1 && i.second.core == 0 && i.second.slot == 0 && i.second.lane == 1));
  CHECK((i.first.launch_instret == 4 && i.second.launch_instret == 9));
}

TEST_CASE("A diff finds the first differing read per thread, in run A's time, with its writer") {
  auto run = [](uint32_t value, uint64_t when) {
    auto log = std::make_unique<ObservationLog>(DeviceConfig{}, std::pair<uint32_t, uint32_t>{0, 0});
    log->launch_started(grid(1, 2));
    feed(*log, {InsnClass::Store, 0, 1, 0x200, {3}, kAddr, false, {0, 0, 0, 0}, 1});
    Insn load{InsnClass::Load, 0, 0, 0x100, {0, 1}};
    load.values = {7, value, 0, 0};
    load.instret = when;
    feed(*log, load);
    return log;
  };
  auto a = run(9, 5), b = run(11, 8);
  RunEnd end{"exit 0", {}, {}};
  DiffReport r = diff_runs(*a, end, *b, end);
  REQUIRE(r.first);
  CHECK(r.first->kind == DivergenceKind::Value);
  CHECK(r.first->thread.thread == 1);  // lane 1 of warp 0
  CHECK(r.first->a->value == 9);
  CHECK(r.first->b->value == 11);
  CHECK(r.first->a->launch_instret == 5);
  REQUIRE(r.first->writer_a);
  CHECK(r.first->writer_a->thread == 7);  // warp 1, lane 3
  CHECK(r.threads_diverged == 1);
  DiffReport same = diff_runs(*a, end, *run(9, 6), end);
  CHECK(same.same());
}

TEST_CASE("Run B compared while it runs keeps only what differs, and the diff is the same") {
  auto run = [](uint32_t value, const ObservationLog* reference) {
    auto log = std::make_unique<ObservationLog>(DeviceConfig{}, std::pair<uint32_t, uint32_t>{0, 0});
    log->compare_with(reference);
    log->launch_started(grid(1, 1));
    for (uint32_t k = 0; k < 3; ++k) {
      Insn load{InsnClass::Load, 0, 0, 0x100 + 4 * k, {0, 1}};
      load.values = {k, k == 2 ? value : k, 0, 0};
      load.instret = k + 1;
      feed(*log, load);
    }
    return log;
  };
  auto a = run(5, nullptr);
  auto b = run(6, a.get());
  RunEnd end{"exit 0", {}, {}};
  DiffReport r = diff_runs(*a, end, *b, end);
  REQUIRE(r.first);
  CHECK(r.first->index == 2);
  CHECK(r.first->a->value == 5);
  CHECK(r.first->b->value == 6);
  CHECK(r.threads_diverged == 1);
  uint64_t kept = 0;
  for (const ObservedThread& t : b->threads()) kept += t.obs.size();
  CHECK(kept == 1);
  CHECK(diff_runs(*a, end, *run(5, a.get()), end).same());
}

TEST_CASE("An atomic's result counts only when the code after it reads it") {
  const uint32_t amo = r_type(0, t1, a0, 2, t0, 0x2f);  // amoadd.w t0, t1, (a0)
  auto reader = [](std::vector<uint32_t> code) {
    return CodeReader([code](uint32_t pc, uint32_t* w) {
      const uint32_t i = (pc - 0x1000) / 4;
      if (i >= code.size()) return false;
      *w = code[i];
      return true;
    });
  };
  CHECK_FALSE(atomic_result_used(reader({amo, rv::li(t0, 0)}), 0x1000, amo));
  CHECK(atomic_result_used(reader({amo, rv::addi(t2, t0, 1)}), 0x1000, amo));
  CHECK(atomic_result_used(reader({amo, rv::bne(t1, zero, 8)}), 0x1000, amo));
  CHECK_FALSE(atomic_result_used(reader({}), 0x1000, r_type(0, t1, a0, 2, zero, 0x2f)));
}
