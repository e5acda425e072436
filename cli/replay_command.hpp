// `vxreplay replay [DIR]` (a recording reopened without the kernel file or the host program) and
// `vxreplay ls` (the recordings under a directory). docs/cli.md, "Recordings".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "device/result.hpp"

namespace vx::cli {

struct ReplayArgs {
  std::string dir;                    // the recording; "" = the latest under root
  std::string root = ".vxreplay";     // where `ls` and the default look
  std::optional<uint32_t> at;         // --at N: open at checkpoint N
  std::vector<std::string> breaks;
  std::vector<std::string> scripts;
  std::vector<std::string> commands;
  bool batch = false;
  bool json = false;
  bool quiet = false;
  std::string mode;            // --mode relaunch|live|auto (docs/live.md); "" = relaunch
  bool no_debug_module = false;  // --no-debug-module
  // vxreplay diff --open on recordings: open at this point (launch, instret) of the recording,
  // before warp (core, slot) executes its next instruction, focus on lane.
  struct OpenAt {
    uint32_t launch = 1;
    uint64_t instret = 0;
    uint32_t core = 0, slot = 0, lane = 0;
    std::string title;
  };
  std::optional<OpenAt> open_at;
};

int replay_command(const ReplayArgs& args);

// A temporary file holding a recorded kernel image, for libdw (which reads files); removed when
// the object goes.
class TempFile {
 public:
  TempFile() = default;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile();
  Result<std::string> write(const std::vector<uint8_t>& bytes, const std::string& name);

 private:
  std::string path_;
};
int ls_command(const std::string& root, bool json);

// The recording under root whose data.mdb was written last; error when there is none.
std::optional<std::string> latest_recording(const std::string& root, std::string* error);

}  // namespace vx::cli
