// Live sessions (docs/live.md): the engine's run control through the Debug Module against the
// re-launch method on the same kernels, devices without a DM, and the DM access count of every
// live operation (a regression in batching changes a count and fails here).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "device/host_runtime.hpp"
#include "engine/session.hpp"
#include "engine/symbols.hpp"

using namespace vx;
using namespace vx::engine;

namespace {

const std::string kExamples = VX_EXAMPLES_DIR;

struct Live {
  std::unique_ptr<Driver> dev;
  std::unique_ptr<Session> s;
};

// A store directory of this process, removed with everything in it.
struct TempStore {
  std::string path = (std::filesystem::temp_directory_path() / ("vx-live-" + std::to_string(::getpid()))).string();
  TempStore() { std::filesystem::remove_all(path); }
  ~TempStore() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

Live open_session(const std::string& kernel, SessionMode mode, bool dm = true, const DeviceConfig& cfg = {1, 1, 4, 4},
                  const std::string& store_dir = "", uint64_t watchdog = 0) {
  Live l;
  RunOptions o;
  o.debug_module = dm;
  if (watchdog) o.watchdog_instructions = watchdog;
  auto d = open_model_device(cfg, o);
  REQUIRE(d);
  l.dev = std::move(d).value();
  SessionOptions so;
  so.mode = mode;
  so.store_dir = store_dir;
  so.store_sync = false;
  so.watchdog = watchdog;
  auto s = Session::create(*l.dev, so);
  REQUIRE(s);
  l.s = std::move(s).value();
  auto image = load_kernel_image(kExamples + "/" + kernel + ".elf");
  REQUIRE(image);
  HostRuntime rt(l.s->host());
  auto launch = resolve_grid_launch(*image, cfg, {});
  REQUIRE(launch);
  REQUIRE(rt.load_image(*image));
  REQUIRE(rt.launch_grid(*launch));
  return l;
}

uint64_t dm(const Live& l) { return l.s->info().dm_accesses; }

// The first warp that can execute its next instruction at once (active, not waiting on a barrier).
WarpId first_running(const Session& s) {
  const DeviceContext& c = s.context();
  for (uint32_t core = 0; core < c.cores.size(); ++core)
    for (uint32_t w = 0; w < c.cores[core].warps.size(); ++w)
      if (c.cores[core].warps[w].active && c.cores[core].warps[w].wait == WarpWait::None) return WarpId{core, w};
  FAIL("no running warp");
  return {};
}

}  // namespace

TEST_CASE("the mode: live needs a Debug Module, auto picks it when there is one, relaunch works everywhere", "[live]") {
  {
    auto d = open_model_device({1, 1, 4, 4}, RunOptions{1, 0, true, false});
    REQUIRE(d);
    CHECK_FALSE(probe_debug_module(**d));
    CHECK_FALSE((*d)->dm_read(0));
    SessionOptions so;
    so.mode = SessionMode::Live;
    auto s = Session::create(**d, so);
    REQUIRE_FALSE(s);
    CHECK(s.error().message == kNoDebugModule);
  }
  Live a = open_session("vecadd", SessionMode::Auto, false);
  CHECK_FALSE(a.s->info().live);
  CHECK_FALSE(a.s->info().has_dm);
  auto ev = a.s->resume();
  REQUIRE(ev);
  CHECK(ev->reason == StopReason::Exited);
  Live b = open_session("vecadd", SessionMode::Auto);
  CHECK(b.s->info().live);
  CHECK(b.s->info().has_dm);
  Live r = open_session("vecadd", SessionMode::Relaunch);
  CHECK_FALSE(r.s->info().live);
  CHECK(r.s->info().has_dm);
}

TEST_CASE("a live breakpoint stop holds the same warps, registers and memory as the re-launch stop", "[live]") {
  Live lv = open_session("reduce", SessionMode::Live);
  Live rl = open_session("reduce", SessionMode::Relaunch);
  auto image = load_kernel_image(kExamples + "/reduce.elf");
  REQUIRE(image);
  auto launch = resolve_grid_launch(*image, lv.s->config(), {});
  REQUIRE(launch);
  for (Live* l : {&lv, &rl}) REQUIRE(l->s->add_breakpoint(launch->entry_pc));
  for (int i = 0; i < 3; ++i) {
    auto a = lv.s->resume();
    auto b = rl.s->resume();
    REQUIRE(a);
    REQUIRE(b);
    REQUIRE(a->reason == b->reason);
    if (a->reason != StopReason::Breakpoint) break;
    REQUIRE(a->hits.size() == b->hits.size());
    CHECK(a->hits[0].warp == b->hits[0].warp);
    CHECK(a->hits[0].pc == b->hits[0].pc);
    const WarpState& x = lv.s->context().cores[a->hits[0].warp.core].warps[a->hits[0].warp.slot];
    const WarpState& y = rl.s->context().cores[b->hits[0].warp.core].warps[b->hits[0].warp.slot];
    CHECK(x.x == y.x);
    CHECK(x.f == y.f);
    CHECK(x.tmask == y.tmask);
    // The stack just below sp (hart 0's sp is the top of its stack, where local memory begins).
    const uint32_t sp = x.x[2 * 4];
    auto m1 = lv.s->read_memory(sp - 64, 64);
    auto m2 = rl.s->read_memory(sp - 64, 64);
    REQUIRE(m1);
    REQUIRE(m2);
    CHECK(*m1 == *m2);
    // Local memory is no device memory in either mode (a live load through a warp would see its
    // core's): read_local_memory names the core.
    CHECK_FALSE(lv.s->read_memory(memmap::kLocalMemBase, 4));
    CHECK_FALSE(rl.s->read_memory(memmap::kLocalMemBase, 4));
    CHECK_FALSE(lv.s->read_memory(memmap::kLocalMemBase - 4, 8));
  }
  for (Live* l : {&lv, &rl})
    for (const Breakpoint& b : l->s->breakpoints()) REQUIRE(l->s->remove_breakpoint(b.id));
  auto a = lv.s->resume();
  auto b = rl.s->resume();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->reason == StopReason::Exited);
  CHECK(a->exit_code == b->exit_code);
  CHECK(lv.s->stats().instructions == rl.s->stats().instructions);
  CHECK(lv.s->stats().passes == 1);  // inherent: nothing re-launched
}

TEST_CASE("a fault while live stops with the state readable through the DM; continuing is refused", "[live]") {
  Live l = open_session("fault", SessionMode::Live);
  auto ev = l.s->resume();
  REQUIRE(ev);
  REQUIRE(ev->reason == StopReason::Exception);
  CHECK(l.s->info().held);
  CHECK(l.s->context().cores[ev->exception.core].warps[ev->exception.warp].pc == ev->exception.pc);
  // As in re-launch mode: refused, and the fault stays a stop (the device stays held).
  auto k = l.s->resume();
  REQUIRE_FALSE(k);
  CHECK_THAT(k.error().message, Catch::Contains("cannot go on"));
  CHECK(l.s->stopped());
  CHECK(l.s->info().held);
}

// The counts below are exact on 1x1x4x4 (4 warps of 4 threads), without a store. DmClient's
// per-operation counts (engine/dm_client.hpp) add up to them; a change in batching changes them.
TEST_CASE("DM access counts of every live operation", "[live]") {
  Live l = open_session("sgemm", SessionMode::Live);
  const uint64_t connect = dm(l);
  CHECK(connect == 4);  // connect: DCTRL read, activate, PLATFORM, DCONFIG.ebreakh

  // run_to: the launch starts halted (reset-halt), nothing to plant, every warp resumed; then the
  // stop: haltreq over all, WSTATUS, and every register and per-warp CSR of the 4 warps read by injection.
  auto ev = l.s->run_to(2000);
  REQUIRE(ev);
  REQUIRE(ev->reason == StopReason::InstructionCount);
  const uint64_t first_stop = dm(l) - connect;
  CHECK(first_stop == 4341);  // nearly all of it: read_warp of 4 warps of 4 threads

  // Reading the stop's registers again costs nothing: they were read at the stop.
  uint64_t before = dm(l);
  (void)l.s->context();
  CHECK(dm(l) - before == 0);

  // stepi: one DM step (PC before and after, the step, WACTIVE), then the stop's reads.
  const WarpId w = first_running(*l.s);
  before = dm(l);
  auto st = l.s->step(w, 0);
  REQUIRE(st);
  REQUIRE(st->reason == StopReason::Step);
  const uint64_t stepi = dm(l) - before;
  CHECK(stepi == 4344);

  // Memory: 16 words through a halted warp, 6n + 7 (engine/dm_client.hpp).
  before = dm(l);
  auto m = l.s->read_memory(st->hits[0].pc, 64);
  REQUIRE(m);
  CHECK(dm(l) - before == 1 + 6 * 16 + 7);  // DSELECT onto the reading warp, then 6n + 7

  // continue to a breakpoint at the focus warp's PC and between two hits.
  REQUIRE(l.s->add_breakpoint(st->hits[0].pc));
  before = dm(l);
  auto h1 = l.s->resume();
  REQUIRE(h1);
  REQUIRE(h1->reason == StopReason::Breakpoint);
  const uint64_t to_hit = dm(l) - before;
  before = dm(l);
  auto h2 = l.s->resume();
  REQUIRE(h2);
  REQUIRE(h2->reason == StopReason::Breakpoint);
  const uint64_t between = dm(l) - before;
  CHECK(to_hit == 4405);
  CHECK(between == 4383);
}

TEST_CASE("DM access counts: halt after reset, stepping from the first instruction, a line step, attach", "[live]") {
  Live l;
  {
    RunOptions o;
    auto d = open_model_device({1, 1, 4, 4}, o);
    REQUIRE(d);
    l.dev = std::move(d).value();
    SessionOptions so;
    so.mode = SessionMode::Live;
    so.reset_halt = true;
    auto s = Session::create(*l.dev, so);
    REQUIRE(s);
    l.s = std::move(s).value();
    auto image = load_kernel_image(kExamples + "/vecadd.elf");
    REQUIRE(image);
    HostRuntime rt(l.s->host());
    auto launch = resolve_grid_launch(*image, l.s->config(), {});
    REQUIRE(launch);
    REQUIRE(rt.load_image(*image));
    REQUIRE(rt.launch_grid(*launch));
  }
  uint64_t before = dm(l);
  auto ev = l.s->resume();
  REQUIRE(ev);
  REQUIRE(ev->reason == StopReason::Step);
  CHECK(ev->instructions == 0);   // every warp on its first instruction
  CHECK(dm(l) - before == 4341);  // as the first stop of engine operations: reset-halt, read 4 warps
  const WarpId w = ev->hits[0].warp;
  const uint32_t pc0 = ev->hits[0].pc;
  before = dm(l);
  auto s1 = l.s->step(w, 0);
  REQUIRE(s1);
  CHECK(s1->instructions == 1);
  CHECK(s1->hits[0].pc == pc0 + 4);
  CHECK(dm(l) - before == 4343);
  // A step over a 3-instruction range: 3 DM steps, the thread mask and sp read where the policy is asked.
  int asked = 0;
  before = dm(l);
  auto s3 = l.s->step(w, 0, [&](uint32_t pc, uint32_t) -> std::optional<std::pair<uint32_t, uint32_t>> {
    ++asked;
    if (asked == 1) return std::make_pair(pc, pc + 8);
    return std::nullopt;
  });
  REQUIRE(s3);
  CHECK(s3->instructions == 4);
  CHECK(asked == 2);
  CHECK(dm(l) - before == 4383);  // 40 more than a stepi: two more steps, the masks and sp
}

TEST_CASE("attach: the first continue halts the launch after N instructions through haltreq", "[live]") {
  Live l;
  auto d = open_model_device({1, 1, 4, 4}, RunOptions{});
  REQUIRE(d);
  l.dev = std::move(d).value();
  SessionOptions so;
  so.mode = SessionMode::Live;
  so.attach_after = 5000;
  auto s = Session::create(*l.dev, so);
  REQUIRE(s);
  l.s = std::move(s).value();
  auto image = load_kernel_image(kExamples + "/hang.elf");
  REQUIRE(image);
  HostRuntime rt(l.s->host());
  auto launch = resolve_grid_launch(*image, l.s->config(), {});
  REQUIRE(launch);
  REQUIRE(rt.load_image(*image));
  REQUIRE(rt.launch_grid(*launch));
  const uint64_t before = dm(l);
  auto ev = l.s->resume();
  REQUIRE(ev);
  CHECK(ev->reason == StopReason::Interrupt);
  CHECK(ev->instructions == 5000);
  CHECK(l.s->info().held);
  CHECK(dm(l) - before == 4341);
  int active = 0;
  for (const WarpState& ws : l.s->context().cores[0].warps) active += ws.active;
  CHECK(active == 4);  // hang's CTAs fill the 4 slots, every warp spinning
}

namespace {

// The first BAR (Vortex custom-0, funct3 4, rd x0) at or after `from`, read from the device.
uint32_t first_bar(Session& s, uint32_t from) {
  auto m = s.read_memory(from, 4096);
  REQUIRE(m);
  for (uint32_t i = 0; i + 4 <= m->size(); i += 4) {
    uint32_t w = 0;
    std::memcpy(&w, m->data() + i, 4);
    if ((w & 0x707f) == 0x400b && ((w >> 7) & 31) == 0 && (w >> 25) == 0) return from + i;
  }
  FAIL("no BAR in reduce");
  return 0;
}

}  // namespace

TEST_CASE("DM access counts: finish, a fault stop, continuing past a waiting warp, a stop with a store", "[live]") {
  SECTION("finish from the kernel's function: DM steps of the focus warp, sp read where the policy is asked") {
    Live l = open_session("sgemm", SessionMode::Live);
    auto sym = Symbols::load(kExamples + "/sgemm.elf");
    REQUIRE(sym);
    auto entry = sym->symbol_address("sgemm");
    REQUIRE(entry);
    REQUIRE(l.s->add_breakpoint(*entry));
    auto hit = l.s->resume();
    REQUIRE(hit);
    REQUIRE(hit->reason == StopReason::Breakpoint);
    const WarpId w = hit->hits[0].warp;
    const uint32_t sp0 = l.s->context().cores[w.core].warps[w.slot].x[2 * 4];
    for (const Breakpoint& b : l.s->breakpoints()) REQUIRE(l.s->remove_breakpoint(b.id));
    int asked = 0;
    const uint64_t before = dm(l);
    auto fin = l.s->step(w, 0, [&](uint32_t pc, uint32_t sp) -> std::optional<std::pair<uint32_t, uint32_t>> {
      ++asked;
      if (sp > sp0) return std::nullopt;  // returned to the caller
      return std::make_pair(pc, pc + 4);
    });
    REQUIRE(fin);
    CHECK(fin->reason == StopReason::Step);
    // sgemm keeps sp: the step runs the warp's work to its end (its TMC 0), 1,322 lines' worth.
    CHECK(asked == 1322);
    CHECK(dm(l) - before == 24713);
  }
  SECTION("a fault stop: the halt, then the stop's reads") {
    Live l = open_session("fault", SessionMode::Live);
    const uint64_t before = dm(l);
    auto ev = l.s->resume();
    REQUIRE(ev);
    REQUIRE(ev->reason == StopReason::Exception);
    CHECK(dm(l) - before == 4341);
  }
  SECTION("continuing past a warp that waits at a breakpoint on a BAR: the others run until it can step past") {
    Live l = open_session("reduce", SessionMode::Live);
    auto sym = Symbols::load(kExamples + "/reduce.elf");
    REQUIRE(sym);
    auto entry = sym->symbol_address("reduce");
    REQUIRE(entry);
    const uint32_t bar = first_bar(*l.s, *entry);
    REQUIRE(l.s->add_breakpoint(bar));
    auto h1 = l.s->resume();
    REQUIRE(h1);
    REQUIRE(h1->reason == StopReason::Breakpoint);
    CHECK(h1->hits[0].pc == bar);
    const uint64_t before = dm(l);
    auto h2 = l.s->resume();
    REQUIRE(h2);
    REQUIRE(h2->reason == StopReason::Breakpoint);
    CHECK(h2->hits[0].pc == bar);
    CHECK(h2->hits[0].warp != h1->hits[0].warp);  // another warp reached the BAR while the first waited
    // The step onto the BAR, the others resumed and halted around a slice, the step past, the stop.
    CHECK(dm(l) - before == 4384);
  }
  SECTION("a breakpoint stop with a store: the checkpoint's dirty pages are read through the DM too") {
    TempStore dir;
    Live l = open_session("sgemm", SessionMode::Live, true, {1, 1, 4, 4}, dir.path);
    auto ev = l.s->run_to(2000);
    REQUIRE(ev);
    const WarpId running = first_running(*l.s);  // a warp sits on the breakpoint: the resume departs from it
    REQUIRE(l.s->add_breakpoint(l.s->context().cores[running.core].warps[running.slot].pc));
    const uint64_t before = dm(l);
    auto hit = l.s->resume();
    REQUIRE(hit);
    REQUIRE(hit->reason == StopReason::Breakpoint);
    CHECK(l.s->stats().checkpoints == 4);  // the launch's start, the run_to stop, the departure, the hit
    // The departure's checkpoint (the warps read again) and the hit, each writing the pages dirtied
    // since the last checkpoint, read by injected loads (6n + 7 a page of n words).
    CHECK(dm(l) - before == 14900);
  }
}

TEST_CASE("a live breakpoint or watch hit the filter drops costs no stop and no mark", "[live]") {
  TempStore dir;
  auto image = load_kernel_image(kExamples + "/reduce.elf");
  REQUIRE(image);
  std::vector<std::pair<WarpId, uint32_t>> kept;  // the kept hit, live and re-launched
  for (SessionMode mode : {SessionMode::Live, SessionMode::Relaunch}) {
    Live l = open_session("reduce", mode, true, {1, 1, 4, 4},
                          dir.path + (mode == SessionMode::Live ? "/live" : "/relaunch"));
    auto launch = resolve_grid_launch(*image, l.s->config(), {});
    REQUIRE(launch);
    REQUIRE(l.s->add_breakpoint(launch->entry_pc));
    uint32_t seen = 0;
    l.s->set_breakpoint_filter([&](const StopEvent& hit) {
      CHECK(l.s->evaluating_hit());
      CHECK(l.s->context().kernel_instructions == hit.instructions);
      return ++seen == 3;
    });
    auto ev = l.s->resume();
    REQUIRE(ev);
    REQUIRE(ev->reason == StopReason::Breakpoint);
    CHECK(seen == 3);
    CHECK(l.s->stats().filtered_hits == 2);
    CHECK(l.s->stats().stops == 1);
    auto marks = l.s->marks();
    REQUIRE(marks);
    REQUIRE(marks->size() == 1);
    CHECK((*marks)[0].when.instret == ev->instructions);
    REQUIRE_FALSE(ev->hits.empty());
    kept.emplace_back(ev->hits[0].warp,
                      l.s->context().cores[ev->hits[0].warp.core].warps[ev->hits[0].warp.slot].cta_linear);
    l.s->set_breakpoint_filter(nullptr);
    for (const Breakpoint& b : l.s->breakpoints()) REQUIRE(l.s->remove_breakpoint(b.id));
    auto end = l.s->resume();
    REQUIRE(end);
    CHECK(end->reason == StopReason::Exited);
  }
  // The same hit: warp and CTA (a live departure may shift the launch's count, docs/live.md).
  CHECK(kept[0] == kept[1]);

  Live w = open_session("histogram", SessionMode::Live, true, {1, 1, 4, 4}, dir.path + "/watch");
  WatchSpec spec;
  spec.addr = memmap::kLocalMemBase;  // word 0 of core 0: every CTA counts its bin 0 there
  spec.kind = kWatchRead | kWatchWrite;
  spec.local = true;
  spec.core = 0;
  REQUIRE(w.s->add_watchpoint(spec));
  uint32_t seen = 0;
  w.s->set_breakpoint_filter([&](const StopEvent& hit) {
    CHECK(hit.reason == StopReason::Watchpoint);
    CHECK(w.s->context().kernel_instructions == hit.instructions);
    return ++seen == 5;
  });
  auto ev = w.s->resume();
  REQUIRE(ev);
  REQUIRE(ev->reason == StopReason::Watchpoint);
  CHECK(w.s->stats().filtered_hits == 4);
  CHECK(w.s->stats().stops == 1);
  auto marks = w.s->marks();
  REQUIRE(marks);
  CHECK(marks->size() == 1);
  CHECK(w.s->stats().passes == 1);
}

TEST_CASE("a live next in a spin loop ends at the watchdog, at the count the re-launch step ends at", "[live]") {
  // hang.c's `while (go == 0) {}` never ends: the launch's budget does (issue 32). Live, the step
  // runs by DM steps, then by range runs of the focus warp alone (EBREAKs at the range's exits),
  // which the device counts against its watchdog like any run. One DM step at a time, 2 M steps
  // cost ~26 M DM accesses (and the default budget, 200 M, minutes).
  const uint64_t budget = 2'000'000;
  auto sym = Symbols::load(kExamples + "/hang.elf");
  REQUIRE(sym);
  std::string src;
  // The source next to the test's (meson compiles from the build directory), or beside the build directory.
  for (const std::string& path : {(std::filesystem::path(__FILE__).parent_path() / "../examples/hang.c").string(),
                                  kExamples + "/../../examples/hang.c"}) {
    std::ifstream in(path);
    if (in && std::getline(in, src, '\0')) break;
  }
  uint32_t line = 0, n = 0;
  for (size_t at = 0, next; at < src.size(); at = next + 1) {
    next = src.find('\n', at);
    if (next == std::string::npos) next = src.size();
    ++n;
    if (src.compare(at, next - at, "  while (go == 0) {") == 0) line = n;
  }
  REQUIRE(line > 0);
  auto where = sym->resolve("hang.c:" + std::to_string(line));
  REQUIRE(where);
  REQUIRE(where->addresses.size() == 1);
  const uint32_t spin = where->addresses[0];
  for (SessionMode mode : {SessionMode::Relaunch, SessionMode::Live}) {
    CAPTURE(session_mode_name(mode));
    Live l = open_session("hang", mode, true, {1, 1, 4, 4}, "", budget);
    REQUIRE(l.s->add_breakpoint(spin));
    auto hit = l.s->resume();
    REQUIRE(hit);
    REQUIRE(hit->reason == StopReason::Breakpoint);
    for (const Breakpoint& b : l.s->breakpoints()) REQUIRE(l.s->remove_breakpoint(b.id));
    const WarpId w = hit->hits[0].warp;
    const auto range0 = sym->line_range(spin);
    REQUIRE(range0);
    const uint64_t before = dm(l);
    // `next` as the front end asks it, with a focus lane: stay while the PC is in the line.
    auto ev = l.s->step(w, 1u, [&](uint32_t pc, uint32_t) -> std::optional<std::pair<uint32_t, uint32_t>> {
      if (pc >= range0->first && pc < range0->second) return range0;
      return std::nullopt;
    });
    REQUIRE(ev);
    CHECK(ev->reason == StopReason::Watchdog);
    CHECK(ev->instructions == budget);
    CHECK(ev->exception.cause == Cause::Watchdog);
    if (mode == SessionMode::Live) {
      CHECK(dm(l) - before < 100'000);
      // The warp stopped in the loop, every warp halted and the EBREAKs of the range run gone.
      const WarpState& ws = l.s->context().cores[w.core].warps[w.slot];
      CHECK((ws.pc >= range0->first && ws.pc < range0->second));
      auto word = l.s->read_memory(range0->second, 4);
      REQUIRE(word);
      uint32_t v = 0;
      std::memcpy(&v, word->data(), 4);
      CHECK(v != 0x00100073u);  // not an EBREAK
      CHECK(l.s->info().held);
      // As in re-launch mode: the stop cannot be continued.
      CHECK_FALSE(l.s->resume());
    }
  }
}
