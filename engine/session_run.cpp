#include "engine/session_live.hpp"

namespace vx::engine {

void Session::Impl::account_pass() {
  MachineStats s = dev.stats();
  st.instructions += s.instructions - pass_instr0;
  st.lane_instructions += s.lane_instructions - pass_lane0;
  st.restore_instructions += s.restore_instructions - pass_restore0;
  pass_instr0 = s.instructions;
  pass_lane0 = s.lane_instructions;
  pass_restore0 = s.restore_instructions;
}

void Session::Impl::begin_pass(uint64_t progress) {
  MachineStats s = dev.stats();
  pass_instr0 = dev_at_pass_start = s.instructions;
  pass_lane0 = s.lane_instructions;
  pass_restore0 = s.restore_instructions;
  progress_at_pass_start = progress;
  auto [from, fresh] = ran_from.try_emplace(launch, progress);
  if (!fresh) from->second = std::min(from->second, progress);
  ++pass;
  ++st.passes;
  recorder.schedule_from(progress, opts.checkpoint_interval);
}

// Re-launches the stopped launch from ctx (the patent's re-launch with the thread-entry routine).
// overrides: warps at a planted breakpoint go past it (a scan sets none: a hit right at its start counts).
Result<void> Session::Impl::relaunch(bool dispatch_new, bool overrides) {
  if (recorder.writes_checkpoints()) held_dirty = take_dirty_pages();  // the workload's, before the engine writes
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
      if (auto word = traps.original(ws.pc); overrides && word)
        req.overrides.push_back(FetchOverride{c, w, ws.pc, *word});
    }
    if (!any && lmem_pending) {
      uint32_t rec = records_addr + c * cfg.warps * rb;
      auto bytes = entry_routine_record(nullptr, nt, true, lmem_src, cfg.local_mem_bytes);
      if (auto r = dev.copy_to_device(rec, bytes); !r) return r;
      req.placements.push_back(RestorePlacement{c, 0, rec, false});
    }
  }
  (void)dev.take_dirty_pages();  // the engine's own writes are not the workload's
  auto id = dev.resume(std::move(req));
  if (!id) return id.error();
  begin_pass(ctx.kernel_instructions);
  phase = Phase::Running;
  return {};
}

// Saves the state at the current event (the launch is still in flight). io_region: also the I/O
// region a re-launch puts back (a live stop does not re-launch: a move in time restores it).
Result<void> Session::Impl::capture(bool io_region) {
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

Result<StopEvent> Session::Impl::stop(StopReason reason, const DeviceException& exc, std::vector<WatchEvent> watch) {
  account_pass();
  if (auto r = capture(); !r) return r.error();
  StopEvent ev = event_here(reason, exc, std::move(watch));
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

Result<StopEvent> Session::Impl::on_exception(const DeviceEvent& e) {
  const DeviceException& x = e.exception;
  if (x.cause == Cause::RestoreFailed) {
    dev.abort();
    phase = Phase::Dead;
    return killed("internal error: " + e.message);
  }
  if (x.cause == Cause::Breakpoint && traps.planted_at(x.pc)) return stop(StopReason::Breakpoint, x);
  if (x.cause == Cause::Breakpoint) {
    // The kernel's own EBREAK: continuing goes past it (assertions then go on after vx_assert).
    return stop(is_assertion(x.pc) ? StopReason::Assertion : StopReason::Exception, x);
  }
  fatal = true;
  return stop(x.cause == Cause::Watchdog ? StopReason::Watchdog : StopReason::Exception, x);
}

StopEvent Session::Impl::killed(const std::string& why, ErrorCode code) {
  StopEvent ev;
  ev.reason = StopReason::Killed;
  ev.launch = launch;
  ev.pass = pass;
  ev.message = why;
  ev.error = code;
  last = ev;
  return ev;
}

// Every run of the workload: the device time of those the user asked for is counted.
Result<StopEvent> Session::Impl::run(const Mode& mode) {
  if (mode.quiet() || quiet || run_t0) return runner->run(mode);
  run_t0 = std::chrono::steady_clock::now();
  auto ev = runner->run(mode);
  run_ns = device_ns();
  run_t0.reset();
  return ev;
}

// One run of the workload in re-launch mode: away from the stop it starts at (a re-launch), then
// through pieces and device events until something stops it.
Result<StopEvent> Session::Impl::run_pass(const Mode& mode) {
  interrupted = false;
  if (phase == Phase::Exited) return make_error("the workload has exited; there is nothing to run");
  if (phase == Phase::Stopped && !mode.quiet()) traps.plant_pending();
  if (phase == Phase::Dead) return make_error("the workload was killed: " + last.message);
  bool step_armed = false;
  if (phase == Phase::Stopped) {
    auto gone = leave_stop(mode, step_armed);
    if (!gone) return gone.error();
    if (*gone) return **gone;
  } else if (mode.kind == Mode::Step || mode.kind == Mode::UntilWarp) {
    return make_error("no warp to step: the kernel is not stopped");
  }
  for (;;) {
    if (phase == Phase::Idle) {
      auto begun = begin_piece(mode);
      if (!begun) return begun.error();
      if (*begun) return **begun;
    }
    uint64_t budget = opts.slice;
    const uint64_t now = launch_progress();
    if (mode.kind == Mode::RunTo || mode.kind == Mode::Seek || mode.kind == Mode::Scan ||
        mode.kind == Mode::UntilWarp) {
      if (now >= mode.target) return at_target(mode);
      budget = std::min(budget, mode.target - now);
    }
    budget = record_budget(budget, now);
    // Checked at every return from the device, not only at slice ends: a step whose policy asks
    // after every instruction (stepi N, nexti) returns through a trigger each time.
    if (interrupted && (!quiet || mode.kind == Mode::ToLaunch)) return stop(StopReason::Interrupt, {});
    DeviceEvent e = dev.wait(budget);
    drain_console();
    auto ended = on_event(mode, e, step_armed);
    if (!ended) return ended.error();
    if (*ended) return **ended;
  }
}

// From a stop: the checks a run from here needs, then the re-launch, with the step's or the
// warp's trigger armed. A stop event when the run ends before it starts (following a recording).
Result<std::optional<StopEvent>> Session::Impl::leave_stop(const Mode& mode, bool& step_armed) {
  if (auto r = follow_recording(mode); !r || *r)
    return r ? Result<std::optional<StopEvent>>(std::optional<StopEvent>(**r))
             : Result<std::optional<StopEvent>>(r.error());
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
    return make_error(ErrorCode::Internal, "internal error: a run to instruction " + std::to_string(mode.target) +
                                               " from " + std::to_string(ctx.kernel_instructions));
  if (auto r = relaunch(!opts.in_progress_only); !r) {
    dev.abort();
    phase = Phase::Dead;
    return some(killed("re-launch failed: " + r.error().message));
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
  return std::optional<StopEvent>{};
}

// Between launches: the next piece of the plan (next_piece), then the launch's first checkpoint, before its first
// instruction, when the work since the last checkpoint reached the interval (docs/store.md, "Launch starts"):
// every point then has a checkpoint at most one interval before it, in its launch or an earlier one.
Result<std::optional<StopEvent>> Session::Impl::begin_piece(const Mode& mode) {
  auto next = next_piece(mode);
  if (!next || *next) return next;
  if (mode.kind != Mode::ToLaunch && mode.quiet()) {
    // A quiet run never crosses into another launch.
    dev.abort();
    phase = Phase::Dead;
    return make_error(ErrorCode::Internal, "internal error: a seek ran past the end of its launch");
  }
  // A run to a launch's start writes every start it passes (derived, staged like every automatic
  // checkpoint) even when automatic checkpoints are off: the next move there, and a reverse move's
  // intervals, find them.
  const bool writes = recorder.writes_checkpoints();
  const bool write_start = writes && (mode.kind == Mode::ToLaunch || recorder.start_due(opts.checkpoint_interval));
  if (writes && !write_start && recorder.queued_ops()) {
    // The host's operations up to this launch are journaled before it runs (a kill keeps every
    // launch the host saw complete), as a start's checkpoint would commit them; with the timeline
    // samples once enough wait (a kill loses the picture of at most that many).
    recorder.queue_timeline_op(Recorder::kSamplesPerOp);
    (void)save_ops();
  }
  // A run to a launch's start stops where that launch's first checkpoint would be taken: with the
  // launch begun on the device, before its first instruction.
  if (write_start || mode.kind == Mode::ToLaunch) {
    DeviceEvent e0 = dev.wait(0);
    if (e0.kind == EventKind::Budget) {
      if (write_start) {
        if (auto r = auto_checkpoint(); !r) return r.error();
        recorder.schedule_from(0, opts.checkpoint_interval);  // from the start just written
      }
    } else if (e0.kind == EventKind::CommandError) {
      account_pass();
      phase = Phase::Dead;
      return some(killed("a command failed: " + e0.message, ErrorCode::Input));
    }
  }
  if (mode.kind == Mode::ToLaunch && launch >= mode.target) return some(stop(StopReason::InstructionCount, {}));
  return std::optional<StopEvent>{};
}

// The next piece of the plan started (nullopt), or the workload ended there (its end, or the
// session killed): a live host program is asked for more work first. Both runners start here.
Result<std::optional<StopEvent>> Session::Impl::next_piece(const Mode& mode) {
  for (;;) {
    auto started = start_next_piece();
    if (!started) {
      phase = Phase::Dead;
      return some(killed(started.error()));
    }
    if (*started) return std::optional<StopEvent>{};
    if (!host_source || plan.host_done() || opts.replay || mode.quiet()) return some(workload_end());
    // A live host: everything it queued has run; it goes on until it waits for more.
    auto more = host_source();
    if (!more) {
      phase = Phase::Dead;
      return some(killed(more.error()));
    }
    if (!*more) return some(workload_end());
  }
}

// Nothing is left to run: the end of the workload (or, replaying a recording whose host had not
// ended, the end of what was recorded).
Result<StopEvent> Session::Impl::workload_end() {
  drain_console();
  phase = Phase::Exited;
  StopEvent ev;
  ev.launch = launch;
  ev.pass = pass;
  ev.instructions = finished_instructions;
  if (opts.replay && !plan.host_done()) {
    ev.reason = StopReason::EndOfRecording;
    ev.message = "end of recording: the recorded run ended here";
    last = ev;
    return ev;
  }
  ev.reason = StopReason::Exited;
  ev.exit_code = dev.exit_code();
  last = ev;
  if (auto r = flush(); !r) return r.error();
  return ev;
}

// A run to a count reached it.
Result<StopEvent> Session::Impl::at_target(const Mode& mode) {
  if (mode.kind != Mode::UntilWarp) return stop(StopReason::InstructionCount, {});
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

// One event of the device: a stop event, or nullopt to go on.
Result<std::optional<StopEvent>> Session::Impl::on_event(const Mode& mode, const DeviceEvent& e, bool step_armed) {
  switch (e.kind) {
    case EventKind::Budget: {
      const uint64_t at = launch_progress();
      note_reached(at);
      sample_timeline(at);
      if (recorder.auto_due(at)) {
        if (auto r = auto_checkpoint(); !r) return r.error();
        recorder.schedule_from(at, opts.checkpoint_interval);
      }
      if (progress && !quiet) progress(pass, at);
      if (host_tick && !quiet) host_tick();
      if (interrupted && !quiet) return some(stop(StopReason::Interrupt, {}));
      return std::optional<StopEvent>{};
    }
    case EventKind::Trigger: return on_trigger(mode, step_armed);
    case EventKind::Watch: return on_watch(mode);
    case EventKind::Exception: return on_device_exception(e);
    case EventKind::Drained: {
      // The patent's variant: the warps in progress are done; now the rest of the launch.
      account_pass();
      auto saved = dev.save_context();
      if (!saved) return saved.error();
      ctx = std::move(saved).value();
      dev.abort();
      if (auto r = relaunch(true); !r) {
        phase = Phase::Dead;
        return some(killed("re-launch failed: " + r.error().message));
      }
      return std::optional<StopEvent>{};
    }
    case EventKind::Completed:
    case EventKind::Idle: return on_launch_end(mode);
    case EventKind::CommandError:
      account_pass();
      phase = Phase::Dead;
      return some(killed("a command failed: " + e.message, ErrorCode::Input));
    case EventKind::Halted:
      account_pass();
      dev.abort();
      phase = Phase::Dead;
      return some(killed("internal error: the device halted a warp for the Debug Module"));
  }
  return std::optional<StopEvent>{};
}

// A warp trigger fired: a run until a warp's instruction stops; a step goes on while its policy
// keeps the focus warp in range.
Result<std::optional<StopEvent>> Session::Impl::on_trigger(const Mode& mode, bool step_armed) {
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
        return std::optional<StopEvent>(ev);
      }
    }
    return some(stop(StopReason::Step, DeviceException{}));
  }
  if (!step_armed) return std::optional<StopEvent>{};
  auto now_warp = dev.peek_warp(mode.warp.core, mode.warp.slot);
  if (!now_warp) return now_warp.error();
  const WarpState& ws = *now_warp;
  if (ws.active && mode.policy) {
    uint32_t lane = mode.lanes ? uint32_t(std::countr_zero(mode.lanes & ws.tmask ? mode.lanes & ws.tmask : mode.lanes))
                               : uint32_t(std::countr_zero(ws.tmask));
    uint32_t sp = ws.x[2 * dev.config().threads + lane];
    if (auto range = mode.policy(ws.pc, sp)) {
      if (auto r = dev.set_warp_trigger(WarpTrigger{mode.warp.core, mode.warp.slot, ws.instret + 1, range->first,
                                                    range->second, mode.lanes ? mode.lanes : ~0u});
          !r)
        return r.error();
      return std::optional<StopEvent>{};
    }
  }
  dev.clear_warp_trigger();
  return some(stop(StopReason::Step, DeviceException{Cause::None, ws.pc, mode.warp.core, mode.warp.slot, 0, 0}));
}

// A hit as the front end's filter sees it: the state at the hit, saved from the device.
Result<StopEvent> Session::Impl::hit_in_place(StopReason reason, const DeviceException& exc,
                                              std::vector<WatchEvent> watches) {
  auto saved = dev.save_context();
  if (!saved) return saved.error();
  ctx = std::move(saved).value();
  StopEvent hit = event_here(reason, exc, std::move(watches));
  describe(hit, exc, false);
  return hit;
}

// A watchpoint hit. As for breakpoints, one the front end does not want (a false condition, a
// `watch` whose value did not change) costs no stop: the device goes on from where it is.
Result<std::optional<StopEvent>> Session::Impl::on_watch(const Mode& mode) {
  auto w = traps.take_watch_events();
  if (mode.quiet()) return std::optional<StopEvent>{};  // scans read hits themselves
  if (breakpoint_filter && !quiet) {
    auto hit = hit_in_place(StopReason::Watchpoint, DeviceException{}, w);
    if (!hit) return hit.error();
    if (!breakpoint_filter(*hit)) {
      ++st.filtered_hits;
      return std::optional<StopEvent>{};
    }
  }
  return some(stop(StopReason::Watchpoint, {}, std::move(w)));
}

// A device exception: a breakpoint hit the front end does not want (a false condition) costs no
// stop, the device goes on in place; anything else stops.
Result<std::optional<StopEvent>> Session::Impl::on_device_exception(const DeviceEvent& e) {
  if (breakpoint_filter && !quiet && e.exception.cause == Cause::Breakpoint && traps.planted_at(e.exception.pc)) {
    auto hit = hit_in_place(StopReason::Breakpoint, e.exception, {});
    if (!hit) return hit.error();
    if (!breakpoint_filter(*hit)) {
      std::vector<FetchOverride> ov;
      for (const WarpHit& h : hit->hits)
        if (auto p = traps.original(h.pc)) ov.push_back(FetchOverride{h.warp.core, h.warp.slot, h.pc, *p});
      if (auto r = dev.continue_past_breakpoint(ov); !r) return r.error();
      ++st.filtered_hits;
      return std::optional<StopEvent>{};
    }
  }
  return some(on_exception(e));
}

// The launch completed: the next piece runs (a quiet run ends here).
Result<std::optional<StopEvent>> Session::Impl::on_launch_end(const Mode& mode) {
  account_pass();
  finished_instructions = launch_progress();
  note_reached(finished_instructions);
  recorder.launch_ended(finished_instructions);
  completed.insert(launch);
  sample_timeline(finished_instructions, true);
  if (!quiet) st.launch_instructions += launch_base(finished_instructions);
  dev_at_pass_start = dev.stats().instructions;
  progress_at_pass_start = 0;
  dev.clear_warp_trigger();
  phase = Phase::Idle;
  if (!mode.quiet() || mode.kind == Mode::ToLaunch) return std::optional<StopEvent>{};
  StopEvent ev;
  ev.reason = StopReason::Exited;
  ev.launch = launch;
  ev.instructions = finished_instructions;
  last = ev;
  return std::optional<StopEvent>(ev);
}

namespace {

// The re-launch runner: every stop saves, kills and re-launches (docs/relaunch.md).
class RelaunchRunner final : public Runner {
 public:
  explicit RelaunchRunner(Session::Impl& s) : s_(s) {}
  bool live() const override { return false; }
  Result<StopEvent> run(const Session::Impl::Mode& mode) override { return s_.run_pass(mode); }
  std::optional<Result<std::vector<uint8_t>>> read_held(uint32_t, uint32_t, std::optional<uint32_t>) override {
    return std::nullopt;  // nothing of the session is on the device while it is stopped
  }
  bool plants_in_memory() const override { return true; }
  Result<void> can_write_state() const override { return {}; }
  bool holds_device() const override { return false; }
  bool departed(uint32_t) const override { return false; }
  bool stepped() const override { return false; }
  void checkpoint_written() override {}
  std::unique_ptr<Runner> leave(const std::string&) override { return nullptr; }

 private:
  Session::Impl& s_;
};

}  // namespace

std::unique_ptr<Runner> make_relaunch_runner(Session::Impl& s) { return std::make_unique<RelaunchRunner>(s); }

}  // namespace vx::engine
