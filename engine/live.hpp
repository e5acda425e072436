// Live debugging through the Debug Module (docs/live.md): the DM-driven half of the engine.
// Session (session.hpp) keeps its API; with SessionOptions::mode Live (or Auto on a device with a
// DM) its run control goes through LiveDevice, which reaches the device only through DmClient
// (halt, resume, step, instruction injection, DSCRATCH), and engine/session_live.cpp (the live runner
// over the session's state).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "device/context.hpp"
#include "device/driver.hpp"
#include "engine/dm_client.hpp"

namespace vx::engine {

enum class SessionMode : uint8_t {
  Relaunch,  // save, kill and re-launch at every stop (docs/relaunch.md)
  Live,      // warps halted in place through the Debug Module (docs/live.md)
  Auto,      // Live when the device has a Debug Module, else Relaunch
};
const char* session_mode_name(SessionMode m);  // "relaunch", "live", "auto"
std::optional<SessionMode> parse_session_mode(const std::string& text);

// What the session is doing (info session, the start event).
struct SessionInfo {
  SessionMode requested = SessionMode::Relaunch;
  bool live = false;         // run control goes through the Debug Module now
  bool has_dm = false;       // the device answered PLATFORM with a Vortex Debug Module
  bool held = false;         // a launch is halted on the device (live: the device is not free)
  std::string why;           // why this mode (one sentence)
  Platform platform;         // has_dm: what PLATFORM said
  uint64_t dm_accesses = 0;  // DM register accesses so far
};

// The message of --mode live on a device without a Debug Module (exit status 69).
constexpr const char* kNoDebugModule = "this device has no Debug Module; use --mode relaunch";

// Whether the device has a Debug Module: PLATFORM answers with the Vortex platform id.
bool probe_debug_module(Driver& d);

// One step of a warp through the DM.
struct LiveStep {
  enum Kind { Retired, Waiting, Exited, Fault } kind = Retired;
  uint32_t pc = 0;            // the warp's PC after the step (Retired, Waiting, Fault)
  Cause cause = Cause::None;  // Fault: the device exception the instruction raised
};

// The DM operations of a live session. Global warp id = core x warps + slot (docs/debug-module.md).
class LiveDevice {
 public:
  explicit LiveDevice(Driver& d) : d_(d), dm_(d) {}
  Result<Platform> connect();
  DmClient& dm() { return dm_; }
  uint64_t accesses() const { return dm_.accesses() + extra_; }

  uint32_t gid(uint32_t core, uint32_t slot) const { return core * platform_.warps + slot; }

  // Every warp halted (haltreq over all: the all-stop model).
  Result<void> halt_all() { return dm_.halt_all(); }
  Result<void> resume_all() { return dm_.resume_all(); }
  // Makes the planted EBREAKs the set `want` (needs a halted warp). Returns addr -> original word.
  Result<void> sync_breakpoints(const std::set<uint32_t>& want);
  const std::map<uint32_t, uint32_t>& planted() const { return dm_.breakpoints(); }

  // One DM step of warp g; at a planted breakpoint the original instruction executes (the EBREAK
  // is taken out for the step and put back).
  Result<LiveStep> step(uint32_t g);
  // Moves a halted warp's PC (past the kernel's own EBREAK).
  Result<void> write_pc(uint32_t g, uint32_t pc) { return dm_.write_pc(g, pc); }
  Result<uint32_t> read_pc(uint32_t g) { return dm_.read_pc(g); }

  // Overwrites every active warp's PC, thread mask, per-warp CSRs (fcsr, mstatus, mtvec, mscratch,
  // mepc, mcause, mtval), GPRs and FPRs in ctx with what the DM reads
  // (every warp must be halted). Warps whose slot holds no work are left as they are.
  Result<void> read_warps(DeviceContext& ctx, uint32_t threads);
  // Device memory through a halted warp (lane 0 of `through`), any alignment and size.
  Result<void> read_bytes(uint32_t through, uint32_t addr, std::span<uint8_t> out);

  // A range run (docs/live.md "step"): where a warp running alone may leave the PC range [lo, hi),
  // so that EBREAKs planted there halt it before it does. The stops are every target outside the
  // range of a branch, a jal and a fall-through, and every instruction in the range that is not a
  // plain one (jalr, SYSTEM, FENCE, the Vortex instructions: a jump the code does not name, a trap,
  // a thread mask change, a barrier or an exit), which the warp then executes by a DM step. An
  // address that holds a planted breakpoint halts already and stops nothing further. nullopt when
  // the range cannot run so (unaligned, compressed code, longer than kMaxRangeRunWords words).
  static constexpr uint32_t kMaxRangeRunWords = 4096;
  Result<std::optional<std::vector<uint32_t>>> range_stops(uint32_t through, uint32_t lo, uint32_t hi);

 private:
  Driver& d_;
  DmClient dm_;
  Platform platform_{};
  uint64_t extra_ = 0;  // DCTRL / WACTIVE reads made here
};

}  // namespace vx::engine
