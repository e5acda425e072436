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
// before: stops right BEFORE the warp would execute the instruction that makes its instret reach
// min_instret (instret + 1 >= min_instret, a lane of lane_mask active; the PC range is not looked
// at). That instruction does not execute; the state is the one a Budget stop at the same count
// leaves, and wait() goes on with that very instruction. A before-trigger fires once: it is cleared
// when it fires (time travel finds "the point before a warp's instruction N" with it).
// cta_linear: the trigger only concerns the slot while it holds that CTA's warp (UINT32_MAX: any);
// another CTA finishing in the slot does not fire it.
struct WarpTrigger {
  uint32_t core = 0;
  uint32_t slot = 0;
  uint64_t min_instret = 0;
  uint32_t pc_lo = 0;
  uint32_t pc_hi = 0;  // pc_lo == pc_hi: any PC
  uint32_t lane_mask = 0xffffffffu;
  bool before = false;
  uint32_t cta_linear = 0xffffffffu;
};

// Watchpoints (Driver::set_watchpoints): after an instruction that accessed a watched range retires,
// the device stops (EventKind::Watch) before any other instruction, with a WatchHit per range.
enum : uint8_t { kWatchRead = 1, kWatchWrite = 2 };
struct WatchRange {
  uint32_t id = 0;      // the debugger's, reported in hits
  uint32_t addr = 0;    // the address the kernel uses (after memory windows for global memory)
  uint32_t len = 4;     // 1..4096 bytes
  uint8_t kind = kWatchWrite;
  bool local = false;   // addr is in the local-memory range (0xFFFF0000..): only local accesses match
  int32_t core = -1;    // local: the core whose local memory (-1: every core)
  bool operator==(const WatchRange&) const = default;
};
struct WatchHit {
  uint32_t id = 0;
  uint32_t core = 0, slot = 0;
  uint32_t pc = 0;                 // the accessing instruction
  uint32_t lanes = 0;              // every lane whose access overlapped the range
  uint8_t kind = 0;                // what it did: kWatchRead | kWatchWrite (an AMO both)
  uint32_t addr = 0;               // the lowest overlapping access address
  std::vector<uint8_t> old_bytes;  // the range before the instruction
};

}  // namespace vx
