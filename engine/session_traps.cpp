#include "engine/session_impl.hpp"

namespace vx::engine {

// --- Breakpoints ----------------------------------------------------------------------------
bool Session::Impl::wanted(uint32_t addr) const {
  for (const auto& [id, b] : bps)
    if (b.addr == addr && b.enabled) return true;
  return false;
}

Result<void> Session::Impl::plant(uint32_t addr) {
  if (!runner->plants_in_memory()) return {};  // live: written through the DM when the warps are halted
  if (planted.count(addr)) return {};
  uint32_t word = 0;
  if (auto r = dev.copy_from_device(addr, {reinterpret_cast<uint8_t*>(&word), 4}); !r)
    return make_error("cannot plant a breakpoint at " + hex(addr) + ": not mapped device memory");
  uint32_t e = kEbreak;
  if (auto r = dev.copy_to_device(addr, {reinterpret_cast<const uint8_t*>(&e), 4}); !r) return r.error();
  planted[addr] = word;
  return {};
}

void Session::Impl::unplant(uint32_t addr) {
  if (!runner->plants_in_memory()) return;
  auto it = planted.find(addr);
  if (it == planted.end()) return;
  uint32_t w = it->second;
  (void)dev.copy_to_device(addr, {reinterpret_cast<const uint8_t*>(&w), 4});
  planted.erase(it);
}

// The host rewrote [addr, addr + n): breakpoints there take the new words as their originals.
void Session::Impl::replant(uint32_t addr, uint64_t n) {
  for (auto it = planted.lower_bound(addr & ~3u); it != planted.end() && it->first < addr + n; ++it) {
    uint32_t word = 0;
    (void)dev.copy_from_device(it->first, {reinterpret_cast<uint8_t*>(&word), 4});
    if (word == kEbreak) continue;
    it->second = word;
    uint32_t e = kEbreak;
    (void)dev.copy_to_device(it->first, {reinterpret_cast<const uint8_t*>(&e), 4});
  }
}

// Shows planted breakpoints' original words in bytes read from [addr, addr + size).
void Session::Impl::unplant_view(uint32_t addr, std::span<uint8_t> bytes) const {
  uint64_t end = uint64_t(addr) + bytes.size();
  for (auto it = planted.lower_bound(addr >= 3 ? addr - 3 : 0); it != planted.end() && it->first < end; ++it)
    for (uint32_t i = 0; i < 4; ++i) {
      uint64_t a = uint64_t(it->first) + i;
      if (a >= addr && a < end) bytes[size_t(a - addr)] = uint8_t(it->second >> (8 * i));
    }
}

Session::Impl::Suspended Session::Impl::suspend_breakpoints() {
  Suspended s;
  s.words = planted;
  for (const auto& [addr, word] : planted) (void)dev.copy_to_device(addr, {reinterpret_cast<const uint8_t*>(&word), 4});
  planted.clear();
  return s;
}

void Session::Impl::restore_breakpoints(Suspended& s) {
  for (const auto& [addr, word] : s.words) {
    uint32_t e = kEbreak;
    (void)dev.copy_to_device(addr, {reinterpret_cast<const uint8_t*>(&e), 4});
    planted[addr] = word;
  }
  s.words.clear();
}

Result<void> Session::Impl::sync_watchpoints(bool on) {
  std::vector<WatchRange> ranges;
  if (on)
    for (const auto& [id, w] : watches)
      if (w.second)
        ranges.push_back(
            WatchRange{uint32_t(id), w.first.addr, w.first.len, w.first.kind, w.first.local, w.first.core});
  return dev.set_watchpoints(ranges);
}

// --- Stops ----------------------------------------------------------------------------------
// The warps at planted breakpoints (every one is reported by a breakpoint stop).
void Session::Impl::add_hit(StopEvent& ev, uint32_t c, uint32_t w) const {
  for (const WarpHit& h : ev.hits)
    if (h.warp == WarpId{c, w}) return;
  const WarpState& ws = ctx.cores[c].warps[w];
  ev.hits.push_back(WarpHit{{c, w}, ws.pc, ws.tmask});
}

std::vector<WatchEvent> Session::Impl::watch_events() {
  std::vector<WatchEvent> out;
  for (WatchHit& h : dev.take_watch_hits())
    out.push_back(WatchEvent{int(h.id), WarpId{h.core, h.slot}, h.pc, h.lanes, h.kind, h.addr, std::move(h.old_bytes)});
  return out;
}

}  // namespace vx::engine
