// Device shape and run options. Plain values: they go into checkpoint headers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace vx {

struct DeviceConfig {
  uint32_t clusters = 1;
  uint32_t cores_per_cluster = 1;
  uint32_t warps = 4;                    // NW: warp slots per core
  uint32_t threads = 4;                  // NT: lanes per warp (power of two, 1..32)
  uint32_t local_mem_bytes = 16 * 1024;  // per core

  uint32_t total_cores() const { return clusters * cores_per_cluster; }
  uint32_t total_warps() const { return total_cores() * warps; }
  uint32_t total_harts() const { return total_warps() * threads; }
  uint32_t full_mask() const { return threads >= 32 ? 0xffffffffu : ((1u << threads) - 1u); }
  uint32_t ipdom_depth() const { return threads - 1; }

  // Empty when valid; otherwise what is wrong, e.g. "threads must be a power of two in 1..32 (got 3)".
  std::optional<std::string> validate() const;
  // "1x1x4x4" (clusters x cores x warps x threads).
  std::string to_string() const;
  // Parses "CxKxWxT" or "KxWxT" (one cluster); returns an error message on failure.
  static std::optional<DeviceConfig> parse(const std::string& text, std::string* error);

  bool operator==(const DeviceConfig&) const = default;
};

// The warp scheduler's version: bumped whenever a seed would give another schedule (a different
// warp order or quantum). Recordings keep it; a replay under another version is refused.
constexpr uint32_t kSchedulerVersion = 2;

// The warp scheduler's strategy (docs/nondeterminism.md, "Schedules"). Part of a run's identity
// like the seed: recordings keep it.
enum class Schedule : uint8_t {
  Random = 0,  // each core picks a random ready warp for a random quantum of 1..16 instructions
  Pct = 1,     // probabilistic concurrency testing: the ready warp of highest random priority runs,
               // one instruction at a time; priorities are drawn again at a few change points
};
const char* schedule_name(Schedule s);
// "random" or "pct"; nullopt otherwise.
std::optional<Schedule> parse_schedule(const std::string& text);

// Options of one device instance that are not part of its shape.
struct RunOptions {
  uint64_t seed = 1;  // scheduler seed: same (config, seed, schedule) => bit-identical run
  // Watchdog: a pass that executes more warp instructions than this stops with a
  // watchdog event. 0 disables it.
  uint64_t watchdog_instructions = 200'000'000;
  // Decoded instructions are cached per PC. Turning the cache off decodes every
  // instruction from the table again: the baseline the benchmarks compare with.
  bool decode_cache = true;
  // A device without the Debug Module (vxreplay run --no-debug-module): dm_read and dm_write
  // fail ("this device has no Debug Module"), so PLATFORM reads as absent (docs/live.md).
  bool debug_module = true;
  // A plain branch whose active lanes disagree stops the device with Cause::DivergentBranch
  // (vxreplay run --strict-branches) instead of following the highest active lane.
  bool strict_branches = false;
  Schedule schedule = Schedule::Random;  // the warp scheduler's strategy (with the seed, the schedule)
  // The reference interpreter: run() goes back to its dispatcher after every instruction (stop
  // checks, budget, watchdog, fetch, execute, count), as the model did before its fast path; the
  // executors are shared. The fast path must leave exactly the state this mode leaves
  // (device/reference_mode_test.cpp compares the two).
  bool reference = false;
  // The fast loop's basic blocks translated to host code (device/jit.hpp; x86-64 hosts): false runs
  // them through their executors, the loop the translation must match (device/jit_test.cpp).
  bool jit = true;
};

// Fixed facts of the Vortex 3.0 memory map (shared/spec/vortex-v3.md).
namespace memmap {
constexpr uint32_t kIoBase = 0x40;
constexpr uint32_t kIoEnd = 0x10000;
constexpr uint32_t kConsoleWrIdx = 0x40;   // u32[64]
constexpr uint32_t kConsoleRdIdx = 0x140;  // u32[64]
constexpr uint32_t kConsoleData = 0x240;   // u8[64][512]
constexpr uint32_t kConsoleLost = 0x8240;  // u32[64]
constexpr uint32_t kConsoleSlots = 64;
constexpr uint32_t kConsoleRingBytes = 512;
constexpr uint32_t kExitCode = 0x8348;
constexpr uint32_t kAllocBase = 0x10000;
constexpr uint32_t kStartupAddr = 0x80000000;
constexpr uint32_t kStackBase = 0xFFFF0000;
constexpr uint32_t kStackPerHart = 8 * 1024;
constexpr uint32_t kLocalMemBase = 0xFFFF0000;
constexpr uint32_t kKtbBase = 0xFE000000;  // RUN_KERNEL_SLICE per-hart thread blocks (our TCDM)
constexpr uint32_t kNumBarriersPerCta = 8;
}  // namespace memmap

// The examples' runtime convention (examples/runtime/vx_runtime.h): a failed vx_assert executes
// EBREAK immediately followed by this word (srai x0, x0, 26, a no-op), which tells an assertion from
// any other EBREAK.
constexpr uint32_t kAssertMarker = 0x41a05013;

}  // namespace vx
