// `vxreplay run [flags] -- PROGRAM ARGS...`: runs a host program written against vortex.h under
// the debugger (docs/host.md). The program's libvortex sends every call over an inherited
// channel; each vx_start is a launch of the session, with breakpoints, stops and checkpoints.
#pragma once

#include <string>
#include <vector>

#include "cli/debug_command.hpp"

namespace vx::cli {

// Exit statuses of a wrapped host program's session (as env(1) and timeout(1)); otherwise the
// host's own status passes through (128 + N when signal N killed it). docs/cli.md.
enum HostExitStatus : int {
  kExitHostFailed = 125,     // vxreplay failed: bad arguments, an unusable store, an internal error
  kExitHostCannotRun = 126,  // the program exists but cannot be executed
  kExitHostNotFound = 127,   // the program was not found
};

struct HostArgs {
  DebugArgs dbg;                     // the session flags (--break, -x, --db, --config, ...)
  std::vector<std::string> command;  // PROGRAM ARGS...
};

int host_command(const HostArgs& args);

}  // namespace vx::cli
