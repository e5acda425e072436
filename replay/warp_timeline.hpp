// The recording as a picture (docs/view.md): each warp slot's state over each launch, drawn from
// the timeline samples the recording keeps (checkpoint/timeline.hpp) and the warps every checkpoint
// holds, never by replaying. Between two samples a warp was running (with so many lanes, or inside
// a split), waiting at a barrier, waiting to spawn, or ready but not scheduled; after its last
// sample it is done.
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include "base/result.hpp"
#include "checkpoint/store.hpp"

namespace vx::replay {

enum class WarpActivity : uint8_t { Running, Diverged, Barrier, Spawn, Ready };
const char* activity_name(WarpActivity a);

struct WarpInterval {
  uint64_t from = 0, to = 0;  // the launch's warp instructions
  WarpActivity activity = WarpActivity::Running;
  uint32_t lanes = 0;  // active lanes at its start
  uint32_t cta = 0;    // the CTA the warp belongs to (linear index)
};

struct WarpRow {
  uint32_t core = 0, slot = 0;
  std::vector<WarpInterval> intervals;
};

// A line the launch printed, known to be out by `by` (the first checkpoint or launch end that holds
// it: the recording keeps the console at those points, not per instruction).
struct ConsoleLine {
  uint64_t by = 0;
  std::string text;
};

struct LaunchTimeline {
  uint32_t launch = 0;
  uint64_t end = 0;                   // the last point the recording knows of
  bool ended = false;                 // the launch's end was recorded (end is its instruction count)
  size_t samples = 0;                 // points drawn from
  std::vector<uint64_t> checkpoints;  // every checkpoint of the launch (automatic ones included)
  std::vector<WarpRow> rows;          // by (core, slot)
  std::vector<ConsoleLine> console;   // in the order printed
};

// Every launch of the recording in `store`, in order.
Result<std::vector<LaunchTimeline>> read_warp_timeline(checkpoint::Store& store);

}  // namespace vx::replay
