#include "replay/timeline.hpp"

#include <algorithm>
#include <map>

#include "checkpoint/store.hpp"
#include "device/registers.hpp"

namespace vx::replay {

using engine::StopEvent;
using engine::StopReason;
using engine::TimePoint;
using engine::TraceEntry;
using engine::WarpId;

namespace {

// Calls and returns as device/registers.hpp defines them (t0 millicode included): the forward
// moves (debug/, cli/) use the same definition.
using vx::is_call;
using vx::is_return;

// The latest checkpoint strictly before t, nullopt when there is none.
Result<std::optional<checkpoint::TimeKey>> key_before(checkpoint::Store& store, TimePoint t) {
  if (t.launch == 0 || (t.launch == 1 && t.instret == 0)) return std::optional<checkpoint::TimeKey>();
  checkpoint::TimeKey probe =
      t.instret ? checkpoint::TimeKey{t.launch, t.instret - 1} : checkpoint::TimeKey{t.launch - 1, UINT64_MAX};
  return store.at_or_before(probe);
}

// The checkpoint record's warp in `warp`'s slot when it holds CTA `cta` (else nullptr).
const checkpoint::WarpRecord* warp_in(const checkpoint::CheckpointRecord& rec, WarpId warp, uint32_t cta) {
  for (const auto& w : rec.warps)
    if (w.core == warp.core && w.slot == warp.slot && w.active && w.cta_linear == cta) return &w;
  return nullptr;
}

// The checkpoint before `probe` in the same launch, read; nullopt when there is none.
Result<std::optional<std::pair<TimePoint, checkpoint::CheckpointRecord>>> earlier(checkpoint::Store& store,
                                                                                  TimePoint probe) {
  using Out = std::optional<std::pair<TimePoint, checkpoint::CheckpointRecord>>;
  auto key = key_before(store, probe);
  if (!key) return key.error();
  if (!*key || (*key)->launch != probe.launch) return Out();
  auto rec = store.get(**key);
  if (!rec) return rec.error();
  return Out(std::pair{TimePoint{(*key)->launch, (*key)->instret}, std::move(*rec)});
}

}  // namespace

Timeline::Timeline(engine::Session& session, const engine::Symbols* symbols) : s_(session), sym_(symbols) {}

// A launch's start is written only when the work since the last checkpoint reached the interval
// (docs/store.md, "Launch starts"): a move back inside a launch that lacks it derives it first (the
// recorded host operations run on from the checkpoint before it, writing every start they pass),
// then comes back to now.
Result<void> Timeline::derive_start(TimePoint now) {
  if (now.instret == 0) return {};
  return s_.derive_launch_start(now.launch);
}

Result<StopEvent> Timeline::at_history_start(WarpId warp) { return s_.seek(s_.now(), StopReason::HistoryStart, warp); }

Result<StopEvent> Timeline::reverse_stepi(WarpId warp, uint32_t) {
  if (!s_.stopped()) return make_error("The kernel is not stopped.");
  if (!s_.store()) return make_error("time travel needs the recording (the session runs without --db)");
  const TimePoint now = s_.now();
  if (auto r = derive_start(now); !r) return r.error();
  const WarpState& ws = s_.context().cores.at(warp.core).warps.at(warp.slot);
  if (!ws.active) return make_error("the focus warp has no work");
  const uint32_t cta = ws.cta_linear;
  const uint64_t n = ws.instret;  // the instruction to undo
  if (n == 0) return at_history_start(warp);
  // The latest checkpoint before now where the warp had not retired instruction n yet.
  TimePoint probe = now;
  for (;;) {
    auto prev = earlier(*s_.store(), probe);
    if (!prev) return prev.error();
    if (!*prev) break;
    probe = (*prev)->first;
    const checkpoint::WarpRecord* w = warp_in((*prev)->second, warp, cta);
    if (w && w->instret >= n) continue;
    if (auto r = s_.seek(probe); !r) return r.error();
    auto ev = s_.run_until_warp(warp, cta, n, now.instret);
    if (!ev) return ev.error();
    // Not before now: instruction n was another CTA's (this warp's history starts here).
    if (!*ev || !((*ev)->when() < now)) break;
    return **ev;
  }
  // The warp's CTA started here (or nothing is recorded before): the beginning of its history.
  if (auto r = s_.seek(now); !r) return r.error();
  return at_history_start(warp);
}

Result<std::vector<TraceEntry>> Timeline::trace_back(WarpId warp, uint32_t lane,
                                                     const std::function<bool(const std::vector<TraceEntry>&)>& enough,
                                                     bool* complete) {
  *complete = false;
  const TimePoint now = s_.now();
  if (auto r = derive_start(now); !r) return r.error();
  const WarpState& ws = s_.context().cores.at(warp.core).warps.at(warp.slot);
  const uint32_t cta = ws.cta_linear;
  std::vector<TraceEntry> trace;
  TimePoint probe = now;
  for (;;) {
    auto prev = earlier(*s_.store(), probe);
    if (!prev) return prev.error();
    if (!*prev) break;
    probe = (*prev)->first;
    // Whether the warp's CTA was already in the slot there: if not, the trace holds all its history.
    const bool held = warp_in((*prev)->second, warp, cta) != nullptr;
    if (auto r = s_.seek(probe); !r) return r.error();
    engine::ScanRequest req;
    req.until = now.instret;
    req.trace = true;
    req.trace_warp = warp;
    req.trace_cta = cta;
    req.trace_lane = lane;
    auto res = s_.scan(req);
    if (!res) return res.error();
    trace = std::move(res->trace);
    // The scan may end with the warp about to execute its next instruction right at now: that is the
    // current point, not one before it.
    std::erase_if(trace, [&](const TraceEntry& e) { return e.instret >= now.instret; });
    if (!held) {
      *complete = true;
      break;
    }
    if (enough(trace)) break;
  }
  if (!*complete && probe.launch == now.launch && probe.instret == 0) *complete = true;
  return trace;
}

std::vector<int> Timeline::depths(const std::vector<TraceEntry>& trace, uint32_t) {
  std::vector<int> d(trace.size(), 0);
  std::map<uint32_t, uint32_t> words;
  auto word_at = [&](uint32_t pc) -> uint32_t {
    auto it = words.find(pc);
    if (it != words.end()) return it->second;
    uint32_t w = 0;
    if (auto bytes = s_.read_memory(pc, 4); bytes && bytes->size() == 4)
      w = uint32_t((*bytes)[0]) | uint32_t((*bytes)[1]) << 8 | uint32_t((*bytes)[2]) << 16 |
          uint32_t((*bytes)[3]) << 24;
    words[pc] = w;
    return w;
  };
  int depth = 0;  // of the point after entry k
  for (size_t k = trace.size(); k-- > 0;) {
    uint32_t w = word_at(trace[k].pc);
    // An entry for an interval a live session stepped (span > 1) that started on a call and ended
    // after it stepped over the call: the frame is the same at both ends.
    const bool over_call = trace[k].span > 1 && trace[k].end_pc == trace[k].pc + 4;
    if (is_call(w)) depth -= over_call ? 0 : 1;
    if (is_return(w)) ++depth;
    d[k] = depth;
  }
  return d;
}

Result<StopEvent> Timeline::reverse_nexti(WarpId warp, uint32_t lane) {
  if (!s_.stopped()) return make_error("The kernel is not stopped.");
  const TimePoint now = s_.now();
  const WarpState& ws = s_.context().cores.at(warp.core).warps.at(warp.slot);
  if (!ws.active) return make_error("the focus warp has no work");
  if (ws.instret == 0) return at_history_start(warp);
  const uint32_t pc_now = ws.pc;
  std::vector<int> d;
  bool complete = false;
  auto trace = trace_back(
      warp, lane,
      [&](const std::vector<TraceEntry>& t) {
        d = depths(t, pc_now);
        for (size_t k = t.size(); k-- > 0;)
          if (d[k] <= 0) return true;
        return false;
      },
      &complete);
  if (!trace) return trace.error();
  d = depths(*trace, pc_now);
  for (size_t k = trace->size(); k-- > 0;)
    if (d[k] <= 0) return s_.seek(TimePoint{now.launch, (*trace)[k].instret}, StopReason::Step, warp);
  if (!trace->empty()) return s_.seek(TimePoint{now.launch, trace->front().instret}, StopReason::HistoryStart, warp);
  if (auto r = s_.seek(now); !r) return r.error();
  return at_history_start(warp);
}

Result<StopEvent> Timeline::line_move(WarpId warp, uint32_t lane, bool over_calls) {
  if (!s_.stopped()) return make_error("The kernel is not stopped.");
  if (!sym_ || !sym_->has_debug_info())
    return make_error("The kernel has no line information; use \"reverse-stepi\" and \"reverse-nexti\".");
  const TimePoint now = s_.now();
  const WarpState& ws = s_.context().cores.at(warp.core).warps.at(warp.slot);
  if (!ws.active) return make_error("the focus warp has no work");
  if (ws.instret == 0) return at_history_start(warp);
  const uint32_t pc_now = ws.pc;
  const auto loc0 = sym_->locate(pc_now);
  struct Key {
    std::string file, function;
    uint32_t line = 0;
    bool operator==(const Key&) const = default;
  };
  auto key_of = [&](uint32_t pc) -> std::optional<Key> {
    auto l = sym_->locate(pc);
    if (!l || l->line == 0) return std::nullopt;
    if (over_calls) {
      // Code inlined from another function is part of the line that called it (as `next` does).
      auto f = sym_->function_at(pc);
      if (f && !l->function.empty() && l->function != f->name) return std::nullopt;
    }
    return Key{l->file, l->function, l->line};
  };
  const std::optional<Key> k0 =
      loc0 && loc0->line ? std::optional<Key>(Key{loc0->file, loc0->function, loc0->line}) : std::nullopt;
  // Whether the trace holds the warp's whole history (set once the trace is final).
  bool complete = false;
  // Finds the target index in a trace, or nullopt when the trace does not reach back far enough.
  // The line starts a forward `step` (or `next`) would stop at, in the trace: an entry whose line
  // differs from the previous counted entry's. Counted: the focus lane active, a source line, and in
  // the current frame or a caller (`next`), or any frame (`step`). The target is the start of the
  // line before the one the current point is in.
  auto find = [&](const std::vector<TraceEntry>& t, const std::vector<int>& d) -> std::optional<size_t> {
    std::vector<size_t> starts;
    std::optional<Key> prev;
    for (size_t k = 0; k < t.size(); ++k) {
      if (!(t[k].tmask >> lane & 1)) continue;
      if (over_calls && d[k] > 0) continue;
      auto key = key_of(t[k].pc);
      if (!key) continue;
      // The first counted entry starts a line only when nothing before it is missing.
      if (prev ? !(*key == *prev) : complete) starts.push_back(k);
      prev = key;
    }
    // The current point: in the last counted entry's line (its start is not a target), or at the
    // start of a line of its own.
    const bool in_last = prev && k0 && *prev == *k0;
    const size_t skip = in_last ? 2 : 1;
    if (starts.size() < skip) return std::nullopt;
    return starts[starts.size() - skip];
  };
  std::vector<int> d;
  std::optional<size_t> at;
  bool done = false;
  auto trace = trace_back(
      warp, lane,
      [&](const std::vector<TraceEntry>& t) {
        d = depths(t, pc_now);
        at = find(t, d);
        return at.has_value();
      },
      &done);
  complete = done;
  if (!trace) return trace.error();
  d = depths(*trace, pc_now);
  at = find(*trace, d);
  if (at) return s_.seek(TimePoint{now.launch, (*trace)[*at].instret}, StopReason::Step, warp);
  if (!trace->empty()) return s_.seek(TimePoint{now.launch, trace->front().instret}, StopReason::HistoryStart, warp);
  if (auto r = s_.seek(now); !r) return r.error();
  return at_history_start(warp);
}

Result<StopEvent> Timeline::reverse_step(WarpId warp, uint32_t lane) { return line_move(warp, lane, false); }
Result<StopEvent> Timeline::reverse_next(WarpId warp, uint32_t lane) { return line_move(warp, lane, true); }

Result<StopEvent> Timeline::reverse_finish(WarpId warp, uint32_t lane) {
  if (!s_.stopped()) return make_error("The kernel is not stopped.");
  const TimePoint now = s_.now();
  const WarpState& ws = s_.context().cores.at(warp.core).warps.at(warp.slot);
  if (!ws.active) return make_error("the focus warp has no work");
  if (ws.instret == 0) return at_history_start(warp);
  const uint32_t pc_now = ws.pc;
  std::vector<int> d;
  auto last_call = [&](const std::vector<TraceEntry>& t) -> std::optional<size_t> {
    d = depths(t, pc_now);
    for (size_t k = t.size(); k-- > 0;)
      if (d[k] < 0) return k;
    return std::nullopt;
  };
  bool complete = false;
  auto trace = trace_back(
      warp, lane, [&](const std::vector<TraceEntry>& t) { return last_call(t).has_value(); }, &complete);
  if (!trace) return trace.error();
  if (auto k = last_call(*trace)) return s_.seek(TimePoint{now.launch, (*trace)[*k].instret}, StopReason::Step, warp);
  if (auto r = s_.seek(now); !r) return r.error();
  return make_error("\"reverse-finish\" is not meaningful in the outermost frame.");
}

Result<StopEvent> Timeline::reverse_continue(const HitFilter& accept) {
  if (!s_.stopped() && !s_.frontier(s_.now().launch))
    return make_error("The kernel is not running: \"continue\" starts it.");
  if (!s_.store()) return make_error("time travel needs the recording (the session runs without --db)");
  TimePoint now = s_.now();
  if (!s_.stopped()) {
    // After the workload exited: from the end of the last launch.
    auto end = s_.frontier(now.launch);
    if (!end) return make_error("nothing has run yet");
    now = *end;
    now.instret += 1;
  }
  std::vector<checkpoint::TimeKey> before;
  auto read_keys = [&](TimePoint upto) -> Result<void> {
    auto keys = s_.checkpoint_keys();
    if (!keys) return keys.error();
    before.clear();
    for (const auto& k : *keys)
      if (TimePoint{k.launch, k.instret} < upto) before.push_back(k);
    return {};
  };
  if (auto r = read_keys(now); !r) return r.error();
  if (before.empty()) {
    if (s_.stopped()) return s_.seek(s_.now(), StopReason::HistoryStart);
    return make_error("no recorded history before this point");
  }
  const TimePoint start{before.front().launch, before.front().instret};
  // Interval by interval, backwards: [key, next key or the launch's end, or now).
  TimePoint upper = now;
  while (!before.empty()) {
    const TimePoint from{before.back().launch, before.back().instret};
    // The launches after the key's, up to the interval's end, have no checkpoint of their own (their
    // starts were not written): their starts are derived first (Timeline::derive_start).
    const uint32_t last_launch = upper.instret ? upper.launch : upper.launch - 1;
    if (last_launch > from.launch) {
      // From a stop, the session comes back to it (an error leaves the stop as it was reported).
      if (auto r = s_.derive_launch_start(last_launch); !r) return r.error();
      if (auto r = read_keys(upper); !r) return r.error();
      continue;
    }
    before.pop_back();
    const uint64_t until = upper.launch == from.launch ? upper.instret : UINT64_MAX;
    if (auto r = s_.seek(from); !r) return r.error();
    engine::ScanRequest req;
    req.until = until;
    req.breakpoints = true;
    req.watchpoints = true;
    req.accept = accept;
    auto res = s_.scan(req);
    if (!res) return res.error();
    std::optional<StopEvent> best;
    for (const StopEvent& h : res->hits)
      if (h.when() < now && (!best || best->when() <= h.when())) best = h;
    if (best) {
      if (best->reason == StopReason::Watchpoint)
        return s_.seek(best->when(), StopReason::Watchpoint, std::nullopt, best->watches);
      return s_.seek(best->when(), StopReason::Breakpoint);
    }
    upper = from;
  }
  return s_.seek(start, StopReason::HistoryStart);
}

Result<std::vector<engine::Mark>> Timeline::marks() { return s_.marks(); }

Result<StopEvent> Timeline::goto_mark(size_t number) {
  auto m = s_.marks();
  if (!m) return m.error();
  auto it = std::find_if(m->begin(), m->end(), [&](const engine::Mark& x) { return x.number == number; });
  if (it == m->end())
    return make_error("no checkpoint number " + std::to_string(number) + " (\"info checkpoints\" lists " +
                      std::to_string(m->size()) + ")");
  const engine::Mark& mk = *it;
  StopReason as = mk.reason;
  if (as == StopReason::Watchpoint) as = StopReason::Step;
  return s_.seek(mk.when, as, mk.warp);
}

Result<StopEvent> Timeline::goto_start() {
  if (!s_.store()) return make_error("time travel needs the recording (the session runs without --db)");
  uint32_t launch = s_.now().launch;
  if (launch == 0) {
    // Nothing has run yet (a recording just reopened): the start of the first recorded launch.
    auto keys = s_.checkpoint_keys();
    if (!keys) return keys.error();
    if (keys->empty()) return make_error("The kernel is not running: \"continue\" starts it.");
    launch = keys->front().launch;
  }
  return s_.seek(TimePoint{launch, 0}, StopReason::HistoryStart);
}

Result<StopEvent> Timeline::goto_end() {
  if (!s_.store()) return make_error("time travel needs the recording (the session runs without --db)");
  TimePoint now = s_.now();
  if (now.launch == 0) return make_error("The kernel is not running: \"continue\" starts it.");
  auto end = s_.frontier(now.launch);
  if (!end) return make_error("launch " + std::to_string(now.launch) + " has no recorded history");
  TimePoint t = *end;
  // A launch that ran to its end: its last instruction is the last point a stop can stand at.
  auto last = s_.seek(t);
  if (!last && t.instret > 0) last = s_.seek(TimePoint{t.launch, t.instret - 1});
  return last;
}

Result<StopEvent> Timeline::back_from_end() {
  if (!s_.store()) return make_error("time travel needs the recording (the session runs without --db)");
  const TimePoint now = s_.now();
  if (now.launch == 0) return make_error("The kernel is not running: \"continue\" starts it.");
  auto end = s_.frontier(now.launch);
  if (!end || end->instret == 0) return make_error("launch " + std::to_string(now.launch) + " has no recorded history");
  const TimePoint t{end->launch, end->instret - 1};
  auto ev = s_.seek(t);
  if (!ev || !s_.stopped()) return ev;
  // The warp that retires the launch's last instruction: the last one still holding work (the first
  // of them when several do).
  const DeviceContext& ctx = s_.context();
  for (uint32_t c = 0; c < ctx.cores.size(); ++c)
    for (uint32_t w = 0; w < ctx.cores[c].warps.size(); ++w)
      if (ctx.cores[c].warps[w].active) return s_.seek(t, StopReason::Step, WarpId{c, w});
  return ev;
}

}  // namespace vx::replay
