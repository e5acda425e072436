// The Debug Module client: halting, stepping and state access for the
// debugger engine, built only on Driver::dm_read / dm_write (seed 000, the
// contract in docs/debug-module.md). Registers, CSRs and memory are reached by
// instruction injection through the DSCRATCH CSRs (0x7B2..0x7B5); every
// temporary register an operation borrows is restored before it returns.
//
// The client keeps copies of DSELECT, INJECT, DCONFIG and the warp-mask array
// and skips writes that would not change them, so one client must own the DM
// of its driver. It also remembers which warps it has seen halted (a halted
// warp stays halted until this client resumes or resets it); call
// forget_halts() after Driver::abort() or anything else that empties warp slots.
//
// Access counts, once the warp is selected and known halted (see
// engine/dm_bench.cpp): a GPR read or write 3 (2 when INJECT already holds the
// instruction), a step 2, a PC read 1, a memory read of 1 word 9 and of n >= 2
// words 6n + 7, a memory write of n words 6n + 7.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "device/driver.hpp"

namespace vx::engine {

struct Platform {
  uint32_t clusters = 0;
  uint32_t cores_per_cluster = 0;
  uint32_t warps = 0;    // per core
  uint32_t threads = 0;  // per warp
  uint32_t total_warps() const { return clusters * cores_per_cluster * warps; }
};

struct ThreadRegs {
  std::array<uint32_t, 32> x{};
  std::array<uint32_t, 32> f{};  // raw bits
  bool operator==(const ThreadRegs&) const = default;
};

struct WarpSnapshot {
  uint32_t pc = 0;
  uint32_t tmask = 0;               // CSR 0xCC4
  std::vector<ThreadRegs> threads;  // every thread of the warp, active or not
  bool operator==(const WarpSnapshot&) const = default;
};

// DCTRL.hacause: vx::HaltCause (device/state.hpp) has its encoding.
using vx::HaltCause;
const char* halt_cause_name(HaltCause c);

class DmClient {
 public:
  explicit DmClient(Driver& d) : d_(d) {}

  // Sets dmactive (when clear), reads PLATFORM and primes the register copies.
  Result<Platform> connect();
  const Platform& platform() const { return platform_; }

  // Halts / resumes every warp through the mask array and haltreq / resumereq.
  Result<void> halt_all();
  Result<void> resume_all();
  // ndmreset with resethaltreq: the cores restart the launch in flight and
  // every warp dispatched first into a slot starts halted before its first instruction.
  Result<void> reset_and_halt();
  // Resumes only the given warps (the mask array selects exactly them; halt_all and resume_all
  // select every warp again).
  Result<void> resume_warps(const std::vector<uint32_t>& gwarps);
  // Keeps DCONFIG.ebreakh set even with no breakpoint (a live session: the kernel's own EBREAK halts too).
  Result<void> set_ebreak_halt();
  // Global ids of the halted warps (the WSTATUS windows).
  Result<std::vector<uint32_t>> halted_warps();
  Result<HaltCause> halt_cause(uint32_t gwarp);
  void forget_halts();

  // Executes one instruction of a halted warp; the warp stays halted (or retires on TMC x0).
  Result<void> step(uint32_t gwarp);
  Result<uint32_t> read_pc(uint32_t gwarp);
  Result<void> write_pc(uint32_t gwarp, uint32_t pc);

  Result<uint32_t> read_gpr(uint32_t gwarp, uint32_t thread, uint32_t reg);
  Result<void> write_gpr(uint32_t gwarp, uint32_t thread, uint32_t reg, uint32_t value);
  Result<uint32_t> read_fpr(uint32_t gwarp, uint32_t thread, uint32_t reg);
  Result<void> write_fpr(uint32_t gwarp, uint32_t thread, uint32_t reg, uint32_t value);
  Result<uint32_t> read_csr(uint32_t gwarp, uint32_t thread, uint32_t csr);
  Result<void> write_csr(uint32_t gwarp, uint32_t thread, uint32_t csr, uint32_t value);

  // Word-aligned memory as the given thread sees it (its windows, its core's local memory).
  Result<std::vector<uint32_t>> read_memory(uint32_t gwarp, uint32_t thread, uint32_t addr, uint32_t words);
  Result<void> write_memory(uint32_t gwarp, uint32_t thread, uint32_t addr, std::span<const uint32_t> words);

  // PC, thread mask and every GPR and FPR of every thread of a halted warp.
  Result<WarpSnapshot> read_warp(uint32_t gwarp);

  // Software breakpoints: EBREAK written over the code word (through a halted
  // warp) with DCONFIG.ebreakh set while any breakpoint exists.
  Result<void> set_breakpoint(uint32_t addr);
  Result<void> clear_breakpoint(uint32_t addr);
  const std::map<uint32_t, uint32_t>& breakpoints() const { return breakpoints_; }  // addr -> original word

  // DM register accesses made so far (reads and writes).
  uint64_t accesses() const { return accesses_; }

 private:
  Result<uint32_t> rd(uint32_t addr);
  Result<void> wr(uint32_t addr, uint32_t value);
  Result<void> write_dctrl(uint32_t requests);
  Result<void> select(uint32_t gwarp, uint32_t thread);
  Result<void> select_warp(uint32_t gwarp);
  Result<void> select_window(uint32_t window);
  Result<void> set_all_masks();
  Result<void> set_inject(uint32_t instr);
  Result<void> inject(uint32_t instr);
  Result<uint32_t> settled_dctrl(const char* what);
  Result<void> check_injection(const std::string& what);
  Result<void> require_halted(const char* op, uint32_t gwarp);
  Result<void> check_hart(const char* op, uint32_t gwarp, uint32_t thread);
  Result<void> prepare(const char* op, uint32_t gwarp, uint32_t thread);
  Result<uint32_t> halt_writer();
  std::string where(const char* op, uint32_t gwarp, uint32_t thread) const;

  Driver& d_;
  Platform platform_{};
  bool connected_ = false;
  bool keep_ebreakh_ = false;
  uint64_t accesses_ = 0;
  uint32_t dselect_ = 0;
  uint32_t inject_ = 0;
  uint32_t dconfig_ = 0;
  std::vector<std::optional<uint32_t>> masks_;  // per 32-warp window; empty optional: unknown
  std::vector<uint8_t> halted_;                 // warps known to be halted
  std::map<uint32_t, uint32_t> breakpoints_;
};

}  // namespace vx::engine
