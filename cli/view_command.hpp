// `vxreplay view [DIR] [-o FILE.html]`: a recording as one self-contained page (docs/view.md): each
// warp's state over every launch, the stops and checkpoints on it, and for each stop its source
// line with the focus lane's registers and C variables. `vxreplay export DIR --trace FILE.json`:
// the same warps and marks in the Chrome Trace Event format (Perfetto, chrome://tracing).
#pragma once

#include <string>

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

// The page around its data (view_page.cpp): `data_json` goes in a script element as it is.
std::string view_page(const std::string& title, const std::string& data_json);

}  // namespace vx::cli
