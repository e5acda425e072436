// The recording as a picture (docs/view.md): each warp slot's state over each launch, drawn from
// the timeline samples the recording keeps (checkpoint/timeline.hpp) and the warps every checkpoint
// holds, never by replaying. Between two samples a warp was running (with so many lanes, or inside
// a split), waiting at a barrier, waiting to spawn, or ready but not scheduled; after its last
// sample it is done. A run that records nothing is drawn the same way from samples it takes as it
// goes (TimelineSampler).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>
#include "base/result.hpp"
#include "checkpoint/store.hpp"
#include "checkpoint/timeline.hpp"
#include "device/driver.hpp"

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

// Every launch of `samples` (any order; the first of one point is kept), with no checkpoint: a
// launch's end sample (no warp) marks it ended; a sample's console text is what its launch printed
// by then.
std::vector<LaunchTimeline> build_warp_timeline(std::vector<checkpoint::TimelineSample> samples);

// The timeline of a run that records nothing (vxreplay run, a diff of two kernel runs), sampled as a
// recording is (checkpoint::next_sample_point), on its axis: the launch's warp instructions. The run
// loop gives wait() at most until_sample() instructions and calls sample() after each Budget event;
// the launch's end (or the stop that ends the run) closes it. The model's schedule does not depend on
// how wait() slices a run, so sampling changes nothing of it. Samples are kept until timeline().
class TimelineSampler {
 public:
  explicit TimelineSampler(uint64_t interval) : interval_(interval) {}
  // Instructions `launch` may run from `at` before its next sample (UINT64_MAX: none).
  uint64_t until_sample(uint32_t launch, uint64_t at) const;
  // Every active warp of `dev` in brief, when a sample of `launch` is due at `at`.
  void sample(const Driver& dev, uint32_t launch, uint64_t at);
  // The launch ended at `at`, having printed `console`.
  void ended(uint32_t launch, uint64_t at, std::string console = {});
  // The run stopped at `at` inside the launch (a device exception): its warps there, what it printed.
  void stopped(const Driver& dev, uint32_t launch, uint64_t at, std::string console = {});
  std::vector<LaunchTimeline> timeline() const { return build_warp_timeline(samples_); }

 private:
  uint64_t next(uint32_t launch) const;  // the point of its next sample
  void take(const Driver& dev, uint32_t launch, uint64_t at, std::string console);
  uint64_t interval_;
  std::map<uint32_t, uint64_t> sampled_;  // launch -> the point of its last sample
  std::vector<checkpoint::TimelineSample> samples_;
};

}  // namespace vx::replay
