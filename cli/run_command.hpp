// `vxreplay run KERNEL`: runs a kernel image to completion on the model.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "device/config.hpp"

namespace vx::cli {

// Process exit statuses (docs/cli.md).
enum ExitStatus : int {
  kExitOk = 0,
  // 1..63: the kernel's exit code (values above 63 are reported as 63).
  kExitUsage = 64,          // bad command-line arguments
  kExitBadInput = 65,       // unreadable or malformed kernel image, bad launch parameters
  kExitDeviceStop = 66,     // the kernel stopped on a device exception, assertion, watchdog or deadlock
  kExitUnavailable = 69,    // EX_UNAVAILABLE: --mode live on a device without a Debug Module
  kExitInternal = 70,
  kExitCantWrite = 74,      // the recording could not be written (a full disk, the store's map full)
};

struct RunArgs {
  std::string kernel;
  DeviceConfig config;
  RunOptions options;
  std::optional<std::array<uint32_t, 3>> grid, block;
  std::optional<uint32_t> lmem;
  std::string launch_file;  // --launch FILE.json ("" = none; docs/cli.md, "Launch files")
  std::string entry;        // --entry NAME: the kernel function, or a .vxbin footer's entry ("" = the image's)
  std::string symbols;      // --symbols FILE: the ELF of a .vxbin ("" = one beside it, if it matches)
  bool quiet = false;  // no summary
};

int run_command(const RunArgs& args);

}  // namespace vx::cli
