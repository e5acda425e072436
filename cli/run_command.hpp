// `vxreplay run KERNEL`: runs a kernel image to completion on the model.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "device/config.hpp"
#include "device/driver.hpp"
#include "replay/warp_timeline.hpp"

namespace vx::cli {

// Process exit statuses (docs/cli.md).
enum ExitStatus : int {
  kExitOk = 0,
  // 1..63: the kernel's exit code (values above 63 are reported as 63).
  kExitUsage = 64,        // bad command-line arguments
  kExitBadInput = 65,     // unreadable or malformed kernel image, bad launch parameters
  kExitDeviceStop = 66,   // the kernel stopped on a device exception, assertion, watchdog or deadlock
  kExitRace = 67,         // --races reported a data race
  kExitUnavailable = 69,  // EX_UNAVAILABLE: --mode live on a device without a Debug Module
  kExitInternal = 70,
  kExitCantWrite = 74,  // the recording could not be written (a full disk, the store's map full)
};

// docs/cli.md's exit-status table for an error, by its code: Usage 64, Input and StoreCorrupt 65,
// Device 66, Internal 70, StoreFull and StoreIo 74; any other code gives `fallback` (the command's
// own status for a failure of that step).
int exit_status_of(const Error& e, int fallback);

struct RunArgs {
  std::string kernel;
  DeviceConfig config;
  RunOptions options;
  std::optional<std::array<uint32_t, 3>> grid, block;
  std::optional<uint32_t> lmem;
  std::string launch_file;  // --launch FILE.json ("" = none; docs/cli.md, "Launch files")
  std::string entry;        // --entry NAME: the kernel function, or a .vxbin footer's entry ("" = the image's)
  std::string symbols;      // --symbols FILE: the ELF of a .vxbin ("" = one beside it, if it matches)
  bool quiet = false;       // no summary
  bool races = false;       // --races: report data races (docs/nondeterminism.md); exit 67 when there is one
  std::string html;         // --html FILE (with --races): the races drawn on the warps' timeline (docs/view.md)
};

int run_command(const RunArgs& args);

// One run of a workload to its end, as `run` does it, for the commands that compare runs (diff,
// sweep): its outcome, and the memory a comparison looks at (the image's segments and the launch
// file's buffers, read at the end).
struct WorkloadRun {
  int status = kExitOk;  // as `run` would exit (65 with `error` when it could not start)
  std::string error;     // why it could not start, or how it ended when not completed
  EventKind end = EventKind::Idle;
  DeviceException exception;  // end == Exception
  uint32_t exit_code = 0;
  std::map<uint32_t, std::string> console;  // each hart ring's text
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> memory;
  MachineStats stats;
  double seconds = 0;
  // The warps over time (replay/warp_timeline.hpp), when asked for: a recording's own, or sampled.
  std::vector<replay::LaunchTimeline> timeline;
};
// observer: set on the device for the run (nullptr: none). console: where the console goes as it
// comes (nullptr: nowhere). timeline_interval: sample the warps for `timeline` as a recording would
// every that many warp instructions (0: no timeline).
WorkloadRun run_workload(const RunArgs& args, DeviceObserver* observer, std::ostream* console,
                         uint64_t timeline_interval = 0);
// Runs a plain run's launch to its end, giving the console to `feed` after each slice. With a
// sampler, each wait stops at the next timeline sample, the warps are sampled there, and the end
// (completed, or the device's stop) closes the launch's timeline with what it printed.
DeviceEvent run_to_end(Driver& dev, replay::TimelineSampler* sampler,
                       const std::function<void(const std::vector<ConsoleChunk>&)>& feed);

}  // namespace vx::cli
