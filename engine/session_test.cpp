// The re-launch engine against undisturbed runs: every stop's saved state, the final memory,
// console and exit code, and the instruction count must equal those of a run that never stopped.
#include "engine/session.hpp"

#include <rapidcheck.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "checkpoint/store.hpp"
#include "device/encode.hpp"
#include "device/host_runtime.hpp"
#include "engine/recorder.hpp"
#include "tests/property.hpp"
#include "tests/session_support.hpp"

using namespace vx;
using namespace vx::engine;
using namespace vx::test;

namespace {

// What the stops of a session caught warps doing (the hard cases must actually be exercised).
struct Seen {
  bool divergent = false;      // a warp with a non-empty IPDOM stack
  bool at_barrier = false;     // a warp waiting at a barrier
  bool several_warps = false;  // a CTA of several warps in progress
};

// Stops at `stops` evenly spaced instruction counts; checks each stop and the end.
Seen run_with_stops(const DeviceConfig& cfg, uint64_t seed, const std::string& kernel, uint32_t stops) {
  Seen seen;
  Undisturbed u = undisturbed(cfg, seed, kernel);
  Reference ref(cfg, seed, kernel);
  Debugged d(cfg, seed, kernel);
  for (uint32_t i = 1; i <= stops; ++i) {
    uint64_t at = u.instructions * i / (stops + 1);
    if (at == 0) continue;
    StopEvent ev = d.go(d.s->run_to(at));
    REQUIRE(ev.reason == StopReason::InstructionCount);
    REQUIRE(ev.instructions == at);
    check_same_state(d.s->context(), ref.state_at(at));
    CHECK(d.memory(true) == ref.memory(true));
    for (const CoreState& c : d.s->context().cores)
      for (const WarpState& w : c.warps) {
        if (!w.active) continue;
        seen.divergent |= !w.ipdom.empty();
        seen.at_barrier |= w.wait == WarpWait::Barrier;
        seen.several_warps |= w.cta_size > 1;
      }
  }
  StopEvent end = d.go(d.s->resume());
  REQUIRE(end.reason == StopReason::Exited);
  CHECK(end.exit_code == u.exit_code);
  CHECK(d.memory(false) == u.memory);
  CHECK(d.console == u.console);
  SessionStats st = d.s->stats();
  CHECK(st.instructions == u.instructions);
  CHECK(st.launch_instructions == u.instructions);
  CHECK(st.reexecution_ratio() == 1.0);
  CHECK(st.passes == stops + 1);
  if (stops > 0) CHECK(st.restore_instructions > 0);
  return seen;
}

}  // namespace

TEST_CASE("nothing runs twice and nothing changes: 1, 5 and 50 stops in every example kernel", "[session]") {
  for (const char* k : {"vecadd", "sgemm", "reduce", "diverge", "histogram", "racy", "hello"}) {
    for (uint32_t stops : {1u, 5u, 50u}) {
      INFO(k << " with " << stops << " stops");
      run_with_stops(k1x1x4x4, 7, k, stops);
    }
  }
}

TEST_CASE("stops catch warps mid-divergence, at barriers, and in multi-warp CTAs", "[session]") {
  CHECK(run_with_stops(k1x1x4x4, 7, "diverge", 50).divergent);
  Seen reduce = run_with_stops(k1x1x4x4, 7, "reduce", 50);
  CHECK(reduce.at_barrier);
  CHECK(reduce.several_warps);
}

TEST_CASE("an interrupt stops a running kernel, which then goes on", "[session]") {
  RunOptions o;
  o.seed = 1;
  o.watchdog_instructions = 2'000'000'000;
  auto dev = open_model_device(k1x1x4x4, o);
  REQUIRE(dev);
  SessionOptions so;
  so.slice = 10000;
  auto s = Session::create(**dev, so);
  REQUIRE(s);
  launch_kernel((*s)->host(), "hang");
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (*s)->interrupt();
  });
  auto ev = (*s)->resume();
  t.join();
  REQUIRE(ev);
  CHECK(ev->reason == StopReason::Interrupt);
  CHECK(ev->instructions > 0);
  CHECK((*s)->stopped());
  uint64_t first = ev->instructions;
  auto more = (*s)->run_to(first + 1000);
  REQUIRE(more);
  CHECK(more->reason == StopReason::InstructionCount);
  CHECK(more->pass == 2);
}

TEST_CASE("stops on a bigger device: several cores, 8-lane warps", "[session]") {
  for (const char* k : {"sgemm", "reduce", "racy"}) {
    INFO(k);
    run_with_stops(k1x2x8x8, 3, k, 5);
  }
}

TEST_CASE("a breakpoint stops every warp that reaches it, and continuing gives the undisturbed result", "[session]") {
  const std::string kernel = "reduce";
  Undisturbed u = undisturbed(k1x1x4x4, 1, kernel);
  Debugged d(k1x1x4x4, 1, kernel);
  auto addr = d.img.launch ? std::optional<uint32_t>(d.img.launch->entry) : std::nullopt;
  REQUIRE(addr);
  auto id = d.s->add_breakpoint(*addr);
  REQUIRE(id);
  Reference ref(k1x1x4x4, 1, kernel);
  uint32_t hits = 0;
  for (;;) {
    StopEvent ev = d.go(d.s->resume());
    if (ev.reason == StopReason::Exited) {
      CHECK(ev.exit_code == u.exit_code);
      break;
    }
    REQUIRE(ev.reason == StopReason::Breakpoint);
    REQUIRE(ev.breakpoints == std::vector<int>{*id});
    REQUIRE(!ev.hits.empty());
    for (const WarpHit& h : ev.hits) CHECK(h.pc == *addr);
    ++hits;
    // The state is the undisturbed run's at the same count, memory as the kernel sees it (without the EBREAK).
    check_same_state(d.s->context(), ref.state_at(ev.instructions));
    CHECK(d.memory(false) == ref.memory(false));
  }
  CHECK(hits > 0);
  CHECK(d.memory(false) == u.memory);
  CHECK(d.console == u.console);
  CHECK(d.s->stats().instructions == u.instructions);
  CHECK(d.s->breakpoints().at(0).hits >= hits);
}

TEST_CASE("stepping a warp one instruction at a time follows the undisturbed run", "[session]") {
  const std::string kernel = "diverge";
  Undisturbed u = undisturbed(k1x1x4x4, 5, kernel);
  Debugged d(k1x1x4x4, 5, kernel);
  Reference ref(k1x1x4x4, 5, kernel);
  StopEvent ev = d.go(d.s->run_to(u.instructions / 3));
  REQUIRE(ev.reason == StopReason::InstructionCount);
  WarpId focus{};
  bool found = false;
  for (uint32_t w = 0; w < 4 && !found; ++w)
    if (d.s->context().cores[0].warps[w].active) {
      focus = WarpId{0, w};
      found = true;
    }
  REQUIRE(found);
  uint64_t instret = d.s->context().cores[0].warps[focus.slot].instret;
  for (int i = 0; i < 30; ++i) {
    ev = d.go(d.s->step(focus, 0));
    if (ev.reason != StopReason::Step) break;
    const WarpState& ws = d.s->context().cores[0].warps[focus.slot];
    if (!ws.active) break;
    CHECK(ws.instret == instret + 1);
    instret = ws.instret;
    check_same_state(d.s->context(), ref.state_at(ev.instructions));
  }
  while (ev.reason != StopReason::Exited) ev = d.go(d.s->resume());
  CHECK(d.memory(false) == u.memory);
  CHECK(d.s->stats().instructions == u.instructions);
}

TEST_CASE("the device is free between passes: another workload runs while the session is stopped", "[session]") {
  const std::string kernel = "sgemm";
  Undisturbed u = undisturbed(k1x1x4x4, 2, kernel);
  Debugged d(k1x1x4x4, 2, kernel);
  StopEvent ev = d.go(d.s->run_to(u.instructions / 2));
  REQUIRE(ev.reason == StopReason::InstructionCount);
  // An unrelated kernel, straight on the device: each thread stores 7 at buf[hart].
  using namespace vx::test;
  Driver& dev = *d.dev;
  auto buf = dev.mem_alloc(4096);
  REQUIRE(buf);
  std::vector<uint32_t> kernel_words = {rv::lui(a1, *buf >> 12),    rv::csrr(t1, 0xF14), rv::addi(t2, zero, 7),
                                        i_type(2, t1, 1, t1, 0x13),  // slli t1, t1, 2
                                        rv::add(a1, a1, t1),        rv::sw(t2, a1, 0),   rv::ret()};
  auto words = windowed_image(kernel_words);
  auto code = dev.mem_alloc(words.size() * 4);
  REQUIRE(code);
  REQUIRE(dev.copy_to_device(*code, {reinterpret_cast<const uint8_t*>(words.data()), words.size() * 4}));
  HostRuntime other(dev);
  GridLaunch g;
  g.start_pc = *code;
  g.entry_pc = *code + 0x100;
  g.block = {4, 1, 1};
  REQUIRE(other.launch_grid(g));
  DeviceEvent e = dev.wait();
  REQUIRE(e.kind == EventKind::Completed);
  std::vector<uint8_t> out(16);
  REQUIRE(dev.copy_from_device(*buf, out));
  for (int i = 0; i < 4; ++i) CHECK(out[size_t(i) * 4] == 7);
  // The session goes on as if nothing happened.
  ev = d.go(d.s->resume());
  REQUIRE(ev.reason == StopReason::Exited);
  CHECK(ev.exit_code == u.exit_code);
  CHECK(d.memory(false) == u.memory);
  CHECK(d.console == u.console);
}

TEST_CASE("the same checkpoint leads to the same future", "[session]") {
  const std::string kernel = "racy";
  auto dir = std::filesystem::temp_directory_path() / ("vx-session-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  SessionOptions so;
  so.store_dir = dir.string();
  so.store_sync = false;
  Undisturbed u = undisturbed(k1x1x4x4, 9, kernel);
  uint64_t a = u.instructions / 4, b = u.instructions / 2;
  // A stop writes its checkpoint when a sixteenth of the interval ran since the last one.
  so.checkpoint_interval = Recorder::kStopsPerInterval * a;
  Debugged d(k1x1x4x4, 9, kernel, so);
  StopEvent first = d.go(d.s->run_to(a));
  REQUIRE(first.reason == StopReason::InstructionCount);
  // The stop is a checkpoint (beside the automatic one at the launch's start), and a mark.
  const checkpoint::TimeKey key{first.launch, first.instructions};
  REQUIRE(d.s->store()->has(key).value());
  auto marks = d.s->marks();
  REQUIRE(marks);
  REQUIRE(marks->size() == 1);
  CHECK(marks->front().when == TimePoint{key.launch, key.instret});
  REQUIRE(d.go(d.s->run_to(b)).reason == StopReason::InstructionCount);
  DeviceContext once = d.s->context();
  auto mem_once = d.memory(true);
  for (int round = 0; round < 2; ++round) {
    StopEvent back = d.go(d.s->goto_checkpoint(key));
    CHECK(back.instructions == a);
    REQUIRE(d.go(d.s->run_to(b)).reason == StopReason::InstructionCount);
    check_same_state(d.s->context(), once);
    CHECK(d.memory(true) == mem_once);
  }
  StopEvent end = d.go(d.s->resume());
  REQUIRE(end.reason == StopReason::Exited);
  CHECK(d.memory(false) == u.memory);
  // Going back re-executed a..b twice more: the ratio says so.
  CHECK(d.s->stats().reexecution_ratio() > 1.0);
  auto all = d.s->store()->list();
  REQUIRE(all);
  for (const auto& k : *all) CHECK(d.s->store()->verify(k));
  std::filesystem::remove_all(dir);
}

// The first byte at which two memory images differ (offset from the I/O region's start), -1 if none:
// a failure names it instead of printing both images.
static long first_difference(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  if (got.size() != want.size()) return long(std::min(got.size(), want.size()));
  auto d = std::mismatch(got.begin(), got.end(), want.begin());
  return d.first == got.end() ? -1 : long(d.first - got.begin());
}

TEST_CASE("a stop near the last checkpoint is recorded by its mark alone, and a move to it reaches its state",
          "[session][timetravel]") {
  const std::string kernel = GENERATE(as<std::string>{}, "sgemm", "histogram", "saxpy", "reduce");
  INFO(kernel);
  auto dir = std::filesystem::temp_directory_path() / ("vx-session-marks-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  SessionOptions so;
  so.store_dir = dir.string();
  so.store_sync = false;
  so.checkpoint_interval = Recorder::kStopsPerInterval * 100;  // a stop's checkpoint 100 instructions on
  const std::vector<uint64_t> stops = {50, 120, 150, 199, 260, 1650, 1690};
  std::map<uint64_t, std::pair<DeviceContext, std::vector<uint8_t>>> want;
  {
    Reference ref(k1x1x4x4, 5, kernel);
    for (uint64_t at : stops) {
      DeviceContext c = ref.state_at(at);
      want.emplace(at, std::make_pair(std::move(c), ref.memory(true)));
    }
  }
  {
    Debugged d(k1x1x4x4, 5, kernel, so);
    for (uint64_t at : stops) REQUIRE(d.go(d.s->run_to(at)).instructions == at);
    // 50 (the launch's start 50 back), 150 and 199 (120 is 30 and 79 back), 1650 and 1690 (the
    // automatic checkpoint at 1600 is 50 and 90 back): marks alone; 120 and 260 write a checkpoint.
    const std::set<uint64_t> checkpointed = {120, 260};
    for (uint64_t at : stops)
      CHECK(d.s->store()->has(checkpoint::TimeKey{1, at}).value() == (checkpointed.count(at) > 0));
    CHECK(d.s->store()->has(checkpoint::TimeKey{1, 1600}).value());
    CHECK(d.s->stats().marks_only == 5);
    auto marks = d.s->marks();
    REQUIRE(marks);
    REQUIRE(marks->size() == stops.size());
    // Every stop, from later to earlier and back: the state a run that never stopped has there.
    for (int round = 0; round < 2; ++round)
      for (size_t i = 0; i < stops.size(); ++i) {
        const uint64_t at = stops[round == 0 ? stops.size() - 1 - i : i];
        StopEvent ev = d.go(d.s->seek(TimePoint{1, at}));
        REQUIRE(ev.instructions == at);
        check_same_state(d.s->context(), want.at(at).first);
        CHECK(first_difference(d.memory(true), want.at(at).second) == -1);
      }
    // The memory written between checkpoints is taken by the next one: the end is the undisturbed
    // one, and so is every checkpoint written on the way there.
    StopEvent end = d.go(d.s->resume());
    REQUIRE(end.reason == StopReason::Exited);
    CHECK(first_difference(d.memory(false), undisturbed(k1x1x4x4, 5, kernel).memory) == -1);
    auto all = d.s->store()->list();
    REQUIRE(all);
    for (const auto& k : *all) CHECK(d.s->store()->verify(k));
  }
  {
    // Automatic checkpoints off: every stop writes its checkpoint (nothing to derive it from nearby).
    std::filesystem::remove_all(dir);
    so.checkpoint_interval = 0;
    Debugged d(k1x1x4x4, 5, kernel, so);
    for (uint64_t at : {50, 60}) {
      REQUIRE(d.go(d.s->run_to(at)).instructions == at);
      CHECK(d.s->store()->has(checkpoint::TimeKey{1, at}).value());
    }
    CHECK(d.s->stats().marks_only == 0);
  }
  std::filesystem::remove_all(dir);
}

// The I/O region's first page holds the console indices (and the first rings), and its first bytes
// (below memmap::kIoBase) are no device memory: checkpoints once left that page out, so a seek back
// after the kernel printed kept the later indices (and the next re-launch put them back).
TEST_CASE("a seek back restores the console indices in the I/O region's first page", "[session][timetravel]") {
  const std::string kernel = "reduce";  // prints its result at the end, into slot 0's ring
  auto dir = std::filesystem::temp_directory_path() / ("vx-session-io-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  SessionOptions so;
  so.store_dir = dir.string();
  so.store_sync = false;
  so.checkpoint_interval = 855;
  Debugged d(k1x2x8x8, 8, kernel, so);
  Reference ref(k1x2x8x8, 8, kernel);
  REQUIRE(d.go(d.s->run_to(870)).reason == StopReason::InstructionCount);
  REQUIRE(d.go(d.s->resume()).reason == StopReason::Exited);
  // The test covers a page 0 the kernel wrote after the checkpoint: some slot's write index moved
  // (the slot of whichever thread finished last, which the schedule decides).
  auto written = d.s->read_memory(memmap::kConsoleWrIdx, 4 * memmap::kConsoleSlots);
  REQUIRE(written);
  REQUIRE(std::any_of(written->begin(), written->end(), [](uint8_t b) { return b != 0; }));
  StopEvent back = d.go(d.s->seek(TimePoint{1, 2223}));
  REQUIRE(back.instructions == 2223);
  check_same_state(d.s->context(), ref.state_at(2223));
  CHECK(first_difference(d.memory(true), ref.memory(true)) == -1);
  // And the future from there is the undisturbed one again.
  REQUIRE(d.go(d.s->resume()).reason == StopReason::Exited);
  CHECK(first_difference(d.memory(false), undisturbed(k1x2x8x8, 8, kernel).memory) == -1);
  std::filesystem::remove_all(dir);
}

// A device run split into budgets (automatic checkpoints, steps, triggers) must leave the state one
// long run leaves. A run that returned inside core 0's turn used to run the round boundary again
// when it went on: an extra console drain (and KMU dispatch) at a count the undisturbed run has none.
TEST_CASE("a run split into budgets drains the console where one long run does", "[session]") {
  const std::string kernel = "hello*40";  // prints all along its run
  for (uint64_t point = 10000; point <= 60000; point += 10000) {
    Reference split(k1x2x8x8, 101, kernel), whole(k1x2x8x8, 101, kernel);
    for (uint64_t at = 0; at < point;) split.state_at(at = std::min(point, at + 1368));
    INFO("at instruction " << point);
    check_same_state(split.state_at(point), whole.state_at(point));
    REQUIRE(first_difference(split.memory(true), whole.memory(true)) == -1);
    CHECK(split.console == whole.console);
  }
}

TEST_CASE("faults, assertions and the watchdog stop the session with the state inspectable", "[session]") {
  SECTION("fault") {
    Debugged d(k1x1x4x4, 1, "fault");
    StopEvent ev = d.go(d.s->resume());
    REQUIRE(ev.reason == StopReason::Exception);
    CHECK(ev.exception.cause != Cause::None);
    REQUIRE(!ev.hits.empty());
    CHECK(d.s->context().cores[0].warps[ev.hits[0].warp.slot].pc == ev.exception.pc);
    // Continuing is refused; the fault stays a stop whose state can be read.
    auto after = d.s->resume();
    REQUIRE_FALSE(after);
    CHECK_THAT(after.error().message, Catch::Contains("cannot go on"));
    CHECK(d.s->stopped());
    CHECK(d.s->last_stop().reason == StopReason::Exception);
    CHECK(d.s->context().cores[0].warps[ev.hits[0].warp.slot].pc == ev.exception.pc);
  }
  SECTION("assertion") {
    Debugged d(k1x1x4x4, 1, "assert");
    StopEvent ev = d.go(d.s->resume());
    REQUIRE(ev.reason == StopReason::Assertion);
    while (ev.reason == StopReason::Assertion) ev = d.go(d.s->resume());
    CHECK(ev.reason == StopReason::Exited);
  }
  SECTION("watchdog across passes") {
    RunOptions o;
    o.seed = 1;
    o.watchdog_instructions = 200000;
    auto dev = open_model_device(k1x1x4x4, o);
    REQUIRE(dev);
    auto s = Session::create(**dev, {});
    REQUIRE(s);
    launch_kernel((*s)->host(), "hang");
    // Stops every 50000 instructions: the watchdog still counts the whole launch.
    uint64_t at = 0;
    for (;;) {
      at += 50000;
      auto ev = (*s)->run_to(at);
      REQUIRE(ev);
      if (ev->reason == StopReason::Watchdog) {
        CHECK(ev->instructions == 200000);
        break;
      }
      REQUIRE(ev->reason == StopReason::InstructionCount);
      REQUIRE(at <= 200000);
    }
  }
}

TEST_CASE("the patent's variant re-launches only the warps in progress first and ends the same", "[session]") {
  SessionOptions so;
  so.in_progress_only = true;
  for (const char* k : {"sgemm", "reduce"}) {
    INFO(k);
    Undisturbed u = undisturbed(k1x1x4x4, 4, k);
    Debugged d(k1x1x4x4, 4, k, so);
    for (int i = 1; i <= 3; ++i)
      REQUIRE(d.go(d.s->run_to(u.instructions * i / 4)).reason == StopReason::InstructionCount);
    StopEvent end = d.go(d.s->resume());
    REQUIRE(end.reason == StopReason::Exited);
    // Not the same schedule, so only a kernel's own check says the result is right.
    CHECK(end.exit_code == 0);
  }
}

TEST_CASE("property: stopping never changes the result", "[session][property]") {
  const std::vector<std::string> kernels = {"vecadd", "sgemm", "reduce", "diverge", "histogram", "racy", "hello"};
  const std::vector<DeviceConfig> configs = {k1x1x4x4, k1x2x8x8, DeviceConfig{2, 1, 4, 4, 16 * 1024}};
  const uint64_t kSeed = 20261122;
  auto property = [&] {
    const std::string kernel = *rc::gen::elementOf(kernels);
    const DeviceConfig dc = *rc::gen::elementOf(configs);
    const uint64_t seed = *rc::gen::inRange<uint64_t>(0, 1000);
    const Undisturbed u = undisturbed(dc, seed, kernel);
    const auto fractions = *rc::gen::container<std::vector<uint32_t>>(rc::gen::inRange<uint32_t>(1, 1000));
    const int steps = *rc::gen::inRange(0, 4);
    Debugged d(dc, seed, kernel);
    Reference ref(dc, seed, kernel);
    std::vector<uint64_t> points;
    for (uint32_t f : fractions) points.push_back(u.instructions * f / 1000);
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    uint64_t now = 0;
    for (uint64_t p : points) {
      if (p <= now) continue;
      StopEvent ev = d.go(d.s->run_to(p));
      RC_ASSERT(ev.reason == StopReason::InstructionCount);
      now = ev.instructions;
      RC_ASSERT(d.s->context() == ref.state_at(now));
      for (int i = 0; i < steps; ++i) {
        std::optional<WarpId> focus;
        for (uint32_t c = 0; c < dc.total_cores() && !focus; ++c)
          for (uint32_t w = 0; w < dc.warps && !focus; ++w)
            if (d.s->context().cores[c].warps[w].active) focus = WarpId{c, w};
        if (!focus) break;
        ev = d.go(d.s->step(*focus, 0));
        if (ev.reason != StopReason::Step) break;
        now = ev.instructions;
        RC_ASSERT(d.s->context() == ref.state_at(now));
      }
      if (ev.reason == StopReason::Exited) break;
    }
    StopEvent end = d.s->stopped() || now == 0 ? d.go(d.s->resume()) : d.s->last_stop();
    RC_ASSERT(end.reason == StopReason::Exited);
    RC_ASSERT(end.exit_code == u.exit_code);
    RC_ASSERT(d.memory(false) == u.memory);
    RC_ASSERT(d.console == u.console);
    RC_ASSERT(d.s->stats().instructions == u.instructions);
  };
  vx::test::check_property("stopping never changes the result", kSeed, 12, 40, property);
}

TEST_CASE("time travel across launches: the host's operations between them are applied again",
          "[session][timetravel]") {
  // A workload of two launches of sgemm with a host copy between them, as a host program runs it.
  auto dir = std::filesystem::temp_directory_path() / ("vx-session-tt-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::vector<uint8_t> marker(64, 0x5a);
  auto two_launches = [&](Driver& d, bool wait_between) -> std::pair<KernelImage, uint32_t> {
    auto image = load_kernel_image(kExamples + "/sgemm.elf");
    REQUIRE(image);
    HostRuntime rt(d);
    auto launch = resolve_grid_launch(*image, d.config(), {});
    REQUIRE(launch);
    REQUIRE(rt.load_image(*image));
    auto scratch = d.mem_alloc(4096);
    REQUIRE(scratch);
    REQUIRE(rt.launch_grid(*launch));
    if (wait_between) {
      DeviceEvent e = d.wait();
      REQUIRE(e.kind == EventKind::Completed);
    }
    REQUIRE(d.copy_to_device(*scratch, marker));
    REQUIRE(rt.launch_grid(*launch));
    return {*image, *scratch};
  };
  // The undisturbed run.
  auto ref = open(k1x1x4x4, 4);
  auto [img, scratch] = two_launches(*ref, true);
  REQUIRE(ref->wait().kind == EventKind::Completed);
  const uint64_t per_launch = ref->stats().instructions / 2;
  std::vector<uint8_t> want_scratch(64);
  REQUIRE(ref->copy_from_device(scratch, want_scratch));
  auto want = memory_of(
      [&](uint32_t a, uint32_t n) {
        std::vector<uint8_t> b(n);
        REQUIRE(ref->copy_from_device(a, b));
        return b;
      },
      img, ref->config(), false);

  auto dev = open(k1x1x4x4, 4);
  SessionOptions so;
  so.store_dir = dir.string();
  so.store_sync = false;
  so.checkpoint_interval = 4096;
  auto made = Session::create(*dev, so);
  REQUIRE(made);
  Session& s = **made;
  // The host waits for launch 1 (the session runs it), then copies and launches again.
  auto [img2, scratch2] = two_launches(s.host(), true);
  REQUIRE(scratch2 == scratch);
  auto stop = s.run_to(per_launch / 2);
  REQUIRE(stop);
  REQUIRE(stop->launch == 2);
  // Back into launch 1, then forward again through the copy and all of launch 2.
  auto back = s.seek(TimePoint{1, per_launch / 3});
  REQUIRE(back);
  CHECK(back->launch == 1);
  CHECK(back->instructions == per_launch / 3);
  CHECK(s.now() == TimePoint{1, per_launch / 3});
  auto end = s.resume();
  REQUIRE(end);
  REQUIRE(end->reason == StopReason::Exited);
  auto got = memory_of(
      [&](uint32_t a, uint32_t n) {
        auto b = s.read_memory(a, n);
        REQUIRE(b);
        return *b;
      },
      img, dev->config(), false);
  CHECK(got == want);
  auto got_scratch = s.read_memory(scratch, 64);
  REQUIRE(got_scratch);
  CHECK(*got_scratch == want_scratch);
  // Every key is in time order, once, and every point has a checkpoint at most one interval of work
  // before it, in its launch or in launch 1 (launch 2's start is written only when the work since
  // the last checkpoint reached the interval).
  auto keys = s.store()->list();
  REQUIRE(keys);
  CHECK(std::is_sorted(keys->begin(), keys->end()));
  CHECK(std::adjacent_find(keys->begin(), keys->end()) == keys->end());
  REQUIRE(per_launch > so.checkpoint_interval);
  REQUIRE(keys->front() == (checkpoint::TimeKey{1, 0}));
  auto work_to = [&](const checkpoint::TimeKey& k) { return (k.launch - 1) * per_launch + k.instret; };
  for (size_t i = 1; i < keys->size(); ++i) {
    INFO("checkpoint " << (*keys)[i].to_string() << " after " << (*keys)[i - 1].to_string());
    CHECK(work_to((*keys)[i]) - work_to((*keys)[i - 1]) <= so.checkpoint_interval);
  }
  CHECK(2 * per_launch - work_to(keys->back()) <= so.checkpoint_interval);
  // A start that was not written is derived: the seek writes it, with the state of the launch's start.
  const bool had_start = std::find(keys->begin(), keys->end(), checkpoint::TimeKey{2, 0}) != keys->end();
  auto start2 = s.seek(TimePoint{2, 0});
  REQUIRE(start2);
  CHECK(s.now() == TimePoint{2, 0});
  auto has = s.store()->has(checkpoint::TimeKey{2, 0});
  REQUIRE(has);
  CHECK(*has);
  auto start_scratch = s.read_memory(scratch, 64);
  REQUIRE(start_scratch);
  CHECK(*start_scratch == want_scratch);  // the host's copy between the launches is applied
  CHECK_FALSE(had_start);                 // launch 1 ends less than an interval after its last checkpoint
  std::filesystem::remove_all(dir);
}

TEST_CASE("a breakpoint filter that drops hits costs no stop, and the kept hit is the undisturbed state", "[session]") {
  const std::string kernel = "reduce";
  Undisturbed u = undisturbed(k1x1x4x4, 1, kernel);
  Debugged d(k1x1x4x4, 1, kernel);
  REQUIRE(d.img.launch);
  REQUIRE(d.s->add_breakpoint(d.img.launch->entry));
  // Keep only the third hit; the filter sees the hit's state in context().
  uint32_t seen = 0;
  std::vector<uint64_t> at;
  d.s->set_breakpoint_filter([&](const StopEvent& hit) {
    CHECK(d.s->evaluating_hit());
    CHECK(d.s->context().kernel_instructions == hit.instructions);
    at.push_back(hit.instructions);
    return ++seen == 3;
  });
  StopEvent ev = d.go(d.s->resume());
  REQUIRE(ev.reason == StopReason::Breakpoint);
  REQUIRE(seen == 3);
  CHECK(ev.instructions == at.back());
  Reference ref(k1x1x4x4, 1, kernel);
  check_same_state(d.s->context(), ref.state_at(ev.instructions));
  CHECK(d.s->stats().filtered_hits == 2);
  CHECK(d.s->stats().passes == 1);
  StopEvent end = d.go(d.s->resume());
  REQUIRE(end.reason == StopReason::Exited);
  CHECK(d.memory(false) == u.memory);
  CHECK(d.console == u.console);
  CHECK(d.s->stats().instructions == u.instructions);
}

TEST_CASE("a watchpoint hit the filter drops costs no stop either", "[session]") {
  const std::string kernel = "histogram";
  Undisturbed u = undisturbed(k1x1x4x4, 1, kernel);
  Debugged d(k1x1x4x4, 1, kernel);
  // Local memory word 0 of core 0: every CTA zeroes and counts its bin 0 there.
  WatchSpec spec;
  spec.addr = memmap::kLocalMemBase;
  spec.kind = kWatchRead | kWatchWrite;
  spec.local = true;
  spec.core = 0;
  REQUIRE(d.s->add_watchpoint(spec));
  uint32_t seen = 0;
  std::vector<uint64_t> at;
  d.s->set_breakpoint_filter([&](const StopEvent& hit) {
    CHECK(hit.reason == StopReason::Watchpoint);
    CHECK(d.s->evaluating_hit());
    CHECK(d.s->context().kernel_instructions == hit.instructions);
    CHECK(hit.watches.size() == 1);
    at.push_back(hit.instructions);
    return ++seen == 5;
  });
  StopEvent ev = d.go(d.s->resume());
  REQUIRE(ev.reason == StopReason::Watchpoint);
  REQUIRE(seen == 5);
  CHECK(ev.instructions == at.back());
  Reference ref(k1x1x4x4, 1, kernel);
  check_same_state(d.s->context(), ref.state_at(ev.instructions));
  CHECK(d.s->stats().filtered_hits == 4);
  CHECK(d.s->stats().passes == 1);
  d.s->set_breakpoint_filter([](const StopEvent&) { return false; });
  StopEvent end = d.go(d.s->resume());
  REQUIRE(end.reason == StopReason::Exited);
  CHECK(d.s->stats().passes == 2);
  CHECK(d.memory(false) == u.memory);
  CHECK(d.console == u.console);
}

TEST_CASE("set var: a register and local memory written at a stop are carried by the next re-launch", "[session]") {
  const std::string kernel = "reduce";
  Undisturbed u = undisturbed(k1x1x4x4, 1, kernel);
  // Refused while nothing is stopped.
  {
    Debugged idle(k1x1x4x4, 1, kernel);
    CHECK_FALSE(idle.s->write_register(WarpId{0, 0}, 0, 5, 1).ok());
    CHECK_FALSE(idle.s->write_memory(WarpId{0, 0}, 0x80001000u, {0}).ok());
  }
  Debugged d(k1x1x4x4, 1, kernel);
  REQUIRE(d.img.launch);
  auto bp = d.s->add_breakpoint(d.img.launch->entry);
  REQUIRE(bp.ok());
  StopEvent ev = d.go(d.s->resume());
  REQUIRE(ev.reason == StopReason::Breakpoint);
  const WarpId w = ev.hits.at(0).warp;
  const uint32_t x9 = d.s->context().cores[w.core].warps[w.slot].x[9 * 4 + 1];
  const auto& lmem = d.s->context().cores[w.core].local_mem;
  const std::vector<uint8_t> lm8(lmem.begin() + 8, lmem.begin() + 12);
  // The saved context holds what was written; x0 and bad registers are refused.
  REQUIRE(d.s->write_register(w, 1, 9, 0xabcdu).ok());
  CHECK(d.s->context().cores[w.core].warps[w.slot].x[9 * 4 + 1] == 0xabcdu);
  CHECK_FALSE(d.s->write_register(w, 0, 0, 1).ok());
  CHECK_FALSE(d.s->write_register(w, 0, 64, 1).ok());
  CHECK_FALSE(d.s->write_register(w, 9, 5, 1).ok());  // no lane 9 in a 4-lane warp
  // Local memory: the core's saved copy; past its end is refused.
  const uint32_t lm = memmap::kLocalMemBase;
  REQUIRE(d.s->write_memory(w, lm + 8, {1, 2, 3, 4}).ok());
  CHECK(d.s->context().cores[w.core].local_mem[8] == 1);
  CHECK_FALSE(d.s->write_memory(w, lm + uint32_t(d.s->context().cores[w.core].local_mem.size()), {1}).ok());
  // Breakpoints' planted words are not the user's to overwrite.
  CHECK_FALSE(d.s->write_memory(w, d.img.launch->entry, {0, 0, 0, 0}).ok());
  // Writing back what was there: the re-launch carries the context, and the run ends as the
  // undisturbed one.
  REQUIRE(d.s->write_register(w, 1, 9, x9).ok());
  REQUIRE(d.s->write_memory(w, lm + 8, lm8).ok());
  REQUIRE(d.s->remove_breakpoint(*bp).ok());
  StopEvent end = d.go(d.s->resume());
  REQUIRE(end.reason == StopReason::Exited);
  CHECK(d.memory(false) == u.memory);
  CHECK(d.console == u.console);
}

TEST_CASE("the thread-entry routine copies every word of local memory: blocks and the words after them", "[session]") {
  // Each lane copies its share of the image in blocks of routine::kLmemBlockWords words, then the rest
  // one by one: 63 blocks and 12 words a lane, 31 blocks and 14 words, no block and 8 words, 64 blocks;
  // and every other warp width (the code is made for it, its offsets up to 15 x 4 x NT): 1 lane,
  // 255 blocks; 2 lanes, 8 blocks and 8 words; 16 lanes, 4 blocks and 1 word; 32 lanes,
  // 8 blocks.
  const std::vector<DeviceConfig> configs = {DeviceConfig{1, 1, 4, 4, 16320},  DeviceConfig{1, 2, 8, 8, 16320},
                                             DeviceConfig{1, 1, 4, 32, 1024},  DeviceConfig{1, 1, 4, 4, 16384},
                                             DeviceConfig{1, 1, 32, 1, 16320}, DeviceConfig{1, 1, 16, 2, 1088},
                                             DeviceConfig{1, 1, 2, 16, 4160},  DeviceConfig{1, 1, 4, 32, 16384}};
  for (const DeviceConfig& cfg : configs) {
    INFO(cfg.to_string() << " with " << cfg.local_mem_bytes << " bytes of local memory");
    Undisturbed u = undisturbed(cfg, 5, "vecadd");  // vecadd never touches local memory
    // watched: a watchpoint on a word nothing writes, so the device runs the routine through step()
    // (its hooks) instead of its routine loop; both must restore the same state, counted the same.
    auto run = [&](bool watched) {
      Debugged d(cfg, 5, "vecadd");
      if (watched) {
        WatchSpec spec;
        spec.addr = memmap::kIoEnd - 4;
        REQUIRE(d.s->add_watchpoint(spec));
      }
      StopEvent ev = d.go(d.s->run_to(u.instructions / 3));
      REQUIRE(ev.reason == StopReason::InstructionCount);
      // Every word non-zero and different: a word the routine missed reads as zero after the kill,
      // and the device refuses the re-launch (RestoreFailed); a word copied to the wrong place shows.
      std::map<uint32_t, std::vector<uint8_t>> want;  // core -> what its local memory must hold
      for (uint32_t c = 0; c < cfg.total_cores(); ++c) {
        std::vector<uint8_t> pattern(cfg.local_mem_bytes);
        for (uint32_t i = 0; i < pattern.size(); i += 4) {
          const uint32_t v = 0x9e3779b9u * (c * 65536 + i / 4 + 1);
          std::memcpy(pattern.data() + i, &v, 4);
        }
        const CoreState& core = d.s->context().cores[c];
        uint32_t slot = 0;
        while (slot < cfg.warps && !core.warps[slot].active) ++slot;
        if (slot == cfg.warps) continue;  // no warp to write through: this core's memory is not checked
        REQUIRE(d.s->write_memory(WarpId{c, slot}, memmap::kLocalMemBase, pattern).ok());
        want[c] = std::move(pattern);
      }
      REQUIRE_FALSE(want.empty());
      StopEvent next = d.go(d.s->run_to(u.instructions / 3 + 1));
      REQUIRE(next.reason == StopReason::InstructionCount);
      for (const auto& [c, bytes] : want) CHECK(d.s->context().cores[c].local_mem == bytes);
      return std::pair{d.s->context(), d.s->stats().restore_instructions};
    };
    const auto [lean, lean_count] = run(false);
    const auto [stepped, stepped_count] = run(true);
    check_same_state(lean, stepped);
    CHECK(lean_count == stepped_count);
    CHECK(lean_count > 0);
  }
}
