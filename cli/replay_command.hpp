// `vxreplay replay [DIR]` (a recording reopened without the kernel file or the host program) and
// `vxreplay ls` (the recordings under a directory). docs/cli.md, "Recordings".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <deque>
#include <memory>
#include "cli/debug_command.hpp"
#include "cli/debugger.hpp"
#include "cli/temp_file.hpp"
#include "debug/images.hpp"
#include "engine/symbols.hpp"
#include "engine/variables.hpp"
#include "replay/recording.hpp"

namespace vx::cli {

struct ReplayArgs {
  std::string dir;                 // the recording; "" = the latest under root
  std::string root = ".vxreplay";  // where `ls` and the default look
  std::optional<uint32_t> at;      // --at N: open at checkpoint N
  std::vector<std::string> breaks;
  std::vector<std::string> scripts;
  std::vector<std::string> commands;
  bool batch = false;
  bool json = false;
  bool quiet = false;
  std::string mode;              // --mode relaunch|live|auto (docs/live.md); "" = relaunch
  bool no_debug_module = false;  // --no-debug-module
  std::string gdb;               // --gdb [HOST:]PORT or - (docs/gdb.md); "" = the prompt
  bool gdb_remote = false;       // --gdb-remote
  bool gdb_allow_files = false;  // --gdb-allow-files
  // vxreplay diff --open on recordings: open at this point of the recording.
  using OpenAt = SessionOpenAt;
  std::optional<OpenAt> open_at;
};

int replay_command(const ReplayArgs& args);

// A recording opened for debugging: its device, the session on it, the symbols and C variables of
// the images it kept, and the debugger over them reporting to `sink` (none without one: the GDB
// server builds its own front end). What `vxreplay replay` and
// `vxreplay view` share. Errors: Input (exit 65), NotSupported (live without a Debug Module, 69).
struct OpenedRecording {
  replay::RecordingInfo info;
  std::unique_ptr<Driver> device;
  std::unique_ptr<engine::Session> session;
  std::optional<engine::Symbols> symbols;
  std::optional<engine::Variables> variables;
  TempFile tmp;  // the kept image as a file (C variables, gdb)
  std::string image_file;
  GridLaunch launch;
  std::string kernel_name;
  debug::Images images;
  std::deque<TempFile> image_files;
  std::unique_ptr<Debugger> dbg;
};
Result<std::unique_ptr<OpenedRecording>> open_recording(const std::string& dir, const std::string& mode,
                                                        bool no_debug_module, Sink* sink, bool read_only = false);

int ls_command(const std::string& root, bool json);

// The recording under root whose data.mdb was written last; error when there is none.
std::optional<std::string> latest_recording(const std::string& root, std::string* error);

}  // namespace vx::cli
