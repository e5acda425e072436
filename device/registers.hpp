// The one vocabulary of a lane's registers for debuggers (the prompt, the GDB server, conditions):
// which CSRs a debugger shows, under which names, and their values computed from plain state (a
// stop's DeviceContext, or the state at a breakpoint hit) by the rules Machine::csr_read applies
// when the lane itself reads them. x and f register names are isa.hpp's xreg_name/freg_name.
//
// And the one definition of a call and a return on RISC-V (the psABI's link registers): a call is a
// JAL or JALR that links (rd != x0; rd is ra, or t0 for the millicode calls of -msave-restore); a
// return is a JALR x0 through ra or t0 with no offset. Stepping forward (nexti, next, finish) and
// backward (reverse-nexti, reverse-finish) both classify instructions with these.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "device/config.hpp"
#include "device/state.hpp"

namespace vx {

// A CSR as a debugger shows it: its number, its name in the GDB target description (the spec's
// name where the two agree) and its short name at the prompt ($tmask, $cta_rank).
struct DebugCsr {
  uint32_t number;
  const char* gdb_name;
  const char* prompt_name;
  bool fp;  // in the fpu feature (fflags, frm, fcsr)
};
// In the order of the GDB server's register numbers.
std::span<const DebugCsr> debug_csrs();
// A CSR by a debugger's name (either form, with or without a leading '$'): nullptr when unknown.
const DebugCsr* find_debug_csr(std::string_view name);

// The value lane `lane` of warp slot (core, slot) reads from CSR `csr` in this state, for the CSRs
// that state determines; nullopt for the counters (mcycle, minstret, the active-warp count: the
// machine's, not the state's) and unknown numbers. Launches that are not grids read 0 from the
// CTA CSRs (threadIdx, blockIdx, dimensions), as the device does.
std::optional<uint32_t> csr_state_value(const DeviceConfig& cfg, const LaunchState& launch, const WarpState& w,
                                        uint32_t core, uint32_t slot, uint32_t lane, uint32_t csr);

constexpr uint32_t kMisaRv32imaf = (1u << 30) | (1u << 0) | (1u << 5) | (1u << 8) | (1u << 12);

// The link registers of the RISC-V psABI: ra (x1), and t0 (x5) for millicode calls.
constexpr bool is_link_register(unsigned r) { return r == 1 || r == 5; }
// JAL/JALR with rd != x0: a call (the next instruction of the caller is its return address).
constexpr bool is_call(uint32_t word) {
  const uint32_t opcode = word & 0x7f, rd = (word >> 7) & 31;
  return (opcode == 0x6f || opcode == 0x67) && rd != 0;
}
// JALR x0, 0(ra) or JALR x0, 0(t0): a return.
constexpr bool is_return(uint32_t word) {
  const uint32_t opcode = word & 0x7f, rd = (word >> 7) & 31, funct3 = (word >> 12) & 7, rs1 = (word >> 15) & 31;
  return opcode == 0x67 && funct3 == 0 && rd == 0 && is_link_register(rs1) && (word >> 20) == 0;
}

}  // namespace vx
