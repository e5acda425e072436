#include "device/memory.hpp"

#include <algorithm>

namespace vx {

const uint8_t Memory::kZeroPage[Memory::kPageSize] = {};

Memory::Memory() : regions_(kNumPages >> kRegionBits) {}

Memory::Region& Memory::region(uint32_t page) {
  std::unique_ptr<Region>& r = regions_[page >> kRegionBits];
  if (!r) r = std::make_unique<Region>();
  return *r;
}

void Memory::map(uint32_t addr, uint64_t size) {
  if (size == 0) return;
  uint64_t first = addr >> kPageBits;
  uint64_t last = (uint64_t(addr) + size - 1) >> kPageBits;
  for (uint64_t p = first; p <= last && p < kNumPages; ++p) flags_ref(uint32_t(p)) |= kMapped;
}

void Memory::unmap(uint32_t addr, uint64_t size) {
  if (size == 0) return;
  uint64_t first = addr >> kPageBits;
  uint64_t last = (uint64_t(addr) + size - 1) >> kPageBits;
  for (uint64_t p = first; p <= last && p < kNumPages; ++p) {
    Region* r = regions_[p >> kRegionBits].get();
    if (!r) continue;  // never mapped
    const uint32_t i = uint32_t(p) & (kRegionPages - 1);
    if (r->flags[i] & kCode) ++code_generation_;
    r->flags[i] &= uint8_t(~(kMapped | kCode));
    fetched_.erase(uint32_t(p));
    r->pages[i].reset();
    forget(uint32_t(p));
  }
}

bool Memory::is_mapped(uint32_t addr, uint64_t size) const {
  if (size == 0) return true;
  if (addr < memmap::kIoBase) return false;
  uint64_t end = uint64_t(addr) + size - 1;
  if (end > 0xffffffffull) return false;
  for (uint64_t p = addr >> kPageBits; p <= (end >> kPageBits); ++p)
    if (!(flags_of(uint32_t(p)) & kMapped)) return false;
  return true;
}

bool Memory::read(uint32_t addr, void* dst, uint64_t n) const {
  if (!is_mapped(addr, n)) return false;
  auto* out = static_cast<uint8_t*>(dst);
  uint64_t a = addr;
  while (n > 0) {
    uint32_t page = uint32_t(a >> kPageBits);
    uint32_t off = uint32_t(a & (kPageSize - 1));
    uint64_t chunk = std::min<uint64_t>(n, kPageSize - off);
    if (const uint8_t* p = page_ptr(page))
      std::memcpy(out, p + off, chunk);
    else
      std::memset(out, 0, chunk);
    out += chunk, a += chunk, n -= chunk;
  }
  return true;
}

bool Memory::write(uint32_t addr, const void* src, uint64_t n) {
  if (!is_mapped(addr, n)) return false;
  auto* in = static_cast<const uint8_t*>(src);
  uint64_t a = addr;
  while (n > 0) {
    uint32_t off = uint32_t(a & (kPageSize - 1));
    uint64_t chunk = std::min<uint64_t>(n, kPageSize - off);
    uint32_t page = uint32_t(a >> kPageBits);
    if (!(flags_of(page) & kDirty)) mark_dirty(page);
    if (flags_of(page) & kCode) note_code_write(uint32_t(a), uint32_t(chunk));
    uint8_t* p = const_cast<uint8_t*>(page_ptr(page));
    if (!p) p = materialize(page);
    std::memcpy(p + off, in, chunk);
    in += chunk, a += chunk, n -= chunk;
  }
  return true;
}

void Memory::clear_dirty() {
  for (uint32_t p : dirty_list_) flags_ref(p) &= uint8_t(~kDirty);
  dirty_list_.clear();
  write_tlb_.fill(Tlb{});  // the next write to each page must mark it dirty again
}

const uint8_t* Memory::readable_slow(uint32_t addr) const {
  if (addr < memmap::kIoBase) return nullptr;
  const uint32_t page = addr >> kPageBits;
  if (!(flags_of(page) & kMapped)) return nullptr;
  const uint8_t* p = page_ptr(page);
  if (!p) p = kZeroPage;
  // Never page 0: its first kIoBase bytes fault, and the cache's fast path does not test for them.
  if (page != 0) read_tlb_[page & (kTlbSize - 1)] = Tlb{page, const_cast<uint8_t*>(p)};  // only ever read through
  return p + (addr & (kPageSize - 1));
}

uint8_t* Memory::writable_slow(uint32_t addr) {
  if (addr < memmap::kIoBase) return nullptr;
  const uint32_t page = addr >> kPageBits;
  const uint8_t f = flags_of(page);
  if (!(f & kMapped)) return nullptr;
  if (!(f & kDirty)) mark_dirty(page);
  if (f & kCode) note_code_write(addr, 4);
  uint8_t* p = const_cast<uint8_t*>(page_ptr(page));
  if (!p) p = materialize(page);
  if (!(f & kCode) && page != 0) write_tlb_[page & (kTlbSize - 1)] = Tlb{page, p};  // page 0: as above
  return p + (addr & (kPageSize - 1));
}

std::vector<uint32_t> Memory::mapped_pages() const {
  std::vector<uint32_t> out;
  for (uint32_t r = 0; r < regions_.size(); ++r)
    if (const Region* reg = regions_[r].get())
      for (uint32_t i = 0; i < kRegionPages; ++i)
        if (reg->flags[i] & kMapped) out.push_back((r << kRegionBits) | i);
  return out;
}

void Memory::mark_dirty(uint32_t page) {
  flags_ref(page) |= kDirty;
  dirty_list_.push_back(page);
}

void Memory::note_code_write(uint32_t addr, uint32_t len) {
  auto it = fetched_.find(addr >> kPageBits);
  if (it == fetched_.end()) return;
  uint32_t first = (addr & (kPageSize - 1)) >> 2;
  uint32_t last = std::min<uint32_t>(kPageSize - 1, (addr & (kPageSize - 1)) + len - 1) >> 2;
  for (uint32_t w = first; w <= last; ++w)
    if (it->second[w >> 6] & (uint64_t(1) << (w & 63))) {
      ++code_generation_;
      return;
    }
}

uint8_t* Memory::materialize(uint32_t page) {
  std::unique_ptr<uint8_t[]>& slot = region(page).pages[page & (kRegionPages - 1)];
  slot = std::make_unique<uint8_t[]>(kPageSize);  // value-initialized: zeros
  forget(page);                                   // a read entry may point at the zero page
  return slot.get();
}

}  // namespace vx
