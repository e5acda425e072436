#include "engine/session.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <deque>
#include <map>
#include <set>

#include "checkpoint/store.hpp"
#include "device/cmdbuf_builder.hpp"
#include "device/cmdproc.hpp"
#include "engine/context_record.hpp"
#include "engine/entry_routine.hpp"

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
  }
  return "unknown";
}

namespace {

constexpr uint32_t kEbreak = 0x00100073;
constexpr uint32_t kPageSize = 4096;

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
    case StopReason::Step: return checkpoint::StopKind::Step;
    case StopReason::Exception:
    case StopReason::Assertion: return checkpoint::StopKind::DeviceException;
    case StopReason::Watchdog: return checkpoint::StopKind::Watchdog;
    case StopReason::Interrupt:
    case StopReason::InstructionCount: return checkpoint::StopKind::Interrupt;
    case StopReason::Exited:
    case StopReason::Killed: return checkpoint::StopKind::LaunchEnd;
  }
  return checkpoint::StopKind::Unknown;
}

}  // namespace

struct Session::Impl {
  enum class Phase { Idle, Running, Stopped, Exited, Dead };

  // What the host runtime sees as the device.
  class HostDriver final : public Driver {
   public:
    explicit HostDriver(Impl& s) : s_(s) {}
    const DeviceConfig& config() const override { return s_.dev.config(); }
    Result<uint32_t> mem_alloc(uint64_t size) override {
      auto r = s_.dev.mem_alloc(size);
      if (r) s_.regions[*r] = (size + kPageSize - 1) & ~uint64_t(kPageSize - 1);
      return r;
    }
    Result<void> mem_reserve(uint32_t addr, uint64_t size) override {
      auto r = s_.dev.mem_reserve(addr, size);
      if (r) s_.regions[addr] = size;
      return r;
    }
    Result<void> mem_free(uint32_t addr) override {
      auto r = s_.dev.mem_free(addr);
      if (r) s_.regions.erase(addr);
      return r;
    }
    Result<void> copy_to_device(uint32_t addr, std::span<const uint8_t> bytes) override {
      auto r = s_.dev.copy_to_device(addr, bytes);
      if (r) s_.replant(addr, bytes.size());
      return r;
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
      s_.pending.clear();
      s_.phase = Phase::Idle;
    }
    std::vector<ConsoleChunk> read_console() override { return s_.take_console(); }
    uint32_t exit_code() override { return s_.dev.exit_code(); }
    MachineStats stats() const override { return s_.dev.stats(); }
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

   private:
    Impl& s_;
  };

  struct Mode {
    enum Kind { Continue, Step, RunTo } kind = Continue;
    WarpId warp;
    uint32_t lanes = 0;
    StepPolicy policy;
    uint64_t target = 0;
  };

  Impl(Driver& d, const SessionOptions& o) : dev(d), opts(o), host_driver(*this) {}

  Driver& dev;
  SessionOptions opts;
  HostDriver host_driver;
  std::optional<checkpoint::Store> store;
  std::atomic<bool> interrupted{false};
  std::function<void(uint32_t, uint64_t)> progress;

  // The workload.
  std::map<uint32_t, uint64_t> regions;  // memory the host allocated or reserved
  std::deque<Segment> pending;
  std::map<uint32_t, uint64_t> cmp_registers;  // WRITE_REG64 values so far: re-issued before a re-launch
  uint64_t host_submissions = 0;

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

  // Breakpoints.
  std::map<int, Breakpoint> bps;
  int next_bp = 1;
  std::map<uint32_t, uint32_t> planted;  // address -> original word

  // The thread-entry routine's memory.
  uint32_t routine_addr = 0, records_addr = 0, lmem_addr = 0;

  // Checkpoints.
  std::map<uint32_t, checkpoint::PageHash> pages;  // the workload's memory image as last checkpointed
  std::string console_log;                          // this launch's console output
  std::vector<ConsoleChunk> console_out;
  uint32_t seq = 0;
  checkpoint::TimeKey last_key;

  SessionStats st;

  // --- Host side ------------------------------------------------------------------------
  Result<uint64_t> accept(std::span<const uint8_t> bytes) {
    auto list = decode_command_buffer(bytes);
    if (!list) return list.error();
    Segment seg;
    for (const Command& c : list->commands) {
      if (c.op == CmdOp::Finish) break;
      if (c.op == CmdOp::RunInstances || c.op == CmdOp::RunKernelSlice)
        return make_error("vxreplay debugs grid launches (LAUNCH_GRID); " + cmd_op_name(c.op) +
                          " at byte offset " + std::to_string(c.offset) + " is not supported under the debugger yet");
      seg.commands.push_back(c);
      if (c.op == CmdOp::LaunchGrid) {
        seg.launches = true;
        pending.push_back(std::move(seg));
        seg = Segment{};
      }
    }
    if (!seg.commands.empty()) pending.push_back(std::move(seg));
    return ++host_submissions;
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
    if (planted.count(addr)) return {};
    uint32_t word = 0;
    if (auto r = dev.copy_from_device(addr, {reinterpret_cast<uint8_t*>(&word), 4}); !r)
      return make_error("cannot plant a breakpoint at " + hex(addr) + ": not mapped device memory");
    uint32_t e = kEbreak;
    if (auto r = dev.copy_to_device(addr, {reinterpret_cast<const uint8_t*>(&e), 4}); !r) return r.error();
    planted[addr] = word;
    return {};
  }

  void unplant(uint32_t addr) {
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

  // --- Passes ---------------------------------------------------------------------------------
  std::vector<ConsoleChunk> take_console() {
    std::vector<ConsoleChunk> out;
    out.swap(console_out);
    return out;
  }

  void drain_console() {
    for (ConsoleChunk& c : dev.read_console()) {
      console_log += c.bytes;
      console_out.push_back(std::move(c));
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
    ++pass;
    ++st.passes;
  }

  uint64_t launch_progress() const { return progress_at_pass_start + (dev.stats().instructions - dev_at_pass_start); }

  Result<void> ensure_routine() {
    if (routine_addr) return {};
    const DeviceConfig& cfg = dev.config();
    if (cfg.local_mem_bytes % (4 * cfg.threads) != 0)
      return make_error("re-launch needs local memory in whole rounds of 4 x NT bytes");
    std::vector<uint32_t> code = entry_routine_code();
    auto code_at = dev.mem_alloc(code.size() * 4);
    if (!code_at) return code_at.error();
    auto rec_at = dev.mem_alloc(uint64_t(cfg.total_cores()) * cfg.warps * routine::record_bytes(cfg.threads));
    if (!rec_at) return rec_at.error();
    auto lmem_at = dev.mem_alloc(std::max<uint64_t>(1, uint64_t(cfg.total_cores()) * cfg.local_mem_bytes));
    if (!lmem_at) return lmem_at.error();
    if (auto r = dev.copy_to_device(*code_at, {reinterpret_cast<const uint8_t*>(code.data()), code.size() * 4}); !r)
      return r.error();
    routine_addr = *code_at;
    records_addr = *rec_at;
    lmem_addr = *lmem_at;
    return {};
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
  Result<void> relaunch(bool dispatch_new) {
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
        if (bp != planted.end()) req.overrides.push_back(FetchOverride{c, w, ws.pc, bp->second});
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
  Result<StopEvent> stop(StopReason reason, const DeviceException& exc) {
    account_pass();
    auto saved = dev.save_context();
    if (!saved) return saved.error();
    ctx = std::move(saved).value();
    drain_console();
    io_snapshot.assign(memmap::kIoEnd - memmap::kIoBase, 0);
    (void)dev.copy_from_device(memmap::kIoBase, io_snapshot);
    StopEvent ev;
    ev.reason = reason;
    ev.launch = launch;
    ev.pass = pass;
    ev.instructions = ctx.kernel_instructions;
    ev.exception = exc;
    const uint32_t nc = uint32_t(ctx.cores.size());
    auto add_hit = [&](uint32_t c, uint32_t w) {
      for (const WarpHit& h : ev.hits)
        if (h.warp == WarpId{c, w}) return;
      const WarpState& ws = ctx.cores[c].warps[w];
      ev.hits.push_back(WarpHit{{c, w}, ws.pc, ws.tmask});
    };
    if (reason == StopReason::Breakpoint) {
      add_hit(exc.core, exc.warp);
      for (uint32_t c = 0; c < nc; ++c)
        for (uint32_t w = 0; w < ctx.cores[c].warps.size(); ++w) {
          const WarpState& ws = ctx.cores[c].warps[w];
          if (ws.active && planted.count(ws.pc)) add_hit(c, w);
        }
      std::set<uint32_t> pcs;
      for (const WarpHit& h : ev.hits) pcs.insert(h.pc);
      for (auto& [id, b] : bps)
        if (b.enabled && pcs.count(b.addr)) {
          ev.breakpoints.push_back(id);
          ++b.hits;
        }
    } else if (reason != StopReason::Interrupt && reason != StopReason::InstructionCount) {
      if (exc.core < nc && exc.warp < ctx.cores[exc.core].warps.size()) add_hit(exc.core, exc.warp);
    }
    // Kill the workload: the device is free until the user goes on.
    dev.abort();
    phase = Phase::Stopped;
    ++st.stops;
    last = ev;
    if (auto r = save_checkpoint(ev); !r) return r.error();
    return ev;
  }

  Result<void> save_checkpoint(const StopEvent& ev) {
    if (!store) return {};
    // The workload's pages written since the last checkpoint (the engine's own are not in its regions).
    std::vector<checkpoint::PageData> new_pages;
    for (uint32_t page : dev.take_dirty_pages()) {
      if (!in_regions(page)) continue;
      std::vector<uint8_t> bytes(kPageSize);
      if (!dev.copy_from_device(page * kPageSize, bytes)) continue;  // freed since
      unplant_view(page * kPageSize, bytes);
      checkpoint::PageData pd = checkpoint::make_page(std::move(bytes));
      pages[page] = pd.hash;
      new_pages.push_back(std::move(pd));
    }
    checkpoint::CheckpointRecord rec;
    context_to_record(ctx, &rec, &new_pages);
    checkpoint::TimeKey key{launch, pass, ctx.kernel_instructions, 0};
    if (last_key.launch == key.launch && last_key.pass == key.pass && last_key.instret == key.instret)
      key.seq = last_key.seq + 1;
    rec.key = key;
    rec.stop.kind = stop_kind(ev.reason);
    rec.stop.text = stop_reason_name(ev.reason);
    rec.stop.exception = checkpoint::ExceptionRecord{uint8_t(ev.exception.cause), ev.exception.pc, ev.exception.core,
                                                     ev.exception.warp, ev.exception.lane, ev.exception.addr};
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
    if (auto r = store->put(key, rec, new_pages); !r)
      return make_error("could not save the checkpoint " + key.to_string() + ": " + r.error().message);
    last_key = key;
    ++st.checkpoints;
    checkpoint::StoreStats ss = store->stats();
    st.bytes_stored = ss.stored_page_bytes + ss.record_bytes;
    return {};
  }

  ThreadLists lists() const {
    ThreadLists l;
    if (phase != Phase::Stopped) return l;
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

  Result<StopEvent> on_exception(const DeviceEvent& e) {
    const DeviceException& x = e.exception;
    if (x.cause == Cause::RestoreFailed) {
      dev.abort();
      phase = Phase::Dead;
      return killed("internal error: " + e.message);
    }
    if (x.cause == Cause::Breakpoint && planted.count(x.pc)) return stop(StopReason::Breakpoint, x);
    if (x.cause == Cause::Breakpoint) {
      uint32_t next = 0;
      bool assertion = dev.copy_from_device(x.pc + 4, {reinterpret_cast<uint8_t*>(&next), 4}).ok() &&
                       next == kAssertMarker;
      // The kernel's own EBREAK: continuing goes past it (assertions then go on after vx_assert).
      return stop(assertion ? StopReason::Assertion : StopReason::Exception, x);
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

  // Runs until the next stop.
  Result<StopEvent> run(const Mode& mode) {
    interrupted = false;
    if (phase == Phase::Exited) return make_error("the workload has exited; there is nothing to run");
    if (phase == Phase::Dead) return make_error("the workload was killed: " + last.message);
    bool step_armed = false;
    if (phase == Phase::Stopped) {
      if (fatal) {
        phase = Phase::Dead;
        return killed("the kernel stopped on " + std::string(cause_name(last.exception.cause)) +
                      " and cannot go on");
      }
      if (last.reason == StopReason::Assertion || last.reason == StopReason::Exception) {
        // Go past the kernel's own EBREAK (the only exception that is not fatal).
        WarpState& ws = ctx.cores[last.exception.core].warps[last.exception.warp];
        ws.pc += 4;
      }
      if (mode.kind == Mode::Step) {
        const WarpState& ws = ctx.cores[mode.warp.core].warps[mode.warp.slot];
        if (!ws.active) return make_error("the focus warp has no work to step");
      }
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
    } else if (mode.kind == Mode::Step) {
      return make_error("no warp to step: the kernel is not stopped");
    }
    for (;;) {
      if (phase == Phase::Idle) {
        if (pending.empty()) {
          phase = Phase::Exited;
          StopEvent ev;
          ev.reason = StopReason::Exited;
          ev.launch = launch;
          ev.pass = pass;
          ev.exit_code = dev.exit_code();
          ev.instructions = finished_instructions;
          drain_console();
          last = ev;
          return ev;
        }
        Segment seg = std::move(pending.front());
        pending.pop_front();
        for (const Command& c : seg.commands)
          if (c.op == CmdOp::WriteReg64) cmp_registers[c.inline_value] = c.payload.at(0);
        auto id = dev.submit(encode(seg.commands));
        if (!id) {
          phase = Phase::Dead;
          return killed("the device rejected a command buffer: " + id.error().message);
        }
        if (seg.launches) {
          ++launch;
          pass = 0;
          console_log.clear();
          fatal = false;
          begin_pass(0);
        }
        phase = Phase::Running;
      }
      uint64_t budget = opts.slice;
      if (mode.kind == Mode::RunTo) {
        uint64_t now = launch_progress();
        if (now >= mode.target) return stop(StopReason::InstructionCount, {});
        budget = std::min(budget, mode.target - now);
      }
      DeviceEvent e = dev.wait(budget);
      drain_console();
      switch (e.kind) {
        case EventKind::Budget:
          if (progress) progress(pass, launch_progress());
          if (interrupted) return stop(StopReason::Interrupt, {});
          continue;
        case EventKind::Trigger: {
          if (!step_armed) continue;
          auto now = dev.save_context();
          if (!now) return now.error();
          const WarpState& ws = now->cores[mode.warp.core].warps[mode.warp.slot];
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
        case EventKind::Exception: return on_exception(e);
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
          st.launch_instructions += finished_instructions;
          dev_at_pass_start = dev.stats().instructions;
          progress_at_pass_start = 0;
          dev.clear_warp_trigger();
          phase = Phase::Idle;
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

  Result<StopEvent> goto_checkpoint(const checkpoint::TimeKey& key) {
    if (!store) return make_error("no checkpoint store (the session runs without --db)");
    if (phase != Phase::Stopped) return make_error("go to a checkpoint from a stop of the same launch");
    if (key.launch != launch)
      return make_error("checkpoint " + key.to_string() + " belongs to launch " + std::to_string(key.launch) +
                        ", the session is in launch " + std::to_string(launch));
    auto rec = store->get(key);
    if (!rec) return rec.error();
    auto c = record_to_context(*rec, dev.config(),
                               [&](const checkpoint::PageHash& h) { return store->read_page(h); });
    if (!c) return c.error();
    // Memory: the checkpoint's pages; pages the workload wrote since then that it did not have are zero.
    std::map<uint32_t, checkpoint::PageHash> target;
    for (const auto& r : rec->memory) target[r.number] = r.hash;
    for (const auto& [page, hash] : target) {
      auto it = pages.find(page);
      if (it != pages.end() && it->second == hash) continue;
      auto bytes = store->read_page(hash);
      if (!bytes) return bytes.error();
      if (auto r = dev.copy_to_device(page * kPageSize, *bytes); !r) return r.error();
      replant(page * kPageSize, kPageSize);
    }
    std::vector<uint8_t> zero(kPageSize, 0);
    for (const auto& [page, hash] : pages)
      if (!target.count(page)) {
        (void)dev.copy_to_device(page * kPageSize, zero);
        replant(page * kPageSize, kPageSize);
      }
    (void)dev.take_dirty_pages();
    pages = std::move(target);
    ctx = std::move(c).value();
    io_snapshot.assign(memmap::kIoEnd - memmap::kIoBase, 0);
    (void)dev.copy_from_device(memmap::kIoBase, io_snapshot);
    console_log.assign(rec->console.begin(), rec->console.end());
    fatal = rec->stop.kind == checkpoint::StopKind::Watchdog ||
            (rec->stop.kind == checkpoint::StopKind::DeviceException &&
             rec->stop.exception.cause != uint8_t(Cause::Breakpoint));
    last_key = key;
    StopEvent ev;
    ev.reason = StopReason::InstructionCount;
    ev.launch = launch;
    ev.pass = pass;
    ev.instructions = ctx.kernel_instructions;
    last = ev;
    return ev;
  }
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

Result<std::unique_ptr<Session>> Session::create(Driver& device, const SessionOptions& options) {
  auto impl = std::make_unique<Impl>(device, options);
  if (!options.store_dir.empty()) {
    checkpoint::StoreHeader h;
    h.config = to_config_record(device.config());
    h.kernel_hash = options.kernel_hash;
    h.workload = options.workload;
    checkpoint::OpenOptions oo;
    oo.sync = options.store_sync;
    auto s = checkpoint::Store::open(options.store_dir, h, checkpoint::OpenMode::Create, oo);
    if (!s) return s.error();
    impl->store.emplace(std::move(s).value());
  }
  (void)device.take_dirty_pages();  // from here on, every page written is the workload's
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

Driver& Session::host() { return impl_->host_driver; }
const DeviceConfig& Session::config() const { return impl_->dev.config(); }

Result<int> Session::add_breakpoint(uint32_t addr) {
  if (addr & 3) return make_error("a breakpoint address must be 4-byte aligned (" + hex(addr) + ")");
  if (auto r = impl_->plant(addr); !r) return r.error();
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
                      "; run_to goes forward (go back with a checkpoint)");
  Impl::Mode m;
  m.kind = Impl::Mode::RunTo;
  m.target = count;
  return impl_->run(m);
}

void Session::interrupt() { impl_->interrupted = true; }
void Session::set_progress(std::function<void(uint32_t, uint64_t)> hook) { impl_->progress = std::move(hook); }
bool Session::stopped() const { return impl_->phase == Impl::Phase::Stopped; }
const StopEvent& Session::last_stop() const { return impl_->last; }
const DeviceContext& Session::context() const { return impl_->ctx; }
ThreadLists Session::lists() const { return impl_->lists(); }

Result<std::vector<uint8_t>> Session::read_memory(uint32_t addr, uint32_t size) {
  std::vector<uint8_t> bytes(size);
  if (auto r = impl_->dev.copy_from_device(addr, bytes); !r) return r.error();
  impl_->unplant_view(addr, bytes);
  return bytes;
}

std::vector<ConsoleChunk> Session::take_console() { return impl_->take_console(); }
SessionStats Session::stats() const { return impl_->st; }
checkpoint::Store* Session::store() { return impl_->store ? &*impl_->store : nullptr; }

Result<StopEvent> Session::goto_checkpoint(const checkpoint::TimeKey& key) { return impl_->goto_checkpoint(key); }

}  // namespace vx::engine
