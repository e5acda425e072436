// The engine's session options, built once from a command's parsed flags: `vxreplay run KERNEL`
// and `vxreplay run -- PROGRAM` (DebugArgs), and `vxreplay replay` (a recording's header).
#pragma once

#include <string>

#include "checkpoint/records.hpp"
#include "cli/debug_command.hpp"
#include "engine/session.hpp"

namespace vx::cli {

// --mode relaunch|live|auto ("" or anything else: relaunch, the default; docs/live.md).
engine::SessionMode session_mode_of(const std::string& flag);

// A debugging session of a new workload: the store (`store_dir`, "" none; its map size, the
// automatic checkpoints' interval), the run's seed, schedule and watchdog, the mode and its live
// options (attach, reset-halt), and what the recording names as its workload. kernel_hash: the
// kernel image's (0 for a host program, whose images come later).
engine::SessionOptions session_options(const DebugArgs& args, const std::string& store_dir, const std::string& workload,
                                       uint64_t kernel_hash = 0);

// A recording reopened (replay): its store, the seed and watchdog its header holds, and --mode.
engine::SessionOptions replay_session_options(const checkpoint::StoreHeader& header, const std::string& dir,
                                              const std::string& mode);

}  // namespace vx::cli
