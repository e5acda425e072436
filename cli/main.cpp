// vxreplay: the command-line front end. main() wires the parts together.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <thread>
#include <tuple>

#include "cli/command.hpp"
#include "cli/debug_command.hpp"
#include "cli/diff_command.hpp"
#include "cli/gdb_server.hpp"
#include "cli/host_command.hpp"
#include "cli/replay_command.hpp"
#include "cli/run_command.hpp"
#include "cli/sweep_command.hpp"
#include "cli/view_command.hpp"

namespace {

// Parses "X", "X,Y" or "X,Y,Z" (missing dimensions are 1).
bool parse_dims(const std::string& text, std::array<uint32_t, 3>* out, std::string* error) {
  std::array<uint32_t, 3> d{1, 1, 1};
  std::stringstream ss(text);
  std::string part;
  int i = 0;
  while (std::getline(ss, part, ',')) {
    if (i == 3 || part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 9) {
      *error = "'" + text + "' is not X[,Y[,Z]] with positive integers";
      return false;
    }
    d[i++] = uint32_t(std::stoul(part));
    if (d[i - 1] == 0) {
      *error = "'" + text + "': dimensions must be at least 1";
      return false;
    }
  }
  if (i == 0) {
    *error = "'" + text + "' is not X[,Y[,Z]]";
    return false;
  }
  *out = d;
  return true;
}

// A flag's non-negative integer (decimal or 0x hex) up to max: nothing else parses, so '-1', '',
// '1e3' or a number past max is a usage error naming the flag instead of wrapping around.
bool parse_number(const std::string& flag, const std::string& text, uint64_t max, uint64_t* out) {
  bool too_large = false;
  std::optional<uint64_t> v = vx::cli::parse_u64(text, &too_large);
  if (!v && !too_large) {
    std::fprintf(stderr, "vxreplay: %s: '%s' is not a non-negative integer\n", flag.c_str(), text.c_str());
    return false;
  }
  if (too_large || *v > max) {
    std::fprintf(stderr, "vxreplay: %s: %s is larger than %llu\n", flag.c_str(), text.c_str(),
                 static_cast<unsigned long long>(max));
    return false;
  }
  *out = *v;
  return true;
}

// The flags that describe a workload run, shared by run, diff and sweep.
struct RunFlags {
  std::string config = "1x1x4x4", seed, watchdog, grid, block, lmem, schedule = "random";
  CLI::Option *seed_opt = nullptr, *watchdog_opt = nullptr, *grid_opt = nullptr, *block_opt = nullptr,
              *lmem_opt = nullptr;
};

void add_run_flags(CLI::App* cmd, RunFlags& f, vx::cli::RunArgs& run, bool with_seed) {
  cmd->add_option("--config", f.config, "Device shape CLUSTERSxCORESxWARPSxTHREADS or CORESxWARPSxTHREADS")
      ->capture_default_str();
  // Numbers are taken as text and parsed strictly (parse_number): CLI11 would wrap '-1' around.
  if (with_seed) f.seed_opt = cmd->add_option("--seed", f.seed, "Warp scheduler seed (same seed, same run; default 1)");
  cmd->add_option("--schedule", f.schedule,
                  "Warp schedule strategy: random (default) or pct (random priorities; docs/nondeterminism.md)");
  f.watchdog_opt = cmd->add_option("--watchdog", f.watchdog,
                                   "Stop a run after this many warp instructions (0: never; default 200000000)");
  f.grid_opt = cmd->add_option("--grid", f.grid, "Grid dimensions X[,Y[,Z]] (default: from the image)");
  f.block_opt = cmd->add_option("--block", f.block, "Block dimensions X[,Y[,Z]] (default: from the image)");
  f.lmem_opt = cmd->add_option("--lmem", f.lmem, "Local memory bytes per CTA (default: from the image)");
  cmd->add_option("--entry", run.entry,
                  "Kernel function (CTA entry) by name, or an entry of a .vxbin's VXSYMTAB footer");
  cmd->add_option("--symbols", run.symbols,
                  "The ELF of a .vxbin kernel, for its symbols (default: NAME.elf beside it)");
  cmd->add_flag("--strict-branches", run.options.strict_branches,
                "Stop at the first plain branch whose lanes disagree, as a device exception");
  cmd->add_option("--launch", run.launch_file,
                  "Launch file (JSON): dimensions, entry, buffers and arguments (docs/cli.md, \"Launch files\")");
}

// false: a usage error was printed.
bool apply_run_flags(const RunFlags& f, vx::cli::RunArgs& run) {
  std::string error;
  auto cfg = vx::DeviceConfig::parse(f.config, &error);
  if (!cfg) {
    std::fprintf(stderr, "vxreplay: --config: %s\n", error.c_str());
    return false;
  }
  run.config = *cfg;
  auto schedule = vx::parse_schedule(f.schedule);
  if (!schedule) {
    std::fprintf(stderr, "vxreplay: --schedule: '%s' is not random or pct\n", f.schedule.c_str());
    return false;
  }
  run.options.schedule = *schedule;
  uint64_t n = 0;
  if (f.seed_opt && f.seed_opt->count()) {
    if (!parse_number("--seed", f.seed, UINT64_MAX, &n)) return false;
    run.options.seed = n;
  }
  if (f.watchdog_opt->count()) {
    if (!parse_number("--watchdog", f.watchdog, UINT64_MAX, &n)) return false;
    run.options.watchdog_instructions = n;
  }
  if (f.lmem_opt->count()) {
    if (!parse_number("--lmem", f.lmem, UINT32_MAX, &n)) return false;
    run.lmem = uint32_t(n);
  }
  std::array<uint32_t, 3> dims;
  if (f.grid_opt->count()) {
    if (!parse_dims(f.grid, &dims, &error)) {
      std::fprintf(stderr, "vxreplay: --grid: %s\n", error.c_str());
      return false;
    }
    run.grid = dims;
  }
  if (f.block_opt->count()) {
    if (!parse_dims(f.block, &dims, &error)) {
      std::fprintf(stderr, "vxreplay: --block: %s\n", error.c_str());
      return false;
    }
    run.block = dims;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) makes a write past it fail with EFBIG: the recording could not be
  // written (exit 74, docs/store.md), not a process killed by SIGXFSZ. A host program gets the
  // default back (host_command.cpp).
  std::signal(SIGXFSZ, SIG_IGN);
  // gdb spells it -ex; CLI11 takes one-letter short options only, so -ex becomes --ex.
  std::vector<std::string> arg_store(argv, argv + argc);
  // `run [flags] -- PROGRAM ARGS...`: everything after the first "--" is the host program's.
  std::vector<std::string> host_command;
  for (size_t i = 1; i < arg_store.size(); ++i)
    if (arg_store[i] == "--") {
      host_command.assign(arg_store.begin() + std::ptrdiff_t(i) + 1, arg_store.end());
      arg_store.resize(i);
      if (host_command.empty()) {
        std::fprintf(stderr,
                     "vxreplay: nothing after \"--\": give the host program to run (run [flags] -- PROGRAM ARGS...)\n");
        return vx::cli::kExitHostFailed;
      }
      break;
    }
  const bool hosted = !host_command.empty();
  // With a host program, vxreplay's own failures are 125 (as env(1)): 64..70 are the host's to use.
  auto usage_status = [&]() { return hosted ? int(vx::cli::kExitHostFailed) : int(vx::cli::kExitUsage); };
  for (size_t i = 1; i < arg_store.size(); ++i)
    if (arg_store[i] == "-ex") arg_store[i] = "--ex";
  std::vector<char*> args;
  for (std::string& a : arg_store) args.push_back(a.data());
  argc = int(args.size());
  argv = args.data();

  CLI::App app{"vxreplay: a re-launch record/replay debugger for Vortex GPGPU kernels"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "vxreplay 0.1.0");

  vx::cli::DebugArgs dbg;
  vx::cli::RunArgs& run = dbg.run;
  auto* run_cmd = app.add_subcommand("run", "Run a kernel image (ELF or .vxbin) to completion on the Vortex model");
  run_cmd->footer(
      "Host programs: vxreplay run [flags] -- PROGRAM ARGS... runs a program written against vortex.h "
      "under the debugger, each vx_start a launch (docs/host.md); its exit status is the program's, 125 "
      "vxreplay's own failure, 126 cannot execute, 127 not found.");
  auto* kernel_opt = run_cmd->add_option("kernel", run.kernel,
                                         "Kernel image: an ELF built for riscv32, or a .vxbin "
                                         "(or, after --, a host program and its arguments)");
  RunFlags run_flags;
  add_run_flags(run_cmd, run_flags, run, true);
  std::string interval_text, at_text;
  bool live = false;
  run_cmd
      ->add_option("--mode", dbg.mode,
                   "Debug method: relaunch (default: save, kill, re-launch at every stop), live (halt in place "
                   "through the Debug Module), auto (live when the device has one); docs/live.md")
      ->check(CLI::IsMember({"relaunch", "live", "auto"}));
  run_cmd->add_flag("--live", live, "Short for --mode live");
  bool no_dm = false;
  run_cmd->add_flag("--no-debug-module", no_dm, "Model a device without the Debug Module");
  std::string attach_text;
  auto* attach_opt =
      run_cmd->add_option("--attach-after", attach_text,
                          "Live: halt the running kernel after N warp instructions (haltreq) and start there");
  run_cmd->add_flag("--reset-halt", dbg.reset_halt, "Live: start at the first instruction (resethaltreq)");
  run_cmd->add_flag("--quiet", run.quiet, "Print only the kernel's console output");
  run_cmd->add_flag("--races", run.races,
                    "Report data races on global and local memory (docs/nondeterminism.md); exit 67 when there is one");
  run_cmd->add_option("--html", run.html,
                      "--races: also draw them in a page for any browser, each race an arc between its two "
                      "accesses on the warps' timeline (docs/view.md)");
  run_cmd->add_option("--break", dbg.breaks, "Debug: set a breakpoint at FUNC, FILE:LINE or *ADDR (repeatable)")
      ->take_all()
      ->expected(1)
      ->allow_extra_args(false);
  run_cmd->add_option("-x", dbg.scripts, "Debug: run the commands in SCRIPT (repeatable)")
      ->take_all()
      ->expected(1)
      ->allow_extra_args(false);
  run_cmd->add_option("--ex,--eval-command", dbg.commands, "Debug: run CMD, after the scripts (repeatable; also -ex)")
      ->take_all()
      ->expected(1)
      ->allow_extra_args(false);
  run_cmd->add_flag("--batch", dbg.batch, "Debug: exit after the commands instead of reading more");
  run_cmd->add_flag("--json", dbg.json, "Debug: one JSON object per line for every event on stdout");
  // An empty directory name is a mistake (an unset shell variable), not the default.
  const CLI::Validator non_empty_dir(
      [](std::string& s) {
        return s.empty() ? std::string("an empty directory name (give a directory, or --no-db)") : std::string();
      },
      "DIR");
  auto* db_opt = run_cmd->add_option("--db", dbg.db, "Debug: checkpoint store directory (default .vxreplay)")
                     ->check(non_empty_dir);
  run_cmd->add_flag("--no-db", dbg.no_db, "Debug: keep no checkpoint store")->excludes(db_opt);
  run_cmd->add_flag("--stop-on-store-error", dbg.stop_on_store_error,
                    "Debug: end the session when the recording cannot be written (default: go on without it)");
  std::string map_text;
  auto* map_opt = run_cmd->add_option("--db-map-size", map_text,
                                      "Debug: the store's LMDB map size in bytes (default 64 GiB, virtual); a store "
                                      "that reaches it cannot record more (exit 74)");
  auto* interval_opt = run_cmd->add_option("--checkpoint-interval", interval_text,
                                           "Debug: an automatic checkpoint every N warp instructions of a launch "
                                           "(0: none; default 262144), bounding what a reverse move replays");
  std::string timeline_text;
  auto* timeline_opt = run_cmd->add_option("--timeline-interval", timeline_text,
                                           "Debug: a timeline sample of every warp every N warp instructions of a "
                                           "launch (vxreplay view; 0: none; default 16384)");
  auto* run_gdb_opt = run_cmd->add_option("--gdb", dbg.gdb,
                                          "Serve the session to gdb over the remote protocol: [HOST:]PORT (host "
                                          "127.0.0.1 unless given) or - for stdin/stdout (docs/gdb.md)");
  auto* run_gdb_remote = run_cmd->add_flag("--gdb-remote", dbg.gdb_remote,
                                           "Let --gdb listen on an address that is not loopback: whoever reaches it "
                                           "controls the session (docs/gdb.md, \"Trust\")");
  auto* run_gdb_files = run_cmd->add_flag("--gdb-allow-files", dbg.gdb_allow_files,
                                          "Let the gdb client's `monitor source FILE` read files on this machine");

  vx::cli::ReplayArgs rp;
  auto* replay_cmd = app.add_subcommand("replay",
                                        "Reopen a recording (default: the latest under .vxreplay) and debug it "
                                        "without the kernel file or the host program");
  replay_cmd->add_option("dir", rp.dir, "The recording's directory");
  auto* at_opt =
      replay_cmd->add_option("--at", at_text, "Open at checkpoint N (info checkpoints) instead of the first stop");
  replay_cmd->add_option("--break", rp.breaks, "Set a breakpoint at FUNC, FILE:LINE or *ADDR (repeatable)")
      ->take_all()
      ->expected(1)
      ->allow_extra_args(false);
  replay_cmd->add_option("-x", rp.scripts, "Run the commands in SCRIPT (repeatable)")
      ->take_all()
      ->expected(1)
      ->allow_extra_args(false);
  replay_cmd->add_option("--ex,--eval-command", rp.commands, "Run CMD, after the scripts (repeatable; also -ex)")
      ->take_all()
      ->expected(1)
      ->allow_extra_args(false);
  replay_cmd->add_flag("--batch", rp.batch, "Exit after the commands instead of reading more");
  replay_cmd->add_flag("--json", rp.json, "One JSON object per line for every event on stdout");
  replay_cmd->add_option("--mode", rp.mode, "Debug method: relaunch (default), live or auto (docs/live.md)")
      ->check(CLI::IsMember({"relaunch", "live", "auto"}));
  replay_cmd->add_flag("--no-debug-module", rp.no_debug_module, "Model a device without the Debug Module");
  auto* replay_gdb_opt = replay_cmd->add_option(
      "--gdb", rp.gdb, "Serve the recording to gdb: [HOST:]PORT or - for stdin/stdout (docs/gdb.md)");
  auto* replay_gdb_remote =
      replay_cmd->add_flag("--gdb-remote", rp.gdb_remote, "Let --gdb listen on an address that is not loopback");
  auto* replay_gdb_files = replay_cmd->add_flag(
      "--gdb-allow-files", rp.gdb_allow_files, "Let the gdb client's `monitor source FILE` read files on this machine");

  vx::cli::DiffArgs diff;
  RunFlags diff_flags;
  std::string diff_seeds, diff_configs;
  auto* diff_cmd = app.add_subcommand("diff",
                                      "Where two runs of a workload first differ: two seeds or two "
                                      "configurations of a kernel, or two recordings (exit 0 same, 1 different)");
  diff_cmd->add_option("inputs", diff.inputs, "KERNEL, or RECORDING_A RECORDING_B")->required()->expected(1, 2);
  add_run_flags(diff_cmd, diff_flags, diff.run, false);
  diff_cmd->add_option("--seeds", diff_seeds, "The two runs' scheduler seeds A,B (one seed: both)");
  diff_cmd->add_option("--configs", diff_configs, "The two runs' device shapes A,B (one: both)");
  diff_cmd->add_flag("--json", diff.json, "The report as one JSON object on stdout");
  diff_cmd->add_option("--html", diff.html,
                       "Also write the two runs' timelines aligned, the first divergence marked on both with the "
                       "write behind each read, as a page for any browser (docs/view.md)");
  diff_cmd->add_option("--open", diff.open, "Then debug run A or B, stopped at the diverging instruction");
  diff_cmd->add_option("--ex,--eval-command", diff.commands, "--open: run CMD in the session (repeatable; also -ex)")
      ->take_all()
      ->expected(1)
      ->allow_extra_args(false);
  diff_cmd->add_flag("--batch", diff.batch, "--open: exit after the commands instead of reading more");
  diff_cmd->add_option("--db", diff.db, "--open: checkpoint store directory (default .vxreplay)")->check(non_empty_dir);

  vx::cli::SweepArgs sweep;
  RunFlags sweep_flags;
  std::string jobs_text;
  auto* sweep_cmd = app.add_subcommand("sweep",
                                       "Run a workload under many schedules and group the runs by outcome "
                                       "(exit 0 one class, 1 more)");
  sweep_cmd->add_option("kernel", sweep.run.kernel, "Kernel image")->required();
  add_run_flags(sweep_cmd, sweep_flags, sweep.run, false);
  sweep_cmd->add_option("--seeds", sweep.seeds_text, "Seeds: ranges and lists, e.g. 1-256 or 1-8,40 (default 1-64)");
  auto* jobs_opt = sweep_cmd->add_option("--jobs,-j", jobs_text, "Worker processes (default: the machine's cores)");
  sweep_cmd->add_flag("--races", sweep.run.races, "Also detect races in every run (exit 67 when one has a race)");
  sweep_cmd->add_flag("--json", sweep.json, "The report as one JSON object on stdout");
  sweep_cmd->add_option("--html", sweep.html,
                        "Also write the outcome classes with their seeds and the first divergence between the two "
                        "largest as a page for any browser (docs/view.md)");
  sweep_cmd->add_flag("--emit-jobs", sweep.emit_jobs,
                      "Print one command line per seed (each writes its result into --out DIR) instead of running");
  sweep_cmd->add_option("--out", sweep.out_dir, "Write each run's result into DIR (what an emitted job does)");
  sweep_cmd->add_option("--merge", sweep.merge_dir, "Group the results found in DIR instead of running");

  vx::cli::ViewArgs view;
  auto* view_cmd = app.add_subcommand("view",
                                      "Write a recording as one page for any browser: every warp's state over "
                                      "time, the stops on it, their source and values (docs/view.md)");
  view_cmd->add_option("dir", view.dir, "The recording's directory (default: the latest under .vxreplay)");
  view_cmd->add_option("-o,--output", view.out, "The page to write (default: the recording's name + .html)");
  view_cmd->add_option("--serve", view.serve,
                       "Serve the page at [HOST:]PORT (default host 127.0.0.1) with the state at any point of the "
                       "timeline: click it (docs/view.md, \"Serving\")");
  view_cmd->add_flag("--serve-remote", view.serve_remote,
                     "Allow --serve on a host that is not a loopback address (anyone who reaches it reads the "
                     "recording)");

  vx::cli::ExportArgs exp;
  auto* export_cmd = app.add_subcommand("export", "Write a recording for other tools (docs/view.md)");
  export_cmd->add_option("dir", exp.dir, "The recording's directory (default: the latest under .vxreplay)");
  export_cmd
      ->add_option("--trace", exp.trace,
                   "The warps and stops in the Chrome Trace Event format (Perfetto, chrome://tracing)")
      ->required();

  std::string ls_root = ".vxreplay";
  bool ls_json = false;
  auto* ls_cmd = app.add_subcommand("ls", "List the recordings under a directory: kernel, date, stops, size");
  ls_cmd->add_option("root", ls_root, "Where to look (default .vxreplay)");
  ls_cmd->add_flag("--json", ls_json, "One JSON object on stdout");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : usage_status();
  }
  if (hosted && !run_cmd->parsed()) {
    std::fprintf(stderr, "vxreplay: \"-- PROGRAM\" goes with run: vxreplay run [flags] -- PROGRAM ARGS...\n");
    return vx::cli::kExitHostFailed;
  }
  if (run_cmd->parsed() && hosted && kernel_opt->count()) {
    std::fprintf(stderr,
                 "vxreplay: run takes a kernel or \"-- PROGRAM\", not both (the host program uploads its kernels)\n");
    return vx::cli::kExitHostFailed;
  }
  if (run_cmd->parsed() && !hosted && !kernel_opt->count()) {
    std::fprintf(stderr, "vxreplay: run needs a kernel image, or \"-- PROGRAM ARGS...\" for a host program\n");
    return vx::cli::kExitUsage;
  }

  // gdb drives a --gdb session: the prompt's commands, breakpoints and output options do not apply, and
  // with --gdb - stdout carries the protocol.
  auto gdb_conflict = [](const std::string& gdb, bool has_breaks, bool has_scripts, bool has_commands, bool batch,
                         bool json) {
    if (gdb.empty()) return false;
    const char* flag = json           ? "--json"
                       : has_scripts  ? "-x"
                       : has_commands ? "-ex"
                       : batch        ? "--batch"
                       : has_breaks   ? "--break"
                                      : nullptr;
    if (!flag) {
      if (auto ep = vx::cli::parse_gdb_endpoint(gdb); !ep) {
        std::fprintf(stderr, "vxreplay: %s\n", ep.error().message.c_str());
        return true;
      }
      return false;
    }
    std::fprintf(stderr,
                 "vxreplay: --gdb %s: %s does not apply: gdb drives the session (set breakpoints and run "
                 "commands in gdb; `monitor CMD` runs a vxreplay command)\n",
                 gdb.c_str(), flag);
    return true;
  };
  // The trust flags widen what a gdb client may do: they mean nothing without --gdb.
  for (auto [flag, gdb] : {std::pair{run_gdb_remote, &dbg.gdb}, std::pair{run_gdb_files, &dbg.gdb},
                           std::pair{replay_gdb_remote, &rp.gdb}, std::pair{replay_gdb_files, &rp.gdb}})
    if (flag->count() && gdb->empty()) {
      std::fprintf(stderr, "vxreplay: %s applies to --gdb only\n", flag->get_name().c_str());
      return vx::cli::kExitUsage;
    }
  if ((run_gdb_opt->count() && dbg.gdb.empty()) || (replay_gdb_opt->count() && rp.gdb.empty())) {
    std::fprintf(stderr, "vxreplay: --gdb: give [HOST:]PORT, or - for stdin/stdout\n");
    return vx::cli::kExitUsage;
  }
  if (run_cmd->parsed()) {
    if (gdb_conflict(dbg.gdb, !dbg.breaks.empty(), !dbg.scripts.empty(), !dbg.commands.empty(), dbg.batch, dbg.json))
      return vx::cli::kExitUsage;
    if (live) {
      if (!dbg.mode.empty() && dbg.mode != "live") {
        std::fprintf(stderr, "vxreplay: --live is --mode live; it contradicts --mode %s\n", dbg.mode.c_str());
        return usage_status();
      }
      dbg.mode = "live";
    }
    uint64_t n = 0;
    if (attach_opt->count()) {
      if (!parse_number("--attach-after", attach_text, UINT64_MAX, &n)) return usage_status();
      dbg.attach_after = n;
    }
    if ((attach_opt->count() || dbg.reset_halt) && dbg.mode != "live" && dbg.mode != "auto") {
      std::fprintf(stderr, "vxreplay: --attach-after and --reset-halt need --mode live\n");
      return usage_status();
    }
    run.options.debug_module = !no_dm;
    if (!apply_run_flags(run_flags, run)) return usage_status();
    if (interval_opt->count()) {
      if (!parse_number("--checkpoint-interval", interval_text, UINT64_MAX, &n)) return usage_status();
      dbg.checkpoint_interval = n;
    }
    if (timeline_opt->count()) {
      if (!parse_number("--timeline-interval", timeline_text, UINT64_MAX, &n)) return usage_status();
      dbg.timeline_interval = n;
    }
    if (map_opt->count()) {
      if (!parse_number("--db-map-size", map_text, UINT64_MAX, &n)) return usage_status();
      if (n < 65536) {
        std::fprintf(stderr, "vxreplay: --db-map-size: at least 65536 bytes\n");
        return usage_status();
      }
      dbg.db_map_size = n;
    }
    if (hosted) {
      if (run.races) {
        std::fprintf(stderr,
                     "vxreplay: --races with a host program is not supported yet: run its kernel with "
                     "vxreplay run --races KERNEL\n");
        return vx::cli::kExitHostFailed;
      }
      vx::cli::HostArgs host{dbg, host_command};
      return vx::cli::host_command(host);
    }
    // A chosen debug method makes the run a debugger session.
    if (!run.html.empty() && !run.races) {
      std::fprintf(stderr, "vxreplay: run --html draws the races a run has: give --races too\n");
      return vx::cli::kExitUsage;
    }
    // --races checks a whole run: the plain runner's, even on a terminal.
    if (run.races) {
      if (!dbg.mode.empty() || vx::cli::wants_session(dbg, false)) {
        std::fprintf(stderr,
                     "vxreplay: --races checks a whole run: it takes no debugging flags (--break, -x, -ex, "
                     "--batch, --json, --mode, --gdb)\n");
        return vx::cli::kExitUsage;
      }
      return vx::cli::run_command(run);
    }
    if (!dbg.mode.empty() || vx::cli::wants_session(dbg, isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)))
      return vx::cli::debug_command(dbg);
    return vx::cli::run_command(run);
  }
  if (replay_cmd->parsed()) {
    if (gdb_conflict(rp.gdb, !rp.breaks.empty(), !rp.scripts.empty(), !rp.commands.empty(), rp.batch, rp.json))
      return vx::cli::kExitUsage;
    uint64_t n = 0;
    if (at_opt->count()) {
      if (!parse_number("--at", at_text, UINT32_MAX, &n)) return vx::cli::kExitUsage;
      rp.at = uint32_t(n);
    }
    return vx::cli::replay_command(rp);
  }
  if (diff_cmd->parsed()) {
    if (diff.inputs.size() == 1) {
      diff.run.kernel = diff.inputs[0];
      if (!apply_run_flags(diff_flags, diff.run)) return vx::cli::kExitUsage;
    }
    if (!diff_seeds.empty() || diff_cmd->count("--seeds")) {
      auto seeds = vx::cli::parse_seed_list(diff_seeds);
      if (!seeds) {
        std::fprintf(stderr, "vxreplay: --seeds: %s\n", seeds.error().message.c_str());
        return vx::cli::kExitUsage;
      }
      diff.seeds = *seeds;
    }
    if (diff_cmd->count("--configs")) {
      std::stringstream ss(diff_configs);
      std::string part, error;
      while (std::getline(ss, part, ',')) {
        auto cfg = vx::DeviceConfig::parse(part, &error);
        if (!cfg) {
          std::fprintf(stderr, "vxreplay: --configs: '%s': %s\n", part.c_str(), error.c_str());
          return vx::cli::kExitUsage;
        }
        diff.configs.push_back(*cfg);
      }
      if (diff.configs.empty()) {
        std::fprintf(stderr, "vxreplay: --configs: '%s' is not a list of device shapes like 1x1x4x4,1x2x4x4\n",
                     diff_configs.c_str());
        return vx::cli::kExitUsage;
      }
    }
    return vx::cli::diff_command(diff);
  }
  if (sweep_cmd->parsed()) {
    if (!apply_run_flags(sweep_flags, sweep.run)) return vx::cli::kExitUsage;
    auto seeds = vx::cli::parse_seed_ranges(sweep.seeds_text);
    if (!seeds) {
      std::fprintf(stderr, "vxreplay: --seeds: %s\n", seeds.error().message.c_str());
      return vx::cli::kExitUsage;
    }
    sweep.seeds = *seeds;
    sweep.jobs = std::max(1u, std::thread::hardware_concurrency());
    if (jobs_opt->count()) {
      uint64_t n = 0;
      if (!parse_number("--jobs", jobs_text, 1024, &n)) return vx::cli::kExitUsage;
      if (n == 0) {
        std::fprintf(stderr, "vxreplay: --jobs: at least 1\n");
        return vx::cli::kExitUsage;
      }
      sweep.jobs = unsigned(n);
    }
    if (!sweep.merge_dir.empty() && (sweep.emit_jobs || !sweep.out_dir.empty())) {
      std::fprintf(stderr, "vxreplay: --merge groups results: it takes no --emit-jobs or --out\n");
      return vx::cli::kExitUsage;
    }
    sweep.self = arg_store[0];
    // The workload flags an emitted job repeats.
    sweep.run_flags = {"--config", sweep_flags.config, "--schedule", sweep_flags.schedule};
    for (auto [opt, flag, value] : {std::tuple{sweep_flags.watchdog_opt, "--watchdog", &sweep_flags.watchdog},
                                    std::tuple{sweep_flags.grid_opt, "--grid", &sweep_flags.grid},
                                    std::tuple{sweep_flags.block_opt, "--block", &sweep_flags.block},
                                    std::tuple{sweep_flags.lmem_opt, "--lmem", &sweep_flags.lmem}})
      if (opt->count()) sweep.run_flags.insert(sweep.run_flags.end(), {flag, *value});
    if (!sweep.run.launch_file.empty())
      sweep.run_flags.insert(sweep.run_flags.end(), {"--launch", sweep.run.launch_file});
    if (!sweep.run.entry.empty()) sweep.run_flags.insert(sweep.run_flags.end(), {"--entry", sweep.run.entry});
    if (!sweep.run.symbols.empty()) sweep.run_flags.insert(sweep.run_flags.end(), {"--symbols", sweep.run.symbols});
    if (sweep.run.options.strict_branches) sweep.run_flags.push_back("--strict-branches");
    if (sweep.run.races) sweep.run_flags.push_back("--races");
    return vx::cli::sweep_command(sweep);
  }
  if (ls_cmd->parsed()) return vx::cli::ls_command(ls_root, ls_json);
  if (view_cmd->parsed()) return vx::cli::view_command(view);
  if (export_cmd->parsed()) return vx::cli::export_command(exp);
  return vx::cli::kExitUsage;
}
