#include "replay/history.hpp"

#include <algorithm>
#include <iterator>

namespace vx::replay {

std::array<uint32_t, 3> split3(uint64_t linear, const std::array<uint32_t, 3>& shape) {
  if (shape[0] == 0 || shape[1] == 0) return {uint32_t(linear), 0, 0};  // not a launch's shape
  return {uint32_t(linear % shape[0]), uint32_t((linear / shape[0]) % shape[1]),
          uint32_t(linear / (uint64_t(shape[0]) * shape[1]))};
}

std::string dims3(const std::array<uint32_t, 3>& d) {
  return "(" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]) + ")";
}

std::string thread_text(const LaunchState& l, uint32_t unit, uint32_t thread) {
  if (l.kind != LaunchKind::Grid) return "instance " + std::to_string(thread);
  return "CTA " + dims3(split3(unit, l.grid)) + " thread " + dims3(split3(thread, l.block));
}

void HistoryIndex::begin_launch(uint32_t launch, const LaunchState& state) {
  launch_ = launch;
  launches_[launch] = state;
  state_ = &launches_[launch];
  // A launch passed again (a second pass over the history) replaces what the first gathered.
  current_ = &writes_[launch];
  current_->clear();
  passes_.erase(launch);
  std::erase_if(executions_, [&](const ExecutionRecord& e) { return e.when.launch == launch; });
}

void HistoryIndex::end_launch(const engine::Session::HistoryPass& pass) { passes_[pass.launch] = pass; }

void HistoryIndex::retired(const Observation& o) {
  if (launch_ == 0) return;
  const bool grid = state_->kind == LaunchKind::Grid;
  if (!pcs_.empty() && pcs_.count(o.pc))
    executions_.push_back(ExecutionRecord{engine::TimePoint{launch_, o.launch_instret}, o.pc, o.core, o.slot, o.tmask,
                                          grid, o.cta_linear, o.cta_rank, o.instance_base});
  if (o.cls != InsnClass::Store && o.cls != InsnClass::Atomic) return;
  const ObservedAccess* last = nullptr;
  for (const ObservedAccess& a : o.accesses) {
    if (!(a.kind & kWatchWrite)) continue;
    // An AMO's access is reported twice (its write and its read): one write.
    if (last && last->lane == a.lane && last->addr == a.addr && last->local == a.local) continue;
    last = &a;
    WriteRecord w;
    w.when = engine::TimePoint{launch_, o.launch_instret};
    w.pc = o.pc;
    w.core = o.core;
    w.slot = o.slot;
    w.lane = a.lane;
    w.who = grid ? LaunchThread{true, o.cta_linear, o.cta_rank * cfg_.threads + a.lane}
                 : LaunchThread{false, 0, o.instance_base + a.lane};
    w.addr = a.addr;
    w.size = a.size;
    w.local = a.local;
    w.atomic = o.cls == InsnClass::Atomic;
    w.before = a.before;
    w.after = a.after;
    current_->push_back(w);
  }
}

namespace {

checkpoint::HistoryWrite stored_form(const WriteRecord& w) {
  return checkpoint::HistoryWrite{
      w.when.instret, w.pc,         w.core, w.slot, w.lane,
      w.who.cta,      w.who.thread, w.addr, w.size, uint8_t((w.local ? 1 : 0) | (w.atomic ? 2 : 0)),
      w.before,       w.after};
}

}  // namespace

checkpoint::HistoryRecord HistoryIndex::head(uint32_t launch) const {
  checkpoint::HistoryRecord r;
  r.launch = launch;
  if (auto p = passes_.find(launch); p != passes_.end()) {
    r.reached = p->second.reached;
    r.until = p->second.until;
    r.ended = p->second.ended;
    r.complete = p->second.complete;
    for (const auto& [from, to] : p->second.stepped) r.stepped.push_back(checkpoint::SteppedIntervalRecord{from, to});
  }
  if (const LaunchState* l = this->launch(launch)) {
    r.grid = l->kind == LaunchKind::Grid;
    r.grid_dims = l->grid;
    r.block_dims = l->block;
  }
  return r;
}

size_t HistoryIndex::write_count(uint32_t launch) const {
  auto it = writes_.find(launch);
  return it == writes_.end() ? 0 : it->second.size();
}

checkpoint::HistoryWriteSource HistoryIndex::source(uint32_t launch) const {
  auto it = writes_.find(launch);
  const std::deque<WriteRecord>* writes = it == writes_.end() ? nullptr : &it->second;
  return [writes](size_t first, std::span<checkpoint::HistoryWrite> out) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = stored_form((*writes)[first + i]);
  };
}

checkpoint::HistoryRecord HistoryIndex::record(uint32_t launch) const {
  checkpoint::HistoryRecord r = head(launch);
  r.writes.resize(write_count(launch));
  if (!r.writes.empty()) source(launch)(0, r.writes);
  return r;
}

checkpoint::HistoryWriteSink HistoryIndex::loader(uint32_t launch, uint64_t until) {
  loading_.clear();
  return [this, launch, until](std::span<const checkpoint::HistoryWrite> part) -> Result<void> {
    // The launch's kind comes with the record's head, after its writes: load_finish sets it.
    for (const checkpoint::HistoryWrite& c : part) {
      if (c.instret > until) break;
      WriteRecord w;
      w.when = engine::TimePoint{launch, c.instret};
      w.pc = c.pc;
      w.core = c.core;
      w.slot = c.slot;
      w.lane = c.lane;
      if (w.core >= cfg_.total_cores() || w.slot >= cfg_.warps || w.lane >= cfg_.threads)
        return make_error("the stored history of launch " + std::to_string(launch) + " names core " +
                          std::to_string(w.core) + " warp " + std::to_string(w.slot) + " lane " +
                          std::to_string(w.lane) + ", not on a " + cfg_.to_string() + " device");
      w.who = LaunchThread{true, c.cta, c.thread};
      w.addr = c.addr;
      w.size = c.size;
      w.local = c.flags & 1;
      w.atomic = c.flags & 2;
      w.before = c.before;
      w.after = c.after;
      loading_.push_back(w);
    }
    return {};
  };
}

void HistoryIndex::load_finish(const checkpoint::HistoryRecord& r, uint64_t until) {
  for (WriteRecord& w : loading_) w.who.grid = r.grid;
  LaunchState l;
  l.kind = r.grid ? LaunchKind::Grid : LaunchKind::Instances;
  l.grid = r.grid_dims;
  l.block = r.block_dims;
  launches_[r.launch] = l;
  writes_[r.launch] = std::move(loading_);
  loading_.clear();
  engine::Session::HistoryPass p{r.launch, r.reached, r.ended, r.complete, {}, r.until};
  if (r.reached >= until) {  // cut: as a pass to `until` ends (complete: it got there)
    p.reached = until;
    p.ended = r.ended && r.reached == until;
    p.complete = true;
    p.until = until;
  }
  for (const auto& s : r.stepped)
    if (s.from < p.reached) p.stepped.emplace_back(s.from, s.to);
  passes_[r.launch] = std::move(p);
}

Result<void> HistoryIndex::load(const checkpoint::HistoryRecord& r, uint64_t until) {
  auto sink = loader(r.launch, until);
  if (auto ok = sink(r.writes); !ok) {
    load_drop();
    return ok;
  }
  load_finish(r, until);
  return {};
}

void HistoryIndex::adopt(HistoryIndex& from, uint32_t launch) {
  if (auto w = from.writes_.find(launch); w != from.writes_.end()) writes_[launch] = std::move(w->second);
  if (auto l = from.launches_.find(launch); l != from.launches_.end()) launches_[launch] = l->second;
  if (auto p = from.passes_.find(launch); p != from.passes_.end()) passes_[launch] = p->second;
  from.writes_.erase(launch);
  from.passes_.erase(launch);
}

uint64_t HistoryIndex::write_count() const {
  uint64_t n = 0;
  for (const auto& [launch, w] : writes_) n += w.size();
  return n;
}

std::vector<const WriteRecord*> HistoryIndex::writes_to(const MemoryPlace& place, engine::TimePoint until) const {
  std::vector<const WriteRecord*> out;
  // Launch after launch, each in time order.
  for (const auto& [launch, writes] : writes_) {
    if (launch > until.launch) break;
    for (const WriteRecord& w : writes) {
      if (until < w.when) break;
      if (place.overlaps(w)) out.push_back(&w);
    }
  }
  return out;
}

std::vector<const WriteRecord*> HistoryIndex::last_writers(const MemoryPlace& place, engine::TimePoint until) const {
  std::vector<const WriteRecord*> out(place.len, nullptr);
  for (const WriteRecord* w : writes_to(place, until))
    for (uint32_t i = 0; i < place.len; ++i)
      if (uint64_t(place.addr) + i >= w->addr && uint64_t(place.addr) + i < uint64_t(w->addr) + w->size) out[i] = w;
  return out;
}

std::string HistoryIndex::thread_name(uint32_t launch_index, const LaunchThread& t) const {
  const LaunchState* l = launch(launch_index);
  if (!l) return t.grid ? "thread " + std::to_string(t.thread) : "instance " + std::to_string(t.thread);
  return thread_text(*l, t.cta, t.thread);
}

const LaunchState* HistoryIndex::launch(uint32_t n) const {
  auto it = launches_.find(n);
  return it == launches_.end() ? nullptr : &it->second;
}

uint64_t HistoryIndex::bytes() const {
  return write_count() * sizeof(WriteRecord) + executions_.capacity() * sizeof(ExecutionRecord) +
         launches_.size() * sizeof(LaunchState);
}

DataflowTracker::DataflowTracker(const DeviceConfig& config, std::vector<WriteRecord> targets) : cfg_(config) {
  for (WriteRecord& t : targets) followed_.push_back(Followed{t, {}});
  results_.resize(followed_.size());
}

namespace {

// The union of the inputs of `from` into `to`, in time order, without repeats, cut at `max`.
void merge_into(std::vector<ValueSource>& to, const std::vector<ValueSource>& from, size_t max, bool* cut) {
  if (from.empty()) return;
  std::vector<ValueSource> out;
  out.reserve(to.size() + from.size());
  std::merge(to.begin(), to.end(), from.begin(), from.end(), std::back_inserter(out),
             [](const ValueSource& a, const ValueSource& b) { return a.key() < b.key(); });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const ValueSource& a, const ValueSource& b) { return a.key() == b.key(); }),
            out.end());
  if (out.size() > max) {
    out.resize(max);
    *cut = true;
  }
  to = std::move(out);
}

}  // namespace

void DataflowTracker::retired(const Observation& o) {
  for (size_t i = 0; i < followed_.size(); ++i) {
    Followed& f = followed_[i];
    Result& res = results_[i];
    const WriteRecord& t = f.target;
    if (res.reached || launch_ != t.when.launch || o.core != t.core || o.slot != t.slot || !((o.tmask >> t.lane) & 1))
      continue;
    // The same thread: the warp slot may hold another CTA's warp earlier in the launch.
    const uint32_t thread = t.who.grid ? o.cta_rank * cfg_.threads + t.lane : o.instance_base + t.lane;
    if (thread != t.who.thread || (t.who.grid && o.cta_linear != t.who.cta)) continue;
    if (t.when.instret < o.launch_instret) continue;
    const Decoded d = decode(o.word);
    if (!d.row) continue;
    const std::string_view args = d.row->args;
    auto reg = [&](char c) -> int {
      switch (c) {
        case 's': return d.rs1;
        case 't': return d.rs2;
        case 'S': return 32 + d.rs1;
        case 'T': return 32 + d.rs2;
        case 'R': return 32 + d.rs3;
        default: return -1;
      }
    };
    const engine::TimePoint when{launch_, o.launch_instret};
    auto read_of = [&](const ObservedAccess& a) {
      ValueSource v;
      v.kind = ValueSource::Kind::Load;
      v.when = when;
      v.pc = o.pc;
      v.addr = a.addr;
      v.size = a.size;
      v.local = a.local;
      v.core = o.core;
      v.value = t.lane < o.values.size() ? o.values[t.lane] : 0;
      return v;
    };
    const ObservedAccess* access = nullptr;
    for (const ObservedAccess& a : o.accesses)
      if (a.lane == t.lane) {
        access = &a;
        break;
      }
    if (o.launch_instret == t.when.instret && o.pc == t.pc) {
      // The write: its value is the data register's (an AMO's also the memory it combined).
      std::vector<ValueSource> in;
      for (char c : args)
        if (c == 't' || c == 'T') {
          merge_into(in, f.regs[size_t(reg(c))], kMaxSources, &res.truncated);
          res.unseen |= f.unseen[size_t(reg(c))];
        }
      if (o.cls == InsnClass::Atomic && access) merge_into(in, {read_of(*access)}, kMaxSources, &res.truncated);
      res.sources = std::move(in);
      res.reached = true;
      continue;
    }
    int rd = -1;
    for (char c : args)
      if (c == 'd' && d.rd != 0)
        rd = d.rd;
      else if (c == 'D')
        rd = 32 + d.rd;
    if (rd < 0) continue;
    std::vector<ValueSource> in;
    bool unseen = false;
    switch (o.cls) {
      case InsnClass::Load:
      case InsnClass::Atomic:
        if (access) in.push_back(read_of(*access));
        break;
      case InsnClass::Csr:
      case InsnClass::Warp: {
        // A CSR read (addr: the CSR) or an exchange with the other lanes (vote, shuffle).
        ValueSource v;
        v.kind = o.cls == InsnClass::Csr ? ValueSource::Kind::Csr : ValueSource::Kind::Lanes;
        v.when = when;
        v.pc = o.pc;
        v.addr = o.cls == InsnClass::Csr ? o.csr : 0;
        v.value = t.lane < o.values.size() ? o.values[t.lane] : 0;
        in.push_back(v);
        break;
      }
      default:
        // Address registers ('o', 'A') locate a load; the value comes from memory, above.
        for (char c : args)
          if (int r = reg(c); r > 0) {
            merge_into(in, f.regs[size_t(r)], kMaxSources, &res.truncated);
            unseen |= f.unseen[size_t(r)];
          }
        break;
    }
    f.regs[size_t(rd)] = std::move(in);
    f.last[size_t(rd)] = {when, o.pc};
    f.unseen[size_t(rd)] = unseen;
  }
}

void DataflowTracker::skipped(uint32_t launch, uint64_t from, uint64_t to) {
  for (size_t i = 0; i < followed_.size(); ++i) {
    Followed& f = followed_[i];
    const WriteRecord& t = f.target;
    if (results_[i].reached || t.when.launch != launch || t.when.instret <= from) continue;
    f.unseen.fill(true);
    f.unseen[0] = false;  // x0 is always 0
    f.interval = {launch, from, to};
  }
}

DataflowTracker::RegisterState DataflowTracker::register_state(size_t k, unsigned r) const {
  const Followed& f = followed_.at(k);
  RegisterState s;
  if (f.last.at(r).first.launch != 0) {
    s.written = f.last[r].first;
    s.pc = f.last[r].second;
  }
  s.sources = &f.regs[r];
  s.unseen = f.unseen.at(r);
  s.interval = f.interval;
  return s;
}

}  // namespace vx::replay
