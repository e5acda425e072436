// `vxreplay run KERNEL` as a debugger session (--break, -x, -ex, --batch, --json, --db;
// docs/cli.md, "Debugging"). The plain runner (run_command.hpp) stays for runs without them.
#pragma once

#include <string>
#include <vector>

#include "cli/run_command.hpp"
#include "device/result.hpp"

namespace vx::cli {

struct DebugArgs {
  RunArgs run;
  std::vector<std::string> breaks;    // --break LOC, in order
  std::vector<std::string> scripts;   // -x FILE, in order
  std::vector<std::string> commands;  // -ex CMD, in order (after the scripts)
  bool batch = false;                 // exit after the commands
  bool json = false;                  // one JSON object per line on stdout
  bool no_db = false;                 // no checkpoint store
  std::string db;                     // checkpoint store root ("" = .vxreplay)
};

// True when `run` is a debugger session rather than the plain runner: any of --break, -x, -ex,
// --batch, --json, or a terminal on both stdin and stdout (a run whose output goes to a pipe or a
// file stays the plain runner, even when started from a terminal).
bool wants_session(const DebugArgs& args, bool interactive_terminal);

int debug_command(const DebugArgs& args);

// The store directory for a session: ROOT/STEM-N with the first unused N (ROOT is created).
Result<std::string> pick_store_dir(const std::string& root, const std::string& kernel_path);

}  // namespace vx::cli
