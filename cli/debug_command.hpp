// `vxreplay run KERNEL` as a debugger session (--break, -x, -ex, --batch, --json, --db;
// docs/cli.md, "Debugging"). The plain runner (run_command.hpp) stays for runs without them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "cli/output.hpp"
#include "cli/run_command.hpp"

namespace vx::cli {

// Where a session opens instead of before the launch (vxreplay diff --open): point (launch,
// instret), right before warp (core, slot) executes its next instruction, focus on lane; the stop
// is titled `title`.
struct SessionOpenAt {
  uint32_t launch = 1;
  uint64_t instret = 0;
  uint32_t core = 0, slot = 0, lane = 0;
  std::string title;
};

struct DebugArgs {
  RunArgs run;
  std::vector<std::string> breaks;              // --break LOC, in order
  std::vector<std::string> scripts;             // -x FILE, in order
  std::vector<std::string> commands;            // -ex CMD, in order (after the scripts)
  bool batch = false;                           // exit after the commands
  bool json = false;                            // one JSON object per line on stdout
  bool no_db = false;                           // no checkpoint store
  std::string db;                               // checkpoint store root ("" = .vxreplay)
  std::optional<uint64_t> checkpoint_interval;  // --checkpoint-interval (automatic checkpoints)
  std::optional<uint64_t> timeline_interval;    // --timeline-interval (vxreplay view's samples)
  uint64_t db_map_size = 0;                     // --db-map-size (0: the store's default)
  bool stop_on_store_error = false;             // --stop-on-store-error
  std::string mode;                             // --mode relaunch|live|auto ("" = the default, relaunch; docs/live.md)
  uint64_t attach_after = 0;                    // --attach-after N (live)
  bool reset_halt = false;                      // --reset-halt (live)
  std::string gdb;                              // --gdb [HOST:]PORT or - (docs/gdb.md); "" = the prompt
  bool gdb_remote = false;                      // --gdb-remote: listen on a host that is not a loopback address
  bool gdb_allow_files = false;                 // --gdb-allow-files: `monitor source FILE` reads files here
  // vxreplay diff --open: the session starts at this point instead of before the launch.
  using OpenAt = SessionOpenAt;
  std::optional<OpenAt> open_at;
};

// True when `run` is a debugger session rather than the plain runner: any of --break, -x, -ex,
// --batch, --json, or a terminal on both stdin and stdout (a run whose output goes to a pipe or a
// file stays the plain runner, even when started from a terminal).
bool wants_session(const DebugArgs& args, bool interactive_terminal);

int debug_command(const DebugArgs& args);

class Debugger;
// Shared by the session commands (run, replay): the -x scripts' lines (a missing one is an error).
Result<std::vector<std::string>> read_scripts(const std::vector<std::string>& paths);
// Runs the scripts' lines, then the -ex commands, then (unless batch) the prompt or stdin.
void run_commands(Debugger& dbg, const std::vector<std::string>& script_lines, const std::vector<std::string>& commands,
                  bool batch, bool json);
std::unique_ptr<Sink> make_sink(bool json, bool quiet);
// A setup failure before a session exists: reported, then `status` returned.
int fail(Sink& sink, int status, const std::string& message);

// The store directory for a session: ROOT/STEM-N with the first unused N (ROOT is created).
Result<std::string> pick_store_dir(const std::string& root, const std::string& kernel_path);

}  // namespace vx::cli
