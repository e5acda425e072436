#include "engine/session_live.hpp"

namespace vx::engine {
namespace live {

using Mode = Session::Impl::Mode;

// A step that stays in one PC range for this many DM steps in a row (a spin loop, a long loop
// body, a callee run through) goes on by range runs (range_run) instead of one DM step at a time.
constexpr uint64_t kRangeRunAfter = 4096;

DeviceException at(Cause c, uint32_t pc, WarpId w) { return DeviceException{c, pc, w.core, w.slot, 0, 0}; }

WarpId warp_of(const Session::Impl& s, uint32_t g) {
  const uint32_t nw = s.dev.config().warps;
  return WarpId{g / nw, g % nw};
}

void solo(Session::Impl& s) {
  s.lv.departed.insert(s.launch);
  s.lv.stepped = true;
}

Result<void> sync_breakpoints(Session::Impl& s) {
  auto r = s.lv.dev->sync_breakpoints(s.traps.wanted_addresses());
  s.traps.set_planted(s.lv.dev->planted());
  return r;
}

Result<void> capture(Session::Impl& s) {
  if (auto r = s.capture(false); !r) return r;
  if (auto r = s.lv.dev->read_warps(s.ctx, s.dev.config().threads); !r) return r;
  for (CoreState& c : s.ctx.cores)
    for (WarpState& w : c.warps) {
      w.halted = false;
      w.halt_cause = HaltCause::None;
      w.reset_halt = false;
      w.dscratch.clear();
    }
  return {};
}

Result<StopEvent> stop(Session::Impl& s, StopReason reason, const DeviceException& exc, std::vector<WatchEvent> watch) {
  s.account_pass();
  if (auto r = s.lv.dev->halt_all(); !r) return r.error();
  s.lv.info.held = true;
  if (auto r = capture(s); !r) return r.error();
  StopEvent ev = s.event_here(reason, exc, std::move(watch));
  s.describe(ev, exc, !s.quiet);
  s.phase = Session::Impl::Phase::Stopped;
  if (!s.quiet) ++s.st.stops;
  s.last = ev;
  auto saved = s.save_checkpoint(ev, !s.quiet);
  if (!saved) return saved.error();
  ev.recorded = s.last.recorded = *saved && !s.quiet;
  return ev;
}

Result<void> auto_checkpoint(Session::Impl& s, bool resume) {
  if (!s.store || s.opts.read_only) return {};
  const uint64_t now = s.launch_progress();
  s.note_reached(now);
  auto exists = s.store->has(checkpoint::TimeKey{s.launch, now});
  if (!exists) return exists.error();
  if (*exists) return {};
  s.account_pass();
  if (auto r = s.lv.dev->halt_all(); !r) return r;
  const bool was_held = s.lv.info.held;
  s.lv.info.held = true;  // the pages are read through the DM too
  if (auto r = capture(s); !r) return r;
  StopEvent ev;
  ev.reason = StopReason::InstructionCount;
  ev.launch = s.launch;
  ev.instructions = s.ctx.kernel_instructions;
  if (auto r = s.save_checkpoint(ev, false); !r) return r.error();
  if (!resume) return {};
  s.lv.info.held = was_held;
  return s.lv.dev->resume_all();
}

bool is_assertion(Session::Impl& s, uint32_t through, uint32_t pc) {
  uint32_t next = 0;
  return s.lv.dev->read_bytes(through, pc + 4, {reinterpret_cast<uint8_t*>(&next), 4}).ok() && next == kAssertMarker;
}

Result<StopEvent> halted_hit(Session::Impl& s, StopReason reason, const DeviceException& exc,
                             std::vector<WatchEvent> watches) {
  if (auto r = s.lv.dev->halt_all(); !r) return r.error();
  s.lv.info.held = true;
  if (auto r = capture(s); !r) return r.error();
  StopEvent hit = s.event_here(reason, exc, std::move(watches));
  s.describe(hit, exc, false);
  return hit;
}

Result<std::optional<StopEvent>> filter_breakpoint_hit(Session::Impl& s, const DeviceException& exc) {
  auto hit = halted_hit(s, StopReason::Breakpoint, exc);
  if (!hit) return hit.error();
  if (s.breakpoint_filter(*hit)) return some(stop(s, StopReason::Breakpoint, exc));
  ++s.st.filtered_hits;
  if (s.store && !s.opts.read_only)
    if (auto r = auto_checkpoint(s, false); !r) return r.error();
  return depart(s);
}

Result<std::optional<StopEvent>> on_halted(Session::Impl& s, bool filter) {
  DmClient& dm = s.lv.dev->dm();
  auto halted = dm.halted_warps();
  if (!halted) return halted.error();
  std::vector<uint32_t> again;
  for (uint32_t g : *halted) {
    auto cause = dm.halt_cause(g);
    if (!cause) return cause.error();
    if (*cause == HaltCause::Ebreak) {
      auto pc = dm.read_pc(g);
      if (!pc) return pc.error();
      const WarpId w = warp_of(s, g);
      if (s.traps.planted_at(*pc)) {
        if (filter && s.breakpoint_filter && !s.quiet) return filter_breakpoint_hit(s, at(Cause::Breakpoint, *pc, w));
        return some(stop(s, StopReason::Breakpoint, at(Cause::Breakpoint, *pc, w)));
      }
      // The kernel's own EBREAK (ebreak-halt is always on live): continuing goes past it.
      const bool assertion = is_assertion(s, g, *pc);
      return some(stop(s, assertion ? StopReason::Assertion : StopReason::Exception, at(Cause::Breakpoint, *pc, w)));
    }
    if (*cause == HaltCause::ResetHaltReq) again.push_back(g);
  }
  if (again.empty()) return std::optional<StopEvent>{};
  if (auto r = dm.resume_warps(again); !r) return r.error();
  return std::optional<StopEvent>{};
}

Result<std::optional<StopEvent>> start_launch(Session::Impl& s) {
  DeviceEvent e0 = s.dev.wait(0);
  if (e0.kind == EventKind::CommandError) {
    s.account_pass();
    s.phase = Session::Impl::Phase::Dead;
    return std::optional<StopEvent>{s.killed("a command failed: " + e0.message, ErrorCode::Input)};
  }
  if (e0.kind != EventKind::Budget) return std::optional<StopEvent>{};  // nothing launched (yet)
  DmClient& dm = s.lv.dev->dm();
  if (auto r = dm.reset_and_halt(); !r) return r.error();
  auto halted = dm.halted_warps();
  if (!halted) return halted.error();
  if (halted->empty()) return std::optional<StopEvent>{};
  s.lv.info.held = true;
  if (auto r = sync_breakpoints(s); !r) return r.error();
  if (s.store && s.opts.checkpoint_interval && !s.opts.read_only)
    if (auto r = auto_checkpoint(s, false); !r) return r.error();
  if (s.lv.reset_halt && !s.lv.attach_done) {
    s.lv.attach_done = true;
    const WarpId w = warp_of(s, halted->front());
    auto pc = dm.read_pc(halted->front());
    if (!pc) return pc.error();
    return some(stop(s, StopReason::Step, at(Cause::None, *pc, w)));
  }
  if (auto r = s.lv.dev->resume_all(); !r) return r.error();
  s.lv.info.held = false;
  return std::optional<StopEvent>{};
}

Result<uint32_t> read_tmask(Session::Impl& s, uint32_t g) { return s.lv.dev->dm().read_csr(g, 0, 0xCC4); }

Result<std::optional<StopEvent>> run_others(Session::Impl& s, uint32_t g, LiveStep* out,
                                            const std::set<uint32_t>& held) {
  const uint32_t total = s.lv.dev->dm().platform().total_warps();
  std::vector<uint32_t> others;
  for (uint32_t o = 0; o < total; ++o)
    if (o != g && !held.count(o)) others.push_back(o);
  solo(s);
  for (;;) {
    if (auto r = s.lv.dev->dm().resume_warps(others); !r) return r.error();
    s.lv.info.held = false;
    DeviceEvent e = s.dev.wait(256);
    s.drain_console();
    if (e.kind == EventKind::Exception) {
      s.fatal = true;
      return some(
          stop(s, e.exception.cause == Cause::Watchdog ? StopReason::Watchdog : StopReason::Exception, e.exception));
    }
    if (e.kind == EventKind::Halted) {
      auto h = on_halted(s);
      if (!h) return h.error();
      if (*h) return h;
    }
    if (auto r = s.lv.dev->halt_all(); !r) return r.error();
    s.lv.info.held = true;
    auto st = s.lv.dev->step(g);
    if (!st) return st.error();
    if (st->kind != LiveStep::Waiting) {
      *out = *st;
      return std::optional<StopEvent>{};
    }
    if (s.interrupted) return some(stop(s, StopReason::Interrupt, {}));
  }
}

std::optional<DeviceException> watchdog_due(const Session::Impl& s, WarpId w, uint32_t pc, uint32_t tmask) {
  if (!s.opts.watchdog || s.launch_progress() < s.opts.watchdog) return std::nullopt;
  return DeviceException{Cause::Watchdog, pc, w.core, w.slot, tmask ? 31u - unsigned(std::countl_zero(tmask)) : 0u, 0};
}

Result<RangeRun> range_run(
    Session::Impl& s, uint32_t g, WarpId w, std::pair<uint32_t, uint32_t> range, uint32_t pc,
    std::optional<std::pair<std::pair<uint32_t, uint32_t>, std::optional<std::vector<uint32_t>>>>& cache) {
  LiveDevice& ld = *s.lv.dev;
  if (!cache || cache->first != range) {
    auto stops = ld.range_stops(g, range.first, range.second);
    if (!stops) return stops.error();
    cache.emplace(range, std::move(stops).value());
  }
  if (!cache->second) return RangeRun{};  // this range cannot run so
  const std::vector<uint32_t>& stops = *cache->second;
  if (std::find(stops.begin(), stops.end(), pc) != stops.end()) return RangeRun{};
  std::vector<uint32_t> temps;
  auto unplant = [&]() -> Result<void> {
    for (uint32_t a : temps)
      if (auto r = ld.dm().clear_breakpoint(a); !r) return r;
    temps.clear();
    return {};
  };
  for (uint32_t a : stops) {
    if (ld.planted().count(a)) continue;
    if (auto r = ld.dm().set_breakpoint(a); !r) {
      // Not code the DM can write (past the end of the image): go on by DM steps.
      if (auto u = unplant(); !u) return u.error();
      return RangeRun{};
    }
    temps.push_back(a);
  }
  // Every exit is planted: from here the warp halts at one of them or the device stops.
  auto halted = [&]() -> Result<void> {
    if (auto r = ld.halt_all(); !r) return r;
    s.lv.info.held = true;
    return unplant();
  };
  if (auto r = ld.dm().resume_warps({g}); !r) return r.error();
  s.lv.info.held = false;
  for (;;) {
    if (s.interrupted) {
      if (auto r = halted(); !r) return r.error();
      auto ev = stop(s, StopReason::Interrupt, {});
      if (!ev) return ev.error();
      return RangeRun{std::move(ev).value()};
    }
    DeviceEvent e = s.dev.wait(s.opts.slice ? s.opts.slice : 1u << 20);
    s.drain_console();
    switch (e.kind) {
      case EventKind::Budget: continue;
      case EventKind::Halted: {
        if (auto r = halted(); !r) return r.error();
        auto at_pc = ld.read_pc(g);
        if (!at_pc) return at_pc.error();
        RangeRun out;
        out.moved = true;
        out.pc = *at_pc;
        return out;
      }
      case EventKind::Exception: {
        if (auto r = halted(); !r) return r.error();
        s.fatal = true;
        auto ev =
            stop(s, e.exception.cause == Cause::Watchdog ? StopReason::Watchdog : StopReason::Exception, e.exception);
        if (!ev) return ev.error();
        return RangeRun{std::move(ev).value()};
      }
      case EventKind::Watch: {
        if (auto r = halted(); !r) return r.error();
        auto ev = stop(s, StopReason::Watchpoint, {}, s.traps.take_watch_events());
        if (!ev) return ev.error();
        return RangeRun{std::move(ev).value()};
      }
      case EventKind::CommandError:
        s.account_pass();
        s.phase = Session::Impl::Phase::Dead;
        s.lv.info.held = false;
        return RangeRun{s.killed("a command failed: " + e.message, ErrorCode::Input)};
      default:
        (void)halted();
        return make_error(ErrorCode::Internal, "internal error: a range run of warp " + std::to_string(w.core) + "." +
                                                   std::to_string(w.slot) + " ended without a halt");
    }
  }
}

Result<StopEvent> step(Session::Impl& s, const Session::Impl::Mode& mode) {
  const WarpState& ws0 = s.ctx.cores[mode.warp.core].warps[mode.warp.slot];
  if (!ws0.active) return make_error("the focus warp has no work to step");
  if (auto r = sync_breakpoints(s); !r) return r.error();
  const uint32_t g = s.lv.dev->gid(mode.warp.core, mode.warp.slot);
  const uint32_t nt = s.dev.config().threads;
  const uint32_t all = nt >= 32 ? ~0u : (1u << nt) - 1u;
  const uint32_t lanes = mode.lanes ? mode.lanes : ~0u;
  const bool track = (lanes & all) != all;  // a focus lane: only its retirements count
  uint32_t tmask = ws0.tmask, pc = ws0.pc;
  std::optional<std::pair<uint32_t, uint32_t>> range;
  uint64_t in_range = 0;  // DM steps in a row that stayed in `range`
  std::optional<std::pair<std::pair<uint32_t, uint32_t>, std::optional<std::vector<uint32_t>>>> stops;  // range_run's
  const bool watching = s.traps.watching();
  bool first = true;
  for (;;) {
    if (!first && s.traps.planted_at(pc)) return stop(s, StopReason::Breakpoint, at(Cause::Breakpoint, pc, mode.warp));
    first = false;
    if (s.interrupted) return stop(s, StopReason::Interrupt, {});
    if (auto x = watchdog_due(s, mode.warp, pc, tmask)) {
      s.fatal = true;
      return stop(s, StopReason::Watchdog, *x);
    }
    solo(s);
    // With a focus lane: a range run keeps the thread mask (what changes it is a stop, run by a DM
    // step), so every instruction it runs counts when the lane is active where it starts.
    if (range && in_range >= kRangeRunAfter && (!track || (tmask & lanes)) && !watching && pc >= range->first &&
        pc < range->second) {
      auto rr = range_run(s, g, mode.warp, *range, pc, stops);
      if (!rr) return rr.error();
      if (rr->stop) return std::move(*rr->stop);
      if (rr->moved) {
        pc = rr->pc;
        auto t = read_tmask(s, g);
        if (!t) return t.error();
        tmask = *t;
        if (pc >= range->first && pc < range->second) continue;  // at a stop inside: a DM step next
        goto left;
      }
    }
    {
      auto r = s.lv.dev->step(g);
      if (!r) return r.error();
      LiveStep st = *r;
      if (st.kind == LiveStep::Waiting) {
        auto o = run_others(s, g, &st);
        if (!o) return o.error();
        if (*o) return **o;
      }
      if (st.kind == LiveStep::Fault) {
        s.fatal = true;
        return stop(s, StopReason::Exception, at(st.cause, st.pc, mode.warp));
      }
      if (st.kind == LiveStep::Exited) return stop(s, StopReason::Step, at(Cause::None, pc, mode.warp));
      const bool counted = !track || (tmask & lanes) != 0;
      pc = st.pc;
      if (track || mode.policy) {
        auto t = read_tmask(s, g);
        if (!t) return t.error();
        tmask = *t;
      }
      if (!counted) continue;
      if (range && pc >= range->first && pc < range->second) {
        ++in_range;
        continue;
      }
    }
  left:
    in_range = 0;
    if (!mode.policy) return stop(s, StopReason::Step, at(Cause::None, pc, mode.warp));
    const uint32_t lane = mode.lanes ? uint32_t(std::countr_zero(mode.lanes & tmask ? mode.lanes & tmask : mode.lanes))
                                     : uint32_t(std::countr_zero(tmask ? tmask : 1u));
    auto sp = s.lv.dev->dm().read_gpr(g, lane, 2);
    if (!sp) return sp.error();
    range = mode.policy(pc, *sp);
    if (!range) return stop(s, StopReason::Step, at(Cause::None, pc, mode.warp));
  }
}

Result<bool> keep_watch_hit(Session::Impl& s, const std::vector<WatchEvent>& watches) {
  if (!s.breakpoint_filter || s.quiet) return true;
  auto hit = halted_hit(s, StopReason::Watchpoint, DeviceException{}, watches);
  if (!hit) return hit.error();
  if (s.breakpoint_filter(*hit)) return true;
  ++s.st.filtered_hits;
  if (auto r = s.lv.dev->resume_all(); !r) return r.error();
  s.lv.info.held = false;
  return false;
}

void launch_done(Session::Impl& s) {
  s.account_pass();
  s.finished_instructions = s.launch_progress();
  s.note_reached(s.finished_instructions);
  s.completed.insert(s.launch);
  s.sample_timeline(s.finished_instructions, true);
  if (!s.quiet) s.st.launch_instructions += s.launch_base(s.finished_instructions);
  s.dev_at_pass_start = s.dev.stats().instructions;
  s.progress_at_pass_start = 0;
  s.phase = Session::Impl::Phase::Idle;
  s.lv.info.held = false;
  s.lv.dev->dm().forget_halts();
}

Result<std::optional<StopEvent>> depart(Session::Impl& s) {
  LiveDevice& ld = *s.lv.dev;
  // Warps at a planted breakpoint execute the original instruction first (a DM step each). One
  // that waits there (a barrier) stays halted while the others run until it can step past it.
  std::set<uint32_t> waiting;
  for (uint32_t c = 0; c < s.ctx.cores.size(); ++c)
    for (uint32_t w = 0; w < s.ctx.cores[c].warps.size(); ++w) {
      const WarpState& ws = s.ctx.cores[c].warps[w];
      if (!ws.active || !s.traps.planted_at(ws.pc)) continue;
      solo(s);
      auto st = ld.step(ld.gid(c, w));
      if (!st) return st.error();
      if (st->kind == LiveStep::Waiting) waiting.insert(ld.gid(c, w));
      if (st->kind == LiveStep::Fault) {
        s.fatal = true;
        return some(stop(s, StopReason::Exception, at(st->cause, st->pc, WarpId{c, w})));
      }
    }
  while (!waiting.empty()) {
    const uint32_t g = *waiting.begin();
    waiting.erase(waiting.begin());
    LiveStep past;
    auto o = run_others(s, g, &past, waiting);
    if (!o) return o.error();
    if (*o) return o;
    if (past.kind == LiveStep::Fault) {
      s.fatal = true;
      return some(stop(s, StopReason::Exception, at(past.cause, past.pc, warp_of(s, g))));
    }
  }
  // The departure ends here: a checkpoint, so that the seeded run from here (the live history
  // up to the next stop) is one a re-launch from this checkpoint reproduces (time travel).
  if (s.lv.stepped && s.store && !s.opts.read_only)
    if (auto r = auto_checkpoint(s, false); !r) return r.error();
  if (auto r = ld.resume_all(); !r) return r.error();
  s.lv.info.held = false;
  return std::optional<StopEvent>{};
}

Result<StopEvent> run(Session::Impl& s, const Session::Impl::Mode& mode) {
  s.interrupted = false;
  if (s.phase == Session::Impl::Phase::Exited) return make_error("the workload has exited; there is nothing to run");
  if (s.phase == Session::Impl::Phase::Dead) return make_error("the workload was killed: " + s.last.message);
  if (mode.quiet()) return make_error(ErrorCode::Internal, "internal error: a quiet run while live");
  if (s.phase == Session::Impl::Phase::Stopped) {
    if (s.fatal)  // as in re-launch mode: refused, and the stop stays inspectable
      return make_error("The kernel stopped on " + std::string(cause_name(s.last.exception.cause)) +
                        " and cannot go on; the stop stays inspectable (reverse commands go back in time).");
    if (mode.kind == Mode::Step) return step(s, mode);
    if (mode.kind == Mode::RunTo && s.ctx.kernel_instructions >= mode.target)
      return make_error(ErrorCode::Internal, "internal error: a run to instruction " + std::to_string(mode.target) +
                                                 " from " + std::to_string(s.ctx.kernel_instructions));
    auto gone = leave_stop(s);
    if (!gone) return gone.error();
    if (*gone) return **gone;
  } else if (mode.kind == Mode::Step) {
    return make_error("no warp to step: the kernel is not stopped");
  }
  for (;;) {
    if (s.phase == Session::Impl::Phase::Idle) {
      auto next = s.next_piece(mode);
      if (!next) return next.error();
      if (*next) return **next;
      auto first = start_launch(s);
      if (!first) return first.error();
      if (*first) return **first;
    }
    uint64_t budget = s.opts.slice;
    const uint64_t now = s.launch_progress();
    std::optional<uint64_t> target;
    if (mode.kind == Mode::RunTo) target = mode.target;
    if (s.lv.attach_after && !s.lv.attach_done) target = s.lv.attach_after;
    if (target) {
      if (now >= *target) {
        const bool attach = mode.kind != Mode::RunTo;
        s.lv.attach_done = true;
        return stop(s, attach ? StopReason::Interrupt : StopReason::InstructionCount, {});
      }
      budget = std::min(budget, *target - now);
    }
    budget = s.record_budget(budget, now);
    DeviceEvent e = s.dev.wait(budget);
    s.drain_console();
    auto ended = on_event(s, e);
    if (!ended) return ended.error();
    if (*ended) return **ended;
  }
}

// From a stop: the breakpoints written, past the kernel's own EBREAK, then every warp goes on.
Result<std::optional<StopEvent>> leave_stop(Session::Impl& s) {
  if (auto r = sync_breakpoints(s); !r) return r.error();
  LiveDevice& ld = *s.lv.dev;
  if (s.last.reason == StopReason::Assertion || s.last.reason == StopReason::Exception) {
    // Past the kernel's own EBREAK (the only exception that is not fatal).
    const WarpId w{s.last.exception.core, s.last.exception.warp};
    const WarpState& ws = s.ctx.cores[w.core].warps[w.slot];
    if (ws.active && ws.pc == s.last.exception.pc)
      if (auto r = ld.write_pc(ld.gid(w.core, w.slot), ws.pc + 4); !r) return r.error();
  }
  return depart(s);
}

// One event of the device while live: a stop event, or nullopt to go on.
Result<std::optional<StopEvent>> on_event(Session::Impl& s, const DeviceEvent& e) {
  switch (e.kind) {
    case EventKind::Budget: {
      const uint64_t at_count = s.launch_progress();
      s.note_reached(at_count);
      s.sample_timeline(at_count);
      if (s.recorder.auto_due(at_count) && s.opts.checkpoint_interval) {
        if (auto r = auto_checkpoint(s, true); !r) return r.error();
        s.recorder.schedule_from(at_count, s.opts.checkpoint_interval);
      }
      if (s.progress && !s.quiet) s.progress(s.pass, at_count);
      if (s.host_tick && !s.quiet) s.host_tick();
      if (s.interrupted) return some(stop(s, StopReason::Interrupt, {}));
      return std::optional<StopEvent>{};
    }
    case EventKind::Halted: return on_halted(s, true);
    case EventKind::Exception:
      s.fatal = true;
      return some(
          stop(s, e.exception.cause == Cause::Watchdog ? StopReason::Watchdog : StopReason::Exception, e.exception));
    case EventKind::Watch: {
      auto w = s.traps.take_watch_events();
      auto keep = keep_watch_hit(s, w);
      if (!keep) return keep.error();
      if (!*keep) return std::optional<StopEvent>{};
      return some(stop(s, StopReason::Watchpoint, {}, std::move(w)));
    }
    case EventKind::Completed:
    case EventKind::Idle: launch_done(s); return std::optional<StopEvent>{};
    case EventKind::CommandError:
      s.account_pass();
      s.phase = Session::Impl::Phase::Dead;
      s.lv.info.held = false;
      return some(s.killed("a command failed: " + e.message, ErrorCode::Input));
    case EventKind::Trigger:
    case EventKind::Drained: return make_error(ErrorCode::Internal, "internal error: a live run got a re-launch event");
  }
  return std::optional<StopEvent>{};
}

Result<void> setup(Session::Impl& s, Driver& device, const SessionOptions& options) {
  LiveState& lv = s.lv;
  lv.info.requested = options.mode;
  lv.attach_after = options.attach_after;
  lv.reset_halt = options.reset_halt;
  if (options.mode == SessionMode::Relaunch) {
    DmClient probe(device);
    auto p = probe.connect();
    lv.info.has_dm = p.ok();
    if (p) {
      lv.info.platform = *p;
      (void)device.dm_write(dm::kDctrl, 0);  // dmactive = 0, as it was
    }
    lv.info.why =
        "re-launch, the default: every stop saves, kills and re-launches, so the device is never held "
        "and the schedule is the undisturbed one (--mode live halts in place; docs/live.md)";
    return {};
  }
  lv.dev = std::make_unique<LiveDevice>(device);
  auto p = lv.dev->connect();
  lv.info.has_dm = p.ok();
  if (p) lv.info.platform = *p;
  if (!p && options.mode == SessionMode::Live) return make_error(kNoDebugModule);
  if (options.replay) {
    // A recording has no launch on the device to halt: it is opened at a checkpoint and replayed
    // by re-launching from it (a move in time, below), so the DM stays inactive.
    (void)device.dm_write(dm::kDctrl, 0);
    lv.info.why = std::string("--mode ") + session_mode_name(options.mode) +
                  ": a recording replays by re-launching from its checkpoints (nothing of it is on the device to "
                  "halt in place; docs/live.md)";
    return {};
  }
  lv.on = lv.info.live = p.ok();
  lv.info.why = options.mode == SessionMode::Live ? "--mode live: warps halted in place through the Debug Module"
                : p ? "--mode auto: the device has a Debug Module, so warps are halted in place through it"
                    : "--mode auto: the device has no Debug Module, so every stop saves, kills and re-launches";
  if (lv.on) s.set_runner(make_live_runner(s));
  return {};
}

void leave(Session::Impl& s, const std::string& why) {
  if (!s.lv.on) return;
  (void)s.dev.dm_write(dm::kDctrl, 0);  // DCTRL.dmactive = 0: the DM resets, ebreak-halt off, every warp resumes
  s.lv.on = false;
  s.lv.info.live = false;
  s.lv.info.held = false;
  s.lv.info.why = why;
}

Result<std::vector<uint8_t>> read_memory(Session::Impl& s, uint32_t addr, uint32_t size, std::optional<uint32_t> core) {
  std::vector<uint8_t> bytes(size);
  uint32_t through = UINT32_MAX;
  for (uint32_t c = core.value_or(0); c < s.ctx.cores.size() && through == UINT32_MAX && (!core || c == *core); ++c)
    for (uint32_t w = 0; w < s.ctx.cores[c].warps.size(); ++w)
      if (s.ctx.cores[c].warps[w].active) {
        through = s.lv.dev->gid(c, w);
        break;
      }
  if (through == UINT32_MAX) return make_error(ErrorCode::NoHaltedWarp, "no halted warp to read memory through");
  if (auto r = s.lv.dev->read_bytes(through, addr, bytes); !r) return r.error();
  s.traps.unplant_view(addr, bytes);
  return bytes;
}

}  // namespace live

namespace {

// The live runner: warps halted in place through the Debug Module (docs/live.md).
class LiveRunner final : public Runner {
 public:
  explicit LiveRunner(Session::Impl& s) : s_(s) {}
  bool live() const override { return true; }
  Result<StopEvent> run(const Session::Impl::Mode& mode) override { return live::run(s_, mode); }
  std::optional<Result<std::vector<uint8_t>>> read_held(uint32_t addr, uint32_t size,
                                                        std::optional<uint32_t> core) override {
    if (!s_.lv.info.held) return std::nullopt;
    // A load through a halted warp would see its core's local memory there; device memory has
    // nothing from kLocalMemBase up, as a re-launch stop reads it (a local read names its core).
    if (!core && uint64_t(addr) + size > memmap::kLocalMemBase)
      return Result<std::vector<uint8_t>>(make_error(ErrorCode::Unmapped, "device memory ends below local memory"));
    return live::read_memory(s_, addr, size, core);
  }
  // Written through a halted warp when the session next runs (sync_breakpoints).
  bool plants_in_memory() const override { return false; }
  Result<void> can_write_state() const override {
    return make_error("writing state is not supported in live mode yet");
  }
  bool holds_device() const override { return true; }
  bool departed(uint32_t launch) const override { return s_.lv.departed.count(launch) != 0; }
  bool stepped() const override { return s_.lv.stepped; }
  void checkpoint_written() override { s_.lv.stepped = false; }
  std::unique_ptr<Runner> leave(const std::string& why) override {
    live::leave(s_, why);
    return make_relaunch_runner(s_);
  }

 private:
  Session::Impl& s_;
};

}  // namespace

std::unique_ptr<Runner> make_live_runner(Session::Impl& s) { return std::make_unique<LiveRunner>(s); }

}  // namespace vx::engine
