// `vxreplay sweep`: one workload under many schedules, grouped by outcome (docs/cli.md, "Finding
// nondeterminism"). Runs in parallel worker processes, or as independent jobs (--emit-jobs) whose
// results --merge groups.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "cli/run_command.hpp"

namespace vx::cli {

struct SweepArgs {
  RunArgs run;
  std::string seeds_text = "1-64";  // --seeds
  std::vector<uint64_t> seeds;
  unsigned jobs = 1;  // --jobs: worker processes
  bool json = false;
  std::string html;                    // --html FILE: the classes and the two largest's divergence as a page
  bool emit_jobs = false;              // print one command line per seed instead of running
  std::string out_dir;                 // --out DIR: write each run's result there (what a job does)
  std::string merge_dir;               // --merge DIR: group the results found there
  std::string self;                    // argv[0], for --emit-jobs
  std::vector<std::string> run_flags;  // the workload flags as given, repeated in emitted jobs
};

int sweep_command(const SweepArgs& args);

// "1-256", "3,7", "1-4,9": every seed once, in the order given. Errors name what does not parse.
Result<std::vector<uint64_t>> parse_seed_ranges(const std::string& text);

}  // namespace vx::cli
