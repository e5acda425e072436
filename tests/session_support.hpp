// Helpers for tests that compare a debug session with undisturbed runs of the same kernel
// (engine/session_test.cpp, replay/timeline_test.cpp): load an example kernel, a reference run that
// gives its state at increasing instruction counts, the memory a kernel can touch, state comparison.
#pragma once

#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/driver.hpp"
#include "device/host_runtime.hpp"
#include "device/image.hpp"
#include "engine/session.hpp"

#ifndef VX_EXAMPLES_DIR
#error "VX_EXAMPLES_DIR must name the built example kernels"
#endif

namespace vx::test {

using namespace vx::engine;

inline const std::string kExamples = VX_EXAMPLES_DIR;

// A kernel is an example's name, optionally with "*N": its launch with a grid of N CTAs in x (e.g.
// "hello*40", a run long enough for console drains to happen while it runs).
inline std::string kernel_file(const std::string& kernel) {
  return kExamples + "/" + kernel.substr(0, kernel.find('*')) + ".elf";
}

inline KernelImage launch_kernel(Driver& d, const std::string& name) {
  auto image = load_kernel_image(kernel_file(name));
  REQUIRE(image);
  HostRuntime rt(d);
  LaunchOverrides o;
  if (size_t star = name.find('*'); star != std::string::npos)
    o.grid = std::array<uint32_t, 3>{uint32_t(std::stoul(name.substr(star + 1))), 1, 1};
  auto launch = resolve_grid_launch(*image, d.config(), o);
  REQUIRE(launch);
  REQUIRE(rt.load_image(*image));
  REQUIRE(rt.launch_grid(*launch));
  return *image;
}

inline std::unique_ptr<Driver> open(const DeviceConfig& cfg, uint64_t seed) {
  RunOptions o;
  o.seed = seed;
  auto d = open_model_device(cfg, o);
  REQUIRE(d);
  return std::move(d).value();
}

// The memory a kernel can touch: I/O (console, exit code), its image, the stacks.
inline std::vector<uint8_t> memory_of(const std::function<std::vector<uint8_t>(uint32_t, uint32_t)>& read,
                                      const KernelImage& img, const DeviceConfig& cfg, bool with_io) {
  std::vector<uint8_t> all;
  auto add = [&](uint32_t a, uint32_t n) {
    auto b = read(a, n);
    all.insert(all.end(), b.begin(), b.end());
  };
  if (with_io) add(memmap::kIoBase, memmap::kIoEnd - memmap::kIoBase);
  add(img.min_vma, img.max_vma - img.min_vma);
  uint32_t stacks = cfg.total_harts() * memmap::kStackPerHart;
  add(memmap::kStackBase - stacks, stacks);
  return all;
}

inline std::string console_text(const std::vector<ConsoleChunk>& chunks) {
  std::string s;
  for (const auto& c : chunks) s += std::to_string(c.slot) + ":" + c.bytes;
  return s;
}

// An undisturbed run that can be asked for its state at increasing instruction counts.
struct Reference {
  std::unique_ptr<Driver> dev;
  KernelImage img;
  uint64_t at = 0;
  std::string console;
  std::string console_bytes;  // the same output without the slot numbers
  Reference(const DeviceConfig& cfg, uint64_t seed, const std::string& kernel) : dev(open(cfg, seed)) {
    img = launch_kernel(*dev, kernel);
  }
  DeviceContext state_at(uint64_t count) {
    REQUIRE(count >= at);
    if (count > at) {
      DeviceEvent e = dev->wait(count - at);
      REQUIRE(e.kind == EventKind::Budget);
      at = count;
    } else if (count == 0) {
      // The launch's first point: started, nothing executed yet.
      DeviceEvent e = dev->wait(0);
      REQUIRE(e.kind == EventKind::Budget);
    }
    for (const ConsoleChunk& c : dev->read_console()) {
      console += std::to_string(c.slot) + ":" + c.bytes;
      console_bytes += c.bytes;
    }
    auto c = dev->save_context();
    REQUIRE(c);
    return *c;
  }
  std::vector<uint8_t> memory(bool with_io) {
    return memory_of(
        [&](uint32_t a, uint32_t n) {
          std::vector<uint8_t> b(n);
          REQUIRE(dev->copy_from_device(a, b));
          return b;
        },
        img, dev->config(), with_io);
  }
  DeviceEvent finish() {
    DeviceEvent e = dev->wait();
    console += console_text(dev->read_console());
    return e;
  }
};

struct Undisturbed {
  std::vector<uint8_t> memory;
  std::string console;
  uint32_t exit_code = 0;
  uint64_t instructions = 0;
};

inline Undisturbed undisturbed(const DeviceConfig& cfg, uint64_t seed, const std::string& kernel) {
  Reference r(cfg, seed, kernel);
  DeviceEvent e = r.finish();
  REQUIRE(e.kind == EventKind::Completed);
  return {r.memory(false), r.console, r.dev->exit_code(), r.dev->stats().instructions};
}

struct Debugged {
  std::unique_ptr<Driver> dev;
  std::unique_ptr<Session> s;
  KernelImage img;
  std::string console;
  Debugged(const DeviceConfig& cfg, uint64_t seed, const std::string& kernel, SessionOptions so = {})
      : dev(open(cfg, seed)) {
    auto made = Session::create(*dev, so);
    REQUIRE(made);
    s = std::move(made).value();
    img = launch_kernel(s->host(), kernel);
  }
  std::vector<uint8_t> memory(bool with_io) {
    return memory_of(
        [&](uint32_t a, uint32_t n) {
          auto b = s->read_memory(a, n);
          REQUIRE(b);
          return *b;
        },
        img, dev->config(), with_io);
  }
  StopEvent go(Result<StopEvent> r) {
    REQUIRE(r);
    console += console_text(s->take_console());
    return *r;
  }
};

// A context as the comparison needs it: the drain countdown is where console drains happen, which a
// stop on an exception (breakpoint) moves, as the undisturbed run's own exceptions do.
inline void check_same_state(const DeviceContext& got, const DeviceContext& want) {
  REQUIRE(got.kernel_instructions == want.kernel_instructions);
  CHECK(got.launch == want.launch);
  CHECK(got.scheduler == want.scheduler);
  CHECK(got.global_barriers == want.global_barriers);
  REQUIRE(got.cores.size() == want.cores.size());
  for (size_t c = 0; c < got.cores.size(); ++c) {
    INFO("core " << c);
    for (size_t w = 0; w < got.cores[c].warps.size(); ++w) {
      INFO("warp " << w);
      CHECK(got.cores[c].warps[w] == want.cores[c].warps[w]);
    }
    CHECK(got.cores[c].local_mem == want.cores[c].local_mem);
    CHECK(got.cores[c].barriers == want.cores[c].barriers);
    CHECK(got.cores[c].slot_warps == want.cores[c].slot_warps);
  }
}

inline const DeviceConfig k1x1x4x4{1, 1, 4, 4, 16 * 1024};
inline const DeviceConfig k1x2x8x8{1, 2, 8, 8, 16 * 1024};

}  // namespace vx::test
