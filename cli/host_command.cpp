#include "cli/host_command.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <optional>

#include "cli/debugger.hpp"
#include "cli/kernel_symbols.hpp"
#include "cli/session_options.hpp"
#include "cli/temp_file.hpp"
#include "debug/images.hpp"
#include "device/image.hpp"
#include "device/input_file.hpp"
#include "engine/session.hpp"
#include "engine/symbols.hpp"
#include "engine/variables.hpp"
#include "host/channel.hpp"
#include "host/server.hpp"

namespace vx::cli {

namespace {

struct Child {
  pid_t pid = -1;
  int fd = -1;                             // our end of the channel
  std::optional<host::SharedRings> rings;  // its shared rings, unless they could not be made
};

// Starts the program with the other end of the channel in kChannelEnv. A program that cannot be
// started gives 127 (not found) or 126 (cannot execute) and the reason.
// In a session (`session`) the program's stdin is /dev/null (the session reads commands there) and
// it runs in a process group of its own, so a Ctrl-C at the prompt interrupts the kernel, not the
// program.
Result<Child> spawn(const std::vector<std::string>& command, bool session, int* status) {
  *status = kExitHostFailed;
  int sv[2], err[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return make_error(std::string("cannot create the host channel: ") + std::strerror(errno));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    return make_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  // Without the rings (no memfd here) the socket carries every message, slower but the same.
  auto made = host::SharedRings::create();
  std::optional<host::SharedRings> rings;
  if (made) rings.emplace(std::move(made).value());
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string fd_text = std::to_string(sv[1]);
  const std::string rings_text = rings ? std::to_string(rings->memfd()) : "";
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid < 0) return make_error(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGXFSZ, &dfl, nullptr);  // vxreplay ignores it (main.cpp); the program gets the default
    ::fcntl(sv[1], F_SETFD, 0);           // the host keeps its end across exec
    ::setenv(host::kChannelEnv, fd_text.c_str(), 1);
    if (rings) {
      ::fcntl(rings->memfd(), F_SETFD, 0);
      ::setenv(host::kRingsEnv, rings_text.c_str(), 1);
    } else {
      ::unsetenv(host::kRingsEnv);
    }
    if (session) {
      int n = ::open("/dev/null", O_RDONLY);
      if (n >= 0) ::dup2(n, STDIN_FILENO);
      ::setpgid(0, 0);
    }
    ::execvp(argv[0], argv.data());
    int e = errno;
    ssize_t ignored = ::write(err[1], &e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  ::close(sv[1]);
  ::close(err[1]);
  int e = 0;
  ssize_t n;
  do n = ::read(err[0], &e, sizeof e);
  while (n < 0 && errno == EINTR);
  ::close(err[0]);
  if (n == sizeof e) {
    ::waitpid(pid, nullptr, 0);
    ::close(sv[0]);
    const bool missing = e == ENOENT || e == ENOTDIR;
    *status = missing ? kExitHostNotFound : kExitHostCannotRun;
    return make_error(command[0] + (missing ? ": not found" : ": cannot execute: " + std::string(std::strerror(e))));
  }
  if (rings) rings->close_memfd();  // the program has its copy; the mapping stays
  return Child{pid, sv[0], std::move(rings)};
}

std::string describe_status(int wstatus) {
  if (WIFSIGNALED(wstatus)) {
    const int sig = WTERMSIG(wstatus);
    const char* name = ::strsignal(sig);
    return "was killed by signal " + std::to_string(sig) + (name ? " (" + std::string(name) + ")" : "");
  }
  return "exited with status " + std::to_string(WEXITSTATUS(wstatus));
}

int exit_status_of(int wstatus) {
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return WEXITSTATUS(wstatus);
}

std::string join(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

void say(Sink& sink, const std::string& message) {
  if (sink.json()) {
    sink.error("", message);
  } else {
    std::fflush(stdout);
    std::fprintf(stderr, "vxreplay: %s\n", message.c_str());
  }
}

}  // namespace

int host_command(const HostArgs& a) {
  const DebugArgs& d = a.dbg;
  const bool session_mode = !d.mode.empty() || wants_session(d, isatty(STDIN_FILENO) && isatty(STDOUT_FILENO));
  std::unique_ptr<Sink> sink = make_sink(d.json, d.run.quiet);
  if (!d.run.launch_file.empty() || d.run.grid || d.run.block || d.run.lmem)
    return fail(*sink, kExitHostFailed,
                "--launch, --grid, --block and --lmem describe a kernel run; a host program sets its own launches");
  auto scripts = read_scripts(d.scripts);
  if (!scripts) return fail(*sink, kExitHostFailed, scripts.error().message);

  auto opened = open_model_device(d.run.config, d.run.options);
  if (!opened) return fail(*sink, kExitHostFailed, opened.error().message);
  if (session_mode_of(d.mode) == engine::SessionMode::Live && !engine::probe_debug_module(**opened))
    return fail(*sink, kExitUnavailable, engine::kNoDebugModule);  // before the program starts

  int spawn_status = 0;
  auto child = spawn(a.command, session_mode, &spawn_status);
  if (!child) return fail(*sink, spawn_status, child.error().message);
  const pid_t pid = child->pid;
  const int fd = child->fd;
  std::optional<int> host_wstatus;
  auto reap = [&]() {
    if (host_wstatus) return;
    int w = 0;
    while (::waitpid(pid, &w, 0) < 0 && errno == EINTR) {
    }
    host_wstatus = w;
  };
  // vxreplay's own failure after the host started: the host goes too.
  auto abandon = [&](const std::string& message) {
    ::kill(pid, SIGKILL);
    reap();
    ::close(fd);
    return fail(*sink, kExitHostFailed, message);
  };

  std::string store_dir;
  if (session_mode && !d.no_db) {
    auto dir = pick_store_dir(d.db.empty() ? ".vxreplay" : d.db, a.command[0]);
    if (!dir) return abandon("--db: " + dir.error().message);
    store_dir = *dir;
  }
  // The recording names the host command that made it (ls, replay).
  const engine::SessionOptions so = session_options(
      d, store_dir,
      "host " + join(a.command) + " on " + d.run.config.to_string() + " seed " + std::to_string(d.run.options.seed) +
          (d.run.options.schedule == Schedule::Random
               ? ""
               : std::string(" schedule ") + schedule_name(d.run.options.schedule)));
  auto session = engine::Session::create(**opened, so);
  if (!session) return abandon("--db " + store_dir + ": " + session.error().message);
  engine::Session& s = **session;
  host::HostServer server(s.host(), fd, d.run.config.to_string(), child->rings ? &*child->rings : nullptr);

  // Each kernel image the program uploads, with its symbols and C variables (per-launch symbols:
  // a stop reads its launch's image), and each launch's image.
  debug::Images images;
  std::deque<TempFile> symbol_files;
  Debugger* debugger = nullptr;  // set once the session's debugger exists
  size_t images_recorded = 0, launches_mapped = 0;
  auto record_images = [&]() {
    const auto& uploaded = server.device().images();
    for (; images_recorded < uploaded.size(); ++images_recorded) {
      const auto& [name, bytes] = uploaded[images_recorded];
      // The recording keeps the image for its symbols: a .vxbin's matching ELF when one was found.
      std::optional<std::vector<uint8_t>> kept;
      std::optional<engine::Symbols> symbols;
      std::optional<engine::Variables> variables;
      auto image = parse_kernel_image(bytes, name);
      if (session_mode && image && !image->is_elf) {
        // A .vxbin carries no symbols: --symbols FILE, else an ELF of the same name beside the
        // file the program uploaded, each when its loadable bytes are the image's (as for a kernel
        // run directly); one line says which.
        auto found = find_kernel_symbols(*image, d.run.symbols);
        if (!found) {
          say(*sink, "warning: " + found.error().message + "; debugging " + name + " by address");
        } else {
          if (!found->note.empty()) say(*sink, found->note);
          if (found->symbols) {
            symbols = std::move(found->symbols);
            if (auto v = engine::Variables::load(found->path)) variables.emplace(std::move(v).value());
            if (auto elf = read_input_file(found->path, kMaxKernelImageBytes)) kept = std::move(elf).value();
          }
        }
      } else if (session_mode && image && image->is_elf) {
        auto path = symbol_files.emplace_back().write(bytes, name);
        auto loaded = path ? engine::Symbols::load(*path) : Result<engine::Symbols>(path.error());
        if (loaded) {
          symbols.emplace(std::move(loaded).value());
          if (auto v = engine::Variables::load(*path)) variables.emplace(std::move(v).value());
        } else {
          say(*sink, "warning: no symbols for " + name + ": " + loaded.error().message);
        }
      }
      images.add(name, std::move(symbols), std::move(variables));
      if (!store_dir.empty())
        if (auto r = s.record_symbols(std::filesystem::path(name).filename().string(), kept ? *kept : bytes); !r)
          say(*sink, "the recording could not keep the symbols of " + name + ": " + r.error().message);
    }
    const auto& launches = server.device().launches();
    for (; launches_mapped < launches.size(); ++launches_mapped)
      images.set_launch(uint32_t(launches_mapped + 1), launches[launches_mapped].image_index);
    // Breakpoints pending on an image resolve as it arrives, before its launch runs.
    if (debugger) debugger->images_changed();
  };
  // The host is gone (it closed the channel): its status, and the end of the workload when it
  // ended on its own.
  auto host_ended = [&]() -> Result<bool> {
    reap();
    if (WIFSIGNALED(*host_wstatus)) return make_error("the host program " + describe_status(*host_wstatus));
    if (auto r = s.host_finished(uint32_t(WEXITSTATUS(*host_wstatus))); !r) return r.error();
    return false;
  };

  // A held vx_ready_wait times out after its timeout in device time (Session::device_ns: the
  // time the session runs the work, not the time it is stopped at the prompt), as on a device.
  uint64_t wait_began_ns = 0;
  s.set_host_tick([&]() {
    if (!server.waiting()) return;
    if ((s.device_ns() - wait_began_ns) / 1000000 < server.wait_timeout_ms()) return;
    const std::string why = "timed out after " + std::to_string(server.wait_timeout_ms()) +
                            " ms of device time (the kernel is still running)";
    (void)server.expire_wait(why);  // a host that is gone shows at the next read
    if (session_mode) say(*sink, "the host program's vx_ready_wait " + why);
  });

  // Serve the host until it starts its first launch: its kernel's symbols are known then.
  auto first = server.pump();
  wait_began_ns = s.device_ns();
  record_images();
  if (!first || *first == host::HostServer::Pump::Ended) {
    if (!first) say(*sink, "the host channel broke: " + first.error().message);
    reap();
    ::close(fd);
    if (first) (void)s.host_finished(uint32_t(exit_status_of(*host_wstatus)));
    if (WIFSIGNALED(*host_wstatus) || session_mode)
      say(*sink, "the host program " + describe_status(*host_wstatus) + " without starting a kernel");
    return exit_status_of(*host_wstatus);
  }

  s.set_host_source([&]() -> Result<bool> {
    if (server.waiting()) {
      // Everything the host queued has run: its vx_ready_wait returns. In a session the
      // debugger shows the kernel's console; run plainly, the host prints it in its own order.
      std::vector<ConsoleChunk> console;
      if (!session_mode) console = s.take_console();
      (void)server.answer_wait("", console);  // a host that is gone shows at the next read
    }
    auto p = server.pump();
    wait_began_ns = s.device_ns();
    record_images();
    if (p && *p == host::HostServer::Pump::Waiting) return true;
    return host_ended();
  });

  const std::string first_name = images.size() ? images.at(0).name : std::string();
  const engine::Symbols* symbols = images.size() && images.at(0).symbols ? &*images.at(0).symbols : nullptr;
  GridLaunch first_launch = server.device().launches().empty() ? GridLaunch{} : server.device().launches()[0].launch;

  if (!session_mode) {
    // Run plainly: every launch to its end; a device stop ends the workload and the host's
    // vx_ready_wait fails.
    std::string stopped;
    for (;;) {
      auto ev = s.resume();
      if (!ev) {
        stopped = ev.error().message;
        break;
      }
      if (ev->reason == engine::StopReason::Exited) break;
      if (ev->reason == engine::StopReason::Killed) {
        stopped = ev->message;
        break;
      }
      if (ev->reason == engine::StopReason::Exception || ev->reason == engine::StopReason::Assertion ||
          ev->reason == engine::StopReason::Watchdog) {
        const bool assertion = ev->reason == engine::StopReason::Assertion;
        stopped = "launch " + std::to_string(ev->launch) + " stopped: " +
                  (assertion ? "assertion failed at pc " + hex32(ev->exception.pc) : ev->exception.to_string());
        for (const ConsoleChunk& c : s.take_console()) std::fwrite(c.bytes.data(), 1, c.bytes.size(), stdout);
        say(*sink, stopped);
        break;
      }
    }
    if (!host_wstatus) {
      if (stopped.empty()) stopped = "the device cannot run more work";
      if (auto r = server.drain(stopped); !r) say(*sink, "the host channel broke: " + r.error().message);
      reap();
    } else if (WIFSIGNALED(*host_wstatus)) {
      say(*sink, "the host program " + describe_status(*host_wstatus));
    }
    ::close(fd);
    return exit_status_of(*host_wstatus);
  }

  Debugger dbg(s, symbols, first_launch, *sink);
  dbg.set_images(&images);
  dbg.select_launch(1);
  debugger = &dbg;
  dbg.set_stop_on_store_error(d.stop_on_store_error);
  dbg.set_host_workload(true);
  StartView sv;
  sv.kernel = first_name;
  sv.host = join(a.command);
  sv.config = d.run.config.to_string();
  sv.store = store_dir;
  sv.grid = first_launch.grid;
  sv.block = first_launch.block;
  sv.lmem = first_launch.lmem_bytes;
  sv.seed = d.run.options.seed;
  sv.symbols = symbols != nullptr;
  const engine::SessionInfo si = s.info();
  sv.mode = si.live ? "live" : "relaunch";
  sv.mode_why = si.why;
  sv.requested = engine::session_mode_name(si.requested);
  sv.debug_module = si.has_dm;
  sv.held = si.held;
  sink->start(sv);
  for (const std::string& loc : d.breaks) {
    if (!dbg.add_breakpoint(loc)) {
      ::kill(pid, SIGKILL);
      reap();
      ::close(fd);
      return dbg.finish_session(store_dir, kExitHostFailed);
    }
  }
  // Attach (a launch halted after N instructions) or halt after reset, as for a kernel run
  // directly: the session starts at that stop.
  if (si.live && (d.attach_after || d.reset_halt)) {
    dbg.resume();
    dbg.show_warps();
  }
  run_commands(dbg, *scripts, d.commands, d.batch, d.json);

  // The session is over. A host still running either hears that its kernel stopped on a device
  // exception (and ends as it will) or is killed, as gdb kills its inferior on quit.
  std::optional<int> override_status;
  if (!host_wstatus) {
    // The program may have died while its kernel was stopped (nothing ran since to notice).
    int w = 0;
    if (::waitpid(pid, &w, WNOHANG) == pid) host_wstatus = w;
  }
  if (!host_wstatus) {
    const engine::StopEvent& last = s.last_stop();
    const bool device_stop = last.reason == engine::StopReason::Exception ||
                             last.reason == engine::StopReason::Assertion ||
                             last.reason == engine::StopReason::Watchdog;
    if (device_stop) {
      if (auto r = server.drain("the kernel stopped: " + last.exception.to_string()); !r)
        say(*sink, "the host channel broke: " + r.error().message);
      reap();
      override_status = exit_status_of(*host_wstatus);
    } else {
      ::kill(pid, SIGKILL);
      reap();
      say(*sink, "the session ended before the host program: it was killed");
    }
  } else {
    if (WIFSIGNALED(*host_wstatus)) say(*sink, "the host program " + describe_status(*host_wstatus));
    override_status = exit_status_of(*host_wstatus);
  }
  ::close(fd);
  return dbg.finish_session(store_dir, override_status);  // the session's end commits and syncs (Session::end)
}

}  // namespace vx::cli
