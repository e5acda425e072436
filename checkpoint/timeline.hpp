// The recording's timeline (docs/store.md "Timeline", docs/view.md): every active warp's state in
// brief at points of a launch, sampled at record time every few thousand instructions, so a view
// draws each warp's state over time (running and with how many lanes, waiting at a barrier, inside
// a split, done) without replaying anything. Samples ride in checkpoint records (those since the
// previous checkpoint written) and, for what follows the last one, in a timeline host operation
// written when the session ends.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>
#include "base/result.hpp"

namespace vx::checkpoint {

struct WarpSample {
  uint32_t core = 0, slot = 0;
  uint32_t tmask = 0;
  uint8_t wait = 0;   // WarpWait: 0 none, 1 barrier, 2 barrier wait, 3 spawn
  uint8_t depth = 0;  // inside that many splits (saturated at 255)
  uint64_t instret = 0;
  uint32_t cta = 0;
  bool operator==(const WarpSample&) const = default;
};

struct TimelineSample {
  uint32_t launch = 0;
  uint64_t at = 0;                // the launch's warp instructions when it was taken
  std::vector<WarpSample> warps;  // the active warps, by (core, slot)
  std::string console;            // the launch's end (no warp): everything the launch printed
  bool operator==(const TimelineSample&) const = default;
};

// The point of a launch's next sample after one at `last` (0: none yet), for samples every
// `interval` instructions: 8, 16, 32, ... up to the interval, then every interval, so a short
// launch (a host program's small kernels) is drawn from a few points too. UINT64_MAX: interval 0.
uint64_t next_sample_point(uint64_t last, uint64_t interval);

// "VXT2", then a count and per sample its launch, count, warps and console text (a length, then the
// bytes), every integer an unsigned LEB128 varint but a warp's wait and depth (a byte each).
std::vector<uint8_t> encode_timeline(const std::vector<TimelineSample>& samples);
// Refuses bytes that are not such an encoding (truncated, counts past the end, a varint overlong or
// past its field's width), saying where. Also reads the fixed-width "VXT1" of older recordings.
Result<std::vector<TimelineSample>> decode_timeline(std::span<const uint8_t> bytes);

}  // namespace vx::checkpoint
