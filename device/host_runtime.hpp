// The host runtime: the C++ API a host program uses to drive a Vortex device
// (open, buffers, load a kernel image, launch, wait, read back). It talks to
// the device only through the Driver, so the engine can intercept it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "device/cmdbuf_builder.hpp"
#include "device/driver.hpp"
#include "device/image.hpp"

namespace vx {

// A grid launch is exactly the fields of a LAUNCH_GRID packet.
using GridLaunch = LaunchGridArgs;

struct InstancesLaunch {
  uint32_t entry = 0;
  uint32_t count = 0;
  std::vector<uint32_t> args;  // at most 7
  uint32_t max_harts = 0;      // 0: every hart
};

// Launch parameters given on a command line; unset fields fall back to the image's defaults.
struct LaunchOverrides {
  std::optional<std::array<uint32_t, 3>> grid;
  std::optional<std::array<uint32_t, 3>> block;
  std::optional<uint32_t> lmem;
  std::optional<uint32_t> entry;
  std::optional<uint32_t> arg;
  std::optional<std::array<uint32_t, 3>> cluster;  // CTAs per cluster (the KMU's CLUSTER_DIM DCRs)
};

// Resolves a grid launch for an image: explicit overrides, then the image's
// __vx_launch descriptor, then the legacy main() launch (one CTA of NT threads per core).
Result<GridLaunch> resolve_grid_launch(const KernelImage& image, const DeviceConfig& cfg, const LaunchOverrides& o);

// Device configuration registers (DCRs) of the KMU, at the addresses of Vortex's vortex.h
// (VX_DCR_KMU_*): what a host writes before vx_start gives the next launch's startup address,
// kernel entry, argument, block, grid and local memory (upstream's regression programs set them so).
namespace dcr {
constexpr uint32_t kKmuBegin = 0x010;
constexpr uint32_t kStartupAddr0 = 0x010;
constexpr uint32_t kStartupAddr1 = 0x011;
constexpr uint32_t kKernelEntry0 = 0x012;
constexpr uint32_t kKernelEntry1 = 0x013;
constexpr uint32_t kStartupArg0 = 0x014;
constexpr uint32_t kStartupArg1 = 0x015;
constexpr uint32_t kBlockDimX = 0x016;  // Y, Z follow
constexpr uint32_t kGridDimX = 0x019;   // Y, Z follow
constexpr uint32_t kLmemSize = 0x01C;
constexpr uint32_t kBlockSize = 0x01D;
constexpr uint32_t kWarpStepX = 0x01E;    // Y, Z follow
constexpr uint32_t kClusterDimX = 0x021;  // Y, Z follow
constexpr uint32_t kKmuEnd = 0x024;
// The base DCRs before the KMU's (startup address and argument of Vortex 2, the MPM class).
constexpr uint32_t kBaseBegin = 0x001;
constexpr uint32_t kBaseEnd = 0x006;
}  // namespace dcr

// The DCR file a host writes: checks addresses, remembers values, and turns the KMU's into the
// next launch's overrides. HostRuntime holds one; libvortex keeps a copy on the host's side of
// the debugger's channel, so that vx_start can answer without a round trip.
class DcrFile {
 public:
  // Writes outside the base and KMU ranges are errors naming the address.
  Result<void> write(uint32_t addr, uint32_t value);
  // The last value written (0 before any).
  Result<uint32_t> read(uint32_t addr) const;
  // The launch fields set through the KMU's DCRs (grid, block, local memory, kernel entry,
  // argument); a grid or block is taken when any of its dimensions was written (the others 1).
  LaunchOverrides kmu_overrides() const;

 private:
  std::array<uint32_t, dcr::kKmuEnd> values_{};
  std::array<bool, dcr::kKmuEnd> set_{};
};

class HostRuntime {
 public:
  explicit HostRuntime(Driver& driver) : d_(driver) {}
  Driver& driver() { return d_; }

  Result<uint32_t> alloc(uint64_t size) { return d_.mem_alloc(size); }
  Result<void> free(uint32_t addr) { return d_.mem_free(addr); }
  Result<void> write(uint32_t addr, std::span<const uint8_t> bytes) { return d_.copy_to_device(addr, bytes); }
  Result<void> read(uint32_t addr, std::span<uint8_t> bytes) { return d_.copy_from_device(addr, bytes); }

  // Maps the image's range and copies its segments (the BSS tail reads as zero).
  Result<void> load_image(const KernelImage& image);
  // Queues a LAUNCH_GRID command buffer; returns the submission id.
  Result<uint64_t> launch_grid(const GridLaunch& launch);
  // Queues RUN_INSTANCES. The runtime gives each hart its own 8 KiB stack through a
  // PER_HART memory window and returns instances to a TMC x0 it installs.
  Result<uint64_t> launch_instances(const InstancesLaunch& launch);
  DeviceEvent wait(uint64_t max_instructions = UINT64_MAX) { return d_.wait(max_instructions); }

  // DCR access (DcrFile). The KMU's DCRs take effect at the next launch the host resolves with
  // kmu_overrides().
  Result<void> dcr_write(uint32_t addr, uint32_t value) { return dcrs_.write(addr, value); }
  Result<uint32_t> dcr_read(uint32_t addr) const { return dcrs_.read(addr); }
  LaunchOverrides kmu_overrides() const { return dcrs_.kmu_overrides(); }

 private:
  Result<void> ensure_instance_support();
  Driver& d_;
  uint32_t trampoline_ = 0;  // TMC x0 for instances to return to
  uint32_t stacks_ = 0;      // per-hart stacks for instances
  DcrFile dcrs_;
};

}  // namespace vx
