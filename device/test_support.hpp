// Unit-test support: instruction encoders and a bench that runs hand-assembled
// code on a bare machine. Test-only; never linked into vxreplay.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "device/machine.hpp"

namespace vx::test {

// --- Encoders (RISC-V base formats) -------------------------------------------
constexpr uint32_t r_type(uint32_t f7, uint32_t rs2, uint32_t rs1, uint32_t f3, uint32_t rd, uint32_t opc) {
  return (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | opc;
}
constexpr uint32_t r4_type(uint32_t rs3, uint32_t f2, uint32_t rs2, uint32_t rs1, uint32_t rm, uint32_t rd,
                           uint32_t opc) {
  return (rs3 << 27) | (f2 << 25) | (rs2 << 20) | (rs1 << 15) | (rm << 12) | (rd << 7) | opc;
}
constexpr uint32_t i_type(int32_t imm, uint32_t rs1, uint32_t f3, uint32_t rd, uint32_t opc) {
  return (uint32_t(imm & 0xfff) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | opc;
}
constexpr uint32_t s_type(int32_t imm, uint32_t rs2, uint32_t rs1, uint32_t f3, uint32_t opc) {
  uint32_t u = uint32_t(imm);
  return (((u >> 5) & 0x7f) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | ((u & 31) << 7) | opc;
}
constexpr uint32_t b_type(int32_t imm, uint32_t rs2, uint32_t rs1, uint32_t f3, uint32_t opc = 0x63) {
  uint32_t u = uint32_t(imm);
  return (((u >> 12) & 1) << 31) | (((u >> 5) & 0x3f) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) |
         (((u >> 1) & 15) << 8) | (((u >> 11) & 1) << 7) | opc;
}
constexpr uint32_t u_type(uint32_t imm20, uint32_t rd, uint32_t opc) { return (imm20 << 12) | (rd << 7) | opc; }
constexpr uint32_t j_type(int32_t imm, uint32_t rd, uint32_t opc = 0x6f) {
  uint32_t u = uint32_t(imm);
  return (((u >> 20) & 1) << 31) | (((u >> 1) & 0x3ff) << 21) | (((u >> 11) & 1) << 20) | (((u >> 12) & 0xff) << 12) |
         (rd << 7) | opc;
}

// A few common instructions; tests add their own with the encoders above.
namespace rv {
constexpr uint32_t addi(uint32_t rd, uint32_t rs1, int32_t imm) { return i_type(imm, rs1, 0, rd, 0x13); }
constexpr uint32_t li(uint32_t rd, int32_t imm) { return addi(rd, 0, imm); }  // 12-bit immediates only
constexpr uint32_t lui(uint32_t rd, uint32_t imm20) { return u_type(imm20, rd, 0x37); }
constexpr uint32_t add(uint32_t rd, uint32_t rs1, uint32_t rs2) { return r_type(0, rs2, rs1, 0, rd, 0x33); }
constexpr uint32_t lw(uint32_t rd, uint32_t rs1, int32_t imm) { return i_type(imm, rs1, 2, rd, 0x03); }
constexpr uint32_t sw(uint32_t rs2, uint32_t rs1, int32_t imm) { return s_type(imm, rs2, rs1, 2, 0x23); }
constexpr uint32_t csrr(uint32_t rd, uint32_t csr) { return i_type(int32_t(csr), 0, 2, rd, 0x73); }
constexpr uint32_t csrw(uint32_t csr, uint32_t rs1) { return i_type(int32_t(csr), rs1, 1, 0, 0x73); }
constexpr uint32_t beq(uint32_t rs1, uint32_t rs2, int32_t off) { return b_type(off, rs2, rs1, 0); }
constexpr uint32_t bne(uint32_t rs1, uint32_t rs2, int32_t off) { return b_type(off, rs2, rs1, 1); }
constexpr uint32_t jal(uint32_t rd, int32_t off) { return j_type(off, rd); }
constexpr uint32_t jalr(uint32_t rd, uint32_t rs1, int32_t imm) { return i_type(imm, rs1, 0, rd, 0x67); }
constexpr uint32_t ret() { return jalr(0, 1, 0); }
constexpr uint32_t ebreak() { return 0x00100073; }
constexpr uint32_t ecall() { return 0x00000073; }
}  // namespace rv

// Vortex instructions (CUSTOM0).
namespace vxi {
constexpr uint32_t tmc(uint32_t rs1) { return r_type(0, 0, rs1, 0, 0, 0x0b); }
constexpr uint32_t wspawn(uint32_t rs1, uint32_t rs2) { return r_type(0, rs2, rs1, 1, 0, 0x0b); }
constexpr uint32_t split(uint32_t rd, uint32_t rs1) { return r_type(0, 0, rs1, 2, rd, 0x0b); }
constexpr uint32_t split_n(uint32_t rd, uint32_t rs1) { return r_type(0, 1, rs1, 2, rd, 0x0b); }
constexpr uint32_t join(uint32_t rs1) { return r_type(0, 0, rs1, 3, 0, 0x0b); }
constexpr uint32_t bar(uint32_t rs1, uint32_t rs2) { return r_type(0, rs2, rs1, 4, 0, 0x0b); }
constexpr uint32_t pred(uint32_t rs1, uint32_t rs2) { return r_type(0, rs2, rs1, 5, 0, 0x0b); }
constexpr uint32_t pred_n(uint32_t rs1, uint32_t rs2) { return r_type(0, rs2, rs1, 5, 1, 0x0b); }
constexpr uint32_t bar_arrive(uint32_t rd, uint32_t rs1, uint32_t rs2) { return r_type(0, rs2, rs1, 6, rd, 0x0b); }
constexpr uint32_t bar_wait(uint32_t rs1, uint32_t rs2) { return r_type(0, rs2, rs1, 6, 0, 0x0b); }
constexpr uint32_t wsync() { return r_type(0, 0, 0, 7, 0, 0x0b); }
constexpr uint32_t vote(uint32_t kind, uint32_t rd, uint32_t rs1) { return r_type(1, 0, rs1, kind, rd, 0x0b); }
constexpr uint32_t shfl(uint32_t kind, uint32_t rd, uint32_t rs1, uint32_t rs2) {
  return r_type(1, rs2, rs1, 4 + kind, rd, 0x0b);
}
}  // namespace vxi

// ABI register numbers.
enum Reg : uint32_t {
  zero = 0, ra, sp, gp, tp, t0, t1, t2, s0, s1, a0, a1, a2, a3, a4, a5, a6, a7,
  s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, t3, t4, t5, t6
};

// Runs hand-assembled code on a bare machine.
class Bench {
 public:
  static constexpr uint32_t kCode = 0x80000000;
  static constexpr uint32_t kData = 0x20000;  // 64 KiB of mapped data memory
  static constexpr uint32_t kKernel = kCode + 0x100;  // where load_kernel puts a grid kernel

  explicit Bench(DeviceConfig cfg = {}, RunOptions opts = RunOptions{1, 1'000'000}) : m(cfg, opts) {
    m.memory().map(kCode, 0x10000);
    m.memory().map(kData, 0x10000);
  }
  void load(std::initializer_list<uint32_t> code) { load(std::vector<uint32_t>(code)); }
  void load(const std::vector<uint32_t>& code) {
    (void)m.memory().write(kCode, code.data(), code.size() * 4);
  }
  // Runs warp `warp` of core 0 alone from kCode until it retires (TMC 0), an
  // exception, or max_steps instructions. Returns the exception (cause None when it retired).
  DeviceException run_warp(uint32_t tmask, uint32_t warp = 0, uint32_t max_steps = 100000) {
    m.activate_warp(0, warp, kCode, tmask);
    for (uint32_t i = 0; i < max_steps && m.core(0).warps[warp].active; ++i) {
      DeviceException exc;
      Outcome o = m.step(0, warp, &exc);
      if (o.step == Step::Exception) return exc;
    }
    return {};
  }
  // A grid kernel behind the spec's five-instruction dispatch window at kCode
  // (read CTA_ENTRY, read mscratch into a0, call, WSYNC, TMC x0): a reused warp
  // slot restarts at that window. The kernel is a function: it ends with
  // rv::ret() and keeps ra.
  void load_kernel(const std::vector<uint32_t>& code) {
    const uint32_t window[] = {rv::csrr(5, 0xCE1), rv::csrr(10, 0x340), rv::jalr(1, 5, 0), vxi::wsync(), vxi::tmc(0)};
    (void)m.memory().write(kCode, window, sizeof window);
    (void)m.memory().write(kKernel, code.data(), code.size() * 4);
  }
  // Launches a grid whose warps start at kCode and call kKernel (see load_kernel), and runs it to the end.
  RunResult run_grid(std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block, uint32_t lmem = 0,
                     uint32_t arg = 0, uint64_t max = 10'000'000) {
    LaunchState l;
    l.kind = LaunchKind::Grid;
    l.start_pc = kCode;
    l.entry_pc = kKernel;
    l.arg_ptr = arg;
    l.grid = grid;
    l.block = block;
    l.lmem_bytes = lmem;
    auto r = m.start_launch(l);
    if (!r) return RunResult{RunStop::Exception, {}};
    return m.run(max);
  }
  uint32_t& x(uint32_t reg, uint32_t lane, uint32_t warp = 0, uint32_t core = 0) {
    return m.core(core).warps[warp].x[reg * m.config().threads + lane];
  }
  uint32_t& f(uint32_t reg, uint32_t lane, uint32_t warp = 0, uint32_t core = 0) {
    return m.core(core).warps[warp].f[reg * m.config().threads + lane];
  }
  WarpState& warp(uint32_t w = 0, uint32_t core = 0) { return m.core(core).warps[w]; }
  uint32_t read32(uint32_t addr) {
    uint32_t v = 0;
    (void)m.memory().read(addr, &v, 4);
    return v;
  }
  void write32(uint32_t addr, uint32_t v) { (void)m.memory().write(addr, &v, 4); }

  Machine m;
};

}  // namespace vx::test
