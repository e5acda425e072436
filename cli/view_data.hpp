// Inside `vxreplay view` (view_command.cpp, view_server.cpp): a recording opened read-only with its
// debugger reporting JSON events into a string, and the pieces of the page's data read from it.
#pragma once

#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/listen.hpp"
#include "cli/output.hpp"
#include "cli/replay_command.hpp"
#include "replay/warp_timeline.hpp"

namespace vx::cli {

// A recording opened with its debugger reporting into a string (the same core as the prompt).
struct ViewRecording {
  std::string dir;
  std::stringstream events;
  JsonSink sink{events};
  std::unique_ptr<OpenedRecording> rec;
  std::vector<replay::LaunchTimeline> timeline;
};
// `dir`, or the latest recording under root.
Result<std::unique_ptr<ViewRecording>> open_view_recording(const std::string& dir, const std::string& root);

// The JSON events the debugger printed since the last call (one object per line).
std::vector<nlohmann::json> take_events(std::stringstream& ss);
// The focus lane's args, locals and registers at the current stop (as `info args`, `info locals`,
// `info registers` give them) into `into`.
void add_stop_values(ViewRecording& o, nlohmann::json* into);
// The first event that carries `key`.
std::optional<nlohmann::json> find_event(const std::vector<nlohmann::json>& events, const char* key);
// The source lines around each stop header's line ({"header": {file, line}} objects), by file.
nlohmann::json sources_json(const nlohmann::json& marks);

// Serves `page` and the state at any point of the recording over HTTP at `at` until SIGINT or
// SIGTERM (docs/view.md, "Serving"). Returns the exit status.
int serve_view(ViewRecording& o, const std::string& page, const HostPort& at);

}  // namespace vx::cli
