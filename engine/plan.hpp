// The workload plan: the host's operations in the order the device saw them (allocations, copies,
// command buffers cut into pieces of at most one launch), a cursor over them, where each launch
// begins, and the memory the host holds. The session applies the entries in order; a move back in
// time sets the cursor back and applies them again. The plan is bookkeeping only: applying an
// entry to the device is the session's (session_plan.cpp). Its own state, reached by the session's
// other jobs only through these functions (docs/architecture.md, "The session by job").
#pragma once

#include <functional>
#include <map>
#include <span>
#include <vector>
#include "checkpoint/store.hpp"
#include "device/cmdproc.hpp"
#include "engine/session.hpp"

namespace vx::engine {

// A piece of a submitted command buffer: commands up to and including at most one launch. The
// engine submits pieces one at a time, so killing a launch loses nothing queued behind it.
struct Segment {
  std::vector<Command> commands;
  bool launches = false;
};

// A piece's commands as a command buffer again.
std::vector<uint8_t> encode(const std::vector<Command>& commands);

// One entry of the plan. Once recorded, an entry's data lives in the store, not in memory:
// `resident` says whether data (a copy's bytes) or seg.commands (a piece's) are here; blobs name
// them in the store.
struct PlanEntry {
  checkpoint::HostOpKind kind = checkpoint::HostOpKind::Copy;
  uint32_t addr = 0;
  uint64_t size = 0;
  std::vector<uint8_t> data;  // Copy
  Segment seg;                // Submit: one piece (seg.launches stays when the commands go)
  std::vector<checkpoint::PageHash> blobs;
  bool resident = true;
};

// Where a launch begins.
struct LaunchStart {
  size_t entry = 0;                        // its piece's index in the plan
  std::map<uint32_t, uint64_t> registers;  // the WRITE_REG64 values it runs with
  LaunchGridArgs grid;                     // its LAUNCH_GRID fields
  size_t images = 0;                       // a replay: the recorded images (Symbols) before it
};

class WorkloadPlan {
 public:
  // Cuts a command buffer into pieces (refusing what the debugger cannot run).
  static Result<std::vector<Segment>> split(std::span<const uint8_t> bytes);
  // The LAUNCH_GRID fields of a piece that launches (its last command).
  static LaunchGridArgs grid_args(const Segment& seg);
  // Gives up an entry's data (it is recorded, or nothing can go back to it).
  static void drop(PlanEntry& e);

  // --- Entries and the cursor --------------------------------------------------------------------
  size_t size() const { return entries_.size(); }
  const PlanEntry& entry(size_t i) const { return entries_.at(i); }
  size_t cursor() const { return cursor_; }
  // The entry at the cursor (nullptr: the plan is exhausted) and whether it is applied for the first time.
  PlanEntry* next() { return cursor_ < entries_.size() ? &entries_[cursor_] : nullptr; }
  bool first_time() const { return cursor_ >= applied_; }
  // Past the entry at the cursor: its index.
  size_t advance();
  // The host may change the device only at the end of the recorded history (not after a move back).
  Result<void> at_frontier(const char* what) const;
  // A host memory operation applied now: it goes before the pieces still queued.
  PlanEntry& insert_applied(PlanEntry e);
  // A command buffer the host submitted, as pieces queued at the end: the host's submission count.
  uint64_t queue(std::vector<Segment> pieces);
  uint64_t submissions() const { return submissions_; }
  // The host dropped what it queued: pieces not applied yet go.
  void drop_pending();
  // The data of the entries before the cursor that the store holds goes (a move back reads it again).
  // Only entries made resident again since the last call are looked at: the cost of a call does not
  // grow with the plan.
  void drop_recorded();
  // An entry's data was read back from the store (Session::Impl::make_resident).
  void made_resident(const PlanEntry& e);

  // --- Launches ----------------------------------------------------------------------------------
  // The WRITE_REG64 values of a piece about to be submitted (re-issued before a re-launch).
  void note_registers(const Segment& seg);
  const std::map<uint32_t, uint64_t>& registers() const { return registers_; }
  // A launch began at entry `index` (its first run; a launch seen before is not noted twice).
  void note_launch(uint32_t launch, size_t index, const LaunchGridArgs& grid);
  uint32_t launches() const { return uint32_t(launches_.size()); }
  const LaunchStart& launch(uint32_t L) const { return launches_.at(L - 1); }
  std::vector<LaunchGridArgs> grids() const;
  // A recording's plan: images per launch (LaunchStart::images); else none.
  std::vector<size_t> images() const;
  // Back to the start of launch L: the cursor after its piece, its registers.
  void rewind_to(uint32_t L);
  // A replay seeking into launch L for the first time: the host memory operations before it that
  // were never applied (the launches before it are not run: the checkpoint holds their effects).
  std::vector<PlanEntry*> unapplied_before(uint32_t L);

  // --- The host's memory ---------------------------------------------------------------------
  void add_region(uint32_t addr, uint64_t size) { regions_[addr] = size; }
  void remove_region(uint32_t addr) { regions_.erase(addr); }
  // A page of the workload: the I/O region, the stacks, or memory the host holds.
  bool in_regions(uint32_t page, const DeviceConfig& cfg) const;

  // --- The host --------------------------------------------------------------------------------------
  // The host issues nothing more (host_finished, or a recorded hostEnd).
  void set_host_done() { host_done_ = true; }
  bool host_done() const { return host_done_; }

  // --- A recording's plan ------------------------------------------------------------------------
  // The plan of a recording's host operations; `read` gives a blob's bytes.
  Result<void> load(const std::vector<checkpoint::HostOpRecord>& ops,
                    const std::function<Result<std::vector<uint8_t>>(const checkpoint::PageHash&)>& read);

 private:
  std::vector<PlanEntry> entries_;
  size_t cursor_ = 0;         // the next entry to apply
  size_t applied_ = 0;        // entries [0, applied_) were applied once: their allocations stand
  size_t resident_from_ = 0;  // entries before it hold no recorded data (drop_recorded)
  std::vector<LaunchStart> launches_;
  std::map<uint32_t, uint64_t> registers_;  // WRITE_REG64 values so far
  std::map<uint32_t, uint64_t> regions_;    // memory the host allocated or reserved
  uint64_t submissions_ = 0;
  bool host_done_ = false;
  bool loaded_ = false;  // a recording's plan (load)
};

}  // namespace vx::engine
