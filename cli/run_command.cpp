#include "cli/run_command.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/console.hpp"
#include "cli/kernel_symbols.hpp"
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

}  // namespace

int run_command(const RunArgs& args) {
  auto image = load_kernel_image(args.kernel);
  if (!image) {
    std::fprintf(stderr, "vxreplay: %s\n", image.error().message.c_str());
    return kExitBadInput;
  }
  std::optional<LaunchFile> lf;
  if (!args.launch_file.empty()) {
    auto loaded = load_launch_file(args.launch_file);
    if (!loaded) {
      std::fprintf(stderr, "vxreplay: %s\n", loaded.error().message.c_str());
      return kExitBadInput;
    }
    lf.emplace(std::move(loaded).value());
  }
  auto opened = open_model_device(args.config, args.options);
  if (!opened) {
    std::fprintf(stderr, "vxreplay: %s\n", opened.error().message.c_str());
    return kExitBadInput;
  }
  Driver& dev = **opened;
  HostRuntime rt(dev);
  // Symbols are read when something needs them (an entry by name, the divergence report), except
  // that a --symbols file is checked before anything runs.
  std::optional<KernelSymbols> syms;
  auto symbols = [&]() -> Result<const engine::Symbols*> {
    if (!syms) {
      auto found = find_kernel_symbols(*image, args.symbols);
      if (!found) return found.error();
      syms.emplace(std::move(found).value());
      if (!syms->note.empty()) std::fprintf(stderr, "vxreplay: %s\n", syms->note.c_str());
    }
    return syms->symbols ? &*syms->symbols : nullptr;
  };
  // A .vxbin's symbols are looked for at once: the run says where they come from, and the matching
  // ELF's thread-local storage facts apply to the .vxbin.
  const bool names_entry = !args.entry.empty() || (lf && lf->entry);
  if (!args.symbols.empty() || names_entry || !image->is_elf) {
    if (auto r = symbols(); !r) {
      std::fprintf(stderr, "vxreplay: %s\n", r.error().message.c_str());
      return kExitBadInput;
    }
    adopt_tls(*image, *syms);
  }
  LaunchOverrides ov;
  ov.grid = args.grid;
  ov.block = args.block;
  ov.lmem = args.lmem;
  if (!args.entry.empty()) {
    auto e = resolve_entry(*image, symbols().value(), args.entry, "--entry");
    if (!e) {
      std::fprintf(stderr, "vxreplay: %s\n", e.error().message.c_str());
      return kExitBadInput;
    }
    ov.entry = *e;
  }
  if (lf) {
    if (auto r = apply_launch_file(*lf, *image, names_entry ? symbols().value() : nullptr, ov); !r) {
      std::fprintf(stderr, "vxreplay: %s\n", r.error().message.c_str());
      return kExitBadInput;
    }
  }
  auto launch = resolve_grid_launch(*image, args.config, ov);
  if (!launch) {
    std::fprintf(stderr, "vxreplay: %s\n", launch.error().message.c_str());
    return kExitBadInput;
  }
  if (auto r = rt.load_image(*image); !r) {
    std::fprintf(stderr, "vxreplay: %s\n", r.error().message.c_str());
    return kExitBadInput;
  }
  PlacedLaunch placed;
  if (lf) {
    auto p = place_launch(rt, *lf);
    if (!p) {
      std::fprintf(stderr, "vxreplay: %s\n", p.error().message.c_str());
      return kExitBadInput;
    }
    placed = std::move(p).value();
    if (placed.arg_ptr) launch->arg_ptr = *placed.arg_ptr;
  }
  if (auto r = rt.launch_grid(*launch); !r) {
    std::fprintf(stderr, "vxreplay: %s\n", r.error().message.c_str());
    return kExitBadInput;
  }

  ConsoleLines console;
  auto t0 = std::chrono::steady_clock::now();
  DeviceEvent ev;
  do {
    ev = dev.wait(kSlice);
    console.feed(dev.read_console(), std::cout);
  } while (ev.kind == EventKind::Budget);
  console.flush(std::cout);
  std::cout.flush();  // the console comes before whatever the stop prints on stderr
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
    case EventKind::Completed:
      status = code == 0 ? kExitOk : int(std::min<uint32_t>(code, 63));
      break;
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
    std::printf("wall time: %.3f ms (%.1f M lane-instructions/s) on %s, seed %llu\n", secs * 1e3,
                secs > 0 ? double(s.lane_instructions) / secs / 1e6 : 0.0, args.config.to_string().c_str(),
                static_cast<unsigned long long>(args.options.seed));
  }
  return status;
}

}  // namespace vx::cli
