#include "cli/run_command.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/console.hpp"
#include "cli/diff_command.hpp"
#include "cli/launch_file.hpp"
#include "device/host_runtime.hpp"
#include "device/isa.hpp"

namespace vx::cli {

namespace {

constexpr uint64_t kSlice = 1u << 20;           // instructions between console drains on the host side

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
};

Result<PreparedRun> prepare_run(const RunArgs& args, DeviceObserver* observer) {
  PreparedRun p;
  auto image = load_kernel_image(args.kernel);
  if (!image) return image.error();
  p.image = std::move(image).value();
  if (!args.launch_file.empty()) {
    auto loaded = load_launch_file(args.launch_file);
    if (!loaded) return loaded.error();
    p.lf.emplace(std::move(loaded).value());
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
  if (p.lf)
    if (auto r = apply_launch_file(*p.lf, args.kernel, ov); !r) return r.error();
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

WorkloadRun run_workload(const RunArgs& args, DeviceObserver* observer, std::ostream* out) {
  WorkloadRun w;
  auto prepared = prepare_run(args, observer);
  if (!prepared) {
    w.status = kExitBadInput;
    w.error = prepared.error().message;
    return w;
  }
  Driver& dev = *prepared->dev;
  ConsoleLines lines;
  auto take_console = [&] {
    std::vector<ConsoleChunk> chunks = dev.read_console();
    for (const ConsoleChunk& c : chunks) w.console[c.slot] += c.bytes;
    if (out) lines.feed(chunks, *out);
  };
  auto t0 = std::chrono::steady_clock::now();
  DeviceEvent ev;
  do {
    ev = dev.wait(kSlice);
    take_console();
  } while (ev.kind == EventKind::Budget);
  if (out) lines.flush(*out);
  w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  dev.set_observer(nullptr);
  w.end = ev.kind;
  w.exit_code = dev.exit_code();
  w.stats = dev.stats();
  switch (ev.kind) {
    case EventKind::Completed:
      w.status = w.exit_code == 0 ? kExitOk : int(std::min<uint32_t>(w.exit_code, 63));
      break;
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
  auto prepared = prepare_run(args, races.get());
  if (!prepared) {
    std::fprintf(stderr, "vxreplay: %s\n", prepared.error().message.c_str());
    return kExitBadInput;
  }
  Driver& dev = *prepared->dev;
  std::optional<LaunchFile>& lf = prepared->lf;
  PlacedLaunch& placed = prepared->placed;

  ConsoleLines console;
  auto t0 = std::chrono::steady_clock::now();
  DeviceEvent ev;
  do {
    ev = dev.wait(kSlice);
    console.feed(dev.read_console(), std::cout);
  } while (ev.kind == EventKind::Budget);
  console.flush(std::cout);
  std::cout.flush();  // the console comes before whatever the stop prints on stderr
  if (races) dev.set_observer(nullptr);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  int status = kExitOk;
  uint32_t code = dev.exit_code();
  switch (ev.kind) {
    case EventKind::Completed:
      status = code == 0 ? kExitOk : int(std::min<uint32_t>(code, 63));
      break;
    case EventKind::Exception:
      print_exception(dev, ev.exception);
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
    std::optional<engine::Symbols> symbols;
    if (prepared->image.is_elf)
      if (auto sy = engine::Symbols::load(args.kernel)) symbols.emplace(std::move(sy).value());
    const std::string text = format_races(races->races(), symbols ? &*symbols : nullptr);
    std::fputs(text.c_str(), stdout);
    if (!args.quiet) std::printf("races: %s\n", races->races().empty() ? "none" : "reported above");
    if (!races->races().empty() && status != kExitBadInput) status = kExitRace;
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
                static_cast<unsigned long long>(s.warps_dispatched), static_cast<unsigned long long>(s.units_dispatched),
                static_cast<unsigned long long>(s.divergent_branches));
    std::printf("wall time: %.3f ms (%.1f M lane-instructions/s) on %s, seed %llu%s\n", secs * 1e3,
                secs > 0 ? double(s.lane_instructions) / secs / 1e6 : 0.0, args.config.to_string().c_str(),
                static_cast<unsigned long long>(args.options.seed),
                args.options.schedule == Schedule::Pct ? ", schedule pct" : "");
  }
  return status;
}

}  // namespace vx::cli
