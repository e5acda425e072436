#include "host/host_device.hpp"

#include <cstdio>

#include "host/vortex.h"

namespace vx::host {

namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%08llx", static_cast<unsigned long long>(v));
  return buf;
}

constexpr uint64_t kPage = 4096;

}  // namespace

Result<uint64_t> HostDevice::caps(uint32_t id) const {
  const DeviceConfig& c = driver_.config();
  switch (id) {
    case VX_CAPS_VERSION: return 3;
    case VX_CAPS_NUM_THREADS: return c.threads;
    case VX_CAPS_NUM_WARPS: return c.warps;
    case VX_CAPS_NUM_CORES: return c.total_cores();
    case VX_CAPS_CACHE_LINE_SIZE: return 64;
    case VX_CAPS_GLOBAL_MEM_SIZE: return kGlobalMemBytes;
    case VX_CAPS_LOCAL_MEM_SIZE: return c.local_mem_bytes;
    case VX_CAPS_ISA_FLAGS:
      // RV32 (the architecture field 0: 32 bits) IMAF with local memory.
      return VX_ISA_STD_I | VX_ISA_STD_A | VX_ISA_STD_F | (1ull << 12) /* M */ | VX_ISA_EXT_LMEM;
    case VX_CAPS_NUM_MEM_BANKS: return 1;  // the model's memory is one flat space
    case VX_CAPS_MEM_BANK_SIZE: return kGlobalMemBytes;
    case VX_CAPS_NUM_CLUSTERS: return c.clusters;
    case VX_CAPS_SOCKET_SIZE: return c.cores_per_cluster;
    case VX_CAPS_ISSUE_WIDTH: return 1;
    case VX_CAPS_CLOCK_RATE:
    case VX_CAPS_PEAK_MEM_BW:
      return make_error("caps id " + std::to_string(id) +
                        ": the model is functional, with no clock or memory bandwidth (not supported)");
    case VX_CAPS_VM_SUPPORT:
    case VX_CAPS_VM_PINNED_SIZE:
    case VX_CAPS_VM_PINNED_FREE: return 0;  // no MMU: addresses are physical
    default: return make_error("unknown caps id " + std::to_string(id) + " (VX_CAPS_VERSION..VX_CAPS_VM_PINNED_FREE)");
  }
}

std::string HostDevice::perf_text() const {
  const MachineStats s = driver_.stats();
  char buf[256];
  std::snprintf(
      buf, sizeof buf,
      "PERF: instructions=%llu, lane instructions=%llu, warps dispatched=%llu, CTAs=%llu, divergent branches=%llu\n",
      static_cast<unsigned long long>(s.instructions), static_cast<unsigned long long>(s.lane_instructions),
      static_cast<unsigned long long>(s.warps_dispatched), static_cast<unsigned long long>(s.units_dispatched),
      static_cast<unsigned long long>(s.divergent_branches));
  return buf;
}

const Buffer* HostDevice::buffer(uint32_t id) const {
  auto it = buffers_.find(id);
  return it == buffers_.end() ? nullptr : &it->second;
}

Result<Buffer*> HostDevice::find(uint32_t id, const char* what) {
  auto it = buffers_.find(id);
  if (it == buffers_.end())
    return make_error(std::string(what) + ": buffer " + std::to_string(id) +
                      " does not exist (freed, or never allocated)");
  return &it->second;
}

Result<uint32_t> HostDevice::mem_alloc(uint64_t size, int flags) {
  if (size == 0) return make_error("a buffer of 0 bytes");
  if ((flags & ~VX_MEM_READ_WRITE) != 0) return make_error("flags " + hex(uint32_t(flags)) + " are not VX_MEM_* bits");
  auto a = rt_.alloc(size);
  if (!a) return a.error();
  buffers_[next_id_] = Buffer{*a, size, false, flags, std::nullopt};
  return next_id_++;
}

Result<uint32_t> HostDevice::mem_reserve(uint64_t addr, uint64_t size, int flags) {
  if (size == 0) return make_error("a reservation of 0 bytes");
  if (addr % kPage != 0) return make_error("address " + hex(addr) + " is not page aligned (4096)");
  if (addr + size > kGlobalMemBytes || addr + size < addr)
    return make_error("range " + hex(addr) + "+" + std::to_string(size) + " runs past the 4 GiB address space");
  if ((flags & ~VX_MEM_READ_WRITE) != 0) return make_error("flags " + hex(uint32_t(flags)) + " are not VX_MEM_* bits");
  for (const auto& [id, b] : buffers_) {
    const uint64_t lo = b.addr, hi = b.addr + ((b.size + kPage - 1) & ~(kPage - 1));
    if (addr < hi && lo < addr + size)
      return make_error("range " + hex(addr) + "+" + std::to_string(size) + " overlaps buffer " + std::to_string(id) +
                        " at " + hex(lo) + "+" + std::to_string(b.size));
  }
  if (auto r = driver_.mem_reserve(uint32_t(addr), size); !r) return r.error();
  buffers_[next_id_] = Buffer{uint32_t(addr), size, true, flags, std::nullopt};
  return next_id_++;
}

Result<void> HostDevice::mem_free(uint32_t id) {
  auto b = find(id, "vx_mem_free");
  if (!b) return b.error();
  if ((*b)->image) {
    // An image is reserved segment by segment.
    for (const ImageSegment& s : (*b)->image->segments)
      if (auto r = rt_.free(s.vaddr); !r) return r;
  } else if (auto r = rt_.free((*b)->addr); !r) {
    return r;
  }
  buffers_.erase(id);
  return {};
}

Result<void> HostDevice::mem_access(uint32_t id, uint64_t offset, uint64_t size, int flags) {
  auto b = find(id, "vx_mem_access");
  if (!b) return b.error();
  if (offset + size > (*b)->size || offset + size < offset)
    return make_error("range +" + std::to_string(offset) + " of " + std::to_string(size) +
                      " bytes runs past the end of the " + std::to_string((*b)->size) + "-byte buffer");
  if ((flags & ~VX_MEM_READ_WRITE) != 0) return make_error("flags " + hex(uint32_t(flags)) + " are not VX_MEM_* bits");
  if (offset == 0 && size == (*b)->size) (*b)->flags = flags;
  return {};
}

Result<std::pair<uint64_t, uint64_t>> HostDevice::mem_info() const {
  uint64_t used = 0;
  for (const auto& [id, b] : buffers_) used += (b.size + kPage - 1) & ~(kPage - 1);
  return std::pair<uint64_t, uint64_t>{kGlobalMemBytes - used, used};
}

Result<void> HostDevice::copy_to_dev(uint32_t id, uint64_t offset, std::span<const uint8_t> bytes) {
  auto b = find(id, "vx_copy_to_dev");
  if (!b) return b.error();
  if (offset + bytes.size() > (*b)->size || offset + bytes.size() < offset)
    return make_error("a copy of " + std::to_string(bytes.size()) + " bytes at offset " + std::to_string(offset) +
                      " runs past the end of the " + std::to_string((*b)->size) + "-byte buffer at " + hex((*b)->addr));
  if (bytes.empty()) return {};
  return rt_.write(uint32_t((*b)->addr + offset), bytes);
}

Result<void> HostDevice::copy_from_dev(uint32_t id, uint64_t offset, std::span<uint8_t> bytes) {
  auto b = find(id, "vx_copy_from_dev");
  if (!b) return b.error();
  if (offset + bytes.size() > (*b)->size || offset + bytes.size() < offset)
    return make_error("a copy of " + std::to_string(bytes.size()) + " bytes at offset " + std::to_string(offset) +
                      " runs past the end of the " + std::to_string((*b)->size) + "-byte buffer at " + hex((*b)->addr));
  if (bytes.empty()) return {};
  return rt_.read(uint32_t((*b)->addr + offset), bytes);
}

Result<uint32_t> HostDevice::upload_kernel(std::span<const uint8_t> bytes, const std::string& name) {
  auto image = parse_kernel_image(bytes, name);
  if (!image) return image.error();
  if (image->segments.empty()) return make_error(name + ": the image has no loadable bytes");
  // Upstream's .vxbin kernels keep their TLS facts in the ELF beside them (the library says so).
  (void)adopt_tls_beside(*image);
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const ImageSegment& s : image->segments) {
    lo = std::min<uint64_t>(lo, s.vaddr);
    hi = std::max<uint64_t>(hi, uint64_t(s.vaddr) + s.mem_size);
  }
  for (const auto& [id, b] : buffers_) {
    const uint64_t blo = b.addr, bhi = b.addr + ((b.size + kPage - 1) & ~(kPage - 1));
    if (lo < bhi && blo < hi)
      return make_error(name + ": the image at " + hex(lo) + ".." + hex(hi) + " overlaps buffer " + std::to_string(id) +
                        " at " + hex(blo));
  }
  if (auto r = rt_.load_image(*image); !r) return r.error();
  buffers_[next_id_] = Buffer{uint32_t(lo), hi - lo, true, VX_MEM_READ, std::move(image).value(), images_.size()};
  images_.emplace_back(name, std::vector<uint8_t>(bytes.begin(), bytes.end()));
  return next_id_++;
}

Result<GridLaunch> resolve_start(const KernelImage* image, uint32_t kernel_id, uint32_t kernel_addr,
                                 const DcrFile& dcrs, const DeviceConfig& config, std::optional<uint32_t> arg) {
  if (!image)
    return make_error("buffer " + std::to_string(kernel_id) + " at " + hex(kernel_addr) +
                      " holds no kernel (upload one with vx_upload_kernel_file or vx_upload_kernel_bytes)");
  LaunchOverrides o = dcrs.kmu_overrides();
  if (arg) o.arg = *arg;
  return resolve_grid_launch(*image, config, o);
}

Result<StartedLaunch> HostDevice::start(uint32_t kernel, uint32_t arguments) {
  auto k = find(kernel, "vx_start");
  if (!k) return k.error();
  std::optional<uint32_t> arg;
  if (arguments != 0) {
    auto a = find(arguments, "vx_start");
    if (!a) return a.error();
    arg = (*a)->addr;
  }
  auto launch = resolve_start((*k)->image ? &*(*k)->image : nullptr, kernel, (*k)->addr, dcrs_, driver_.config(), arg);
  if (!launch) return launch.error();
  auto id = rt_.launch_grid(*launch);
  if (!id) return id.error();
  StartedLaunch s{kernel, (*k)->image->path, (*k)->image_index, *launch};
  launches_.push_back(s);
  return s;
}

}  // namespace vx::host
