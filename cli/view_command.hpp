// `vxreplay view [DIR] [-o FILE.html]`: a recording as one self-contained page (docs/view.md): each
// warp's state over every launch, the stops and checkpoints on it, and for each stop its source
// line with the focus lane's registers and C variables. `vxreplay export DIR --trace FILE.json`:
// the same warps and marks in the Chrome Trace Event format (Perfetto, chrome://tracing).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "device/config.hpp"
#include "engine/symbols.hpp"
#include "replay/warp_timeline.hpp"

namespace vx::cli {

struct ViewArgs {
  std::string dir;                 // the recording; "" = the latest under root
  std::string root = ".vxreplay";  // where the default looks
  std::string out;                 // the page; "" = the recording's name + .html
  std::string serve;               // --serve [HOST:]PORT: serve the page and the state at any point
  bool serve_remote = false;       // --serve-remote: a host that is not a loopback address
};

int view_command(const ViewArgs& args);

struct ExportArgs {
  std::string dir;
  std::string root = ".vxreplay";
  std::string trace;  // the Chrome trace file to write
};

int export_command(const ExportArgs& args);

// The page around its data (view_page.cpp): `data` goes in a script element.
std::string view_page(const std::string& title, const nlohmann::json& data);
// Writes the page; false when it could not be written.
bool write_view_page(const std::string& path, const std::string& title, const nlohmann::json& data);
// What every page's data holds: what it shows (kernel, where from, the device) and the warp states.
nlohmann::json view_data(const std::string& kernel, const std::string& from, const DeviceConfig& config);
// The launches' warp rows for the page, each launch named by `name`.
nlohmann::json launches_json(const std::vector<replay::LaunchTimeline>& timeline,
                             const std::function<std::string(uint32_t launch)>& name);
// Where a pc is, as a page's stop header: function, file (as the debug information names it), line
// and source, with the lane's hardware place.
nlohmann::json header_at(const engine::Symbols* symbols, uint32_t pc, uint32_t core, uint32_t warp, uint32_t lane);

}  // namespace vx::cli
