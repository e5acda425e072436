// The session's trap table: the user's breakpoints and watchpoints (ids, addresses, enabling, hit
// counts) and the EBREAKs planted in device memory with the words they replaced. Its own state,
// reached by the session's other jobs only through these functions (docs/architecture.md, "The
// session by job").
#pragma once

#include <map>
#include <optional>
#include <set>
#include <span>
#include <vector>
#include "device/driver.hpp"
#include "engine/session.hpp"

namespace vx::engine {

constexpr uint32_t kEbreak = 0x00100073;

class TrapTable {
 public:
  explicit TrapTable(Driver& dev) : dev_(dev) {}

  // Whether planting writes the EBREAK into device memory now (the re-launch runner), or the runner
  // writes it itself when it next runs the warps (live: through the Debug Module).
  void set_plants_in_memory(bool on) { in_memory_ = on; }

  // --- The user's breakpoints ---------------------------------------------------------------
  // `defer`: an address not mapped yet is kept and planted once it is (plant_pending).
  Result<int> add_breakpoint(uint32_t addr, bool defer);
  Result<void> remove_breakpoint(int id);
  Result<void> enable_breakpoint(int id, bool enabled);
  std::vector<Breakpoint> breakpoints() const;
  // An enabled breakpoint is at addr.
  bool wanted(uint32_t addr) const;
  std::set<uint32_t> wanted_addresses() const;
  // The enabled breakpoints at any of `pcs`; `count`: each one's hit count goes up.
  std::vector<int> hit_at(const std::set<uint32_t>& pcs, bool count);
  // Breakpoints set before the memory they name was mapped go in once it is: before a launch
  // starts, and before any forward run from a stop (a move in time restored the memory).
  void plant_pending();

  // --- Planted words --------------------------------------------------------------------------
  Result<void> plant(uint32_t addr);
  void unplant(uint32_t addr);
  bool planted_at(uint32_t addr) const { return planted_.count(addr) != 0; }
  // The word a planted EBREAK replaced.
  std::optional<uint32_t> original(uint32_t addr) const;
  // A planted word lies in [addr, end).
  bool overlaps_planted(uint32_t addr, uint64_t end) const;
  // The host rewrote [addr, addr + n): breakpoints there take the new words as their originals.
  void replant(uint32_t addr, uint64_t n);
  // Shows planted breakpoints' original words in bytes read from [addr, addr + bytes.size()).
  void unplant_view(uint32_t addr, std::span<uint8_t> bytes) const;
  // A runner that plants by itself (live) says what is planted now.
  void set_planted(std::map<uint32_t, uint32_t> planted) { planted_ = std::move(planted); }

  // Seeks and traces run with every breakpoint taken out of memory.
  struct Suspended {
    std::map<uint32_t, uint32_t> words;
  };
  Suspended suspend();
  void restore(Suspended& s);

  // --- Watchpoints ----------------------------------------------------------------------------
  Result<int> add_watchpoint(const WatchSpec& spec);
  Result<void> remove_watchpoint(int id);
  Result<void> enable_watchpoint(int id, bool enabled);
  bool watching() const;
  // Sets the device's watch ranges: the enabled watchpoints (`on`), or none.
  Result<void> sync_watchpoints(bool on);
  std::vector<WatchEvent> take_watch_events();

 private:
  Driver& dev_;
  bool in_memory_ = true;
  std::map<int, Breakpoint> bps_;
  int next_bp_ = 1;
  std::map<uint32_t, uint32_t> planted_;               // address -> original word
  std::map<int, std::pair<WatchSpec, bool>> watches_;  // id -> (spec, enabled)
  int next_watch_ = 1;
};

}  // namespace vx::engine
