// The warp timeline from samples alone (build_warp_timeline) and the schedule a run that records
// nothing samples on (TimelineSampler), the recorder's own.
#include <catch2/catch.hpp>
#include <vector>

#include "checkpoint/timeline.hpp"
#include "engine/recorder.hpp"
#include "replay/warp_timeline.hpp"

using namespace vx;
using namespace vx::replay;
using checkpoint::TimelineSample;
using checkpoint::WarpSample;

namespace {

WarpSample warp(uint32_t slot, uint64_t instret, uint32_t tmask = 0xf, uint8_t wait = 0, uint8_t depth = 0,
                uint32_t cta = 0) {
  return WarpSample{0, slot, tmask, wait, depth, instret, cta};
}

}  // namespace

TEST_CASE("samples come at 8, 16, ... up to the interval, then every interval") {
  std::vector<uint64_t> points;
  uint64_t last = 0;
  while (points.size() < 12) {
    last = checkpoint::next_sample_point(last, 16384);
    points.push_back(last);
  }
  CHECK(points == std::vector<uint64_t>{8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384});
  // An interval that is no power of two is reached, then stepped by.
  CHECK(checkpoint::next_sample_point(512, 1000) == 1000);
  CHECK(checkpoint::next_sample_point(1000, 1000) == 2000);
  CHECK(checkpoint::next_sample_point(0, 4) == 4);
  CHECK(checkpoint::next_sample_point(0, 0) == UINT64_MAX);
}

TEST_CASE("a plain run's sampler keeps the recorder's schedule") {
  // A device with no launch: no warp to sample, but the schedule moves on.
  auto dev = open_model_device(DeviceConfig{}, RunOptions{});
  REQUIRE(dev);
  TimelineSampler sampler(1000);
  engine::Recorder rec;
  rec.set_sample_interval(1000);
  uint64_t at = 0;
  for (int i = 0; i < 10; ++i) {
    const uint64_t until = sampler.until_sample(1, at);
    REQUIRE(at + until == rec.next_sample(1));
    CHECK(sampler.until_sample(1, at + until / 2) == until - until / 2);
    at += until;
    sampler.sample(**dev, 1, at);
    rec.add_sample(TimelineSample{1, at, {warp(0, at)}, {}});
    CHECK(sampler.until_sample(2, at) == 1);  // another launch has its own schedule: 8 is past
  }
  CHECK(at == 3000);  // 8, 16, 32, 64, 128, 256, 512, 1000, 2000, 3000
  CHECK(sampler.timeline().empty());
  CHECK(TimelineSampler(0).until_sample(1, 0) == UINT64_MAX);
}

TEST_CASE("warp rows from hand-made samples: activities, merging, the end and its console") {
  std::vector<TimelineSample> s;
  // Launch 1: slot 0 runs, then waits at a barrier; slot 1 runs inside a split, then a new CTA
  // takes its slot; slot 2 is ready and never scheduled, then gone.
  s.push_back({1, 64, {warp(0, 10), warp(1, 12, 0x3, 0, 1, 0), warp(2, 0)}, {}});
  s.push_back({1, 128, {warp(0, 20), warp(1, 20, 0x3, 0, 1, 0), warp(2, 0)}, {}});
  s.push_back({1, 256, {warp(0, 30, 0xf, 1), warp(1, 3, 0xf, 0, 0, 4)}, {}});
  s.push_back({1, 300, {warp(0, 30, 0xf, 1), warp(1, 9, 0xf, 0, 0, 4)}, {}});
  s.push_back({1, 310, {}, "hello\nworld"});  // the end
  // Launch 2, out of order and with a point twice: the first of a point is kept; no end.
  s.push_back({2, 128, {warp(0, 5)}, {}});
  s.push_back({2, 64, {warp(0, 1)}, {}});
  s.push_back({2, 64, {warp(0, 1, 0x1)}, {}});

  std::vector<LaunchTimeline> t = build_warp_timeline(s);
  REQUIRE(t.size() == 2);
  const LaunchTimeline& a = t[0];
  CHECK(a.launch == 1);
  CHECK(a.ended);
  CHECK(a.end == 310);
  CHECK(a.samples == 5);
  CHECK(a.checkpoints.empty());
  REQUIRE(a.rows.size() == 3);

  const WarpRow& r0 = a.rows[0];
  CHECK((r0.core == 0 && r0.slot == 0));
  REQUIRE(r0.intervals.size() == 3);
  CHECK((r0.intervals[0].from == 64 && r0.intervals[0].to == 256));  // two running intervals merged
  CHECK(r0.intervals[0].activity == WarpActivity::Running);
  CHECK(r0.intervals[0].lanes == 4);
  CHECK((r0.intervals[1].from == 256 && r0.intervals[1].to == 300));
  CHECK(r0.intervals[1].activity == WarpActivity::Barrier);
  // At the barrier at the last sample, then the launch ended: it ran to its end in between.
  CHECK((r0.intervals[2].from == 300 && r0.intervals[2].to == 310));
  CHECK(r0.intervals[2].activity == WarpActivity::Running);

  const WarpRow& r1 = a.rows[1];
  REQUIRE(r1.intervals.size() == 2);
  CHECK((r1.intervals[0].from == 64 && r1.intervals[0].to == 256));
  CHECK(r1.intervals[0].activity == WarpActivity::Diverged);
  CHECK(r1.intervals[0].lanes == 2);
  CHECK(r1.intervals[0].cta == 0);
  CHECK((r1.intervals[1].from == 256 && r1.intervals[1].to == 310));
  CHECK(r1.intervals[1].activity == WarpActivity::Running);
  CHECK(r1.intervals[1].cta == 4);

  const WarpRow& r2 = a.rows[2];
  REQUIRE(r2.intervals.size() == 2);
  CHECK((r2.intervals[0].from == 64 && r2.intervals[0].to == 128));
  CHECK(r2.intervals[0].activity == WarpActivity::Ready);
  CHECK((r2.intervals[1].from == 128 && r2.intervals[1].to == 256));  // gone: it ran to its end
  CHECK(r2.intervals[1].activity == WarpActivity::Running);

  REQUIRE(a.console.size() == 2);
  CHECK((a.console[0].by == 310 && a.console[0].text == "hello"));
  CHECK((a.console[1].by == 310 && a.console[1].text == "world"));

  const LaunchTimeline& b = t[1];
  CHECK(b.launch == 2);
  CHECK_FALSE(b.ended);
  CHECK(b.end == 128);
  CHECK(b.samples == 2);
  REQUIRE(b.rows.size() == 1);
  REQUIRE(b.rows[0].intervals.size() == 1);
  CHECK(b.rows[0].intervals[0].lanes == 4);
  CHECK(b.console.empty());
}

TEST_CASE("a run that stopped inside its launch: the last sample has warps and says what was printed") {
  std::vector<TimelineSample> s;
  s.push_back({1, 64, {warp(0, 10)}, {}});
  s.push_back({1, 100, {warp(0, 15)}, "assertion failed\n"});
  std::vector<LaunchTimeline> t = build_warp_timeline(s);
  REQUIRE(t.size() == 1);
  CHECK_FALSE(t[0].ended);
  CHECK(t[0].end == 100);
  REQUIRE(t[0].rows.size() == 1);
  REQUIRE(t[0].rows[0].intervals.size() == 1);
  CHECK(t[0].rows[0].intervals[0].to == 100);
  REQUIRE(t[0].console.size() == 1);
  CHECK((t[0].console[0].by == 100 && t[0].console[0].text == "assertion failed"));
  CHECK(build_warp_timeline({}).empty());
}

TEST_CASE("a warp that came into an empty slot between two samples is drawn from when it must have come") {
  std::vector<TimelineSample> s;
  // Slot 1 is empty at 100; at 200 its warp has retired 30 instructions: it came by 170. Slot 0 ran
  // throughout. A warp with nothing retired yet (slot 2) adds nothing before it was seen.
  s.push_back({1, 100, {warp(0, 10)}, {}});
  s.push_back({1, 200, {warp(0, 60), warp(1, 30, 0x3, 0, 0, 5), warp(2, 0)}, {}});
  s.push_back({1, 210, {}, {}});
  std::vector<LaunchTimeline> t = build_warp_timeline(s);
  REQUIRE(t.size() == 1);
  REQUIRE(t[0].rows.size() == 3);
  CHECK(t[0].rows[2].intervals.front().from == 200);  // slot 2: nothing before its first sample
  const WarpRow& r = t[0].rows[1];
  CHECK(r.slot == 1);
  REQUIRE(r.intervals.size() == 1);  // from 170, then on to the end as any warp: one interval
  CHECK(r.intervals[0].from == 170);
  CHECK(r.intervals[0].to == 210);
  CHECK(r.intervals[0].activity == WarpActivity::Running);
  CHECK(r.intervals[0].lanes == 2);
  CHECK(r.intervals[0].cta == 5);
}
