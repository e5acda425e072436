#include "replay/history.hpp"

#include <algorithm>

namespace vx::replay {

std::array<uint32_t, 3> split3(uint64_t linear, const std::array<uint32_t, 3>& shape) {
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
  std::erase_if(writes_, [&](const WriteRecord& w) { return w.when.launch == launch; });
  std::erase_if(executions_, [&](const ExecutionRecord& e) { return e.when.launch == launch; });
}

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
    writes_.push_back(w);
  }
}

std::vector<const WriteRecord*> HistoryIndex::writes_to(const MemoryPlace& place, engine::TimePoint until) const {
  std::vector<const WriteRecord*> out;
  // Passes run launch after launch, so the list is in time order.
  for (const WriteRecord& w : writes_) {
    if (until < w.when) break;
    if (place.overlaps(w)) out.push_back(&w);
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
  return writes_.size() * sizeof(WriteRecord) + executions_.capacity() * sizeof(ExecutionRecord) +
         launches_.size() * sizeof(LaunchState);
}

}  // namespace vx::replay
