// Time travel against undisturbed runs: whatever moves a user makes, forward or backward, every stop
// is the undisturbed run's state at the same point in time (invariant 3: the same checkpoint leads
// to the same future), and the store holds one checkpoint per point, in time order.
#include "replay/timeline.hpp"

#include <rapidcheck.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "checkpoint/store.hpp"
#include "engine/symbols.hpp"
#include "replay/recording.hpp"
#include "tests/property.hpp"
#include "tests/session_support.hpp"

using namespace vx;
using namespace vx::engine;
using namespace vx::test;

namespace {

constexpr uint64_t kSeed = 20261124;

struct TempDir {
  std::string path;
  TempDir() {
    static int n = 0;
    path = (std::filesystem::temp_directory_path() /
            ("vx-timeline-" + std::to_string(::getpid()) + "-" + std::to_string(n++)))
               .string();
    std::filesystem::remove_all(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// The undisturbed run's state at any count: a reference run goes forward only, so an earlier count
// starts a new one.
struct AnyPoint {
  DeviceConfig cfg;
  uint64_t seed;
  std::string kernel;
  std::unique_ptr<Reference> ref;
  DeviceContext at(uint64_t count) {
    if (!ref || ref->at > count) ref = std::make_unique<Reference>(cfg, seed, kernel);
    return ref->state_at(count);
  }
  std::vector<uint8_t> memory() { return ref->memory(true); }
  const std::string& console() const { return ref->console_bytes; }
};

// A recorded session of one example kernel, with its timeline.
struct Recorded {
  TempDir dir;
  std::unique_ptr<Driver> dev;
  std::unique_ptr<Session> s;
  KernelImage img;
  std::optional<Symbols> sym;
  std::unique_ptr<replay::Timeline> tl;
  Recorded(const DeviceConfig& cfg, uint64_t seed, const std::string& kernel, uint64_t interval)
      : dev(open(cfg, seed)) {
    SessionOptions so;
    so.store_dir = dir.path;
    so.store_sync = false;
    so.checkpoint_interval = interval;
    auto made = Session::create(*dev, so);
    REQUIRE(made);
    s = std::move(made).value();
    img = launch_kernel(s->host(), kernel);
    auto loaded = Symbols::load(kernel_file(kernel));
    REQUIRE(loaded);
    sym.emplace(std::move(loaded).value());
    tl = std::make_unique<replay::Timeline>(*s, &*sym);
  }
  std::vector<uint8_t> memory() {
    return memory_of(
        [&](uint32_t a, uint32_t n) {
          auto b = s->read_memory(a, n);
          REQUIRE(b);
          return *b;
        },
        img, dev->config(), true);
  }
  // The warp a user would have in focus: the stop's first hit, else the first active warp.
  std::optional<WarpId> focus(const StopEvent& ev) const {
    const DeviceContext& ctx = s->context();
    auto active = [&](WarpId w) { return ctx.cores.at(w.core).warps.at(w.slot).active; };
    if (!ev.hits.empty() && active(ev.hits[0].warp)) return ev.hits[0].warp;
    for (uint32_t c = 0; c < ctx.cores.size(); ++c)
      for (uint32_t w = 0; w < ctx.cores[c].warps.size(); ++w)
        if (ctx.cores[c].warps[w].active) return WarpId{c, w};
    return std::nullopt;
  }
};

// Checks the session's stop against the undisturbed run at the same point.
void check_stop(Recorded& r, AnyPoint& ref, const StopEvent& ev, const std::string& what) {
  INFO(what << " -> " << stop_reason_name(ev.reason) << " at " << ev.instructions);
  if (!r.s->stopped()) return;
  REQUIRE(ev.launch == 1);
  REQUIRE(r.s->now() == TimePoint{1, ev.instructions});
  check_same_state(r.s->context(), ref.at(ev.instructions));
  const auto got = r.memory(), want = ref.memory();
  REQUIRE(got.size() == want.size());
  auto diff = std::mismatch(got.begin(), got.end(), want.begin());
  INFO("memory differs at byte " << (diff.first - got.begin()) << " of the I/O region, image and stacks"
                                 << (diff.first == got.end() ? std::string()
                                                             : ": " + std::to_string(*diff.first) + " instead of " +
                                                                   std::to_string(*diff.second)));
  CHECK(diff.first == got.end());
  // The console so far: the same bytes. Their order across console slots depends on when the host
  // drained the rings (a re-launch drains at other counts than one long run), so the comparison is
  // of the bytes sorted; within one slot nothing can move, and nothing may be lost or doubled.
  std::string got_console = r.s->console_so_far(), want_console = ref.console();
  std::sort(got_console.begin(), got_console.end());
  std::sort(want_console.begin(), want_console.end());
  CHECK(got_console == want_console);
}

void check_store(Recorded& r) {
  auto keys = r.s->store()->list();
  REQUIRE(keys);
  CHECK(std::adjacent_find(keys->begin(), keys->end(), [](const auto& a, const auto& b) { return !(a < b); }) ==
        keys->end());
}

}  // namespace

namespace {

// The property: random forward and backward moves on random kernels, shapes and seeds. Each run sets
// two breakpoints at random instructions of the kernel's function (reverse-continue needs hits);
// every warp reaches them early, so the stops stay early in the run. `anywhere`: half the runs set
// none, and their stops go anywhere in the run.
void time_travel_property(bool anywhere_in_run) {
  // hello*40 prints all along its run: the console so far is not empty at its later stops.
  const std::vector<std::string> kernels = {"vecadd", "sgemm", "reduce", "diverge",  "histogram",
                                            "racy",   "saxpy", "hello",  "hello*40", "hello*40"};
  vx::test::check_property("time travel", kSeed, 14, 30, [&] {
    using namespace rc;
    const std::string kernel = *gen::elementOf(kernels);
    const DeviceConfig cfg = *gen::element(k1x1x4x4, k1x2x8x8);
    const uint64_t seed = *gen::inRange<uint64_t>(1, 1000);
    const uint64_t interval = *gen::inRange<uint64_t>(500, 5000);
    // Points anywhere in the run: rapidcheck scales inRange by the test's size (small at first), which
    // would keep every stop near the start.
    auto anywhere = [](uint64_t lo, uint64_t hi) { return *gen::resize(100, gen::inRange<uint64_t>(lo, hi)); };
    RC_TAG(kernel);
    Recorded r(cfg, seed, kernel, interval);
    AnyPoint ref{cfg, seed, kernel, nullptr};
    const uint64_t total = undisturbed(cfg, seed, kernel).instructions;
    // Breakpoints at two instructions of the kernel's own function (reverse-continue needs hits), or
    // none (every warp hits them early: without them, stops go anywhere in the run).
    auto fn = r.sym->function_at(r.img.launch ? r.img.launch->entry : r.img.start_pc);
    RC_ASSERT(fn.has_value());
    const int breakpoints = anywhere_in_run ? *gen::element(0, 2) : 2;
    INFO("kernel " << kernel << " on " << cfg.to_string() << ", seed " << seed << ", interval " << interval
                   << ", breakpoints " << breakpoints);
    for (int i = 0; i < breakpoints; ++i) {
      uint32_t pc = fn->lo + 4 * *gen::inRange<uint32_t>(0, (fn->hi - fn->lo) / 4);
      RC_ASSERT(r.s->add_breakpoint(pc).ok());
    }
    auto first = r.s->run_to(1 + anywhere(0, total / 2));
    RC_ASSERT(first.ok());
    StopEvent ev = *first;
    check_stop(r, ref, ev, "first run_to");
    const int moves = *gen::elementOf(std::vector<int>{6, 8, 10, 12});
    for (int m = 0; m < moves; ++m) {
      const int kind = *gen::elementOf(std::vector<int>{0, 1, 2, 2, 3, 3, 4, 5, 6});
      Result<StopEvent> next = make_error("");
      std::string what;
      const auto focus = r.s->stopped() ? r.focus(ev) : std::nullopt;
      if (kind == 0 && r.s->stopped()) {
        const uint64_t to = r.s->now().instret + 1 + anywhere(0, total / 4 + 1);
        if (to >= total) continue;
        what = "run_to " + std::to_string(to);
        next = r.s->run_to(to);
      } else if (kind == 1 && focus) {
        what = "stepi";
        next = r.s->step(*focus, 0);
      } else if (kind == 2 && focus) {
        what = "reverse-stepi";
        next = r.tl->reverse_stepi(*focus, 0);
      } else if (kind == 3 && (r.s->stopped() || r.s->frontier(1))) {
        what = "reverse-continue";
        next = r.tl->reverse_continue(nullptr);
      } else if (kind == 4 && (r.s->stopped() || r.s->frontier(1))) {
        const uint64_t end = r.s->stopped() ? r.s->now().instret : total - 1;
        const uint64_t to = anywhere(0, end + 1);
        what = "seek " + std::to_string(to);
        next = r.s->seek(TimePoint{1, to});
      } else if (kind == 5 && r.s->stopped()) {
        what = "continue";
        next = r.s->resume();
      } else if (kind == 6) {
        // goto N: a stop the session marked (info checkpoints).
        auto marks = r.tl->marks();
        RC_ASSERT(marks.ok());
        if (marks->empty()) continue;
        const size_t n = size_t(anywhere(1, marks->size() + 1));
        what = "goto " + std::to_string(n) + " (instruction " + std::to_string((*marks)[n - 1].when.instret) + ")";
        next = r.tl->goto_mark((*marks)[n - 1].number);  // marks keep the number they were made with
        if (next.ok()) RC_ASSERT(next->when() == (*marks)[n - 1].when);
      } else {
        continue;
      }
      INFO(what);
      if (!next.ok()) RC_FAIL(what + ": " + next.error().message);
      ev = *next;
      check_stop(r, ref, ev, what);
      if (ev.reason == StopReason::Exited) CHECK(ev.exit_code == undisturbed(cfg, seed, kernel).exit_code);
    }
    check_store(r);
  });
}

}  // namespace

TEST_CASE("property: any sequence of forward and backward moves stops where the undisturbed run is",
          "[timeline][property]") {
  time_travel_property(false);
}

// Stops anywhere in the run (half the runs set no breakpoint): moves back land where the kernel has
// printed, so the I/O region's console rings and indices are compared after seeks too (checkpoints
// once left the region's first page out, and a run split at a budget inside core 0's turn drained
// the console where the undisturbed run does not: engine/session_test.cpp has both alone).
TEST_CASE("property, stops anywhere in the run", "[timeline][property]") { time_travel_property(true); }

TEST_CASE("reverse-stepi after N stepi gives back the N previous pcs and registers", "[timeline]") {
  Recorded r(k1x1x4x4, 3, "diverge", 1000);
  auto first = r.s->run_to(400);
  REQUIRE(first);
  StopEvent ev = *first;
  const WarpId w = *r.focus(ev);
  std::vector<WarpState> seen{r.s->context().cores[w.core].warps[w.slot]};
  for (int i = 0; i < 12; ++i) {
    auto st = r.s->step(w, 0);
    REQUIRE(st);
    REQUIRE(st->reason == StopReason::Step);
    seen.push_back(r.s->context().cores[w.core].warps[w.slot]);
  }
  for (int i = 11; i >= 0; --i) {
    auto back = r.tl->reverse_stepi(w, 0);
    REQUIRE(back);
    REQUIRE(back->reason == StopReason::Step);
    const WarpState& now = r.s->context().cores[w.core].warps[w.slot];
    INFO("back to step " << i);
    CHECK(now.pc == seen[size_t(i)].pc);
    CHECK(now.x == seen[size_t(i)].x);
    CHECK(now.instret == seen[size_t(i)].instret);
    CHECK(now.tmask == seen[size_t(i)].tmask);
  }
}

namespace {

uint32_t word_at(Session& s, uint32_t pc) {
  auto b = s.read_memory(pc, 4);
  REQUIRE(b);
  return uint32_t((*b)[0]) | uint32_t((*b)[1]) << 8 | uint32_t((*b)[2]) << 16 | uint32_t((*b)[3]) << 24;
}
bool call_word(uint32_t w) { return ((w & 0x7f) == 0x6f || (w & 0x7f) == 0x67) && ((w >> 7) & 31) == 1; }

// A forward nexti of lane 0 of warp w, as the front end makes it: a call runs until the lane is back
// at the return address with its frame (sp) unwound. Returns whether it stepped over a call.
bool nexti(Session& s, WarpId w) {
  const WarpState& ws = s.context().cores[w.core].warps[w.slot];
  const uint32_t pc = ws.pc, sp0 = ws.x[2 * s.config().threads];
  StepPolicy policy;
  const bool call = call_word(word_at(s, pc));
  if (call)
    policy = [ret = pc + 4, sp0](uint32_t at, uint32_t sp) -> std::optional<std::pair<uint32_t, uint32_t>> {
      if (at == ret && sp >= sp0) return std::nullopt;
      return std::pair<uint32_t, uint32_t>{at, at + 4};
    };
  auto ev = s.step(w, 1, policy);
  INFO((ev ? std::string() : ev.error().message));
  REQUIRE(ev);
  REQUIRE(ev->reason == StopReason::Step);
  return call;
}

void check_warp(const WarpState& now, const WarpState& want) {
  CHECK(now.pc == want.pc);
  CHECK(now.x == want.x);
  CHECK(now.instret == want.instret);
  CHECK(now.tmask == want.tmask);
}

}  // namespace

TEST_CASE("reverse-nexti after N nexti gives back the N previous points, over calls too", "[timeline]") {
  Recorded r(k1x1x4x4, 2, "hello", 700);
  auto printf_at = r.sym->resolve("vx_printf");
  REQUIRE(printf_at);
  REQUIRE(r.s->add_breakpoint(printf_at->addresses.at(0)));
  auto first = r.s->resume();
  REQUIRE(first);
  REQUIRE(first->reason == StopReason::Breakpoint);
  const WarpId w = first->hits.at(0).warp;
  REQUIRE(r.s->remove_breakpoint(1));
  std::vector<WarpState> seen{r.s->context().cores[w.core].warps[w.slot]};
  int calls = 0;
  // Through vx_printf (its calls of the lane printer stepped over), up to its return (which leaves
  // the frame: reverse-nexti from the caller goes back over the whole call).
  for (int i = 0; i < 60 && word_at(*r.s, seen.back().pc) != 0x00008067; ++i) {
    calls += nexti(*r.s, w);
    seen.push_back(r.s->context().cores[w.core].warps[w.slot]);
  }
  REQUIRE(calls > 0);  // the test covers a call stepped over
  // Past the return, reverse-nexti goes back over the whole call, to the caller's call instruction.
  const TimePoint at_ret = r.s->now();
  nexti(*r.s, w);
  auto over = r.tl->reverse_nexti(w, 0);
  REQUIRE(over);
  const WarpState& caller = r.s->context().cores[w.core].warps[w.slot];
  CHECK(call_word(word_at(*r.s, caller.pc)));
  CHECK(caller.instret < seen.front().instret);
  REQUIRE(r.s->seek(at_ret, StopReason::Step, w));
  check_warp(r.s->context().cores[w.core].warps[w.slot], seen.back());
  for (size_t i = seen.size() - 1; i-- > 0;) {
    INFO("reverse-nexti back to point " << i);
    const uint64_t was = r.s->now().instret;
    auto back = r.tl->reverse_nexti(w, 0);
    REQUIRE(back);
    REQUIRE(back->reason == StopReason::Step);
    CHECK(back->instructions < was);
    check_warp(r.s->context().cores[w.core].warps[w.slot], seen[i]);
  }
}

TEST_CASE("reverse-finish goes back to the call of the current function", "[timeline]") {
  Recorded r(k1x1x4x4, 2, "hello", 700);
  // _start calls the kernel function: stop at that call, step into the callee and a few instructions on.
  auto start = r.sym->function_at(r.img.start_pc);
  REQUIRE(start);
  uint32_t call = 0;
  for (uint32_t pc = start->lo; pc < start->hi && !call; pc += 4)
    if (call_word(word_at(*r.s, pc))) call = pc;
  REQUIRE(call);
  REQUIRE(r.s->add_breakpoint(call));
  auto at_call = r.s->resume();
  REQUIRE(at_call);
  REQUIRE(at_call->reason == StopReason::Breakpoint);
  const WarpId w = at_call->hits.at(0).warp;
  REQUIRE(r.s->remove_breakpoint(1));
  const WarpState before = r.s->context().cores[w.core].warps[w.slot];
  for (int i = 0; i < 6; ++i) REQUIRE(r.s->step(w, 1));
  REQUIRE(r.s->context().cores[w.core].warps[w.slot].pc != call + 4);
  auto back = r.tl->reverse_finish(w, 0);
  REQUIRE(back);
  CHECK(back->reason == StopReason::Step);
  check_warp(r.s->context().cores[w.core].warps[w.slot], before);
  // At the call, in the outermost frame, there is nothing to finish.
  auto outer = r.tl->reverse_finish(w, 0);
  CHECK_FALSE(outer);
}

TEST_CASE("reverse-next after N next (line by line) gives back the previous line starts", "[timeline]") {
  Recorded r(k1x1x4x4, 4, "reduce", 900);
  auto bp = r.sym->resolve("reduce.c:74");
  REQUIRE(bp);
  REQUIRE(r.s->add_breakpoint(bp->addresses.at(0)));
  auto first = r.s->resume();
  REQUIRE(first);
  REQUIRE(first->reason == StopReason::Breakpoint);
  const WarpId w = first->hits.at(0).warp;
  REQUIRE(r.s->remove_breakpoint(1));
  auto line_of = [&](uint32_t pc) {
    auto l = r.sym->locate(pc);
    return l ? l->line : 0u;
  };
  // A forward `step` by hand: stepi until lane 0's line changes (every line of this stretch has one).
  std::vector<WarpState> starts{r.s->context().cores[w.core].warps[w.slot]};
  for (int n = 0; n < 5; ++n) {
    const uint32_t line = line_of(starts.back().pc);
    for (int guard = 0;; ++guard) {
      REQUIRE(guard < 2000);
      REQUIRE(r.s->step(w, 1));
      const WarpState& ws = r.s->context().cores[w.core].warps[w.slot];
      const uint32_t now = line_of(ws.pc);
      if (now && now != line) break;
    }
    starts.push_back(r.s->context().cores[w.core].warps[w.slot]);
  }
  for (size_t i = starts.size() - 1; i-- > 0;) {
    INFO("reverse-step back to line start " << i << " (line " << line_of(starts[i].pc) << ")");
    auto back = r.tl->reverse_step(w, 0);
    REQUIRE(back);
    REQUIRE(back->reason == StopReason::Step);
    check_warp(r.s->context().cores[w.core].warps[w.slot], starts[i]);
  }
}

TEST_CASE("reverse-continue visits a loop breakpoint's hits backwards, then the start of history", "[timeline]") {
  Recorded r(k1x1x4x4, 1, "sgemm", 3000);
  auto loop = r.sym->resolve("sgemm.c:49");
  REQUIRE(loop);
  REQUIRE(r.s->add_breakpoint(loop->addresses.at(0)));
  std::vector<uint64_t> forward;
  for (int i = 0; i < 6; ++i) {
    auto ev = r.s->resume();
    REQUIRE(ev);
    REQUIRE(ev->reason == StopReason::Breakpoint);
    forward.push_back(ev->instructions);
  }
  for (int i = 4; i >= 0; --i) {
    auto back = r.tl->reverse_continue(nullptr);
    REQUIRE(back);
    REQUIRE(back->reason == StopReason::Breakpoint);
    CHECK(back->instructions == forward[size_t(i)]);
  }
  auto start = r.tl->reverse_continue(nullptr);
  REQUIRE(start);
  CHECK(start->reason == StopReason::HistoryStart);
  CHECK(start->instructions == 0);
  // The same future again: forward from the start reaches the same hits.
  for (int i = 0; i < 6; ++i) {
    auto ev = r.s->resume();
    REQUIRE(ev);
    CHECK(ev->instructions == forward[size_t(i)]);
  }
}

TEST_CASE("a watchpoint on a histogram bin stops at every atomic increment, forward and backward", "[timeline]") {
  Recorded r(k1x1x4x4, 1, "histogram", 2000);
  auto bins = r.sym->symbol_address("bins");
  REQUIRE(bins);
  WatchSpec spec;
  spec.addr = *bins;
  spec.len = 4;
  spec.kind = kWatchWrite;
  REQUIRE(r.s->add_watchpoint(spec));
  std::vector<uint64_t> at;
  std::vector<uint32_t> old;
  for (;;) {
    auto ev = r.s->resume();
    REQUIRE(ev);
    if (ev->reason == StopReason::Exited) break;
    REQUIRE(ev->reason == StopReason::Watchpoint);
    REQUIRE(ev->watches.size() == 1);
    uint32_t before = 0, after = 0;
    std::memcpy(&before, ev->watches[0].old_bytes.data(), 4);
    auto now = r.s->read_memory(*bins, 4);
    REQUIRE(now);
    std::memcpy(&after, now->data(), 4);
    CHECK(after > before);  // an atomic add of the CTA's count
    if (!old.empty()) CHECK(before == old.back());
    old.push_back(after);
    at.push_back(ev->instructions);
  }
  REQUIRE(at.size() >= 4);
  // Backwards from the end: every increment again, latest first, with the same old values.
  for (size_t i = at.size(); i-- > 0;) {
    auto back = r.tl->reverse_continue(nullptr);
    REQUIRE(back);
    REQUIRE(back->reason == StopReason::Watchpoint);
    CHECK(back->instructions == at[i]);
    uint32_t before = 0;
    std::memcpy(&before, back->watches.at(0).old_bytes.data(), 4);
    CHECK(before == (i ? old[i - 1] : 0u));
  }
}

TEST_CASE("a recording reopened without the host reaches the same stops", "[timeline]") {
  Recorded r(k1x1x4x4, 5, "reduce", 1500);
  auto bp = r.sym->resolve("reduce.c:108");
  REQUIRE(bp);
  REQUIRE(r.s->add_breakpoint(bp->addresses.at(0)));
  std::vector<uint64_t> stops;
  std::vector<DeviceContext> states;
  for (int i = 0; i < 3; ++i) {
    auto ev = r.s->resume();
    REQUIRE(ev);
    REQUIRE(ev->reason == StopReason::Breakpoint);
    stops.push_back(ev->instructions);
    states.push_back(r.s->context());
  }
  REQUIRE(r.s->host_finished());
  REQUIRE(r.s->flush());
  const std::string dir = r.dir.path;
  r.s.reset();  // the store is closed: the recording is all there is
  auto dev = open(k1x1x4x4, 5);
  SessionOptions so;
  so.store_dir = dir;
  so.replay = true;
  auto s = Session::create(*dev, so);
  REQUIRE(s);
  REQUIRE((*s)->load_recording());
  auto marks = (*s)->marks();
  REQUIRE(marks);
  REQUIRE(marks->size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(marks->at(i).when == TimePoint{1, stops[i]});
    auto ev = (*s)->seek(marks->at(i).when, StopReason::Breakpoint);
    REQUIRE(ev);
    check_same_state((*s)->context(), states[i]);
  }
  auto end = (*s)->resume();
  REQUIRE(end);
  CHECK(end->reason == StopReason::Exited);
  CHECK(end->exit_code == undisturbed(k1x1x4x4, 5, "reduce").exit_code);
}

TEST_CASE("a recording without hostEnd (a host still running, or killed) replays to an end-of-recording stop",
          "[timeline]") {
  Recorded r(k1x1x4x4, 5, "reduce", 1500);
  REQUIRE(r.s->run_to(2000));
  // No host_finished: the host could have issued more, as far as the recording knows.
  REQUIRE(r.s->flush());
  const std::string dir = r.dir.path;
  r.s.reset();
  auto dev = open(k1x1x4x4, 5);
  SessionOptions so;
  so.store_dir = dir;
  so.replay = true;
  auto s = Session::create(*dev, so);
  REQUIRE(s);
  REQUIRE((*s)->load_recording());
  REQUIRE((*s)->seek(TimePoint{1, 2000}));
  auto end = (*s)->resume();
  REQUIRE(end);
  CHECK(end->reason == StopReason::EndOfRecording);
  CHECK(end->instructions == undisturbed(k1x1x4x4, 5, "reduce").instructions);
  CHECK_THAT(end->message, Catch::Contains("end of recording"));
  CHECK_THAT(console_text((*s)->take_console()), Catch::Contains("total 507 (expected 507)"));
  CHECK_FALSE((*s)->stopped());
  CHECK_FALSE((*s)->resume());  // nothing more to run
  // Back from the end is still possible: the recording is all there.
  replay::Timeline tl(**s, nullptr);
  auto back = tl.reverse_continue(nullptr);
  REQUIRE(back);
  CHECK(back->reason == StopReason::HistoryStart);
}

TEST_CASE("a recording is refused when its kept image, its scheduler or its format does not fit this build",
          "[timeline]") {
  const std::string elf = kExamples + "/reduce.elf";
  std::ifstream in(elf, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto image = load_kernel_image(elf);
  REQUIRE(image);
  auto record = [&](const std::string& dir, uint64_t kernel_hash) {
    auto dev = open(k1x1x4x4, 1);
    SessionOptions so;
    so.store_dir = dir;
    so.store_sync = false;
    so.kernel_hash = kernel_hash;
    so.seed = 1;
    auto s = Session::create(*dev, so);
    REQUIRE(s);
    REQUIRE((*s)->record_symbols("reduce.elf", bytes));
    launch_kernel((*s)->host(), "reduce");
    REQUIRE((*s)->run_to(100));
  };
  SECTION("good") {
    TempDir dir;
    record(dir.path, image->hash);
    auto info = replay::inspect_recording(dir.path);
    REQUIRE(info);
    CHECK(info->image_name == "reduce.elf");
    CHECK(info->image_bytes == bytes);
    CHECK(info->config == k1x1x4x4);
    CHECK(info->options.seed == 1);
    CHECK_FALSE(info->writer_killed);
  }
  SECTION("another image") {
    TempDir dir;
    record(dir.path, image->hash ^ 1);
    auto info = replay::inspect_recording(dir.path);
    REQUIRE_FALSE(info);
    CHECK_THAT(info.error().message, Catch::Contains("does not match its header"));
  }
  SECTION("another scheduler version") {
    TempDir dir;
    checkpoint::StoreHeader h;
    h.config = checkpoint::ConfigRecord{1, 1, 4, 4, 16 * 1024};
    h.scheduler_version = kSchedulerVersion + 1;
    REQUIRE(checkpoint::Store::open(dir.path, h, checkpoint::OpenMode::Create));
    auto info = replay::inspect_recording(dir.path);
    REQUIRE_FALSE(info);
    CHECK_THAT(info.error().message, Catch::Contains("scheduler version " + std::to_string(kSchedulerVersion + 1)));
    CHECK_THAT(info.error().message, Catch::Contains("version " + std::to_string(kSchedulerVersion)));
  }
  SECTION("not a recording") {
    TempDir dir;
    auto info = replay::inspect_recording(dir.path);
    REQUIRE_FALSE(info);
    CHECK_THAT(info.error().message, Catch::Contains("cannot open the recording"));
  }
}

// The launch's first checkpoint is taken before its first round began; a before-trigger on the first
// instruction fires after it began (the KMU dispatched, core 0 picked a warp). A reverse-stepi back to
// that instruction used to stop in that state and find the checkpoint at the same point different.
TEST_CASE("reverse-stepi to the launch's first instruction stands at the launch's first checkpoint", "[timeline]") {
  Recorded r(k1x1x4x4, 21, "hello*40", 500);
  AnyPoint ref{k1x1x4x4, 21, "hello*40", nullptr};
  auto ev = r.s->run_to(1);
  REQUIRE(ev);
  const auto w = r.focus(*ev);
  REQUIRE(w);
  REQUIRE(r.s->context().cores[w->core].warps[w->slot].instret == 1);
  auto back = r.tl->reverse_stepi(*w, 0);
  INFO((back ? std::string() : back.error().message));
  REQUIRE(back);
  CHECK(back->reason == StopReason::Step);
  check_stop(r, ref, *back, "reverse-stepi");
  // The same future from there (the warp is not dispatched yet at this point: a run, not a step).
  auto again = r.s->run_to(1);
  INFO((again ? std::string() : again.error().message));
  REQUIRE(again);
  check_stop(r, ref, *again, "run_to 1");
}
