// The identity of a lane, the one type every front end uses for it (the prompt's focus, the GDB
// server's threads, a stop's lane), gdb's thread ids for lanes, and the one rule for which lane a
// stop is about.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "device/config.hpp"
#include "device/context.hpp"
#include "engine/session.hpp"

namespace vx::debug {

// Hardware coordinates: a lane of warp slot `slot` of core `core`. Stable across passes and moves
// in time: a restored warp lands in its old slot.
struct Lane {
  uint32_t core = 0, slot = 0, lane = 0;
  engine::WarpId warp() const { return engine::WarpId{core, slot}; }
  bool operator==(const Lane&) const = default;
};

// gdb's thread id of a lane: 1 + (core * warps + slot) * threads + lane (never 0 or -1, which gdb
// reserves), and back (nullopt: not a lane of this configuration).
int64_t thread_id(const DeviceConfig& cfg, const Lane& l);
std::optional<Lane> lane_of_thread(const DeviceConfig& cfg, int64_t tid);

// A resident lane: its warp slot holds work, and the lane is a thread of the CTA (a block that is
// not a multiple of the warp width leaves the last warp's upper lanes without one).
bool is_resident(const DeviceContext& ctx, uint32_t threads, const Lane& l);
std::vector<Lane> resident_lanes(const DeviceContext& ctx, uint32_t threads);

// The lane a stop is about (the prompt's focus and the GDB server's stop thread). `preferred` is the
// lane the move was for, when it was for one (a step's lane; the thread gdb resumed for a `finish`);
// a `continue` is for every lane.
//  - a step, or a stop that names a warp (a move in time to a mark): in that warp, `preferred`'s
//    lane when `preferred` is in it and the lane is active, else its lowest active lane;
//  - an exception, an assertion, the watchdog: the faulting lane (or its warp's lowest active lane);
//  - a watchpoint: the first accessing lane of the first watched access;
//  - a breakpoint: `preferred` (the lane the user follows) when its warp hit with that lane active,
//    else `hit_lane` when given (the lane whose condition held), else the first hit warp's lowest
//    active lane;
//  - otherwise (an interrupt): `preferred` when resident, else the first resident lane.
// Whatever the rule picks must be resident at the stop; nullopt when nothing is.
std::optional<Lane> stop_lane(const engine::StopEvent& ev, const DeviceContext& ctx, uint32_t threads,
                              std::optional<Lane> preferred, std::optional<Lane> hit_lane = std::nullopt);

}  // namespace vx::debug
