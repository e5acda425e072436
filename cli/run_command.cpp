#include "cli/run_command.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/console.hpp"
#include "cli/diff_command.hpp"
#include "cli/kernel_symbols.hpp"
#include "cli/launch_file.hpp"
#include "cli/nondet_page.hpp"
#include "device/host_runtime.hpp"
#include "device/isa.hpp"
#include "engine/session.hpp"

namespace vx::cli {

using nlohmann::json;

int exit_status_of(const Error& e, int fallback) {
  switch (e.code) {
    case ErrorCode::Usage: return kExitUsage;
    case ErrorCode::Input:
    case ErrorCode::StoreCorrupt: return kExitBadInput;
    case ErrorCode::Device: return kExitDeviceStop;
    case ErrorCode::Internal: return kExitInternal;
    case ErrorCode::StoreFull:
    case ErrorCode::StoreIo: return kExitCantWrite;
    case ErrorCode::Unspecified:
    case ErrorCode::NotSupported:
    case ErrorCode::Unmapped:
    case ErrorCode::NoHaltedWarp: break;
  }
  return fallback;
}

namespace {

constexpr uint64_t kSlice = 1u << 20;  // instructions between console drains on the host side

void print_exception(Driver& d, const DeviceException& e) {
  uint32_t words[2] = {0, 0};
  bool have_code = d.copy_from_device(e.pc, {reinterpret_cast<uint8_t*>(words), 8}).ok();
  if (e.cause == Cause::Breakpoint && have_code && words[1] == kAssertMarker) {
    std::fprintf(stderr, "vxreplay: assertion failed at pc 0x%08x (core %u, warp %u, lane %u); see the console above\n",
                 e.pc, e.core, e.warp, e.lane);
    return;
  }
  std::fprintf(stderr, "vxreplay: device exception: %s\n", e.to_string().c_str());
  if (have_code) std::fprintf(stderr, "  0x%08x: %s\n", e.pc, disassemble(words[0], e.pc).c_str());
}

// A workload on a fresh device, launched and ready to run.
struct PreparedRun {
  std::unique_ptr<Driver> dev;
  KernelImage image;
  std::optional<LaunchFile> lf;
  PlacedLaunch placed;
  std::optional<KernelSymbols> syms;  // read by symbols() when something needs them
  bool notes = true;                  // say on stderr where the symbols come from

  // Symbols are read when something needs them (an entry by name, the divergence report, races).
  Result<const engine::Symbols*> symbols(const std::string& symbols_file) {
    if (!syms) {
      auto found = find_kernel_symbols(image, symbols_file);
      if (!found) return found.error();
      syms.emplace(std::move(found).value());
      if (notes && !syms->note.empty()) std::fprintf(stderr, "vxreplay: %s\n", syms->note.c_str());
    }
    return syms->symbols ? &*syms->symbols : nullptr;
  }
};

// notes: whether to say where the symbols come from (a single run does; the runs of a diff or a
// sweep do not repeat it).
Result<PreparedRun> prepare_run(const RunArgs& args, DeviceObserver* observer, bool notes) {
  PreparedRun p;
  p.notes = notes;
  auto image = load_kernel_image(args.kernel);
  if (!image) return image.error();
  p.image = std::move(image).value();
  if (!args.launch_file.empty()) {
    auto loaded = load_launch_file(args.launch_file);
    if (!loaded) return loaded.error();
    p.lf.emplace(std::move(loaded).value());
  }
  // A .vxbin's symbols are looked for at once (a --symbols file is checked before anything runs):
  // the run says where they come from, and the matching ELF's thread-local storage facts apply to
  // the .vxbin.
  const bool names_entry = !args.entry.empty() || (p.lf && p.lf->entry);
  if (!args.symbols.empty() || names_entry || !p.image.is_elf) {
    if (auto r = p.symbols(args.symbols); !r) return r.error();
    adopt_tls(p.image, *p.syms);
  }
  auto opened = open_model_device(args.config, args.options);
  if (!opened) return opened.error();
  p.dev = std::move(opened).value();
  if (observer) p.dev->set_observer(observer);
  HostRuntime rt(*p.dev);
  LaunchOverrides ov;
  ov.grid = args.grid;
  ov.block = args.block;
  ov.lmem = args.lmem;
  if (!args.entry.empty()) {
    auto e = resolve_entry(p.image, p.symbols(args.symbols).value(), args.entry, "--entry");
    if (!e) return e.error();
    ov.entry = *e;
  }
  if (p.lf)
    if (auto r = apply_launch_file(*p.lf, p.image, names_entry ? p.symbols(args.symbols).value() : nullptr, ov); !r)
      return r.error();
  auto launch = resolve_grid_launch(p.image, args.config, ov);
  if (!launch) return launch.error();
  if (auto r = rt.load_image(p.image); !r) return r.error();
  if (p.lf) {
    auto placed = place_launch(rt, *p.lf);
    if (!placed) return placed.error();
    p.placed = std::move(placed).value();
    if (p.placed.arg_ptr) launch->arg_ptr = *p.placed.arg_ptr;
  }
  if (auto r = rt.launch_grid(*launch); !r) return r.error();
  return p;
}

}  // namespace

DeviceEvent run_to_end(Driver& dev, replay::TimelineSampler* sampler,
                       const std::function<void(const std::vector<ConsoleChunk>&)>& feed) {
  // The run is one launch (launch 1), started by the first wait() on a device that has run nothing:
  // the device's count from here is the launch's, Observation::launch_instret's axis.
  const uint64_t base = dev.stats().instructions;
  auto at = [&] { return dev.stats().instructions - base; };
  std::string printed;  // in drain order, as a recording keeps a launch's console
  DeviceEvent ev;
  do {
    ev = dev.wait(sampler ? std::min(kSlice, sampler->until_sample(1, at())) : kSlice);
    std::vector<ConsoleChunk> chunks = dev.read_console();
    if (sampler)
      for (const ConsoleChunk& c : chunks) printed += c.bytes;
    feed(chunks);
    if (sampler && ev.kind == EventKind::Budget) sampler->sample(dev, 1, at());
  } while (ev.kind == EventKind::Budget);
  if (sampler && ev.kind == EventKind::Completed) sampler->ended(1, at(), std::move(printed));
  if (sampler && ev.kind == EventKind::Exception) sampler->stopped(dev, 1, at(), std::move(printed));
  return ev;
}

WorkloadRun run_workload(const RunArgs& args, DeviceObserver* observer, std::ostream* out, uint64_t timeline_interval) {
  WorkloadRun w;
  auto prepared = prepare_run(args, observer, false);
  if (!prepared) {
    w.status = kExitBadInput;
    w.error = prepared.error().message;
    return w;
  }
  Driver& dev = *prepared->dev;
  ConsoleLines lines;
  replay::TimelineSampler sampler(timeline_interval);
  auto t0 = std::chrono::steady_clock::now();
  const DeviceEvent ev = run_to_end(dev, timeline_interval ? &sampler : nullptr, [&](const auto& chunks) {
    for (const ConsoleChunk& c : chunks) w.console[c.slot] += c.bytes;
    if (out) lines.feed(chunks, *out);
  });
  if (out) lines.flush(*out);
  w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (timeline_interval) w.timeline = sampler.timeline();
  dev.set_observer(nullptr);
  w.end = ev.kind;
  w.exit_code = dev.exit_code();
  w.stats = dev.stats();
  switch (ev.kind) {
    case EventKind::Completed: w.status = w.exit_code == 0 ? kExitOk : int(std::min<uint32_t>(w.exit_code, 63)); break;
    case EventKind::Exception:
      w.exception = ev.exception;
      w.error = "device exception: " + ev.exception.to_string();
      w.status = kExitDeviceStop;
      break;
    case EventKind::CommandError:
      w.error = "the launch failed: " + ev.message;
      w.status = kExitBadInput;
      break;
    default:
      w.error = "internal error: the device went idle before the launch completed";
      w.status = kExitInternal;
      break;
  }
  auto keep = [&](uint32_t addr, uint32_t size) {
    std::vector<uint8_t> bytes(size);
    if (dev.copy_from_device(addr, bytes)) w.memory.emplace_back(addr, std::move(bytes));
  };
  for (const ImageSegment& seg : prepared->image.segments) keep(seg.vaddr, seg.mem_size);
  if (prepared->lf)
    for (size_t i = 0; i < prepared->placed.buffer_addrs.size() && i < prepared->lf->buffers.size(); ++i)
      keep(prepared->placed.buffer_addrs[i], prepared->lf->buffers[i].size);
  return w;
}

int run_command(const RunArgs& args) {
  std::unique_ptr<replay::RaceDetector> races;
  if (args.races) races = std::make_unique<replay::RaceDetector>(args.config);
  auto prepared = prepare_run(args, races.get(), true);
  if (!prepared) {
    std::fprintf(stderr, "vxreplay: %s\n", prepared.error().message.c_str());
    return kExitBadInput;
  }
  Driver& dev = *prepared->dev;
  std::optional<LaunchFile>& lf = prepared->lf;
  PlacedLaunch& placed = prepared->placed;
  auto symbols = [&] { return prepared->symbols(args.symbols); };

  ConsoleLines console;
  // --html draws the races on the warps' timeline, sampled as a recording would.
  replay::TimelineSampler sampler(engine::SessionOptions{}.timeline_interval);
  auto t0 = std::chrono::steady_clock::now();
  const DeviceEvent ev = run_to_end(dev, args.html.empty() ? nullptr : &sampler,
                                    [&](const auto& chunks) { console.feed(chunks, std::cout); });
  console.flush(std::cout);
  std::cout.flush();  // the console comes before whatever the stop prints on stderr
  if (races) dev.set_observer(nullptr);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Branches whose lanes disagreed: once per PC, with the source line when there are symbols.
  if (std::vector<DivergentBranch> div = dev.divergent_branches(); !div.empty()) {
    auto sy = symbols();
    const engine::Symbols* table = sy ? *sy : nullptr;
    for (const DivergentBranch& d : div)
      std::fprintf(stderr, "vxreplay: %s\n", describe_divergent_branch(d, table, true).c_str());
  }

  int status = kExitOk;
  uint32_t code = dev.exit_code();
  switch (ev.kind) {
    case EventKind::Completed: status = code == 0 ? kExitOk : int(std::min<uint32_t>(code, 63)); break;
    case EventKind::Exception:
      print_exception(dev, ev.exception);
      if (ev.exception.cause == Cause::DivergentBranch) {
        // The branch did not execute: its warp still holds the mask it had.
        auto w = dev.peek_warp(ev.exception.core, ev.exception.warp);
        auto sy = symbols();
        if (w) {
          DivergentBranch d{ev.exception.pc,   ev.exception.addr, w->tmask & ~ev.exception.addr,
                            ev.exception.core, ev.exception.warp, 0};
          std::fprintf(stderr, "  %s\n", describe_divergent_branch(d, sy ? *sy : nullptr, false).c_str());
        }
      }
      status = kExitDeviceStop;
      break;
    case EventKind::CommandError:
      std::fprintf(stderr, "vxreplay: the launch failed: %s\n", ev.message.c_str());
      status = kExitBadInput;
      break;
    case EventKind::Idle:
    case EventKind::Budget:
    case EventKind::Halted:  // nothing here uses the Debug Module
    case EventKind::Trigger:
    case EventKind::Drained:
    case EventKind::Watch:
      std::fprintf(stderr, "vxreplay: internal error: the device went idle before the launch completed\n");
      status = kExitInternal;
      break;
  }
  if (lf && has_checks(*lf)) {
    if (ev.kind != EventKind::Completed) {
      std::fprintf(stderr, "vxreplay: %s: no dumps or comparisons: the kernel did not complete\n", lf->name.c_str());
    } else {
      auto read = [&](uint32_t addr, uint32_t size) -> Result<std::vector<uint8_t>> {
        std::vector<uint8_t> bytes(size);
        if (auto r = dev.copy_from_device(addr, bytes); !r) return r.error();
        return bytes;
      };
      auto report = [](const std::string& m) { std::fprintf(stderr, "vxreplay: %s\n", m.c_str()); };
      LaunchCheck c = finish_launch(*lf, placed, read, report);
      if (c == LaunchCheck::Failed && status == kExitOk) status = kExitBadInput;
      if (c == LaunchCheck::Mismatch && status == kExitOk) status = 1;
    }
  }
  if (races) {
    auto sy = symbols();
    const std::string text = format_races(races->races(), sy ? *sy : nullptr);
    std::fputs(text.c_str(), stdout);
    if (!args.quiet) std::printf("races: %s\n", races->races().empty() ? "none" : "reported above");
    if (!races->races().empty() && status != kExitBadInput) status = kExitRace;
    if (!args.html.empty()) {
      const std::string kernel = std::filesystem::path(args.kernel).filename().string();
      const std::string label = "seed " + std::to_string(args.options.seed) + " on " + args.config.to_string();
      const json data = races_page_data(kernel, label, args.config, sampler.timeline(),
                                        races_json(races->races(), sy ? *sy : nullptr), text, sy ? *sy : nullptr);
      if (!write_nondet_page(args.html, kernel, data)) {
        std::fprintf(stderr, "vxreplay: cannot write the page %s\n", args.html.c_str());
        return kExitCantWrite;
      }
    }
  }
  if (!args.quiet) {
    MachineStats s = dev.stats();
    // The outcome: the stop when the kernel did not complete (its exit word is not an exit code then).
    if (ev.kind == EventKind::Exception) {
      uint32_t next = 0;
      const bool assertion = ev.exception.cause == Cause::Breakpoint &&
                             dev.copy_from_device(ev.exception.pc + 4, {reinterpret_cast<uint8_t*>(&next), 4}).ok() &&
                             next == kAssertMarker;
      std::printf("stopped: %s at pc 0x%08x\n", assertion ? "assertion failed" : cause_name(ev.exception.cause),
                  ev.exception.pc);
    } else {
      std::printf("exit code: %u\n", code);
    }
    std::printf("instructions: %llu warp, %llu lane; warps dispatched: %llu; CTAs: %llu; divergent branches: %llu\n",
                static_cast<unsigned long long>(s.instructions), static_cast<unsigned long long>(s.lane_instructions),
                static_cast<unsigned long long>(s.warps_dispatched),
                static_cast<unsigned long long>(s.units_dispatched),
                static_cast<unsigned long long>(s.divergent_branches));
    std::printf("wall time: %.3f ms (%.1f M lane-instructions/s) on %s, seed %llu%s\n", secs * 1e3,
                secs > 0 ? double(s.lane_instructions) / secs / 1e6 : 0.0, args.config.to_string().c_str(),
                static_cast<unsigned long long>(args.options.seed),
                args.options.schedule == Schedule::Pct ? ", schedule pct" : "");
  }
  return status;
}

}  // namespace vx::cli
