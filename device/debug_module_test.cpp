// The Debug Module (seed 000, docs/debug-module.md) at the register level:
// through the Driver (open_model_device + dm_read/dm_write) for launches, and
// over a Bench machine where a test needs to look at warp state directly.
#include "device/debug_module.hpp"

#include <bit>
#include <catch2/catch.hpp>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "device/driver.hpp"
#include "device/host_runtime.hpp"
#include "device/test_support.hpp"

using namespace vx;
using namespace vx::test;
using Catch::Matchers::Contains;

namespace {

constexpr uint32_t kCode = 0x80000000;
constexpr uint32_t kKernel = kCode + 0x100;
constexpr uint32_t kUnmapped = 0x70000000;

constexpr uint32_t mul(uint32_t rd, uint32_t rs1, uint32_t rs2) { return r_type(1, rs2, rs1, 0, rd, 0x33); }
constexpr uint32_t slli(uint32_t rd, uint32_t rs1, uint32_t sh) { return i_type(int32_t(sh), rs1, 1, rd, 0x13); }
constexpr uint32_t slti(uint32_t rd, uint32_t rs1, int32_t imm) { return i_type(imm, rs1, 2, rd, 0x13); }
constexpr uint32_t mret() { return 0x30200073; }

// DCTRL fields as plain numbers (seed 000), independent of the header's constants.
uint32_t hacause(uint32_t dctrl) { return (dctrl >> 9) & 7; }
uint32_t exc_cause(uint32_t dctrl) { return (dctrl >> 13) & 15; }
bool exc(uint32_t dctrl) { return (dctrl >> 12) & 1; }
constexpr uint32_t kActive = 0x80000000;
constexpr uint32_t kSummaryFlags = 0x3f000000;  // anyunavail .. allhalted

// --- Over a Bench machine -------------------------------------------------------------

struct DmBench {
  explicit DmBench(DeviceConfig cfg = {}) : b(cfg), dm(b.m) {}
  uint32_t rd(uint32_t addr) {
    auto r = dm.read(addr);
    REQUIRE(r.ok());
    return *r;
  }
  void wr(uint32_t addr, uint32_t value) { REQUIRE(dm.write(addr, value).ok()); }
  void activate() { wr(dm::kDctrl, kActive); }
  // Selects exactly the warps of `mask` in window 0.
  void select(uint32_t mask) {
    wr(dm::kDselect, rd(dm::kDselect) & ~(0x3ffu << 22));
    wr(dm::kWmask, mask);
  }
  void focus(uint32_t warp, uint32_t thread = 0) { wr(dm::kDselect, dm::dselect(thread, warp, 0)); }
  void request(uint32_t bits) { wr(dm::kDctrl, kActive | bits); }
  // Warp `warp` of core 0 halted by haltreq.
  void halt(uint32_t warp) {
    select(1u << warp);
    request(dm::kHaltReq);
    REQUIRE(b.warp(warp).halted);
  }
  Bench b;
  DebugModule dm;
};

// --- Through the Driver -------------------------------------------------------------

std::unique_ptr<Driver> open_device(const DeviceConfig& cfg = {}) {
  auto d = open_model_device(cfg, RunOptions{});
  REQUIRE(d.ok());
  return std::move(d).value();
}

uint32_t dm_rd(Driver& d, uint32_t addr) {
  auto r = d.dm_read(addr);
  REQUIRE(r.ok());
  return *r;
}

void dm_wr(Driver& d, uint32_t addr, uint32_t value) { REQUIRE(d.dm_write(addr, value).ok()); }

std::span<const uint8_t> bytes_of(const std::vector<uint32_t>& words) {
  return {reinterpret_cast<const uint8_t*>(words.data()), words.size() * 4};
}

// Image at kCode: the five-instruction dispatch window, then the kernel at kKernel.
void place_grid_kernel(Driver& d, const std::vector<uint32_t>& kernel) {
  REQUIRE(d.mem_reserve(kCode, 0x1000).ok());
  std::vector<uint32_t> image = windowed_image(kernel, kKernel - kCode);
  REQUIRE(d.copy_to_device(kCode, bytes_of(image)).ok());
}

uint64_t launch(Driver& d, uint32_t arg, uint32_t ctas, uint32_t block) {
  HostRuntime rt(d);
  GridLaunch l;
  l.start_pc = kCode;
  l.entry_pc = kKernel;
  l.arg_ptr = arg;
  l.grid = {ctas, 1, 1};
  l.block = {block, 1, 1};
  auto id = rt.launch_grid(l);
  REQUIRE(id.ok());
  return *id;
}

std::vector<uint32_t> read_words(Driver& d, uint32_t addr, size_t n) {
  std::vector<uint32_t> out(n);
  REQUIRE(d.copy_from_device(addr, {reinterpret_cast<uint8_t*>(out.data()), n * 4}).ok());
  return out;
}

// out[gid] = 40 * gid + 120, computed in a 40-iteration uniform loop (a0 = out).
std::vector<uint32_t> loop_kernel() {
  return {
      rv::csrr(t0, 0xCD6),    rv::csrr(t1, 0xCD9), rv::csrr(t2, 0xCD3), mul(t0, t0, t1),     rv::add(t0, t0, t2),
      rv::li(t1, 0),          rv::li(t2, 40),      rv::add(t1, t1, t0), rv::addi(t1, t1, 3), rv::addi(t2, t2, -1),
      rv::bne(t2, zero, -12), slli(t3, t0, 2),     rv::add(t3, t3, a0), rv::sw(t1, t3, 0),   rv::ret(),
  };
}
constexpr uint32_t kLoopCtas = 6, kLoopBlock = 8;  // 2 warps per CTA on 1x1x4x4: slots are reused

std::string describe(const DeviceEvent& ev) {
  return std::string(event_kind_name(ev.kind)) +
         (ev.kind == EventKind::Exception ? " " + ev.exception.to_string() : "");
}

// The loop kernel's output after an undisturbed run on a fresh default device.
std::vector<uint32_t> undisturbed_loop_result() {
  auto d = open_device();
  place_grid_kernel(*d, loop_kernel());
  auto out = d->mem_alloc(kLoopCtas * kLoopBlock * 4);
  REQUIRE(out.ok());
  launch(*d, *out, kLoopCtas, kLoopBlock);
  DeviceEvent ev = d->wait();
  INFO(describe(ev));
  REQUIRE(ev.kind == EventKind::Completed);
  return read_words(*d, *out, kLoopCtas * kLoopBlock);
}

}  // namespace

// --- Register fields --------------------------------------------------------------------

TEST_CASE("PLATFORM encodes log2 threads, warps-1, cores per cluster-1, clusters-1 and platform id 1", "[dm]") {
  struct Case {
    DeviceConfig cfg;
    uint32_t log2_threads, warps_m1, cores_m1, clusters_m1;
  };
  for (const Case& k : {Case{DeviceConfig{}, 2, 3, 0, 0}, Case{DeviceConfig{1, 2, 8, 8}, 3, 7, 1, 0},
                        Case{DeviceConfig{1, 1, 4, 32}, 5, 3, 0, 0}, Case{DeviceConfig{3, 5, 2, 1}, 0, 1, 4, 2}}) {
    INFO("config " << k.cfg.to_string());
    auto d = open_device(k.cfg);
    dm_wr(*d, dm::kDctrl, kActive);
    uint32_t p = dm_rd(*d, dm::kPlatform);
    CHECK((p & 7) == k.log2_threads);
    CHECK(((p >> 3) & 0x1ff) == k.warps_m1);
    CHECK(((p >> 12) & 0x1ff) == k.cores_m1);
    CHECK(((p >> 21) & 0x7f) == k.clusters_m1);
    CHECK((p >> 28) == 1);
    dm_wr(*d, dm::kPlatform, 0);  // read-only
    CHECK(dm_rd(*d, dm::kPlatform) == p);
  }
}

TEST_CASE("DCONFIG, DSELECT, WMASK and INJECT read back what was written, reserved bits as 0", "[dm]") {
  DmBench t;  // 1x1x4x4: 4 warps, so only WMASK bits 3..0 of window 0 exist
  t.activate();
  t.wr(dm::kDconfig, 0xffffffff);
  CHECK(t.rd(dm::kDconfig) == 0xfc000001);  // ebreakh [0], RHC [28:26], NRC [31:29]
  CHECK(t.b.m.ebreak_halt());
  t.wr(dm::kDconfig, 0x5a5a5a5a);
  CHECK(t.rd(dm::kDconfig) == 0x58000000);
  CHECK(!t.b.m.ebreak_halt());

  t.wr(dm::kDselect, 0xffffffff);
  CHECK(t.rd(dm::kDselect) == 0xffffffff);
  t.wr(dm::kDselect, (5u << 0) | (1234u << 7) | (7u << 22));
  uint32_t sel = t.rd(dm::kDselect);
  CHECK((sel & 0x7f) == 5);
  CHECK(((sel >> 7) & 0x7fff) == 1234);
  CHECK((sel >> 22) == 7);

  t.select(0);
  t.wr(dm::kWmask, 0xffffffff);
  CHECK(t.rd(dm::kWmask) == 0xf);  // no warp 4..31: those bits read 0
  t.wr(dm::kDselect, 1u << 22);    // window 1: no warps at all
  t.wr(dm::kWmask, 0xffffffff);
  CHECK(t.rd(dm::kWmask) == 0);
  t.wr(dm::kDselect, 0);
  CHECK(t.rd(dm::kWmask) == 0xf);

  t.wr(dm::kInject, 0x12345678);
  CHECK(t.rd(dm::kInject) == 0x12345678);
}

TEST_CASE("write-only DCTRL requests and the reserved bits read 0; stepstate and injectstate read NONE", "[dm]") {
  DmBench t;
  t.b.load({rv::li(a0, 1), rv::li(a0, 2)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0xf);
  t.activate();
  t.focus(0);
  t.select(1);
  t.wr(dm::kInject, rv::li(a1, 7));
  t.request(dm::kHaltReq | dm::kResetHaltReq | dm::kStepReq | dm::kInjectReq);
  REQUIRE(t.b.warp().halted);
  REQUIRE(t.b.warp().pc == Bench::kCode + 4);  // the step ran
  REQUIRE(t.b.x(a1, 0) == 7);                  // the injection ran
  uint32_t v = t.rd(dm::kDctrl);
  CHECK((v & 0b1001111) == 0);   // haltreq, resumereq, resethaltreq, stepreq, injectreq
  CHECK(((v >> 4) & 3) == 0);    // stepstate NONE
  CHECK(((v >> 7) & 3) == 0);    // injectstate NONE
  CHECK((v & 0x00fe0000) == 0);  // reserved [23:17]
  CHECK(!exc(v));
  CHECK(v >> 31 == 1);  // dmactive
}

TEST_CASE("an address beyond 0xC is an error for reads and writes", "[dm]") {
  auto d = open_device();
  for (uint32_t addr : {0xdu, 0x10u, 0xffffffffu}) {
    auto r = d->dm_read(addr);
    REQUIRE(!r.ok());
    CHECK_THAT(r.error().message, Contains("no Debug Module register at 0x"));
    CHECK(!d->dm_write(addr, 1).ok());
  }
  CHECK(d->dm_read(0xc).ok());
  CHECK(d->dm_write(0xc, 1).ok());
}

TEST_CASE("while dmactive is 0 registers read 0 and only dmactive can be written", "[dm]") {
  DmBench t;
  t.b.load({rv::li(a0, 1)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0xf);
  for (uint32_t addr = 0; addr <= 0xc; ++addr) CHECK(t.rd(addr) == 0);
  t.wr(dm::kDconfig, 1);
  t.wr(dm::kDselect, 0x80);
  t.wr(dm::kWmask, 1);
  t.wr(dm::kInject, 0x13);
  t.wr(dm::kDscratch0, 99);
  t.wr(dm::kDctrl, kActive | dm::kHaltReq);  // activates; the request in the same write is ignored
  CHECK(!t.b.warp().halted);
  CHECK(!t.b.m.ebreak_halt());
  CHECK(t.rd(dm::kDconfig) == 0);
  CHECK(t.rd(dm::kDselect) == 0);
  CHECK(t.rd(dm::kWmask) == 0);
  CHECK(t.rd(dm::kInject) == 0);
  CHECK(t.rd(dm::kDscratch0) == 0);
  CHECK(t.rd(dm::kDctrl) >> 31 == 1);
  CHECK(t.rd(dm::kPlatform) != 0);
}

TEST_CASE("dmactive = 0 resets every DM register and resumes halted warps", "[dm]") {
  DmBench t;
  t.b.load({rv::li(a0, 1)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0xf);
  t.b.m.activate_warp(0, 2, Bench::kCode, 0xf);
  t.activate();
  t.wr(dm::kDconfig, 0xe0000001);
  t.select(0b101);
  t.request(dm::kHaltReq);
  t.wr(dm::kDselect, dm::dselect(1, 2, 0));
  t.wr(dm::kInject, 0xffffffff);
  t.request(dm::kInjectReq);  // an illegal instruction: EXC set
  t.wr(dm::kDscratch0 + 1, 0xabc);
  REQUIRE(exc(t.rd(dm::kDctrl)));
  REQUIRE(t.rd(dm::kWstatus) == 0b101);

  t.wr(dm::kDctrl, 0);
  CHECK(!t.b.warp(0).halted);
  CHECK(!t.b.warp(2).halted);
  CHECK(t.b.warp(0).halt_cause == HaltCause::None);
  CHECK(!t.b.m.ebreak_halt());
  for (uint32_t addr = 0; addr <= 0xc; ++addr) CHECK(t.rd(addr) == 0);
  t.activate();
  CHECK(t.rd(dm::kDconfig) == 0);
  CHECK(t.rd(dm::kDselect) == 0);
  CHECK(t.rd(dm::kWmask) == 0);
  CHECK(t.rd(dm::kInject) == 0);
  CHECK(t.rd(dm::kWstatus) == 0);
  CHECK(t.rd(dm::kWactive) == 0b101);
  uint32_t v = t.rd(dm::kDctrl);
  CHECK(!exc(v));
  CHECK((v & kSummaryFlags) == dm::kAllUnavail);  // nothing selected
  // DSCRATCH is thread state, not a DM register: it survives.
  t.wr(dm::kDselect, dm::dselect(1, 2, 0));
  CHECK(t.rd(dm::kDscratch0 + 1) == 0xabc);
}

TEST_CASE("WACTIVE, WSTATUS and WMASK address 32-warp windows of the global warp id", "[dm]") {
  DmBench t(DeviceConfig{1, 2, 32, 4});  // 64 warps: global id = core * 32 + warp
  t.b.load({rv::li(a0, 1)});
  t.b.m.activate_warp(0, 2, Bench::kCode, 0xf);   // id 2
  t.b.m.activate_warp(1, 3, Bench::kCode, 0xf);   // id 35
  t.b.m.activate_warp(1, 31, Bench::kCode, 0xf);  // id 63
  t.activate();
  t.wr(dm::kDselect, 1u << 22);
  t.wr(dm::kWmask, 1u << 3);
  t.request(dm::kHaltReq);
  CHECK(t.b.warp(3, 1).halted);
  CHECK(t.b.warp(3, 1).halt_cause == HaltCause::HaltReq);
  CHECK(t.rd(dm::kWactive) == ((1u << 3) | (1u << 31)));
  CHECK(t.rd(dm::kWstatus) == (1u << 3));
  CHECK(t.rd(dm::kWmask) == (1u << 3));
  t.wr(dm::kDselect, 0);
  CHECK(t.rd(dm::kWactive) == (1u << 2));
  CHECK(t.rd(dm::kWstatus) == 0);
  CHECK(t.rd(dm::kWmask) == 0);
  t.wr(dm::kDselect, 2u << 22);  // beyond the last warp
  t.wr(dm::kWmask, 0xffffffff);
  CHECK(t.rd(dm::kWmask) == 0);
  CHECK(t.rd(dm::kWactive) == 0);
  CHECK(t.rd(dm::kWstatus) == 0);
  // hacause and DPC follow warpsel, a global id.
  t.wr(dm::kDselect, dm::dselect(0, 35, 0));
  CHECK(hacause(t.rd(dm::kDctrl)) == 2);
  CHECK(t.rd(dm::kDpc) == Bench::kCode);
  t.wr(dm::kDselect, dm::dselect(0, 63, 0));
  CHECK(hacause(t.rd(dm::kDctrl)) == 0);
}

TEST_CASE("the any/all flags summarize the selected warps: available, unavailable and halted", "[dm]") {
  DmBench t;  // warps 0 (halted), 1 and 2 (running) active; warp 3 empty
  t.b.load({rv::li(a0, 1)});
  for (uint32_t w = 0; w < 3; ++w) t.b.m.activate_warp(0, w, Bench::kCode, 0xf);
  t.activate();
  t.halt(0);
  const uint32_t NU = 1u << 24, AU = 1u << 25, NR = 1u << 26, AR = 1u << 27, NH = 1u << 28, AH = 1u << 29;
  struct Case {
    uint32_t mask, flags;
  };
  for (const Case& k :
       {Case{0b0000, AU}, Case{0b1000, NU | AU}, Case{0b0001, NH | AH}, Case{0b0110, NR | AR}, Case{0b0011, NH | NR},
        Case{0b1001, NU | NH | AH}, Case{0b1110, NU | NR | AR}, Case{0b1111, NU | NR | NH}}) {
    INFO("mask " << k.mask);
    t.select(k.mask);
    CHECK((t.rd(dm::kDctrl) & kSummaryFlags) == k.flags);
  }
}

// --- Halt and resume a running launch ----------------------------------------------------

TEST_CASE("haltreq stops a running grid kernel, which completes after resumereq with an undisturbed result", "[dm]") {
  const std::vector<uint32_t> expected = undisturbed_loop_result();
  for (uint32_t i = 0; i < kLoopCtas * kLoopBlock; ++i) REQUIRE(expected[i] == 40 * i + 120);

  auto d = open_device();
  place_grid_kernel(*d, loop_kernel());
  auto out = d->mem_alloc(kLoopCtas * kLoopBlock * 4);
  REQUIRE(out.ok());
  uint64_t id = launch(*d, *out, kLoopCtas, kLoopBlock);
  REQUIRE(d->wait(300).kind == EventKind::Budget);
  dm_wr(*d, dm::kDctrl, kActive);
  REQUIRE(dm_rd(*d, dm::kWactive) == 0xf);  // both CTAs in flight, so no free slot for the KMU
  dm_wr(*d, dm::kWmask, 0xf);
  dm_wr(*d, dm::kDctrl, kActive | dm::kHaltReq);
  CHECK(dm_rd(*d, dm::kWstatus) == 0xf);
  uint32_t v = dm_rd(*d, dm::kDctrl);
  CHECK((v & kSummaryFlags) == (dm::kAnyHalted | dm::kAllHalted));
  for (uint32_t w = 0; w < 4; ++w) {
    dm_wr(*d, dm::kDselect, dm::dselect(0, w, 0));
    CHECK(hacause(dm_rd(*d, dm::kDctrl)) == 2);
  }

  const uint64_t before = d->stats().instructions;
  for (uint64_t budget : {uint64_t(1000), UINT64_MAX}) {
    DeviceEvent ev = d->wait(budget);
    INFO(describe(ev));
    CHECK(ev.kind == EventKind::Halted);
    CHECK(ev.submission == id);
  }
  CHECK(d->stats().instructions == before);

  dm_wr(*d, dm::kDctrl, kActive | dm::kResumeReq);
  CHECK(dm_rd(*d, dm::kWstatus) == 0);
  CHECK(hacause(dm_rd(*d, dm::kDctrl)) == 0);
  DeviceEvent ev = d->wait();
  INFO(describe(ev));
  REQUIRE(ev.kind == EventKind::Completed);
  CHECK(read_words(*d, *out, kLoopCtas * kLoopBlock) == expected);
}

TEST_CASE("a partly halted launch runs its other warps, then wait() reports Halted instead of a deadlock", "[dm]") {
  auto d = open_device();
  place_grid_kernel(*d, loop_kernel());
  auto out = d->mem_alloc(kLoopCtas * kLoopBlock * 4);
  REQUIRE(out.ok());
  launch(*d, *out, kLoopCtas, kLoopBlock);
  REQUIRE(d->wait(100).kind == EventKind::Budget);
  dm_wr(*d, dm::kDctrl, kActive);
  dm_wr(*d, dm::kWmask, 0b0001);
  dm_wr(*d, dm::kDctrl, kActive | dm::kHaltReq);
  DeviceEvent ev = d->wait();
  INFO(describe(ev));
  REQUIRE(ev.kind == EventKind::Halted);
  // Every CTA but the halted warp's has finished: only warp 0 is left.
  CHECK(dm_rd(*d, dm::kWactive) == 0b0001);
  CHECK(dm_rd(*d, dm::kWstatus) == 0b0001);
  dm_wr(*d, dm::kDctrl, kActive | dm::kResumeReq);
  REQUIRE(d->wait().kind == EventKind::Completed);
  auto got = read_words(*d, *out, kLoopCtas * kLoopBlock);
  for (uint32_t i = 0; i < kLoopCtas * kLoopBlock; ++i) CHECK(got[i] == 40 * i + 120);
}

// --- Step ----------------------------------------------------------------------------------

TEST_CASE("each stepreq runs one instruction of the selected halted warp: DPC advances, hacause STEP", "[dm]") {
  DmBench t;
  t.b.load({rv::li(a0, 1), rv::addi(a0, a0, 1), rv::addi(a0, a0, 1), vxi::tmc(zero)});
  t.b.m.activate_warp(0, 1, Bench::kCode, 0xf);
  t.activate();
  t.halt(1);
  t.focus(1);
  CHECK(t.rd(dm::kDpc) == Bench::kCode);
  for (uint32_t n = 1; n <= 3; ++n) {
    t.request(dm::kStepReq);
    CHECK(t.rd(dm::kDpc) == Bench::kCode + 4 * n);
    uint32_t v = t.rd(dm::kDctrl);
    CHECK(hacause(v) == 3);
    CHECK(!exc(v));
    CHECK(t.rd(dm::kWstatus) == 0b0010);
    for (uint32_t lane = 0; lane < 4; ++lane) CHECK(t.b.x(a0, lane, 1) == n);
    CHECK(t.b.warp(1).instret == n);
    CHECK(t.b.m.stats().instructions == n);
  }
  // A step over TMC x0 retires the warp: it becomes unavailable.
  t.request(dm::kStepReq);
  CHECK(t.rd(dm::kWactive) == 0);
  CHECK(t.rd(dm::kWstatus) == 0);
  CHECK(hacause(t.rd(dm::kDctrl)) == 0);
}

TEST_CASE("stepreq on a warp that is not halted does nothing", "[dm]") {
  DmBench t;
  t.b.load({rv::li(a0, 1)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0xf);
  t.activate();
  t.focus(0);
  t.request(dm::kStepReq);
  CHECK(t.b.warp().pc == Bench::kCode);
  CHECK(t.b.m.stats().instructions == 0);
}

TEST_CASE("stepping a divergent SPLIT leaves the smaller side active with the IPDOM entry pushed", "[dm]") {
  DmBench t;
  t.b.load({rv::csrr(t0, 0xCC0), slti(t1, t0, 1), vxi::split(t2, t1), rv::li(a0, 5)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0xf);
  t.activate();
  t.halt(0);
  t.focus(0);
  for (int i = 0; i < 3; ++i) t.request(dm::kStepReq);
  CHECK(t.rd(dm::kDpc) == Bench::kCode + 12);
  CHECK(t.b.warp().tmask == 0b0001);  // lane 0 alone took the then side
  REQUIRE(t.b.warp().ipdom.size() == 1);
  CHECK(t.b.warp().ipdom[0].orig_mask == 0xf);
  t.request(dm::kStepReq);
  CHECK(t.b.x(a0, 0) == 5);
  CHECK(t.b.x(a0, 1) == 0);
}

TEST_CASE("stepping a warp waiting at a barrier does nothing until the barrier completes", "[dm]") {
  DmBench t;
  t.b.load({rv::li(t0, 0), rv::li(t1, 2), vxi::bar(t0, t1), rv::li(a0, 9)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0xf);
  t.activate();
  t.halt(0);
  t.focus(0);
  for (int i = 0; i < 3; ++i) t.request(dm::kStepReq);
  REQUIRE(t.b.warp().wait == WarpWait::Barrier);
  CHECK(t.rd(dm::kDpc) == Bench::kCode + 12);  // the BAR retired: its arrival counts
  const uint64_t executed = t.b.m.stats().instructions;
  t.request(dm::kStepReq);
  CHECK(t.rd(dm::kDpc) == Bench::kCode + 12);
  CHECK(t.b.m.stats().instructions == executed);
  CHECK(!exc(t.rd(dm::kDctrl)));

  // Warp 1 arrives: warp 0 stops waiting but stays halted, and steps again.
  t.b.m.activate_warp(0, 1, Bench::kCode, 0xf);
  DeviceException e;
  for (int i = 0; i < 3; ++i) REQUIRE(t.b.m.step(0, 1, &e).step == Step::Retire);
  CHECK(t.b.warp().wait == WarpWait::None);
  CHECK(t.b.warp().halted);
  t.request(dm::kStepReq);
  CHECK(t.b.x(a0, 0) == 9);
  CHECK(t.rd(dm::kDpc) == Bench::kCode + 16);
}

TEST_CASE("a step that faults executes nothing, sets EXC and the cause, and the warp stays halted", "[dm]") {
  DmBench t;
  t.b.load({rv::lui(t0, kUnmapped >> 12), rv::lw(t1, t0, 0), rv::li(t1, 3)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0xf);
  t.b.x(t1, 0) = 77;
  t.activate();
  t.halt(0);
  t.focus(0);
  t.request(dm::kStepReq);
  t.request(dm::kStepReq);
  uint32_t v = t.rd(dm::kDctrl);
  CHECK(exc(v));
  CHECK(exc_cause(v) == uint32_t(Cause::LoadFault));
  CHECK(exc_cause(v) == 6);
  CHECK(hacause(v) == 3);  // still the first step's
  CHECK(t.rd(dm::kDpc) == Bench::kCode + 4);
  CHECK(t.b.x(t1, 0) == 77);
  CHECK(t.b.warp().halted);
  CHECK(t.b.m.stats().instructions == 1);
  // EXC stays until the next step; the debugger moves the PC past the load and steps on.
  CHECK(exc(t.rd(dm::kDctrl)));
  t.wr(dm::kDpc, Bench::kCode + 8);
  t.request(dm::kStepReq);
  v = t.rd(dm::kDctrl);
  CHECK(!exc(v));
  CHECK(exc_cause(v) == 0);
  CHECK(t.b.x(t1, 0) == 3);
}

TEST_CASE("DPC writes take effect only while the selected warp is halted", "[dm]") {
  DmBench t;
  t.b.load({rv::li(a0, 1)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0xf);
  t.activate();
  t.focus(0);
  t.wr(dm::kDpc, Bench::kCode + 0x40);
  CHECK(t.b.warp().pc == Bench::kCode);
  t.halt(0);
  t.wr(dm::kDpc, Bench::kCode + 0x40);
  CHECK(t.b.warp().pc == Bench::kCode + 0x40);
  CHECK(t.rd(dm::kDpc) == Bench::kCode + 0x40);
}

// --- Inject --------------------------------------------------------------------------------

TEST_CASE("an injected csrw to DSCRATCH0 moves each thread's own a0 into its DSCRATCH0", "[dm]") {
  DmBench t;
  t.b.load({rv::li(a0, 1)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0b0011);  // lanes 2 and 3 inactive: injection reaches them anyway
  for (uint32_t lane = 0; lane < 4; ++lane) t.b.x(a0, lane) = 100 + 7 * lane;
  t.activate();
  t.halt(0);
  t.wr(dm::kInject, rv::csrw(0x7b2, a0));
  for (uint32_t lane = 0; lane < 4; ++lane) {
    t.focus(0, lane);
    t.request(dm::kInjectReq);
    CHECK(!exc(t.rd(dm::kDctrl)));
  }
  for (uint32_t lane = 0; lane < 4; ++lane) {
    t.focus(0, lane);
    CHECK(t.rd(dm::kDscratch0) == 100 + 7 * lane);
  }
  CHECK(t.b.warp().pc == Bench::kCode);
  CHECK(t.b.warp().tmask == 0b0011);
  CHECK(t.b.warp().instret == 0);
  CHECK(t.b.m.stats().instructions == 0);
  CHECK(t.b.warp().halted);
}

TEST_CASE("an injected csrr from DSCRATCH0 sets a0 of the selected thread only", "[dm]") {
  DmBench t;
  t.b.load({rv::li(a0, 1)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0xf);
  for (uint32_t lane = 0; lane < 4; ++lane) t.b.x(a0, lane) = lane;
  t.activate();
  t.halt(0);
  t.focus(0, 2);
  t.wr(dm::kDscratch0, 0xabcd1234);
  t.wr(dm::kInject, rv::csrr(a0, 0x7b2));
  t.request(dm::kInjectReq);
  CHECK(!exc(t.rd(dm::kDctrl)));
  CHECK(t.b.x(a0, 0) == 0);
  CHECK(t.b.x(a0, 1) == 1);
  CHECK(t.b.x(a0, 2) == 0xabcd1234);
  CHECK(t.b.x(a0, 3) == 3);
  // DSCRATCH1..3 are separate registers of the same thread.
  t.wr(dm::kDscratch0 + 3, 0x33);
  t.wr(dm::kInject, rv::csrr(a1, 0x7b5));
  t.request(dm::kInjectReq);
  CHECK(t.b.x(a1, 2) == 0x33);
  CHECK(t.rd(dm::kDscratch0) == 0xabcd1234);
}

TEST_CASE("injected words run as themselves whatever was injected before (the kept decodings)", "[dm]") {
  // Machine::inject keeps the decodings of recent words in a small table indexed by a hash: 4000
  // different words (2000 immediates into a0, then into a1), all of them twice over, share its 64
  // entries.
  DmBench t;
  t.b.load({rv::li(a0, 1)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0xf);
  t.activate();
  t.halt(0);
  t.focus(0, 1);
  for (int32_t round = 0; round < 2; ++round)
    for (int32_t k = -1000; k < 1000; ++k) {
      for (int rep = 0; rep < 2; ++rep) {
        t.wr(dm::kInject, rv::addi(rep ? a1 : a0, zero, k));
        t.request(dm::kInjectReq);
        REQUIRE(!exc(t.rd(dm::kDctrl)));
      }
      REQUIRE(t.b.x(a0, 1) == uint32_t(k));
      REQUIRE(t.b.x(a1, 1) == uint32_t(k));
    }
  CHECK(t.b.x(a0, 0) == 0);
}

TEST_CASE("an injected csrr of ACTIVE_THREADS reads the halted warp's mask, not the injection's one lane", "[dm]") {
  DmBench t;
  t.b.load({rv::li(a0, 1)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0b0110);
  t.activate();
  t.halt(0);
  t.focus(0, 3);
  t.wr(dm::kInject, rv::csrr(a0, 0xCC4));
  t.request(dm::kInjectReq);
  CHECK(!exc(t.rd(dm::kDctrl)));
  CHECK(t.b.x(a0, 3) == 0b0110);
  CHECK(t.b.x(a0, 1) == 0);
}

TEST_CASE("an injected store writes memory through the selected thread's registers", "[dm]") {
  DmBench t;
  t.b.load({rv::li(a0, 1)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0xf);
  t.b.x(a1, 1) = Bench::kData + 8;  // the other lanes' a1 = 0 would fault
  t.b.x(a2, 1) = 0x5eed;
  t.activate();
  t.halt(0);
  t.focus(0, 1);
  t.wr(dm::kInject, rv::sw(a2, a1, 4));
  t.request(dm::kInjectReq);
  CHECK(!exc(t.rd(dm::kDctrl)));
  CHECK(t.b.read32(Bench::kData + 12) == 0x5eed);
  CHECK(t.b.warp().pc == Bench::kCode);
  CHECK(t.b.warp().tmask == 0xf);
}

TEST_CASE("a faulting injected load sets EXC with its cause and changes nothing", "[dm]") {
  DmBench t;
  t.b.load({rv::li(a0, 1)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0xf);
  t.b.x(a1, 0) = kUnmapped;
  t.b.x(a2, 0) = 41;
  t.activate();
  t.halt(0);
  t.focus(0, 0);
  t.wr(dm::kInject, rv::lw(a2, a1, 0));
  t.request(dm::kInjectReq);
  uint32_t v = t.rd(dm::kDctrl);
  CHECK(exc(v));
  CHECK(exc_cause(v) == uint32_t(Cause::LoadFault));
  CHECK(t.b.x(a2, 0) == 41);
  CHECK(t.b.warp().halted);
  CHECK(t.b.warp().pc == Bench::kCode);
}

TEST_CASE("injecting control instructions is rejected as illegal; VOTE is allowed", "[dm]") {
  DmBench t;
  t.b.load({rv::li(a0, 1)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0xf);
  t.b.x(t0, 0) = 1;
  t.activate();
  t.halt(0);
  t.focus(0, 0);
  for (uint32_t word :
       {vxi::tmc(zero), vxi::wspawn(t0, t0), vxi::split(t1, t0), vxi::join(t0), vxi::bar(t0, t0), vxi::pred(t0, t0),
        vxi::bar_arrive(t1, t0, t0), vxi::bar_wait(t0, t0), rv::ecall(), rv::ebreak(), mret()}) {
    INFO("word " << std::hex << word);
    t.wr(dm::kInject, word);
    t.request(dm::kInjectReq);
    uint32_t v = t.rd(dm::kDctrl);
    CHECK(exc(v));
    CHECK(exc_cause(v) == uint32_t(Cause::IllegalInstruction));
    CHECK(t.b.warp().tmask == 0xf);
    CHECK(t.b.warp().active);
    CHECK(t.b.warp().ipdom.empty());
    CHECK(t.b.warp().wait == WarpWait::None);
  }
  CHECK(t.b.x(t1, 0) == 0);
  t.wr(dm::kInject, vxi::vote(3, t2, t0));  // ballot over the one injected lane
  t.request(dm::kInjectReq);
  CHECK(!exc(t.rd(dm::kDctrl)));
  CHECK(t.b.x(t2, 0) == 1);
}

TEST_CASE("injecting into a running warp, an empty slot or a thread beyond NT is rejected", "[dm]") {
  DmBench t;
  t.b.load({rv::li(a0, 1)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0xf);
  t.activate();
  t.wr(dm::kInject, rv::li(a3, 9));
  for (uint32_t sel : {dm::dselect(0, 0, 0), dm::dselect(0, 1, 0), dm::dselect(0, 9999, 0)}) {
    t.wr(dm::kDselect, sel);
    t.request(dm::kInjectReq);
    uint32_t v = t.rd(dm::kDctrl);
    CHECK(exc(v));
    CHECK(exc_cause(v) == uint32_t(Cause::IllegalInstruction));
  }
  t.halt(0);
  t.focus(0, 4);
  t.request(dm::kInjectReq);
  CHECK(exc(t.rd(dm::kDctrl)));
  for (uint32_t lane = 0; lane < 4; ++lane) CHECK(t.b.x(a3, lane) == 0);
}

TEST_CASE("requests of one DCTRL write run in order: halt, resume, step, inject", "[dm]") {
  DmBench t;
  t.b.load({rv::li(a0, 1), rv::li(a0, 2)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0xf);
  t.activate();
  t.select(1);
  t.focus(0, 0);
  t.wr(dm::kInject, rv::addi(a1, a0, 10));
  // Halt then step then inject: the injection sees the step's a0.
  t.request(dm::kHaltReq | dm::kStepReq | dm::kInjectReq);
  CHECK(t.b.x(a1, 0) == 11);
  CHECK(t.b.warp().pc == Bench::kCode + 4);
  // Resume comes before step: the warp is running when the step is considered, so nothing steps.
  t.request(dm::kResumeReq | dm::kStepReq);
  CHECK(!t.b.warp().halted);
  CHECK(t.b.warp().pc == Bench::kCode + 4);
}

// --- ebreak-halt ---------------------------------------------------------------------------

TEST_CASE("with ebreakh an EBREAK halts its warp on the EBREAK and wait() returns Halted at once", "[dm]") {
  auto d = open_device();
  // Every thread stores 5 to out[gid] after the EBREAK.
  place_grid_kernel(*d, {rv::li(t1, 5), rv::ebreak(), rv::csrr(t0, 0xCD3), slli(t0, t0, 2), rv::add(t0, t0, a0),
                         rv::sw(t1, t0, 0), rv::ret()});
  auto out = d->mem_alloc(8 * 4);
  REQUIRE(out.ok());
  dm_wr(*d, dm::kDctrl, kActive);
  dm_wr(*d, dm::kDconfig, dm::kEbreakh);
  uint64_t id = launch(*d, *out, 1, 8);  // one CTA of 2 warps
  DeviceEvent ev = d->wait();
  INFO(describe(ev));
  REQUIRE(ev.kind == EventKind::Halted);
  CHECK(ev.submission == id);
  uint32_t halted = dm_rd(*d, dm::kWstatus);
  REQUIRE(std::popcount(halted) == 1);  // the first EBREAK stops the run; the other warp has not got there
  uint32_t w = uint32_t(std::countr_zero(halted));
  dm_wr(*d, dm::kDselect, dm::dselect(0, w, 0));
  CHECK(hacause(dm_rd(*d, dm::kDctrl)) == 1);
  CHECK(dm_rd(*d, dm::kDpc) == kKernel + 4);

  ev = d->wait();
  INFO(describe(ev));
  REQUIRE(ev.kind == EventKind::Halted);
  CHECK(dm_rd(*d, dm::kWstatus) == 0b11);
  // The debugger moves both warps past their EBREAK and resumes them.
  for (uint32_t k = 0; k < 2; ++k) {
    dm_wr(*d, dm::kDselect, dm::dselect(0, k, 0));
    CHECK(dm_rd(*d, dm::kDpc) == kKernel + 4);
    dm_wr(*d, dm::kDpc, kKernel + 8);
  }
  dm_wr(*d, dm::kWmask, 0b11);
  dm_wr(*d, dm::kDctrl, kActive | dm::kResumeReq);
  ev = d->wait();
  INFO(describe(ev));
  REQUIRE(ev.kind == EventKind::Completed);
  CHECK(read_words(*d, *out, 8) == std::vector<uint32_t>(8, 5));
}

TEST_CASE("without ebreakh an EBREAK stops the device with a Breakpoint exception", "[dm]") {
  for (bool dm_on : {false, true}) {
    INFO("dmactive " << dm_on);
    auto d = open_device();
    place_grid_kernel(*d, {rv::li(t1, 5), rv::ebreak(), rv::ret()});
    if (dm_on) dm_wr(*d, dm::kDctrl, kActive);
    launch(*d, 0, 1, 4);
    DeviceEvent ev = d->wait();
    INFO(describe(ev));
    REQUIRE(ev.kind == EventKind::Exception);
    CHECK(ev.exception.cause == Cause::Breakpoint);
    CHECK(ev.exception.pc == kKernel + 4);
  }
}

TEST_CASE("stepping onto an EBREAK with ebreakh keeps the warp halted on it with hacause EBREAK", "[dm]") {
  DmBench t;
  t.b.load({rv::li(a0, 1), rv::ebreak(), rv::li(a0, 2)});
  t.b.m.activate_warp(0, 0, Bench::kCode, 0xf);
  t.activate();
  t.wr(dm::kDconfig, dm::kEbreakh);
  t.halt(0);
  t.focus(0);
  t.request(dm::kStepReq);
  t.request(dm::kStepReq);
  uint32_t v = t.rd(dm::kDctrl);
  CHECK(hacause(v) == 1);
  CHECK(!exc(v));
  CHECK(t.rd(dm::kDpc) == Bench::kCode + 4);
  CHECK(t.b.m.stats().instructions == 1);
}

// --- ndmreset ------------------------------------------------------------------------------

TEST_CASE(
    "ndmreset with resethaltreq restarts the launch with the selected warps halted at their first "
    "instruction",
    "[dm]") {
  auto d = open_device();
  place_grid_kernel(*d, loop_kernel());
  auto out = d->mem_alloc(kLoopCtas * kLoopBlock * 4);
  REQUIRE(out.ok());
  launch(*d, *out, kLoopCtas, kLoopBlock);
  REQUIRE(d->wait(1000).kind == EventKind::Budget);
  const uint64_t units_before = d->stats().units_dispatched;
  REQUIRE(units_before > 2);  // the reset must take the launch back, not just let it go on

  dm_wr(*d, dm::kDctrl, kActive);
  dm_wr(*d, dm::kDconfig, 2u << 29);  // NRC = 2: ndmreset reads 1 for 4 accesses
  dm_wr(*d, dm::kWmask, 0b0011);      // the slots of the first CTA
  dm_wr(*d, dm::kDctrl, kActive | dm::kNdmReset | dm::kResetHaltReq);
  for (int i = 0; i < 4; ++i) CHECK((dm_rd(*d, dm::kDctrl) >> 30 & 1) == 1);
  CHECK((dm_rd(*d, dm::kDctrl) >> 30 & 1) == 0);

  // The KMU dispatched CTAs 0 and 1 again at once; CTA 0's warps are halted before their first instruction.
  CHECK(d->stats().units_dispatched == units_before + 2);
  CHECK(dm_rd(*d, dm::kWactive) == 0b1111);
  CHECK(dm_rd(*d, dm::kWstatus) == 0b0011);
  for (uint32_t w = 0; w < 2; ++w) {
    dm_wr(*d, dm::kDselect, dm::dselect(0, w, 0));
    CHECK(hacause(dm_rd(*d, dm::kDctrl)) == 4);
    CHECK(dm_rd(*d, dm::kDpc) == kCode);
  }

  // Stepping from the first instruction: csrr t0, CTA_ENTRY.
  dm_wr(*d, dm::kDselect, dm::dselect(0, 0, 0));
  dm_wr(*d, dm::kDctrl, kActive | dm::kStepReq);
  CHECK(dm_rd(*d, dm::kDpc) == kCode + 4);
  uint32_t v = dm_rd(*d, dm::kDctrl);
  CHECK(hacause(v) == 3);
  CHECK(!exc(v));
  dm_wr(*d, dm::kInject, rv::csrw(0x7b2, t0));
  dm_wr(*d, dm::kDctrl, kActive | dm::kInjectReq);
  CHECK(dm_rd(*d, dm::kDscratch0) == kKernel);

  // The other warps run on; then only the halted ones are left.
  DeviceEvent ev = d->wait();
  INFO(describe(ev));
  REQUIRE(ev.kind == EventKind::Halted);
  CHECK(dm_rd(*d, dm::kWactive) == 0b0011);
  dm_wr(*d, dm::kDctrl, kActive | dm::kResumeReq);
  ev = d->wait();
  INFO(describe(ev));
  REQUIRE(ev.kind == EventKind::Completed);
  CHECK(d->stats().units_dispatched == units_before + kLoopCtas);
  auto got = read_words(*d, *out, kLoopCtas * kLoopBlock);
  for (uint32_t i = 0; i < kLoopCtas * kLoopBlock; ++i) CHECK(got[i] == 40 * i + 120);
}

TEST_CASE("ndmreset after a device exception restarts the launch, which faults again", "[dm]") {
  auto d = open_device();
  place_grid_kernel(*d, {rv::lui(t0, kUnmapped >> 12), rv::sw(zero, t0, 0), rv::ret()});
  launch(*d, 0, 1, 4);
  DeviceEvent first = d->wait();
  REQUIRE(first.kind == EventKind::Exception);
  const uint64_t executed = d->stats().instructions;
  dm_wr(*d, dm::kDctrl, kActive);
  dm_wr(*d, dm::kDctrl, kActive | dm::kNdmReset);
  DeviceEvent again = d->wait();
  INFO(describe(again));
  REQUIRE(again.kind == EventKind::Exception);
  CHECK(again.exception == first.exception);
  CHECK(d->stats().instructions == 2 * executed);  // the whole launch ran again up to the fault
}
