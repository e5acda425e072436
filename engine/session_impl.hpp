// Session's implementation, private to engine/: the launch's state, the parts with their own
// state (WorkloadPlan plan.hpp, Recorder recorder.hpp, TrapTable traps.hpp) and the member
// functions, defined by job (docs/architecture.md, "The session by job"):
//   session_plan.cpp    applying the plan to the device: host operations, pieces, the engine's memory
//   session_record.cpp  stops and checkpoints (handed to the recorder)
//   session_run.cpp     the re-launch runner: passes, stops, the run loop
//   session_time.cpp    time travel: restore, seek, scan
//   session_live.cpp    the live runner (Debug Module; session_live.hpp)
//   session.cpp         Session's public API over all of them
#pragma once

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include "checkpoint/store.hpp"
#include "device/cmdbuf_builder.hpp"
#include "device/cmdproc.hpp"
#include "engine/context_record.hpp"
#include "engine/entry_routine.hpp"

#include "base/hex.hpp"
#include "engine/live.hpp"
#include "engine/plan.hpp"
#include "engine/recorder.hpp"
#include "engine/session.hpp"
#include "engine/traps.hpp"

namespace vx::engine {

namespace impl_detail {

constexpr uint32_t kPageSize = 4096;
// The engine's own device memory (the thread-entry routine, its records, saved local memory) is a
// fixed reservation above every allocation, so the host's allocations get the addresses they get in
// a plain run, and a replay hands out the recorded ones.
constexpr uint32_t kEngineArea = 0xF0000000;
// Copies larger than this are recorded as several operations (a store value holds at most 64 MiB).
constexpr uint64_t kMaxOpData = 16u << 20;

inline checkpoint::StopKind stop_kind(StopReason r) {
  switch (r) {
    case StopReason::Breakpoint: return checkpoint::StopKind::Breakpoint;
    case StopReason::Step:
    case StopReason::HistoryStart: return checkpoint::StopKind::Step;
    case StopReason::Exception:
    case StopReason::Assertion: return checkpoint::StopKind::DeviceException;
    case StopReason::Watchdog: return checkpoint::StopKind::Watchdog;
    case StopReason::Interrupt:
    case StopReason::InstructionCount: return checkpoint::StopKind::Interrupt;
    case StopReason::Watchpoint: return checkpoint::StopKind::Watchpoint;
    case StopReason::Exited:
    case StopReason::Killed:
    case StopReason::EndOfRecording: return checkpoint::StopKind::LaunchEnd;
  }
  return checkpoint::StopKind::Unknown;
}

inline StopReason reason_of(const checkpoint::StopRecord& s) {
  switch (s.kind) {
    case checkpoint::StopKind::Breakpoint: return StopReason::Breakpoint;
    case checkpoint::StopKind::Step: return StopReason::Step;
    case checkpoint::StopKind::DeviceException:
      return s.text == stop_reason_name(StopReason::Assertion) ? StopReason::Assertion : StopReason::Exception;
    case checkpoint::StopKind::Watchdog: return StopReason::Watchdog;
    case checkpoint::StopKind::Watchpoint: return StopReason::Watchpoint;
    default: return StopReason::InstructionCount;
  }
}

// A run's outcome as a step of a loop: a stop event to end with (or the error), not nullopt.
inline Result<std::optional<StopEvent>> some(Result<StopEvent> r) {
  if (!r) return r.error();
  return std::optional<StopEvent>{std::move(r).value()};
}

}  // namespace impl_detail

using namespace impl_detail;

class Runner;  // below: how the session runs the workload

// The live runner's state (session_live.hpp).
struct LiveState {
  std::unique_ptr<LiveDevice> dev;
  SessionInfo info;
  bool on = false;            // run control goes through the DM
  uint64_t attach_after = 0;  // stop the first launch after this many instructions (haltreq)
  bool reset_halt = false;    // stop the first launch at its first instruction (resethaltreq)
  bool attach_done = false;
  // Time travel (docs/live.md): the launches in which a warp ran alone (a DM step), and whether
  // the next checkpoint ends an interval that ran so. Checkpoints carry both (live, stepped).
  std::set<uint32_t> departed;
  bool stepped = false;
};

struct Session::Impl {
  enum class Phase { Idle, Running, Stopped, Exited, Dead };

  // What the host runtime sees as the device.
  class HostDriver final : public Driver {
   public:
    explicit HostDriver(Impl& s) : s_(s) {}
    const DeviceConfig& config() const override { return s_.dev.config(); }
    Result<uint32_t> mem_alloc(uint64_t size) override { return s_.host_alloc(size); }
    Result<void> mem_reserve(uint32_t addr, uint64_t size) override { return s_.host_reserve(addr, size); }
    Result<void> mem_free(uint32_t addr) override { return s_.host_free(addr); }
    Result<void> copy_to_device(uint32_t addr, std::span<const uint8_t> bytes) override {
      return s_.host_copy(addr, bytes);
    }
    Result<void> copy_from_device(uint32_t addr, std::span<uint8_t> bytes) override {
      auto r = s_.dev.copy_from_device(addr, bytes);
      if (r) s_.traps.unplant_view(addr, bytes);
      return r;
    }
    Result<uint64_t> submit(std::span<const uint8_t> commands) override { return s_.accept(commands); }
    DeviceEvent wait(uint64_t) override {
      // A host program waiting runs the workload under the session until its next stop.
      auto ev = s_.run(Mode{});
      if (!ev) return DeviceEvent{EventKind::CommandError, 0, {}, ev.error().message};
      if (ev->reason == StopReason::Exited) return DeviceEvent{EventKind::Completed, s_.plan.submissions(), {}, {}};
      if (ev->reason == StopReason::Killed) return DeviceEvent{EventKind::CommandError, 0, {}, ev->message};
      return DeviceEvent{EventKind::Halted, s_.plan.submissions(), ev->exception, {}};
    }
    void abort() override {
      s_.dev.abort();
      s_.lv.info.held = false;
      s_.plan.drop_pending();
      s_.phase = Phase::Idle;
    }
    std::vector<ConsoleChunk> read_console() override { return s_.take_console(); }
    uint32_t exit_code() override { return s_.dev.exit_code(); }
    MachineStats stats() const override { return s_.dev.stats(); }
    std::vector<DivergentBranch> divergent_branches() const override { return s_.dev.divergent_branches(); }
    Result<uint32_t> dm_read(uint32_t addr) override { return s_.dev.dm_read(addr); }
    Result<void> dm_write(uint32_t addr, uint32_t value) override { return s_.dev.dm_write(addr, value); }
    Result<DeviceContext> save_context() override { return make_error("save_context: the debugger owns the launch"); }
    Result<uint64_t> resume(ResumeRequest) override { return make_error("resume: the debugger owns re-launches"); }
    std::vector<uint32_t> take_dirty_pages() override { return {}; }
    Result<void> set_warp_trigger(const WarpTrigger&) override {
      return make_error("set_warp_trigger: the debugger owns the trigger");
    }
    void clear_warp_trigger() override {}
    Result<void> set_watchpoints(const std::vector<WatchRange>&) override {
      return make_error("set_watchpoints: the debugger owns the watchpoints");
    }
    std::vector<WatchHit> take_watch_hits() override { return {}; }
    Result<void> continue_past_breakpoint(const std::vector<FetchOverride>&) override {
      return make_error("continue_past_breakpoint: the debugger owns breakpoints");
    }
    Result<WarpState> peek_warp(uint32_t, uint32_t) override {
      return make_error("peek_warp: the debugger owns the launch");
    }
    // The device's observer is the debugger's (set on the device the session runs on).
    void set_observer(DeviceObserver*) override {}

   private:
    Impl& s_;
  };

  struct Mode {
    // ToLaunch: on through the recorded host operations to the start of launch `target` (a seek
    // into a launch that has no checkpoint of its own); the only quiet run that crosses launches.
    enum Kind { Continue, Step, RunTo, Seek, Scan, UntilWarp, ToLaunch } kind = Continue;
    WarpId warp;
    uint32_t lanes = 0;
    StepPolicy policy;
    uint64_t target = 0;
    uint32_t cta = 0;  // UntilWarp: the CTA the warp must hold
    uint64_t n = 0;    // UntilWarp: stop before the warp's instruction number n
    bool quiet() const { return kind == Seek || kind == Scan || kind == UntilWarp || kind == ToLaunch; }
  };

  Impl(Driver& d, const SessionOptions& o) : dev(d), opts(o), host_driver(*this), traps(d) {}

  Driver& dev;
  SessionOptions opts;
  bool ended = false;  // Session::end() ran: the destructor has nothing left to do
  HostDriver host_driver;
  std::optional<checkpoint::Store> store;
  std::atomic<bool> interrupted{false};
  std::optional<std::pair<WarpId, uint32_t>> stop_lane;  // Session::set_stop_lane, until a stop is recorded
  std::function<void(uint32_t, uint64_t)> progress;
  std::function<bool(const StopEvent&)> breakpoint_filter;  // false: the hit does not stop

  // The workload.
  WorkloadPlan plan;                          // the host's operations, launches, memory (engine/plan.hpp)
  std::function<Result<bool>()> host_source;  // a live host program (set_host_source)
  std::function<void()> host_tick;            // Session::set_host_tick
  // Device time (Session::device_ns): wall time of the runs the user asked for, not of seeks and
  // scans, and not the time stopped at the prompt.
  uint64_t run_ns = 0;
  std::optional<std::chrono::steady_clock::time_point> run_t0;

  // The launch.
  Phase phase = Phase::Idle;
  bool fatal = false;  // the stop cannot be continued (a fault, the watchdog)
  uint32_t launch = 0, pass = 0;
  DeviceContext ctx;
  StopEvent last;
  uint64_t progress_at_pass_start = 0;   // the launch's own count when the pass began
  uint64_t dev_at_pass_start = 0;        // the device's count when the pass began
  uint64_t finished_instructions = 0;    // the last completed launch's own count
  std::vector<uint8_t> io_snapshot;      // the I/O region (console rings, exit code) at the stop
  std::map<uint32_t, uint64_t> reached;  // launch -> the furthest count it reached
  // launch -> the lowest count this session ran it from: a replay opening at a checkpoint restores the
  // instructions before it instead of executing them, so they are not in the re-execution ratio's base.
  std::map<uint32_t, uint64_t> ran_from;
  std::set<uint32_t> completed;  // launches that ran to their end
  bool quiet = false;            // a seek or scan is running: no marks, no hit counts, no console

  TrapTable traps;  // breakpoints and watchpoints (engine/traps.hpp)

  // The thread-entry routine's memory.
  uint32_t routine_addr = 0, records_addr = 0, lmem_addr = 0;

  Recorder recorder;        // what goes into the store (engine/recorder.hpp)
  std::string console_log;  // this launch's console output
  std::vector<ConsoleChunk> console_out;
  // Pages the workload wrote since the last checkpoint, taken from the device by a re-launch before
  // the engine's own writes (a stop recorded by its mark alone leaves them to the next checkpoint).
  std::vector<uint32_t> held_dirty;
  // held_dirty and the pages the device says were written since, each once, in first-written order.
  std::vector<uint32_t> take_dirty_pages();

  SessionStats st;
  LiveState lv;                    // live mode (engine/session_live.hpp)
  std::unique_ptr<Runner> runner;  // re-launch or live (Session::create; leave_live): set by set_runner
  void set_runner(std::unique_ptr<Runner> r);

  // Device memory for checkpoints: through the Debug Module while a live launch is held (at a stop,
  // and at an automatic checkpoint, for which every warp is halted too).
  Result<void> read_device(uint32_t addr, std::span<uint8_t> bytes);

  // A page of the workload's memory as a checkpoint holds it. Page 0 is the I/O region's first page
  // (the console indices and the first rings), but its first kIoBase bytes are no device memory: a
  // whole-page access fails there, and a page that cannot be read or written is taken as freed. So
  // those bytes read as zero and are never written.
  static uint32_t page_skip(uint32_t page) { return page == 0 ? memmap::kIoBase : 0; }
  Result<void> read_page(uint32_t page, std::span<uint8_t> bytes);
  Result<void> write_page(uint32_t page, std::span<const uint8_t> bytes) {
    const uint32_t skip = page_skip(page);
    return dev.copy_to_device(page * kPageSize + skip, bytes.subspan(skip));
  }

  // --- Host side ------------------------------------------------------------------------
  // A host memory operation applied now: it goes before the pieces still queued.
  void insert_applied(PlanEntry e);

  // Brings a recorded entry's data back from the store (a move back in time applies it again).
  Result<void> make_resident(PlanEntry& e);

  Result<uint32_t> host_alloc(uint64_t size);
  Result<void> host_reserve(uint32_t addr, uint64_t size);
  Result<void> host_free(uint32_t addr);
  Result<void> host_copy(uint32_t addr, std::span<const uint8_t> bytes);

  Result<uint64_t> accept(std::span<const uint8_t> bytes);

  // --- Recording ------------------------------------------------------------------------------
  // Records an entry applied for the first time (the recording is the plan in the order it ran).
  // `submitted`: a Submit entry's commands as already encoded for the device (encoded here when empty).
  void record(PlanEntry& e, std::span<const uint8_t> submitted = {});

  Result<void> flush();

  Result<void> load_recording();

  // A replay seeking into launch L for the first time: the host's memory operations before it
  // (allocations above all) are applied; the launches before it are not run (the checkpoint holds
  // their effects).
  Result<void> prepare_launch(uint32_t L);

  // Applies plan entry `cursor` (not a piece: those are submitted by run()).
  Result<void> apply_memory_entry(PlanEntry& e, bool first);

  bool in_regions(uint32_t page) const { return plan.in_regions(page, dev.config()); }

  // --- Passes ---------------------------------------------------------------------------------
  std::vector<ConsoleChunk> take_console();

  void drain_console();

  void account_pass();
  uint64_t pass_instr0 = 0, pass_lane0 = 0, pass_restore0 = 0;

  void begin_pass(uint64_t progress);

  uint64_t launch_progress() const { return progress_at_pass_start + (dev.stats().instructions - dev_at_pass_start); }

  // The instructions a completed launch adds to the ratio's base: those from where this session first ran it.
  uint64_t launch_base(uint64_t finished) const {
    auto it = ran_from.find(launch);
    return it == ran_from.end() || it->second > finished ? finished : finished - it->second;
  }

  void note_reached(uint64_t count) {
    uint64_t& r = reached[launch];
    r = std::max(r, count);
  }

  Result<void> reserve_engine_area();

  Result<void> ensure_routine();

  Result<void> reissue_registers();

  // Re-launches the stopped launch from ctx (the patent's re-launch with the thread-entry routine).
  // overrides: warps at a planted breakpoint go past it (a scan sets none: a hit right at its start counts).
  Result<void> relaunch(bool dispatch_new, bool overrides = true);

  // --- Stops ----------------------------------------------------------------------------------
  // The warps at planted breakpoints (every one is reported by a breakpoint stop).
  void add_hit(StopEvent& ev, uint32_t c, uint32_t w) const;

  void describe(StopEvent& ev, const DeviceException& exc, bool count_hits);

  // Saves the state at the current event (the launch is still in flight). io_region: also the I/O
  // region a re-launch puts back (a live stop does not re-launch: a move in time restores it).
  Result<void> capture(bool io_region = true);

  Result<StopEvent> stop(StopReason reason, const DeviceException& exc, std::vector<WatchEvent> watch = {});

  // A checkpoint of ctx (and the memory image) at the current point. A point already stored is
  // reused: the state reached must be the stored one (invariant 3), which is checked.
  // A checkpoint that cannot be written (a full disk, LMDB's map full, a file-size limit) loses
  // nothing already recorded and stops nothing: the session says so once and goes on; what was not
  // written is retried with the next checkpoint (pages, host operations), and the end reports the
  // stops not recorded. Only the engine's own invariant failing is an error.
  // True when the checkpoint was written (false: no store, read-only, or it could not be).
  Result<bool> save_checkpoint(const StopEvent& ev, bool mark);
  Result<void> come_back(TimePoint here, const StopEvent& saved, bool was_fatal);
  bool save_ops();

  // True: the point's checkpoint is in the store (written now or found there); false: only its mark
  // was written (stop_derivable).
  Result<bool> write_checkpoint(const StopEvent& ev, bool mark);
  bool stop_derivable() const;

  // An automatic checkpoint while the launch is in flight (after a Budget event): no re-launch.
  Result<void> auto_checkpoint();

  // The timeline (docs/view.md): every active warp in brief at `at`, when a sample is due there
  // (end: the launch ended there, no warp is active, always kept).
  void sample_timeline(uint64_t at, bool end = false);
  // A run's budget bounded by the next checkpoint and the next sample.
  uint64_t record_budget(uint64_t budget, uint64_t now) const {
    if (recorder.next_auto() > now) budget = std::min(budget, recorder.next_auto() - now);
    return std::min(budget, recorder.until_sample(launch, now));
  }

  ThreadLists lists() const;

  bool is_assertion(uint32_t pc) {
    uint32_t next = 0;
    return dev.copy_from_device(pc + 4, {reinterpret_cast<uint8_t*>(&next), 4}).ok() && next == kAssertMarker;
  }

  Result<StopEvent> on_exception(const DeviceEvent& e);

  // A stop event at the current point: the launch, the pass and the count the state holds.
  StopEvent event_here(StopReason reason, const DeviceException& exc = {}, std::vector<WatchEvent> watches = {}) const {
    StopEvent ev;
    ev.reason = reason;
    ev.launch = launch;
    ev.pass = pass;
    ev.instructions = ctx.kernel_instructions;
    ev.exception = exc;
    ev.watches = std::move(watches);
    return ev;
  }
  StopEvent killed(const std::string& why, ErrorCode code = ErrorCode::Internal);
  StopEvent killed(const Error& e) { return killed(e.message, e.code); }

  // Submits the next piece of the plan (applying the host's memory operations before it). Returns
  // false when the plan is exhausted.
  Result<bool> start_next_piece();

  // Runs until the next stop.
  uint64_t device_ns() const {
    const auto running = run_t0 ? std::chrono::steady_clock::now() - *run_t0 : std::chrono::steady_clock::duration{};
    return run_ns + uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(running).count());
  }

  // Every run of the workload: the device time of those the user asked for is counted.
  Result<StopEvent> run(const Mode& mode);

  Result<StopEvent> run_pass(const Mode& mode);
  Result<std::optional<StopEvent>> leave_stop(const Mode& mode, bool& step_armed);
  Result<std::optional<StopEvent>> begin_piece(const Mode& mode);
  Result<std::optional<StopEvent>> next_piece(const Mode& mode);
  Result<StopEvent> workload_end();
  Result<StopEvent> at_target(const Mode& mode);
  Result<std::optional<StopEvent>> on_event(const Mode& mode, const DeviceEvent& e, bool step_armed);
  Result<std::optional<StopEvent>> on_trigger(const Mode& mode, bool step_armed);
  Result<StopEvent> hit_in_place(StopReason reason, const DeviceException& exc, std::vector<WatchEvent> watches);
  Result<std::optional<StopEvent>> on_watch(const Mode& mode);
  Result<std::optional<StopEvent>> on_device_exception(const DeviceEvent& e);
  Result<std::optional<StopEvent>> on_launch_end(const Mode& mode);

  // --- Time -------------------------------------------------------------------------------------
  Result<void> need_store() const {
    if (!store) return make_error("time travel needs the recording (the session runs without --db)");
    return {};
  }

  // The launch's next checkpoint after the stop when a live session reached it by Debug Module
  // steps (docs/live.md "Time travel while live"): a re-launch from here follows the seeded
  // schedule, not that interval, so the engine restores its end instead of re-executing it.
  Result<std::optional<checkpoint::CheckpointRecord>> stepped_ahead();

  // Back in a live history (docs/live.md "Time travel while live"): a forward move follows the
  // recording over the intervals the live session ran by Debug Module steps instead of
  // re-executing them. A stepi of the one warp that such an interval moved is that interval; a
  // continue (or a run to a later instruction) goes on from its end, and stops there when the live
  // session stopped there at a breakpoint; past a continue's departure (the warps stepped past
  // their breakpoints) every move goes on from its end. Any other move into one is refused.
  // A stop event when the move ended in the recording; nullopt: run from the current point.
  Result<std::optional<StopEvent>> follow_recording(const Mode& mode);

  // Only a live session, or a replay of a recording (which a live session may have written), has
  // live checkpoints: a re-launch session never looks for them.
  bool may_have_live() const { return lv.dev != nullptr || opts.replay; }

  // The last checkpoint before the first stepped one in (now, until] of this launch: a scan ends
  // there, as a re-launch does not reproduce what follows (docs/live.md).
  Result<std::optional<uint64_t>> scan_end_before_stepped(uint64_t until);

  static std::string stepped_message(const checkpoint::TimeKey& from, const checkpoint::TimeKey& to);

  // Restores the checkpoint at key exactly: memory, state, the plan's cursor and the launch.
  Result<void> restore(const checkpoint::TimeKey& key);

  // Runs quietly (no breakpoints, no watchpoints, no console) with `mode` from the current stop.
  Result<StopEvent> quiet_run(const Mode& mode, bool keep_breakpoints, bool keep_watchpoints);

  Result<StopEvent> seek(TimePoint t, StopReason as, std::optional<WarpId> focus, std::vector<WatchEvent> watch);

  // A trace over a live history crosses the intervals the live session ran by Debug Module steps:
  // each one is a single entry, the traced warp's state at its start (its end is the next entry),
  // when the warp moved in it; the seeded intervals between them are traced by re-launch.
  Result<ScanResult> scan(const ScanRequest& req);

  Result<ScanResult> scan_interval(const ScanRequest& req);
  Result<ScanResult> scan_stepped_start(const ScanRequest& req);
  Result<ScanResult> scan_pass(const ScanRequest& req, uint64_t until);
  Result<void> arm_trace(const ScanRequest& req, uint64_t min_instret);
  Result<void> scan_watch_hit(const ScanRequest& req, uint64_t at, ScanResult& out);
  Result<bool> scan_exception(const ScanRequest& req, const DeviceException& x, uint64_t at, ScanResult& out);

  Result<std::optional<StopEvent>> run_until_warp(WarpId warp, uint32_t cta, uint64_t n, uint64_t limit);
};

// How the session runs the workload: re-launch (session_run.cpp: every stop saves, kills and
// re-launches) or live through the Debug Module (session_live.cpp: warps halted in place). The
// session's other jobs ask the runner, never which method it is; a third way of running (another
// device's driver) is one more implementation.
class Runner {
 public:
  virtual ~Runner() = default;
  virtual bool live() const = 0;
  // A run the user asked for (continue, step, run to a count), or a quiet one (seek, scan: re-launch
  // only), until something stops it.
  virtual Result<StopEvent> run(const Session::Impl::Mode& mode) = 0;
  // Memory while the launch is held on the device (read through it); nullopt: not held, the
  // device's memory or the stop's saved state is read as usual. `core`: its local memory.
  virtual std::optional<Result<std::vector<uint8_t>>> read_held(uint32_t addr, uint32_t size,
                                                                std::optional<uint32_t> core) = 0;
  // Whether a breakpoint's EBREAK goes into device memory when it is set (else the runner writes it
  // when it next runs the warps).
  virtual bool plants_in_memory() const = 0;
  // Writing registers or memory at a stop.
  virtual Result<void> can_write_state() const = 0;
  // Whether a stop here may be taken as it stands for a seek to it (a held device must be left).
  virtual bool holds_device() const = 0;
  // A checkpoint's flags (docs/live.md): a warp of the launch ran alone, and the interval since the
  // last checkpoint was stepped; then the checkpoint was written.
  virtual bool departed(uint32_t launch) const = 0;
  virtual bool stepped() const = 0;
  virtual void checkpoint_written() = 0;
  // Time travel re-launches from checkpoints: the runner that goes on from here (nullptr: this one).
  virtual std::unique_ptr<Runner> leave(const std::string& why) = 0;
};
std::unique_ptr<Runner> make_relaunch_runner(Session::Impl& s);
std::unique_ptr<Runner> make_live_runner(Session::Impl& s);

}  // namespace vx::engine
