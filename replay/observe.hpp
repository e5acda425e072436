// What each logical thread of a run observed (docs/nondeterminism.md): the device's observations
// (device/driver.hpp, DeviceObserver) regrouped by software coordinates, so that two runs under
// different schedules can be compared thread by thread (replay/diff.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "device/config.hpp"
#include "device/driver.hpp"

namespace vx::replay {

// A logical thread: the launch (1-based) and its place in the launch's work, independent of where
// the schedule put it (core, warp slot).
struct ThreadKey {
  uint32_t launch = 0;
  uint32_t unit = 0;    // grid: linear CTA index; instances: 0
  uint32_t thread = 0;  // grid: linear thread index in the CTA (rank * NT + lane); instances: the instance
  auto operator<=>(const ThreadKey&) const = default;
};

// The write that produced a value a thread read (the last write to its first byte before the read).
// Kept for every byte written and every read: small on purpose.
struct Writer {
  uint64_t launch_instret = 0;
  uint32_t thread = 0;  // index into ObservationLog::threads()
  uint32_t pc = 0;
  uint16_t core = 0;
  uint8_t slot = 0, lane = 0;
  bool valid = false;
};

// One observation of one thread: an instruction whose result can depend on other threads or on the
// schedule. `key` is what is compared between runs: the value with the placement taken out.
struct ThreadObs {
  uint64_t key = 0;             // comparable value (see ObservationLog::normalize)
  uint64_t launch_instret = 0;  // the launch's time of the instruction (its own count included)
  uint32_t pc = 0;
  uint32_t word = 0;
  uint32_t value = 0;  // rd as read (0 for a store)
  uint32_t addr = 0;   // the lane's access address (loads, stores, atomics); CSR number for CSR reads
  uint16_t core = 0;
  uint8_t slot = 0, lane = 0;
  InsnClass cls = InsnClass::Other;
  bool local = false;
  bool compared = true;  // false: the value is the thread's placement (mhartid, warp id, ...), not compared
  Writer writer;         // loads and atomics: who wrote what was read
};

struct ObservedThread {
  ThreadKey key;
  // Compared against a reference run (ObservationLog::compare_with): how many of its first compared
  // observations equal the reference thread's; they are not kept. obs holds what follows.
  uint64_t matched = 0;
  bool diverged = false;
  std::vector<ThreadObs> obs;
};

// Reads the instruction word at pc from the kernel's code; false when there is none.
using CodeReader = std::function<bool(uint32_t pc, uint32_t* word)>;

// Whether the value an AMO returns in rd is used: read before it is overwritten in the straight-line
// code after it (a branch or jump ends the look: used). An unused result (a counter bumped for its
// side effect) is not an observation the diff compares.
bool atomic_result_used(const CodeReader& code, uint32_t pc, uint32_t word);

// Observes a run. Set it with Driver::set_observer before the workload starts.
class ObservationLog final : public DeviceObserver {
 public:
  // skip: a pc range [lo, hi) whose observations are placement, not the kernel's work (the image's
  // startup code, which a re-used warp slot skips); {0, 0}: none. code: the kernel's instructions
  // (atomic_result_used); empty: every atomic result counts as used.
  ObservationLog(const DeviceConfig& config, std::pair<uint32_t, uint32_t> skip, CodeReader code = {});

  void launch_started(const LaunchState& launch) override;
  void retired(const Observation& o) override;
  // Run B of a diff: observations equal to the reference's (run A's, same thread, same place in
  // its sequence) are counted instead of kept, until the thread's first difference. Set before the run.
  void compare_with(const ObservationLog* reference) { reference_ = reference; }

  const std::vector<ObservedThread>& threads() const { return threads_; }
  // The index of a thread in threads(), or -1.
  int64_t find(const ThreadKey& key) const;
  const LaunchState& launch(uint32_t index) const { return launches_.at(index - 1); }
  uint32_t launches() const { return uint32_t(launches_.size()); }
  uint64_t observations() const { return count_; }
  const DeviceConfig& config() const { return cfg_; }

 private:
  uint32_t thread_index(const Observation& o, uint32_t lane);
  void keep(uint32_t thread, const ThreadObs& t);
  const ObservationLog* reference_ = nullptr;
  std::vector<int64_t> reference_index_;    // per thread: the reference's thread (-1: none), found once
  std::vector<uint64_t> reference_cursor_;  // per thread: position in the reference's obs
  uint64_t normalize(const Observation& o, uint32_t lane, uint32_t v) const;
  // The shadow memory: the last writer of each byte (global memory, and each core's local memory).
  Writer* shadow(uint64_t addr);

  DeviceConfig cfg_;
  std::pair<uint32_t, uint32_t> skip_;
  CodeReader code_;
  std::unordered_map<uint32_t, bool> atomic_used_;  // by pc
  std::vector<LaunchState> launches_;
  std::vector<ObservedThread> threads_;
  std::unordered_map<uint64_t, uint32_t> index_;  // packed (launch, unit, thread) -> threads_ index
  // The current launch's threads by (unit, thread), dense: most lookups are here.
  std::vector<int32_t> dense_;
  uint32_t dense_threads_ = 0;  // threads per unit in dense_
  std::unordered_map<uint64_t, std::unique_ptr<std::array<Writer, 4096>>> shadow_;
  uint64_t shadow_page_ = ~0ull;
  std::array<Writer, 4096>* shadow_last_ = nullptr;
  uint64_t count_ = 0;
};

// True for the CSRs that name where a thread runs (hart, warp, core, CTA slot, its local memory
// address): the schedule's placement, which a diff does not report.
bool placement_csr(uint32_t csr);

}  // namespace vx::replay
