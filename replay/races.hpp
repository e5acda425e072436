// Data-race detection within each launch (docs/nondeterminism.md, "Races"): two accesses to the
// same bytes by different threads, at least one a write, not ordered by the kernel's
// synchronization. The rules, in short:
//   - program order orders a thread's own accesses, and a warp's instructions are executed one at
//     a time, so lanes of one warp are ordered between instructions (Vortex has no independent
//     thread scheduling); lanes of one warp writing the same bytes in ONE instruction is its own
//     kind of race (SameInstruction);
//   - a CTA barrier (BAR with the CTA's warps) orders everything its warps did before it with
//     everything they do after it;
//   - atomics never race with each other; every AMO, LR and SC acts as an acquire and a release
//     on its word, ordering what its CTA did before with what the acquiring CTA does after; the
//     first store to checked memory after a FENCE of its warp is a release store (what compilers
//     emit for an atomic store with release order) and counts as an atomic;
//   - the launch boundary orders everything; local memory is private to its CTA (a later CTA in
//     the same slot comes after the earlier one ended); each hart's stack and the console rings
//     are private to the hart and not checked.
// Each race is reported once per pair of source locations (PCs).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "device/config.hpp"
#include "device/driver.hpp"

namespace vx::replay {

enum class RaceKind : uint8_t {
  WriteWrite,       // two writes by different threads
  ReadWrite,        // a read and a write by different threads (either order)
  SameInstruction,  // lanes of one warp writing the same bytes in one instruction
};
const char* race_kind_name(RaceKind k);

struct RaceAccess {
  uint32_t pc = 0;
  bool write = false, atomic = false;
  uint32_t unit = 0, thread = 0;  // linear CTA and thread in it (instances: unit 0, the instance)
  // When and where it ran: the launch's warp instructions, its own included (Observation::launch_instret,
  // the timeline's axis), and the hardware coordinates.
  uint64_t launch_instret = 0;
  uint32_t core = 0, slot = 0, lane = 0;
};

struct Race {
  RaceKind kind = RaceKind::WriteWrite;
  uint32_t launch = 0;
  uint32_t addr = 0;
  bool local = false;
  uint32_t core = 0;         // local memory: the core
  RaceAccess first, second;  // second: the access that found the race
  uint64_t count = 1;        // conflicting byte accesses with this pair of PCs
  LaunchState shape;         // the launch's grid and block, to name threads
};

class RaceDetector final : public DeviceObserver {
 public:
  explicit RaceDetector(const DeviceConfig& config);
  ~RaceDetector() override;

  void launch_started(const LaunchState& launch) override;
  void retired(const Observation& o) override;

  // In the order they were found.
  const std::vector<Race>& races() const { return races_; }

 private:
  // Two per byte of checked memory (Cell): kept small. Where it ran is its warp's (warp_hart_).
  struct Access {
    uint32_t tid = 0;    // dense thread index in the launch + 1; 0: none
    uint32_t epoch = 0;  // the warp's barrier count; bit 31: atomic
    uint32_t clock = 0;  // the CTA's clock at the access
    uint32_t pc = 0;
    uint32_t instret = 0;  // launch_instret modulo 2^32 (describe: exact within 2^32 of the race's finding)
  };
  static_assert(sizeof(Access) == 20);
  struct Cell {
    Access write, read;
  };
  using Page = std::array<Cell, 4096>;
  Cell* cell(uint64_t key);
  bool ordered(const Access& prior, const Access& now, bool local) const;
  void report(RaceKind kind, const Access& prior, const Access& now, bool prior_write, bool now_write, uint32_t addr,
              bool local, uint32_t core, uint64_t at);
  // The access of `thread` of `unit` (instances: the instance) in lane `lane` of o; notes where its warp runs.
  Access access(const Observation& o, uint32_t unit, uint32_t thread, uint32_t lane, uint32_t epoch, uint32_t clock);
  // now: the launch's count when the race was found.
  RaceAccess describe(const Access& a, bool write, uint64_t now) const;

  DeviceConfig cfg_;
  LaunchState launch_;
  uint32_t launches_ = 0;
  uint32_t per_unit_ = 1;  // threads per CTA (rounded to whole warps)
  uint32_t warps_per_unit_ = 1;
  std::vector<uint32_t> warp_epoch_;  // per logical warp of the launch
  std::vector<uint8_t> warp_fenced_;  // per logical warp: a FENCE was its last memory instruction
  // Per logical warp (instances: per instance), its hart (core * warps + slot) * threads + lane (a grid
  // warp: lane 0's). A warp keeps its slot for life (a re-launch restores it there).
  std::vector<uint32_t> warp_hart_;
  std::vector<uint32_t> cta_clock_;  // per CTA
  // Vector clocks over CTAs, for the atomics' acquire and release; sparse (most CTAs see few others).
  std::vector<std::unordered_map<uint32_t, uint32_t>> cta_vc_;
  std::unordered_map<uint64_t, std::unordered_map<uint32_t, uint32_t>> sync_;  // by atomic word
  std::unordered_map<uint64_t, std::unique_ptr<Page>> shadow_;
  uint64_t page_key_ = ~0ull;
  Page* page_ = nullptr;
  std::map<std::array<uint32_t, 3>, size_t> seen_;  // (kind, pc, pc) -> index in races_
  std::vector<Race> races_;
  std::vector<ObservedAccess> writes_;  // scratch: the current instruction's writes
};

}  // namespace vx::replay
