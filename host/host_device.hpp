// The device side of vortex.h: buffers, kernel uploads, DCRs and launches over a Driver,
// through HostRuntime. The library runs it in the host process (on the model) and vxreplay runs
// it for a host it debugs (on Session::host()), so both give the same answers and errors.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "device/host_runtime.hpp"
#include "device/image.hpp"

namespace vx::host {

struct Buffer {
  uint32_t addr = 0;
  uint64_t size = 0;
  bool reserved = false;             // vx_mem_reserve (or a kernel image at its link address)
  int flags = 0;                     // VX_MEM_* of the whole buffer (vx_mem_access narrows ranges; see access)
  std::optional<KernelImage> image;  // an uploaded kernel
  size_t image_index = 0;            // its place in HostDevice::images()
};

// What vx_start queued: shown by `info launches` and the stop header.
struct StartedLaunch {
  uint32_t kernel_buffer = 0;
  std::string image_name;
  size_t image_index = 0;  // the launch's kernel image in HostDevice::images() (its symbols)
  GridLaunch launch;
};

// vx_start's launch: the kernel buffer's image with the DCRs' overrides and the argument buffer's
// address. Errors name the buffer that holds no kernel, or what does not fit the device.
Result<GridLaunch> resolve_start(const KernelImage* image, uint32_t kernel_id, uint32_t kernel_addr,
                                 const DcrFile& dcrs, const DeviceConfig& config, std::optional<uint32_t> arg);

class HostDevice {
 public:
  explicit HostDevice(Driver& driver) : rt_(driver), driver_(driver) {}
  HostRuntime& runtime() { return rt_; }

  Result<uint64_t> caps(uint32_t id) const;
  Result<uint32_t> mem_alloc(uint64_t size, int flags);  // a buffer id
  Result<uint32_t> mem_reserve(uint64_t addr, uint64_t size, int flags);
  Result<void> mem_free(uint32_t id);
  Result<void> mem_access(uint32_t id, uint64_t offset, uint64_t size, int flags);
  Result<std::pair<uint64_t, uint64_t>> mem_info() const;  // free, used
  Result<void> copy_to_dev(uint32_t id, uint64_t offset, std::span<const uint8_t> bytes);
  Result<void> copy_from_dev(uint32_t id, uint64_t offset, std::span<uint8_t> bytes);
  // Parses an ELF or .vxbin and maps its segments at their addresses: a buffer id.
  Result<uint32_t> upload_kernel(std::span<const uint8_t> bytes, const std::string& name);
  // Resolves the launch (the KMU's DCRs, else the image's descriptor) and queues it.
  Result<StartedLaunch> start(uint32_t kernel, uint32_t arguments);
  Result<void> dcr_write(uint32_t addr, uint32_t value) { return dcrs_.write(addr, value); }
  Result<uint32_t> dcr_read(uint32_t addr) const { return dcrs_.read(addr); }

  // vx_dump_perf's text (the same in-process and under vxreplay).
  std::string perf_text() const;

  const Buffer* buffer(uint32_t id) const;
  const std::vector<StartedLaunch>& launches() const { return launches_; }
  // The bytes of the uploaded kernel images, in upload order (the debugger's symbols).
  const std::vector<std::pair<std::string, std::vector<uint8_t>>>& images() const { return images_; }

 private:
  Result<Buffer*> find(uint32_t id, const char* what);
  HostRuntime rt_;
  Driver& driver_;
  DcrFile dcrs_;
  std::map<uint32_t, Buffer> buffers_;
  uint32_t next_id_ = 1;
  std::vector<StartedLaunch> launches_;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> images_;
};

// Device memory the API reports (VX_CAPS_GLOBAL_MEM_SIZE): the 32-bit address space.
constexpr uint64_t kGlobalMemBytes = 1ull << 32;

}  // namespace vx::host
