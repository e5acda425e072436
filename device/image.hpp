// Kernel images: ELF (EM_RISCV, 32-bit) and .vxbin, parsed into segments plus
// the launch defaults an ELF can carry (the .vx_launch descriptor).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace vx {

struct ImageSegment {
  uint32_t vaddr = 0;
  uint32_t mem_size = 0;       // bytes mapped; the tail past bytes.size() is zero (BSS)
  std::vector<uint8_t> bytes;  // file contents
};

// Launch defaults carried by an image (examples/runtime/vx_runtime.h).
struct LaunchDescriptor {
  static constexpr uint32_t kMagic = 0x4e4c5856;  // "VXLN"
  uint32_t entry = 0;                             // CTA_ENTRY; 0 = legacy main() launch
  uint32_t arg = 0;
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t lmem = 0;
};

// A named kernel entry of a .vxbin's VXSYMTAB footer (Vortex 3.0): a CTA entry PC.
struct KernelEntry {
  std::string name;
  uint32_t pc = 0;
  bool operator==(const KernelEntry&) const = default;
};

struct KernelImage {
  std::string path;
  bool is_elf = false;
  uint32_t start_pc = 0;  // ELF e_entry, or the .vxbin base
  uint32_t min_vma = 0;
  uint32_t max_vma = 0;  // exclusive
  std::vector<ImageSegment> segments;
  std::optional<LaunchDescriptor> launch;
  std::optional<uint32_t> main_addr;  // the symbol main, for legacy launches
  uint64_t hash = 0;                  // content hash of the file (FNV-1a 64)
  // .vxbin only: the VXSYMTAB footer's entries in file order (has_symtab: the footer is there,
  // possibly with no entries), and the loadable bytes' length (the file minus header and footer).
  bool has_symtab = false;
  std::vector<KernelEntry> entries;
  // Thread-local storage, from an ELF: the PT_TLS segment's size (.tdata + .tbss), and the symbols
  // __tbss_size (the per-hart stride of upstream's startup code) and _end (where TLS blocks start).
  uint32_t tls_bytes = 0;
  std::optional<uint32_t> tls_stride;
  std::optional<uint32_t> end_symbol;
};

// The memory past the image that thread-local storage needs on a device of `harts` harts, by the
// runtime convention of upstream's startup code: hart h's block starts at tp = _end + 63 + h x
// __tbss_size and holds the TLS segment (tls_bytes). Returns [start, end) beyond max_vma, or nothing
// when the image has no TLS or its blocks fit inside the image.
std::optional<std::pair<uint32_t, uint64_t>> tls_area(const KernelImage& image, uint32_t harts);

// The CTA entry for a name: a VXSYMTAB entry, or "main" for a .vxbin without a footer (its min
// vma, as upstream's loader does). Errors list the names there are.
Result<uint32_t> vxbin_entry(const KernelImage& image, const std::string& name);

// The first address where two images' loadable bytes differ (each read as its segments over
// zeroes), or nothing when they are the same bytes at the same addresses.
std::optional<uint32_t> first_loadable_difference(const KernelImage& a, const KernelImage& b);

// A .vxbin carries no TLS facts; the ELF of the same name beside it (k.vxbin -> k.elf) does when
// their loadable bytes match: its facts are adopted, and the line to say so is returned (nothing
// when there is no such ELF or it has no TLS).
std::optional<std::string> adopt_tls_beside(KernelImage& image);

// Reads and validates a kernel image file. Errors say what is wrong and where,
// e.g. "kernel.elf: program header 2: segment 0x80000000+0x5000 runs past the end of the file".
Result<KernelImage> load_kernel_image(const std::string& path);
// The same, from bytes in memory (`name` is used in messages).
Result<KernelImage> parse_kernel_image(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace vx
