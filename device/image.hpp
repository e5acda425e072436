// Kernel images: ELF (EM_RISCV, 32-bit) and .vxbin, parsed into segments plus
// the launch defaults an ELF can carry (the .vx_launch descriptor).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "device/result.hpp"

namespace vx {

struct ImageSegment {
  uint32_t vaddr = 0;
  uint32_t mem_size = 0;       // bytes mapped; the tail past bytes.size() is zero (BSS)
  std::vector<uint8_t> bytes;  // file contents
};

// Launch defaults carried by an image (examples/runtime/vx_runtime.h).
struct LaunchDescriptor {
  static constexpr uint32_t kMagic = 0x4e4c5856;  // "VXLN"
  uint32_t entry = 0;  // CTA_ENTRY; 0 = legacy main() launch
  uint32_t arg = 0;
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t lmem = 0;
};

struct KernelImage {
  std::string path;
  bool is_elf = false;
  uint32_t start_pc = 0;  // ELF e_entry, or the .vxbin base
  uint32_t min_vma = 0;
  uint32_t max_vma = 0;   // exclusive
  std::vector<ImageSegment> segments;
  std::optional<LaunchDescriptor> launch;
  std::optional<uint32_t> main_addr;  // the symbol main, for legacy launches
  uint64_t hash = 0;                  // content hash of the file (FNV-1a 64)
};

// Reads and validates a kernel image file. Errors say what is wrong and where,
// e.g. "kernel.elf: program header 2: segment 0x80000000+0x5000 runs past the end of the file".
Result<KernelImage> load_kernel_image(const std::string& path);
// The same, from bytes in memory (`name` is used in messages).
Result<KernelImage> parse_kernel_image(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace vx
