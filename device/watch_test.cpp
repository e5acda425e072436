// Tests of the driver's debugger support (docs/device.md, "Debugger support"): before-triggers and
// CTA-filtered triggers, peek_warp, continuing past a planted breakpoint without a re-launch, and
// watchpoints on device data memory. Kernels are hand-assembled grid kernels behind the dispatch
// window; every "same state" check compares against a Budget stop at the same instruction count.
#include <bit>
#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "device/cmdbuf_builder.hpp"
#include "device/driver.hpp"
#include "device/encode.hpp"
#include "device/host_runtime.hpp"
#include "device/test_support.hpp"

using namespace vx;
using namespace vx::test;

namespace {

constexpr uint32_t kImage = 0x80000000;
constexpr uint32_t kKernelOffset = 0x100;
constexpr uint32_t kKernel = kImage + kKernelOffset;
constexpr uint32_t kOut = 64;  // the per-thread array starts 64 bytes into the buffer; word 0 is shared

constexpr uint32_t mul(uint32_t rd, uint32_t rs1, uint32_t rs2) { return r_type(1, rs2, rs1, 0, rd, 0x33); }
constexpr uint32_t slli(uint32_t rd, uint32_t rs1, uint32_t sh) { return i_type(int32_t(sh), rs1, 1, rd, 0x13); }
constexpr uint32_t amoadd(uint32_t rd, uint32_t rs2, uint32_t rs1) { return r_type(0, rs2, rs1, 2, rd, 0x2f); }
constexpr uint32_t lr(uint32_t rd, uint32_t rs1) { return r_type(0x08, 0, rs1, 2, rd, 0x2f); }
constexpr uint32_t sc(uint32_t rd, uint32_t rs2, uint32_t rs1) { return r_type(0x0c, rs2, rs1, 2, rd, 0x2f); }

// t0 = the global thread index (blockIdx.x * blockDim.x + threadIdx.x); t1 = &out[t0] (a0 + kOut + 4 * t0).
std::vector<uint32_t> prologue() {
  return {rv::csrr(t0, 0xCD6), rv::csrr(t1, 0xCD9), rv::csrr(t2, 0xCD3), mul(t0, t0, t1),
          rv::add(t0, t0, t2), slli(t1, t0, 2),     rv::add(t1, t1, a0), rv::addi(t1, t1, int32_t(kOut))};
}

std::vector<uint32_t> with_prologue(std::vector<uint32_t> body) {
  std::vector<uint32_t> k = prologue();
  k.insert(k.end(), body.begin(), body.end());
  return k;
}

// Ten times: out[i] += i + 1, and the shared word gets 1 per lane (amoadd).
constexpr uint32_t kLoopBody = 9;  // index of the loop's first instruction (the lw) in loop_kernel()
std::vector<uint32_t> loop_kernel() {
  return with_prologue({
      rv::li(t3, 10),        // 8
      rv::lw(t4, t1, 0),     // 9: loop
      rv::add(t4, t4, t0),   //
      rv::addi(t4, t4, 1),   //
      rv::sw(t4, t1, 0),     //
      rv::li(t5, 1),         //
      amoadd(zero, t5, a0),  //
      rv::addi(t3, t3, -1),  //
      rv::bne(t3, zero, -28),
      rv::ret(),
  });
}

struct Setup {
  DeviceConfig cfg{1, 2, 4, 4};
  std::vector<uint32_t> kernel;
  uint32_t ctas = 6;
  uint32_t block = 8;
  uint32_t lmem = 0;
  uint64_t seed = 7;
};

struct Run {
  std::unique_ptr<Driver> d;
  uint32_t buf = 0;
  uint64_t id = 0;
};

constexpr uint32_t kBufBytes = 4096;

// A fresh device with the image loaded, a zeroed buffer (a0) and the grid submitted. Everything is
// deterministic, so two Runs of one Setup are the same run.
Run start(const Setup& s) {
  auto opened = open_model_device(s.cfg, RunOptions{s.seed, 0});
  REQUIRE(opened.ok());
  Run r;
  r.d = std::move(opened).value();
  REQUIRE(r.d->mem_reserve(kImage, 0x1000).ok());
  auto words = windowed_image(s.kernel, kKernelOffset);
  REQUIRE(r.d->copy_to_device(kImage, {reinterpret_cast<const uint8_t*>(words.data()), words.size() * 4}).ok());
  auto buf = r.d->mem_alloc(kBufBytes);
  REQUIRE(buf.ok());
  r.buf = *buf;
  std::vector<uint8_t> zero(kBufBytes, 0);
  REQUIRE(r.d->copy_to_device(r.buf, zero).ok());
  HostRuntime rt(*r.d);
  GridLaunch l;
  l.start_pc = kImage;
  l.entry_pc = kKernel;
  l.arg_ptr = r.buf;
  l.grid = {s.ctas, 1, 1};
  l.block = {s.block, 1, 1};
  l.lmem_bytes = s.lmem;
  auto id = rt.launch_grid(l);
  REQUIRE(id.ok());
  r.id = *id;
  return r;
}

std::string describe(const DeviceEvent& ev) {
  return std::string(event_kind_name(ev.kind)) + " " + ev.message +
         (ev.kind == EventKind::Exception ? " " + ev.exception.to_string() : std::string());
}

std::vector<uint8_t> read_buf(Driver& d, uint32_t addr, uint32_t n = kBufBytes) {
  std::vector<uint8_t> v(n);
  REQUIRE(d.copy_from_device(addr, v).ok());
  return v;
}

uint32_t word_at(const std::vector<uint8_t>& b, uint32_t off = 0) {
  uint32_t v;
  std::memcpy(&v, b.data() + off, 4);
  return v;
}

DeviceContext context_of(Driver& d) {
  auto c = d.save_context();
  INFO((c ? std::string() : c.error().message));
  REQUIRE(c.ok());
  return std::move(c).value();
}

// The state of a fresh run of `s` stopped by a budget of `count` instructions.
void require_same_as_budget_stop(const Setup& s, Driver& stopped, uint32_t buf) {
  const uint64_t count = stopped.stats().instructions;
  Run ref = start(s);
  DeviceEvent ev = ref.d->wait(count);
  INFO(describe(ev));
  REQUIRE(ev.kind == EventKind::Budget);
  REQUIRE(ref.d->stats().instructions == count);
  CHECK(context_of(*ref.d) == context_of(stopped));
  CHECK(read_buf(*ref.d, ref.buf) == read_buf(stopped, buf));
  CHECK(ref.d->stats().lane_instructions == stopped.stats().lane_instructions);
}

// Runs to the end; returns the buffer.
std::vector<uint8_t> finish(Run& r) {
  DeviceEvent ev = r.d->wait();
  INFO(describe(ev));
  REQUIRE(ev.kind == EventKind::Completed);
  return read_buf(*r.d, r.buf);
}

}  // namespace

// --- 1. Triggers ---------------------------------------------------------------------

TEST_CASE("a before-trigger stops before the warp's instruction, in the state of a budget stop at that count",
          "[trigger]") {
  Setup s;
  s.kernel = loop_kernel();
  Run r = start(s);
  WarpTrigger t;
  t.core = 1;
  t.slot = 1;
  t.min_instret = 40;
  t.before = true;
  REQUIRE(r.d->set_warp_trigger(t).ok());
  DeviceEvent ev = r.d->wait();
  INFO(describe(ev));
  REQUIRE(ev.kind == EventKind::Trigger);
  auto w = r.d->peek_warp(1, 1);
  REQUIRE(w.ok());
  CHECK(w->instret == 39);  // the 40th instruction has not executed
  const uint32_t pc = w->pc;
  require_same_as_budget_stop(s, *r.d, r.buf);

  // The next wait() executes that very instruction: the trigger is gone (it does not fire again for
  // it), and a new one for the instruction after it fires right after.
  t.min_instret = 41;
  REQUIRE(r.d->set_warp_trigger(t).ok());
  ev = r.d->wait();
  REQUIRE(ev.kind == EventKind::Trigger);
  w = r.d->peek_warp(1, 1);
  REQUIRE(w.ok());
  CHECK(w->instret == 40);
  CHECK(w->pc != pc);
  require_same_as_budget_stop(s, *r.d, r.buf);

  // Cleared when it fired: the launch completes, exactly like the undisturbed run.
  auto got = finish(r);
  Run ref = start(s);
  CHECK(finish(ref) == got);
  CHECK(ref.d->stats().instructions == r.d->stats().instructions);
}

TEST_CASE("a before-trigger due at once fires before the warp's next instruction, not after it", "[trigger]") {
  Setup s;
  s.kernel = loop_kernel();
  Run r = start(s);
  REQUIRE(r.d->wait(300).kind == EventKind::Budget);
  auto w0 = r.d->peek_warp(0, 0);
  REQUIRE(w0.ok());
  REQUIRE(w0->active);
  WarpTrigger t;
  t.min_instret = w0->instret;  // already reached: the next instruction of (0, 0) is the one
  t.before = true;
  REQUIRE(r.d->set_warp_trigger(t).ok());
  REQUIRE(r.d->wait().kind == EventKind::Trigger);
  auto w1 = r.d->peek_warp(0, 0);
  REQUIRE(w1.ok());
  CHECK(w1->instret == w0->instret);
  CHECK(w1->pc == w0->pc);
  require_same_as_budget_stop(s, *r.d, r.buf);
}

TEST_CASE("a trigger with cta_linear matches only that CTA's warp, across slot reuse", "[trigger]") {
  // One core of two single-warp slots and eight CTAs: every slot runs several CTAs one after another.
  Setup s;
  s.cfg = DeviceConfig{1, 1, 2, 4};
  s.kernel = loop_kernel();
  s.ctas = 8;
  s.block = 4;
  constexpr uint32_t kCta = 5;
  // Finish-only triggers (min_instret never reached): the CTA's warp finishing fires them, another
  // CTA's warp finishing in the same slot does not. Exactly one of the two slots runs CTA 5.
  int fired = 0;
  for (uint32_t slot = 0; slot < 2; ++slot) {
    Run r = start(s);
    WarpTrigger t;
    t.slot = slot;
    t.min_instret = UINT64_MAX;
    t.cta_linear = kCta;
    REQUIRE(r.d->set_warp_trigger(t).ok());
    DeviceEvent ev = r.d->wait();
    INFO("slot " << slot << ": " << describe(ev));
    if (ev.kind == EventKind::Completed) continue;
    REQUIRE(ev.kind == EventKind::Trigger);
    ++fired;
    auto w = r.d->peek_warp(0, slot);
    REQUIRE(w.ok());
    CHECK(!w->active);
    CHECK(w->cta_linear == kCta);
    CHECK(r.d->save_context()->launch.next_unit > 2);  // the slot ran an earlier CTA: it was reused

    // Without the filter the same trigger fires at the first CTA that finishes in the slot.
    Run plain = start(s);
    t.cta_linear = UINT32_MAX;
    REQUIRE(plain.d->set_warp_trigger(t).ok());
    REQUIRE(plain.d->wait().kind == EventKind::Trigger);
    CHECK(plain.d->peek_warp(0, slot)->cta_linear != kCta);

    // A before-trigger on the CTA stops before the CTA's first instruction in the slot.
    Run before = start(s);
    t.cta_linear = kCta;
    t.min_instret = 0;
    t.before = true;
    REQUIRE(before.d->set_warp_trigger(t).ok());
    REQUIRE(before.d->wait().kind == EventKind::Trigger);
    w = before.d->peek_warp(0, slot);
    REQUIRE(w.ok());
    CHECK(w->active);
    CHECK(w->cta_linear == kCta);
    CHECK(w->pc == kImage);  // a reused slot restarts at the dispatch window
    require_same_as_budget_stop(s, *before.d, before.buf);
  }
  CHECK(fired == 1);
}

// --- 4. peek_warp ----------------------------------------------------------------------

TEST_CASE("peek_warp copies one slot between waits and refuses without a launch or for a missing slot", "[peek]") {
  Setup s;
  s.kernel = loop_kernel();
  Run r = start(s);
  CHECK(!r.d->peek_warp(0, 0).ok());  // submitted, not started: no launch in flight yet
  REQUIRE(r.d->wait(123).kind == EventKind::Budget);
  DeviceContext ctx = context_of(*r.d);
  for (uint32_t c = 0; c < 2; ++c)
    for (uint32_t w = 0; w < 4; ++w) {
      auto p = r.d->peek_warp(c, w);
      REQUIRE(p.ok());
      CHECK(*p == ctx.cores[c].warps[w]);
    }
  auto bad = r.d->peek_warp(0, 4);
  REQUIRE(!bad.ok());
  CHECK_THAT(bad.error().message, Catch::Matchers::Contains("slot 4 does not exist"));
  CHECK(!r.d->peek_warp(2, 0).ok());
  finish(r);
  auto done = r.d->peek_warp(0, 0);
  REQUIRE(!done.ok());
  CHECK_THAT(done.error().message, Catch::Matchers::Contains("no launch is in flight"));
}

// --- 3. Continuing past a breakpoint ---------------------------------------------------------

TEST_CASE("continue_past_breakpoint goes on from the stop and the launch ends like an undisturbed run",
          "[bpcontinue]") {
  Setup s;
  s.kernel = loop_kernel();
  Run ref = start(s);
  auto expected = finish(ref);

  Run r = start(s);
  const uint32_t bp = kKernel + 4 * kLoopBody;
  const uint32_t original = s.kernel[kLoopBody];
  const uint32_t ebreak = rv::ebreak();
  REQUIRE(r.d->copy_to_device(bp, {reinterpret_cast<const uint8_t*>(&ebreak), 4}).ok());
  // Not valid before a breakpoint stop.
  auto early = r.d->continue_past_breakpoint({});
  REQUIRE(!early.ok());
  CHECK_THAT(early.error().message, Catch::Matchers::Contains("not a breakpoint exception"));
  REQUIRE(r.d->wait(5).kind == EventKind::Budget);
  CHECK(!r.d->continue_past_breakpoint({}).ok());

  // Every warp hits the planted EBREAK once per iteration; each continues with the original word.
  uint32_t hits = 0;
  for (;;) {
    DeviceEvent ev = r.d->wait();
    INFO(describe(ev));
    if (ev.kind == EventKind::Completed) break;
    REQUIRE(ev.kind == EventKind::Exception);
    REQUIRE(ev.exception.cause == Cause::Breakpoint);
    REQUIRE(ev.exception.pc == bp);
    ++hits;
    auto w = r.d->peek_warp(ev.exception.core, ev.exception.warp);
    REQUIRE(w.ok());
    CHECK(w->pc == bp);
    if (hits == 3) {
      // The stop is the state of a budget stop at its count: nothing ran twice or was skipped.
      Run cmp = start(s);
      REQUIRE(cmp.d->wait(r.d->stats().instructions).kind == EventKind::Budget);
      DeviceContext a = context_of(*cmp.d), b = context_of(*r.d);
      CHECK(a == b);
    }
    // An override naming a slot that does not exist is refused and changes nothing.
    CHECK(!r.d->continue_past_breakpoint({FetchOverride{ev.exception.core, 4, bp, original}}).ok());
    REQUIRE(r.d->continue_past_breakpoint({FetchOverride{ev.exception.core, ev.exception.warp, bp, original}}).ok());
    // Once per stop.
    CHECK(!r.d->continue_past_breakpoint({}).ok());
  }
  // 6 CTAs x 2 warps x 10 iterations.
  CHECK(hits == 120);
  REQUIRE(r.d->copy_to_device(bp, {reinterpret_cast<const uint8_t*>(&original), 4}).ok());
  CHECK(read_buf(*r.d, r.buf) == expected);
  CHECK(r.d->stats().instructions == ref.d->stats().instructions);
  CHECK(r.d->stats().lane_instructions == ref.d->stats().lane_instructions);
  CHECK(r.d->exit_code() == ref.d->exit_code());
  CHECK(word_at(expected) == 6 * 8 * 10);  // the kernel itself ran right
}

TEST_CASE("continue_past_breakpoint refuses after an exception that is not a breakpoint", "[bpcontinue]") {
  Setup s;
  s.kernel = with_prologue({rv::sw(t0, t1, 2), rv::ret()});  // misaligned store
  Run r = start(s);
  DeviceEvent ev = r.d->wait();
  REQUIRE(ev.kind == EventKind::Exception);
  REQUIRE(ev.exception.cause == Cause::MisalignedStore);
  auto c = r.d->continue_past_breakpoint({});
  REQUIRE(!c.ok());
  CHECK_THAT(c.error().message, Catch::Matchers::Contains("not a breakpoint exception"));
  CHECK(r.d->wait().kind == EventKind::Exception);  // still stopped
}

// --- 2. Watchpoints ----------------------------------------------------------------------------

namespace {

// Collects every Watch event's hits until the launch completes.
std::vector<WatchHit> collect_hits(Run& r, std::vector<uint64_t>* counts = nullptr) {
  std::vector<WatchHit> all;
  for (;;) {
    DeviceEvent ev = r.d->wait();
    INFO(describe(ev));
    if (ev.kind == EventKind::Completed) break;
    REQUIRE(ev.kind == EventKind::Watch);
    auto hits = r.d->take_watch_hits();
    REQUIRE(!hits.empty());
    CHECK(r.d->take_watch_hits().empty());  // handed over once
    for (auto& h : hits) {
      all.push_back(h);
      if (counts) counts->push_back(r.d->stats().instructions);
    }
  }
  return all;
}

std::vector<uint8_t> bytes_of(std::initializer_list<uint32_t> words) {
  std::vector<uint8_t> b(words.size() * 4);
  std::memcpy(b.data(), words.begin(), b.size());
  return b;
}

}  // namespace

TEST_CASE("set_watchpoints refuses ranges it cannot watch and names them", "[watch]") {
  Setup s;
  s.kernel = loop_kernel();
  Run r = start(s);
  auto err = [&](WatchRange w) {
    auto res = r.d->set_watchpoints({WatchRange{}, w});
    REQUIRE(!res.ok());
    return res.error().message;
  };
  CHECK_THAT(err(WatchRange{9, 0x20000, 0}), Catch::Matchers::Contains("watch range 1 (id 9)"));
  CHECK_THAT(err(WatchRange{9, 0x20000, 4097}), Catch::Matchers::Contains("4096"));
  CHECK_THAT(err(WatchRange{9, 0xfffffffe, 4}), Catch::Matchers::Contains("4 GiB"));
  CHECK_THAT(err(WatchRange{9, 0x20000, 4, 0}), Catch::Matchers::Contains("kind"));
  CHECK_THAT(err(WatchRange{9, 0x20000, 4, kWatchRead, false, 2}), Catch::Matchers::Contains("core 2"));
  CHECK_THAT(err(WatchRange{9, 0x20000, 4, kWatchRead, true}), Catch::Matchers::Contains("local memory"));
  CHECK(r.d->set_watchpoints({WatchRange{1, 0xfffffffc, 4}, WatchRange{2, 0x20000, 4096, 3}}).ok());
  CHECK(r.d->set_watchpoints({}).ok());
  finish(r);
}

TEST_CASE("a write watch on global words reports a multi-lane store once, with every lane and the old bytes",
          "[watch]") {
  // Each thread writes out[i] = i + 100; then every lane of the warp stores its index to the shared word.
  Setup s;
  s.kernel = with_prologue({rv::addi(t2, t0, 100), rv::sw(t2, t1, 0), rv::sw(t0, a0, 0), rv::ret()});
  s.ctas = 2;
  s.block = 8;  // 2 warps per CTA: 4 warps, threads 0..15
  Run r = start(s);
  std::vector<uint8_t> fill(16 * 4);
  for (uint32_t i = 0; i < fill.size(); ++i) fill[i] = uint8_t(0xa0 + i);
  REQUIRE(r.d->copy_to_device(r.buf + kOut, fill).ok());
  REQUIRE(r.d->set_watchpoints({
                                   WatchRange{1, r.buf + kOut + 16, 16},              // out[4..7]: one warp's lanes
                                   WatchRange{2, r.buf + kOut + 20, 2},               // half of out[5]: lane 1 only
                                   WatchRange{3, r.buf, 4},                           // the shared word
                                   WatchRange{4, r.buf + kOut + 16, 16, kWatchRead},  // read-only: never
                               })
              .ok());
  std::vector<uint64_t> counts;
  auto hits = collect_hits(r, &counts);
  std::vector<WatchHit> r1, r2, r3;
  for (const auto& h : hits) {
    CHECK(h.id != 4);
    (h.id == 1 ? r1 : h.id == 2 ? r2 : r3).push_back(h);
  }
  REQUIRE(r1.size() == 1);
  REQUIRE(r2.size() == 1);
  CHECK(r1[0].lanes == 0xfu);
  CHECK(r1[0].kind == kWatchWrite);
  CHECK(r1[0].addr == r.buf + kOut + 16);
  CHECK(r1[0].pc == kKernel + 4 * 9);
  CHECK(r1[0].old_bytes == std::vector<uint8_t>(fill.begin() + 16, fill.begin() + 32));
  CHECK(r2[0].lanes == 0x2u);
  CHECK(r2[0].addr == r.buf + kOut + 20);
  CHECK(r2[0].old_bytes == std::vector<uint8_t>(fill.begin() + 20, fill.begin() + 22));
  CHECK(r2[0].core == r1[0].core);
  CHECK(r2[0].slot == r1[0].slot);
  // The shared word: one hit per warp, all lanes, old bytes the previous warp's last lane's index.
  REQUIRE(r3.size() == 4);
  for (const auto& h : r3) {
    CHECK(h.lanes == 0xfu);
    CHECK(h.addr == r.buf);
    CHECK(h.pc == kKernel + 4 * 10);
  }
  // Old values chain: each hit's old value is what the warp before stored, its highest lane's index.
  CHECK(r3[0].old_bytes == bytes_of({0}));
  for (size_t k = 1; k < r3.size(); ++k) {
    CHECK(word_at(r3[k].old_bytes) % 4 == 3);
    CHECK(r3[k].old_bytes != r3[k - 1].old_bytes);
  }
}

TEST_CASE("a watch stop leaves the state of a budget stop at the same count", "[watch]") {
  Setup s;
  s.kernel = loop_kernel();
  Run r = start(s);
  REQUIRE(r.d->set_watchpoints({WatchRange{1, r.buf + kOut + 4 * 13, 4}}).ok());
  for (int stop = 0; stop < 3; ++stop) {
    DeviceEvent ev = r.d->wait();
    INFO(describe(ev));
    REQUIRE(ev.kind == EventKind::Watch);
    auto hits = r.d->take_watch_hits();
    REQUIRE(hits.size() == 1);
    // Right after the store: the warp is at the next instruction, which has not run.
    auto w = r.d->peek_warp(hits[0].core, hits[0].slot);
    REQUIRE(w.ok());
    CHECK(w->pc == hits[0].pc + 4);
    CHECK(hits[0].pc == kKernel + 4 * (kLoopBody + 3));
    CHECK(word_at(hits[0].old_bytes) == uint32_t(stop) * 14);  // out[13] += 14 each iteration
    require_same_as_budget_stop(s, *r.d, r.buf);
  }
  REQUIRE(r.d->set_watchpoints({}).ok());
  auto got = finish(r);
  Run ref = start(s);
  CHECK(finish(ref) == got);
}

TEST_CASE("every atomic add on a watched word is one hit with all its lanes, old values rising by the adds",
          "[watch]") {
  Setup s;
  s.kernel = loop_kernel();
  Run r = start(s);
  REQUIRE(r.d->set_watchpoints({WatchRange{7, r.buf, 4, kWatchWrite}}).ok());
  auto hits = collect_hits(r);
  REQUIRE(hits.size() == 6 * 2 * 10);  // warps x iterations
  uint32_t expect = 0;
  for (const auto& h : hits) {
    CHECK(h.id == 7);
    CHECK(h.kind == (kWatchRead | kWatchWrite));  // an AMO reads and writes
    CHECK(h.lanes == 0xfu);
    CHECK(h.pc == kKernel + 4 * (kLoopBody + 5));
    CHECK(word_at(h.old_bytes) == expect);
    expect += uint32_t(std::popcount(h.lanes));
  }
  CHECK(word_at(read_buf(*r.d, r.buf)) == expect);
}

TEST_CASE("a read watch sees loads, LR and AMOs, not stores", "[watch]") {
  Setup s;
  // lw from out[i]; sw to the shared word; lr/sc on out[i] (the SC succeeds).
  s.kernel = with_prologue({rv::lw(t2, t1, 0), rv::sw(t2, a0, 0), lr(t3, t1), sc(t4, t0, t1), rv::ret()});
  s.ctas = 1;
  s.block = 4;
  Run r = start(s);
  REQUIRE(r.d->set_watchpoints({WatchRange{1, r.buf + kOut, 16, kWatchRead}, WatchRange{2, r.buf, 4, kWatchRead},
                                WatchRange{3, r.buf + kOut, 16, kWatchWrite}})
              .ok());
  auto hits = collect_hits(r);
  REQUIRE(hits.size() == 3);
  CHECK(hits[0].id == 1);
  CHECK(hits[0].kind == kWatchRead);
  CHECK(hits[0].pc == kKernel + 4 * 8);
  CHECK(hits[1].id == 1);  // LR
  CHECK(hits[1].pc == kKernel + 4 * 10);
  CHECK(hits[2].id == 3);  // SC: a write
  CHECK(hits[2].kind == kWatchWrite);
  CHECK(hits[2].lanes == 0xfu);
  CHECK(hits[2].pc == kKernel + 4 * 11);
}

TEST_CASE("a failed SC.W is no access: a write watch does not see it", "[watch]") {
  Setup s;
  // SC without a reservation fails in every lane; then a plain store marks the end.
  s.kernel = with_prologue({sc(t4, t0, t1), rv::sw(t4, t1, 0), rv::ret()});
  s.ctas = 1;
  s.block = 4;
  Run r = start(s);
  REQUIRE(r.d->set_watchpoints({WatchRange{1, r.buf + kOut, 16, kWatchRead | kWatchWrite}}).ok());
  auto hits = collect_hits(r);
  REQUIRE(hits.size() == 1);
  CHECK(hits[0].pc == kKernel + 4 * 9);              // the sw, not the sc
  CHECK(word_at(read_buf(*r.d, r.buf), kOut) == 1);  // sc.w failed: rd = 1
}

TEST_CASE("a local-memory watch sees only local accesses of its core", "[watch]") {
  Setup s;
  s.cfg = DeviceConfig{1, 2, 4, 4};
  // Every warp stores its thread index into local word 0 (the first CTA slot's area).
  s.kernel = with_prologue({rv::lui(t2, memmap::kLocalMemBase >> 12), rv::sw(t0, t2, 0), rv::ret()});
  s.ctas = 4;
  s.block = 4;
  s.lmem = 64;
  const uint32_t local = memmap::kLocalMemBase;
  for (int32_t core : {1, -1}) {
    INFO("core " << core);
    Run r = start(s);
    REQUIRE(r.d->set_watchpoints({WatchRange{1, local, 4, kWatchWrite, true, core},
                                  WatchRange{2, local, 4, kWatchWrite, false, -1}})  // global: never local
                .ok());
    auto hits = collect_hits(r);
    uint32_t on_core[2] = {0, 0};
    for (const auto& h : hits) {
      CHECK(h.id == 1);
      CHECK(h.addr == local);
      CHECK(h.lanes == 0xfu);
      ++on_core[h.core];
    }
    CHECK(on_core[0] + on_core[1] == (core == -1 ? 4u : on_core[1]));
    CHECK(on_core[1] > 0);
    if (core == 1) CHECK(on_core[0] == 0);
    if (core == -1) CHECK(on_core[0] > 0);
  }
}

TEST_CASE("a faulting instruction is no watch hit", "[watch]") {
  // On the bare machine: after the fault, run() again must fault again, not report a leftover hit.
  Bench b;
  REQUIRE(b.m.set_watchpoints({WatchRange{1, Bench::kData, 64, kWatchWrite}}).ok());
  // Lane 0 stores to kData (watched), lane 1 to a misaligned address: the instruction faults.
  b.load_kernel({rv::lui(t1, Bench::kData >> 12), rv::csrr(t2, 0xCD3), slli(t2, t2, 1), rv::add(t1, t1, t2),
                 rv::sw(t2, t1, 0), rv::ret()});
  RunResult first = b.run_grid({1, 1, 1}, {2, 1, 1});
  REQUIRE(first.stop == RunStop::Exception);
  CHECK(first.exception.cause == Cause::MisalignedStore);
  CHECK(b.m.take_watch_hits().empty());
  RunResult again = b.m.run(1000);
  CHECK(again.stop == RunStop::Exception);
  CHECK(b.m.take_watch_hits().empty());
  CHECK(b.read32(Bench::kData) == 0);

  // The same store with only lane 0 (aligned) retires and is a hit.
  Bench ok;
  REQUIRE(ok.m.set_watchpoints({WatchRange{1, Bench::kData, 64, kWatchWrite}}).ok());
  ok.load_kernel({rv::lui(t1, Bench::kData >> 12), rv::csrr(t2, 0xCD3), slli(t2, t2, 1), rv::add(t1, t1, t2),
                  rv::sw(t2, t1, 0), rv::ret()});
  RunResult hit = ok.run_grid({1, 1, 1}, {1, 1, 1});
  CHECK(hit.stop == RunStop::Watch);
  CHECK(ok.m.take_watch_hits().size() == 1);
}

TEST_CASE("the debugger's copies and instruction fetch never hit a watchpoint", "[watch]") {
  Setup s;
  s.kernel = loop_kernel();
  Run r = start(s);
  REQUIRE(r.d->set_watchpoints({WatchRange{1, r.buf + 1024, 16, kWatchRead | kWatchWrite},
                                WatchRange{2, kImage, 1024, kWatchRead | kWatchWrite}})
              .ok());
  for (int i = 0; i < 5; ++i) {
    REQUIRE(r.d->wait(200).kind == EventKind::Budget);
    std::vector<uint8_t> v(16, uint8_t(i));
    REQUIRE(r.d->copy_to_device(r.buf + 1024, v).ok());
    REQUIRE(r.d->copy_from_device(r.buf + 1024, v).ok());
    CHECK(r.d->take_watch_hits().empty());
  }
  r.d->abort();  // the ranges stay set across abort()
  CHECK(r.d->wait().kind == EventKind::Idle);
  Setup touch;
  touch.kernel = with_prologue({rv::sw(t0, a0, 1024), rv::ret()});
  touch.ctas = 1;
  touch.block = 4;
  // Same device: load the new kernel and launch it.
  auto words = windowed_image(touch.kernel, kKernelOffset);
  REQUIRE(r.d->copy_to_device(kImage, {reinterpret_cast<const uint8_t*>(words.data()), words.size() * 4}).ok());
  HostRuntime rt(*r.d);
  GridLaunch l;
  l.start_pc = kImage;
  l.entry_pc = kKernel;
  l.arg_ptr = r.buf;
  l.block = {4, 1, 1};
  REQUIRE(rt.launch_grid(l).ok());
  DeviceEvent ev = r.d->wait();
  INFO(describe(ev));
  REQUIRE(ev.kind == EventKind::Watch);
  auto hits = r.d->take_watch_hits();
  REQUIRE(hits.size() == 1);
  CHECK(hits[0].id == 1);
  CHECK(hits[0].old_bytes == std::vector<uint8_t>(16, uint8_t(4)));
  CHECK(r.d->wait().kind == EventKind::Completed);
}

TEST_CASE("a global watch sees accesses through a memory window at their translated address", "[watch]") {
  Setup s;
  constexpr uint32_t kVirtual = 0x40000000;  // unmapped: only the window makes it reachable
  s.kernel = with_prologue({rv::lui(t2, kVirtual >> 12), rv::sw(t0, t2, 8), rv::ret()});
  auto opened = open_model_device(s.cfg, RunOptions{s.seed, 0});
  REQUIRE(opened.ok());
  auto d = std::move(opened).value();
  REQUIRE(d->mem_reserve(kImage, 0x1000).ok());
  auto words = windowed_image(s.kernel, kKernelOffset);
  REQUIRE(d->copy_to_device(kImage, {reinterpret_cast<const uint8_t*>(words.data()), words.size() * 4}).ok());
  auto buf = d->mem_alloc(kBufBytes);
  REQUIRE(buf.ok());
  const uint32_t target = *buf + 2048;
  REQUIRE(d->set_watchpoints({WatchRange{1, target + 8, 4}, WatchRange{2, kVirtual + 8, 4}}).ok());
  CommandBufferBuilder b;
  b.write_reg64(kCmpWindowBase0, kVirtual);
  b.write_reg64(kCmpWindowTarget0, target);
  b.write_reg64(kCmpWindowMode0, cmp_window_mode(true, WindowMode::Shared, kWindowRead | kWindowWrite, 0x1000));
  GridLaunch l;
  l.start_pc = kImage;
  l.entry_pc = kKernel;
  l.block = {4, 1, 1};
  b.launch_grid(l).finish();
  REQUIRE(d->submit(b.bytes()).ok());
  DeviceEvent ev = d->wait();
  INFO(describe(ev));
  REQUIRE(ev.kind == EventKind::Watch);
  auto hits = d->take_watch_hits();
  REQUIRE(hits.size() == 1);
  CHECK(hits[0].id == 1);
  CHECK(hits[0].addr == target + 8);
  CHECK(hits[0].lanes == 0xfu);
  CHECK(d->wait().kind == EventKind::Completed);
  uint32_t v = 0;
  REQUIRE(d->copy_from_device(target + 8, {reinterpret_cast<uint8_t*>(&v), 4}).ok());
  CHECK(v == 3);  // the highest lane's index
}
