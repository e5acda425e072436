#include "device/image.hpp"

#include "device/input_file.hpp"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "device/config.hpp"

namespace vx {

namespace {

std::string hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

uint64_t fnv1a(std::span<const uint8_t> bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

// Segments may not cover the I/O region or the stack / local-memory region.
std::optional<std::string> check_range(uint64_t start, uint64_t size) {
  uint64_t end = start + size;
  if (end > 0x100000000ull) return "extends past the 32-bit address space";
  if (start < memmap::kIoEnd) return "overlaps the I/O region (below 0x10000)";
  if (end > 0xF0000000ull) return "overlaps the device's reserved top of memory (stacks, local memory) at 0xf0000000";
  return std::nullopt;
}

struct ElfCloser {
  Elf* e;
  ~ElfCloser() {
    if (e) elf_end(e);
  }
};

Result<KernelImage> parse_elf(std::span<const uint8_t> bytes, const std::string& name) {
  if (elf_version(EV_CURRENT) == EV_NONE) return make_error(name + ": libelf initialization failed");
  // libelf wants a mutable buffer; it does not write to it in read mode.
  Elf* e = elf_memory(reinterpret_cast<char*>(const_cast<uint8_t*>(bytes.data())), bytes.size());
  ElfCloser closer{e};
  if (!e || elf_kind(e) != ELF_K_ELF) return make_error(name + ": not a valid ELF file");
  if (gelf_getclass(e) != ELFCLASS32)
    return make_error(name + ": ELF class is not 32-bit (Vortex kernels are RV32; build with --target=riscv32)");
  GElf_Ehdr eh;
  if (!gelf_getehdr(e, &eh)) return make_error(name + ": unreadable ELF header: " + elf_errmsg(-1));
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) return make_error(name + ": ELF is not little-endian");
  if (eh.e_machine != EM_RISCV)
    return make_error(name + ": ELF machine is " + std::to_string(eh.e_machine) + ", not RISC-V (243)");
  if (eh.e_type != ET_EXEC) return make_error(name + ": ELF is not an executable (link it with a linker script)");
  // libelf silently drops table entries that run past the end of the file, so
  // a truncated file would look like one without segments or symbols.
  if (eh.e_phnum > 0 && (eh.e_phentsize != sizeof(Elf32_Phdr) ||
                         uint64_t(eh.e_phoff) + uint64_t(eh.e_phnum) * eh.e_phentsize > bytes.size()))
    return make_error(name + ": the program header table (" + std::to_string(eh.e_phnum) + " entries at offset " +
                      std::to_string(eh.e_phoff) + ") runs past the end of the " + std::to_string(bytes.size()) +
                      "-byte file: the file is truncated or corrupt");
  if (eh.e_shoff != 0 && eh.e_shnum > 0 &&
      (eh.e_shentsize != sizeof(Elf32_Shdr) ||
       uint64_t(eh.e_shoff) + uint64_t(eh.e_shnum) * eh.e_shentsize > bytes.size()))
    return make_error(name + ": the section header table (" + std::to_string(eh.e_shnum) + " entries at offset " +
                      std::to_string(eh.e_shoff) + ") runs past the end of the " + std::to_string(bytes.size()) +
                      "-byte file: the file is truncated or corrupt");
  KernelImage img;
  img.path = name;
  img.is_elf = true;
  img.start_pc = uint32_t(eh.e_entry);
  size_t phnum = 0;
  if (elf_getphdrnum(e, &phnum) != 0) return make_error(name + ": unreadable program headers: " + elf_errmsg(-1));
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(e, int(i), &ph))
      return make_error(name + ": program header " + std::to_string(i) + " unreadable");
    if (ph.p_type == PT_TLS) {
      if (ph.p_memsz > 0x10000000)
        return make_error(name + ": program header " + std::to_string(i) + ": the thread-local storage segment of " +
                          hex(ph.p_memsz) + " bytes is larger than a device could hold per hart");
      img.tls_bytes = uint32_t(ph.p_memsz);
      continue;
    }
    if (ph.p_type != PT_LOAD || ph.p_memsz == 0) continue;
    std::string where =
        name + ": program header " + std::to_string(i) + ": segment " + hex(ph.p_vaddr) + "+" + hex(ph.p_memsz);
    if (ph.p_filesz > ph.p_memsz) return make_error(where + " has more file bytes than memory bytes");
    if (ph.p_offset + ph.p_filesz > bytes.size() || ph.p_offset + ph.p_filesz < ph.p_offset)
      return make_error(where + " runs past the end of the file");
    if (auto why = check_range(ph.p_vaddr, ph.p_memsz)) return make_error(where + " " + *why);
    for (const ImageSegment& s : img.segments)
      if (ph.p_vaddr < uint64_t(s.vaddr) + s.mem_size && s.vaddr < ph.p_vaddr + ph.p_memsz)
        return make_error(where + " overlaps the segment at " + hex(s.vaddr));
    ImageSegment seg;
    seg.vaddr = uint32_t(ph.p_vaddr);
    seg.mem_size = uint32_t(ph.p_memsz);
    seg.bytes.assign(bytes.begin() + ptrdiff_t(ph.p_offset), bytes.begin() + ptrdiff_t(ph.p_offset + ph.p_filesz));
    lo = std::min<uint64_t>(lo, ph.p_vaddr);
    hi = std::max<uint64_t>(hi, ph.p_vaddr + ph.p_memsz);
    img.segments.push_back(std::move(seg));
  }
  if (img.segments.empty()) return make_error(name + ": ELF has no loadable segments");
  img.min_vma = uint32_t(lo);
  img.max_vma = uint32_t(hi);
  if (img.start_pc < lo || img.start_pc >= hi)
    return make_error(name + ": entry point " + hex(img.start_pc) + " is outside the loaded segments");

  // Symbols: main (legacy launches) and __vx_launch (launch defaults).
  Elf_Scn* scn = nullptr;
  std::optional<uint32_t> desc_addr;
  while ((scn = elf_nextscn(e, scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    size_t count = sh.sh_size / sh.sh_entsize;
    for (size_t k = 0; k < count; ++k) {
      GElf_Sym sym;
      if (!gelf_getsym(data, int(k), &sym)) continue;
      const char* sname = elf_strptr(e, sh.sh_link, sym.st_name);
      if (!sname) continue;
      if (std::strcmp(sname, "main") == 0 && GELF_ST_TYPE(sym.st_info) == STT_FUNC)
        img.main_addr = uint32_t(sym.st_value);
      if (std::strcmp(sname, "__vx_launch") == 0) desc_addr = uint32_t(sym.st_value);
      if (std::strcmp(sname, "__tbss_size") == 0) img.tls_stride = uint32_t(sym.st_value);
      if (std::strcmp(sname, "_end") == 0) img.end_symbol = uint32_t(sym.st_value);
    }
  }
  if (desc_addr) {
    uint32_t words[11];  // magic, version, entry, arg, grid[3], block[3], lmem
    bool found = false;
    for (const ImageSegment& s : img.segments) {
      if (*desc_addr >= s.vaddr && uint64_t(*desc_addr) + sizeof words <= uint64_t(s.vaddr) + s.bytes.size()) {
        std::memcpy(words, s.bytes.data() + (*desc_addr - s.vaddr), sizeof words);
        found = true;
      }
    }
    if (!found) return make_error(name + ": __vx_launch at " + hex(*desc_addr) + " is not inside initialized data");
    if (words[0] != LaunchDescriptor::kMagic)
      return make_error(name + ": __vx_launch has a bad magic number " + hex(words[0]) + " (expected 0x4e4c5856)");
    if (words[1] != 1)
      return make_error(name + ": __vx_launch version " + std::to_string(words[1]) + " is not supported (expected 1)");
    LaunchDescriptor d;
    d.entry = words[2];
    d.arg = words[3];
    d.grid = {words[4], words[5], words[6]};
    d.block = {words[7], words[8], words[9]};
    d.lmem = words[10];
    img.launch = d;
  }
  return img;
}

// The optional Vortex 3.0 footer at the end of a .vxbin, after the loadable bytes:
//   string blob (the names), N entries of 16 bytes {u32 name offset in the blob, u16 name length,
//   u16 padding, u64 pc}, u32 N, the 8 bytes "VXSYMTAB". All little-endian.
// Returns the footer's size (0: none) or an error naming what does not fit.
Result<size_t> parse_symtab(std::span<const uint8_t> bytes, const std::string& name, uint64_t lo, uint64_t hi,
                            KernelImage& img) {
  static constexpr char kMagic[8] = {'V', 'X', 'S', 'Y', 'M', 'T', 'A', 'B'};
  if (bytes.size() < 16 + 12 || std::memcmp(bytes.data() + bytes.size() - 8, kMagic, 8) != 0) return size_t(0);
  const std::string where = name + ": VXSYMTAB footer: ";
  uint32_t n = 0;
  std::memcpy(&n, bytes.data() + bytes.size() - 12, 4);
  const uint64_t entries_size = uint64_t(n) * 16;
  if (16 + 12 + entries_size > bytes.size())
    return make_error(where + std::to_string(n) + " entries of 16 bytes do not fit in the " +
                      std::to_string(bytes.size()) + "-byte file");
  const size_t entries_at = bytes.size() - 12 - size_t(entries_size);
  uint64_t blob = 0;
  struct Raw {
    uint32_t off;
    uint16_t len;
    uint64_t pc;
  };
  std::vector<Raw> raws;
  for (uint32_t i = 0; i < n; ++i) {
    const uint8_t* e = bytes.data() + entries_at + size_t(i) * 16;
    Raw r;
    std::memcpy(&r.off, e, 4);
    std::memcpy(&r.len, e + 4, 2);
    std::memcpy(&r.pc, e + 8, 8);
    blob = std::max<uint64_t>(blob, uint64_t(r.off) + r.len);
    raws.push_back(r);
  }
  if (16 + blob > entries_at)
    return make_error(where + "the names need a " + std::to_string(blob) + "-byte string blob, but only " +
                      std::to_string(entries_at - 16) + " bytes precede the entries");
  const size_t blob_at = entries_at - size_t(blob);
  for (uint32_t i = 0; i < n; ++i) {
    const Raw& r = raws[i];
    std::string ename(reinterpret_cast<const char*>(bytes.data() + blob_at + r.off), r.len);
    while (!ename.empty() && ename.back() == '\0') ename.pop_back();
    const std::string at = where + "entry " + std::to_string(i) + " (\"" + ename + "\"): ";
    if (ename.empty()) return make_error(at + "the name is empty");
    if (r.pc < lo || r.pc >= hi)
      return make_error(at + "pc " + hex(r.pc) + " is outside the image " + hex(lo) + ".." + hex(hi));
    if (r.pc & 3) return make_error(at + "pc " + hex(r.pc) + " is not word aligned");
    img.entries.push_back(KernelEntry{std::move(ename), uint32_t(r.pc)});
  }
  img.has_symtab = true;
  return bytes.size() - blob_at;
}

Result<KernelImage> parse_vxbin(std::span<const uint8_t> bytes, const std::string& name) {
  if (bytes.size() < 16)
    return make_error(name + ": a .vxbin needs a 16-byte header (min vma, max vma), the file has " +
                      std::to_string(bytes.size()) + " bytes");
  uint64_t lo, hi;
  std::memcpy(&lo, bytes.data(), 8);
  std::memcpy(&hi, bytes.data() + 8, 8);
  if (hi <= lo) return make_error(name + ": .vxbin max vma " + hex(hi) + " is not above min vma " + hex(lo));
  if (auto why = check_range(lo, hi - lo))
    return make_error(name + ": .vxbin range " + hex(lo) + ".." + hex(hi) + " " + *why);
  KernelImage img;
  auto footer = parse_symtab(bytes, name, lo, hi, img);
  if (!footer) return footer.error();
  uint64_t raw = bytes.size() - 16 - *footer;
  if (raw > hi - lo)
    return make_error(name + ": .vxbin holds " + std::to_string(raw) + " bytes but its range " + hex(lo) + ".." +
                      hex(hi) + " has room for " + std::to_string(hi - lo));
  img.path = name;
  img.start_pc = uint32_t(lo);
  img.min_vma = uint32_t(lo);
  img.max_vma = uint32_t(hi);
  ImageSegment seg;
  seg.vaddr = uint32_t(lo);
  seg.mem_size = uint32_t(hi - lo);
  seg.bytes.assign(bytes.begin() + 16, bytes.begin() + 16 + ptrdiff_t(raw));
  img.segments.push_back(std::move(seg));
  return img;
}

}  // namespace

Result<KernelImage> parse_kernel_image(std::span<const uint8_t> bytes, const std::string& name) {
  Result<KernelImage> r = (bytes.size() >= 4 && std::memcmp(bytes.data(),
                                                            "\x7f"
                                                            "ELF",
                                                            4) == 0)
                              ? parse_elf(bytes, name)
                              : parse_vxbin(bytes, name);
  if (r) r->hash = fnv1a(bytes);
  return r;
}

std::optional<std::pair<uint32_t, uint64_t>> tls_area(const KernelImage& image, uint32_t harts) {
  const uint64_t stride = image.tls_stride ? *image.tls_stride : (uint64_t(image.tls_bytes) + 3) & ~uint64_t(3);
  if (harts == 0 || (stride == 0 && image.tls_bytes == 0)) return std::nullopt;
  const uint64_t base = image.end_symbol ? *image.end_symbol : image.max_vma;
  const uint64_t end = base + 63 + uint64_t(harts - 1) * stride + std::max<uint64_t>(image.tls_bytes, stride);
  if (end <= image.max_vma) return std::nullopt;
  return std::make_pair(image.max_vma, end);
}

Result<uint32_t> vxbin_entry(const KernelImage& image, const std::string& name) {
  for (const KernelEntry& e : image.entries)
    if (e.name == name) return e.pc;
  if (name == "main" && image.entries.size() <= 1) return image.min_vma;
  std::string names;
  for (const KernelEntry& e : image.entries) names += (names.empty() ? "" : ", ") + e.name;
  if (!image.has_symtab)
    return make_error(image.path + ": no kernel \"" + name +
                      "\": the .vxbin has no VXSYMTAB footer, so its only kernel is \"main\" (its min vma)");
  return make_error(image.path + ": no kernel \"" + name +
                    "\" in its VXSYMTAB footer (it names: " + (names.empty() ? "none" : names) + ")");
}

Result<KernelImage> load_kernel_image(const std::string& path) {
  auto bytes = read_input_file(path, kMaxKernelImageBytes);
  if (!bytes) return make_error("the kernel image " + bytes.error().message);
  if (bytes->empty()) return make_error(path + ": the kernel image is empty");
  return parse_kernel_image(*bytes, path);
}

namespace {

// The byte at addr: a segment's file byte, zero in BSS and outside every segment.
uint8_t loadable_byte_at(const KernelImage& img, uint32_t addr) {
  for (const ImageSegment& s : img.segments)
    if (addr >= s.vaddr && addr - s.vaddr < s.bytes.size()) return s.bytes[addr - s.vaddr];
  return 0;
}

}  // namespace

std::optional<uint32_t> first_loadable_difference(const KernelImage& a, const KernelImage& b) {
  // Every byte either image holds from its file is compared; everything else is zero on both sides.
  std::vector<std::pair<uint32_t, uint64_t>> ranges;
  for (const KernelImage* img : {&a, &b})
    for (const ImageSegment& s : img->segments) ranges.emplace_back(s.vaddr, uint64_t(s.vaddr) + s.bytes.size());
  std::sort(ranges.begin(), ranges.end());
  for (const auto& [lo, hi] : ranges)
    for (uint64_t addr = lo; addr < hi; ++addr)
      if (loadable_byte_at(a, uint32_t(addr)) != loadable_byte_at(b, uint32_t(addr))) return uint32_t(addr);
  return std::nullopt;
}

std::optional<std::string> adopt_tls_beside(KernelImage& image) {
  if (image.is_elf || image.path.size() < 6 || image.path.compare(image.path.size() - 6, 6, ".vxbin") != 0)
    return std::nullopt;
  const std::string beside = image.path.substr(0, image.path.size() - 6) + ".elf";
  auto elf = load_kernel_image(beside);
  if (!elf || !elf->is_elf || first_loadable_difference(image, *elf)) return std::nullopt;
  image.tls_bytes = elf->tls_bytes;
  image.tls_stride = elf->tls_stride;
  image.end_symbol = elf->end_symbol;
  if (!image.tls_bytes) return std::nullopt;
  return "thread-local storage of " + image.path + " from " + beside + " beside it (their loadable bytes match)";
}

}  // namespace vx
