#include "engine/session.hpp"

#include <algorithm>
#include <chrono>
#include <bit>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "checkpoint/store.hpp"
#include "device/cmdbuf_builder.hpp"
#include "device/cmdproc.hpp"
#include "engine/context_record.hpp"
#include "engine/entry_routine.hpp"
#include "engine/live_run.hpp"

namespace vx::engine {

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::Breakpoint: return "breakpoint";
    case StopReason::Step: return "step";
    case StopReason::Exception: return "exception";
    case StopReason::Assertion: return "assertion";
    case StopReason::Watchdog: return "watchdog";
    case StopReason::Interrupt: return "interrupt";
    case StopReason::InstructionCount: return "instruction-count";
    case StopReason::Exited: return "exited";
    case StopReason::Killed: return "killed";
    case StopReason::Watchpoint: return "watchpoint";
    case StopReason::HistoryStart: return "history-start";
    case StopReason::EndOfRecording: return "end-of-recording";
  }
  return "unknown";
}

namespace {

constexpr uint32_t kEbreak = 0x00100073;
constexpr uint32_t kPageSize = 4096;
// The engine's own device memory (the thread-entry routine, its records, saved local memory) is a
// fixed reservation above every allocation, so the host's allocations get the addresses they get in
// a plain run, and a replay hands out the recorded ones.
constexpr uint32_t kEngineArea = 0xF0000000;
// Copies larger than this are recorded as several operations (a store value holds at most 64 MiB).
constexpr uint64_t kMaxOpData = 16u << 20;

std::string hex(uint32_t v) {
  char buf[16];
  snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// A piece of a submitted command buffer: commands up to and including at most one launch. The
// engine submits pieces one at a time, so killing a launch loses nothing queued behind it.
struct Segment {
  std::vector<Command> commands;
  bool launches = false;
};

std::vector<uint8_t> encode(const std::vector<Command>& commands) {
  CommandBufferBuilder b;
  for (const Command& c : commands) b.packet(c.op, c.inline_value, std::span<const uint64_t>(c.payload));
  b.finish();
  return b.bytes();
}

checkpoint::StopKind stop_kind(StopReason r) {
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

StopReason reason_of(const checkpoint::StopRecord& s) {
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

}  // namespace

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
      if (r) s_.unplant_view(addr, bytes);
      return r;
    }
    Result<uint64_t> submit(std::span<const uint8_t> commands) override { return s_.accept(commands); }
    DeviceEvent wait(uint64_t) override {
      // A host program waiting runs the workload under the session until its next stop.
      auto ev = s_.run(Mode{});
      if (!ev) return DeviceEvent{EventKind::CommandError, 0, {}, ev.error().message};
      if (ev->reason == StopReason::Exited) return DeviceEvent{EventKind::Completed, s_.host_submissions, {}, {}};
      if (ev->reason == StopReason::Killed) return DeviceEvent{EventKind::CommandError, 0, {}, ev->message};
      return DeviceEvent{EventKind::Halted, s_.host_submissions, ev->exception, {}};
    }
    void abort() override {
      s_.dev.abort();
      s_.lv.info.held = false;
      s_.drop_pending();
      s_.phase = Phase::Idle;
    }
    std::vector<ConsoleChunk> read_console() override { return s_.take_console(); }
    uint32_t exit_code() override { return s_.dev.exit_code(); }
    MachineStats stats() const override { return s_.dev.stats(); }
    std::vector<DivergentBranch> divergent_branches() const override { return s_.dev.divergent_branches(); }
    Result<uint32_t> dm_read(uint32_t addr) override { return s_.dev.dm_read(addr); }
    Result<void> dm_write(uint32_t addr, uint32_t value) override { return s_.dev.dm_write(addr, value); }
    Result<DeviceContext> save_context() override { return make_error("save_context: the debugger owns the launch"); }
    Result<uint64_t> resume(const ResumeRequest&) override {
      return make_error("resume: the debugger owns re-launches");
    }
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
    enum Kind { Continue, Step, RunTo, Seek, Scan, UntilWarp } kind = Continue;
    WarpId warp;
    uint32_t lanes = 0;
    StepPolicy policy;
    uint64_t target = 0;
    uint32_t cta = 0;  // UntilWarp: the CTA the warp must hold
    uint64_t n = 0;    // UntilWarp: stop before the warp's instruction number n
    bool quiet() const { return kind == Seek || kind == Scan || kind == UntilWarp; }
  };

  // One entry of the workload's plan: the host's operations in the order the device saw them. The
  // session applies them in order; a move back in time sets the cursor back and applies them again.
  // Once recorded, an entry's data lives in the store, not in memory: `resident` says whether data
  // (a copy's bytes) or seg.commands (a piece's) are here; blobs name them in the store.
  struct PlanEntry {
    checkpoint::HostOpKind kind = checkpoint::HostOpKind::Copy;
    uint32_t addr = 0;
    uint64_t size = 0;
    std::vector<uint8_t> data;  // Copy
    Segment seg;                // Submit: one piece (seg.launches stays when the commands go)
    std::vector<checkpoint::PageHash> blobs;
    bool resident = true;
  };

  Impl(Driver& d, const SessionOptions& o) : dev(d), opts(o), host_driver(*this) {}

  Driver& dev;
  SessionOptions opts;
  HostDriver host_driver;
  std::optional<checkpoint::Store> store;
  std::atomic<bool> interrupted{false};
  std::optional<std::pair<WarpId, uint32_t>> stop_lane;  // Session::set_stop_lane, until a stop is recorded
  std::function<void(uint32_t, uint64_t)> progress;
  std::function<bool(const StopEvent&)> breakpoint_filter;  // false: the hit does not stop

  // The workload.
  std::map<uint32_t, uint64_t> regions;  // memory the host allocated or reserved
  std::vector<PlanEntry> plan;
  size_t cursor = 0;   // the next entry to apply
  size_t applied = 0;  // entries [0, applied) were applied once: their allocations stand
  std::vector<size_t> launch_entry;                          // launch L -> its plan entry (index L - 1)
  std::vector<std::map<uint32_t, uint64_t>> launch_regs;     // WRITE_REG64 values when launch L began
  std::vector<LaunchGridArgs> launch_grid;                   // launch L -> its LAUNCH_GRID fields
  std::vector<size_t> launch_symbols;  // a replay's launch L -> the recorded images (Symbols) before it
  std::function<Result<bool>()> host_source;                 // a live host program (set_host_source)
  std::function<void()> host_tick;                           // Session::set_host_tick
  // Device time (Session::device_ns): wall time of the runs the user asked for, not of seeks and
  // scans, and not the time stopped at the prompt.
  uint64_t run_ns = 0;
  std::optional<std::chrono::steady_clock::time_point> run_t0;
  std::map<uint32_t, uint64_t> cmp_registers;  // WRITE_REG64 values so far: re-issued before a re-launch
  uint64_t host_submissions = 0;
  bool host_done = false;  // the host issues nothing more (host_finished, or a recorded hostEnd)
  // Recording: host operations not yet written to the store.
  std::vector<checkpoint::HostOpRecord> unrecorded;
  std::vector<checkpoint::PageData> unrecorded_blobs;

  // The launch.
  Phase phase = Phase::Idle;
  bool fatal = false;  // the stop cannot be continued (a fault, the watchdog)
  uint32_t launch = 0, pass = 0;
  DeviceContext ctx;
  StopEvent last;
  uint64_t progress_at_pass_start = 0;  // the launch's own count when the pass began
  uint64_t dev_at_pass_start = 0;       // the device's count when the pass began
  uint64_t finished_instructions = 0;   // the last completed launch's own count
  std::vector<uint8_t> io_snapshot;     // the I/O region (console rings, exit code) at the stop
  std::map<uint32_t, uint64_t> reached;  // launch -> the furthest count it reached
  // launch -> the lowest count this session ran it from: a replay opening at a checkpoint restores the
  // instructions before it instead of executing them, so they are not in the re-execution ratio's base.
  std::map<uint32_t, uint64_t> ran_from;
  std::set<uint32_t> completed;          // launches that ran to their end
  bool quiet = false;                    // a seek or scan is running: no marks, no hit counts, no console

  // Breakpoints and watchpoints.
  std::map<int, Breakpoint> bps;
  int next_bp = 1;
  std::map<uint32_t, uint32_t> planted;  // address -> original word
  std::map<int, std::pair<WatchSpec, bool>> watches;  // id -> (spec, enabled)
  int next_watch = 1;

  // The thread-entry routine's memory.
  uint32_t routine_addr = 0, records_addr = 0, lmem_addr = 0;

  // Checkpoints.
  std::map<uint32_t, checkpoint::PageHash> pages;  // the workload's memory image as last checkpointed
  std::set<checkpoint::PageHash> stored_pages;     // pages known to be in the store (committed)
  std::map<checkpoint::PageHash, checkpoint::PageData> unstored;  // pages a failed checkpoint could not write
  std::string store_error;                          // the last write failure ("" none)
  // The store's staged_lost() when store_error was set: staged checkpoints given up since are newer.
  uint64_t store_error_lost = 0;
  std::string console_log;                          // this launch's console output
  std::vector<ConsoleChunk> console_out;
  checkpoint::TimeKey last_key;
  uint64_t next_auto = 0;  // the launch count of the next automatic checkpoint

  SessionStats st;
  LiveState lv;  // live mode (engine/live_run.hpp)

  // Device memory for checkpoints: through the Debug Module while a live launch is held (at a stop,
  // and at an automatic checkpoint, for which every warp is halted too).
  Result<void> read_device(uint32_t addr, std::span<uint8_t> bytes) {
    if (lv.on && lv.info.held) {
      auto r = live::read_memory(*this, addr, uint32_t(bytes.size()));
      if (!r) return r.error();
      std::copy(r->begin(), r->end(), bytes.begin());
      return {};
    }
    return dev.copy_from_device(addr, bytes);
  }

  // A page of the workload's memory as a checkpoint holds it. Page 0 is the I/O region's first page
  // (the console indices and the first rings), but its first kIoBase bytes are no device memory: a
  // whole-page access fails there, and a page that cannot be read or written is taken as freed. So
  // those bytes read as zero and are never written.
  static uint32_t page_skip(uint32_t page) { return page == 0 ? memmap::kIoBase : 0; }
  Result<void> read_page(uint32_t page, std::span<uint8_t> bytes) {
    const uint32_t skip = page_skip(page);
    std::fill(bytes.begin(), bytes.begin() + skip, uint8_t(0));
    return read_device(page * kPageSize + skip, bytes.subspan(skip));
  }
  Result<void> write_page(uint32_t page, std::span<const uint8_t> bytes) {
    const uint32_t skip = page_skip(page);
    return dev.copy_to_device(page * kPageSize + skip, bytes.subspan(skip));
  }

  // --- Host side ------------------------------------------------------------------------
  // The host may change the device only at the end of the recorded history (not after a move back).
  Result<void> at_frontier(const char* what) const {
    if (cursor < applied)
      return make_error(std::string(what) + ": the session is back in time; the host cannot change the device until it "
                                            "is at the end of its history again");
    return {};
  }

  // A host memory operation applied now: it goes before the pieces still queued.
  void insert_applied(PlanEntry e) {
    plan.insert(plan.begin() + std::ptrdiff_t(cursor), std::move(e));
    record(plan[cursor]);
    if (!store) drop(plan[cursor]);  // nothing can go back to it
    ++cursor;
    applied = cursor;
  }

  void drop(PlanEntry& e) {
    if (e.kind != checkpoint::HostOpKind::Copy && e.kind != checkpoint::HostOpKind::Submit) return;
    std::vector<uint8_t>().swap(e.data);
    std::vector<Command>().swap(e.seg.commands);
    e.resident = false;
  }

  // Brings a recorded entry's data back from the store (a move back in time applies it again).
  Result<void> make_resident(PlanEntry& e) {
    if (e.resident) return {};
    if (!store || e.blobs.empty()) return make_error("internal error: a host operation's data is neither kept nor recorded");
    std::vector<uint8_t> bytes;
    for (const checkpoint::PageHash& h : e.blobs) {
      // Not written yet (it goes with the next checkpoint), or in the store.
      auto pending = std::find_if(unrecorded_blobs.begin(), unrecorded_blobs.end(),
                                  [&](const checkpoint::PageData& p) { return p.hash == h; });
      if (pending != unrecorded_blobs.end()) {
        bytes.insert(bytes.end(), pending->bytes.begin(), pending->bytes.end());
        continue;
      }
      auto b = store->read_page(h);
      if (!b) return make_error("reading a recorded host operation: " + b.error().message);
      bytes.insert(bytes.end(), b->begin(), b->end());
    }
    if (e.kind == checkpoint::HostOpKind::Copy) {
      e.data = std::move(bytes);
    } else {
      auto pieces = split(bytes);
      if (!pieces || pieces->size() != 1)
        return make_error("a recorded command buffer is not one piece this build accepts" +
                          (pieces ? std::string() : ": " + pieces.error().message));
      e.seg.commands = std::move(pieces->front().commands);
    }
    e.resident = true;
    return {};
  }

  Result<uint32_t> host_alloc(uint64_t size) {
    if (auto r = at_frontier("mem_alloc"); !r) return r.error();
    auto r = dev.mem_alloc(size);
    if (!r) return r;
    regions[*r] = (size + kPageSize - 1) & ~uint64_t(kPageSize - 1);
    insert_applied(PlanEntry{checkpoint::HostOpKind::Alloc, *r, size, {}, {}});
    return r;
  }
  Result<void> host_reserve(uint32_t addr, uint64_t size) {
    if (auto r = at_frontier("mem_reserve"); !r) return r.error();
    auto r = dev.mem_reserve(addr, size);
    if (!r) return r;
    regions[addr] = size;
    insert_applied(PlanEntry{checkpoint::HostOpKind::Reserve, addr, size, {}, {}});
    return r;
  }
  Result<void> host_free(uint32_t addr) {
    if (auto r = at_frontier("mem_free"); !r) return r.error();
    auto r = dev.mem_free(addr);
    if (!r) return r;
    regions.erase(addr);
    insert_applied(PlanEntry{checkpoint::HostOpKind::Free, addr, 0, {}, {}});
    return r;
  }
  Result<void> host_copy(uint32_t addr, std::span<const uint8_t> bytes) {
    if (auto r = at_frontier("copy_to_device"); !r) return r.error();
    auto r = dev.copy_to_device(addr, bytes);
    if (!r) return r;
    replant(addr, bytes.size());
    insert_applied(PlanEntry{checkpoint::HostOpKind::Copy, addr, bytes.size(), {bytes.begin(), bytes.end()}, {}});
    return r;
  }

  Result<uint64_t> accept(std::span<const uint8_t> bytes) {
    if (auto r = at_frontier("submit"); !r) return r.error();
    if (phase == Phase::Exited) phase = Phase::Idle;  // the host goes on: more work
    auto pieces = split(bytes);
    if (!pieces) return pieces.error();
    for (Segment& seg : *pieces) {
      PlanEntry e;
      e.kind = checkpoint::HostOpKind::Submit;
      e.seg = std::move(seg);
      plan.push_back(std::move(e));
    }
    return ++host_submissions;
  }

  static Result<std::vector<Segment>> split(std::span<const uint8_t> bytes) {
    auto list = decode_command_buffer(bytes);
    if (!list) return list.error();
    std::vector<Segment> out;
    Segment seg;
    for (const Command& c : list->commands) {
      if (c.op == CmdOp::Finish) break;
      if (c.op == CmdOp::RunInstances || c.op == CmdOp::RunKernelSlice)
        return make_error("vxreplay debugs grid launches (LAUNCH_GRID); " + cmd_op_name(c.op) +
                          " at byte offset " + std::to_string(c.offset) + " is not supported under the debugger yet");
      seg.commands.push_back(c);
      if (c.op == CmdOp::LaunchGrid) {
        seg.launches = true;
        out.push_back(std::move(seg));
        seg = Segment{};
      }
    }
    if (!seg.commands.empty()) out.push_back(std::move(seg));
    return out;
  }

  // The LAUNCH_GRID fields of a piece that launches (its last command).
  static LaunchGridArgs grid_args(const Segment& seg) {
    LaunchGridArgs a;
    if (seg.commands.empty() || seg.commands.back().op != CmdOp::LaunchGrid) return a;
    const Command& c = seg.commands.back();
    auto lo = [&](size_t i) { return i < c.payload.size() ? uint32_t(c.payload[i]) : 0u; };
    auto hi = [&](size_t i) { return i < c.payload.size() ? uint32_t(c.payload[i] >> 32) : 0u; };
    a.entry_pc = c.inline_value;
    a.start_pc = lo(0);
    a.arg_ptr = hi(0);
    a.grid = {lo(1), hi(1), lo(2)};
    a.block = {hi(2), lo(3), hi(3)};
    a.lmem_bytes = lo(4);
    a.cluster = {hi(4), lo(5), hi(5)};
    return a;
  }

  void drop_pending() {
    // The host dropped what it queued: pieces not applied yet go.
    while (plan.size() > cursor && plan.back().kind == checkpoint::HostOpKind::Submit && plan.size() - 1 >= applied)
      plan.pop_back();
  }

  // --- Recording ------------------------------------------------------------------------------
  checkpoint::PageHash add_blob_op(checkpoint::HostOpKind kind, uint64_t addr, std::span<const uint8_t> data,
                                   std::string name = {}) {
    checkpoint::PageData pd = checkpoint::make_page(std::vector<uint8_t>(data.begin(), data.end()));
    checkpoint::HostOpRecord op;
    op.kind = kind;
    op.addr = addr;
    op.size = data.size();
    op.data = checkpoint::BlobRef{uint32_t(data.size()), pd.hash};
    op.name = std::move(name);
    unrecorded.push_back(std::move(op));
    const checkpoint::PageHash hash = pd.hash;
    if (!stored_pages.count(pd.hash)) unrecorded_blobs.push_back(std::move(pd));
    return hash;
  }

  // Records an entry applied for the first time (the recording is the plan in the order it ran).
  void record(PlanEntry& e) {
    if (!store || opts.replay || opts.read_only) return;
    using K = checkpoint::HostOpKind;
    switch (e.kind) {
      case K::Copy:
        for (uint64_t off = 0; off < e.data.size(); off += kMaxOpData) {
          uint64_t n = std::min<uint64_t>(kMaxOpData, e.data.size() - off);
          e.blobs.push_back(add_blob_op(K::Copy, e.addr + off, std::span<const uint8_t>(e.data).subspan(off, n)));
        }
        break;
      case K::Submit: {
        auto bytes = encode(e.seg.commands);
        e.blobs.push_back(add_blob_op(K::Submit, 0, bytes));
        break;
      }
      default: {
        checkpoint::HostOpRecord op;
        op.kind = e.kind;
        op.addr = e.addr;
        op.size = e.size;
        unrecorded.push_back(op);
      }
    }
  }

  Result<void> flush() {
    if (!store || unrecorded.empty()) return {};
    auto r = store->append_ops(unrecorded, unrecorded_blobs);
    if (!r) return make_error("could not record the host's operations: " + r.error().message);
    for (const auto& b : unrecorded_blobs) stored_pages.insert(b.hash);
    unrecorded.clear();
    unrecorded_blobs.clear();
    // What is recorded need not stay in memory: a move back reads it from the store.
    for (size_t i = 0; i < cursor && i < plan.size(); ++i)
      if (plan[i].resident && !plan[i].blobs.empty()) drop(plan[i]);
    return {};
  }

  Result<void> load_recording() {
    if (!store) return make_error("replay needs a recording (a checkpoint store)");
    // Damage anywhere is refused now, before anything is replayed from it (docs/store.md).
    if (auto r = store->check_values(); !r) return r.error();
    auto ops = store->ops();
    if (!ops) return ops.error();
    using K = checkpoint::HostOpKind;
    std::map<size_t, size_t> symbols_before;  // plan index of a submission -> Symbols operations before it
    size_t symbols_seen = 0;
    for (size_t i = 0; i < ops->size(); ++i) {
      const checkpoint::HostOpRecord& op = (*ops)[i];
      const std::string what = "host operation " + std::to_string(i) + " (" + checkpoint::host_op_name(op.kind) + ")";
      PlanEntry e;
      e.kind = op.kind;
      e.addr = uint32_t(op.addr);
      e.size = op.size;
      if (op.kind == K::Submit) symbols_before[plan.size()] = symbols_seen;
      switch (op.kind) {
        case K::Symbols: ++symbols_seen; continue;
        case K::HostEnd: host_done = true; continue;
        case K::Copy:
          // Read when it is applied.
          e.blobs = {op.data.hash};
          e.resident = false;
          break;
        case K::Submit: {
          auto bytes = store->read_page(op.data.hash);
          if (!bytes) return make_error(what + ": " + bytes.error().message);
          auto pieces = split(*bytes);
          if (!pieces) return make_error(what + " is not a command buffer this build accepts: " + pieces.error().message);
          if (pieces->size() != 1) return make_error(what + " holds " + std::to_string(pieces->size()) + " pieces, not one");
          e.seg = std::move(pieces->front());
          e.blobs = {op.data.hash};
          break;
        }
        default: break;
      }
      plan.push_back(std::move(e));
    }
    // Where each launch begins, and the registers it runs with: a seek into launch L starts there.
    std::map<uint32_t, uint64_t> regs;
    for (size_t i = 0; i < plan.size(); ++i) {
      if (plan[i].kind != K::Submit) continue;
      for (const Command& c : plan[i].seg.commands)
        if (c.op == CmdOp::WriteReg64) regs[c.inline_value] = c.payload.at(0);
      if (plan[i].seg.launches) {
        launch_entry.push_back(i);
        launch_regs.push_back(regs);
        launch_grid.push_back(grid_args(plan[i].seg));
        launch_symbols.push_back(symbols_before[i]);
      }
      drop(plan[i]);
    }
    return {};
  }

  // A replay seeking into launch L for the first time: the host's memory operations before it
  // (allocations above all) are applied; the launches before it are not run (the checkpoint holds
  // their effects).
  Result<void> prepare_launch(uint32_t L) {
    const size_t upto = launch_entry[L - 1];
    for (size_t i = applied; i < upto; ++i)
      if (plan[i].kind != checkpoint::HostOpKind::Submit)
        if (auto r = apply_memory_entry(plan[i], true); !r) return r;
    applied = std::max(applied, upto + 1);
    return {};
  }

  // Applies plan entry `cursor` (not a piece: those are submitted by run()).
  Result<void> apply_memory_entry(PlanEntry& e, bool first) {
    using K = checkpoint::HostOpKind;
    if (e.kind == K::Copy)
      if (auto r = make_resident(e); !r) return r;
    switch (e.kind) {
      case K::Alloc:
        if (first) {
          auto r = dev.mem_alloc(e.size);
          if (!r) return make_error("replaying the recording: alloc of " + std::to_string(e.size) + " bytes failed: " +
                                    r.error().message);
          if (*r != e.addr)
            return make_error("replaying the recording: alloc of " + std::to_string(e.size) + " bytes gave " + hex(*r) +
                              ", the recording has " + hex(e.addr) + " (the recording does not match this device)");
          regions[e.addr] = (e.size + kPageSize - 1) & ~uint64_t(kPageSize - 1);
        }
        return {};
      case K::Reserve:
        if (first) {
          if (auto r = dev.mem_reserve(e.addr, e.size); !r)
            return make_error("replaying the recording: " + r.error().message);
          regions[e.addr] = e.size;
        }
        return {};
      case K::Free:
        if (first) {
          if (auto r = dev.mem_free(e.addr); !r) return make_error("replaying the recording: " + r.error().message);
          regions.erase(e.addr);
        }
        return {};
      case K::Copy:
        if (auto r = dev.copy_to_device(e.addr, e.data); !r) {
          // A region freed later in the history than this point: map it again.
          if (auto m = dev.mem_reserve(e.addr & ~(kPageSize - 1), ((e.addr & (kPageSize - 1)) + e.data.size() +
                                                                    kPageSize - 1) & ~uint64_t(kPageSize - 1));
              !m)
            return make_error("replaying the recording: " + r.error().message);
          if (auto r2 = dev.copy_to_device(e.addr, e.data); !r2) return make_error("replaying the recording: " + r2.error().message);
        }
        replant(e.addr, e.data.size());
        return {};
      default: return {};
    }
  }

  bool in_regions(uint32_t page) const {
    uint64_t a = uint64_t(page) * kPageSize;
    if (a < memmap::kIoEnd) return true;
    uint64_t stack_lo = memmap::kStackBase - uint64_t(dev.config().total_harts()) * memmap::kStackPerHart;
    if (a >= stack_lo && a < memmap::kStackBase) return true;
    auto it = regions.upper_bound(uint32_t(a + kPageSize - 1));
    if (it == regions.begin()) return false;
    --it;
    return a < uint64_t(it->first) + it->second;
  }

  // --- Breakpoints ----------------------------------------------------------------------------
  bool wanted(uint32_t addr) const {
    for (const auto& [id, b] : bps)
      if (b.addr == addr && b.enabled) return true;
    return false;
  }

  Result<void> plant(uint32_t addr) {
    if (lv.on) return {};  // live: written through the DM when the warps are halted
    if (planted.count(addr)) return {};
    uint32_t word = 0;
    if (auto r = dev.copy_from_device(addr, {reinterpret_cast<uint8_t*>(&word), 4}); !r)
      return make_error("cannot plant a breakpoint at " + hex(addr) + ": not mapped device memory");
    uint32_t e = kEbreak;
    if (auto r = dev.copy_to_device(addr, {reinterpret_cast<const uint8_t*>(&e), 4}); !r) return r.error();
    planted[addr] = word;
    return {};
  }

  // Breakpoints set before the memory they name was mapped (Session::add_breakpoint) go in once
  // it is: before a launch starts, and before any forward run from a stop (a goto restored it).
  void plant_pending() {
    for (const auto& [bid, b] : bps)
      if (b.enabled && !planted.count(b.addr)) (void)plant(b.addr);
  }

  void unplant(uint32_t addr) {
    if (lv.on) return;
    auto it = planted.find(addr);
    if (it == planted.end()) return;
    uint32_t w = it->second;
    (void)dev.copy_to_device(addr, {reinterpret_cast<const uint8_t*>(&w), 4});
    planted.erase(it);
  }

  // The host rewrote [addr, addr + n): breakpoints there take the new words as their originals.
  void replant(uint32_t addr, uint64_t n) {
    for (auto it = planted.lower_bound(addr & ~3u); it != planted.end() && it->first < addr + n; ++it) {
      uint32_t word = 0;
      (void)dev.copy_from_device(it->first, {reinterpret_cast<uint8_t*>(&word), 4});
      if (word == kEbreak) continue;
      it->second = word;
      uint32_t e = kEbreak;
      (void)dev.copy_to_device(it->first, {reinterpret_cast<const uint8_t*>(&e), 4});
    }
  }

  // Shows planted breakpoints' original words in bytes read from [addr, addr + size).
  void unplant_view(uint32_t addr, std::span<uint8_t> bytes) const {
    uint64_t end = uint64_t(addr) + bytes.size();
    for (auto it = planted.lower_bound(addr >= 3 ? addr - 3 : 0); it != planted.end() && it->first < end; ++it)
      for (uint32_t i = 0; i < 4; ++i) {
        uint64_t a = uint64_t(it->first) + i;
        if (a >= addr && a < end) bytes[size_t(a - addr)] = uint8_t(it->second >> (8 * i));
      }
  }

  // Seeks and traces run with every breakpoint taken out of memory and no watchpoint set.
  struct Suspended {
    std::map<uint32_t, uint32_t> words;
  };
  Suspended suspend_breakpoints() {
    Suspended s;
    s.words = planted;
    for (const auto& [addr, word] : planted)
      (void)dev.copy_to_device(addr, {reinterpret_cast<const uint8_t*>(&word), 4});
    planted.clear();
    return s;
  }
  void restore_breakpoints(Suspended& s) {
    for (const auto& [addr, word] : s.words) {
      uint32_t e = kEbreak;
      (void)dev.copy_to_device(addr, {reinterpret_cast<const uint8_t*>(&e), 4});
      planted[addr] = word;
    }
    s.words.clear();
  }

  Result<void> sync_watchpoints(bool on) {
    std::vector<WatchRange> ranges;
    if (on)
      for (const auto& [id, w] : watches)
        if (w.second)
          ranges.push_back(WatchRange{uint32_t(id), w.first.addr, w.first.len, w.first.kind, w.first.local, w.first.core});
    return dev.set_watchpoints(ranges);
  }

  // --- Passes ---------------------------------------------------------------------------------
  std::vector<ConsoleChunk> take_console() {
    std::vector<ConsoleChunk> out;
    out.swap(console_out);
    return out;
  }

  void drain_console() {
    for (ConsoleChunk& c : dev.read_console()) {
      console_log += c.bytes;
      if (!quiet) console_out.push_back(std::move(c));
    }
  }

  void account_pass() {
    MachineStats s = dev.stats();
    st.instructions += s.instructions - pass_instr0;
    st.lane_instructions += s.lane_instructions - pass_lane0;
    st.restore_instructions += s.restore_instructions - pass_restore0;
    pass_instr0 = s.instructions;
    pass_lane0 = s.lane_instructions;
    pass_restore0 = s.restore_instructions;
  }
  uint64_t pass_instr0 = 0, pass_lane0 = 0, pass_restore0 = 0;

  void begin_pass(uint64_t progress) {
    MachineStats s = dev.stats();
    pass_instr0 = dev_at_pass_start = s.instructions;
    pass_lane0 = s.lane_instructions;
    pass_restore0 = s.restore_instructions;
    progress_at_pass_start = progress;
    auto [from, fresh] = ran_from.try_emplace(launch, progress);
    if (!fresh) from->second = std::min(from->second, progress);
    ++pass;
    ++st.passes;
    next_auto = opts.checkpoint_interval ? (progress / opts.checkpoint_interval + 1) * opts.checkpoint_interval
                                         : UINT64_MAX;
  }

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

  Result<void> reserve_engine_area() {
    const DeviceConfig& cfg = dev.config();
    if (cfg.local_mem_bytes % (4 * cfg.threads) != 0) return {};  // reported when a re-launch is needed
    std::vector<uint32_t> code = entry_routine_code();
    const uint64_t code_bytes = (code.size() * 4 + kPageSize - 1) & ~uint64_t(kPageSize - 1);
    const uint64_t rec_bytes =
        (uint64_t(cfg.total_cores()) * cfg.warps * routine::record_bytes(cfg.threads) + kPageSize - 1) &
        ~uint64_t(kPageSize - 1);
    const uint64_t lmem_bytes = std::max<uint64_t>(kPageSize, uint64_t(cfg.total_cores()) * cfg.local_mem_bytes);
    const uint64_t total = code_bytes + rec_bytes + lmem_bytes;
    if (auto r = dev.mem_reserve(kEngineArea, total); !r) return r.error();
    if (auto r = dev.copy_to_device(kEngineArea, {reinterpret_cast<const uint8_t*>(code.data()), code.size() * 4}); !r)
      return r.error();
    routine_addr = kEngineArea;
    records_addr = uint32_t(kEngineArea + code_bytes);
    lmem_addr = uint32_t(kEngineArea + code_bytes + rec_bytes);
    return {};
  }

  Result<void> ensure_routine() {
    if (routine_addr) return {};
    const DeviceConfig& cfg = dev.config();
    if (cfg.local_mem_bytes % (4 * cfg.threads) != 0)
      return make_error("re-launch needs local memory in whole rounds of 4 x NT bytes");
    return make_error("the engine's device memory could not be reserved at " + hex(kEngineArea));
  }

  Result<void> reissue_registers() {
    if (cmp_registers.empty()) return {};
    CommandBufferBuilder b;
    for (const auto& [reg, value] : cmp_registers) b.write_reg64(reg, value);
    b.finish();
    auto id = dev.submit(b.bytes());
    if (!id) return id.error();
    DeviceEvent ev = dev.wait();
    if (ev.kind != EventKind::Completed) return make_error("re-issuing the launch's registers failed: " + ev.message);
    return {};
  }

  // Re-launches the stopped launch from ctx (the patent's re-launch with the thread-entry routine).
  // overrides: warps at a planted breakpoint go past it (a scan sets none: a hit right at its start counts).
  Result<void> relaunch(bool dispatch_new, bool overrides = true) {
    if (auto r = ensure_routine(); !r) return r;
    if (auto r = reissue_registers(); !r) return r;
    // Another workload may have used the console rings while we were stopped.
    if (!io_snapshot.empty())
      if (auto r = dev.copy_to_device(memmap::kIoBase, io_snapshot); !r) return r;
    const DeviceConfig& cfg = dev.config();
    const uint32_t nt = cfg.threads, rb = routine::record_bytes(nt);
    ResumeRequest req;
    req.context = ctx;
    req.routine_pc = routine_addr;
    req.dispatch_new_units = dispatch_new;
    for (uint32_t c = 0; c < cfg.total_cores(); ++c) {
      const CoreState& core = ctx.cores[c];
      uint32_t lmem_src = lmem_addr + c * cfg.local_mem_bytes;
      if (cfg.local_mem_bytes)
        if (auto r = dev.copy_to_device(lmem_src, core.local_mem); !r) return r;
      bool lmem_pending = cfg.local_mem_bytes > 0;
      bool any = false;
      for (uint32_t w = 0; w < cfg.warps; ++w) {
        const WarpState& ws = core.warps[w];
        if (!ws.active) continue;
        any = true;
        uint32_t rec = records_addr + (c * cfg.warps + w) * rb;
        auto bytes = entry_routine_record(&ws, nt, lmem_pending, lmem_src, cfg.local_mem_bytes);
        if (auto r = dev.copy_to_device(rec, bytes); !r) return r;
        req.placements.push_back(RestorePlacement{c, w, rec, true});
        lmem_pending = false;
        auto bp = planted.find(ws.pc);
        if (overrides && bp != planted.end()) req.overrides.push_back(FetchOverride{c, w, ws.pc, bp->second});
      }
      if (!any && lmem_pending) {
        uint32_t rec = records_addr + c * cfg.warps * rb;
        auto bytes = entry_routine_record(nullptr, nt, true, lmem_src, cfg.local_mem_bytes);
        if (auto r = dev.copy_to_device(rec, bytes); !r) return r;
        req.placements.push_back(RestorePlacement{c, 0, rec, false});
      }
    }
    (void)dev.take_dirty_pages();  // the engine's own writes are not the workload's
    auto id = dev.resume(req);
    if (!id) return id.error();
    begin_pass(ctx.kernel_instructions);
    phase = Phase::Running;
    return {};
  }

  // --- Stops ----------------------------------------------------------------------------------
  // The warps at planted breakpoints (every one is reported by a breakpoint stop).
  void add_hit(StopEvent& ev, uint32_t c, uint32_t w) const {
    for (const WarpHit& h : ev.hits)
      if (h.warp == WarpId{c, w}) return;
    const WarpState& ws = ctx.cores[c].warps[w];
    ev.hits.push_back(WarpHit{{c, w}, ws.pc, ws.tmask});
  }

  void describe(StopEvent& ev, const DeviceException& exc, bool count_hits) {
    const uint32_t nc = uint32_t(ctx.cores.size());
    if (ev.reason == StopReason::Breakpoint) {
      if (exc.cause == Cause::Breakpoint && exc.core < nc && exc.warp < ctx.cores[exc.core].warps.size() &&
          ctx.cores[exc.core].warps[exc.warp].active)
        add_hit(ev, exc.core, exc.warp);
      for (uint32_t c = 0; c < nc; ++c)
        for (uint32_t w = 0; w < ctx.cores[c].warps.size(); ++w) {
          const WarpState& ws = ctx.cores[c].warps[w];
          if (ws.active && planted.count(ws.pc)) add_hit(ev, c, w);
        }
      std::set<uint32_t> pcs;
      for (const WarpHit& h : ev.hits) pcs.insert(h.pc);
      for (auto& [id, b] : bps)
        if (b.enabled && pcs.count(b.addr)) {
          ev.breakpoints.push_back(id);
          if (count_hits) ++b.hits;
        }
    } else if (ev.reason == StopReason::Watchpoint) {
      for (const WatchEvent& w : ev.watches)
        if (w.warp.core < nc && w.warp.slot < ctx.cores[w.warp.core].warps.size()) add_hit(ev, w.warp.core, w.warp.slot);
    } else if (ev.reason != StopReason::Interrupt && ev.reason != StopReason::InstructionCount) {
      if (exc.core < nc && exc.warp < ctx.cores[exc.core].warps.size()) add_hit(ev, exc.core, exc.warp);
    }
  }

  // Saves the state at the current event (the launch is still in flight). io_region: also the I/O
  // region a re-launch puts back (a live stop does not re-launch: a move in time restores it).
  Result<void> capture(bool io_region = true) {
    auto saved = dev.save_context();
    if (!saved) return saved.error();
    ctx = std::move(saved).value();
    drain_console();
    if (io_region) {
      io_snapshot.assign(memmap::kIoEnd - memmap::kIoBase, 0);
      (void)dev.copy_from_device(memmap::kIoBase, io_snapshot);
    }
    note_reached(ctx.kernel_instructions);
    return {};
  }

  Result<StopEvent> stop(StopReason reason, const DeviceException& exc, std::vector<WatchEvent> watch = {}) {
    account_pass();
    if (auto r = capture(); !r) return r.error();
    StopEvent ev;
    ev.reason = reason;
    ev.launch = launch;
    ev.pass = pass;
    ev.instructions = ctx.kernel_instructions;
    ev.exception = exc;
    ev.watches = std::move(watch);
    describe(ev, exc, !quiet);
    // Kill the workload: the device is free until the user goes on.
    dev.abort();
    phase = Phase::Stopped;
    if (!quiet) ++st.stops;
    last = ev;
    auto saved = save_checkpoint(ev, !quiet);
    if (!saved) return saved.error();
    ev.recorded = *saved && !quiet;
    last.recorded = ev.recorded;
    return ev;
  }

  // A checkpoint of ctx (and the memory image) at the current point. A point already stored is
  // reused: the state reached must be the stored one (invariant 3), which is checked.
  // A checkpoint that cannot be written (a full disk, LMDB's map full, a file-size limit) loses
  // nothing already recorded and stops nothing: the session says so once and goes on; what was not
  // written is retried with the next checkpoint (pages, host operations), and the end reports the
  // stops not recorded. Only the engine's own invariant failing is an error.
  // True when the checkpoint was written (false: no store, read-only, or it could not be).
  Result<bool> save_checkpoint(const StopEvent& ev, bool mark) {
    if (!store || opts.read_only) return false;
    auto r = write_checkpoint(ev, mark);
    if (r) return true;
    if (r.error().message.rfind("internal error", 0) == 0) return r.error();
    store_error = r.error().message;
    store_error_lost = store->staged_lost();
    ++st.store_failures;
    if (mark) ++st.unsaved_stops;
    return false;
  }

  Result<void> write_checkpoint(const StopEvent& ev, bool mark) {
    if (auto r = flush(); !r) return r;
    const checkpoint::TimeKey key{launch, ctx.kernel_instructions};
    std::vector<checkpoint::PageData> new_pages;
    // The workload's pages written since the last checkpoint (the engine's own are not in its regions).
    for (uint32_t page : dev.take_dirty_pages()) {
      if (!in_regions(page)) continue;
      std::vector<uint8_t> bytes(kPageSize);
      if (!read_page(page, bytes)) {
        pages.erase(page);  // freed since
        continue;
      }
      unplant_view(page * kPageSize, bytes);
      checkpoint::PageData pd = checkpoint::make_page(std::move(bytes));
      pages[page] = pd.hash;
      if (!stored_pages.count(pd.hash)) new_pages.push_back(std::move(pd));
    }
    checkpoint::StopRecord stop_rec;
    stop_rec.kind = ev.reason == StopReason::InstructionCount && !mark ? checkpoint::StopKind::Automatic
                                                                        : stop_kind(ev.reason);
    stop_rec.text = stop_reason_name(ev.reason);
    stop_rec.exception = checkpoint::ExceptionRecord{uint8_t(ev.exception.cause), ev.exception.pc, ev.exception.core,
                                                     ev.exception.warp, ev.exception.lane, ev.exception.addr};
    if ((ev.exception.cause == Cause::None || ev.reason == StopReason::Breakpoint) && !ev.hits.empty()) {
      // The warp that stopped (a breakpoint, step or watchpoint) and the lane the front end said the
      // stop is about (else its lowest): goto N shows it again.
      const WarpHit* h = &ev.hits.front();
      uint32_t lane = h->lanes ? uint32_t(std::countr_zero(h->lanes)) : 0u;
      if (stop_lane)
        for (const WarpHit& x : ev.hits)
          if (x.warp == stop_lane->first && (x.lanes >> stop_lane->second & 1)) {
            h = &x;
            lane = stop_lane->second;
          }
      stop_rec.exception = checkpoint::ExceptionRecord{0, h->pc, h->warp.core, h->warp.slot, lane, 0};
    }
    if (mark) stop_lane.reset();
    auto exists = store->has(key);
    if (!exists) return make_error("could not save the checkpoint " + key.to_string() + ": " + exists.error().message);
    if (*exists) {
      // Same point, same state: compare what the store holds with what the device reached.
      auto rec = store->get(key);
      if (!rec) return make_error("could not read the checkpoint " + key.to_string() + ": " + rec.error().message);
      auto stored = record_to_context(*rec, dev.config(), [&](const checkpoint::PageHash& h) { return store->read_page(h); });
      if (!stored) return make_error("could not read the checkpoint " + key.to_string() + ": " + stored.error().message);
      // A live history's checkpoint (docs/live.md): a forward run back in it that ran through a
      // stepped interval without stopping (its breakpoints deleted) re-executed it, and may reach a
      // later live key in another state. The recording keeps the live state; this one is not written.
      if (rec->live && !lv.on && !(*stored == ctx)) return {};
      if (!(*stored == ctx))
        return make_error("internal error: the state reached at " + key.to_string() +
                          " differs from the checkpoint stored there (the model is not deterministic here)");
      std::map<uint32_t, checkpoint::PageHash> mem;
      for (const auto& r : rec->memory) mem[r.number] = r.hash;
      if (mem != pages)
        return make_error("internal error: the memory reached at " + key.to_string() +
                          " differs from the checkpoint stored there");
      last_key = key;
      if (mark) {
        stop_rec.kind = stop_kind(ev.reason);
        if (auto r = store->set_mark(key, stop_rec); !r) return r;
      }
      return {};
    }
    checkpoint::CheckpointRecord rec;
    context_to_record(ctx, &rec, &new_pages);
    rec.key = key;
    rec.stop = stop_rec;
    rec.live = lv.on && lv.departed.count(launch);
    rec.stepped = lv.on && lv.stepped;
    ThreadLists l = lists();
    auto conv = [](const std::vector<UnitRange>& in) {
      std::vector<checkpoint::UnitRange> out;
      for (const UnitRange& r : in) out.push_back(checkpoint::UnitRange{r.first, r.count});
      return out;
    };
    rec.threads = checkpoint::ThreadLists{conv(l.complete), conv(l.in_progress), conv(l.not_launched)};
    rec.console.assign(console_log.begin(), console_log.end());
    for (const auto& [page, hash] : pages) rec.memory.push_back(checkpoint::PageRef{page, hash});
    // Pages handed to put must be named by the record: drop duplicates of one hash.
    std::sort(new_pages.begin(), new_pages.end(), [](const auto& a, const auto& b) { return a.hash < b.hash; });
    new_pages.erase(std::unique(new_pages.begin(), new_pages.end(),
                                [](const auto& a, const auto& b) { return a.hash == b.hash; }),
                    new_pages.end());
    std::set<checkpoint::PageHash> named;
    for (const auto& r : rec.memory) named.insert(r.hash);
    for (const auto& c : rec.cores)
      if (c.local_mem.size) named.insert(c.local_mem.hash);
    std::erase_if(new_pages, [&](const checkpoint::PageData& p) { return !named.count(p.hash); });
    // Pages of a checkpoint that could not be written are given again while the record names them.
    for (const auto& h : named)
      if (!stored_pages.count(h))
        if (auto u = unstored.find(h); u != unstored.end() &&
                                       std::none_of(new_pages.begin(), new_pages.end(),
                                                    [&](const checkpoint::PageData& p) { return p.hash == h; }))
          new_pages.push_back(u->second);
    // A stop the user saw is committed durably (with the automatic checkpoints staged before it); an
    // automatic or quiet checkpoint is staged: it can be derived again, so it costs no fsync.
    if (auto r = store->put(key, rec, new_pages, mark ? &stop_rec : nullptr, mark); !r) {
      for (auto& p : new_pages) unstored.emplace(p.hash, std::move(p));
      return make_error("could not save the checkpoint " + key.to_string() + ": " + r.error().message);
    }
    for (const auto& p : new_pages) {
      stored_pages.insert(p.hash);
      unstored.erase(p.hash);
    }
    last_key = key;
    if (lv.on) lv.stepped = false;
    ++st.checkpoints;
    checkpoint::StoreStats ss = store->stats();
    st.bytes_stored = ss.stored_page_bytes + ss.record_bytes;
    return {};
  }

  // An automatic checkpoint while the launch is in flight (after a Budget event): no re-launch.
  Result<void> auto_checkpoint() {
    if (!store || opts.read_only) return {};
    const uint64_t now = launch_progress();
    auto exists = store->has(checkpoint::TimeKey{launch, now});
    if (!exists) return exists.error();
    note_reached(now);
    if (*exists) return {};
    account_pass();
    if (auto r = capture(); !r) return r;
    StopEvent ev;
    ev.reason = StopReason::InstructionCount;
    ev.launch = launch;
    ev.instructions = ctx.kernel_instructions;
    if (auto r = save_checkpoint(ev, false); !r) return r.error();
    return {};
  }

  ThreadLists lists() const {
    ThreadLists l;
    if (phase != Phase::Stopped && phase != Phase::Running) return l;
    std::set<uint64_t> running;
    for (const CoreState& c : ctx.cores)
      for (const WarpState& w : c.warps)
        if (w.active) running.insert(w.cta_linear);
    auto push = [](std::vector<UnitRange>& v, uint64_t u) {
      if (!v.empty() && v.back().first + v.back().count == u)
        ++v.back().count;
      else
        v.push_back(UnitRange{u, 1});
    };
    const uint64_t next = ctx.launch.next_unit;
    for (uint64_t u : running) push(l.in_progress, u);
    // Complete: every launched CTA not running, as ranges between the running ones.
    uint64_t from = 0;
    for (uint64_t u : running) {
      if (u > from) l.complete.push_back(UnitRange{from, u - from});
      from = u + 1;
    }
    if (next > from) l.complete.push_back(UnitRange{from, next - from});
    if (ctx.launch.total_units > next) l.not_launched.push_back(UnitRange{next, ctx.launch.total_units - next});
    return l;
  }

  bool is_assertion(uint32_t pc) {
    uint32_t next = 0;
    return dev.copy_from_device(pc + 4, {reinterpret_cast<uint8_t*>(&next), 4}).ok() && next == kAssertMarker;
  }

  Result<StopEvent> on_exception(const DeviceEvent& e) {
    const DeviceException& x = e.exception;
    if (x.cause == Cause::RestoreFailed) {
      dev.abort();
      phase = Phase::Dead;
      return killed("internal error: " + e.message);
    }
    if (x.cause == Cause::Breakpoint && planted.count(x.pc)) return stop(StopReason::Breakpoint, x);
    if (x.cause == Cause::Breakpoint) {
      // The kernel's own EBREAK: continuing goes past it (assertions then go on after vx_assert).
      return stop(is_assertion(x.pc) ? StopReason::Assertion : StopReason::Exception, x);
    }
    fatal = true;
    return stop(x.cause == Cause::Watchdog ? StopReason::Watchdog : StopReason::Exception, x);
  }

  StopEvent killed(const std::string& why) {
    StopEvent ev;
    ev.reason = StopReason::Killed;
    ev.launch = launch;
    ev.pass = pass;
    ev.message = why;
    last = ev;
    return ev;
  }

  std::vector<WatchEvent> watch_events() {
    std::vector<WatchEvent> out;
    for (WatchHit& h : dev.take_watch_hits())
      out.push_back(WatchEvent{int(h.id), WarpId{h.core, h.slot}, h.pc, h.lanes, h.kind, h.addr, std::move(h.old_bytes)});
    return out;
  }

  // Submits the next piece of the plan (applying the host's memory operations before it). Returns
  // false when the plan is exhausted.
  Result<bool> start_next_piece() {
    while (cursor < plan.size()) {
      PlanEntry& e = plan[cursor];
      const bool first = cursor >= applied;
      if (e.kind != checkpoint::HostOpKind::Submit) {
        if (auto r = apply_memory_entry(e, first); !r) return r.error();
        if (first) record(e);
        if (!store || !e.blobs.empty()) drop(e);
        ++cursor;
        applied = std::max(applied, cursor);
        continue;
      }
      if (auto r = make_resident(e); !r) return r.error();
      const LaunchGridArgs piece_launch = grid_args(e.seg);
      for (const Command& c : e.seg.commands)
        if (c.op == CmdOp::WriteReg64) cmp_registers[c.inline_value] = c.payload.at(0);
      // Breakpoints set before the memory they name was mapped (add_breakpoint) go in now.
      if (!quiet) plant_pending();
      auto id = dev.submit(encode(e.seg.commands));
      if (!id) return make_error("the device rejected a command buffer: " + id.error().message);
      if (first) record(e);
      if (!store || !e.blobs.empty()) drop(e);  // recorded (or nothing can go back to it)
      const size_t index = cursor++;
      applied = std::max(applied, cursor);
      if (e.seg.launches) {
        ++launch;
        if (launch_entry.size() < launch) {
          launch_entry.push_back(index);
          launch_regs.push_back(cmp_registers);
          launch_grid.push_back(piece_launch);
        }
        pass = 0;
        console_log.clear();
        fatal = false;
        begin_pass(0);
      }
      phase = Phase::Running;
      return true;
    }
    return false;
  }

  // Runs until the next stop.
  uint64_t device_ns() const {
    const auto running = run_t0 ? std::chrono::steady_clock::now() - *run_t0 : std::chrono::steady_clock::duration{};
    return run_ns + uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(running).count());
  }

  // Every run of the workload: the device time of those the user asked for is counted.
  Result<StopEvent> run(const Mode& mode) {
    if (mode.quiet() || quiet || run_t0) return run_pass(mode);
    run_t0 = std::chrono::steady_clock::now();
    auto ev = run_pass(mode);
    run_ns = device_ns();
    run_t0.reset();
    return ev;
  }

  Result<StopEvent> run_pass(const Mode& mode) {
    if (lv.on) return live::run(*this, mode);
    interrupted = false;
    if (phase == Phase::Exited) return make_error("the workload has exited; there is nothing to run");
    if (phase == Phase::Stopped && !mode.quiet()) plant_pending();
    if (phase == Phase::Dead) return make_error("the workload was killed: " + last.message);
    bool step_armed = false;
    if (phase == Phase::Stopped) {
      if (auto r = follow_recording(mode); !r || *r) return r ? Result<StopEvent>(**r) : Result<StopEvent>(r.error());
      if (fatal) {
        // The stop stays as it is: inspectable, and a point time travel can leave and reach again.
        if (mode.quiet()) return make_error("the launch cannot go on past this point (it stopped on a fault)");
        return make_error("The kernel stopped on " + std::string(cause_name(last.exception.cause)) +
                          " and cannot go on; the stop stays inspectable (reverse commands go back in time).");
      }
      if (last.reason == StopReason::Assertion || last.reason == StopReason::Exception) {
        // Go past the kernel's own EBREAK (the only exception that is not fatal).
        WarpState& ws = ctx.cores[last.exception.core].warps[last.exception.warp];
        if (ws.active && ws.pc == last.exception.pc) ws.pc += 4;
      }
      if (mode.kind == Mode::Step) {
        const WarpState& ws = ctx.cores[mode.warp.core].warps[mode.warp.slot];
        if (!ws.active) return make_error("the focus warp has no work to step");
      }
      if ((mode.kind == Mode::RunTo || mode.kind == Mode::Seek || mode.kind == Mode::Scan) &&
          ctx.kernel_instructions >= mode.target)
        return make_error("internal error: a run to instruction " + std::to_string(mode.target) + " from " +
                          std::to_string(ctx.kernel_instructions));
      if (auto r = relaunch(!opts.in_progress_only); !r) {
        dev.abort();
        phase = Phase::Dead;
        return killed("re-launch failed: " + r.error().message);
      }
      if (mode.kind == Mode::Step) {
        const WarpState& ws = ctx.cores[mode.warp.core].warps[mode.warp.slot];
        if (auto r = dev.set_warp_trigger(
                WarpTrigger{mode.warp.core, mode.warp.slot, ws.instret + 1, 0, 0, mode.lanes ? mode.lanes : ~0u});
            !r)
          return r.error();
        step_armed = true;
      }
      if (mode.kind == Mode::UntilWarp) {
        WarpTrigger t{mode.warp.core, mode.warp.slot, mode.n, 0, 0, ~0u};
        t.before = true;
        t.cta_linear = mode.cta;
        if (auto r = dev.set_warp_trigger(t); !r) return r.error();
      }
    } else if (mode.kind == Mode::Step || mode.kind == Mode::UntilWarp) {
      return make_error("no warp to step: the kernel is not stopped");
    }
    for (;;) {
      if (phase == Phase::Idle) {
        auto started = start_next_piece();
        if (!started) {
          phase = Phase::Dead;
          return killed(started.error().message);
        }
        if (!*started && host_source && !host_done && !opts.replay && !mode.quiet()) {
          // A live host: everything it queued has run; it goes on until it waits for more.
          auto more = host_source();
          if (!more) {
            phase = Phase::Dead;
            return killed(more.error().message);
          }
          if (*more) continue;
        }
        if (!*started) {
          drain_console();
          if (opts.replay && !host_done) {
            phase = Phase::Exited;
            StopEvent ev;
            ev.reason = StopReason::EndOfRecording;
            ev.launch = launch;
            ev.pass = pass;
            ev.instructions = finished_instructions;
            ev.message = "end of recording: the recorded run ended here";
            last = ev;
            return ev;
          }
          phase = Phase::Exited;
          StopEvent ev;
          ev.reason = StopReason::Exited;
          ev.launch = launch;
          ev.pass = pass;
          ev.exit_code = dev.exit_code();
          ev.instructions = finished_instructions;
          last = ev;
          if (auto r = flush(); !r) return r.error();
          return ev;
        }
        if (mode.kind == Mode::Seek || mode.kind == Mode::Scan || mode.kind == Mode::UntilWarp) {
          // A quiet run never crosses into another launch.
          dev.abort();
          phase = Phase::Dead;
          return make_error("internal error: a seek ran past the end of its launch");
        }
        // The launch's first checkpoint, before its first instruction: every point of the launch
        // has a checkpoint at or before it.
        if (store && opts.checkpoint_interval && !opts.read_only) {
          DeviceEvent e0 = dev.wait(0);
          if (e0.kind == EventKind::Budget) {
            if (auto r = auto_checkpoint(); !r) return r.error();
          } else if (e0.kind == EventKind::CommandError) {
            account_pass();
            phase = Phase::Dead;
            return killed("a command failed: " + e0.message);
          }
        }
      }
      uint64_t budget = opts.slice;
      const uint64_t now = launch_progress();
      if (mode.kind == Mode::RunTo || mode.kind == Mode::Seek || mode.kind == Mode::Scan ||
          mode.kind == Mode::UntilWarp) {
        if (now >= mode.target) {
          if (mode.kind == Mode::UntilWarp) {
            account_pass();
            if (auto r = capture(); !r) return r.error();
            dev.abort();
            phase = Phase::Stopped;
            StopEvent ev;
            ev.reason = StopReason::InstructionCount;
            ev.launch = launch;
            ev.instructions = ctx.kernel_instructions;
            last = ev;
            return ev;
          }
          return stop(StopReason::InstructionCount, {});
        }
        budget = std::min(budget, mode.target - now);
      }
      if (next_auto > now) budget = std::min(budget, next_auto - now);
      // Checked at every return from the device, not only at slice ends: a step whose policy asks
      // after every instruction (stepi N, nexti) returns through a trigger each time.
      if (interrupted && !quiet) return stop(StopReason::Interrupt, {});
      DeviceEvent e = dev.wait(budget);
      drain_console();
      switch (e.kind) {
        case EventKind::Budget: {
          const uint64_t at = launch_progress();
          note_reached(at);
          if (at >= next_auto) {
            if (auto r = auto_checkpoint(); !r) return r.error();
            next_auto = (at / opts.checkpoint_interval + 1) * opts.checkpoint_interval;
          }
          if (progress && !quiet) progress(pass, at);
          if (host_tick && !quiet) host_tick();
          if (interrupted && !quiet) return stop(StopReason::Interrupt, {});
          continue;
        }
        case EventKind::Trigger: {
          if (mode.kind == Mode::UntilWarp) {
            // Before the launch's first instruction, the trigger fires once the first round began
            // (the KMU dispatched, core 0 picked its warp); the point (L, 0) is the state before that,
            // the launch's first checkpoint, which a stop here must not contradict: stand there.
            if (launch_progress() == 0 && store) {
              auto start = store->has(checkpoint::TimeKey{launch, 0});
              if (!start) return start.error();
              if (*start) {
                if (auto r = restore(checkpoint::TimeKey{launch, 0}); !r) return r.error();
                StopEvent ev;
                ev.reason = StopReason::Step;
                ev.launch = launch;
                ev.instructions = 0;
                last = ev;
                return ev;
              }
            }
            return stop(StopReason::Step, DeviceException{});
          }
          if (!step_armed) continue;
          auto now_warp = dev.peek_warp(mode.warp.core, mode.warp.slot);
          if (!now_warp) return now_warp.error();
          const WarpState& ws = *now_warp;
          if (ws.active && mode.policy) {
            uint32_t lane = mode.lanes ? uint32_t(std::countr_zero(mode.lanes & ws.tmask ? mode.lanes & ws.tmask
                                                                                          : mode.lanes))
                                       : uint32_t(std::countr_zero(ws.tmask));
            uint32_t sp = ws.x[2 * dev.config().threads + lane];
            if (auto range = mode.policy(ws.pc, sp)) {
              if (auto r = dev.set_warp_trigger(WarpTrigger{mode.warp.core, mode.warp.slot, ws.instret + 1,
                                                            range->first, range->second,
                                                            mode.lanes ? mode.lanes : ~0u});
                  !r)
                return r.error();
              continue;
            }
          }
          dev.clear_warp_trigger();
          return stop(StopReason::Step, DeviceException{Cause::None, ws.pc, mode.warp.core, mode.warp.slot, 0, 0});
        }
        case EventKind::Watch: {
          auto w = watch_events();
          if (mode.quiet()) continue;  // scans read hits themselves
          // As for breakpoints: a hit the front end does not want (a false condition, a `watch`
          // whose value did not change) costs no stop; the device goes on from where it is.
          if (breakpoint_filter && !quiet) {
            auto saved = dev.save_context();
            if (!saved) return saved.error();
            ctx = std::move(saved).value();
            StopEvent hit;
            hit.reason = StopReason::Watchpoint;
            hit.launch = launch;
            hit.pass = pass;
            hit.instructions = ctx.kernel_instructions;
            hit.watches = w;
            describe(hit, DeviceException{}, false);
            if (!breakpoint_filter(hit)) {
              ++st.filtered_hits;
              continue;
            }
          }
          return stop(StopReason::Watchpoint, {}, std::move(w));
        }
        case EventKind::Exception: {
          // A breakpoint hit the front end does not want (a false condition) costs no stop: the
          // device goes on in place.
          if (breakpoint_filter && !quiet && e.exception.cause == Cause::Breakpoint && planted.count(e.exception.pc)) {
            auto saved = dev.save_context();
            if (!saved) return saved.error();
            ctx = std::move(saved).value();
            StopEvent hit;
            hit.reason = StopReason::Breakpoint;
            hit.launch = launch;
            hit.pass = pass;
            hit.instructions = ctx.kernel_instructions;
            hit.exception = e.exception;
            describe(hit, e.exception, false);
            if (!breakpoint_filter(hit)) {
              std::vector<FetchOverride> ov;
              for (const WarpHit& h : hit.hits)
                if (auto p = planted.find(h.pc); p != planted.end())
                  ov.push_back(FetchOverride{h.warp.core, h.warp.slot, h.pc, p->second});
              if (auto r = dev.continue_past_breakpoint(ov); !r) return r.error();
              ++st.filtered_hits;
              continue;
            }
          }
          return on_exception(e);
        }
        case EventKind::Drained: {
          // The patent's variant: the warps in progress are done; now the rest of the launch.
          account_pass();
          auto saved = dev.save_context();
          if (!saved) return saved.error();
          ctx = std::move(saved).value();
          dev.abort();
          if (auto r = relaunch(true); !r) {
            phase = Phase::Dead;
            return killed("re-launch failed: " + r.error().message);
          }
          continue;
        }
        case EventKind::Completed:
        case EventKind::Idle:
          account_pass();
          finished_instructions = launch_progress();
          note_reached(finished_instructions);
          completed.insert(launch);
          if (!quiet) st.launch_instructions += launch_base(finished_instructions);
          dev_at_pass_start = dev.stats().instructions;
          progress_at_pass_start = 0;
          dev.clear_warp_trigger();
          phase = Phase::Idle;
          if (mode.quiet()) {
            StopEvent ev;
            ev.reason = StopReason::Exited;
            ev.launch = launch;
            ev.instructions = finished_instructions;
            last = ev;
            return ev;
          }
          continue;
        case EventKind::CommandError:
          account_pass();
          phase = Phase::Dead;
          return killed("a command failed: " + e.message);
        case EventKind::Halted:
          account_pass();
          dev.abort();
          phase = Phase::Dead;
          return killed("internal error: the device halted a warp for the Debug Module");
      }
    }
  }

  // --- Time -------------------------------------------------------------------------------------
  Result<void> need_store() const {
    if (!store) return make_error("time travel needs the recording (the session runs without --db)");
    return {};
  }

  // The launch's next checkpoint after the stop when a live session reached it by Debug Module
  // steps (docs/live.md "Time travel while live"): a re-launch from here follows the seeded
  // schedule, not that interval, so the engine restores its end instead of re-executing it.
  Result<std::optional<checkpoint::CheckpointRecord>> stepped_ahead() {
    using Out = std::optional<checkpoint::CheckpointRecord>;
    if (!store || lv.on || phase != Phase::Stopped || !may_have_live()) return Out();
    auto keys = store->list();
    if (!keys) return keys.error();
    const checkpoint::TimeKey here{launch, ctx.kernel_instructions};
    auto it = std::upper_bound(keys->begin(), keys->end(), here);
    if (it == keys->end() || it->launch != launch) return Out();
    auto rec = store->get(*it);
    if (!rec) return rec.error();
    if (!rec->stepped) return Out();
    return Out(std::move(*rec));
  }

  // Back in a live history (docs/live.md "Time travel while live"): a forward move follows the
  // recording over the intervals the live session ran by Debug Module steps instead of
  // re-executing them. A stepi of the one warp that such an interval moved is that interval; a
  // continue (or a run to a later instruction) goes on from its end, and stops there when the live
  // session stopped there at a breakpoint; past a continue's departure (the warps stepped past
  // their breakpoints) every move goes on from its end. Any other move into one is refused.
  // A stop event when the move ended in the recording; nullopt: run from the current point.
  Result<std::optional<StopEvent>> follow_recording(const Mode& mode) {
    using Out = std::optional<StopEvent>;
    for (;;) {
      auto ahead = stepped_ahead();
      if (!ahead) return ahead.error();
      if (!*ahead && mode.kind == Mode::Continue) {
        // A seeded interval, and a stepped one further on: a continue scans up to it, as a re-launch
        // run would go on into it (the first hit after here is the stop), and follows it from there.
        auto end = scan_end_before_stepped(UINT64_MAX);
        if (!end) return end.error();
        if (!*end) return Out();
        const uint64_t from = ctx.kernel_instructions;
        ScanRequest req;
        req.until = **end;
        req.breakpoints = true;
        req.watchpoints = true;
        req.accept = [&](const StopEvent& e) {
          return e.reason != StopReason::Breakpoint || !breakpoint_filter || breakpoint_filter(e);
        };
        auto res = scan(req);
        if (!res) return res.error();
        std::optional<StopEvent> first;
        for (const StopEvent& h : res->hits)
          if (h.instructions > from && (!first || h.instructions < first->instructions)) first = h;
        if (first) {
          const bool watch = first->reason == StopReason::Watchpoint;
          auto ev =
              seek(TimePoint{launch, first->instructions}, watch ? StopReason::Watchpoint : StopReason::Breakpoint,
                   std::nullopt, watch ? first->watches : std::vector<WatchEvent>{});
          if (!ev) return ev.error();
          return Out(std::move(*ev));
        }
        // The scan ends where the stepped interval starts: a stop at a breakpoint there is the hit.
        if (auto r = restore(checkpoint::TimeKey{launch, **end}); !r) return r.error();
        for (uint32_t c = 0; c < ctx.cores.size(); ++c)
          for (uint32_t w = 0; w < ctx.cores[c].warps.size(); ++w) {
            const WarpState& ws = ctx.cores[c].warps[w];
            if (ws.active && std::any_of(bps.begin(), bps.end(),
                                         [&](const auto& b) { return b.second.enabled && b.second.addr == ws.pc; })) {
              auto ev = seek(TimePoint{launch, **end}, StopReason::Breakpoint, WarpId{c, w}, {});
              if (!ev) return ev.error();
              return Out(std::move(*ev));
            }
          }
        continue;
      }
      if (!*ahead) return Out();
      const checkpoint::CheckpointRecord& rec = **ahead;
      const checkpoint::TimeKey from{launch, ctx.kernel_instructions}, to = rec.key;
      std::vector<WarpId> moved;
      for (const auto& w : rec.warps) {
        if (w.core >= ctx.cores.size() || w.slot >= ctx.cores[w.core].warps.size()) continue;
        const WarpState& now = ctx.cores[w.core].warps[w.slot];
        if (!now.active || !w.active || now.cta_linear != w.cta_linear || now.instret != w.instret)
          moved.push_back(WarpId{w.core, w.slot});
      }
      const bool just_focus = moved.size() == 1 && moved[0].core == mode.warp.core && moved[0].slot == mode.warp.slot;
      if (mode.kind == Mode::Step && !mode.policy && to.instret == from.instret + 1 && just_focus) {
        auto ev = seek(TimePoint{to.launch, to.instret}, StopReason::Step, mode.warp, {});
        if (!ev) return ev.error();
        return Out(std::move(*ev));
      }
      const bool departure = rec.stop.kind == checkpoint::StopKind::Automatic;
      const bool onward = mode.kind == Mode::Continue || (mode.kind == Mode::RunTo && mode.target > to.instret);
      const bool inside = (mode.kind == Mode::Seek || mode.kind == Mode::RunTo || mode.kind == Mode::UntilWarp) &&
                          mode.target < to.instret;
      if ((!departure && !onward) || inside) return make_error(stepped_message(from, to));
      const bool still_set = std::any_of(bps.begin(), bps.end(), [&](const auto& b) {
        return b.second.enabled && b.second.addr == rec.stop.exception.pc;
      });
      if (!departure && mode.kind == Mode::Continue && rec.stop.kind == checkpoint::StopKind::Breakpoint && still_set) {
        auto ev = seek(TimePoint{to.launch, to.instret}, StopReason::Breakpoint,
                       WarpId{rec.stop.exception.core, rec.stop.exception.warp}, {});
        if (!ev) return ev.error();
        return Out(std::move(*ev));
      }
      if (auto r = restore(to); !r) return r.error();
    }
  }

  // Only a live session, or a replay of a recording (which a live session may have written), has
  // live checkpoints: a re-launch session never looks for them.
  bool may_have_live() const { return lv.dev != nullptr || opts.replay; }

  // The last checkpoint before the first stepped one in (now, until] of this launch: a scan ends
  // there, as a re-launch does not reproduce what follows (docs/live.md).
  Result<std::optional<uint64_t>> scan_end_before_stepped(uint64_t until) {
    using Out = std::optional<uint64_t>;
    if (!store || lv.on || !may_have_live()) return Out();
    auto keys = store->list();
    if (!keys) return keys.error();
    uint64_t prev = ctx.kernel_instructions;
    for (auto it = std::upper_bound(keys->begin(), keys->end(), checkpoint::TimeKey{launch, ctx.kernel_instructions});
         it != keys->end() && it->launch == launch && it->instret <= until; ++it) {
      auto rec = store->get(*it);
      if (!rec) return rec.error();
      if (rec->stepped) return Out(prev);
      prev = it->instret;
    }
    return Out();
  }

  static std::string stepped_message(const checkpoint::TimeKey& from, const checkpoint::TimeKey& to) {
    return "the live session ran launch " + std::to_string(from.launch) + " from instruction " +
           std::to_string(from.instret) + " to " + std::to_string(to.instret) +
           " by Debug Module steps (warps run alone), which a re-launch does not reproduce: only those two points "
           "are recorded (docs/live.md)";
  }

  // Restores the checkpoint at key exactly: memory, state, the plan's cursor and the launch.
  Result<void> restore(const checkpoint::TimeKey& key) {
    live::leave(*this, "a move in time re-launches from a checkpoint: the session went on in re-launch mode");
    if (key.launch == 0 || key.launch > launch_entry.size())
      return make_error("checkpoint " + key.to_string() + " belongs to a launch this session has not run");
    auto rec = store->get(key);
    if (!rec) return rec.error();
    auto c = record_to_context(*rec, dev.config(), [&](const checkpoint::PageHash& h) { return store->read_page(h); });
    if (!c) return c.error();
    if (phase == Phase::Running) account_pass();
    dev.abort();
    dev.clear_warp_trigger();
    if (auto r = prepare_launch(key.launch); !r) return r;
    // Memory: the checkpoint's pages; pages the workload wrote since then that it did not have are zero.
    // Pages written since the last checkpoint differ from what `pages` says: they are rewritten too.
    std::set<uint32_t> dirty;
    for (uint32_t page : dev.take_dirty_pages()) dirty.insert(page);
    std::map<uint32_t, checkpoint::PageHash> target;
    for (const auto& r : rec->memory) target[r.number] = r.hash;
    for (const auto& [page, hash] : target) {
      auto it = pages.find(page);
      if (it != pages.end() && it->second == hash && !dirty.count(page)) continue;
      auto bytes = store->read_page(hash);
      if (!bytes) return bytes.error();
      if (auto r = write_page(page, *bytes); !r) {
        // Freed later in the history: map it again.
        if (auto m = dev.mem_reserve(page * kPageSize, kPageSize); !m) return r.error();
        if (auto r2 = write_page(page, *bytes); !r2) return r2.error();
      }
      replant(page * kPageSize, kPageSize);
    }
    std::vector<uint8_t> zero(kPageSize, 0);
    for (const auto& [page, hash] : pages)
      if (!target.count(page)) {
        (void)write_page(page, zero);
        replant(page * kPageSize, kPageSize);
      }
    for (uint32_t page : dirty) {
      if (!in_regions(page) || target.count(page) || pages.count(page)) continue;
      if (write_page(page, zero)) replant(page * kPageSize, kPageSize);
    }
    (void)dev.take_dirty_pages();
    pages = std::move(target);
    ctx = std::move(c).value();
    io_snapshot.assign(memmap::kIoEnd - memmap::kIoBase, 0);
    (void)dev.copy_from_device(memmap::kIoBase, io_snapshot);
    console_log.assign(rec->console.begin(), rec->console.end());
    (void)dev.read_console();
    console_out.clear();
    fatal = rec->stop.kind == checkpoint::StopKind::Watchdog ||
            (rec->stop.kind == checkpoint::StopKind::DeviceException &&
             rec->stop.exception.cause != uint8_t(Cause::Breakpoint));
    launch = key.launch;
    cursor = launch_entry[key.launch - 1] + 1;
    cmp_registers = launch_regs[key.launch - 1];
    last_key = key;
    phase = Phase::Stopped;
    last = StopEvent{};
    last.reason = reason_of(rec->stop);
    last.launch = launch;
    last.instructions = ctx.kernel_instructions;
    last.exception = DeviceException{Cause(rec->stop.exception.cause), rec->stop.exception.pc, rec->stop.exception.core,
                                     rec->stop.exception.warp, rec->stop.exception.lane, rec->stop.exception.addr};
    return {};
  }

  // Runs quietly (no breakpoints, no watchpoints, no console) with `mode` from the current stop.
  Result<StopEvent> quiet_run(const Mode& mode, bool keep_breakpoints, bool keep_watchpoints) {
    Suspended sus;
    if (!keep_breakpoints) sus = suspend_breakpoints();
    if (auto r = sync_watchpoints(keep_watchpoints); !r) {
      if (!keep_breakpoints) restore_breakpoints(sus);
      return r.error();
    }
    const bool was_quiet = quiet;
    quiet = true;
    auto ev = run(mode);
    quiet = was_quiet;
    if (!keep_breakpoints) restore_breakpoints(sus);
    if (auto r = sync_watchpoints(true); !r && ev) return r.error();
    return ev;
  }

  Result<StopEvent> seek(TimePoint t, StopReason as, std::optional<WarpId> focus, std::vector<WatchEvent> watch) {
    if (auto r = need_store(); !r) return r.error();
    if (t.launch == 0 || t.launch > launch_entry.size())
      return make_error("launch " + std::to_string(t.launch) + " has not run in this session");
    auto key = store->at_or_before(checkpoint::TimeKey{t.launch, t.instret});
    if (!key) return key.error();
    if (!*key || (*key)->launch != t.launch)
      return make_error("no checkpoint of launch " + std::to_string(t.launch) + " at or before instruction " +
                        std::to_string(t.instret));
    // Already there: nothing to restore, unless the state here may not be the recorded one (a live
    // session's history, which a re-launch can reach in another state: docs/live.md).
    bool here = phase == Phase::Stopped && launch == t.launch && ctx.kernel_instructions == t.instret;
    if (here && !lv.on && **key == checkpoint::TimeKey{t.launch, t.instret}) {
      auto rec = store->get(**key);
      if (!rec) return rec.error();
      if (rec->live || rec->stepped) here = false;
    }
    if (!here) {
      if (auto r = restore(**key); !r) return r.error();
      if (t.instret > (*key)->instret) {
        Mode m;
        m.kind = Mode::Seek;
        m.target = t.instret;
        auto ev = quiet_run(m, false, false);
        if (!ev) return ev.error();
        if (ev->reason != StopReason::InstructionCount || ctx.kernel_instructions != t.instret)
          return make_error("instruction " + std::to_string(t.instret) + " of launch " + std::to_string(t.launch) +
                            " is past the end of its history (the run stopped at " +
                            std::to_string(ctx.kernel_instructions) + ": " + stop_reason_name(ev->reason) + ")");
      }
    }
    StopEvent ev;
    ev.reason = as;
    ev.launch = launch;
    ev.pass = 0;  // reached by a move in time, not by a pass of its own
    ev.instructions = ctx.kernel_instructions;
    ev.watches = std::move(watch);
    if ((as == StopReason::Step || as == StopReason::Breakpoint) && focus && focus->core < ctx.cores.size() &&
        focus->slot < ctx.cores[focus->core].warps.size() && ctx.cores[focus->core].warps[focus->slot].active)
      add_hit(ev, focus->core, focus->slot);
    if (as == StopReason::HistoryStart && focus) add_hit(ev, focus->core, focus->slot);
    if (as == StopReason::Exception || as == StopReason::Assertion || as == StopReason::Watchdog)
      ev.exception = last.exception;
    describe(ev, ev.exception, false);
    if (ev.hits.empty() && focus && focus->core < ctx.cores.size() && focus->slot < ctx.cores[focus->core].warps.size() &&
        ctx.cores[focus->core].warps[focus->slot].active)
      add_hit(ev, focus->core, focus->slot);
    last = ev;
    return ev;
  }

  // A trace over a live history crosses the intervals the live session ran by Debug Module steps:
  // each one is a single entry, the traced warp's state at its start (its end is the next entry),
  // when the warp moved in it; the seeded intervals between them are traced by re-launch.
  Result<ScanResult> scan(const ScanRequest& req) {
    if (!req.trace || lv.on || !may_have_live()) return scan_interval(req);
    ScanResult out;
    for (;;) {
      auto ahead = stepped_ahead();
      if (!ahead) return ahead.error();
      if (*ahead && ctx.kernel_instructions < req.until) {
        const checkpoint::CheckpointRecord& rec = **ahead;
        const WarpState& w = ctx.cores.at(req.trace_warp.core).warps.at(req.trace_warp.slot);
        if (w.active && w.cta_linear == req.trace_cta) {
          const checkpoint::WarpRecord* after = nullptr;
          for (const auto& r : rec.warps)
            if (r.core == req.trace_warp.core && r.slot == req.trace_warp.slot) after = &r;
          const bool same = after && after->active && after->cta_linear == w.cta_linear;
          if (!same || after->instret > w.instret) {
            const uint32_t nt = dev.config().threads;
            out.trace.push_back(TraceEntry{ctx.kernel_instructions, w.instret, w.pc, w.x[2 * nt + req.trace_lane],
                                           w.tmask, same ? after->instret - w.instret : 1, same ? after->pc : 0});
          }
        }
        out.reached = ctx.kernel_instructions;
        // Only the ends are recorded: a scan that ends inside the interval stands at its start.
        if (rec.key.instret > req.until) return out;
        if (auto r = restore(rec.key); !r) return r.error();
        out.reached = ctx.kernel_instructions;
        continue;
      }
      auto part = scan_interval(req);
      if (!part) return part.error();
      out.trace.insert(out.trace.end(), part->trace.begin(), part->trace.end());
      out.hits.insert(out.hits.end(), part->hits.begin(), part->hits.end());
      out.reached = part->reached;
      out.launch_ended = part->launch_ended;
      if (part->launch_ended || fatal || phase != Phase::Stopped || part->reached >= req.until) return out;
      auto next = stepped_ahead();
      if (!next) return next.error();
      if (!*next) return out;
    }
  }

  Result<ScanResult> scan_interval(const ScanRequest& req) {
    if (auto r = need_store(); !r) return r.error();
    if (phase != Phase::Stopped) return make_error("a scan starts at a stop");
    ScanResult out;
    Suspended sus;
    if (!req.breakpoints) sus = suspend_breakpoints();
    // Breakpoints a live session set while it was stopped were written only through the DM when
    // it ran on; it has left live mode (restore), so they go in now, like any pending one.
    if (req.breakpoints) plant_pending();
    if (auto r = sync_watchpoints(req.watchpoints); !r) return r.error();
    const bool was_quiet = quiet;
    quiet = true;
    struct Restore {
      Impl& s;
      Suspended& sus;
      bool bp, was_quiet;
      ~Restore() {
        s.quiet = was_quiet;
        if (!bp) s.restore_breakpoints(sus);
        (void)s.sync_watchpoints(true);
        s.dev.clear_warp_trigger();
      }
    } guard{*this, sus, req.breakpoints, was_quiet};

    if (ctx.kernel_instructions >= req.until) {
      out.reached = ctx.kernel_instructions;
      return out;
    }
    if (fatal) {
      out.reached = ctx.kernel_instructions;
      return out;
    }
    // An interval a live session ran by Debug Module steps: only its ends are recorded
    // (docs/live.md), so a scan finds nothing inside it but the breakpoint hit it starts with.
    auto ahead = stepped_ahead();
    if (!ahead) return ahead.error();
    uint64_t until = req.until;
    auto end = scan_end_before_stepped(req.until);
    if (!end) return end.error();
    if (*end && **end > ctx.kernel_instructions) until = **end;
    if (*ahead) {
      out.reached = ctx.kernel_instructions;
      if (!req.breakpoints) return out;
      std::optional<WarpId> at;
      for (uint32_t c = 0; c < ctx.cores.size() && !at; ++c)
        for (uint32_t w = 0; w < ctx.cores[c].warps.size() && !at; ++w)
          if (ctx.cores[c].warps[w].active && planted.count(ctx.cores[c].warps[w].pc)) at = WarpId{c, w};
      if (!at) return out;
      const DeviceException x{Cause::Breakpoint, ctx.cores[at->core].warps[at->slot].pc, at->core, at->slot, 0, 0};
      StopEvent ev;
      ev.reason = StopReason::Breakpoint;
      ev.launch = launch;
      ev.instructions = ctx.kernel_instructions;
      ev.exception = x;
      describe(ev, x, false);
      if ((!req.accept || req.accept(ev)) && !ev.breakpoints.empty()) out.hits.push_back(std::move(ev));
      return out;
    }
    if (last.reason == StopReason::Assertion || last.reason == StopReason::Exception) {
      WarpState& ws = ctx.cores[last.exception.core].warps[last.exception.warp];
      if (ws.active && ws.pc == last.exception.pc) ws.pc += 4;
    }
    if (auto r = relaunch(!opts.in_progress_only, false); !r) return r.error();
    auto arm_trace = [&](uint64_t min_instret) {
      WarpTrigger t{req.trace_warp.core, req.trace_warp.slot, min_instret, 0, 0, ~0u};
      t.before = true;
      t.cta_linear = req.trace_cta;
      return dev.set_warp_trigger(t);
    };
    if (req.trace) {
      // The state at the stop (the device restores it when the pass starts).
      const WarpState& w = ctx.cores.at(req.trace_warp.core).warps.at(req.trace_warp.slot);
      uint64_t from = (w.active && w.cta_linear == req.trace_cta) ? w.instret + 1 : 1;
      if (auto r = arm_trace(from); !r) return r.error();
    }
    const uint32_t nt = dev.config().threads;
    for (;;) {
      const uint64_t now = launch_progress();
      if (now >= until) break;
      uint64_t budget = std::min<uint64_t>(opts.slice, until - now);
      if (next_auto > now) budget = std::min(budget, next_auto - now);
      DeviceEvent e = dev.wait(budget);
      drain_console();
      const uint64_t at = launch_progress();
      note_reached(at);
      switch (e.kind) {
        case EventKind::Budget:
          if (at >= next_auto) {
            if (auto r = auto_checkpoint(); !r) return r.error();
            next_auto = (at / opts.checkpoint_interval + 1) * opts.checkpoint_interval;
          }
          continue;
        case EventKind::Trigger: {
          auto w = dev.peek_warp(req.trace_warp.core, req.trace_warp.slot);
          if (!w) return w.error();
          if (w->active && w->cta_linear == req.trace_cta) {
            out.trace.push_back(TraceEntry{at, w->instret, w->pc, w->x[2 * nt + req.trace_lane], w->tmask});
            if (auto r = arm_trace(w->instret + 2); !r) return r.error();
          }
          continue;
        }
        case EventKind::Watch: {
          StopEvent ev;
          ev.reason = StopReason::Watchpoint;
          ev.launch = launch;
          ev.instructions = at;
          ev.watches = watch_events();
          bool keep = true;
          if (req.accept) {
            account_pass();
            auto saved = dev.save_context();
            if (!saved) return saved.error();
            ctx = std::move(saved).value();
            keep = req.accept(ev);
          }
          if (keep) out.hits.push_back(std::move(ev));
          continue;
        }
        case EventKind::Exception: {
          const DeviceException& x = e.exception;
          if (x.cause == Cause::Breakpoint && planted.count(x.pc)) {
            account_pass();
            auto saved = dev.save_context();
            if (!saved) return saved.error();
            ctx = std::move(saved).value();
            StopEvent ev;
            ev.reason = StopReason::Breakpoint;
            ev.launch = launch;
            ev.instructions = at;
            ev.exception = x;
            describe(ev, x, false);
            bool keep = !req.accept || req.accept(ev);
            if (keep && !ev.breakpoints.empty()) out.hits.push_back(ev);
            std::vector<FetchOverride> ov;
            for (const WarpHit& h : ev.hits)
              if (auto p = planted.find(h.pc); p != planted.end())
                ov.push_back(FetchOverride{h.warp.core, h.warp.slot, h.pc, p->second});
            if (auto r = dev.continue_past_breakpoint(ov); !r) return r.error();
            continue;
          }
          // Any other exception ends the scan where it happened.
          account_pass();
          if (auto r = capture(); !r) return r.error();
          dev.abort();
          phase = Phase::Stopped;
          out.reached = ctx.kernel_instructions;
          fatal = x.cause != Cause::Breakpoint;
          last = StopEvent{};
          last.reason = x.cause == Cause::Breakpoint
                            ? (is_assertion(x.pc) ? StopReason::Assertion : StopReason::Exception)
                            : (x.cause == Cause::Watchdog ? StopReason::Watchdog : StopReason::Exception);
          last.launch = launch;
          last.instructions = ctx.kernel_instructions;
          last.exception = x;
          return out;
        }
        case EventKind::Completed:
        case EventKind::Idle:
          account_pass();
          finished_instructions = at;
          completed.insert(launch);
          dev.clear_warp_trigger();
          phase = Phase::Idle;
          out.launch_ended = true;
          out.reached = at;
          // The session must stand at a stop: the caller seeks next.
          last = StopEvent{};
          last.reason = StopReason::Exited;
          return out;
        default:
          return make_error(std::string("internal error: unexpected device event during a scan: ") +
                            event_kind_name(e.kind));
      }
    }
    // Reached `until`: stand there.
    account_pass();
    if (auto r = capture(); !r) return r.error();
    dev.abort();
    phase = Phase::Stopped;
    out.reached = ctx.kernel_instructions;
    last = StopEvent{};
    last.reason = StopReason::InstructionCount;
    last.launch = launch;
    last.instructions = ctx.kernel_instructions;
    return out;
  }

  Result<std::optional<StopEvent>> run_until_warp(WarpId warp, uint32_t cta, uint64_t n, uint64_t limit) {
    if (auto r = need_store(); !r) return r.error();
    if (phase != Phase::Stopped) return make_error("run_until_warp starts at a stop");
    const WarpState& ws = ctx.cores.at(warp.core).warps.at(warp.slot);
    if (ws.active && ws.cta_linear == cta && ws.instret + 1 == n) {
      StopEvent ev;
      ev.reason = StopReason::Step;
      ev.launch = launch;
      ev.instructions = ctx.kernel_instructions;
      add_hit(ev, warp.core, warp.slot);
      last = ev;
      return std::optional<StopEvent>(ev);
    }
    Mode m;
    m.kind = Mode::UntilWarp;
    m.target = limit;
    m.warp = warp;
    m.cta = cta;
    m.n = n;
    auto ev = quiet_run(m, false, false);
    dev.clear_warp_trigger();
    if (!ev) return ev.error();
    if (ev->reason != StopReason::Step) return std::optional<StopEvent>();
    StopEvent out = *ev;
    out.pass = 0;  // a move in time
    out.hits.clear();
    add_hit(out, warp.core, warp.slot);
    last = out;
    return std::optional<StopEvent>(out);
  }
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() {
  if (!impl_) return;
  (void)impl_->flush();
  if (impl_->store && !impl_->opts.read_only) (void)impl_->store->sync();
  if (impl_->store && !impl_->opts.replay && !impl_->opts.read_only) (void)impl_->store->set_writer_open(false);
}

Result<std::unique_ptr<Session>> Session::create(Driver& device, const SessionOptions& options) {
  auto impl = std::make_unique<Impl>(device, options);
  if (!options.store_dir.empty()) {
    checkpoint::OpenOptions oo;
    oo.sync = options.store_sync;
    if (options.store_map_size) oo.map_size = options.store_map_size;
    if (options.replay) {
      auto s = checkpoint::Store::open_existing(options.store_dir,
                                                options.read_only ? checkpoint::OpenMode::ReadOnly
                                                                  : checkpoint::OpenMode::ReadWrite,
                                                oo);
      if (!s) return s.error();
      if (s->header().config != to_config_record(device.config()))
        return make_error("the recording " + options.store_dir + " was made on a " + s->header().config.to_string() +
                          " device, not " + to_config_record(device.config()).to_string());
      impl->store.emplace(std::move(s).value());
    } else {
      checkpoint::StoreHeader h;
      h.config = to_config_record(device.config());
      h.kernel_hash = options.kernel_hash;
      h.workload = options.workload;
      h.seed = options.seed;
      h.scheduler_version = kSchedulerVersion;
      h.schedule = options.schedule;
      h.watchdog = options.watchdog;
      auto s = checkpoint::Store::open(options.store_dir, h, checkpoint::OpenMode::Create, oo);
      if (!s) return s.error();
      if (auto r = s->set_writer_open(true); !r) return r.error();
      impl->store.emplace(std::move(s).value());
    }
  }
  if (auto r = live::setup(*impl, device, options); !r) return r.error();
  if (auto r = impl->reserve_engine_area(); !r)
    return make_error("cannot reserve the engine's device memory at " + std::string("0xf0000000") + ": " +
                      r.error().message);
  (void)device.take_dirty_pages();  // from here on, every page written is the workload's
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

Driver& Session::host() { return impl_->host_driver; }
const DeviceConfig& Session::config() const { return impl_->dev.config(); }

Result<int> Session::add_breakpoint(uint32_t addr) {
  if (addr & 3) return make_error("a breakpoint address must be 4-byte aligned (" + hex(addr) + ")");
  if (auto r = impl_->plant(addr); !r) {
    // Before the first launch of a replay or a host program, the kernel's memory may not be
    // there yet: the breakpoint is planted when the first launch starts (start_next_piece).
    const bool before_first = impl_->launch == 0 && (impl_->opts.replay || impl_->host_source);
    if (!before_first) return r.error();
  }
  int id = impl_->next_bp++;
  impl_->bps[id] = Breakpoint{id, addr, true, 0};
  return id;
}

Result<void> Session::remove_breakpoint(int id) {
  auto it = impl_->bps.find(id);
  if (it == impl_->bps.end()) return make_error("no breakpoint number " + std::to_string(id));
  uint32_t addr = it->second.addr;
  impl_->bps.erase(it);
  if (!impl_->wanted(addr)) impl_->unplant(addr);
  return {};
}

Result<void> Session::enable_breakpoint(int id, bool enabled) {
  auto it = impl_->bps.find(id);
  if (it == impl_->bps.end()) return make_error("no breakpoint number " + std::to_string(id));
  it->second.enabled = enabled;
  if (enabled) return impl_->plant(it->second.addr);
  if (!impl_->wanted(it->second.addr)) impl_->unplant(it->second.addr);
  return {};
}

std::vector<Breakpoint> Session::breakpoints() const {
  std::vector<Breakpoint> out;
  for (const auto& [id, b] : impl_->bps) out.push_back(b);
  return out;
}

Result<int> Session::add_watchpoint(const WatchSpec& spec) {
  if (spec.len == 0 || spec.len > 4096) return make_error("a watchpoint covers 1 to 4096 bytes");
  if (!(spec.kind & (kWatchRead | kWatchWrite))) return make_error("a watchpoint watches reads, writes or both");
  int id = impl_->next_watch++;
  impl_->watches[id] = {spec, true};
  if (auto r = impl_->sync_watchpoints(true); !r) {
    impl_->watches.erase(id);
    return r.error();
  }
  return id;
}

Result<void> Session::remove_watchpoint(int id) {
  if (!impl_->watches.erase(id)) return make_error("no watchpoint number " + std::to_string(id));
  return impl_->sync_watchpoints(true);
}

Result<void> Session::enable_watchpoint(int id, bool enabled) {
  auto it = impl_->watches.find(id);
  if (it == impl_->watches.end()) return make_error("no watchpoint number " + std::to_string(id));
  it->second.second = enabled;
  return impl_->sync_watchpoints(true);
}

Result<StopEvent> Session::resume() { return impl_->run(Impl::Mode{}); }

Result<StopEvent> Session::step(WarpId warp, uint32_t lanes, const StepPolicy& policy) {
  if (!stopped()) return make_error("no warp to step: the kernel is not stopped");
  const DeviceConfig& cfg = impl_->dev.config();
  if (warp.core >= cfg.total_cores() || warp.slot >= cfg.warps)
    return make_error("core " + std::to_string(warp.core) + " warp " + std::to_string(warp.slot) + " does not exist");
  Impl::Mode m;
  m.kind = Impl::Mode::Step;
  m.warp = warp;
  m.lanes = lanes;
  m.policy = policy;
  return impl_->run(m);
}

Result<StopEvent> Session::run_to(uint64_t count) {
  if (stopped() && count <= impl_->ctx.kernel_instructions)
    return make_error("the launch is already at instruction " + std::to_string(impl_->ctx.kernel_instructions) +
                      "; run_to goes forward (go back with seek)");
  Impl::Mode m;
  m.kind = Impl::Mode::RunTo;
  m.target = count;
  return impl_->run(m);
}

void Session::interrupt() { impl_->interrupted = true; }
void Session::set_progress(std::function<void(uint32_t, uint64_t)> hook) { impl_->progress = std::move(hook); }
void Session::set_host_tick(std::function<void()> hook) { impl_->host_tick = std::move(hook); }
uint64_t Session::device_ns() const { return impl_->device_ns(); }
void Session::set_breakpoint_filter(std::function<bool(const StopEvent&)> filter) {
  impl_->breakpoint_filter = std::move(filter);
}
bool Session::evaluating_hit() const { return impl_->phase == Impl::Phase::Running; }
void Session::set_stop_lane(WarpId warp, uint32_t lane) { impl_->stop_lane = std::make_pair(warp, lane); }
const std::string& Session::store_error() const {
  const Impl& I = *impl_;
  if (I.store && I.store->staged_lost() > I.store_error_lost) return I.store->staged_error();
  return I.store_error;
}
bool Session::stopped() const { return impl_->phase == Impl::Phase::Stopped; }
const StopEvent& Session::last_stop() const { return impl_->last; }
const DeviceContext& Session::context() const { return impl_->ctx; }
ThreadLists Session::lists() const { return impl_->lists(); }

SessionInfo Session::info() const {
  SessionInfo i = impl_->lv.info;
  if (impl_->lv.dev) i.dm_accesses = impl_->lv.dev->accesses();
  return i;
}

Result<std::vector<uint8_t>> Session::read_local_memory(uint32_t core, uint32_t addr, uint32_t size) {
  const DeviceContext& c = impl_->ctx;
  if (core >= c.cores.size()) return make_error("no core " + std::to_string(core));
  const uint64_t off = uint64_t(addr) - memmap::kLocalMemBase;
  if (addr < memmap::kLocalMemBase || off + size > c.cores[core].local_mem.size())
    return make_error("outside core " + std::to_string(core) + "'s local memory");
  if (impl_->lv.on && impl_->lv.info.held && stopped()) {
    auto r = live::read_memory(*impl_, addr, size, core);
    if (r || r.error().message.rfind("no halted warp", 0) != 0) return r;
    // No warp of that core to load through: what the stop saved (docs/live.md).
  }
  const auto& lm = c.cores[core].local_mem;
  return std::vector<uint8_t>(lm.begin() + off, lm.begin() + off + size);
}

// The same words for an unmapped read whichever way it went (the device's copy, or a load injected
// through the Debug Module): what is wrong, not how the engine looked.
static Error unmapped(uint32_t addr, uint32_t size) {
  char text[64];
  std::snprintf(text, sizeof text, "0x%x..0x%llx", addr, static_cast<unsigned long long>(uint64_t(addr) + size));
  return Error{std::string(text) + " is not mapped device memory"};
}

Result<std::vector<uint8_t>> Session::read_memory(uint32_t addr, uint32_t size) {
  if (impl_->lv.on && impl_->lv.info.held && stopped()) {
    // A load through a halted warp would see its core's local memory there; device memory has
    // nothing from kLocalMemBase up, as a re-launch stop reads it (read_local_memory names a core).
    if (uint64_t(addr) + size > memmap::kLocalMemBase) return unmapped(addr, size);
    auto r = live::read_memory(*impl_, addr, size);
    if (!r && r.error().message.find("unmapped") != std::string::npos) return unmapped(addr, size);
    return r;
  }
  std::vector<uint8_t> bytes(size);
  if (auto r = impl_->dev.copy_from_device(addr, bytes); !r) {
    if (r.error().message.find("not mapped") != std::string::npos) return unmapped(addr, size);
    return r.error();
  }
  impl_->unplant_view(addr, bytes);
  return bytes;
}

Result<void> Session::write_register(WarpId warp, uint32_t lane, unsigned dwarf_reg, uint32_t value) {
  if (!stopped()) return make_error("the kernel is not stopped");
  if (impl_->lv.on) return make_error("writing state is not supported in live mode yet");
  const uint32_t nt = impl_->dev.config().threads;
  if (warp.core >= impl_->ctx.cores.size() || warp.slot >= impl_->ctx.cores[warp.core].warps.size() || lane >= nt)
    return make_error("no such lane");
  WarpState& w = impl_->ctx.cores[warp.core].warps[warp.slot];
  if (!w.active) return make_error("the warp is not active");
  if (dwarf_reg == 0) return make_error("x0 is always zero");
  if (dwarf_reg < 32) w.x[size_t(dwarf_reg) * nt + lane] = value;
  else if (dwarf_reg < 64) w.f[size_t(dwarf_reg - 32) * nt + lane] = value;
  else return make_error("no register " + std::to_string(dwarf_reg));
  return {};
}

Result<void> Session::write_memory(WarpId warp, uint32_t addr, const std::vector<uint8_t>& bytes) {
  if (!stopped()) return make_error("the kernel is not stopped");
  if (impl_->lv.on) return make_error("writing state is not supported in live mode yet");
  const uint64_t end = uint64_t(addr) + bytes.size();
  if (addr >= memmap::kLocalMemBase) {
    if (warp.core >= impl_->ctx.cores.size()) return make_error("no such core");
    auto& lm = impl_->ctx.cores[warp.core].local_mem;
    if (end - memmap::kLocalMemBase > lm.size()) return make_error("past the end of local memory");
    std::copy(bytes.begin(), bytes.end(), lm.begin() + (addr - memmap::kLocalMemBase));
    return {};
  }
  if (end > memmap::kLocalMemBase) return make_error("the write crosses into local memory");
  for (auto it = impl_->planted.lower_bound(addr & ~3u); it != impl_->planted.end() && it->first < end; ++it)
    return make_error("the write overlaps a breakpoint's instruction");
  return impl_->dev.copy_to_device(addr, bytes);
}

std::vector<ConsoleChunk> Session::take_console() { return impl_->take_console(); }
const std::string& Session::console_so_far() const { return impl_->console_log; }
SessionStats Session::stats() const {
  SessionStats s = impl_->st;
  // Automatic checkpoints are staged by the store and committed with the next durable write: those
  // whose commit failed were not written, like a checkpoint whose put failed.
  if (impl_->store) s.store_failures += impl_->store->staged_lost();
  return s;
}
std::vector<DivergentBranch> Session::divergent_branches() const { return impl_->dev.divergent_branches(); }
checkpoint::Store* Session::store() { return impl_->store ? &*impl_->store : nullptr; }

Result<StopEvent> Session::goto_checkpoint(const checkpoint::TimeKey& key) {
  if (auto r = impl_->need_store(); !r) return r.error();
  auto has = impl_->store->has(key);
  if (!has) return has.error();
  if (!*has) return make_error("there is no checkpoint at " + key.to_string());
  return impl_->seek(TimePoint{key.launch, key.instret}, StopReason::InstructionCount, std::nullopt, {});
}

TimePoint Session::now() const {
  const Impl& I = *impl_;
  if (I.phase == Impl::Phase::Stopped) return TimePoint{I.launch, I.ctx.kernel_instructions};
  return TimePoint{I.launch, I.finished_instructions};
}

Result<StopEvent> Session::seek(TimePoint t, StopReason as, std::optional<WarpId> focus, std::vector<WatchEvent> watches) {
  return impl_->seek(t, as, focus, std::move(watches));
}

Result<ScanResult> Session::scan(const ScanRequest& request) { return impl_->scan(request); }

Result<std::optional<StopEvent>> Session::run_until_warp(WarpId warp, uint32_t cta, uint64_t n, uint64_t limit) {
  return impl_->run_until_warp(warp, cta, n, limit);
}

Result<std::vector<checkpoint::TimeKey>> Session::checkpoint_keys() {
  if (auto r = impl_->need_store(); !r) return r.error();
  return impl_->store->list();
}

Result<std::vector<Mark>> Session::marks() {
  if (auto r = impl_->need_store(); !r) return r.error();
  auto m = impl_->store->marks();
  if (!m) return m.error();
  std::vector<Mark> out;
  for (const auto& [key, rec] : *m) {
    Mark mk;
    mk.when = TimePoint{key.launch, key.instret};
    mk.reason = reason_of(rec);
    mk.text = rec.text;
    mk.warp = WarpId{rec.exception.core, rec.exception.warp};
    mk.lane = rec.exception.lane;
    mk.number = rec.number;
    out.push_back(std::move(mk));
  }
  // A recording from before marks kept their numbers: number them in time order.
  if (std::any_of(out.begin(), out.end(), [](const Mark& m) { return m.number == 0; }))
    for (size_t i = 0; i < out.size(); ++i) out[i].number = uint32_t(i + 1);
  return out;
}

Result<void> Session::mark(const std::string& text) {
  if (auto r = impl_->need_store(); !r) return r;
  if (!stopped()) return make_error("mark a stop: the kernel is not stopped");
  if (impl_->opts.read_only) return make_error("the recording is open read-only");
  Impl& I = *impl_;
  const checkpoint::TimeKey key{I.launch, I.ctx.kernel_instructions};
  auto has = I.store->has(key);
  if (!has) return has.error();
  checkpoint::StopRecord rec;
  rec.kind = stop_kind(I.last.reason);
  rec.text = text;
  if (!*has) {
    // A stop whose checkpoint is not stored (a reverse move's): store it, marked.
    StopEvent ev = I.last;
    if (auto r = I.save_checkpoint(ev, true); !r) return r.error();
  }
  return I.store->set_mark(key, rec);
}

std::optional<TimePoint> Session::frontier(uint32_t launch) const {
  std::optional<TimePoint> out;
  auto it = impl_->reached.find(launch);
  if (it != impl_->reached.end()) out = TimePoint{launch, it->second};
  // A recording reopened: the furthest point its checkpoints reach.
  if (impl_->store && launch) {
    auto last = impl_->store->at_or_before(checkpoint::TimeKey{launch, UINT64_MAX});
    if (last && *last && (*last)->launch == launch && (!out || out->instret < (*last)->instret))
      out = TimePoint{launch, (*last)->instret};
  }
  return out;
}

uint32_t Session::launches_started() const { return uint32_t(impl_->launch_entry.size()); }

Result<void> Session::flush() {
  Impl& I = *impl_;
  if (auto r = I.flush(); !r) {
    // Kept (unrecorded) for the next try; the end of the session reports them if that fails too.
    I.store_error = r.error().message;
    I.store_error_lost = I.store ? I.store->staged_lost() : 0;
    I.st.unrecorded_ops = I.unrecorded.size();
    return r;
  }
  I.st.unrecorded_ops = 0;
  // A failed commit of the staged checkpoints is counted by the store (stats(), store_error()).
  if (I.store && !I.opts.read_only) return I.store->sync();
  return {};
}

Result<void> Session::host_finished(uint32_t host_status) {
  Impl& I = *impl_;
  I.host_done = true;
  if (!I.store || I.opts.replay || I.opts.read_only) return {};
  checkpoint::HostOpRecord op;
  op.kind = checkpoint::HostOpKind::HostEnd;
  op.addr = host_status;
  I.unrecorded.push_back(op);
  return I.flush();
}

Result<void> Session::record_symbols(const std::string& name, std::span<const uint8_t> elf) {
  Impl& I = *impl_;
  if (!I.store || I.opts.replay || I.opts.read_only || elf.empty()) return {};
  if (elf.size() > checkpoint::kMaxPageBytes)
    return make_error("the kernel image is larger than a recording keeps (" + std::to_string(elf.size()) + " bytes)");
  I.add_blob_op(checkpoint::HostOpKind::Symbols, 0, elf, name);
  return I.flush();
}

Result<void> Session::load_recording() { return impl_->load_recording(); }

void Session::set_host_source(std::function<Result<bool>()> source) { impl_->host_source = std::move(source); }

std::vector<LaunchGridArgs> Session::launch_args() const { return impl_->launch_grid; }

std::vector<size_t> Session::launch_images_recorded() const { return impl_->launch_symbols; }

}  // namespace vx::engine
