#include "cli/replay_command.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "checkpoint/store.hpp"
#include "cli/debug_command.hpp"
#include "cli/debugger.hpp"
#include "cli/gdb_server.hpp"
#include "cli/session_options.hpp"
#include "cli/temp_file.hpp"
#include "debug/images.hpp"
#include "device/host_runtime.hpp"
#include "device/image.hpp"
#include "engine/session.hpp"
#include "engine/symbols.hpp"
#include "engine/variables.hpp"
#include "replay/recording.hpp"

namespace vx::cli {

namespace fs = std::filesystem;

namespace {

uint64_t dir_bytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) total += e.file_size(ec);
  return total;
}

std::string when_text(const fs::path& file) {
  std::error_code ec;
  auto t = fs::last_write_time(file, ec);
  if (ec) return "?";
  auto sys = std::chrono::time_point_cast<std::chrono::system_clock::duration>(t - fs::file_time_type::clock::now() +
                                                                               std::chrono::system_clock::now());
  std::time_t tt = std::chrono::system_clock::to_time_t(sys);
  char buf[32];
  std::tm tm{};
  localtime_r(&tt, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

}  // namespace

std::optional<std::string> latest_recording(const std::string& root, std::string* error) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    *error = "no recordings: " + root + " is not a directory";
    return std::nullopt;
  }
  std::optional<fs::path> best;
  fs::file_time_type best_time{};
  for (const auto& e : fs::directory_iterator(root, ec)) {
    fs::path data = e.path() / "data.mdb";
    if (!fs::is_regular_file(data, ec)) continue;
    auto t = fs::last_write_time(data, ec);
    if (ec) continue;
    if (!best || t > best_time) {
      best = e.path();
      best_time = t;
    }
  }
  if (!best) {
    *error = "no recordings in " + root + " (a debugging session records into it; see vxreplay ls)";
    return std::nullopt;
  }
  return best->string();
}

Result<std::unique_ptr<OpenedRecording>> open_recording(const std::string& dir, const std::string& mode,
                                                        bool no_debug_module, Sink* sink, bool read_only) {
  auto o = std::make_unique<OpenedRecording>();
  // The header, checked: the device, the schedule and the kernel image the recording needs.
  auto info = replay::inspect_recording(dir);
  if (!info) return make_error(ErrorCode::Input, info.error().message);
  o->info = std::move(info).value();
  const checkpoint::StoreHeader& header = o->info.header;
  const DeviceConfig& cfg = o->info.config;
  RunOptions ro = o->info.options;
  ro.debug_module = !no_debug_module;
  auto opened = open_model_device(cfg, ro);
  if (!opened) return make_error(ErrorCode::Input, "the recording's device: " + opened.error().message);
  o->device = std::move(opened).value();
  Driver& dev = *o->device;

  engine::SessionOptions so = replay_session_options(header, dir, mode);
  so.read_only = read_only;
  if (so.mode == engine::SessionMode::Live && !engine::probe_debug_module(dev))
    return make_error(ErrorCode::NotSupported, engine::kNoDebugModule);
  auto session = engine::Session::create(dev, so);
  if (!session) {
    // A recording we may not write to still replays: its checkpoints are enough.
    so.read_only = true;
    session = engine::Session::create(dev, so);
  }
  if (!session) return make_error(ErrorCode::Input, "cannot open the recording: " + session.error().message);
  o->session = std::move(session).value();
  engine::Session& s = *o->session;
  if (auto r = s.load_recording(); !r)
    return make_error(ErrorCode::Input, "the recording " + dir + ": " + r.error().message);

  // Symbols: the image the recording kept, checked against the hash in its header.
  // The C variables' reader (libdw) and gdb read the image from a file: a temporary copy, removed at
  // the end. Where none can be written (a full disk), the session goes on without C variables.
  GridLaunch& launch = o->launch;
  o->kernel_name = header.workload;
  if (o->info.image) {
    auto sy = engine::Symbols::load_bytes(o->info.image_bytes, *o->info.image_name);
    if (sy) o->symbols.emplace(std::move(sy).value());
    if (auto path = o->tmp.write(o->info.image_bytes, *o->info.image_name)) {
      o->image_file = *path;
      if (auto v = engine::Variables::load(o->image_file)) o->variables.emplace(std::move(v).value());
    }
    auto g = resolve_grid_launch(*o->info.image, cfg, LaunchOverrides{});
    if (g) launch = *g;
    o->kernel_name = *o->info.image_name;
  }
  // The launch's shape as the first checkpoint holds it (a launch file may have changed it).
  if (auto keys = s.checkpoint_keys(); keys && !keys->empty()) {
    if (auto rec = s.store()->get(keys->front())) {
      launch.grid = rec->launch.grid;
      launch.block = rec->launch.block;
      launch.lmem_bytes = rec->launch.lmem_bytes;
      if (rec->launch.entry_pc) launch.entry_pc = rec->launch.entry_pc;
    }
  }
  // The GDB server builds its own front end on the session: no Debugger then.
  if (!sink) return o;
  o->dbg = std::make_unique<Debugger>(s, o->symbols ? &*o->symbols : nullptr, launch, *sink);
  if (o->variables) o->dbg->set_variables(&*o->variables);
  // A host program's recording with several images: each launch is read with its own image's
  // symbols and C variables, as in the session that recorded it (docs/host.md).
  if (o->info.images.size() > 1) {
    for (const auto& kept : o->info.images) {
      std::optional<engine::Symbols> sy;
      std::optional<engine::Variables> vars;
      if (auto loaded = engine::Symbols::load_bytes(kept.bytes, kept.name)) sy.emplace(std::move(loaded).value());
      if (auto path = o->image_files.emplace_back().write(kept.bytes, kept.name))
        if (auto v = engine::Variables::load(*path)) vars.emplace(std::move(v).value());
      o->images.add(kept.name, std::move(sy), std::move(vars));
    }
    const auto args = s.launch_args();
    const auto kept_before = s.launch_images_recorded();
    for (size_t l = 0; l < args.size() && l < kept_before.size(); ++l)
      if (auto i = replay::image_of_launch(o->info, kept_before[l], args[l].entry_pc))
        o->images.set_launch(uint32_t(l + 1), *i);
    o->dbg->set_images(&o->images);
  }
  return o;
}

int replay_command(const ReplayArgs& a) {
  std::unique_ptr<Sink> sink = make_sink(a.json, a.quiet);
  auto scripts = read_scripts(a.scripts);
  if (!scripts) return fail(*sink, kExitUsage, scripts.error().message);

  std::string dir = a.dir;
  if (dir.empty()) {
    std::string error;
    auto latest = latest_recording(a.root, &error);
    if (!latest) return fail(*sink, kExitBadInput, error);
    dir = *latest;
  }
  auto opened = open_recording(dir, a.mode, a.no_debug_module, a.gdb.empty() ? sink.get() : nullptr);
  if (!opened)
    return fail(*sink, opened.error().code == ErrorCode::NotSupported ? kExitUnavailable : kExitBadInput,
                opened.error().message);
  OpenedRecording& o = **opened;
  const checkpoint::StoreHeader& header = o.info.header;
  const DeviceConfig& cfg = o.info.config;
  engine::Session& s = *o.session;
  const GridLaunch& launch = o.launch;
  const std::string& kernel_name = o.kernel_name;
  auto* info = &o.info;
  auto& symbols = o.symbols;

  if (!a.gdb.empty()) {
    auto ep = parse_gdb_endpoint(a.gdb);
    if (!ep) return fail(*sink, kExitUsage, ep.error().message);
    ep->allow_remote = a.gdb_remote;
    ep->allow_files = a.gdb_allow_files;
    // gdb reads the symbols from a file: the recorded image's temporary copy.
    if (info->image && o.image_file.empty())
      return fail(*sink, kExitInternal, "cannot write the recorded kernel image to a temporary file for gdb");
    return serve_gdb(s, symbols ? &*symbols : nullptr, launch, *ep,
                     o.image_file.empty() ? std::string("KERNEL.elf") : o.image_file, dir,
                     GdbStart{true, launch.entry_pc}, o.variables ? &*o.variables : nullptr);
  }
  Debugger& dbg = *o.dbg;
  StartView sv;
  sv.kernel = kernel_name;
  sv.config = cfg.to_string();
  sv.store = dir;
  sv.grid = launch.grid;
  sv.block = launch.block;
  sv.lmem = launch.lmem_bytes;
  sv.seed = header.seed;
  sv.symbols = symbols.has_value();
  sv.replay = true;
  sv.mode = s.info().live ? "live" : "relaunch";
  sv.mode_why = s.info().why;
  sv.requested = engine::session_mode_name(s.info().requested);
  sv.debug_module = s.info().has_dm;
  sv.held = s.info().held;
  sink->start(sv);

  // A machine failure lost the commits after the recording's last sync (group commit, docs/store.md).
  if (const auto rolled = s.store() ? s.store()->rolled_back() : std::nullopt) {
    if (sink->json())
      sink->error("", *rolled);
    else
      std::fprintf(stderr, "vxreplay: %s\n", rolled->c_str());
  }
  // Open at the first stop of the recording (or checkpoint N; with no stop, the start of its first launch).
  // The kernel's code is in device memory only from there on, so the breakpoints come after.
  auto marks = s.marks();
  if (!marks) return fail(*sink, kExitBadInput, "the recording " + dir + ": " + marks.error().message);
  if (a.open_at) {
    const ReplayArgs::OpenAt& o = *a.open_at;
    if (!dbg.open_at(engine::TimePoint{o.launch, o.instret}, engine::WarpId{o.core, o.slot}, o.lane, o.title))
      return dbg.finish_session(dir, kExitInternal);
  } else if (a.at) {
    if (!dbg.goto_mark(*a.at)) return dbg.finish_session(dir, kExitUsage);
  } else if (info->writer_killed && !marks->empty()) {
    // The recording's process did not end cleanly: where it was when it died is where to look.
    if (sink->json())
      sink->error("", "the recording's session did not end cleanly (killed?): opening at its last committed stop");
    else
      std::fprintf(
          stderr,
          "vxreplay: the recording's session did not end cleanly (killed?): opening at its last committed stop\n");
    dbg.goto_mark(uint32_t(marks->size()));
  } else if (!marks->empty()) {
    dbg.goto_mark(1);
  } else if (auto keys = s.checkpoint_keys(); keys && !keys->empty()) {
    dbg.goto_start();
  }
  for (const std::string& loc : a.breaks) {
    if (!dbg.add_breakpoint(loc)) return dbg.finish_session(dir, kExitUsage);
  }
  run_commands(dbg, *scripts, a.commands, a.batch, a.json);
  return dbg.finish_session(dir);
}

int ls_command(const std::string& root, bool json) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    std::fprintf(stderr, "vxreplay: %s is not a directory (recordings are made under .vxreplay by default)\n",
                 root.c_str());
    return kExitBadInput;
  }
  std::vector<fs::path> dirs;
  // Directories that hold no recording, with the reason (listed, not skipped silently).
  std::vector<std::pair<fs::path, std::string>> skipped;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    std::error_code e1;
    if (!fs::is_directory(e.path(), e1)) continue;  // only directories can be recordings
    const fs::path data = e.path() / "data.mdb";
    const fs::file_status link = fs::symlink_status(data, e1);
    const fs::file_status target = fs::status(data, e1);
    std::string why;
    if (!fs::exists(link))
      why = "no data.mdb in it";
    else if (fs::is_symlink(link) && !fs::exists(target))
      why = "data.mdb is a dangling symbolic link";
    else if (fs::is_directory(target))
      why = "data.mdb is a directory";
    else if (!fs::is_regular_file(target))
      why = std::string("data.mdb is not a regular file (") +
            (fs::is_fifo(target)                                          ? "a FIFO"
             : fs::is_character_file(target) || fs::is_block_file(target) ? "a device"
             : fs::is_socket(target)                                      ? "a socket"
                                                                          : "not a file") +
            (fs::is_symlink(link) ? ", through a symbolic link)" : ")");
    if (why.empty())
      dirs.push_back(e.path());
    else
      skipped.emplace_back(e.path(), why);
  }
  std::sort(skipped.begin(), skipped.end());
  std::sort(dirs.begin(), dirs.end(), [](const fs::path& x, const fs::path& y) {
    std::error_code e1, e2;
    return fs::last_write_time(x / "data.mdb", e1) < fs::last_write_time(y / "data.mdb", e2);
  });
  nlohmann::json list = nlohmann::json::array();
  if (!json)
    std::printf("%-28s %-19s %6s %12s %10s  %s\n", "RECORDING", "DATE", "STOPS", "CHECKPOINTS", "SIZE", "WORKLOAD");
  for (const fs::path& d : dirs) {
    auto st = checkpoint::Store::open_existing(d.string(), checkpoint::OpenMode::ReadOnly);
    const std::string date = when_text(d / "data.mdb");
    const uint64_t bytes = dir_bytes(d);
    if (!st) {
      if (json)
        list.push_back({{"recording", d.string()}, {"date", date}, {"size", bytes}, {"error", st.error().message}});
      else
        std::printf("%-28s %-19s %6s %12s %10llu  (unreadable: %s)\n", d.string().c_str(), date.c_str(), "-", "-",
                    static_cast<unsigned long long>(bytes), st.error().message.c_str());
      continue;
    }
    auto marks = st->marks();
    const uint64_t stops = marks ? marks->size() : 0;
    const uint64_t checkpoints = st->stats().records;
    if (json) {
      list.push_back({{"recording", d.string()},
                      {"date", date},
                      {"stops", stops},
                      {"checkpoints", checkpoints},
                      {"size", bytes},
                      {"workload", st->header().workload},
                      {"config", st->header().config.to_string()},
                      {"seed", st->header().seed}});
    } else {
      std::printf("%-28s %-19s %6llu %12llu %10llu  %s\n", d.string().c_str(), date.c_str(),
                  static_cast<unsigned long long>(stops), static_cast<unsigned long long>(checkpoints),
                  static_cast<unsigned long long>(bytes), st->header().workload.c_str());
    }
  }
  nlohmann::json skipped_list = nlohmann::json::array();
  for (const auto& [d, why] : skipped) {
    if (json)
      skipped_list.push_back({{"directory", d.string()}, {"reason", why}});
    else
      std::printf("%-28s (skipped: %s)\n", d.string().c_str(), why.c_str());
  }
  if (json)
    std::printf("%s\n", nlohmann::json({{"recordings", list}, {"skipped", skipped_list}}).dump().c_str());
  else if (dirs.empty())
    std::printf("(no recordings in %s)\n", root.c_str());
  return kExitOk;
}

}  // namespace vx::cli
