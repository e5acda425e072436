// A plain run's timeline (run_workload with a timeline interval): sampling changes nothing of the
// run, and the rows it draws cover the launch on the recording's axis; races say where their
// accesses ran on it.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "checkpoint/timeline.hpp"
#include "cli/run_command.hpp"
#include "replay/races.hpp"
#include "tests/session_support.hpp"

using namespace vx;
using namespace vx::cli;

namespace {

RunArgs args_for(const std::string& name, uint64_t seed = 1) {
  RunArgs a;
  a.kernel = std::string(VX_EXAMPLES_DIR) + "/" + name + ".elf";
  a.options.seed = seed;
  return a;
}

struct TempDir {
  std::string path;
  TempDir() {
    static int n = 0;
    path = (std::filesystem::temp_directory_path() /
            ("vx-workload-" + std::to_string(::getpid()) + "-" + std::to_string(n++)))
               .string();
    std::filesystem::remove_all(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// The points a launch of `end` instructions is sampled at before its end.
size_t points_before(uint64_t end, uint64_t interval) {
  size_t n = 0;
  for (uint64_t p = checkpoint::next_sample_point(0, interval); p < end; p = checkpoint::next_sample_point(p, interval))
    ++n;
  return n;
}

void check_rows(const replay::LaunchTimeline& t, const DeviceConfig& cfg) {
  bool reaches_end = false;
  for (const replay::WarpRow& row : t.rows) {
    INFO("core " << row.core << " slot " << row.slot);
    CHECK(row.core < cfg.total_cores());
    CHECK(row.slot < cfg.warps);
    REQUIRE_FALSE(row.intervals.empty());
    uint64_t last = 0;
    for (const replay::WarpInterval& iv : row.intervals) {
      CHECK(iv.from >= last);
      CHECK(iv.from < iv.to);
      CHECK(iv.to <= t.end);
      CHECK(iv.lanes <= cfg.threads);
      last = iv.to;
    }
    reaches_end |= last == t.end;
  }
  CHECK(reaches_end);
}

}  // namespace

TEST_CASE("sampling a plain run's timeline changes nothing of the run", "[workload]") {
  for (const auto& [name, seed] :
       {std::pair<const char*, uint64_t>{"sgemm", 1}, {"sgemm", 3}, {"hello", 1}, {"racy", 7}, {"assert", 1}}) {
    const WorkloadRun plain = run_workload(args_for(name, seed), nullptr, nullptr);
    REQUIRE(plain.error.empty() == (plain.end == EventKind::Completed));
    CHECK(plain.timeline.empty());
    for (uint64_t interval : {64u, 1000u, 16384u}) {
      INFO(name << " seed " << seed << " interval " << interval);
      const WorkloadRun sampled = run_workload(args_for(name, seed), nullptr, nullptr, interval);
      CHECK(sampled.status == plain.status);
      CHECK(sampled.end == plain.end);
      CHECK(sampled.exit_code == plain.exit_code);
      CHECK(sampled.exception.pc == plain.exception.pc);
      CHECK(sampled.console == plain.console);
      CHECK(sampled.memory == plain.memory);
      CHECK(sampled.stats.instructions == plain.stats.instructions);
      CHECK(sampled.stats.lane_instructions == plain.stats.lane_instructions);
      CHECK(sampled.stats.units_dispatched == plain.stats.units_dispatched);
      REQUIRE(sampled.timeline.size() == 1);
    }
  }
}

TEST_CASE("a plain run's timeline: every warp slot's rows up to the launch's end, its console at the end",
          "[workload]") {
  const RunArgs args = args_for("hello");
  const WorkloadRun w = run_workload(args, nullptr, nullptr, 16384);
  REQUIRE(w.end == EventKind::Completed);
  REQUIRE(w.timeline.size() == 1);
  const replay::LaunchTimeline& t = w.timeline[0];
  CHECK(t.launch == 1);
  CHECK(t.ended);
  CHECK(t.end == w.stats.instructions);
  CHECK(t.samples == points_before(t.end, 16384) + 1);
  CHECK(t.checkpoints.empty());
  CHECK(t.rows.size() == args.config.total_warps());
  check_rows(t, args.config);
  REQUIRE_FALSE(t.console.empty());
  for (const replay::ConsoleLine& l : t.console) CHECK(l.by == t.end);

  const WorkloadRun g = run_workload(args_for("sgemm"), nullptr, nullptr, 1000);
  REQUIRE(g.timeline.size() == 1);
  CHECK(g.timeline[0].end == g.stats.instructions);
  CHECK(g.timeline[0].samples == points_before(g.stats.instructions, 1000) + 1);
  CHECK(g.timeline[0].rows.size() == args.config.total_warps());
  check_rows(g.timeline[0], args.config);
}

TEST_CASE("a plain run's timeline is the one a recording of the same run keeps", "[workload]") {
  for (const auto& [name, seed] : {std::pair<const char*, uint64_t>{"hello", 1}, {"sgemm", 5}, {"racy", 2}}) {
    INFO(name << " seed " << seed);
    const RunArgs args = args_for(name, seed);
    const WorkloadRun w = run_workload(args, nullptr, nullptr, 1000);
    // Recorded with samples only: no automatic checkpoint adds points of its own.
    const TempDir dir;
    {
      std::unique_ptr<Driver> dev = test::open(args.config, seed);
      engine::SessionOptions so;
      so.store_dir = dir.path;
      so.store_sync = false;
      so.checkpoint_interval = 0;
      so.timeline_interval = 1000;
      auto s = engine::Session::create(*dev, so);
      REQUIRE(s);
      test::launch_kernel((*s)->host(), name);
      auto ev = (*s)->resume();
      REQUIRE(ev);
      REQUIRE(ev->reason == engine::StopReason::Exited);
      REQUIRE((*s)->host_finished());
      REQUIRE((*s)->flush());
      auto rec = replay::read_warp_timeline(*(*s)->store());
      REQUIRE(rec);
      REQUIRE(rec->size() == 1);
      REQUIRE(w.timeline.size() == 1);
      const replay::LaunchTimeline &a = w.timeline[0], &b = (*rec)[0];
      REQUIRE_FALSE(a.rows.empty());
      CHECK(a.samples > 3);
      CHECK(a.end == b.end);
      CHECK(a.ended == b.ended);
      CHECK(a.samples == b.samples - b.checkpoints.size());
      REQUIRE(a.rows.size() == b.rows.size());
      for (size_t i = 0; i < a.rows.size(); ++i) {
        CHECK((a.rows[i].core == b.rows[i].core && a.rows[i].slot == b.rows[i].slot));
        REQUIRE(a.rows[i].intervals.size() == b.rows[i].intervals.size());
        for (size_t j = 0; j < a.rows[i].intervals.size(); ++j) {
          const replay::WarpInterval &x = a.rows[i].intervals[j], &y = b.rows[i].intervals[j];
          CHECK((x.from == y.from && x.to == y.to && x.activity == y.activity && x.lanes == y.lanes && x.cta == y.cta));
        }
      }
      REQUIRE(a.console.size() == b.console.size());
      for (size_t i = 0; i < a.console.size(); ++i)
        CHECK((a.console[i].by == b.console[i].by && a.console[i].text == b.console[i].text));
    }
  }
}

TEST_CASE("a plain run that stops inside its launch: the timeline goes to the stop, not ended", "[workload]") {
  const WorkloadRun w = run_workload(args_for("assert"), nullptr, nullptr, 64);
  REQUIRE(w.end == EventKind::Exception);
  REQUIRE(w.timeline.size() == 1);
  const replay::LaunchTimeline& t = w.timeline[0];
  CHECK_FALSE(t.ended);
  CHECK(t.end == w.stats.instructions);
  REQUIRE_FALSE(t.rows.empty());
  check_rows(t, DeviceConfig{});
  REQUIRE_FALSE(t.console.empty());
  CHECK(t.console.back().by == t.end);
}

TEST_CASE("a race's accesses fall on the run's timeline: its count, core, slot and lane", "[workload]") {
  for (const char* name : {"racy", "cta_race", "lmem_race"}) {
    INFO(name);
    const RunArgs args = args_for(name);
    replay::RaceDetector races(args.config);
    const WorkloadRun w = run_workload(args, &races, nullptr, 64);
    REQUIRE(w.end == EventKind::Completed);
    REQUIRE_FALSE(races.races().empty());
    REQUIRE(w.timeline.size() == 1);
    const replay::LaunchTimeline& t = w.timeline[0];
    for (const replay::Race& r : races.races()) {
      CHECK(r.first.launch_instret <= r.second.launch_instret);
      for (const replay::RaceAccess& a : {r.first, r.second}) {
        CHECK(a.launch_instret >= 1);
        CHECK(a.launch_instret <= t.end);
        CHECK(a.core < args.config.total_cores());
        CHECK(a.slot < args.config.warps);
        CHECK(a.lane == a.thread % args.config.threads);
        // The slot is drawn, and busy around the access (samples every 64 instructions).
        auto row = std::find_if(t.rows.begin(), t.rows.end(),
                                [&](const replay::WarpRow& x) { return x.core == a.core && x.slot == a.slot; });
        REQUIRE(row != t.rows.end());
        CHECK(row->intervals.front().from < a.launch_instret + 64);
        CHECK(row->intervals.back().to + 64 > a.launch_instret);
      }
    }
  }
}
