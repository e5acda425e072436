// Opening a recording (docs/time-travel.md, "Recordings"): what `vxreplay replay` and `vxreplay diff`
// need before they build a session on it: the header checked against this build, the device and run
// options it was recorded with, whether its writer was killed, and the kernel image it kept for
// its symbols, checked against the header's hash.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "checkpoint/records.hpp"
#include "device/config.hpp"
#include "device/image.hpp"

namespace vx::replay {

struct RecordingInfo {
  std::string dir;
  checkpoint::StoreHeader header;
  DeviceConfig config;         // the recorded device shape
  RunOptions options;          // the recorded seed and watchdog
  bool writer_killed = false;  // the recording session did not end cleanly
  // The kernel image kept for symbols (the first), parsed; nullopt when none was kept.
  std::optional<std::string> image_name;
  std::vector<uint8_t> image_bytes;
  std::optional<KernelImage> image;
  // Every image kept, in the order the workload uploaded them (a host program may upload several).
  struct KeptImage {
    std::string name;
    std::vector<uint8_t> bytes;
    KernelImage image;
  };
  std::vector<KeptImage> images;
};

// The kept image a launch ran, given how many images were kept before it started
// (Session::launch_images_recorded) and its entry pc: of those, the latest whose loadable bytes hold
// the entry (a host program may upload images one after another at the same addresses), else the
// latest. nullopt: none was kept before it.
std::optional<size_t> image_of_launch(const RecordingInfo& info, size_t kept_before, uint32_t entry_pc);

// Opens dir read-only and checks it: a store of this format, made with this build's warp scheduler
// version, whose kept image parses and hashes to the header's kernel hash. Errors name what is wrong.
Result<RecordingInfo> inspect_recording(const std::string& dir);

}  // namespace vx::replay
