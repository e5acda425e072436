// Sparse paged 32-bit device memory with per-page mapping, dirty and code flags.
//
// Pages are materialized on first write; a mapped page never written reads as
// zero. Dirty tracking is what checkpoints use to save only what changed; the
// code flag lets the machine drop decoded instructions when code is rewritten
// (a debugger planting EBREAK, a loader reusing a page).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "device/config.hpp"

namespace vx {

class Memory {
 public:
  static constexpr uint32_t kPageBits = 12;
  static constexpr uint32_t kPageSize = 1u << kPageBits;
  static constexpr uint32_t kNumPages = 1u << (32 - kPageBits);

  Memory();
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  // Page-granular: the range is widened to whole pages.
  void map(uint32_t addr, uint64_t size);
  void unmap(uint32_t addr, uint64_t size);
  bool is_mapped(uint32_t addr, uint64_t size) const;

  // Core accesses. Return false on an unmapped address (the caller raises the
  // device exception). Alignment is the caller's business.
  template <class T>
  bool load(uint32_t addr, T* out) const {
    if (addr < memmap::kIoBase) return false;
    uint32_t page = addr >> kPageBits;
    uint8_t f = flags_of(page);
    if (!(f & kMapped)) return false;
    const uint8_t* p = page_ptr(page);
    if (!p) {
      *out = 0;
      return true;
    }
    std::memcpy(out, p + (addr & (kPageSize - 1)), sizeof(T));
    return true;
  }
  template <class T>
  bool store(uint32_t addr, T v) {
    uint8_t* p = writable(addr);
    if (!p) return false;
    std::memcpy(p, &v, sizeof(T));
    return true;
  }
  // Pointer to the byte at addr for a write of at most the rest of the page,
  // marking the page dirty; nullptr when unmapped.
  uint8_t* writable(uint32_t addr) {
    const uint32_t page = addr >> kPageBits;
    const Tlb& t = write_tlb_[page & (kTlbSize - 1)];
    if (t.page == page) return t.base + (addr & (kPageSize - 1));
    return writable_slow(addr);
  }
  // writable() when the page needs nothing before a write (already dirty, materialized, no fetched
  // code: its translation is cached); nullptr otherwise, without marking anything.
  uint8_t* writable_cached(uint32_t addr) {
    const uint32_t page = addr >> kPageBits;
    const Tlb& t = write_tlb_[page & (kTlbSize - 1)];
    return t.page == page ? t.base + (addr & (kPageSize - 1)) : nullptr;
  }
  // Pointer to the byte at addr for a read of at most the rest of the page;
  // nullptr when unmapped. Unwritten pages read from a shared zero page.
  const uint8_t* readable(uint32_t addr) const {
    const uint32_t page = addr >> kPageBits;
    const Tlb& t = read_tlb_[page & (kTlbSize - 1)];
    if (t.page == page) return t.base + (addr & (kPageSize - 1));
    return readable_slow(addr);
  }
  // Instruction fetch: remembers the word as code, so a later write to it
  // bumps code_generation(). Writes to other words of the page (data sharing a
  // page with code) do not.
  bool fetch(uint32_t addr, uint32_t* word) {
    if (addr < memmap::kIoBase || (addr & 3)) return false;
    uint32_t page = addr >> kPageBits;
    if (!(flags_of(page) & kMapped)) return false;
    flags_ref(page) |= kCode;
    forget_write(page);  // a write to this page must now look for fetched words
    auto& bits = fetched_[page];
    uint32_t w = (addr & (kPageSize - 1)) >> 2;
    bits[w >> 6] |= uint64_t(1) << (w & 63);
    return load(addr, word);
  }

  // Host and command-processor access over any span; false if any byte is unmapped
  // (nothing is written in that case).
  bool read(uint32_t addr, void* dst, uint64_t n) const;
  bool write(uint32_t addr, const void* src, uint64_t n);

  // Bumped by every write to a page that instructions were fetched from.
  uint64_t code_generation() const { return code_generation_; }

  // Dirty pages since the last clear_dirty(), in the order first written.
  const std::vector<uint32_t>& dirty_pages() const { return dirty_list_; }
  void clear_dirty();
  // Contents of one page (zeros if never materialized); nullptr when unmapped.
  const uint8_t* page_data(uint32_t page) const { return page_ptr(page); }
  bool page_mapped(uint32_t page) const { return flags_of(page) & kMapped; }
  // Pages that are mapped, ascending.
  std::vector<uint32_t> mapped_pages() const;

  // Translation caches of the core data path, direct-mapped by page number: a read entry names a mapped
  // page and where its bytes are (the zero page until materialized); a write entry a mapped page that
  // is already dirty and materialized and holds no fetched code, so a write through it needs nothing
  // else. Every change to a page's flags or storage drops its entries (forget, forget_write).
  struct Tlb {
    uint32_t page = ~0u;  // never a page number
    uint8_t* base = nullptr;
  };
  static constexpr uint32_t kTlbSize = 64;
  // The read entries, for the block translator's loads (device/jit.cpp), which probe them as
  // readable() does and take readable()'s path on a miss.
  const Tlb* read_tlb_entries() const { return read_tlb_.data(); }

 private:
  static constexpr uint8_t kMapped = 1, kDirty = 2, kCode = 4;
  static_assert(memmap::kIoBase <= kPageSize);  // the faulting addresses below kIoBase are all in page 0
  const uint8_t* readable_slow(uint32_t addr) const;
  uint8_t* writable_slow(uint32_t addr);
  void forget_write(uint32_t page) {
    if (write_tlb_[page & (kTlbSize - 1)].page == page) write_tlb_[page & (kTlbSize - 1)] = Tlb{};
  }
  void forget(uint32_t page) {
    forget_write(page);
    if (read_tlb_[page & (kTlbSize - 1)].page == page) read_tlb_[page & (kTlbSize - 1)] = Tlb{};
  }
  mutable std::array<Tlb, kTlbSize> read_tlb_{};
  std::array<Tlb, kTlbSize> write_tlb_{};
  static const uint8_t kZeroPage[kPageSize];
  void mark_dirty(uint32_t page);
  // A write of `len` bytes at addr into a page holding code.
  void note_code_write(uint32_t addr, uint32_t len);
  uint8_t* materialize(uint32_t page);

  // Two levels, so a new memory costs a few kilobytes, not a flag byte and a pointer for each of the
  // 2^20 pages: a region of 1024 pages exists once one of its pages was mapped.
  static constexpr uint32_t kRegionBits = 10;
  static constexpr uint32_t kRegionPages = 1u << kRegionBits;
  struct Region {
    std::array<uint8_t, kRegionPages> flags{};
    std::array<std::unique_ptr<uint8_t[]>, kRegionPages> pages;
  };
  uint8_t flags_of(uint32_t page) const {
    const Region* r = regions_[page >> kRegionBits].get();
    return r ? r->flags[page & (kRegionPages - 1)] : 0;
  }
  const uint8_t* page_ptr(uint32_t page) const {
    const Region* r = regions_[page >> kRegionBits].get();
    return r ? r->pages[page & (kRegionPages - 1)].get() : nullptr;
  }
  Region& region(uint32_t page);  // made when missing
  uint8_t& flags_ref(uint32_t page) { return region(page).flags[page & (kRegionPages - 1)]; }
  std::vector<std::unique_ptr<Region>> regions_;
  std::vector<uint32_t> dirty_list_;
  std::unordered_map<uint32_t, std::array<uint64_t, kPageSize / 4 / 64>> fetched_;  // code pages: words fetched
  uint64_t code_generation_ = 0;
};

}  // namespace vx
