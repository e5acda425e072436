#include "engine/session_impl.hpp"

namespace vx::engine {

// --- Recording ------------------------------------------------------------------------------
// Records an entry applied for the first time (the recording is the plan in the order it ran).
void Session::Impl::record(PlanEntry& e, std::span<const uint8_t> submitted) {
  if (!recorder.writes_ops()) return;
  using K = checkpoint::HostOpKind;
  switch (e.kind) {
    case K::Copy:
      for (uint64_t off = 0; off < e.data.size(); off += kMaxOpData) {
        uint64_t n = std::min<uint64_t>(kMaxOpData, e.data.size() - off);
        e.blobs.push_back(
            recorder.add_blob_op(K::Copy, e.addr + off, std::span<const uint8_t>(e.data).subspan(off, n)));
      }
      break;
    case K::Submit: {
      std::vector<uint8_t> own;
      if (submitted.empty()) submitted = own = encode(e.seg.commands);
      e.blobs.push_back(recorder.add_blob_op(K::Submit, 0, submitted));
      break;
    }
    default: {
      checkpoint::HostOpRecord op;
      op.kind = e.kind;
      op.addr = e.addr;
      op.size = e.size;
      recorder.add_op(op);
    }
  }
}

Result<void> Session::Impl::flush() {
  if (auto r = recorder.flush(); !r) return r;
  // What is recorded need not stay in memory: a move back reads it from the store.
  plan.drop_recorded();
  return {};
}

// --- Passes ---------------------------------------------------------------------------------
std::vector<ConsoleChunk> Session::Impl::take_console() {
  std::vector<ConsoleChunk> out;
  out.swap(console_out);
  return out;
}

void Session::Impl::drain_console() {
  for (ConsoleChunk& c : dev.read_console()) {
    console_log += c.bytes;
    if (!quiet) console_out.push_back(std::move(c));
  }
}

// The warps at planted breakpoints (every one is reported by a breakpoint stop).
void Session::Impl::add_hit(StopEvent& ev, uint32_t c, uint32_t w) const {
  for (const WarpHit& h : ev.hits)
    if (h.warp == WarpId{c, w}) return;
  const WarpState& ws = ctx.cores[c].warps[w];
  ev.hits.push_back(WarpHit{{c, w}, ws.pc, ws.tmask});
}

void Session::Impl::describe(StopEvent& ev, const DeviceException& exc, bool count_hits) {
  const uint32_t nc = uint32_t(ctx.cores.size());
  if (ev.reason == StopReason::Breakpoint) {
    if (exc.cause == Cause::Breakpoint && exc.core < nc && exc.warp < ctx.cores[exc.core].warps.size() &&
        ctx.cores[exc.core].warps[exc.warp].active)
      add_hit(ev, exc.core, exc.warp);
    for (uint32_t c = 0; c < nc; ++c)
      for (uint32_t w = 0; w < ctx.cores[c].warps.size(); ++w) {
        const WarpState& ws = ctx.cores[c].warps[w];
        if (ws.active && traps.planted_at(ws.pc)) add_hit(ev, c, w);
      }
    std::set<uint32_t> pcs;
    for (const WarpHit& h : ev.hits) pcs.insert(h.pc);
    for (int id : traps.hit_at(pcs, count_hits)) ev.breakpoints.push_back(id);
  } else if (ev.reason == StopReason::Watchpoint) {
    for (const WatchEvent& w : ev.watches)
      if (w.warp.core < nc && w.warp.slot < ctx.cores[w.warp.core].warps.size()) add_hit(ev, w.warp.core, w.warp.slot);
  } else if (ev.reason != StopReason::Interrupt && ev.reason != StopReason::InstructionCount) {
    if (exc.core < nc && exc.warp < ctx.cores[exc.core].warps.size()) add_hit(ev, exc.core, exc.warp);
  }
}

// A checkpoint of ctx (and the memory image) at the current point. A point already stored is
// reused: the state reached must be the stored one (invariant 3), which is checked.
// A checkpoint that cannot be written (a full disk, LMDB's map full, a file-size limit) loses
// nothing already recorded and stops nothing: the session says so once and goes on; what was not
// written is retried with the next checkpoint (pages, host operations), and the end reports the
// stops not recorded. Only the engine's own invariant failing is an error.
// True when the checkpoint was written (false: no store, read-only, or it could not be).
Result<bool> Session::Impl::save_checkpoint(const StopEvent& ev, bool mark) {
  if (!recorder.writes_checkpoints()) return false;
  // A read-only session keeps in memory only the launch starts it derives (Recorder::in_memory_only;
  // its stops and automatic checkpoints would fill the bound): none is a recorded stop, and one it
  // cannot keep (the memory bound) is no failure to count (derive_launch_start says why).
  const bool memory = recorder.in_memory_only();
  if (memory && ctx.kernel_instructions != 0) return false;
  auto r = write_checkpoint(ev, mark && !memory);
  if (r) {
    if (*r) recorder.checkpoint_at(ctx.kernel_instructions);
    return !memory;
  }
  if (memory && r.error().code != ErrorCode::Internal) {
    recorder.failed(r.error());
    return false;
  }
  if (r.error().code == ErrorCode::Internal) return r.error();
  recorder.failed(r.error());
  ++st.store_failures;
  if (mark) ++st.unsaved_stops;
  return false;
}

// A stop the user saw whose state a re-execution from the last checkpoint reproduces (docs/store.md,
// "Stops"): no live history in play, not a fault, and that checkpoint near (Recorder).
bool Session::Impl::stop_derivable() const {
  return !may_have_live() && !fatal && !runner->departed(launch) && !runner->stepped() &&
         !recorder.stop_checkpoint_due(ctx.kernel_instructions, opts.checkpoint_interval);
}

std::vector<uint32_t> Session::Impl::take_dirty_pages() {
  std::vector<uint32_t> out = std::move(held_dirty);
  held_dirty.clear();
  std::vector<uint32_t> more = dev.take_dirty_pages();
  if (out.empty()) return more;
  const std::set<uint32_t> seen(out.begin(), out.end());
  for (uint32_t p : more)
    if (!seen.count(p)) out.push_back(p);
  return out;
}

Result<bool> Session::Impl::write_checkpoint(const StopEvent& ev, bool mark) {
  if (auto r = flush(); !r) return r.error();
  const checkpoint::TimeKey key{launch, ctx.kernel_instructions};
  checkpoint::StopRecord stop_rec;
  stop_rec.kind =
      ev.reason == StopReason::InstructionCount && !mark ? checkpoint::StopKind::Automatic : stop_kind(ev.reason);
  stop_rec.text = stop_reason_name(ev.reason);
  stop_rec.exception = checkpoint::ExceptionRecord{uint8_t(ev.exception.cause), ev.exception.pc,   ev.exception.core,
                                                   ev.exception.warp,           ev.exception.lane, ev.exception.addr};
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
  if (!*exists && mark && stop_derivable()) {
    // Only the mark, durably (with the staged checkpoints before it); the pages written since the
    // last checkpoint stay pending (the device's dirty pages, and held_dirty across a re-launch) for
    // the next checkpoint to take.
    if (auto r = store->set_mark(key, stop_rec); !r) return r.error();
    ++st.marks_only;
    return false;
  }
  std::vector<checkpoint::PageData> new_pages;
  // The workload's pages written since the last checkpoint (the engine's own are not in its regions).
  for (uint32_t page : take_dirty_pages()) {
    if (!in_regions(page)) continue;
    std::vector<uint8_t> bytes(kPageSize);
    if (!read_page(page, bytes)) {
      recorder.forget_page(page);  // freed since
      continue;
    }
    traps.unplant_view(page * kPageSize, bytes);
    if (auto pd = recorder.note_page(page, std::move(bytes))) new_pages.push_back(std::move(*pd));
  }
  if (*exists) {
    // Same point, same state: compare what the store holds with what the device reached.
    auto rec = store->get(key);
    if (!rec) return make_error("could not read the checkpoint " + key.to_string() + ": " + rec.error().message);
    auto stored =
        record_to_context(*rec, dev.config(), [&](const checkpoint::PageHash& h) { return store->read_page(h); });
    if (!stored) return make_error("could not read the checkpoint " + key.to_string() + ": " + stored.error().message);
    // A live history's checkpoint (docs/live.md): a forward run back in it that ran through a
    // stepped interval without stopping (its breakpoints deleted) re-executed it, and may reach a
    // later live key in another state. The recording keeps the live state; this one is not written.
    if (rec->live && !runner->holds_device() && !(*stored == ctx)) return true;
    if (!(*stored == ctx))
      return make_error(ErrorCode::Internal,
                        "internal error: the state reached at " + key.to_string() +
                            " differs from the checkpoint stored there (the model is not deterministic here)");
    std::map<uint32_t, checkpoint::PageHash> mem;
    for (const auto& r : rec->memory) mem[r.number] = r.hash;
    if (mem != recorder.pages())
      return make_error(ErrorCode::Internal, "internal error: the memory reached at " + key.to_string() +
                                                 " differs from the checkpoint stored there");
    if (mark) {
      stop_rec.kind = stop_kind(ev.reason);
      if (auto r = store->set_mark(key, stop_rec); !r) return r.error();
    }
    return true;
  }
  checkpoint::CheckpointRecord rec;
  context_to_record(ctx, &rec, &new_pages);
  rec.key = key;
  rec.stop = stop_rec;
  rec.live = runner->departed(launch);
  rec.stepped = runner->stepped();
  ThreadLists l = lists();
  auto conv = [](const std::vector<UnitRange>& in) {
    std::vector<checkpoint::UnitRange> out;
    for (const UnitRange& r : in) out.push_back(checkpoint::UnitRange{r.first, r.count});
    return out;
  };
  rec.threads = checkpoint::ThreadLists{conv(l.complete), conv(l.in_progress), conv(l.not_launched)};
  rec.console.assign(console_log.begin(), console_log.end());
  if (auto r = recorder.put(key, rec, std::move(new_pages), mark ? &stop_rec : nullptr); !r) return r.error();
  runner->checkpoint_written();
  if (recorder.in_memory_only()) return true;  // nothing is stored
  ++st.checkpoints;
  checkpoint::StoreStats ss = store->stats();
  st.bytes_stored = ss.stored_page_bytes + ss.record_bytes;
  return true;
}

// The host's queued operations alone, with a checkpoint's failure handling: false when they could
// not be written (they stay queued for the next write; the session says so once and goes on).
bool Session::Impl::save_ops() {
  if (!recorder.writes_ops()) return false;
  auto r = flush();
  if (r) return true;
  recorder.failed(r.error());
  ++st.ops_failures;
  return false;
}

// An automatic checkpoint while the launch is in flight (after a Budget event): no re-launch.
Result<void> Session::Impl::auto_checkpoint() {
  if (!recorder.writes_checkpoints()) return {};
  const uint64_t now = launch_progress();
  if (recorder.in_memory_only() && now != 0) return {};  // a read-only session keeps launch starts only
  auto exists = store->has(checkpoint::TimeKey{launch, now});
  if (!exists) return exists.error();
  note_reached(now);
  if (*exists) {
    recorder.checkpoint_at(now);
    return {};
  }
  account_pass();
  if (auto r = capture(); !r) return r;
  StopEvent ev;
  ev.reason = StopReason::InstructionCount;
  ev.launch = launch;
  ev.instructions = ctx.kernel_instructions;
  if (auto r = save_checkpoint(ev, false); !r) return r.error();
  return {};
}

void Session::Impl::sample_timeline(uint64_t at, bool end) {
  if (end ? !recorder.samples_on() : !recorder.sample_due(launch, at)) return;
  recorder.add_sample(end ? checkpoint::TimelineSample{launch, at, {}, console_log} : warp_sample(dev, launch, at));
}

ThreadLists Session::Impl::lists() const {
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

}  // namespace vx::engine
