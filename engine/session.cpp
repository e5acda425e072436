#include "engine/session_live.hpp"

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

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() {
  if (!impl_ || impl_->ended) return;
  (void)impl_->flush();
  if (impl_->store && !impl_->opts.read_only) (void)impl_->store->sync();
  if (impl_->store && !impl_->opts.replay && !impl_->opts.read_only) (void)impl_->store->set_writer_open(false);
}

void Session::Impl::set_runner(std::unique_ptr<Runner> r) {
  runner = std::move(r);
  traps.set_plants_in_memory(runner->plants_in_memory());
}

Result<std::unique_ptr<Session>> Session::create(Driver& device, const SessionOptions& options) {
  auto impl = std::make_unique<Impl>(device, options);
  if (!options.store_dir.empty()) {
    checkpoint::OpenOptions oo;
    oo.sync = options.store_sync;
    oo.sync_interval_ms = options.store_sync_interval_ms;
    if (options.store_map_size) oo.map_size = options.store_map_size;
    if (options.replay) {
      auto s = checkpoint::Store::open_existing(
          options.store_dir, options.read_only ? checkpoint::OpenMode::ReadOnly : checkpoint::OpenMode::ReadWrite, oo);
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
  impl->recorder.attach(impl->store ? &*impl->store : nullptr, options.replay, options.read_only);
  impl->recorder.set_sample_interval(options.timeline_interval);
  impl->set_runner(make_relaunch_runner(*impl));  // live::setup hands over to the live runner when it is live
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
  // Before the first launch of a replay or a host program, the kernel's memory may not be there
  // yet: the breakpoint is planted when the first launch starts (start_next_piece).
  const bool before_first = impl_->launch == 0 && (impl_->opts.replay || impl_->host_source);
  return impl_->traps.add_breakpoint(addr, before_first);
}

Result<void> Session::remove_breakpoint(int id) { return impl_->traps.remove_breakpoint(id); }
Result<void> Session::enable_breakpoint(int id, bool enabled) { return impl_->traps.enable_breakpoint(id, enabled); }
std::vector<Breakpoint> Session::breakpoints() const { return impl_->traps.breakpoints(); }
Result<int> Session::add_watchpoint(const WatchSpec& spec) { return impl_->traps.add_watchpoint(spec); }
Result<void> Session::remove_watchpoint(int id) { return impl_->traps.remove_watchpoint(id); }
Result<void> Session::enable_watchpoint(int id, bool enabled) { return impl_->traps.enable_watchpoint(id, enabled); }

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
const std::string& Session::store_error() const { return impl_->recorder.error(); }
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
  if (auto held = stopped() ? impl_->runner->read_held(addr, size, core) : std::nullopt) {
    if (*held || held->error().code != ErrorCode::NoHaltedWarp) return *held;
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
  return Error{std::string(text) + " is not mapped device memory", ErrorCode::Unmapped};
}

Result<std::vector<uint8_t>> Session::read_memory(uint32_t addr, uint32_t size) {
  if (auto held = stopped() ? impl_->runner->read_held(addr, size, std::nullopt) : std::nullopt) {
    if (!*held && held->error().code == ErrorCode::Unmapped) return unmapped(addr, size);
    return *held;
  }
  std::vector<uint8_t> bytes(size);
  if (auto r = impl_->dev.copy_from_device(addr, bytes); !r) {
    if (r.error().code == ErrorCode::Unmapped) return unmapped(addr, size);
    return r.error();
  }
  impl_->traps.unplant_view(addr, bytes);
  return bytes;
}

Result<void> Session::write_register(WarpId warp, uint32_t lane, unsigned dwarf_reg, uint32_t value) {
  if (!stopped()) return make_error("the kernel is not stopped");
  if (auto r = impl_->runner->can_write_state(); !r) return r.error();
  const uint32_t nt = impl_->dev.config().threads;
  if (warp.core >= impl_->ctx.cores.size() || warp.slot >= impl_->ctx.cores[warp.core].warps.size() || lane >= nt)
    return make_error("no such lane");
  WarpState& w = impl_->ctx.cores[warp.core].warps[warp.slot];
  if (!w.active) return make_error("the warp is not active");
  if (dwarf_reg == 0) return make_error("x0 is always zero");
  if (dwarf_reg < 32)
    w.x[size_t(dwarf_reg) * nt + lane] = value;
  else if (dwarf_reg < 64)
    w.f[size_t(dwarf_reg - 32) * nt + lane] = value;
  else
    return make_error("no register " + std::to_string(dwarf_reg));
  return {};
}

Result<void> Session::write_memory(WarpId warp, uint32_t addr, const std::vector<uint8_t>& bytes) {
  if (!stopped()) return make_error("the kernel is not stopped");
  if (auto r = impl_->runner->can_write_state(); !r) return r.error();
  const uint64_t end = uint64_t(addr) + bytes.size();
  if (addr >= memmap::kLocalMemBase) {
    if (warp.core >= impl_->ctx.cores.size()) return make_error("no such core");
    auto& lm = impl_->ctx.cores[warp.core].local_mem;
    if (end - memmap::kLocalMemBase > lm.size()) return make_error("past the end of local memory");
    std::copy(bytes.begin(), bytes.end(), lm.begin() + (addr - memmap::kLocalMemBase));
    return {};
  }
  if (end > memmap::kLocalMemBase) return make_error("the write crosses into local memory");
  if (impl_->traps.overlaps_planted(addr, end)) return make_error("the write overlaps a breakpoint's instruction");
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

Result<StopEvent> Session::seek(TimePoint t, StopReason as, std::optional<WarpId> focus,
                                std::vector<WatchEvent> watches) {
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

uint32_t Session::launches_started() const { return uint32_t(impl_->plan.launches()); }

std::vector<Session::HostWrite> Session::host_writes() const {
  const WorkloadPlan& plan = impl_->plan;
  std::vector<HostWrite> out;
  uint32_t next = 1;
  for (size_t i = 0; i < plan.size(); ++i) {
    while (next <= plan.launches() && plan.launch(next).entry < i) ++next;
    const PlanEntry& e = plan.entry(i);
    if (e.kind == checkpoint::HostOpKind::Copy) out.push_back(HostWrite{next, e.addr, e.size});
  }
  return out;
}

bool Session::read_only() const { return impl_->opts.read_only; }

std::vector<uint64_t> Session::history_extent() const {
  const Impl& I = *impl_;
  const TimePoint here = now();
  std::vector<uint64_t> out;
  for (uint32_t n = 1; n <= uint32_t(I.plan.launches()); ++n) {
    // An earlier launch ended (the session is in a later one); a later one (after a move back)
    // runs as far as the session has seen it go.
    uint64_t until = UINT64_MAX;
    if (n >= here.launch && !I.completed.count(n)) {
      auto f = frontier(n);
      until = std::max<uint64_t>(f ? f->instret : 0, n == here.launch ? here.instret : 0);
    }
    out.push_back(until);
  }
  return out;
}

bool Session::launch_start_recorded(uint32_t launch) {
  Impl& I = *impl_;
  if (!I.store) return false;
  auto has = I.store->has(checkpoint::TimeKey{launch, 0});
  return has && *has;
}

Result<std::vector<Session::HistoryPass>> Session::observe_history(
    DeviceObserver& observer, const std::function<void(uint32_t, const DeviceContext&)>& launch_begins,
    const std::set<uint32_t>* only, const std::function<void(uint32_t, uint64_t, uint64_t)>& skipped) {
  Impl& I = *impl_;
  if (auto r = I.need_store(); !r) return r.error();
  if (!stopped()) return make_error("the history is read from a stop, and the kernel is not stopped");
  const StopEvent saved = I.last;
  const bool was_fatal = I.fatal;  // a fault's stop stays one that cannot be continued
  const TimePoint here = now();
  struct Off {
    Driver& dev;
    ~Off() { dev.set_observer(nullptr); }
  } off{I.dev};
  std::vector<HistoryPass> out;
  Error failed;
  bool ok = true;
  const std::vector<uint64_t> extent = history_extent();
  for (uint32_t n = 1; n <= extent.size() && ok; ++n) {
    const uint64_t until = extent[n - 1];
    if (until == 0 || (only && !only->count(n))) continue;
    auto start = I.seek(TimePoint{n, 0}, StopReason::InstructionCount, std::nullopt, {});
    if (!start) {
      failed = start.error();
      ok = false;
      break;
    }
    launch_begins(n, I.ctx);
    HistoryPass pass{n};
    pass.until = until;
    ScanRequest req;
    req.until = until;
    for (;;) {
      I.dev.set_observer(&observer);
      auto r = I.scan(req);
      I.dev.set_observer(nullptr);
      if (!r) {
        failed = r.error();
        ok = false;
        break;
      }
      pass.reached = r->reached;
      pass.ended = r->launch_ended;
      if (r->launch_ended || r->reached >= until || I.fatal) break;
      // An interval a live session ran by Debug Module steps ends the scan at its start: only its
      // two ends are recorded (docs/live.md), so the pass goes on from its end.
      auto ahead = I.stepped_ahead();
      if (!ahead) {
        failed = ahead.error();
        ok = false;
        break;
      }
      if (!*ahead) break;
      pass.stepped.emplace_back(r->reached, (*ahead)->key.instret);
      if (skipped) skipped(n, r->reached, (*ahead)->key.instret);
      if ((*ahead)->key.instret >= until) {
        pass.reached = until;  // nothing before it is left to observe
        break;
      }
      if (auto re = I.restore((*ahead)->key); !re) {
        failed = re.error();
        ok = false;
        break;
      }
      pass.reached = (*ahead)->key.instret;
    }
    if (!ok) break;
    pass.complete = pass.ended || pass.reached >= until;
    out.push_back(std::move(pass));
  }
  if (auto back = I.come_back(here, saved, was_fatal); !back)
    return with_context("after reading the history: ", back.error());
  if (!ok) return failed;
  return out;
}

// Back where the user stood, with the stop as it was reported (the state is the same: the run is
// deterministic): after a move that only gathered or derived something.
Result<void> Session::Impl::come_back(TimePoint here, const StopEvent& saved, bool was_fatal) {
  std::optional<WarpId> focus;
  if (!saved.hits.empty()) focus = saved.hits.front().warp;
  auto back = seek(here,
                   saved.reason == StopReason::Exception || saved.reason == StopReason::Assertion ||
                           saved.reason == StopReason::Watchdog
                       ? StopReason::InstructionCount
                       : saved.reason,
                   focus, saved.watches);
  if (!back)
    return with_context("could not come back to launch " + std::to_string(here.launch) + ", instruction " +
                            std::to_string(here.instret) + ": ",
                        back.error());
  last = saved;
  fatal = was_fatal;
  return {};
}

Result<void> Session::derive_launch_start(uint32_t launch) {
  Impl& I = *impl_;
  if (auto r = I.need_store(); !r) return r.error();
  auto has = I.store->has(checkpoint::TimeKey{launch, 0});
  if (!has) return has.error();
  if (*has) return {};
  const bool was_stopped = stopped();
  const StopEvent saved = I.last;
  const bool was_fatal = I.fatal;
  const TimePoint here = now();
  auto start = I.seek(TimePoint{launch, 0}, StopReason::InstructionCount, std::nullopt, {});
  Result<bool> kept = start ? I.store->has(checkpoint::TimeKey{launch, 0}) : Result<bool>(start.error());
  if (was_stopped)
    if (auto back = I.come_back(here, saved, was_fatal); !back) return back.error();
  if (!kept) return kept.error();
  if (!*kept)
    return make_error("the start of launch " + std::to_string(launch) + " could not be kept" +
                      (I.recorder.error().empty() ? std::string() : ": " + I.recorder.error()));
  return {};
}

Result<void> Session::flush() {
  if (auto r = commit_writes(); !r) return r;
  Impl& I = *impl_;
  if (I.store && !I.opts.read_only) return I.store->flush();  // durable against a machine failure too
  return {};
}

Result<void> Session::commit_writes() {
  Impl& I = *impl_;
  I.recorder.queue_timeline_op();  // the samples after the last checkpoint written
  if (auto r = I.flush(); !r) {
    // Kept (unrecorded) for the next try; the end of the session reports them if that fails too.
    I.recorder.failed(r.error());
    I.st.unrecorded_ops = I.recorder.queued_ops();
    return r;
  }
  I.st.unrecorded_ops = 0;
  // A failed commit of the staged checkpoints is counted by the store (stats(), store_error()).
  if (I.store && !I.opts.read_only)
    if (auto r = I.store->sync(); !r) return r;
  return {};
}

Result<void> Session::end() {
  Impl& I = *impl_;
  Result<void> r = commit_writes();
  if (I.store && !I.opts.replay && !I.opts.read_only)
    if (auto w = I.store->set_writer_open(false); !w && r) r = w;
  I.ended = true;
  // One sync for all of it: the writer flag's commit is the last, so closing the store syncs nothing.
  if (I.store && !I.opts.read_only)
    if (auto f = I.store->flush(); !f && r) r = f;
  return r;
}

Result<void> Session::host_finished(uint32_t host_status) {
  Impl& I = *impl_;
  I.plan.set_host_done();
  if (!I.recorder.writes_ops()) return {};
  checkpoint::HostOpRecord op;
  op.kind = checkpoint::HostOpKind::HostEnd;
  op.addr = host_status;
  I.recorder.add_op(op);
  return I.flush();
}

Result<void> Session::record_symbols(const std::string& name, std::span<const uint8_t> elf) {
  Impl& I = *impl_;
  if (!I.recorder.writes_ops() || elf.empty()) return {};
  if (elf.size() > checkpoint::kMaxPageBytes)
    return make_error("the kernel image is larger than a recording keeps (" + std::to_string(elf.size()) + " bytes)");
  I.recorder.add_blob_op(checkpoint::HostOpKind::Symbols, 0, elf, name);
  return I.flush();
}

Result<void> Session::load_recording() { return impl_->load_recording(); }

void Session::set_host_source(std::function<Result<bool>()> source) { impl_->host_source = std::move(source); }

std::vector<LaunchGridArgs> Session::launch_args() const { return impl_->plan.grids(); }

std::vector<size_t> Session::launch_images_recorded() const { return impl_->plan.images(); }

}  // namespace vx::engine
