#include "device/host_runtime.hpp"

#include <cstdio>

#include "device/cmdproc.hpp"

namespace vx {

namespace {

constexpr uint32_t kTmcX0 = 0x0000000b;              // TMC x0: retires the warp
constexpr uint32_t kInstanceStackBase = 0xE0000000;  // virtual stack window for instances
constexpr uint32_t kInstanceStackBytes = 8 * 1024;

std::string dims(const std::array<uint32_t, 3>& d) {
  return std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]);
}

}  // namespace

Result<GridLaunch> resolve_grid_launch(const KernelImage& image, const DeviceConfig& cfg, const LaunchOverrides& o) {
  GridLaunch l;
  l.start_pc = image.start_pc;
  const LaunchDescriptor* d = image.launch ? &*image.launch : nullptr;
  if (d && d->entry != 0) {
    l.entry_pc = d->entry;
    l.arg_ptr = d->arg;
    l.grid = d->grid;
    l.block = d->block;
    l.lmem_bytes = d->lmem;
  } else if (image.main_addr) {
    // Legacy main(): one CTA of NT threads per core.
    l.entry_pc = *image.main_addr;
    l.arg_ptr = d ? d->arg : 0;
    l.grid = {cfg.total_cores(), 1, 1};
    l.block = {cfg.threads, 1, 1};
  } else if (!image.is_elf) {
    // As upstream launches a .vxbin: every warp starts at its min vma (start_pc); the CTA entry is
    // the kernel its VXSYMTAB footer names (the only one, or "main"), else the min vma itself, for
    // an image whose own startup code calls main. The shape is the legacy one.
    l.grid = {cfg.total_cores(), 1, 1};
    l.block = {cfg.threads, 1, 1};
    if (!o.entry) {
      if (image.entries.size() == 1) {
        l.entry_pc = image.entries[0].pc;
      } else {
        auto e = vxbin_entry(image, "main");
        if (!e) return make_error(e.error().message + "; choose one with --entry NAME");
        l.entry_pc = *e;
      }
    }
  } else if (!o.entry) {
    return make_error(image.path +
                      ": the image names no kernel: it has neither a __vx_launch descriptor with an entry nor a "
                      "main() (give one with --entry)");
  }
  if (o.entry) l.entry_pc = *o.entry;
  if (o.arg) l.arg_ptr = *o.arg;
  if (o.grid) l.grid = *o.grid;
  if (o.block) l.block = *o.block;
  if (o.lmem) l.lmem_bytes = *o.lmem;
  if (o.cluster) l.cluster = *o.cluster;
  static const char* const kAxis[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i)
    if (l.cluster[i] == 0 || l.grid[i] % l.cluster[i] != 0)
      return make_error("cluster " + dims(l.cluster) + ": grid " + dims(l.grid) +
                        " is not a whole number of clusters in " + kAxis[i]);
  uint64_t threads = uint64_t(l.block[0]) * l.block[1] * l.block[2];
  uint64_t warps = (threads + cfg.threads - 1) / cfg.threads;
  if (threads == 0 || warps > cfg.warps)
    return make_error("block " + dims(l.block) + " has " + std::to_string(threads) + " threads: it needs " +
                      std::to_string(warps) + " warps but a core of " + cfg.to_string() + " has " +
                      std::to_string(cfg.warps) + " (at most " + std::to_string(cfg.warps * cfg.threads) +
                      " threads per block)");
  if (l.lmem_bytes > cfg.local_mem_bytes)
    return make_error("local memory of " + std::to_string(l.lmem_bytes) + " bytes per CTA exceeds the " +
                      std::to_string(cfg.local_mem_bytes) + " bytes of a core");
  return l;
}

Result<void> DcrFile::write(uint32_t addr, uint32_t value) {
  const bool base = addr >= dcr::kBaseBegin && addr < dcr::kBaseEnd;
  const bool kmu = addr >= dcr::kKmuBegin && addr < dcr::kKmuEnd;
  if (!base && !kmu) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "DCR 0x%03x does not exist (the base DCRs are 0x001..0x005, the KMU's 0x010..0x023)",
                  addr);
    return make_error(buf);
  }
  values_[addr] = value;
  set_[addr] = true;
  return {};
}

Result<uint32_t> DcrFile::read(uint32_t addr) const {
  if (addr >= dcr::kKmuEnd || addr == 0 || (addr >= dcr::kBaseEnd && addr < dcr::kKmuBegin)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "DCR 0x%03x does not exist", addr);
    return make_error(buf);
  }
  return values_[addr];
}

LaunchOverrides DcrFile::kmu_overrides() const {
  LaunchOverrides o;
  auto dims = [&](uint32_t first) -> std::optional<std::array<uint32_t, 3>> {
    if (!set_[first] && !set_[first + 1] && !set_[first + 2]) return std::nullopt;
    std::array<uint32_t, 3> d{1, 1, 1};
    for (uint32_t i = 0; i < 3; ++i)
      if (set_[first + i]) d[i] = values_[first + i];
    return d;
  };
  o.grid = dims(dcr::kGridDimX);
  o.block = dims(dcr::kBlockDimX);
  if (set_[dcr::kLmemSize]) o.lmem = values_[dcr::kLmemSize];
  o.cluster = dims(dcr::kClusterDimX);
  if (set_[dcr::kKernelEntry0]) o.entry = values_[dcr::kKernelEntry0];
  if (set_[dcr::kStartupArg0]) o.arg = values_[dcr::kStartupArg0];
  return o;
}

Result<void> HostRuntime::load_image(const KernelImage& image) {
  for (const ImageSegment& s : image.segments) {
    if (auto r = d_.mem_reserve(s.vaddr, s.mem_size); !r) return make_error(image.path + ": " + r.error().message);
    if (auto r = d_.copy_to_device(s.vaddr, s.bytes); !r) return make_error(image.path + ": " + r.error().message);
  }
  // A legacy startup puts every hart's TLS block past the image (tp = _end + 63 + hart x size): map
  // them all, or the larger hart ids' blocks fault (docs/device.md, "Kernel images").
  const uint32_t harts = d_.config().total_harts();
  if (auto area = tls_area(image, harts)) {
    if (auto r = d_.mem_reserve(area->first, area->second - area->first); !r)
      return make_error(image.path + ": thread-local storage of " + std::to_string(harts) + " harts (" +
                        std::to_string(image.tls_bytes) + " bytes each) past the image: " + r.error().message);
  }
  return {};
}

Result<uint64_t> HostRuntime::launch_grid(const GridLaunch& l) {
  CommandBufferBuilder b;
  b.launch_grid(l).finish();
  return d_.submit(b.bytes());
}

Result<void> HostRuntime::ensure_instance_support() {
  if (trampoline_ != 0) return {};
  auto tramp = d_.mem_alloc(4);
  if (!tramp) return tramp.error();
  if (auto r = d_.copy_to_device(*tramp, {reinterpret_cast<const uint8_t*>(&kTmcX0), 4}); !r) return r;
  auto stacks = d_.mem_alloc(uint64_t(d_.config().total_harts()) * kInstanceStackBytes);
  if (!stacks) return stacks.error();
  trampoline_ = *tramp;
  stacks_ = *stacks;
  return {};
}

Result<uint64_t> HostRuntime::launch_instances(const InstancesLaunch& l) {
  if (l.args.size() > kCmpMaxExtraArgs)
    return make_error("RUN_INSTANCES takes at most 7 extra arguments, got " + std::to_string(l.args.size()));
  if (auto r = ensure_instance_support(); !r) return r.error();
  CommandBufferBuilder b;
  // Window 0, PER_HART: every hart sees its own 8 KiB stack at the same virtual range.
  b.write_reg64(kCmpWindowBase0, kInstanceStackBase);
  b.write_reg64(kCmpWindowTarget0, stacks_);
  b.write_reg64(kCmpWindowScale0, cmp_window_scale(13, 1));  // 8 KiB per hart
  b.write_reg64(kCmpWindowMode0,
                cmp_window_mode(true, WindowMode::PerHart, kWindowRead | kWindowWrite, kInstanceStackBytes));
  b.write_reg64(kCmpEntryPtFn, l.entry);
  b.write_reg64(kCmpStackTop, kInstanceStackBase + kInstanceStackBytes);
  b.write_reg64(kCmpReturnAddr, trampoline_);
  std::vector<uint64_t> args(l.args.begin(), l.args.end());
  b.run_instances(uint8_t(l.max_harts), l.count, args).finish();
  return d_.submit(b.bytes());
}

}  // namespace vx
