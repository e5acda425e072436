// The Debug Module of seed 000 (docs/debug-module.md): the register interface a
// debugger uses to halt, resume and step warps and to inject instructions into
// them. The halt state itself is warp state (WarpState::halted); the DM's own
// registers are the plain value DmState.
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.hpp"

namespace vx {

class Machine;

namespace dm {

// Register addresses.
constexpr uint32_t kPlatform = 0x0;
constexpr uint32_t kDconfig = 0x1;
constexpr uint32_t kDselect = 0x2;
constexpr uint32_t kWmask = 0x3;
constexpr uint32_t kWactive = 0x4;
constexpr uint32_t kWstatus = 0x5;
constexpr uint32_t kDctrl = 0x6;
constexpr uint32_t kDpc = 0x7;
constexpr uint32_t kInject = 0x8;
constexpr uint32_t kDscratch0 = 0x9;  // DSCRATCH0..3 at 0x9..0xC
constexpr uint32_t kLastRegister = 0xC;

// PLATFORM: numthreads [2:0] = log2(NT), numwarps [11:3] = NW - 1, numcores [20:12] = cores per
// cluster - 1, numclusters [27:21] = clusters - 1, platformid [31:28].
constexpr uint32_t kPlatformId = 1;

// DCONFIG: ebreakh [0], RHC [28:26], NRC [31:29]; bits 25..1 are reserved.
constexpr uint32_t kEbreakh = 1u << 0;
constexpr uint32_t kRhcShift = 26;
constexpr uint32_t kNrcShift = 29;
constexpr uint32_t kDconfigFields = kEbreakh | (7u << kRhcShift) | (7u << kNrcShift);

// DSELECT: threadsel [6:0], warpsel [21:7] (global warp id), winsel [31:22].
constexpr uint32_t dselect(uint32_t thread, uint32_t warp, uint32_t window) {
  return (thread & 0x7f) | ((warp & 0x7fff) << 7) | (window << 22);
}
constexpr uint32_t threadsel(uint32_t dselect) { return dselect & 0x7f; }
constexpr uint32_t warpsel(uint32_t dselect) { return (dselect >> 7) & 0x7fff; }
constexpr uint32_t winsel(uint32_t dselect) { return dselect >> 22; }

// DCTRL. W: write-only requests (read 0); R: read-only status.
constexpr uint32_t kHaltReq = 1u << 0;       // W
constexpr uint32_t kResumeReq = 1u << 1;     // W
constexpr uint32_t kResetHaltReq = 1u << 2;  // W, with kNdmReset
constexpr uint32_t kStepReq = 1u << 3;       // W
constexpr uint32_t kStepStateShift = 4;      // R [5:4], always NONE here
constexpr uint32_t kInjectReq = 1u << 6;     // W
constexpr uint32_t kInjectStateShift = 7;    // R [8:7], always NONE here
constexpr uint32_t kHaCauseShift = 9;        // R [11:9]: HaltCause of the warpsel warp
constexpr uint32_t kExc = 1u << 12;          // R, vxreplay: the last step or injection raised a device exception
constexpr uint32_t kExcCauseShift = 13;      // R [16:13], vxreplay: its vx::Cause
constexpr uint32_t kAnyUnavail = 1u << 24;   // R
constexpr uint32_t kAllUnavail = 1u << 25;   // R
constexpr uint32_t kAnyRunning = 1u << 26;   // R
constexpr uint32_t kAllRunning = 1u << 27;   // R
constexpr uint32_t kAnyHalted = 1u << 28;    // R
constexpr uint32_t kAllHalted = 1u << 29;    // R
constexpr uint32_t kNdmReset = 1u << 30;     // RW
constexpr uint32_t kDmActive = 1u << 31;     // RW

}  // namespace dm

// The DM's own registers as a plain value.
struct DmState {
  bool dmactive = false;
  uint32_t dconfig = 0;  // reserved bits kept 0
  uint32_t dselect = 0;
  std::vector<uint32_t> wmask;  // the global warp-mask array, one word per 32 global warp ids
  uint32_t inject = 0;
  uint32_t ndmreset_accesses = 0;  // DM accesses left for which DCTRL.ndmreset reads 1
  bool exc = false;                // DCTRL.EXC: sticky until the next stepreq / injectreq
  uint8_t exc_cause = 0;           // DCTRL[16:13]
  bool operator==(const DmState&) const = default;
};

class DebugModule {
 public:
  // Starts with dmactive = 0 and every register at its reset value.
  explicit DebugModule(Machine& machine);

  // Register access. Fails only for an address beyond 0xC ("no Debug Module register at 0x..").
  Result<uint32_t> read(uint32_t addr);
  Result<void> write(uint32_t addr, uint32_t value);

  const DmState& state() const { return s_; }

 private:
  void reset();
  void write_dctrl(uint32_t value);
  uint32_t read_dctrl(bool ndmreset) const;
  uint32_t platform() const;
  uint32_t total_warps() const;
  bool selected(uint32_t gid) const { return (s_.wmask[gid / 32] >> (gid % 32)) & 1u; }
  // Bits of window `window` whose warps exist.
  uint32_t window_bits(uint32_t window) const;
  // The warpsel warp and the threadsel lane, when they exist.
  bool selected_warp(uint32_t* core, uint32_t* warp) const;
  bool selected_lane(uint32_t* core, uint32_t* warp, uint32_t* lane) const;
  void step();
  void inject();

  Machine& m_;
  DmState s_;
};

}  // namespace vx
