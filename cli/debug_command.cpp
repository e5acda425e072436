#include "cli/debug_command.hpp"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

// libedit's readline-compatible API.
#include <editline/readline.h>

#include "cli/debugger.hpp"
#include "cli/gdb_server.hpp"
#include "cli/kernel_symbols.hpp"
#include "cli/launch_file.hpp"
#include "cli/session_options.hpp"
#include "device/host_runtime.hpp"
#include "device/input_file.hpp"
#include "engine/session.hpp"
#include "engine/symbols.hpp"
#include "engine/variables.hpp"

namespace vx::cli {

namespace {

// Commands an empty line repeats at the interactive prompt (as gdb does).
bool repeatable(const std::string& line) {
  auto cl = parse_command_line(line);
  if (!cl) return false;
  static const char* kRepeat[] = {
      "continue", "stepi",         "nexti",         "step",         "next",         "x",
      "list",     "reverse-stepi", "reverse-nexti", "reverse-step", "reverse-next", "reverse-continue"};
  for (const char* r : kRepeat)
    if (cl->name == r) return true;
  return false;
}

}  // namespace

std::unique_ptr<Sink> make_sink(bool json, bool quiet) {
  if (json) return std::make_unique<JsonSink>();
  bool color = isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
  return std::make_unique<HumanSink>(color, quiet);
}

namespace {

std::unique_ptr<Sink> make_sink(const DebugArgs& a) {
  if (a.json) return std::make_unique<JsonSink>();
  bool color = isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
  return std::make_unique<HumanSink>(color, a.run.quiet);
}

}  // namespace

// Setup failures before the session exists: an error event (JSON) or a line on stderr, then the
// exit event in JSON.
int fail(Sink& sink, int status, const std::string& message) {
  if (sink.json()) {
    sink.error("", message);
    ExitView v;
    v.status = status;
    v.state = "not started";
    sink.exit(v);
  } else {
    std::fflush(stdout);
    std::fprintf(stderr, "vxreplay: %s\n", message.c_str());
  }
  return status;
}

namespace {

std::string dims(const std::array<uint32_t, 3>& d) {
  return std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]);
}

}  // namespace

bool wants_session(const DebugArgs& a, bool interactive_terminal) {
  // Any debugging flag makes a session (which reads commands from stdin, terminal or not); a plain
  // run never reads stdin.
  return !a.gdb.empty() || !a.breaks.empty() || !a.scripts.empty() || !a.commands.empty() || a.batch || a.json ||
         !a.db.empty() || a.no_db || a.checkpoint_interval || a.timeline_interval || a.db_map_size ||
         interactive_terminal;
}

Result<std::string> pick_store_dir(const std::string& root, const std::string& kernel_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return make_error("cannot create the checkpoint directory " + root + ": " + ec.message());
  std::string stem = fs::path(kernel_path).stem().string();
  if (stem.empty()) stem = "kernel";
  for (unsigned n = 1; n < 100000; ++n) {
    fs::path p = fs::path(root) / (stem + "-" + std::to_string(n));
    // create_directory reports whether it made the directory: a concurrent session takes the next N.
    if (fs::create_directory(p, ec)) return p.string();
    if (ec) return make_error("cannot create " + p.string() + ": " + ec.message());
  }
  return make_error("no free session directory in " + root);
}

namespace {

// Ctrl-C outside a run (a run installs its own handler, which interrupts it, and puts this one
// back): it never ends the session. At the interactive prompt it discards the line being typed.
volatile std::sig_atomic_t g_prompt_interrupt = 0;

extern "C" void on_prompt_sigint(int) { g_prompt_interrupt = 1; }

void install_sigint(bool restart) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_prompt_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = restart ? SA_RESTART : 0;
  sigaction(SIGINT, &sa, nullptr);
}

// libedit's character source: a read() that a Ctrl-C interrupts (no SA_RESTART at the prompt) ends
// the line, which the loop then drops.
extern "C" int prompt_getc(FILE*) {
  for (;;) {
    unsigned char c = 0;
    const ssize_t n = read(STDIN_FILENO, &c, 1);
    if (n == 1) return c;
    if (n == 0) return EOF;
    if (errno != EINTR) return EOF;
    if (g_prompt_interrupt) return '\n';
  }
}

// Tab completion: command names, info subcommands, user commands and the kernel's C names.
const Debugger* g_completing = nullptr;
std::vector<std::string> g_candidates;
size_t g_next_candidate = 0;

extern "C" char* complete_word(const char* text, int state) {
  if (state == 0) {
    g_candidates.clear();
    g_next_candidate = 0;
    if (g_completing)
      for (const std::string& w : g_completing->completion_words())
        if (w.rfind(text, 0) == 0) g_candidates.push_back(w);
  }
  if (g_next_candidate >= g_candidates.size()) return nullptr;
  return strdup(g_candidates[g_next_candidate++].c_str());
}

extern "C" char** complete_line(const char* text, int, int) {
  rl_attempted_completion_over = 1;  // no file names
  return rl_completion_matches(text, complete_word);
}

}  // namespace

void run_commands(Debugger& dbg, const std::vector<std::string>& script_lines, const std::vector<std::string>& commands,
                  bool batch, bool json) {
  bool go_on = true;
  install_sigint(true);
  for (const std::string& line : script_lines)
    if (go_on) go_on = dbg.execute(line);
  for (const std::string& line : commands)
    if (go_on) go_on = dbg.execute(line);

  if (go_on && !batch) {
    if (isatty(STDIN_FILENO)) {
      std::string last;
      const char* prompt = json ? "" : "(vxreplay) ";
      rl_catch_signals = 0;
      rl_getc_function = prompt_getc;
      g_completing = &dbg;
      rl_attempted_completion_function = complete_line;
      install_sigint(false);
      for (;;) {
        g_prompt_interrupt = 0;
        char* raw = readline(prompt);
        if (g_prompt_interrupt) {
          // Ctrl-C: the line is dropped (not run, not repeated), as in gdb; a new prompt follows.
          std::free(raw);
          continue;
        }
        if (!raw) {
          if (!json) std::printf("\n");
          break;
        }
        std::string line(raw);
        std::free(raw);
        if (trim(line).empty()) {
          if (last.empty() || !repeatable(last)) continue;
          line = last;
          // As in gdb, `x ADDR` and `list LOC` repeated go on after what they showed.
          if (auto cl = parse_command_line(line); cl && (cl->name == "x" || cl->name == "list")) last = line = cl->name;
        } else {
          add_history(line.c_str());
          last = line;
        }
        if (!dbg.execute(line)) break;
      }
    } else {
      std::string line;
      while (std::getline(std::cin, line))
        if (!dbg.execute(line)) break;
    }
  }
}

Result<std::vector<std::string>> read_scripts(const std::vector<std::string>& paths) {
  std::vector<std::string> lines;
  for (const std::string& path : paths) {
    auto bytes = read_input_file(path, kMaxTextInputBytes);
    if (!bytes) return make_error("-x " + bytes.error().message);
    std::string text(bytes->begin(), bytes->end()), line;
    std::istringstream in(text);
    while (std::getline(in, line)) lines.push_back(line);
  }
  return lines;
}

int debug_command(const DebugArgs& a) {
  std::unique_ptr<Sink> sink = make_sink(a);

  // Scripts are read first: a missing one is a usage error before anything runs.
  auto scripts = read_scripts(a.scripts);
  if (!scripts) return fail(*sink, kExitUsage, scripts.error().message);
  const std::vector<std::string>& script_lines = *scripts;

  auto image = load_kernel_image(a.run.kernel);
  if (!image) return fail(*sink, kExitBadInput, image.error().message);

  // An ELF's own symbols; for a .vxbin, --symbols or the ELF beside it (cli/kernel_symbols.hpp).
  std::optional<engine::Symbols> symbols;
  std::optional<engine::Variables> variables;  // the kernel's C variables (DWARF), for print
  {
    auto found = find_kernel_symbols(*image, a.run.symbols);
    if (!found) return fail(*sink, kExitBadInput, found.error().message);
    const std::string& note = found->note;
    if (!note.empty()) {
      if (sink->json() && found->warning) {
        sink->error("", note.substr(std::string("warning: ").size()));
      } else if (sink->json()) {
        sink->output("", note, {{"symbols", found->path}});
      } else {
        std::fprintf(stderr, "vxreplay: %s\n", note.c_str());
      }
    }
    adopt_tls(*image, *found);
    if (found->symbols) symbols.emplace(std::move(*found->symbols));
    if (symbols && !found->path.empty())
      if (auto v = engine::Variables::load(found->path)) variables.emplace(std::move(v).value());
  }

  std::optional<LaunchFile> lf;
  if (!a.run.launch_file.empty()) {
    auto loaded = load_launch_file(a.run.launch_file);
    if (!loaded) return fail(*sink, kExitBadInput, loaded.error().message);
    lf.emplace(std::move(loaded).value());
  }

  auto opened = open_model_device(a.run.config, a.run.options);
  if (!opened) return fail(*sink, kExitBadInput, opened.error().message);
  Driver& dev = **opened;

  LaunchOverrides ov;
  ov.grid = a.run.grid;
  ov.block = a.run.block;
  ov.lmem = a.run.lmem;
  if (!a.run.entry.empty()) {
    auto e = resolve_entry(*image, symbols ? &*symbols : nullptr, a.run.entry, "--entry");
    if (!e) return fail(*sink, kExitBadInput, e.error().message);
    ov.entry = *e;
  }
  if (lf) {
    if (auto r = apply_launch_file(*lf, *image, symbols ? &*symbols : nullptr, ov); !r)
      return fail(*sink, kExitBadInput, r.error().message);
  }
  auto launch = resolve_grid_launch(*image, a.run.config, ov);
  if (!launch) return fail(*sink, kExitBadInput, launch.error().message);

  std::string store_dir;
  if (!a.no_db) {
    auto dir = pick_store_dir(a.db.empty() ? ".vxreplay" : a.db, a.run.kernel);
    if (!dir) return fail(*sink, kExitUsage, "--db: " + dir.error().message);
    store_dir = *dir;
  }
  engine::SessionOptions so =
      session_options(a, store_dir,
                      a.run.kernel + " grid " + dims(launch->grid) + " block " + dims(launch->block) + " on " +
                          a.run.config.to_string() + " seed " + std::to_string(a.run.options.seed) +
                          (a.run.options.schedule == Schedule::Random
                               ? ""
                               : std::string(" schedule ") + schedule_name(a.run.options.schedule)) +
                          (lf ? " launch " + a.run.launch_file : ""),
                      image->hash);
  if (so.mode == engine::SessionMode::Live && !engine::probe_debug_module(dev)) {
    if (!store_dir.empty()) std::filesystem::remove_all(store_dir);
    return fail(*sink, kExitUnavailable, engine::kNoDebugModule);
  }
  auto session = engine::Session::create(dev, so);
  if (!session)
    return fail(*sink, exit_status_of(session.error(), kExitUsage),
                "--db " + store_dir + ": " + session.error().message);

  // The recording keeps the image for its symbols: `vxreplay replay` needs no kernel file.
  if (image->is_elf && !store_dir.empty()) {
    auto bytes = read_input_file(a.run.kernel, kMaxKernelImageBytes);
    if (!bytes) return fail(*sink, kExitBadInput, bytes.error().message);
    if (auto r = (*session)->record_symbols(std::filesystem::path(a.run.kernel).filename().string(), *bytes); !r)
      return fail(*sink, exit_status_of(r.error(), kExitUsage), "--db " + store_dir + ": " + r.error().message);
  }
  HostRuntime rt((*session)->host());
  if (auto r = rt.load_image(*image); !r) return fail(*sink, kExitBadInput, r.error().message);
  // The buffers and the argument block go through the session's host driver before the launch,
  // so the engine records them with the workload.
  PlacedLaunch placed;
  if (lf) {
    auto p = place_launch(rt, *lf);
    if (!p) return fail(*sink, kExitBadInput, p.error().message);
    placed = std::move(p).value();
    if (placed.arg_ptr) launch->arg_ptr = *placed.arg_ptr;
  }
  if (auto r = rt.launch_grid(*launch); !r) return fail(*sink, kExitBadInput, r.error().message);
  // A kernel alone (or a launch file) is the whole workload: the recording replays to its end.
  if (auto r = (*session)->host_finished(); !r)
    return fail(*sink, exit_status_of(r.error(), kExitUsage), "--db " + store_dir + ": " + r.error().message);

  // A launch file's dumps and comparisons when the session ends after the kernel exited: a
  // difference makes the status 1 (docs/cli.md).
  auto launch_checks = [&](std::optional<int>& status) {
    if (!lf || !has_checks(*lf)) return;
    auto report = [&](const std::string& m) {
      if (sink->json()) {
        sink->error("", m);
      } else {
        std::fflush(stdout);
        std::fprintf(stderr, "vxreplay: %s\n", m.c_str());
      }
    };
    engine::Session& s = **session;
    const engine::StopEvent& last = s.last_stop();
    if (last.reason != engine::StopReason::Exited || last.launch == 0) {
      report(lf->name + ": no dumps or comparisons: the kernel did not complete");
    } else {
      auto read = [&](uint32_t addr, uint32_t size) { return s.read_memory(addr, size); };
      LaunchCheck c = finish_launch(*lf, placed, read, report);
      if (c == LaunchCheck::Failed && last.exit_code == 0) status = kExitBadInput;
      if (c == LaunchCheck::Mismatch && last.exit_code == 0) status = 1;
    }
  };
  if (!a.gdb.empty()) {
    auto ep = parse_gdb_endpoint(a.gdb);
    if (!ep) return fail(*sink, kExitUsage, ep.error().message);
    ep->allow_remote = a.gdb_remote;
    ep->allow_files = a.gdb_allow_files;
    std::optional<int> status =
        serve_gdb(**session, symbols ? &*symbols : nullptr, *launch, *ep, a.run.kernel, store_dir,
                  GdbStart{false, launch->entry_pc}, variables ? &*variables : nullptr);
    const int served = *status;
    status.reset();
    launch_checks(status);
    return served == 0 && status ? *status : served;
  }
  Debugger dbg(**session, symbols ? &*symbols : nullptr, *launch, *sink);
  if (variables) dbg.set_variables(&*variables);
  dbg.set_stop_on_store_error(a.stop_on_store_error);
  StartView sv;
  sv.kernel = a.run.kernel;
  sv.config = a.run.config.to_string();
  sv.store = store_dir;
  sv.grid = launch->grid;
  sv.block = launch->block;
  sv.lmem = launch->lmem_bytes;
  sv.seed = a.run.options.seed;
  sv.symbols = symbols.has_value();
  const engine::SessionInfo si = (*session)->info();
  sv.mode = si.live ? "live" : "relaunch";
  sv.mode_why = si.why;
  sv.requested = engine::session_mode_name(si.requested);
  sv.debug_module = si.has_dm;
  sv.held = si.held;
  sink->start(sv);

  for (const std::string& loc : a.breaks) {
    if (!dbg.add_breakpoint(loc)) {
      return dbg.finish_session(store_dir, kExitUsage);
    }
  }

  if (a.open_at) {
    const DebugArgs::OpenAt& o = *a.open_at;
    if (!dbg.open_at(engine::TimePoint{o.launch, o.instret}, engine::WarpId{o.core, o.slot}, o.lane, o.title))
      return dbg.finish_session(store_dir, kExitInternal);
  }
  // Attach (a running kernel halted after N instructions) or halt after reset: the session starts
  // at that stop and shows where every warp is.
  if (si.live && (a.attach_after || a.reset_halt)) {
    dbg.resume();
    dbg.show_warps();
  }
  run_commands(dbg, script_lines, a.commands, a.batch, a.json);
  std::optional<int> status;
  launch_checks(status);
  return dbg.finish_session(store_dir, status);
}

}  // namespace vx::cli
