#include "replay/warp_timeline.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include "checkpoint/timeline.hpp"
#include "engine/recorder.hpp"

namespace vx::replay {

const char* activity_name(WarpActivity a) {
  switch (a) {
    case WarpActivity::Running: return "running";
    case WarpActivity::Diverged: return "diverged";
    case WarpActivity::Barrier: return "barrier";
    case WarpActivity::Spawn: return "spawn";
    case WarpActivity::Ready: return "ready";
  }
  return "?";
}

namespace {

using checkpoint::TimelineSample;
using checkpoint::WarpSample;

// The warps a checkpoint holds, as a sample at its key.
TimelineSample sample_of(const checkpoint::CheckpointRecord& rec) {
  TimelineSample s;
  s.launch = rec.key.launch;
  s.at = rec.key.instret;
  for (const checkpoint::WarpRecord& w : rec.warps)
    if (w.active)
      s.warps.push_back(WarpSample{w.core, w.slot, w.tmask, uint8_t(w.wait),
                                   uint8_t(std::min<size_t>(w.ipdom.size(), 255)), w.instret, w.cta_linear});
  return s;
}

WarpActivity activity(const WarpSample& w, bool ran) {
  if (ran) return w.depth ? WarpActivity::Diverged : WarpActivity::Running;
  switch (w.wait) {
    case 1:
    case 2: return WarpActivity::Barrier;
    case 3: return WarpActivity::Spawn;
    default: return WarpActivity::Ready;
  }
}

void append(WarpRow& row, const WarpInterval& iv) {
  if (!row.intervals.empty()) {
    WarpInterval& last = row.intervals.back();
    if (last.to == iv.from && last.activity == iv.activity && last.lanes == iv.lanes && last.cta == iv.cta) {
      last.to = iv.to;
      return;
    }
  }
  row.intervals.push_back(iv);
}

// The lines printed by each point: the console text each point holds, in time order, split where it
// grew (a point whose text does not extend the previous one's starts over).
std::vector<ConsoleLine> console_lines(const std::map<uint64_t, std::string>& at_points) {
  std::vector<ConsoleLine> out;
  std::string seen;
  // Nothing printed by a point (a launch's first checkpoint) says nothing: skipped.
  uint64_t last = 0;
  for (const auto& [at, text] : at_points)
    if (!text.empty()) last = at;
  for (const auto& [at, text] : at_points) {
    if (text.empty()) continue;
    if (text.compare(0, seen.size(), seen) != 0) seen.clear();
    size_t from = seen.size();
    // Only whole lines until the last point, which may end in a partial one.
    for (size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1)
      out.push_back(ConsoleLine{at, text.substr(from, nl - from)});
    if (at == last && from < text.size()) out.push_back(ConsoleLine{at, text.substr(from)});
    seen = text.substr(0, from);
  }
  return out;
}

LaunchTimeline build(uint32_t launch, const std::map<uint64_t, TimelineSample>& samples, bool ended,
                     std::vector<uint64_t> checkpoints) {
  LaunchTimeline t;
  t.launch = launch;
  t.ended = ended;
  t.samples = samples.size();
  t.checkpoints = std::move(checkpoints);
  t.end = samples.empty() ? 0 : samples.rbegin()->first;
  std::map<std::pair<uint32_t, uint32_t>, WarpRow> rows;
  for (auto it = samples.begin(); it != samples.end(); ++it) {
    auto next = std::next(it);
    if (next == samples.end()) break;
    const TimelineSample& a = it->second;
    const TimelineSample& b = next->second;
    for (const WarpSample& w : a.warps) {
      auto later = std::find_if(b.warps.begin(), b.warps.end(),
                                [&](const WarpSample& x) { return x.core == w.core && x.slot == w.slot; });
      // Gone, or another CTA in the slot: it ran to its end in between.
      const bool same = later != b.warps.end() && later->cta == w.cta && later->instret >= w.instret;
      const bool ran = !same || later->instret > w.instret;
      WarpRow& row = rows[{w.core, w.slot}];
      row.core = w.core;
      row.slot = w.slot;
      append(row, WarpInterval{a.at, b.at, activity(w, ran), uint32_t(std::popcount(w.tmask)), w.cta});
    }
    // A warp that came into an empty slot in between ran its instructions since it came: each is one
    // of the launch's, so it came no later than b.at minus its count (drawn from there, not from b).
    for (const WarpSample& w : b.warps) {
      if (w.instret == 0 || std::any_of(a.warps.begin(), a.warps.end(),
                                        [&](const WarpSample& x) { return x.core == w.core && x.slot == w.slot; }))
        continue;
      const uint64_t from = std::max(a.at, b.at > w.instret ? b.at - w.instret : 0);
      WarpRow& row = rows[{w.core, w.slot}];
      row.core = w.core;
      row.slot = w.slot;
      append(row, WarpInterval{from, b.at, activity(w, true), uint32_t(std::popcount(w.tmask)), w.cta});
    }
  }
  for (auto& [k, row] : rows) t.rows.push_back(std::move(row));
  return t;
}

// What a run knows of its launches' timelines, gathered: samples by launch and point (the first of a
// point kept: samples of one point are equal), the checkpoints, and the console text at points.
struct Gathered {
  std::map<uint32_t, std::map<uint64_t, TimelineSample>> by_launch;
  std::map<uint32_t, std::vector<uint64_t>> checkpoints;
  std::map<uint32_t, bool> ended;
  std::map<uint32_t, std::map<uint64_t, std::string>> console;  // launch -> point -> text printed by then

  void take(std::vector<TimelineSample> samples) {
    for (TimelineSample& s : samples) {
      if (s.warps.empty()) ended[s.launch] = true;
      if (s.warps.empty() || !s.console.empty()) console[s.launch][s.at] = s.console;
      by_launch[s.launch].emplace(s.at, std::move(s));
    }
  }
  void take(const checkpoint::TimeKey& k, const checkpoint::CheckpointRecord& rec) {
    checkpoints[k.launch].push_back(k.instret);
    by_launch[k.launch][k.instret] = sample_of(rec);
    console[k.launch][k.instret].assign(rec.console.begin(), rec.console.end());
  }
  std::vector<LaunchTimeline> timelines() {
    std::vector<LaunchTimeline> out;
    for (const auto& [launch, samples] : by_launch) {
      out.push_back(build(launch, samples, ended[launch], checkpoints[launch]));
      out.back().console = console_lines(console[launch]);
    }
    return out;
  }
};

}  // namespace

std::vector<LaunchTimeline> build_warp_timeline(std::vector<TimelineSample> samples) {
  Gathered g;
  g.take(std::move(samples));
  return g.timelines();
}

Result<std::vector<LaunchTimeline>> read_warp_timeline(checkpoint::Store& store) {
  Gathered g;
  auto keys = store.list();
  if (!keys) return keys.error();
  for (const checkpoint::TimeKey& k : *keys) {
    auto rec = store.get(k);
    if (!rec) return rec.error();
    g.take(k, *rec);
    if (rec->timeline.empty()) continue;
    auto samples = checkpoint::decode_timeline(rec->timeline);
    if (!samples) return with_context("the checkpoint " + k.to_string() + ": ", samples.error());
    g.take(std::move(*samples));
  }
  auto ops = store.ops();
  if (!ops) return ops.error();
  for (size_t i = 0; i < ops->size(); ++i) {
    const checkpoint::HostOpRecord& op = (*ops)[i];
    if (op.kind != checkpoint::HostOpKind::Timeline) continue;
    auto bytes = store.read_page(op.data.hash);
    if (!bytes) return bytes.error();
    auto samples = checkpoint::decode_timeline(*bytes);
    if (!samples) return with_context("host operation " + std::to_string(i) + " (timeline): ", samples.error());
    g.take(std::move(*samples));
  }
  return g.timelines();
}

// --- Sampling a run that records nothing -----------------------------------------------------------

uint64_t TimelineSampler::next(uint32_t launch) const {
  auto it = sampled_.find(launch);
  return checkpoint::next_sample_point(it == sampled_.end() ? 0 : it->second, interval_);
}

uint64_t TimelineSampler::until_sample(uint32_t launch, uint64_t at) const {
  const uint64_t n = next(launch);
  return n == UINT64_MAX ? n : n > at ? n - at : 1;
}

void TimelineSampler::sample(const Driver& dev, uint32_t launch, uint64_t at) {
  if (at >= next(launch)) take(dev, launch, at, {});
}

void TimelineSampler::ended(uint32_t launch, uint64_t at, std::string console) {
  if (!interval_) return;
  sampled_[launch] = at;
  samples_.push_back(TimelineSample{launch, at, {}, std::move(console)});
}

void TimelineSampler::stopped(const Driver& dev, uint32_t launch, uint64_t at, std::string console) {
  if (interval_) take(dev, launch, at, std::move(console));
}

void TimelineSampler::take(const Driver& dev, uint32_t launch, uint64_t at, std::string console) {
  sampled_[launch] = at;
  TimelineSample s = engine::warp_sample(dev, launch, at);
  s.console = std::move(console);
  // No warp would read as the launch's end (a device that cannot say, or between its last warp and its end).
  if (!s.warps.empty()) samples_.push_back(std::move(s));
}

}  // namespace vx::replay
