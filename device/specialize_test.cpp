// The executors compiled per warp width (isa.hpp, specialize) against the table's generic ones:
// for every specialized executor, every width and both copies (the x86-64 baseline and, on hosts
// that have them, AVX2+FMA), random encodings, registers, masks and memory give the same outcome,
// registers, next pc and memory. This is what keeps the baseline copies tested on hosts whose
// machines use the wide ones (and the other way round).
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string_view>

#include "device/test_support.hpp"

using namespace vx;
using namespace vx::test;

namespace {

constexpr uint32_t kWidths[] = {1, 2, 4, 8, 16, 32};

struct ExecResult {
  Outcome o;
  uint32_t next_pc = 0;
  std::vector<uint32_t> x, f;
  uint32_t fcsr = 0;
  std::vector<uint8_t> data;
};

// One execution of `fn` on a fresh bench holding the given registers and data.
ExecResult execute(ExecFn fn, const Decoded& d, uint32_t nt, uint32_t tmask, const std::vector<uint32_t>& x,
                   const std::vector<uint32_t>& f, const std::vector<uint8_t>& data) {
  Bench b(DeviceConfig{1, 1, 4, nt});
  (void)b.m.memory().write(Bench::kData, data.data(), data.size());
  b.m.activate_warp(0, 0, Bench::kCode, tmask);
  WarpState& ws = b.warp();
  ws.x = x;
  ws.f = f;
  ExecCtx ctx{b.m, 0, 0, b.m.core(0), ws, nt, ws.x.data(), ws.f.data(), Bench::kCode, tmask, Bench::kCode + 4, tmask};
  ExecResult r;
  r.o = fn(ctx, d);
  b.m.fp_settle();
  r.next_pc = ctx.next_pc;
  r.x = ws.x;
  r.f = ws.f;
  r.fcsr = ws.fcsr;
  r.data.resize(data.size());
  (void)b.m.memory().read(Bench::kData, r.data.data(), r.data.size());
  return r;
}

bool same(const ExecResult& a, const ExecResult& b) {
  return a.o.step == b.o.step && a.o.cause == b.o.cause && a.o.lane == b.o.lane && a.o.tval == b.o.tval &&
         a.next_pc == b.next_pc && a.x == b.x && a.f == b.f && a.fcsr == b.fcsr && a.data == b.data;
}

}  // namespace

TEST_CASE("every executor compiled for one warp width does what the generic executor does") {
  std::mt19937 rng(4242);
  uint32_t checked = 0, sites = 0;
  for (auto list : {int_specialized(), fp_specialized()}) {
    for (const SpecializedExec& s : list) {
      const InsnRow* row = nullptr;
      for (const InsnRow* r : all_rows())
        if (r->exec == s.generic) row = r;
      REQUIRE(row != nullptr);
      INFO(row->mnemonic);
      for (unsigned wi = 0; wi < 6; ++wi) {
        const uint32_t nt = kWidths[wi];
        const uint32_t full = nt == 32 ? 0xffffffffu : (1u << nt) - 1;
        for (int round = 0; round < 20; ++round) {
          // An encoding of this row: its fixed bits, anything elsewhere, static round-to-nearest or DYN.
          uint32_t raw;
          do {
            raw = (row->match & row->mask) | (uint32_t(rng()) & ~row->mask);
          } while (!row->matches(raw) || find_row(raw) != row);
          Decoded d = decode(raw);
          std::vector<uint32_t> x(32 * nt), f(32 * nt);
          for (uint32_t& v : x) v = uint32_t(rng());
          for (uint32_t& v : f)
            v = uint32_t(rng()) % 3 == 0 ? uint32_t(rng()) : std::bit_cast<uint32_t>(float(int(rng() % 64) - 32));
          // Base registers point into the data window most of the time, sometimes misaligned or unmapped.
          for (uint32_t l = 0; l < nt; ++l) {
            const uint32_t r = rng() % 8;
            if (r < 6)
              x[d.rs1 * nt + l] = Bench::kData + 0x400 + (rng() % 256) * 4 + (r == 5 ? 1 : 0) - uint32_t(d.imm);
            if (r == 6) x[d.rs1 * nt + l] = 0x10 - uint32_t(d.imm);
          }
          for (uint32_t l = 0; l < nt; ++l) x[l] = 0;  // x0
          uint32_t tmask = rng() % 2 ? full : uint32_t(rng()) & full;
          if (tmask == 0) tmask = 1;  // a warp executing has an active lane
          std::vector<uint8_t> data(0x1000);
          for (uint8_t& v : data) v = uint8_t(rng());
          const ExecResult want = execute(s.generic, d, nt, tmask, x, f, data);
          INFO("width " << nt << " mask 0x" << std::hex << tmask << " word 0x" << raw);
          CHECK(same(execute(s.by_width[wi], d, nt, tmask, x, f, data), want));
          if (host_has_avx2_fma()) CHECK(same(execute(s.wide[wi], d, nt, tmask, x, f, data), want));
          // The load-site copies of both (isa.hpp, at_site): the same again at every site.
          for (uint32_t pc = 0; pc < 4 * kLoadSites; pc += 4) {
            const ExecFn base = at_site(s.by_width[wi], pc);
            if (base != s.by_width[wi]) {
              ++sites;
              CHECK(same(execute(base, d, nt, tmask, x, f, data), want));
            }
            const ExecFn wide = at_site(s.wide[wi], pc);
            if (host_has_avx2_fma() && wide != s.wide[wi]) CHECK(same(execute(wide, d, nt, tmask, x, f, data), want));
          }
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 1000);
  // Every load row (LB, LH, LW, LBU, LHU, FLW) at every width, 20 rounds, kLoadSites sites.
  CHECK(sites == 6 * 6 * 20 * kLoadSites);
}

TEST_CASE("neighbouring loads get different site copies; other executors have none") {
  const Decoded lw = decode(0x0005a503);  // lw a0, 0(a1)
  for (uint32_t nt : kWidths) {
    const ExecFn e = specialize(lw.exec, nt);
    CHECK(at_site(e, 0x100) != at_site(e, 0x104));
    CHECK(at_site(e, 0x100) == at_site(e, 0x100 + 4 * kLoadSites));
  }
  const Decoded add = decode(0x00b50533);  // add a0, a0, a1
  CHECK(at_site(specialize(add.exec, 4), 0x100) == specialize(add.exec, 4));
}

// The register-to-register and immediate ALU rows, and FP rows that only move or convert lane values,
// on full warps (whole-register vector code) against the same row one lane at a time (the scalar
// lane loop): lane l's result may depend on lane l's operands only, and fflags is the lanes' OR.
TEST_CASE("full-warp ALU results equal the lane-by-lane results of the same instruction") {
  std::mt19937 rng(777);
  const char* const names[] = {"add",     "sub",      "sll",      "slt",     "sltu",      "xor",       "srl",
                               "sra",     "or",       "and",      "mul",     "mulh",      "mulhsu",    "mulhu",
                               "div",     "divu",     "rem",      "remu",    "czero.eqz", "czero.nez", "addi",
                               "slti",    "sltiu",    "xori",     "ori",     "andi",      "slli",      "srli",
                               "srai",    "lui",      "auipc",    "fsgnj.s", "fsgnjn.s",  "fsgnjx.s",  "fmv.x.w",
                               "fmv.w.x", "fcvt.s.w", "fcvt.s.wu"};
  for (const char* name : names) {
    const InsnRow* row = nullptr;
    for (const InsnRow* r : all_rows())
      if (std::string_view(r->mnemonic) == name) row = r;
    REQUIRE(row != nullptr);
    for (uint32_t nt : kWidths) {
      const uint32_t full = nt == 32 ? 0xffffffffu : (1u << nt) - 1;
      for (int round = 0; round < 8; ++round) {
        uint32_t raw;
        do {
          raw = (row->match & row->mask) | (uint32_t(rng()) & ~row->mask);
        } while (find_row(raw) != row);
        if (std::string_view(name).starts_with("fcvt")) raw = (raw & ~(7u << 12)) | (7u << 12);  // DYN: frm = RNE
        const Decoded d = decode(raw);
        std::vector<uint32_t> x(32 * nt), f(32 * nt);
        for (uint32_t& v : x) v = rng() % 4 == 0 ? uint32_t(rng() % 5) - 2 : uint32_t(rng());
        for (uint32_t& v : f) v = uint32_t(rng());
        for (uint32_t l = 0; l < nt; ++l) x[l] = 0;
        const std::vector<uint8_t> data(16);
        const ExecResult whole = execute(specialize(d.exec, nt), d, nt, full, x, f, data);
        INFO(name << " width " << nt << " word 0x" << std::hex << raw);
        REQUIRE(whole.o.step == Step::Retire);
        uint32_t fcsr = 0;
        for (uint32_t l = 0; l < nt; ++l) {
          const ExecResult one = execute(d.exec, d, nt, 1u << l, x, f, data);
          INFO("lane " << l);
          REQUIRE(whole.x[d.rd * nt + l] == one.x[d.rd * nt + l]);
          REQUIRE(whole.f[d.rd * nt + l] == one.f[d.rd * nt + l]);
          fcsr |= one.fcsr;
        }
        REQUIRE(whole.fcsr == fcsr);  // fflags: the OR of the lanes' (NX of an inexact conversion)
      }
    }
  }
}
