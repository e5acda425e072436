// Questions over a session's history (docs/time-travel.md, "Questions over the history"): every
// write a kernel instruction made to memory, with who made it and the bytes before and after, and
// every execution of chosen pcs, gathered by one quiet re-execution of the history under a device
// observer (engine::Session::observe_history), then asked as often as needed.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "checkpoint/records.hpp"
#include "device/config.hpp"
#include "device/driver.hpp"
#include "device/isa.hpp"
#include "device/state.hpp"
#include "engine/session.hpp"

namespace vx::replay {

// A linear index in a 3-D shape, and back to coordinates ("(1,0,0)").
std::array<uint32_t, 3> split3(uint64_t linear, const std::array<uint32_t, 3>& shape);
std::string dims3(const std::array<uint32_t, 3>& d);
// "CTA (1,0,0) thread (3,0,0)" for thread `thread` of CTA `unit` of a grid launch, "instance 5" for
// an instance launch's thread.
std::string thread_text(const LaunchState& l, uint32_t unit, uint32_t thread);

// A thread of a launch in software coordinates, as a kernel names it.
struct LaunchThread {
  bool grid = true;
  uint32_t cta = 0;     // grid: the CTA's linear index
  uint32_t thread = 0;  // grid: the thread's linear index in its CTA; instances: the instance
};

// One write of one lane to memory.
struct WriteRecord {
  engine::TimePoint when;  // the launch's count with the writing instruction (it has retired then)
  uint32_t pc = 0;
  uint32_t core = 0, slot = 0, lane = 0;
  LaunchThread who;
  uint32_t addr = 0;  // after the memory windows; local memory keeps its 0xffff.... address
  uint8_t size = 0;
  bool local = false;  // core `core`'s local memory
  bool atomic = false;
  uint32_t before = 0, after = 0;  // the low `size` bytes, little-endian
};

// One execution of a watched pc by a warp.
struct ExecutionRecord {
  engine::TimePoint when;  // the launch's count with the instruction
  uint32_t pc = 0;
  uint32_t core = 0, slot = 0;
  uint32_t tmask = 0;  // the lanes that executed it
  // The threads of its lanes: grid launches (CTA, rank), instance launches instance_base + lane.
  bool grid = true;
  uint32_t cta = 0, rank = 0, instance_base = 0;
};

// A place in memory: `len` bytes at `addr`, in global memory or in core `core`'s local memory.
struct MemoryPlace {
  uint32_t addr = 0;
  uint32_t len = 0;
  bool local = false;
  uint32_t core = 0;
  bool overlaps(const WriteRecord& w) const {
    return w.local == local && (!local || w.core == core) && uint64_t(w.addr) + w.size > addr &&
           uint64_t(addr) + len > w.addr;
  }
};

// The observer of a history pass, and what it gathered, launch by launch. A launch's writes can
// also come from the recording (docs/store.md "History"): `record` gives what to store, `load`
// takes it back.
class HistoryIndex final : public DeviceObserver {
 public:
  explicit HistoryIndex(const DeviceConfig& config) : cfg_(config) {}
  // Also keep every execution of these pcs (empty: none).
  void watch_pcs(std::set<uint32_t> pcs) { pcs_ = std::move(pcs); }
  bool wants_every_instruction() const override { return !pcs_.empty(); }
  bool wants_reads() const override { return false; }

  // Session::observe_history's launch_begins.
  void begin_launch(uint32_t launch, const LaunchState& state);
  // What the pass of a launch ended with (Session::HistoryPass).
  void end_launch(const engine::Session::HistoryPass& pass);
  void launch_started(const LaunchState&) override {}
  void retired(const Observation& o) override;

  // A launch's writes and pass as the store keeps them, and back (replacing what the index held
  // of that launch), cut at `until` as a pass to there would have ended. load() fails on a record
  // that does not fit the device shape.
  checkpoint::HistoryRecord record(uint32_t launch) const;
  // The same in chunks (a launch can hold millions of writes): the record without its writes, how
  // many there are and where to read them (valid while the index holds the launch); and reading
  // one back: the sink to hand to Store::history, then load_finish with the record it returned
  // (or load_drop when the reading failed).
  checkpoint::HistoryRecord head(uint32_t launch) const;
  size_t write_count(uint32_t launch) const;
  checkpoint::HistoryWriteSource source(uint32_t launch) const;
  checkpoint::HistoryWriteSink loader(uint32_t launch, uint64_t until);
  void load_finish(const checkpoint::HistoryRecord& head, uint64_t until);
  void load_drop() { loading_.clear(); }
  // Moves what `from` holds of a launch (its writes, pass and thread naming) into this index.
  void adopt(HistoryIndex& from, uint32_t launch);
  Result<void> load(const checkpoint::HistoryRecord& rec, uint64_t until = UINT64_MAX);

  // The writes held, over every launch.
  uint64_t write_count() const;
  const std::vector<ExecutionRecord>& executions() const { return executions_; }
  // The writes to any byte of `place` at or before `until`, in time order (lanes of one
  // instruction lowest first).
  std::vector<const WriteRecord*> writes_to(const MemoryPlace& place, engine::TimePoint until) const;
  // Per byte of `place`: the last write to it at or before `until` (nullptr: none in the history).
  std::vector<const WriteRecord*> last_writers(const MemoryPlace& place, engine::TimePoint until) const;
  // How a person names the thread: "CTA (1,0,0) thread (3,0,0)" or "instance 5".
  std::string thread_name(uint32_t launch, const LaunchThread& t) const;
  const LaunchState* launch(uint32_t n) const;
  // Per launch passed: where its pass ended, and the intervals it could not re-execute.
  const std::map<uint32_t, engine::Session::HistoryPass>& passes() const { return passes_; }
  // The memory the index holds, in bytes (docs/time-travel.md quotes it).
  uint64_t bytes() const;

 private:
  DeviceConfig cfg_;
  std::set<uint32_t> pcs_;
  uint32_t launch_ = 0;
  std::map<uint32_t, LaunchState> launches_;
  // Per launch, in time order. A deque: a history of millions of writes grows without copying them
  // (a vector's reallocations were a third of the gathering's time).
  std::map<uint32_t, std::deque<WriteRecord>> writes_;
  std::deque<WriteRecord>* current_ = nullptr;  // launch_'s
  std::map<uint32_t, engine::Session::HistoryPass> passes_;
  std::deque<WriteRecord> loading_;     // a launch being read back (loader)
  const LaunchState* state_ = nullptr;  // launch_'s
  std::vector<ExecutionRecord> executions_;
};

// An input a value was computed from, through a thread's registers: a load (or an atomic's read)
// of memory, a CSR, or other lanes (a vote or shuffle). What a value computed only from immediates
// and the launch's initial registers has: none.
struct ValueSource {
  enum class Kind : uint8_t { Load, Csr, Lanes };
  Kind kind = Kind::Load;
  engine::TimePoint when;  // the reading instruction's
  uint32_t pc = 0;
  uint32_t addr = 0;  // Load: where (local memory: 0xffff.... of core `core`); Csr: the CSR
  uint8_t size = 0;
  bool local = false;
  uint32_t core = 0;
  uint32_t value = 0;  // what was read (the lane's rd after it)
  auto key() const { return std::tuple(when, pc, addr, uint8_t(kind)); }
};

// Follows threads through their registers (origin -depth): for each target write, the inputs the
// written value was computed from, from the thread's launch start to the write. One pass of the
// history follows every target at once (Session::observe_history; every instruction observed).
class DataflowTracker final : public DeviceObserver {
 public:
  DataflowTracker(const DeviceConfig& config, std::vector<WriteRecord> targets);
  bool wants_every_instruction() const override { return true; }
  void begin_launch(uint32_t launch) { launch_ = launch; }
  // The pass went from `from` to `to` of `launch` without re-executing it (an interval a live
  // session ran by Debug Module steps, Session::observe_history): what the followed threads did
  // there is not known, so every register of theirs is marked unseen until an instruction seen
  // writes it from registers that are not.
  void skipped(uint32_t launch, uint64_t from, uint64_t to);
  void launch_started(const LaunchState&) override {}
  void retired(const Observation& o) override;
  // Per target (in the order given): the inputs of its written value, in time order; whether the
  // write was reached, and whether the list was cut at kMaxSources.
  struct Result {
    std::vector<ValueSource> sources;
    bool reached = false;
    bool truncated = false;
    bool unseen = false;  // the value may come from an interval not re-executed (skipped)
  };
  const std::vector<Result>& results() const { return results_; }
  // Register r (0..31 x, 32..63 f) of target k's thread as the pass left it: at the target's
  // point when the pass went past it. A target with pc 0 is never reached: it follows the thread
  // up to its `when` (origin of a register). The last instruction that wrote the register (none:
  // it holds what the launch started with) and the inputs of its value.
  struct RegisterState {
    std::optional<engine::TimePoint> written;
    uint32_t pc = 0;
    const std::vector<ValueSource>* sources = nullptr;
    // The value may have been written, or computed from registers written, in an interval not
    // re-executed: the last one the thread crossed (launch, from, to).
    bool unseen = false;
    std::tuple<uint32_t, uint64_t, uint64_t> interval{};
  };
  RegisterState register_state(size_t k, unsigned r) const;
  static constexpr size_t kMaxSources = 1024;

 private:
  struct Followed {
    WriteRecord target;
    std::array<std::vector<ValueSource>, 64> regs;                  // x0..x31, then f0..f31
    std::array<std::pair<engine::TimePoint, uint32_t>, 64> last{};  // each register's last writer (launch 0: none)
    std::array<bool, 64> unseen{};                                  // see skipped()
    std::tuple<uint32_t, uint64_t, uint64_t> interval{};            // the last interval skipped
  };
  DeviceConfig cfg_;
  uint32_t launch_ = 0;
  std::vector<Followed> followed_;
  std::vector<Result> results_;
};

}  // namespace vx::replay
