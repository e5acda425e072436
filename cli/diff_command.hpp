// `vxreplay diff`: where two runs of one workload first differ (docs/cli.md, "Finding
// nondeterminism"; docs/nondeterminism.md). The runs are two seeds or two configurations of a
// kernel, or two recordings.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/run_command.hpp"
#include "engine/symbols.hpp"
#include "replay/diff.hpp"
#include "replay/races.hpp"

namespace vx::cli {

struct DiffArgs {
  RunArgs run;                        // the workload (a kernel); its seed and config are run A's
  std::vector<std::string> inputs;    // KERNEL, or two recording directories
  std::vector<uint64_t> seeds;        // --seeds A[,B]
  std::vector<DeviceConfig> configs;  // --configs A[,B]
  bool json = false;
  std::string html;                   // --html FILE: the runs' timelines and the divergence as a page
  std::string open;                   // --open A|B
  std::vector<std::string> commands;  // -ex, for the session --open starts
  bool batch = false;
  std::string db;  // --db for that session
};

int diff_command(const DiffArgs& args);

// "3,7" or "5": seeds (decimal or 0x hex), comma separated; an error names what does not parse.
Result<std::vector<uint64_t>> parse_seed_list(const std::string& text);

// One observed run: the outcome and the observations, with what a report needs to name things.
struct ObservedRun {
  std::string label;  // "seed 3", "1x1x4x4", a recording's directory
  WorkloadRun run;    // run.timeline: the warps over time, when asked for (either kind of run)
  std::unique_ptr<replay::ObservationLog> log;
  uint64_t seed = 0;
  DeviceConfig config;
};
// Runs the kernel workload `run` under the observer (the startup code's range from `symbols`).
// reference: run A's log when this is run B of a diff (ObservationLog::compare_with).
// timeline_interval: sample run.timeline (run_workload; 0: none).
ObservedRun observe_kernel(const RunArgs& run, const engine::Symbols* symbols, const std::string& label,
                           const replay::ObservationLog* reference = nullptr, uint64_t timeline_interval = 0);
replay::RunEnd run_end(const WorkloadRun& w);
// The symbols of the workload's kernel (an ELF's own; a .vxbin's from --symbols or the ELF beside
// it), or none: a report names addresses then. Errors are the run's to report.
std::optional<engine::Symbols> workload_symbols(const RunArgs& run);

// The report of a diff (what `vxreplay diff` prints): text and JSON.
std::pair<std::string, nlohmann::json> diff_report(const ObservedRun& a, const ObservedRun& b,
                                                   const replay::DiffReport& r, const engine::Symbols* symbols);

// The page of a diff (diff --html, sweep --html; docs/view.md): both runs observed with their
// timelines, report as diff_report() gives it.
nlohmann::json diff_page(const std::string& kernel, const ObservedRun& a, const ObservedRun& b,
                         const std::pair<std::string, nlohmann::json>& report, const engine::Symbols* symbols);

// The races a detector found, one per pair of source lines and kind, as text for a person and as JSON.
std::string format_races(const std::vector<replay::Race>& races, const engine::Symbols* symbols);
nlohmann::json races_json(const std::vector<replay::Race>& races, const engine::Symbols* symbols);

}  // namespace vx::cli
