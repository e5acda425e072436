// The schedule pinned to kSchedulerVersion (device/config.hpp): recordings keep the version and a
// replay under another one is refused, so any change to which warp runs when must bump it. This test
// fixes the whole schedule of a small racy kernel on two shapes and seeds; a change to the scheduler
// (its order, its quantum, its use of the seed) changes the value and fails here.
#include <catch2/catch.hpp>
#include <sstream>

#include "device/test_support.hpp"

using namespace vx;
using namespace vx::test;

namespace {

constexpr uint32_t kTidX = 0xCD3;
constexpr uint32_t slli(uint32_t rd, uint32_t rs1, uint32_t sh) { return i_type(int32_t(sh), rs1, 1, rd, 0x13); }

struct ScheduleTrace {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a over (core, slot) of every instruction, in order
  std::string first;                      // the first decisions, for the failure message
  uint64_t instructions = 0;
};

// Runs the launch one warp instruction at a time and records which warp retired each.
ScheduleTrace schedule_of(const DeviceConfig& cfg, uint64_t seed) {
  Bench b(cfg, RunOptions{seed, 1'000'000});
  // Every thread increments a shared word without atomics (a race whose result depends on the
  // schedule) and stores what it saw.
  b.load_kernel({rv::lui(t3, 0x20), rv::lw(t5, t3, 0), rv::addi(t5, t5, 1), rv::addi(zero, zero, 0), rv::sw(t5, t3, 0),
                 rv::csrr(t0, kTidX), slli(t6, t0, 2), rv::add(t6, t6, t3), rv::sw(t5, t6, 0x100), rv::ret()});
  REQUIRE(b.m.start_launch(Bench::grid_launch({6, 1, 1}, {12, 1, 1})).ok());
  std::vector<uint64_t> instret;
  auto snapshot = [&] {
    std::vector<uint64_t> out;
    for (uint32_t c = 0; c < b.m.num_cores(); ++c)
      for (const WarpState& w : b.m.core(c).warps) out.push_back(w.instret);
    return out;
  };
  ScheduleTrace s;
  std::ostringstream first;
  instret = snapshot();
  for (;;) {
    RunResult r = b.m.run(1);
    auto now = snapshot();
    for (size_t i = 0; i < now.size(); ++i)
      if (now[i] != instret[i]) {
        const uint32_t core = uint32_t(i / cfg.warps), slot = uint32_t(i % cfg.warps);
        for (uint32_t v : {core, slot}) s.hash = (s.hash ^ v) * 0x100000001b3ull;
        if (s.instructions < 24) first << " (" << core << "," << slot << ")";
        ++s.instructions;
      }
    instret = std::move(now);
    if (r.stop == RunStop::LaunchDone) break;
    REQUIRE(r.stop == RunStop::Budget);
  }
  s.first = first.str();
  return s;
}

}  // namespace

TEST_CASE("the schedule of a fixed kernel, shape and seed is the one kSchedulerVersion names") {
  struct Pinned {
    DeviceConfig cfg;
    uint64_t seed;
    uint64_t hash;
  };
  DeviceConfig two_cores;
  two_cores.cores_per_cluster = 2;
  const Pinned pinned[] = {
      {DeviceConfig{}, 1, 0x9344a4f66cd7fb1cull},
      {DeviceConfig{}, 7, 0x5647e5897feb0484ull},
      {two_cores, 3, 0x0544f31fa2b83afeull},
  };
  REQUIRE(kSchedulerVersion == 2);  // the values below are version 2's
  for (const Pinned& p : pinned) {
    const ScheduleTrace s = schedule_of(p.cfg, p.seed);
    INFO("shape " << p.cfg.to_string() << ", seed " << p.seed << ": " << s.instructions
                  << " warp instructions; first (core,slot):" << s.first);
    INFO("the schedule changed: bump kSchedulerVersion and update this value (now 0x" << std::hex << s.hash << ")");
    CHECK(s.hash == p.hash);
  }
}
