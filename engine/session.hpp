// The re-launch debugging engine (docs/relaunch.md), as a library in the
// spirit of amd-dbgapi: a Session owns one workload on one device; the host
// runtime talks to Session::host(), the debugger front ends (CLI, GDB server)
// call run control and read state at stops.
//
// The method is the NVIDIA patent's: on a stop event the engine saves every
// in-progress warp through the driver (Driver::save_context), writes a
// checkpoint, and kills the workload, so the device is free. Continuing
// re-launches the saved grid with a thread-entry routine that restores each
// in-progress warp in its old slot; nothing the kernel executed runs twice.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "device/cmdbuf_builder.hpp"
#include "device/context.hpp"
#include "device/driver.hpp"
#include "engine/live.hpp"

namespace vx::checkpoint {
class Store;
struct TimeKey;
struct HostOpRecord;
}  // namespace vx::checkpoint

namespace vx::engine {

// Hardware coordinates of a warp slot.
struct WarpId {
  uint32_t core = 0;
  uint32_t slot = 0;
  bool operator==(const WarpId&) const = default;
};

enum class StopReason : uint8_t {
  Breakpoint,        // a warp executed an EBREAK the engine planted
  Step,              // a step of the focus warp finished
  Exception,         // a device exception (fault, bad barrier, deadlock, the kernel's own EBREAK)
  Assertion,         // vx_assert failed (EBREAK followed by the assertion marker)
  Watchdog,          // the launch exceeded its instruction budget
  Interrupt,         // Session::interrupt()
  InstructionCount,  // run_to() or seek() reached its instruction count
  Exited,            // every submitted command buffer completed
  Killed,            // the workload cannot go on (it stopped on an exception and was continued, or a command failed)
  Watchpoint,        // a warp accessed a watched location (the access has happened)
  HistoryStart,      // a reverse move reached the beginning of the recorded history (a normal stop)
  EndOfRecording,    // a replayed recording holds no more host operations: the original run ended here
};
const char* stop_reason_name(StopReason r);

// Warps that were at the stop's PC (a breakpoint hit by several warps in the same pass is one stop).
struct WarpHit {
  WarpId warp;
  uint32_t pc = 0;
  uint32_t lanes = 0;  // the warp's thread mask at the stop
};

// A point in time: the launch (1-based) and the warp instructions it has retired. The model is
// deterministic, so a point names one state however it was reached (docs/time-travel.md).
struct TimePoint {
  uint32_t launch = 0;
  uint64_t instret = 0;
  auto operator<=>(const TimePoint&) const = default;
};

// A watched access at a Watchpoint stop (device/context.hpp WatchHit, with the engine's id).
struct WatchEvent {
  int watchpoint = 0;  // Session watchpoint id
  WarpId warp;
  uint32_t pc = 0;                 // the accessing instruction
  uint32_t lanes = 0;              // lanes whose access overlapped the watched range
  uint8_t kind = 0;                // kWatchRead | kWatchWrite: what the instruction did
  uint32_t addr = 0;               // the lowest overlapping access address
  std::vector<uint8_t> old_bytes;  // the watched range before the instruction
};

struct StopEvent {
  StopReason reason = StopReason::Exited;
  uint32_t launch = 0;           // 1-based launch index within the workload
  uint32_t pass = 0;             // 1-based pass of that launch; 0: a stop reached by a move in time (seek)
  uint64_t instructions = 0;     // warp instructions the launch had retired at the stop (Exited: at its end)
  std::vector<int> breakpoints;  // Breakpoint: ids of the breakpoints at the hit warps' PCs
  std::vector<WarpHit> hits;     // Breakpoint/Step/Exception/Assertion: the warps concerned, first the one that stopped
  DeviceException exception;     // Exception, Assertion, Watchdog
  std::string message;           // Killed: why; Exception with a command error
  ErrorCode error = ErrorCode::Unspecified;  // Killed: the kind of failure (Input: the workload's own commands)
  uint32_t exit_code = 0;                    // Exited: the exit-code word
  std::vector<WatchEvent> watches;           // Watchpoint
  // The stop was written to the recording as a mark (goto N reaches it): false with no store, a
  // read-only recording, a store that could not be written, or a point reached by a move in time.
  bool recorded = false;
  TimePoint when() const { return TimePoint{launch, instructions}; }
};

// The patent's three lists for the launch at a stop, by linear CTA index.
struct UnitRange {
  uint64_t first = 0;
  uint64_t count = 0;
};
struct ThreadLists {
  std::vector<UnitRange> complete, in_progress, not_launched;
};

struct SessionOptions {
  std::string store_dir;   // "" = no checkpoint store
  bool store_sync = true;  // make commits durable against a machine failure (false: tests, scratch)
  // With store_sync, group commit (docs/store.md, "Durability"): a stop's commit survives a killed
  // vxreplay at once and a machine failure within this many ms (a sync on a timer, and at the end);
  // 0: a sync at every commit.
  uint32_t store_sync_interval_ms = 1000;
  uint64_t store_map_size = 0;    // LMDB's map size (0: the store's default); a small one makes the store fill up
  uint64_t kernel_hash = 0;       // recorded in the store header
  std::string workload;           // recorded in the store header (e.g. the kernel path and launch)
  bool in_progress_only = false;  // the patent's variant: a re-launch first runs only the warps in progress
  uint64_t slice = 1u << 20;      // instructions per wait(): how often an interrupt is noticed
  // Automatic checkpoints (docs/time-travel.md): one at every launch's start and every N warp
  // instructions of a launch, taken without a re-launch, so a backward move replays at most N. 0: none.
  uint64_t checkpoint_interval = 1u << 18;
  // The recording's timeline (docs/view.md): every active warp's state in brief every N warp
  // instructions of a launch, the first time the session runs that far. 0: none.
  uint64_t timeline_interval = 1u << 14;
  uint64_t seed = 0;      // recorded in the store header (RunOptions::seed)
  uint8_t schedule = 0;   // recorded in the store header (RunOptions::schedule)
  uint64_t watchdog = 0;  // recorded in the store header
  // Replay a recording: store_dir is an existing store, and its host operations drive the session
  // (load_recording) instead of a host program. read_only: write nothing to it.
  bool replay = false;
  bool read_only = false;
  // Live debugging through the Debug Module (docs/live.md). Live fails to create the session on a
  // device without a DM (kNoDebugModule); Auto picks Live when the device has one.
  SessionMode mode = SessionMode::Relaunch;
  uint64_t attach_after = 0;  // live: the first continue halts the launch after this many instructions
  bool reset_halt = false;    // live: the first continue stops at the first instruction (resethaltreq)
};

// One retirement of a traced warp (Session::scan): the state right before the warp executes its
// instruction number warp_instret + 1.
struct TraceEntry {
  uint64_t instret = 0;       // the launch's count at that point
  uint64_t warp_instret = 0;  // instructions the warp has retired
  uint32_t pc = 0;            // the instruction it is about to execute
  uint32_t sp = 0;            // the traced lane's sp
  uint32_t tmask = 0;
  // Instructions of the warp this entry stands for: more than 1 for an interval a live session ran
  // by Debug Module steps (docs/live.md), of which only the two ends are recorded; end_pc is where
  // the warp stood after it.
  uint64_t span = 1;
  uint32_t end_pc = 0;
};

struct ScanRequest {
  uint64_t until = 0;        // run to this count of the launch (or its end)
  bool breakpoints = false;  // report breakpoint hits (enabled breakpoints)
  bool watchpoints = false;  // report watchpoint hits
  // Accepts or drops a hit; context() holds the state at the hit while it runs. Empty: all count.
  std::function<bool(const StopEvent&)> accept;
  // Trace warp (core, slot) while it holds CTA trace_cta: every retirement in [from, until).
  bool trace = false;
  WarpId trace_warp;
  uint32_t trace_cta = 0;
  uint32_t trace_lane = 0;
};

struct ScanResult {
  std::vector<StopEvent> hits;    // in time order (breakpoint: instructions = before the EBREAK; watch: after)
  std::vector<TraceEntry> trace;  // in time order
  uint64_t reached = 0;           // the count the scan ended at
  bool launch_ended = false;      // the launch completed before `until`
};

// A mark: a stop the user saw, or marked with `checkpoint` (listed by info checkpoints, goto N).
struct Mark {
  TimePoint when;
  StopReason reason = StopReason::InstructionCount;
  std::string text;
  WarpId warp;          // the warp that stopped (or faulted) there
  uint32_t lane = 0;    // the lane the stop was about (Session::set_stop_lane; a fault's lane)
  uint32_t number = 0;  // stable: given when the mark was made (goto N)
};

struct WatchSpec {
  uint32_t addr = 0;
  uint32_t len = 4;
  uint8_t kind = 2;    // kWatchRead 1 | kWatchWrite 2
  bool local = false;  // the kernel's local-memory address range
  int32_t core = -1;   // local: which core (-1: every core)
};

struct SessionStats {
  uint64_t instructions = 0;  // kernel warp instructions executed over every pass
  uint64_t lane_instructions = 0;
  uint64_t restore_instructions = 0;  // warp instructions of the thread-entry routine
  uint64_t launch_instructions = 0;   // instructions the launches have retired (their own count)
  uint32_t passes = 0;                // every launch's first pass included
  uint32_t stops = 0;
  uint64_t filtered_hits = 0;   // breakpoint and watchpoint hits a filter dropped without stopping
  uint64_t store_failures = 0;  // checkpoints the store could not write (the session went on)
  uint64_t unsaved_stops = 0;   // of those, stops the user saw
  uint64_t unrecorded_ops = 0;  // host operations the last flush() could not record (kept, retried)
  uint64_t ops_failures = 0;    // writes of the host's operations alone that failed (kept, retried)
  uint64_t checkpoints = 0;
  uint64_t marks_only = 0;    // stops recorded by their mark alone (derived from the checkpoint before: docs/store.md)
  uint64_t bytes_stored = 0;  // bytes written to the store (pages and records, compressed)
  // instructions / launch_instructions: 1.0 when nothing ran twice.
  double reexecution_ratio() const {
    return launch_instructions == 0 ? 1.0 : double(instructions) / double(launch_instructions);
  }
};

// How a step goes on: called each time the focus warp retires an instruction with a focus lane
// active, with its PC and the focus lane's sp. Return a range [lo, hi) to keep running while the
// PC stays in it (the engine asks again when it leaves), or nullopt to stop here.
using StepPolicy = std::function<std::optional<std::pair<uint32_t, uint32_t>>(uint32_t pc, uint32_t sp)>;

struct Breakpoint {
  int id = 0;
  uint32_t addr = 0;
  bool enabled = true;
  uint64_t hits = 0;
};

class Session {
 public:
  static Result<std::unique_ptr<Session>> create(Driver& device, const SessionOptions& options);
  ~Session();

  // The driver the host runtime uses: memory and copies go to the device (and are recorded);
  // submitted command buffers are decoded and held, and run under the session's control.
  Driver& host();
  const DeviceConfig& config() const;

  // --- Breakpoints (engine-level: an address; front ends map source locations to addresses) ----
  Result<int> add_breakpoint(uint32_t addr);
  Result<void> remove_breakpoint(int id);
  Result<void> enable_breakpoint(int id, bool enabled);
  std::vector<Breakpoint> breakpoints() const;

  // --- Run control. Each returns the next stop; after Exited or Killed there is nothing to run. --
  Result<StopEvent> resume();
  // Steps warp `warp` (lanes: which lanes must be active for the step to count, 0 = any) by one
  // instruction, or as long as `policy` says. Other warps run as in the undisturbed schedule.
  Result<StopEvent> step(WarpId warp, uint32_t lanes, const StepPolicy& policy = nullptr);
  // Runs until the current launch has retired `count` warp instructions (or another stop comes first).
  Result<StopEvent> run_to(uint64_t count);
  // Thread-safe: the running pass stops at its next slice boundary with StopReason::Interrupt.
  void interrupt();
  // Called on the running thread after every slice of a pass (SessionOptions::slice instructions)
  // with the pass and the launch's instruction count: front ends print console output as it comes
  // (take_console) and progress. Empty: none.
  void set_progress(std::function<void(uint32_t pass, uint64_t instructions)> hook);
  // Decides, during a run, whether a breakpoint or watchpoint hit stops (true) or the run goes on in
  // place with no stop, no checkpoint and no re-launch (false): conditions, and a `watch` whose value
  // did not change. context() holds the state at the hit while it runs (evaluating_hit() is true
  // then; memory reads see the device as it is). Empty: every hit stops.
  void set_breakpoint_filter(std::function<bool(const StopEvent&)> filter);
  bool evaluating_hit() const;
  // The lane the front end says a stop is about (the one it follows in a step, the one whose
  // condition held at a hit): the stop's mark records it when its warp is among the stop's hits,
  // so that goto N and a reopened recording return to that lane. Until the next stop is recorded.
  void set_stop_lane(WarpId warp, uint32_t lane);
  // The last checkpoint write failure ("" none), automatic checkpoints whose staged commit failed
  // included; SessionStats counts them.
  const std::string& store_error() const;

  // --- State at the current stop ------------------------------------------------------------
  bool stopped() const;      // a launch is stopped (its state is readable)
  bool read_only() const;    // the recording is open read-only (SessionOptions::read_only)
  SessionInfo info() const;  // the mode, the Debug Module, whether the device is held
  const StopEvent& last_stop() const;
  const DeviceContext& context() const;  // valid while stopped()
  ThreadLists lists() const;
  // Device memory as the kernel sees it (planted breakpoints show their original words).
  Result<std::vector<uint8_t>> read_memory(uint32_t addr, uint32_t size);
  // A core's local memory at a stop (addr from memmap::kLocalMemBase): through the Debug Module, by
  // injected loads in a warp of that core, while a live launch is held; else the stop's saved state.
  Result<std::vector<uint8_t>> read_local_memory(uint32_t core, uint32_t addr, uint32_t size);
  // `set var`: the user changes the state at a stop. The next re-launch carries it (registers and
  // local memory through the saved context, global memory written to the device now, so the next
  // checkpoint records it); the stop's own checkpoint keeps the state as it was, and a move back in
  // time returns to that. Re-launch mode only. dwarf_reg: x0..x31 = 0..31, f0..f31 = 32..63; local
  // memory (from memmap::kLocalMemBase) is the warp's core's.
  Result<void> write_register(WarpId warp, uint32_t lane, unsigned dwarf_reg, uint32_t value);
  Result<void> write_memory(WarpId warp, uint32_t addr, const std::vector<uint8_t>& bytes);
  std::vector<ConsoleChunk> take_console();  // console output since the last call
  // The current launch's console output from its start to the current point, as the checkpoints
  // keep it (the same after a move in time as on the first pass).
  const std::string& console_so_far() const;
  SessionStats stats() const;
  // The device's divergent plain branches so far, one per PC (Driver::divergent_branches).
  std::vector<DivergentBranch> divergent_branches() const;

  // --- Watchpoints ---------------------------------------------------------------------------
  Result<int> add_watchpoint(const WatchSpec& spec);
  Result<void> remove_watchpoint(int id);
  Result<void> enable_watchpoint(int id, bool enabled);

  // --- Checkpoints and time (docs/time-travel.md) -------------------------------------------
  checkpoint::Store* store();
  // Goes back (or forward) to a stored checkpoint: memory and state are restored; the next resume
  // re-launches from there. Any launch of the workload (the host operations in between are replayed).
  Result<StopEvent> goto_checkpoint(const checkpoint::TimeKey& key);
  // The current point (the last stop's).
  TimePoint now() const;
  // Goes to point t: restores the latest checkpoint at or before t and runs forward exactly to t.
  // Breakpoints and watchpoints do not stop it; console output on the way is not reported again.
  // The stop is reported as `as` (InstructionCount by default); for Breakpoint and Step the hit
  // warps are found as a forward stop would find them (Step: `focus`). The stop is not marked.
  Result<StopEvent> seek(TimePoint t, StopReason as = StopReason::InstructionCount,
                         std::optional<WarpId> focus = std::nullopt, std::vector<WatchEvent> watches = {});
  // Runs forward quietly from the current stop, reporting hits and a warp's trace (replay/ builds
  // reverse moves from this). Leaves the session stopped at result.reached.
  Result<ScanResult> scan(const ScanRequest& request);
  // Runs quietly from the current stop until warp `warp`, holding CTA `cta`, is about to execute its
  // instruction number `n` (it has retired n - 1); stops there, reported as a Step of that warp.
  // nullopt result: the launch reached `limit` (or its end) first.
  Result<std::optional<StopEvent>> run_until_warp(WarpId warp, uint32_t cta, uint64_t n, uint64_t limit);
  // Every checkpoint key of the store, in time order.
  Result<std::vector<checkpoint::TimeKey>> checkpoint_keys();
  // The marks (info checkpoints), in time order; mark() marks the current stop.
  Result<std::vector<Mark>> marks();
  Result<void> mark(const std::string& text);
  // The furthest point each launch has reached (goto end) and whether it completed.
  std::optional<TimePoint> frontier(uint32_t launch) const;
  uint32_t launches_started() const;
  // The host's copies to device memory in the session's plan, in order, each with the launch
  // that began next after it (launches_started() + 1 for copies after the last launch began).
  struct HostWrite {
    uint32_t before_launch = 0;
    uint32_t addr = 0;
    uint64_t size = 0;
  };
  std::vector<HostWrite> host_writes() const;
  // The session's history under a device observer (docs/time-travel.md, "Questions over the
  // history"): every launch the session has begun, from its start to its end (to the furthest point
  // it reached when it has not ended), re-executed quietly with `observer` set on the device, then
  // back to the current stop as it was. `launch_begins(n, ctx)` is called at each launch's start,
  // before its first instruction is observed. Needs a stop and a store. One entry per launch passed.
  // `only`: the launches to pass (nullptr: every one). `skipped(n, from, to)` is called when the
  // pass goes on from the end of an interval it did not re-execute (HistoryPass::stepped).
  struct HistoryPass {
    uint32_t launch = 0;
    uint64_t reached = 0;  // the launch's count the pass ended at
    bool ended = false;    // the launch ran to its end
    // It reached where it was to go. false: a device stop (an exception or assertion the user
    // went on past, in the recorded run) ended the quiet run earlier.
    bool complete = true;
    // Intervals (from, to) a live session ran by Debug Module steps: not re-executed (only their
    // ends are recorded, docs/live.md), so nothing inside them was observed; the pass went on
    // from each one's end.
    std::vector<std::pair<uint64_t, uint64_t>> stepped;
    uint64_t until = 0;  // where it was to go (history_extent())
  };
  Result<std::vector<HistoryPass>> observe_history(
      DeviceObserver& observer, const std::function<void(uint32_t, const DeviceContext&)>& launch_begins,
      const std::set<uint32_t>* only = nullptr, const std::function<void(uint32_t, uint64_t, uint64_t)>& skipped = {});
  // Where observe_history would pass each launch to (index launch - 1): its end (UINT64_MAX), the
  // furthest point the session has seen, or 0 when it has not begun.
  std::vector<uint64_t> history_extent() const;
  // Whether launch's start is a checkpoint in the recording: a pass of it then observes the same
  // thing in every session (records are immutable, the run deterministic).
  bool launch_start_recorded(uint32_t launch);
  // Writes launch's start when the recording lacks it (docs/store.md, "Launch starts"), with the
  // starts between it and the checkpoint before it (a read-only session keeps them in memory), and
  // comes back to the stop as it was reported; a session with no stop (the workload ended) stays at
  // the start. An error when the start could not be kept.
  Result<void> derive_launch_start(uint32_t launch);

  // --- Recordings ------------------------------------------------------------------------------
  // Writes the host operations not yet in the store (they are also written with every checkpoint)
  // and commits the automatic checkpoints staged since the last stop the user saw.
  Result<void> flush();
  // The end of the session, as the destructor would do it (flush() without its sync, then a
  // recording's writer flag cleared), with one sync and safe point for all of it: once this
  // returns, the recording is durable against a machine failure too. The session must not run after.
  Result<void> end();
  // The host will issue nothing more (host_status: its exit status): recorded as the end of the
  // workload, so a replay runs to its end instead of stopping at "end of recording".
  Result<void> host_finished(uint32_t host_status = 0);
  // Keeps a kernel image's bytes in the recording for its symbols (not sent to the device).
  Result<void> record_symbols(const std::string& name, std::span<const uint8_t> elf);
  // Replay: loads the store's host operations as the workload (SessionOptions::replay).
  Result<void> load_recording();

  // --- A live host program (vxreplay run -- PROGRAM; docs/host.md) ---------------------------
  // Called on the running thread when everything the host queued has run and it has not
  // finished: it serves the host's calls (through host()) until the host queues more work and
  // waits for it (true), or the host ends (false; it calls host_finished() when the host ended
  // on its own). Never called in a replay or a quiet run (seek, scan).
  void set_host_source(std::function<Result<bool>()> source);
  // Called on the running thread after every slice of a run the user asked for (not of seeks and
  // scans): a host program's wait timeout is checked against device_ns() there.
  void set_host_tick(std::function<void()> hook);
  // Device time: the wall time spent in the runs the user asked for (continue, step, ...), not in
  // seeks, scans or stopped at the prompt. A host program's vx_ready_wait timeout counts it.
  uint64_t device_ns() const;
  // Each launch's LAUNCH_GRID fields (entry, argument, grid, block, local memory), launch L at
  // index L - 1: the launches started so far, or in a replay every recorded one.
  std::vector<LaunchGridArgs> launch_args() const;
  // A replay: for launch L (index L - 1), how many images the recording kept (record_symbols)
  // before the launch started; with launch_args()' entry, which image each launch ran.
  std::vector<size_t> launch_images_recorded() const;

  // The implementation (engine/session_impl.hpp, private to engine/: its jobs' files name it).
  struct Impl;

 private:
  // flush() without its sync: the host operations written, the staged checkpoints committed.
  Result<void> commit_writes();
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vx::engine
