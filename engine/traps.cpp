#include "engine/traps.hpp"

#include <algorithm>
#include "base/hex.hpp"

namespace vx::engine {

namespace {

Result<void> write_word(Driver& dev, uint32_t addr, uint32_t word) {
  return dev.copy_to_device(addr, {reinterpret_cast<const uint8_t*>(&word), 4});
}

Result<uint32_t> read_word(Driver& dev, uint32_t addr) {
  uint32_t word = 0;
  if (auto r = dev.copy_from_device(addr, {reinterpret_cast<uint8_t*>(&word), 4}); !r) return r.error();
  return word;
}

std::string no_number(const char* what, int id) { return std::string("no ") + what + " number " + std::to_string(id); }

}  // namespace

// --- The user's breakpoints -------------------------------------------------------------------
Result<int> TrapTable::add_breakpoint(uint32_t addr, bool defer) {
  if (addr & 3) return make_error("a breakpoint address must be 4-byte aligned (" + hex32(addr) + ")");
  if (auto r = plant(addr); !r && !defer) return r.error();
  const int id = next_bp_++;
  bps_[id] = Breakpoint{id, addr, true, 0};
  return id;
}

Result<void> TrapTable::remove_breakpoint(int id) {
  auto it = bps_.find(id);
  if (it == bps_.end()) return make_error(no_number("breakpoint", id));
  const uint32_t addr = it->second.addr;
  bps_.erase(it);
  if (!wanted(addr)) unplant(addr);
  return {};
}

Result<void> TrapTable::enable_breakpoint(int id, bool enabled) {
  auto it = bps_.find(id);
  if (it == bps_.end()) return make_error(no_number("breakpoint", id));
  it->second.enabled = enabled;
  if (enabled) return plant(it->second.addr);
  if (!wanted(it->second.addr)) unplant(it->second.addr);
  return {};
}

std::vector<Breakpoint> TrapTable::breakpoints() const {
  std::vector<Breakpoint> out;
  for (const auto& [id, b] : bps_) out.push_back(b);
  return out;
}

bool TrapTable::wanted(uint32_t addr) const {
  return std::any_of(bps_.begin(), bps_.end(),
                     [&](const auto& b) { return b.second.addr == addr && b.second.enabled; });
}

std::set<uint32_t> TrapTable::wanted_addresses() const {
  std::set<uint32_t> out;
  for (const auto& [id, b] : bps_)
    if (b.enabled) out.insert(b.addr);
  return out;
}

std::vector<int> TrapTable::hit_at(const std::set<uint32_t>& pcs, bool count) {
  std::vector<int> ids;
  for (auto& [id, b] : bps_)
    if (b.enabled && pcs.count(b.addr)) {
      ids.push_back(id);
      if (count) ++b.hits;
    }
  return ids;
}

void TrapTable::plant_pending() {
  for (const auto& [id, b] : bps_)
    if (b.enabled && !planted_.count(b.addr)) (void)plant(b.addr);
}

// --- Planted words ----------------------------------------------------------------------------
Result<void> TrapTable::plant(uint32_t addr) {
  if (!in_memory_ || planted_.count(addr)) return {};
  auto word = read_word(dev_, addr);
  if (!word) return make_error("cannot plant a breakpoint at " + hex32(addr) + ": not mapped device memory");
  if (auto r = write_word(dev_, addr, kEbreak); !r) return r.error();
  planted_[addr] = *word;
  return {};
}

void TrapTable::unplant(uint32_t addr) {
  if (!in_memory_) return;
  auto it = planted_.find(addr);
  if (it == planted_.end()) return;
  (void)write_word(dev_, addr, it->second);
  planted_.erase(it);
}

std::optional<uint32_t> TrapTable::original(uint32_t addr) const {
  auto it = planted_.find(addr);
  if (it == planted_.end()) return std::nullopt;
  return it->second;
}

bool TrapTable::overlaps_planted(uint32_t addr, uint64_t end) const {
  auto it = planted_.lower_bound(addr & ~3u);
  return it != planted_.end() && it->first < end;
}

void TrapTable::replant(uint32_t addr, uint64_t n) {
  for (auto it = planted_.lower_bound(addr & ~3u); it != planted_.end() && it->first < addr + n; ++it) {
    auto word = read_word(dev_, it->first);
    if (!word || *word == kEbreak) continue;
    it->second = *word;
    (void)write_word(dev_, it->first, kEbreak);
  }
}

void TrapTable::unplant_view(uint32_t addr, std::span<uint8_t> bytes) const {
  const uint64_t end = uint64_t(addr) + bytes.size();
  for (auto it = planted_.lower_bound(addr >= 3 ? addr - 3 : 0); it != planted_.end() && it->first < end; ++it)
    for (uint32_t i = 0; i < 4; ++i) {
      const uint64_t a = uint64_t(it->first) + i;
      if (a >= addr && a < end) bytes[size_t(a - addr)] = uint8_t(it->second >> (8 * i));
    }
}

TrapTable::Suspended TrapTable::suspend() {
  Suspended s;
  s.words = planted_;
  for (const auto& [addr, word] : planted_) (void)write_word(dev_, addr, word);
  planted_.clear();
  return s;
}

void TrapTable::restore(Suspended& s) {
  for (const auto& [addr, word] : s.words) {
    // What is there now is what the EBREAK covers: a run while suspended may have replaced the code
    // (a seek that replays the host's copies of another kernel image between launches).
    auto now = read_word(dev_, addr);
    (void)write_word(dev_, addr, kEbreak);
    planted_[addr] = now && *now != kEbreak ? *now : word;
  }
  s.words.clear();
}

// --- Watchpoints ------------------------------------------------------------------------------
Result<int> TrapTable::add_watchpoint(const WatchSpec& spec) {
  if (spec.len == 0 || spec.len > 4096) return make_error("a watchpoint covers 1 to 4096 bytes");
  if (!(spec.kind & (kWatchRead | kWatchWrite))) return make_error("a watchpoint watches reads, writes or both");
  const int id = next_watch_++;
  watches_[id] = {spec, true};
  if (auto r = sync_watchpoints(true); !r) {
    watches_.erase(id);
    return r.error();
  }
  return id;
}

Result<void> TrapTable::remove_watchpoint(int id) {
  if (!watches_.erase(id)) return make_error(no_number("watchpoint", id));
  return sync_watchpoints(true);
}

Result<void> TrapTable::enable_watchpoint(int id, bool enabled) {
  auto it = watches_.find(id);
  if (it == watches_.end()) return make_error(no_number("watchpoint", id));
  it->second.second = enabled;
  return sync_watchpoints(true);
}

bool TrapTable::watching() const {
  return std::any_of(watches_.begin(), watches_.end(), [](const auto& w) { return w.second.second; });
}

Result<void> TrapTable::sync_watchpoints(bool on) {
  std::vector<WatchRange> ranges;
  if (on)
    for (const auto& [id, w] : watches_)
      if (w.second)
        ranges.push_back(
            WatchRange{uint32_t(id), w.first.addr, w.first.len, w.first.kind, w.first.local, w.first.core});
  return dev_.set_watchpoints(ranges);
}

std::vector<WatchEvent> TrapTable::take_watch_events() {
  std::vector<WatchEvent> out;
  for (WatchHit& h : dev_.take_watch_hits())
    out.push_back(WatchEvent{int(h.id), WarpId{h.core, h.slot}, h.pc, h.lanes, h.kind, h.addr, std::move(h.old_bytes)});
  return out;
}

}  // namespace vx::engine
