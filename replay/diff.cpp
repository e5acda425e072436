#include "replay/diff.hpp"

#include <algorithm>
#include <set>

namespace vx::replay {

const char* divergence_kind_name(DivergenceKind k) {
  switch (k) {
    case DivergenceKind::Value: return "value";
    case DivergenceKind::Path: return "path";
    case DivergenceKind::OnlyA: return "only-a";
    case DivergenceKind::OnlyB: return "only-b";
  }
  return "unknown";
}

namespace {

// The observations a diff compares (placement CSRs are left out).
std::vector<const ThreadObs*> compared(const ObservedThread& t) {
  if (std::all_of(t.obs.begin(), t.obs.end(), [](const ThreadObs& o) { return o.compared; })) {
    std::vector<const ThreadObs*> out(t.obs.size());
    for (size_t i = 0; i < t.obs.size(); ++i) out[i] = &t.obs[i];
    return out;
  }
  std::vector<const ThreadObs*> out;
  out.reserve(t.obs.size());
  for (const ThreadObs& o : t.obs)
    if (o.compared) out.push_back(&o);
  return out;
}

// Run A's time of a divergence, for picking the earliest: (launch, instret).
std::pair<uint32_t, uint64_t> time_of(const Divergence& d) {
  const ThreadObs& o = d.a ? *d.a : *d.b;
  return {d.thread.launch, o.launch_instret};
}

}  // namespace

DiffReport diff_runs(const ObservationLog& a, const RunEnd& end_a, const ObservationLog& b, const RunEnd& end_b) {
  DiffReport r;
  r.observations_a = a.observations();
  r.observations_b = b.observations();
  std::set<ThreadKey> seen;
  auto consider = [&](Divergence d) {
    ++r.threads_diverged;
    if (!r.first || time_of(d) < time_of(*r.first)) r.first = std::move(d);
  };
  auto writer_key = [](const ObservationLog& log, const ThreadObs& o) -> std::optional<ThreadKey> {
    if (!o.writer.valid || o.writer.thread >= log.threads().size()) return std::nullopt;
    return log.threads()[o.writer.thread].key;
  };
  for (const ObservedThread& ta : a.threads()) {
    ++r.threads_compared;
    seen.insert(ta.key);
    const int64_t ib = b.find(ta.key);
    std::vector<const ThreadObs*> oa = compared(ta);
    // Run B's sequence: `matched` observations equal to run A's (not kept), then the ones kept.
    std::vector<const ThreadObs*> ob;
    size_t skip = 0;
    if (ib >= 0) {
      ob = compared(b.threads()[size_t(ib)]);
      skip = size_t(b.threads()[size_t(ib)].matched);
    }
    const size_t na = oa.size(), nb = skip + ob.size();
    size_t i = std::min(skip, na);
    while (i < na && i < nb && oa[i]->pc == ob[i - skip]->pc && oa[i]->key == ob[i - skip]->key) ++i;
    if (i == na && i == nb) continue;
    Divergence d;
    d.thread = ta.key;
    d.index = i;
    if (i < na) d.a = *oa[i];
    if (i < nb && i >= skip) d.b = *ob[i - skip];
    d.kind = !d.b                 ? DivergenceKind::OnlyA
             : !d.a               ? DivergenceKind::OnlyB
             : d.a->pc != d.b->pc ? DivergenceKind::Path
                                  : DivergenceKind::Value;
    if (d.a) d.writer_a = writer_key(a, *d.a);
    if (d.b) d.writer_b = writer_key(b, *d.b);
    consider(std::move(d));
  }
  for (const ObservedThread& tb : b.threads()) {
    if (seen.count(tb.key)) continue;
    ++r.threads_compared;
    std::vector<const ThreadObs*> ob = compared(tb);
    if (ob.empty()) continue;
    Divergence d;
    d.kind = DivergenceKind::OnlyB;
    d.thread = tb.key;
    d.b = *ob[0];
    d.writer_b = writer_key(b, *d.b);
    consider(std::move(d));
  }

  r.outcome_differs = end_a.outcome != end_b.outcome;
  std::set<uint32_t> rings;
  for (const auto& [slot, text] : end_a.console) rings.insert(slot);
  for (const auto& [slot, text] : end_b.console) rings.insert(slot);
  for (uint32_t slot : rings) {
    auto ia = end_a.console.find(slot), ib = end_b.console.find(slot);
    const std::string empty;
    if ((ia == end_a.console.end() ? empty : ia->second) != (ib == end_b.console.end() ? empty : ib->second))
      r.console_differs.push_back(slot);
  }

  for (const auto& range_a : end_a.memory) {
    // Named from the pair, not bound: clang 14 cannot capture structured bindings in a lambda.
    const auto addr = range_a.first;
    const auto& bytes_a = range_a.second;
    auto it = std::find_if(end_b.memory.begin(), end_b.memory.end(),
                           [&](const auto& m) { return m.first == addr && m.second.size() == bytes_a.size(); });
    if (it == end_b.memory.end()) continue;
    const std::vector<uint8_t>& bytes_b = it->second;
    size_t i = 0;
    while (i < bytes_a.size()) {
      if (bytes_a[i] == bytes_b[i]) {
        ++i;
        continue;
      }
      // A run of differences, joining gaps shorter than 16 bytes.
      size_t end = i, gap = 0;
      for (size_t j = i; j < bytes_a.size() && gap < 16; ++j) {
        if (bytes_a[j] != bytes_b[j]) {
          end = j + 1;
          gap = 0;
          ++r.memory_bytes_differ;
        } else {
          ++gap;
        }
      }
      if (r.memory.size() < 32) {
        MemoryDifference m;
        m.addr = addr + uint32_t(i);
        m.len = uint32_t(end - i);
        const size_t shown = std::min<size_t>(end - i, 16);
        m.a.assign(bytes_a.begin() + ptrdiff_t(i), bytes_a.begin() + ptrdiff_t(i + shown));
        m.b.assign(bytes_b.begin() + ptrdiff_t(i), bytes_b.begin() + ptrdiff_t(i + shown));
        r.memory.push_back(std::move(m));
      }
      i = end;
    }
  }
  return r;
}

}  // namespace vx::replay
