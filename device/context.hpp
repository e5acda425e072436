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
struct WarpTrigger {
  uint32_t core = 0;
  uint32_t slot = 0;
  uint64_t min_instret = 0;
  uint32_t pc_lo = 0;
  uint32_t pc_hi = 0;  // pc_lo == pc_hi: any PC
  uint32_t lane_mask = 0xffffffffu;
};

}  // namespace vx
