// Save and re-launch support at the driver boundary (docs/relaunch.md).
//
// A DeviceContext is everything the device holds for a launch in flight except
// global memory: the launch and KMU progress, every core's warps, local memory
// and barriers, and the scheduler. The engine reads one with
// Driver::save_context() when the device stops, kills the workload, and later
// hands it back in a ResumeRequest: the device dispatches the engine's
// thread-entry routine (real RISC-V code in device memory) into the saved warp
// slots; the routine restores registers, CSRs and local memory with ordinary
// instructions and ends in VXR.RESUME, which installs the state no kernel
// instruction can write (PC, thread mask, IPDOM stack, barrier wait, counters).
#pragma once

#include <cstdint>
#include <vector>

#include "device/state.hpp"

namespace vx {

struct DeviceContext {
  LaunchState launch;
  std::vector<CoreState> cores;
  std::vector<GlobalBarrierState> global_barriers;
  std::vector<uint32_t> global_expected;  // per global barrier: cores expected by the last BAR
  SchedulerState scheduler;
  // Warp instructions (and their active lanes) the launch has retired, over every pass. mcycle and
  // the watchdog count from here, so neither sees the passes' boundaries.
  uint64_t kernel_instructions = 0;
  uint64_t kernel_lane_instructions = 0;
  uint64_t drain_countdown = 0;  // warp instructions until the next console drain
  bool operator==(const DeviceContext&) const = default;
};

// One warp slot the thread-entry routine runs in before the launch goes on.
struct RestorePlacement {
  uint32_t core = 0;
  uint32_t slot = 0;
  // The routine's argument, in mscratch at entry (the engine's per-warp record).
  uint32_t arg = 0;
  // True: the slot held an in-progress warp, and the routine must end in VXR.RESUME. False: a
  // helper (e.g. restoring the local memory of a core with no warp in progress) that ends in TMC 0.
  bool restores_warp = false;
};

// The instruction word a warp executes instead of the one in memory the first time it runs at pc:
// how a warp resumes over a breakpoint the debugger planted (x86's resume flag, for EBREAK).
struct FetchOverride {
  uint32_t core = 0;
  uint32_t slot = 0;
  uint32_t pc = 0;
  uint32_t word = 0;
  bool operator==(const FetchOverride&) const = default;
};

struct ResumeRequest {
  DeviceContext context;
  uint32_t routine_pc = 0;
  std::vector<RestorePlacement> placements;
  std::vector<FetchOverride> overrides;
  // False: the patent's variant. The KMU starts no further CTAs: the pass ends once the warps in
  // progress finish (EventKind::Completed), and the launch must then be resumed again.
  bool dispatch_new_units = true;
};

// Stops the device (EventKind::Trigger) right after warp (core, slot) retires an instruction that
// leaves it with instret >= min_instret, a PC outside [pc_lo, pc_hi), and at least one lane of
// lane_mask active; or when the warp finishes. Stepping uses it.
//
// before = true: the trigger fires right BEFORE the warp would execute the instruction that makes its
// instret reach min_instret (ws.instret + 1 >= min_instret, at least one lane of lane_mask active; the
// PC range is ignored). That instruction has not executed: the state is bit-identical to a Budget stop
// at the same instruction count, and the next wait() executes it. A before-trigger is cleared when it
// fires (also when the warp finishes first), so it never fires twice for one instruction; the caller
// re-arms. An after-trigger (before = false) stays armed as before.
//
// cta_linear != UINT32_MAX: the trigger only matches while the slot holds a warp of that CTA
// (WarpState::cta_linear); "the warp finishes" then means that CTA's warp, not another CTA's warp
// that later runs in the same slot.
struct WarpTrigger {
  uint32_t core = 0;
  uint32_t slot = 0;
  uint64_t min_instret = 0;
  uint32_t pc_lo = 0;
  uint32_t pc_hi = 0;  // pc_lo == pc_hi: any PC
  uint32_t lane_mask = 0xffffffffu;
  bool before = false;
  uint32_t cta_linear = UINT32_MAX;  // UINT32_MAX: any CTA
};

// --- Watchpoints on device data memory (Driver::set_watchpoints) -------------------------------
enum : uint8_t { kWatchRead = 1, kWatchWrite = 2 };

// One watched range. A load matches kWatchRead, a store kWatchWrite, an AMO both (it reads and
// writes), LR.W a read, a successful SC.W a write; a failed SC.W accesses no memory (it neither
// reads nor writes: the reservation it checks is the warp's, not memory's) and matches nothing.
struct WatchRange {
  uint32_t id = 0;             // the caller's; reported in each hit
  uint32_t addr = 0;           // local: an address in the local-memory range (memmap::kLocalMemBase + offset)
  uint32_t len = 4;            // 1..4096 bytes
  uint8_t kind = kWatchWrite;  // kWatchRead, kWatchWrite or both
  bool local = false;          // local memory (each core has its own); false: global memory (after the windows)
  int32_t core = -1;           // only accesses from this core; -1: any core
  bool operator==(const WatchRange&) const = default;
};

// One watched range touched by one retired instruction.
struct WatchHit {
  uint32_t id = 0;  // WatchRange::id
  uint32_t core = 0, slot = 0;
  uint32_t pc = 0;                 // the instruction's
  uint32_t lanes = 0;              // every lane whose access overlapped the range (and matched its kind)
  uint8_t kind = 0;                // what those accesses did: kWatchRead, kWatchWrite, both for an AMO
  uint32_t addr = 0;               // the lowest start address of those accesses (translated; local addresses as such)
  std::vector<uint8_t> old_bytes;  // the whole range as it was before the instruction
  bool operator==(const WatchHit&) const = default;
};

}  // namespace vx
