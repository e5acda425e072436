// The re-launch debugging engine (docs/relaunch.md), as a library in the
// spirit of amd-dbgapi: a Session owns one workload on one device; the host
// runtime talks to Session::host(), the debugger front ends (CLI, GDB server)
// call run control and read state at stops.
//
// The method is the NVIDIA patent's: on a stop event the engine saves every
// in-progress warp through the driver (Driver::save_context), writes a
// checkpoint, and kills the workload, so the device is free. Continuing
// re-launches the saved grid with a thread-entry routine that restores each
// in-progress warp in its old slot; nothing the kernel executed runs twice.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device/context.hpp"
#include "device/driver.hpp"
#include "device/result.hpp"

namespace vx::checkpoint {
class Store;
struct TimeKey;
}  // namespace vx::checkpoint

namespace vx::engine {

// Hardware coordinates of a warp slot.
struct WarpId {
  uint32_t core = 0;
  uint32_t slot = 0;
  bool operator==(const WarpId&) const = default;
};

enum class StopReason : uint8_t {
  Breakpoint,        // a warp executed an EBREAK the engine planted
  Step,              // a step of the focus warp finished
  Exception,         // a device exception (fault, bad barrier, deadlock, the kernel's own EBREAK)
  Assertion,         // vx_assert failed (EBREAK followed by the assertion marker)
  Watchdog,          // the launch exceeded its instruction budget
  Interrupt,         // Session::interrupt()
  InstructionCount,  // run_to() reached its instruction count
  Exited,            // every submitted command buffer completed
  Killed,            // the workload cannot go on (it stopped on an exception and was continued, or a command failed)
};
const char* stop_reason_name(StopReason r);

// Warps that were at the stop's PC (a breakpoint hit by several warps in the same pass is one stop).
struct WarpHit {
  WarpId warp;
  uint32_t pc = 0;
  uint32_t lanes = 0;  // the warp's thread mask at the stop
};

struct StopEvent {
  StopReason reason = StopReason::Exited;
  uint32_t launch = 0;        // 1-based launch index within the workload
  uint32_t pass = 0;          // 1-based pass of that launch
  uint64_t instructions = 0;  // warp instructions the launch had retired at the stop (Exited: at its end)
  std::vector<int> breakpoints;  // Breakpoint: ids of the breakpoints at the hit warps' PCs
  std::vector<WarpHit> hits;     // Breakpoint/Step/Exception/Assertion: the warps concerned, first the one that stopped
  DeviceException exception;     // Exception, Assertion, Watchdog
  std::string message;           // Killed: why; Exception with a command error
  uint32_t exit_code = 0;        // Exited: the exit-code word
};

// The patent's three lists for the launch at a stop, by linear CTA index.
struct UnitRange {
  uint64_t first = 0;
  uint64_t count = 0;
};
struct ThreadLists {
  std::vector<UnitRange> complete, in_progress, not_launched;
};

struct SessionOptions {
  std::string store_dir;    // "" = no checkpoint store
  bool store_sync = true;   // fsync each checkpoint
  uint64_t kernel_hash = 0; // recorded in the store header
  std::string workload;     // recorded in the store header (e.g. the kernel path and launch)
  bool in_progress_only = false;  // the patent's variant: a re-launch first runs only the warps in progress
  uint64_t slice = 1u << 20;      // instructions per wait(): how often an interrupt is noticed
};

struct SessionStats {
  uint64_t instructions = 0;           // kernel warp instructions executed over every pass
  uint64_t lane_instructions = 0;
  uint64_t restore_instructions = 0;   // warp instructions of the thread-entry routine
  uint64_t launch_instructions = 0;    // instructions the launches have retired (their own count)
  uint32_t passes = 0;                 // every launch's first pass included
  uint32_t stops = 0;
  uint64_t checkpoints = 0;
  uint64_t bytes_stored = 0;           // bytes written to the store (pages and records, compressed)
  // instructions / launch_instructions: 1.0 when nothing ran twice.
  double reexecution_ratio() const {
    return launch_instructions == 0 ? 1.0 : double(instructions) / double(launch_instructions);
  }
};

// How a step goes on: called each time the focus warp retires an instruction with a focus lane
// active, with its PC and the focus lane's sp. Return a range [lo, hi) to keep running while the
// PC stays in it (the engine asks again when it leaves), or nullopt to stop here.
using StepPolicy = std::function<std::optional<std::pair<uint32_t, uint32_t>>(uint32_t pc, uint32_t sp)>;

struct Breakpoint {
  int id = 0;
  uint32_t addr = 0;
  bool enabled = true;
  uint64_t hits = 0;
};

class Session {
 public:
  static Result<std::unique_ptr<Session>> create(Driver& device, const SessionOptions& options);
  ~Session();

  // The driver the host runtime uses: memory and copies go to the device (and are recorded);
  // submitted command buffers are decoded and held, and run under the session's control.
  Driver& host();
  const DeviceConfig& config() const;

  // --- Breakpoints (engine-level: an address; front ends map source locations to addresses) ----
  Result<int> add_breakpoint(uint32_t addr);
  Result<void> remove_breakpoint(int id);
  Result<void> enable_breakpoint(int id, bool enabled);
  std::vector<Breakpoint> breakpoints() const;

  // --- Run control. Each returns the next stop; after Exited or Killed there is nothing to run. --
  Result<StopEvent> resume();
  // Steps warp `warp` (lanes: which lanes must be active for the step to count, 0 = any) by one
  // instruction, or as long as `policy` says. Other warps run as in the undisturbed schedule.
  Result<StopEvent> step(WarpId warp, uint32_t lanes, const StepPolicy& policy = nullptr);
  // Runs until the current launch has retired `count` warp instructions (or another stop comes first).
  Result<StopEvent> run_to(uint64_t count);
  // Thread-safe: the running pass stops at its next slice boundary with StopReason::Interrupt.
  void interrupt();
  // Called on the running thread after every slice of a pass (SessionOptions::slice instructions)
  // with the pass and the launch's instruction count: front ends print console output as it comes
  // (take_console) and progress. Empty: none.
  void set_progress(std::function<void(uint32_t pass, uint64_t instructions)> hook);

  // --- State at the current stop ------------------------------------------------------------
  bool stopped() const;                // a launch is stopped (its state is readable)
  const StopEvent& last_stop() const;
  const DeviceContext& context() const;  // valid while stopped()
  ThreadLists lists() const;
  // Device memory as the kernel sees it (planted breakpoints show their original words).
  Result<std::vector<uint8_t>> read_memory(uint32_t addr, uint32_t size);
  std::vector<ConsoleChunk> take_console();  // console output since the last call
  SessionStats stats() const;

  // --- Checkpoints --------------------------------------------------------------------------
  checkpoint::Store* store();
  // Goes back (or forward) to a stored checkpoint of the current launch: memory and state are
  // restored; the next resume re-launches from there.
  Result<StopEvent> goto_checkpoint(const checkpoint::TimeKey& key);

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vx::engine
