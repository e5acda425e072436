// Tests of the Debug Module client against the model device. Every check that
// reads state through the DM is compared with something it cannot have made
// up: an undisturbed run of the same workload (same configuration and seed), a
// trace the test computes from the kernel's code, or the kernel's own results.
#include "engine/dm_client.hpp"

#include <bit>
#include <catch2/catch.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "base/hex.hpp"
#include "device/driver.hpp"
#include "device/encode.hpp"
#include "device/host_runtime.hpp"
#include "device/image.hpp"
#include "device/model_view.hpp"  // test-only: the model's own state to compare with

using namespace vx;
using namespace vx::engine;
using namespace vx::test;
using Catch::Matchers::Contains;

namespace {

constexpr uint32_t kCode = 0x80000000;
constexpr uint32_t kEntry = kCode + 0x100;  // the kernel follows the dispatch window
constexpr uint32_t kUnmapped = 0x70000000;

// Encoders the shared header does not provide.
constexpr uint32_t mul(uint32_t rd, uint32_t rs1, uint32_t rs2) { return r_type(1, rs2, rs1, 0, rd, 0x33); }
constexpr uint32_t slli(uint32_t rd, uint32_t rs1, uint32_t sh) { return i_type(int32_t(sh), rs1, 1, rd, 0x13); }
constexpr uint32_t sltiu(uint32_t rd, uint32_t rs1, int32_t imm) { return i_type(imm, rs1, 3, rd, 0x13); }
constexpr uint32_t fcvt_s_w(uint32_t fd, uint32_t rs1) { return r_type(0x68, 0, rs1, 0, fd, 0x53); }
constexpr uint32_t fadd_s(uint32_t fd, uint32_t fs1, uint32_t fs2) { return r_type(0, fs2, fs1, 0, fd, 0x53); }
constexpr uint32_t fmv_w_x(uint32_t fd, uint32_t rs1) { return r_type(0x78, 0, rs1, 0, fd, 0x53); }
constexpr uint32_t fsw(uint32_t fs2, uint32_t rs1, int32_t imm) { return s_type(imm, fs2, rs1, 2, 0x27); }

uint32_t fbits(float f) { return std::bit_cast<uint32_t>(f); }
// --- Kernels ------------------------------------------------------------------------------

// "Accumulate": gid = blockIdx.x * blockDim.x + threadIdx.x; 20 iterations of
// acc += i * gid (s2) and facc += float(gid) (f2); then out[2 gid] = acc,
// out[2 gid + 1] = facc, and the exit code = acc (the last writer wins).
constexpr uint32_t kLoopIndex = 10, kIterations = 20;
std::vector<uint32_t> accumulate_kernel() {
  return {
      rv::csrr(t0, 0xCD6),
      rv::csrr(t1, 0xCD9),
      rv::csrr(t2, 0xCD3),
      mul(t0, t0, t1),
      rv::add(s1, t0, t2),
      fcvt_s_w(1, s1),
      rv::li(s2, 0),
      rv::li(s3, 0),
      rv::li(s4, kIterations),
      fmv_w_x(2, zero),
      // loop (index 10)
      mul(t3, s3, s1),
      rv::add(s2, s2, t3),
      fadd_s(2, 2, 1),
      rv::addi(s3, s3, 1),
      rv::bne(s3, s4, -16),
      slli(t4, s1, 3),
      rv::add(t4, t4, a0),
      rv::sw(s2, t4, 0),
      fsw(2, t4, 4),
      rv::lui(t5, 0x8),
      rv::sw(s2, t5, 0x348),
      rv::ret(),
  };
}
uint32_t accumulate_acc(uint32_t gid) { return 190 * gid; }  // sum of i * gid for i < 20
uint32_t accumulate_facc(uint32_t gid) { return fbits(float(20 * gid)); }

// The PCs one warp of the accumulate kernel goes through, from its first instruction.
std::vector<uint32_t> accumulate_trace() {
  std::vector<uint32_t> pcs = {kCode, kCode + 4, kCode + 8};
  for (uint32_t i = 0; i < kLoopIndex; ++i) pcs.push_back(kEntry + 4 * i);
  for (uint32_t it = 0; it < kIterations; ++it)
    for (uint32_t i = kLoopIndex; i < kLoopIndex + 5; ++i) pcs.push_back(kEntry + 4 * i);
  for (uint32_t i = kLoopIndex + 5; i < accumulate_kernel().size(); ++i) pcs.push_back(kEntry + 4 * i);
  pcs.push_back(kCode + 12);  // WSYNC
  pcs.push_back(kCode + 16);  // TMC x0
  return pcs;
}

// "Diverge": lane 3 takes the then side (t3 = 111), lanes 0..2 the else side
// (t3 = 222), between a SPLIT and its JOIN; then out[tid] = t3.
constexpr uint32_t kThenPc = kEntry + 5 * 4, kElsePc = kEntry + 8 * 4;
std::vector<uint32_t> diverge_kernel() {
  return {
      rv::csrr(t0, 0xCD3), rv::addi(t1, t0, -3), sltiu(t1, t1, 1),    vxi::split(t2, t1), rv::beq(t1, zero, 16),
      rv::li(t3, 100),     rv::addi(t3, t3, 11), rv::jal(zero, 12),  // then
      rv::li(t3, 200),     rv::addi(t3, t3, 22),                     // else
      vxi::join(t2),       slli(t4, t0, 2),      rv::add(t4, t4, a0), rv::sw(t3, t4, 0),  rv::ret(),
  };
}

// "Planted": out[blockIdx * 4 + tid] = [CTA_LMEM_ADDR] + arg[16] + tid: a value
// in the CTA's local memory and one in global memory, both planted by the debugger.
std::vector<uint32_t> planted_kernel() {
  return {
      rv::csrr(t0, 0xCDF), rv::lw(t1, t0, 0),   rv::lw(t5, a0, 64), rv::csrr(t2, 0xCD6), rv::csrr(t3, 0xCD3),
      rv::add(t1, t1, t5), rv::add(t1, t1, t3), slli(t4, t2, 2),    rv::add(t4, t4, t3), slli(t4, t4, 2),
      rv::add(t4, t4, a0), rv::sw(t1, t4, 0),   rv::ret(),
  };
}

// --- A device, its runtime and its DM client ----------------------------------------------

template <class T>
T need(Result<T> r) {
  if (!r) FAIL(r.error().message);
  return std::move(r).value();
}
void need(Result<void> r) {
  if (!r) FAIL(r.error().message);
}

std::string describe(const DeviceEvent& ev) {
  return std::string(event_kind_name(ev.kind)) + " " + ev.message +
         (ev.kind == EventKind::Exception ? " " + ev.exception.to_string() : std::string());
}

struct Session {
  Session(const DeviceConfig& cfg, uint64_t seed) {
    auto d = open_model_device(cfg, RunOptions{seed});
    REQUIRE(d.ok());
    dev = std::move(d).value();
    rt = std::make_unique<HostRuntime>(*dev);
    dm = std::make_unique<DmClient>(*dev);
  }

  // Loads a .vxbin image: the dispatch window at kCode, the kernel at kEntry.
  void load(const std::vector<uint32_t>& kernel) {
    auto bin = make_vxbin_image(kCode, kCode + 0x1000, windowed_image(kernel, kEntry - kCode));
    auto img = parse_kernel_image(bin, "kernel.vxbin");
    need(img.ok() ? Result<void>() : Result<void>(img.error()));
    need(rt->load_image(*img));
  }

  uint32_t alloc(uint32_t words, uint32_t fill = 0) {
    uint32_t a = need(dev->mem_alloc(uint64_t(words) * 4));
    put(a, std::vector<uint32_t>(words, fill));
    return a;
  }
  void put(uint32_t addr, const std::vector<uint32_t>& w) {
    need(dev->copy_to_device(addr, {reinterpret_cast<const uint8_t*>(w.data()), w.size() * 4}));
  }
  std::vector<uint32_t> get(uint32_t addr, uint32_t words) {
    std::vector<uint32_t> w(words);
    need(dev->copy_from_device(addr, {reinterpret_cast<uint8_t*>(w.data()), w.size() * 4}));
    return w;
  }

  void launch(std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block, uint32_t arg, uint32_t lmem = 0) {
    GridLaunch l;
    l.start_pc = kCode;
    l.entry_pc = kEntry;
    l.arg_ptr = arg;
    l.grid = grid;
    l.block = block;
    l.lmem_bytes = lmem;
    need(rt->launch_grid(l));
  }

  void expect(EventKind kind, uint64_t budget = UINT64_MAX) {
    DeviceEvent ev = dev->wait(budget);
    INFO(describe(ev));
    REQUIRE(ev.kind == kind);
  }

  // Connects, halts every warp and reads every halted warp.
  std::vector<std::pair<uint32_t, WarpSnapshot>> halt_and_read() {
    need(dm->connect());
    need(dm->halt_all());
    std::vector<std::pair<uint32_t, WarpSnapshot>> out;
    for (uint32_t w : need(dm->halted_warps())) out.emplace_back(w, need(dm->read_warp(w)));
    return out;
  }

  std::unique_ptr<Driver> dev;
  std::unique_ptr<HostRuntime> rt;
  std::unique_ptr<DmClient> dm;
};

void check_accumulate_output(Session& s, uint32_t out, uint32_t threads) {
  auto got = s.get(out, 2 * threads);
  for (uint32_t g = 0; g < threads; ++g) {
    INFO("gid " << g);
    CHECK(got[2 * g] == accumulate_acc(g));
    CHECK(got[2 * g + 1] == accumulate_facc(g));
  }
}

const DeviceConfig kTwoCores{1, 2, 4, 4};
const DeviceConfig kOneCore{1, 1, 4, 4};

}  // namespace

// --- 1. Halting mid-way and reading every register -------------------------------------

TEST_CASE("halting mid-way reads every register of every lane as an undisturbed run has them", "[dm]") {
  constexpr uint64_t kSeed = 7, kHalfway = 300, kPoint = 600;
  constexpr uint32_t kThreads = 6 * 8;
  auto run_to = [&](Session& s, bool inspect_halfway) {
    s.load(accumulate_kernel());
    uint32_t out = s.alloc(2 * kThreads);
    s.launch({6, 1, 1}, {8, 1, 1}, out);
    if (inspect_halfway) {
      // Disturb the run as a debugger would: halt, read everything, resume.
      s.expect(EventKind::Budget, kHalfway);
      REQUIRE(!s.halt_and_read().empty());
      need(s.dm->resume_all());
      s.expect(EventKind::Budget, kPoint - kHalfway);
    } else {
      s.expect(EventKind::Budget, kPoint);
    }
    return s.halt_and_read();
  };
  Session a(kTwoCores, kSeed), b(kTwoCores, kSeed);
  auto inspected = run_to(a, true);
  auto undisturbed = run_to(b, false);
  REQUIRE(inspected.size() == undisturbed.size());
  REQUIRE(undisturbed.size() >= 4);
  uint32_t in_loop = 0;
  for (size_t i = 0; i < undisturbed.size(); ++i) {
    const auto& [w, snap] = undisturbed[i];
    INFO("warp " << w << " pc " << std::hex << snap.pc);
    CHECK(inspected[i].first == w);
    CHECK(inspected[i].second == snap);
    REQUIRE(snap.threads.size() == 4);
    for (uint32_t t = 0; t < 4; ++t) CHECK(snap.threads[t].x[0] == 0);
    // Inside the loop the registers must hold what the kernel computed so far.
    if (snap.pc >= kEntry + 4 * (kLoopIndex + 1) && snap.pc <= kEntry + 4 * (kLoopIndex + 4)) {
      ++in_loop;
      CHECK(snap.tmask == 0xf);
      for (uint32_t t = 0; t < 4; ++t) {
        const ThreadRegs& r = snap.threads[t];
        const uint32_t gid = r.x[s1], iters = r.x[s3];
        INFO("thread " << t << " gid " << gid << " iterations " << iters);
        CHECK(gid % 4 == t);
        CHECK(r.x[s4] == kIterations);
        CHECK(r.f[1] == fbits(float(gid)));
        const uint32_t done = snap.pc > kEntry + 4 * (kLoopIndex + 3) ? iters - 1 : iters;  // s3 increments late
        const bool acc_updated = snap.pc > kEntry + 4 * (kLoopIndex + 1);
        CHECK(r.x[s2] == (done * (done - 1) / 2 + (acc_updated ? done : 0)) * gid);
        CHECK(r.f[2] == fbits(float((snap.pc > kEntry + 4 * (kLoopIndex + 2) ? done + 1 : done) * gid)));
      }
    }
  }
  CHECK(in_loop > 0);
}

TEST_CASE("every register read through the DM equals the model's own warp state", "[dm]") {
  // The comparison above is client against client; this one checks the client
  // against the model itself, through the test-only view.
  Session s(kTwoCores, 3);
  s.load(accumulate_kernel());
  s.launch({6, 1, 1}, {8, 1, 1}, s.alloc(2 * 6 * 8));
  s.expect(EventKind::Budget, 450);
  auto read = s.halt_and_read();
  REQUIRE(read.size() >= 4);
  const Machine* m = model_machine_for_tests(*s.dev);
  REQUIRE(m != nullptr);
  const uint32_t nw = kTwoCores.warps, nt = kTwoCores.threads;
  for (const auto& [gwarp, snap] : read) {
    const WarpState& ws = m->core(gwarp / nw).warps[gwarp % nw];
    INFO("warp " << gwarp);
    REQUIRE(ws.active);
    CHECK(ws.halted);
    CHECK(snap.pc == ws.pc);
    CHECK(snap.tmask == ws.tmask);
    REQUIRE(snap.threads.size() == nt);
    for (uint32_t t = 0; t < nt; ++t)
      for (uint32_t r = 0; r < 32; ++r) {
        INFO("thread " << t << " register " << r);
        CHECK(snap.threads[t].x[r] == ws.x[r * nt + t]);
        CHECK(snap.threads[t].f[r] == ws.f[r * nt + t]);
      }
  }
}

// --- 2. Single steps ----------------------------------------------------------------------

TEST_CASE("100 single steps of a warp follow its PC trace and end where an undisturbed run does", "[dm]") {
  constexpr uint64_t kStart = 5;
  constexpr uint32_t kSteps = 100;
  const std::vector<uint32_t> trace = accumulate_trace();
  REQUIRE(trace.size() > kStart + kSteps);

  Session a(kOneCore, 3);
  a.load(accumulate_kernel());
  uint32_t out_a = a.alloc(8);
  a.launch({1, 1, 1}, {4, 1, 1}, out_a);  // one warp
  a.expect(EventKind::Budget, kStart);
  need(a.dm->connect());
  need(a.dm->halt_all());
  REQUIRE(need(a.dm->halted_warps()) == std::vector<uint32_t>{0});
  std::vector<uint32_t> pcs = {need(a.dm->read_pc(0))};
  for (uint32_t i = 0; i < kSteps; ++i) {
    need(a.dm->step(0));
    pcs.push_back(need(a.dm->read_pc(0)));
  }
  CHECK(need(a.dm->halt_cause(0)) == HaltCause::Step);
  CHECK(pcs == std::vector<uint32_t>(trace.begin() + kStart, trace.begin() + kStart + kSteps + 1));
  CHECK(a.dev->stats().instructions == kStart + kSteps);  // steps count like normal execution
  const WarpSnapshot stepped = need(a.dm->read_warp(0));

  Session b(kOneCore, 3);
  b.load(accumulate_kernel());
  uint32_t out_b = b.alloc(8);
  REQUIRE(out_b == out_a);
  b.launch({1, 1, 1}, {4, 1, 1}, out_b);
  b.expect(EventKind::Budget, kStart + kSteps);
  auto undisturbed = b.halt_and_read();
  REQUIRE(undisturbed.size() == 1);
  CHECK(undisturbed[0].second == stepped);

  // Stepping on to the end retires the warp; the kernel's results are complete.
  for (size_t i = kStart + kSteps; i < trace.size(); ++i) need(a.dm->step(0));
  CHECK(need(a.dm->halted_warps()).empty());
  a.expect(EventKind::Completed);
  check_accumulate_output(a, out_a, 4);
}

// --- 3. Halt after reset ----------------------------------------------------------------

TEST_CASE("ndmreset with resethaltreq halts every warp on the image's first instruction", "[dm]") {
  Session s(kOneCore, 5);
  s.load(accumulate_kernel());
  uint32_t out = s.alloc(2 * 16, 0xdeadbeef);
  s.launch({2, 1, 1}, {8, 1, 1}, out);  // two CTAs of two warps: every slot
  s.expect(EventKind::Budget, 50);
  need(s.dm->connect());
  need(s.dm->reset_and_halt());
  s.expect(EventKind::Halted);
  REQUIRE(need(s.dm->halted_warps()) == std::vector<uint32_t>{0, 1, 2, 3});
  for (uint32_t w = 0; w < 4; ++w) {
    INFO("warp " << w);
    CHECK(need(s.dm->read_pc(w)) == kCode);
    CHECK(need(s.dm->halt_cause(w)) == HaltCause::ResetHaltReq);
  }
  // Step warp 2 through the dispatch window into the kernel.
  const std::vector<uint32_t> trace = accumulate_trace();
  for (uint32_t i = 1; i <= 3; ++i) {
    need(s.dm->step(2));
    CHECK(need(s.dm->read_pc(2)) == trace[i]);
  }
  for (uint32_t t = 0; t < 4; ++t) CHECK(need(s.dm->read_gpr(2, t, a0)) == out);
  need(s.dm->resume_all());
  s.expect(EventKind::Completed);
  check_accumulate_output(s, out, 16);
}

// --- 4. Breakpoints in a divergent region --------------------------------------------------

TEST_CASE("a breakpoint between SPLIT and JOIN halts with the side's thread mask and the kernel completes", "[dm]") {
  Session s(kOneCore, 9);
  s.load(diverge_kernel());
  uint32_t out = s.alloc(4);
  s.launch({1, 1, 1}, {4, 1, 1}, out);
  s.expect(EventKind::Budget, 1);
  need(s.dm->connect());
  need(s.dm->halt_all());
  const uint32_t then_word = s.get(kThenPc, 1)[0];
  need(s.dm->set_breakpoint(kThenPc));
  need(s.dm->set_breakpoint(kElsePc));
  CHECK(s.get(kThenPc, 1)[0] == rv::ebreak());
  CHECK(s.get(kElsePc, 1)[0] == rv::ebreak());
  need(s.dm->resume_all());

  // The smaller side (lane 3) runs first.
  s.expect(EventKind::Halted);
  REQUIRE(need(s.dm->halted_warps()) == std::vector<uint32_t>{0});
  CHECK(need(s.dm->halt_cause(0)) == HaltCause::Ebreak);
  CHECK(need(s.dm->read_pc(0)) == kThenPc);
  CHECK(need(s.dm->read_csr(0, 0, 0xCC4)) == 0x8);
  WarpSnapshot snap = need(s.dm->read_warp(0));
  CHECK(snap.pc == kThenPc);
  CHECK(snap.tmask == 0x8);
  for (uint32_t t = 0; t < 4; ++t) {
    CHECK(snap.threads[t].x[t0] == t);
    CHECK(snap.threads[t].x[t1] == (t == 3 ? 1u : 0u));
  }
  need(s.dm->clear_breakpoint(kThenPc));
  CHECK(s.get(kThenPc, 1)[0] == then_word);
  // Step the then side by hand and change its result.
  need(s.dm->step(0));
  need(s.dm->step(0));
  CHECK(need(s.dm->read_pc(0)) == kThenPc + 8);
  CHECK(need(s.dm->read_gpr(0, 3, t3)) == 111);
  need(s.dm->write_gpr(0, 3, t3, 999));
  need(s.dm->resume_all());

  // JOIN switches to the else side (lanes 0..2).
  s.expect(EventKind::Halted);
  CHECK(need(s.dm->halt_cause(0)) == HaltCause::Ebreak);
  snap = need(s.dm->read_warp(0));
  CHECK(snap.pc == kElsePc);
  CHECK(snap.tmask == 0x7);
  need(s.dm->clear_breakpoint(kElsePc));
  CHECK(s.dm->breakpoints().empty());
  need(s.dm->resume_all());
  s.expect(EventKind::Completed);
  CHECK(s.get(out, 4) == std::vector<uint32_t>{222, 222, 222, 999});
}

// --- 5. Memory through injection ---------------------------------------------------------

TEST_CASE("memory written through injection is what the kernel then reads, local memory per core", "[dm]") {
  Session s(kTwoCores, 13);
  s.load(planted_kernel());
  uint32_t arg = s.alloc(32, 0x5a5a5a5a);
  s.launch({2, 1, 1}, {4, 1, 1}, arg, 64);
  s.expect(EventKind::Budget, 1);  // every warp is still in the dispatch window
  need(s.dm->connect());
  need(s.dm->halt_all());
  const std::vector<uint32_t> halted = need(s.dm->halted_warps());
  REQUIRE(halted.size() == 2);

  // The global addend: 8 words through warp halted[0], thread 1; the driver sees them.
  const std::vector<uint32_t> addend = {1000, 1, 2, 3, 4, 5, 6, 7};
  need(s.dm->write_memory(halted[0], 1, arg + 64, addend));
  CHECK(s.get(arg + 64, 8) == addend);
  CHECK(need(s.dm->read_memory(halted[1], 3, arg + 64, 8)) == addend);
  CHECK(need(s.dm->read_memory(halted[1], 3, arg, 1)) == std::vector<uint32_t>{0x5a5a5a5a});

  // Each CTA's local memory word, through one of its own threads.
  std::vector<uint32_t> planted(2);
  for (uint32_t i = 0; i < 2; ++i) {
    const uint32_t w = halted[i];
    const uint32_t lmem = need(s.dm->read_csr(w, 0, 0xCDF));
    const uint32_t block = need(s.dm->read_csr(w, 2, 0xCD6));
    const uint32_t core = need(s.dm->read_csr(w, 0, 0xCC2));
    CHECK(core == w / 4);
    planted[block] = 0x100 * (block + 1);
    const std::vector<uint32_t> word = {planted[block]};
    need(s.dm->write_memory(w, 0, lmem, word));
    CHECK(need(s.dm->read_memory(w, 1, lmem, 1)) == word);
  }
  need(s.dm->resume_all());
  s.expect(EventKind::Completed);
  auto got = s.get(arg, 8);
  for (uint32_t block = 0; block < 2; ++block)
    for (uint32_t t = 0; t < 4; ++t) {
      INFO("block " << block << " thread " << t);
      CHECK(got[block * 4 + t] == planted[block] + 1000 + t);
    }
}

TEST_CASE("accesses through injection leave the hart's registers unchanged; faults are errors naming the hart",
          "[dm]") {
  Session s(kOneCore, 2);
  s.load(accumulate_kernel());
  uint32_t out = s.alloc(16);
  s.launch({1, 1, 1}, {4, 1, 1}, out);
  s.expect(EventKind::Budget, 20);
  need(s.dm->connect());
  need(s.dm->halt_all());
  const WarpSnapshot before = need(s.dm->read_warp(0));
  for (uint32_t words : {1u, 3u}) {
    auto r = s.dm->read_memory(0, 1, kUnmapped, words);
    REQUIRE(!r.ok());
    CHECK_THAT(r.error().message, Contains("read_memory (warp 0, thread 1)") && Contains("load from unmapped memory"));
  }
  // The second word of three faults: mapped memory ends at the allocation's page.
  const uint32_t page_end = (out | 0xfff) + 1;
  auto r = s.dm->read_memory(0, 2, page_end - 4, 3);
  REQUIRE(!r.ok());
  CHECK_THAT(r.error().message, Contains("at " + hex32(page_end)) && Contains("load from unmapped memory"));
  const std::vector<uint32_t> words = {1, 2};
  auto w = s.dm->write_memory(0, 3, kUnmapped, words);
  REQUIRE(!w.ok());
  CHECK_THAT(w.error().message, Contains("write_memory (warp 0, thread 3)") && Contains("store to unmapped memory"));
  auto c = s.dm->read_csr(0, 0, 0x123);
  REQUIRE(!c.ok());
  CHECK_THAT(c.error().message, Contains("read_csr (warp 0, thread 0)") && Contains("illegal instruction"));
  // Successful accesses borrow t0 and t1 too, and give them back.
  for (uint32_t t = 0; t < 4; ++t) {
    CHECK(need(s.dm->read_memory(0, t, out, 1)).size() == 1);
    CHECK(need(s.dm->read_memory(0, t, out, 5)).size() == 5);
    need(s.dm->write_memory(0, t, out + 32, words));
    need(s.dm->write_memory(0, t, out + 32, std::vector<uint32_t>{9}));
    CHECK(need(s.dm->read_csr(0, t, 0x340)) == out);
    need(s.dm->write_csr(0, t, 0x340, out));
    need(s.dm->write_fpr(0, t, 7, before.threads[t].f[7]));
    CHECK(need(s.dm->read_fpr(0, t, 7)) == before.threads[t].f[7]);
  }
  CHECK(s.get(out + 32, 2) == std::vector<uint32_t>{9, 2});
  CHECK(need(s.dm->read_warp(0)) == before);
}

// --- 6. Inspection does not change the run --------------------------------------------------

TEST_CASE("resuming after inspection ends exactly like an undisturbed run", "[dm]") {
  constexpr uint64_t kSeed = 11;
  constexpr uint32_t kThreads = 48;
  auto run = [&](Session& s, bool inspect) {
    s.load(accumulate_kernel());
    uint32_t out = s.alloc(2 * kThreads, 0xdeadbeef);
    s.launch({6, 1, 1}, {8, 1, 1}, out);
    if (inspect) {
      s.expect(EventKind::Budget, 400);
      for (const auto& [w, snap] : s.halt_and_read()) {
        for (uint32_t t = 0; t < 4; ++t) {
          // Rewriting the same values, reading CSRs and memory: nothing may change.
          need(s.dm->write_gpr(w, t, s2, snap.threads[t].x[s2]));
          need(s.dm->write_fpr(w, t, 2, snap.threads[t].f[2]));
          CHECK(need(s.dm->read_fpr(w, t, 2)) == snap.threads[t].f[2]);
          CHECK(need(s.dm->read_csr(w, t, 0xCC0)) == t);
          CHECK(need(s.dm->read_csr(w, t, 0xF14)) == w * 4 + t);
        }
        CHECK(need(s.dm->read_memory(w, 0, out, 16)) == s.get(out, 16));
      }
      need(s.dm->resume_all());
    }
    s.expect(EventKind::Completed);
    return std::make_tuple(s.get(out, 2 * kThreads), s.dev->exit_code(), s.dev->stats().instructions);
  };
  Session a(kTwoCores, kSeed), b(kTwoCores, kSeed);
  auto inspected = run(a, true);
  auto undisturbed = run(b, false);
  CHECK(inspected == undisturbed);
  auto [mem, exit_code, instructions] = inspected;
  for (uint32_t g = 0; g < kThreads; ++g) {
    INFO("gid " << g);
    CHECK(mem[2 * g] == accumulate_acc(g));
    CHECK(mem[2 * g + 1] == accumulate_facc(g));
  }
  CHECK(exit_code % 190 == 0);
}

// --- Register writes reach the kernel -----------------------------------------------------

TEST_CASE("GPR, FPR and CSR writes through injection change what the kernel computes next", "[dm]") {
  Session s(kOneCore, 4);
  s.load(accumulate_kernel());
  uint32_t out = s.alloc(8);
  s.launch({1, 1, 1}, {4, 1, 1}, out);
  s.expect(EventKind::Budget, 20);  // inside the loop
  need(s.dm->connect());
  need(s.dm->halt_all());
  const uint32_t pc = need(s.dm->read_pc(0));
  REQUIRE(pc >= kEntry + 4 * kLoopIndex);
  REQUIRE(pc <= kEntry + 4 * (kLoopIndex + 4));
  // Lane 2 (gid 2): acc += 1000, facc := 500.0 + what it had to add still.
  const uint32_t acc = need(s.dm->read_gpr(0, 2, s2));
  const float facc = std::bit_cast<float>(need(s.dm->read_fpr(0, 2, 2)));
  need(s.dm->write_gpr(0, 2, s2, acc + 1000));
  need(s.dm->write_fpr(0, 2, 2, fbits(facc + 500.0f)));
  CHECK(need(s.dm->read_gpr(0, 2, s2)) == acc + 1000);
  // mscratch round trip and the DSCRATCH CSRs as the debugger's own registers.
  const uint32_t mscratch = need(s.dm->read_csr(0, 1, 0x340));
  CHECK(mscratch == out);
  need(s.dm->write_csr(0, 1, 0x340, 0x1234));
  CHECK(need(s.dm->read_csr(0, 1, 0x340)) == 0x1234);
  need(s.dm->write_csr(0, 1, 0x340, mscratch));
  need(s.dm->write_csr(0, 1, 0x7b5, 77));
  CHECK(need(s.dm->read_csr(0, 1, 0x7b5)) == 77);
  need(s.dm->resume_all());
  s.expect(EventKind::Completed);
  auto got = s.get(out, 8);
  for (uint32_t g = 0; g < 4; ++g) {
    INFO("gid " << g);
    CHECK(got[2 * g] == accumulate_acc(g) + (g == 2 ? 1000 : 0));
    CHECK(got[2 * g + 1] == (g == 2 ? fbits(float(20 * g) + 500.0f) : accumulate_facc(g)));
  }
}

TEST_CASE("operations on a warp that is not halted or does not exist are errors", "[dm]") {
  Session s(kOneCore, 1);
  s.load(accumulate_kernel());
  uint32_t out = s.alloc(8);
  s.launch({1, 1, 1}, {4, 1, 1}, out);
  s.expect(EventKind::Budget, 10);
  CHECK_THAT(s.dm->read_pc(0).error().message, Contains("not connected"));
  need(s.dm->connect());
  CHECK_THAT(s.dm->read_gpr(0, 0, 5).error().message, Contains("read_gpr: warp 0 is not halted"));
  CHECK_THAT(s.dm->step(0).error().message, Contains("step: warp 0 is not halted"));
  CHECK_THAT(s.dm->read_pc(4).error().message, Contains("no warp 4"));
  CHECK_THAT(s.dm->read_gpr(0, 4, 1).error().message, Contains("no thread 4"));
  CHECK_THAT(s.dm->set_breakpoint(kEntry).error().message, Contains("no halted warp"));
  s.expect(EventKind::Completed);
  check_accumulate_output(s, out, 4);
}

// --- Sessions and windows -------------------------------------------------------------------

TEST_CASE("a client connecting to an active DM starts from the registers another client left", "[dm]") {
  Session s(kOneCore, 8);
  s.load(accumulate_kernel());
  uint32_t out = s.alloc(8);
  s.launch({1, 1, 1}, {4, 1, 1}, out);
  s.expect(EventKind::Budget, 20);
  need(s.dm->connect());
  need(s.dm->halt_all());
  CHECK(need(s.dm->read_gpr(0, 2, s1)) == 2);  // leaves DSELECT on thread 2
  DmClient second(*s.dev);
  const Platform p = need(second.connect());
  CHECK(p.total_warps() == 4);
  CHECK(p.threads == 4);
  for (uint32_t t : {0u, 2u, 3u}) CHECK(need(second.read_gpr(0, t, s1)) == t);
  need(second.resume_all());
  s.expect(EventKind::Completed);
  check_accumulate_output(s, out, 4);
}

TEST_CASE("halting and selecting reach warps in every 32-warp window", "[dm]") {
  const DeviceConfig cfg{2, 2, 16, 4};  // 64 warps: two windows
  Session s(cfg, 21);
  s.load(accumulate_kernel());
  uint32_t out = s.alloc(2 * 256);
  s.launch({4, 1, 1}, {64, 1, 1}, out);  // one CTA of 16 warps per core
  s.expect(EventKind::Budget, 200);
  const Platform p = need(s.dm->connect());
  CHECK(p.clusters == 2);
  CHECK(p.cores_per_cluster == 2);
  CHECK(p.warps == 16);
  need(s.dm->halt_all());
  const std::vector<uint32_t> halted = need(s.dm->halted_warps());
  CHECK(halted.size() == 64);
  for (uint32_t w : {0u, 31u, 32u, 47u, 63u}) {
    INFO("warp " << w);
    CHECK(need(s.dm->read_csr(w, 1, 0xF14)) == w * 4 + 1);  // mhartid = global warp * NT + lane
    CHECK(need(s.dm->read_csr(w, 0, 0xCC2)) == w / 16);     // CORE_ID
  }
  need(s.dm->resume_all());
  s.expect(EventKind::Completed);
  check_accumulate_output(s, out, 256);
}

// --- 7. Access counts ---------------------------------------------------------------------------

TEST_CASE("DM access counts of the batched operations are exact", "[dm]") {
  Session s(kOneCore, 6);
  s.load(accumulate_kernel());
  uint32_t out = s.alloc(400, 0x11111111);
  s.launch({1, 1, 1}, {4, 1, 1}, out);
  s.expect(EventKind::Budget, 20);
  need(s.dm->connect());
  need(s.dm->halt_all());
  auto cost = [&](auto&& op) {
    const uint64_t before = s.dm->accesses();
    op();
    return s.dm->accesses() - before;
  };
  need(s.dm->read_gpr(0, 0, 5));                             // the first select
  CHECK(cost([&] { need(s.dm->read_gpr(0, 0, 6)); }) == 3);  // INJECT, DCTRL, DSCRATCH0
  CHECK(cost([&] { need(s.dm->read_gpr(0, 0, 6)); }) == 2);  // INJECT unchanged
  CHECK(cost([&] { need(s.dm->read_gpr(0, 1, 6)); }) == 3);  // DSELECT, DCTRL, DSCRATCH0
  CHECK(cost([&] { need(s.dm->read_gpr(0, 1, 0)); }) == 0);  // x0
  CHECK(cost([&] { need(s.dm->write_gpr(0, 1, 7, 5)); }) == 3);
  CHECK(cost([&] { need(s.dm->read_pc(0)); }) == 1);
  CHECK(cost([&] { need(s.dm->read_memory(0, 1, out, 1)); }) == 9);
  // A read starts with the swap it ends with (1 word) or another read starts with: INJECT holds it.
  CHECK(cost([&] { need(s.dm->read_memory(0, 1, out, 1)); }) == 8);
  CHECK(cost([&] { need(s.dm->read_memory(0, 1, out, 8)); }) == 6 * 8 + 7 - 1);
  CHECK(cost([&] { need(s.dm->read_memory(0, 1, out, 300)); }) == 6 * 300 + 7 + 2);  // one base move
  const std::vector<uint32_t> one = {7}, eight = {1, 2, 3, 4, 5, 6, 7, 8};
  CHECK(cost([&] { need(s.dm->write_memory(0, 1, out, one)); }) == 6 * 1 + 7);
  CHECK(cost([&] { need(s.dm->write_memory(0, 1, out, eight)); }) == 6 * 8 + 7);
  CHECK(cost([&] { need(s.dm->read_fpr(0, 1, 3)); }) == 7);
  CHECK(cost([&] { need(s.dm->read_csr(0, 1, 0xCC0)); }) == 8);
  CHECK(cost([&] { need(s.dm->read_csr(0, 1, 0x7b3)); }) == 1);
  CHECK(cost([&] { need(s.dm->step(0)); }) == 2);  // DCTRL write, DCTRL read
  need(s.dm->read_gpr(0, 0, 5));                   // thread 0 selected, as read_warp starts with it
  CHECK(cost([&] { need(s.dm->read_warp(0)); }) == 6 + 255 * 4);
  // The 300-word transfers cross the 256-word base move correctly.
  std::vector<uint32_t> pattern(300);
  for (uint32_t i = 0; i < 300; ++i) pattern[i] = i * 0x01010101u;
  need(s.dm->write_memory(0, 2, out, pattern));
  CHECK(s.get(out, 300) == pattern);
  CHECK(need(s.dm->read_memory(0, 3, out, 300)) == pattern);
}
