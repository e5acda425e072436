// Unit-test support: a bench that runs hand-assembled code (encoders in
// device/encode.hpp) on a bare machine. Test-only; never linked into vxreplay.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "device/encode.hpp"
#include "device/machine.hpp"

namespace vx::test {

// Runs hand-assembled code on a bare machine.
class Bench {
 public:
  static constexpr uint32_t kCode = 0x80000000;
  static constexpr uint32_t kData = 0x20000;          // 64 KiB of mapped data memory
  static constexpr uint32_t kKernel = kCode + 0x100;  // where load_kernel puts a grid kernel

  explicit Bench(DeviceConfig cfg = {}, RunOptions opts = RunOptions{1, 1'000'000}) : m(cfg, opts) {
    m.memory().map(kCode, 0x10000);
    m.memory().map(kData, 0x10000);
  }
  void load(std::initializer_list<uint32_t> code) { load(std::vector<uint32_t>(code)); }
  void load(const std::vector<uint32_t>& code) { (void)m.memory().write(kCode, code.data(), code.size() * 4); }
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
    const auto window = dispatch_window();
    (void)m.memory().write(kCode, window.data(), window.size() * 4);
    (void)m.memory().write(kKernel, code.data(), code.size() * 4);
  }
  // A grid launch whose warps start at kCode and call kKernel (see load_kernel).
  static LaunchState grid_launch(std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block, uint32_t lmem = 0,
                                 uint32_t arg = 0) {
    LaunchState l;
    l.kind = LaunchKind::Grid;
    l.start_pc = kCode;
    l.entry_pc = kKernel;
    l.arg_ptr = arg;
    l.grid = grid;
    l.block = block;
    l.lmem_bytes = lmem;
    return l;
  }
  // Launches grid_launch(...) and runs it to the end.
  RunResult run_grid(std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block, uint32_t lmem = 0, uint32_t arg = 0,
                     uint64_t max = 10'000'000) {
    auto r = m.start_launch(grid_launch(grid, block, lmem, arg));
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

// The words of each part, in order: a kernel assembled from helpers' pieces.
inline std::vector<uint32_t> concat(std::initializer_list<std::vector<uint32_t>> parts) {
  std::vector<uint32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace vx::test
