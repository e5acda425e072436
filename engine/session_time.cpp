#include "engine/session_live.hpp"

namespace vx::engine {

// The launch's next checkpoint after the stop when a live session reached it by Debug Module
// steps (docs/live.md "Time travel while live"): a re-launch from here follows the seeded
// schedule, not that interval, so the engine restores its end instead of re-executing it.
Result<std::optional<checkpoint::CheckpointRecord>> Session::Impl::stepped_ahead() {
  using Out = std::optional<checkpoint::CheckpointRecord>;
  if (!store || phase != Phase::Stopped || !may_have_live()) return Out();
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
Result<std::optional<StopEvent>> Session::Impl::follow_recording(const Mode& mode) {
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
        auto ev = seek(TimePoint{launch, first->instructions}, watch ? StopReason::Watchpoint : StopReason::Breakpoint,
                       std::nullopt, watch ? first->watches : std::vector<WatchEvent>{});
        if (!ev) return ev.error();
        return Out(std::move(*ev));
      }
      // The scan ends where the stepped interval starts: a stop at a breakpoint there is the hit.
      if (auto r = restore(checkpoint::TimeKey{launch, **end}); !r) return r.error();
      for (uint32_t c = 0; c < ctx.cores.size(); ++c)
        for (uint32_t w = 0; w < ctx.cores[c].warps.size(); ++w) {
          const WarpState& ws = ctx.cores[c].warps[w];
          if (ws.active && traps.wanted(ws.pc)) {
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
    const bool onward = mode.kind == Mode::Continue || mode.kind == Mode::ToLaunch ||
                        (mode.kind == Mode::RunTo && mode.target > to.instret);
    const bool inside = (mode.kind == Mode::Seek || mode.kind == Mode::RunTo || mode.kind == Mode::UntilWarp) &&
                        mode.target < to.instret;
    if ((!departure && !onward) || inside) return make_error(stepped_message(from, to));
    const bool still_set = traps.wanted(rec.stop.exception.pc);
    if (!departure && mode.kind == Mode::Continue && rec.stop.kind == checkpoint::StopKind::Breakpoint && still_set) {
      auto ev = seek(TimePoint{to.launch, to.instret}, StopReason::Breakpoint,
                     WarpId{rec.stop.exception.core, rec.stop.exception.warp}, {});
      if (!ev) return ev.error();
      return Out(std::move(*ev));
    }
    if (auto r = restore(to); !r) return r.error();
  }
}

// The last checkpoint before the first stepped one in (now, until] of this launch: a scan ends
// there, as a re-launch does not reproduce what follows (docs/live.md).
Result<std::optional<uint64_t>> Session::Impl::scan_end_before_stepped(uint64_t until) {
  using Out = std::optional<uint64_t>;
  if (!store || !may_have_live()) return Out();
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

std::string Session::Impl::stepped_message(const checkpoint::TimeKey& from, const checkpoint::TimeKey& to) {
  return "the live session ran launch " + std::to_string(from.launch) + " from instruction " +
         std::to_string(from.instret) + " to " + std::to_string(to.instret) +
         " by Debug Module steps (warps run alone), which a re-launch does not reproduce: only those two points "
         "are recorded (docs/live.md)";
}

// Restores the checkpoint at key exactly: memory, state, the plan's cursor and the launch.
Result<void> Session::Impl::restore(const checkpoint::TimeKey& key) {
  if (auto next = runner->leave("a move in time re-launches from a checkpoint: the session went on in re-launch mode"))
    set_runner(std::move(next));
  if (key.launch == 0 || key.launch > plan.launches())
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
  // Pages written since the last checkpoint differ from the recorder's image: they are rewritten too.
  std::set<uint32_t> dirty;
  for (uint32_t page : take_dirty_pages()) dirty.insert(page);
  std::map<uint32_t, checkpoint::PageHash> target;
  for (const auto& r : rec->memory) target[r.number] = r.hash;
  const std::map<uint32_t, checkpoint::PageHash>& pages = recorder.pages();
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
    traps.replant(page * kPageSize, kPageSize);
  }
  std::vector<uint8_t> zero(kPageSize, 0);
  for (const auto& [page, hash] : pages)
    if (!target.count(page)) {
      (void)write_page(page, zero);
      traps.replant(page * kPageSize, kPageSize);
    }
  for (uint32_t page : dirty) {
    if (!in_regions(page) || target.count(page) || pages.count(page)) continue;
    if (write_page(page, zero)) traps.replant(page * kPageSize, kPageSize);
  }
  (void)take_dirty_pages();
  recorder.set_pages(std::move(target));
  recorder.checkpoint_at(key.instret);
  ctx = std::move(c).value();
  io_snapshot.assign(memmap::kIoEnd - memmap::kIoBase, 0);
  (void)dev.copy_from_device(memmap::kIoBase, io_snapshot);
  console_log.assign(rec->console.begin(), rec->console.end());
  (void)dev.read_console();
  console_out.clear();
  fatal =
      rec->stop.kind == checkpoint::StopKind::Watchdog || (rec->stop.kind == checkpoint::StopKind::DeviceException &&
                                                           rec->stop.exception.cause != uint8_t(Cause::Breakpoint));
  launch = key.launch;
  plan.rewind_to(key.launch);
  phase = Phase::Stopped;
  last = StopEvent{};
  last.reason = reason_of(rec->stop);
  last.launch = launch;
  last.instructions = ctx.kernel_instructions;
  last.exception =
      DeviceException{Cause(rec->stop.exception.cause), rec->stop.exception.pc,   rec->stop.exception.core,
                      rec->stop.exception.warp,         rec->stop.exception.lane, rec->stop.exception.addr};
  return {};
}

// Runs quietly (no breakpoints, no watchpoints, no console) with `mode` from the current stop.
Result<StopEvent> Session::Impl::quiet_run(const Mode& mode, bool keep_breakpoints, bool keep_watchpoints) {
  TrapTable::Suspended sus;
  if (!keep_breakpoints) sus = traps.suspend();
  if (auto r = traps.sync_watchpoints(keep_watchpoints); !r) {
    if (!keep_breakpoints) traps.restore(sus);
    return r.error();
  }
  const bool was_quiet = quiet;
  quiet = true;
  auto ev = run(mode);
  quiet = was_quiet;
  if (!keep_breakpoints) traps.restore(sus);
  if (auto r = traps.sync_watchpoints(true); !r && ev) return r.error();
  return ev;
}

Result<StopEvent> Session::Impl::seek(TimePoint t, StopReason as, std::optional<WarpId> focus,
                                      std::vector<WatchEvent> watch) {
  if (auto r = need_store(); !r) return r.error();
  if (t.launch == 0 || t.launch > plan.launches())
    return make_error("launch " + std::to_string(t.launch) + " is not in this session's history" +
                      (plan.launches() == 0 ? std::string(" (no launch has begun)")
                                            : " (launches 1 to " + std::to_string(plan.launches()) + ")"));
  auto key = store->at_or_before(checkpoint::TimeKey{t.launch, t.instret});
  if (!key) return key.error();
  // Already there: nothing to restore, unless the state here may not be the recorded one (a live
  // session's history, which a re-launch can reach in another state: docs/live.md).
  bool here = phase == Phase::Stopped && launch == t.launch && ctx.kernel_instructions == t.instret;
  if (here && *key && !runner->holds_device() && **key == checkpoint::TimeKey{t.launch, t.instret}) {
    auto rec = store->get(**key);
    if (!rec) return rec.error();
    if (rec->live || rec->stepped) here = false;
  }
  if (!here && (!*key || (*key)->launch != t.launch)) {
    // The launch has no checkpoint of its own (docs/store.md, "Launch starts": a short launch after
    // a recent checkpoint, a recording made without automatic checkpoints, the last launches of a
    // killed one). Its start is derived: the recorded host operations run on from the latest
    // checkpoint before it, writing the starts they pass (a read-only session keeps them in memory).
    // With no checkpoint before it either, the run starts from the workload's beginning, which a
    // session that has not begun yet stands at. A session standing between two launches at or
    // after that checkpoint (a history pass that scanned a launch to its end) runs on from there.
    const std::string none = "launch " + std::to_string(t.launch) + " has no checkpoint of its own in this recording";
    const bool at_beginning = phase == Phase::Idle && launch == 0;
    const bool between = phase == Phase::Idle && launch > 0 && launch < t.launch &&
                         (!*key || (*key)->launch <= launch) && !runner->holds_device();
    if (!*key && !at_beginning && !between) return make_error(none + " nor one before it to run on from");
    if (*key && !between)
      if (auto r = restore(**key); !r) return r.error();
    Mode m;
    m.kind = Mode::ToLaunch;
    m.target = t.launch;
    auto ev = quiet_run(m, false, false);
    if (!ev) return ev.error();
    if (launch != t.launch || ctx.kernel_instructions != 0) {
      const std::string at =
          "launch " + std::to_string(ev->launch) + ", instruction " + std::to_string(ev->instructions);
      if (ev->reason == StopReason::Interrupt)
        return make_error("interrupted at " + at + " on the way to launch " + std::to_string(t.launch));
      if (ev->reason == StopReason::Exited || ev->reason == StopReason::EndOfRecording)
        return make_error("launch " + std::to_string(t.launch) +
                          " is past the end of the recording (it ends in launch " + std::to_string(launch) + ")");
      return make_error("the run to launch " + std::to_string(t.launch) + "'s start stopped at " + at + ": " +
                        stop_reason_name(ev->reason));
    }
    key = std::optional<checkpoint::TimeKey>(checkpoint::TimeKey{t.launch, 0});
    here = t.instret == 0;
  } else if (!here) {
    if (auto r = restore(**key); !r) return r.error();
  }
  if (!here) {
    if (t.instret > (*key)->instret) {
      Mode m;
      m.kind = Mode::Seek;
      m.target = t.instret;
      auto ev = quiet_run(m, false, false);
      if (!ev) return ev.error();
      if (ev->reason != StopReason::InstructionCount || ctx.kernel_instructions != t.instret) {
        // Where the launch's history ends: its last instruction when it ended, else the stop.
        const std::string where =
            ev->launch != t.launch ? "launch " + std::to_string(t.launch) + " ended before it"
            : ev->reason == StopReason::Exited || ev->reason == StopReason::EndOfRecording
                ? "launch " + std::to_string(t.launch) + " ends at instruction " + std::to_string(ev->instructions)
                : "the run stops at instruction " + std::to_string(ev->instructions) + ": " +
                      stop_reason_name(ev->reason);
        return make_error("instruction " + std::to_string(t.instret) + " of launch " + std::to_string(t.launch) +
                          " is past the end of its history (" + where + ")");
      }
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
Result<ScanResult> Session::Impl::scan(const ScanRequest& req) {
  if (!req.trace || !may_have_live()) return scan_interval(req);
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

Result<ScanResult> Session::Impl::scan_interval(const ScanRequest& req) {
  if (auto r = need_store(); !r) return r.error();
  if (phase != Phase::Stopped) return make_error("a scan starts at a stop");
  ScanResult out;
  TrapTable::Suspended sus;
  if (!req.breakpoints) sus = traps.suspend();
  // Breakpoints a live session set while it was stopped were written only through the DM when
  // it ran on; it has left live mode (restore), so they go in now, like any pending one.
  if (req.breakpoints) traps.plant_pending();
  if (auto r = traps.sync_watchpoints(req.watchpoints); !r) return r.error();
  const bool was_quiet = quiet;
  quiet = true;
  struct Restore {
    Impl& s;
    TrapTable::Suspended& sus;
    bool bp, was_quiet;
    ~Restore() {
      s.quiet = was_quiet;
      if (!bp) s.traps.restore(sus);
      (void)s.traps.sync_watchpoints(true);
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
  if (*ahead) return scan_stepped_start(req);
  if (last.reason == StopReason::Assertion || last.reason == StopReason::Exception) {
    WarpState& ws = ctx.cores[last.exception.core].warps[last.exception.warp];
    if (ws.active && ws.pc == last.exception.pc) ws.pc += 4;
  }
  if (auto r = relaunch(!opts.in_progress_only, false); !r) return r.error();
  return scan_pass(req, until);
}

// The start of an interval a live session ran by DM steps: only the breakpoint hit it starts with.
Result<ScanResult> Session::Impl::scan_stepped_start(const ScanRequest& req) {
  ScanResult out;
  out.reached = ctx.kernel_instructions;
  if (!req.breakpoints) return out;
  std::optional<WarpId> at;
  for (uint32_t c = 0; c < ctx.cores.size() && !at; ++c)
    for (uint32_t w = 0; w < ctx.cores[c].warps.size() && !at; ++w)
      if (ctx.cores[c].warps[w].active && traps.planted_at(ctx.cores[c].warps[w].pc)) at = WarpId{c, w};
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

// A scan's pass from its re-launch to `until`: hits and trace entries on the way; it stands at
// `until`, or where the launch ended or faulted.
Result<ScanResult> Session::Impl::scan_pass(const ScanRequest& req, uint64_t until) {
  ScanResult out;
  if (req.trace) {
    // The state at the stop (the device restores it when the pass starts).
    const WarpState& w = ctx.cores.at(req.trace_warp.core).warps.at(req.trace_warp.slot);
    uint64_t from = (w.active && w.cta_linear == req.trace_cta) ? w.instret + 1 : 1;
    if (auto r = arm_trace(req, from); !r) return r.error();
  }
  const uint32_t nt = dev.config().threads;
  for (;;) {
    const uint64_t now = launch_progress();
    if (now >= until) break;
    uint64_t budget = std::min<uint64_t>(opts.slice, until - now);
    budget = record_budget(budget, now);
    DeviceEvent e = dev.wait(budget);
    drain_console();
    const uint64_t at = launch_progress();
    note_reached(at);
    switch (e.kind) {
      case EventKind::Budget:
        sample_timeline(at);
        if (recorder.auto_due(at)) {
          if (auto r = auto_checkpoint(); !r) return r.error();
          recorder.schedule_from(at, opts.checkpoint_interval);
        }
        continue;
      case EventKind::Trigger: {
        auto w = dev.peek_warp(req.trace_warp.core, req.trace_warp.slot);
        if (!w) return w.error();
        if (w->active && w->cta_linear == req.trace_cta) {
          out.trace.push_back(TraceEntry{at, w->instret, w->pc, w->x[2 * nt + req.trace_lane], w->tmask});
          if (auto r = arm_trace(req, w->instret + 2); !r) return r.error();
        }
        continue;
      }
      case EventKind::Watch:
        if (auto r = scan_watch_hit(req, at, out); !r) return r.error();
        continue;
      case EventKind::Exception: {
        auto ended = scan_exception(req, e.exception, at, out);
        if (!ended) return ended.error();
        if (*ended) return out;
        continue;
      }
      case EventKind::Completed:
      case EventKind::Idle:
        account_pass();
        finished_instructions = at;
        completed.insert(launch);
        recorder.launch_ended(at);  // a seek may run on from here (seek's `between`)
        sample_timeline(at, true);
        dev.clear_warp_trigger();
        phase = Phase::Idle;
        out.launch_ended = true;
        out.reached = at;
        // The session must stand at a stop: the caller seeks next.
        last = StopEvent{};
        last.reason = StopReason::Exited;
        return out;
      default:
        return make_error(ErrorCode::Internal, std::string("internal error: unexpected device event during a scan: ") +
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

// Trace the scan's warp before its instruction number min_instret (holding the scan's CTA).
Result<void> Session::Impl::arm_trace(const ScanRequest& req, uint64_t min_instret) {
  WarpTrigger t{req.trace_warp.core, req.trace_warp.slot, min_instret, 0, 0, ~0u};
  t.before = true;
  t.cta_linear = req.trace_cta;
  return dev.set_warp_trigger(t);
}

// A watchpoint hit during a scan: kept when the request accepts it (the state at the hit saved
// for its filter).
Result<void> Session::Impl::scan_watch_hit(const ScanRequest& req, uint64_t at, ScanResult& out) {
  StopEvent ev;
  ev.reason = StopReason::Watchpoint;
  ev.launch = launch;
  ev.instructions = at;
  ev.watches = traps.take_watch_events();
  bool keep = true;
  if (req.accept) {
    account_pass();
    auto saved = dev.save_context();
    if (!saved) return saved.error();
    ctx = std::move(saved).value();
    keep = req.accept(ev);
  }
  if (keep) out.hits.push_back(std::move(ev));
  return {};
}

// A device exception during a scan: a planted breakpoint is a hit and the scan goes on past it
// (false); any other exception ends the scan where it happened (true).
Result<bool> Session::Impl::scan_exception(const ScanRequest& req, const DeviceException& x, uint64_t at,
                                           ScanResult& out) {
  if (x.cause == Cause::Breakpoint && traps.planted_at(x.pc)) {
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
      if (auto p = traps.original(h.pc)) ov.push_back(FetchOverride{h.warp.core, h.warp.slot, h.pc, *p});
    if (auto r = dev.continue_past_breakpoint(ov); !r) return r.error();
    return false;
  }
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
  return true;
}

Result<std::optional<StopEvent>> Session::Impl::run_until_warp(WarpId warp, uint32_t cta, uint64_t n, uint64_t limit) {
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

}  // namespace vx::engine
