// Nondeterminism as a picture (docs/view.md): the pages `vxreplay diff --html`, `vxreplay run
// --races --html` and `vxreplay sweep --html` write. Each is the page of `vxreplay view` (the warp
// rows of each run on one axis of the launch's instructions) with points on the rows: a diff's
// first divergence (the read in each run, the write behind it, an arrow between them), a race's two
// accesses joined by an arc, and a sweep's outcome classes with the diff of the two largest.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "device/config.hpp"
#include "engine/symbols.hpp"
#include "replay/warp_timeline.hpp"

namespace vx::cli {

// One run on the page.
struct PageRun {
  std::string label;        // "seed 3 on 1x1x4x4"
  std::string short_label;  // "A", "B": before each of its rows
  const std::vector<replay::LaunchTimeline>* timeline = nullptr;
};

// The page of a diff: report is `vxreplay diff --json`'s object, text its text.
nlohmann::json diff_page_data(const std::string& kernel, const DeviceConfig& config, const PageRun& a, const PageRun& b,
                              const nlohmann::json& report, const std::string& text, const engine::Symbols* symbols);
// The page of a run's races: races is races_json()'s list (each access with its point), text
// format_races()'s.
nlohmann::json races_page_data(const std::string& kernel, const std::string& label, const DeviceConfig& config,
                               const std::vector<replay::LaunchTimeline>& timeline, const nlohmann::json& races,
                               const std::string& text, const engine::Symbols* symbols);

// Writes a page of data (from the functions above) to path; false when it could not be written.
bool write_nondet_page(const std::string& path, const std::string& kernel, const nlohmann::json& data);

}  // namespace vx::cli
