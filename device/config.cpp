#include "device/config.hpp"

#include <charconv>
#include <vector>

namespace vx {

std::optional<std::string> DeviceConfig::validate() const {
  auto pow2 = [](uint32_t v) { return v != 0 && (v & (v - 1)) == 0; };
  if (clusters < 1 || clusters > 128) return "clusters must be in 1..128 (got " + std::to_string(clusters) + ")";
  if (cores_per_cluster < 1 || cores_per_cluster > 512)
    return "cores per cluster must be in 1..512 (got " + std::to_string(cores_per_cluster) + ")";
  if (warps < 1 || warps > 32) return "warps per core must be in 1..32 (got " + std::to_string(warps) + ")";
  if (!pow2(threads) || threads > 32)
    return "threads per warp must be a power of two in 1..32 (got " + std::to_string(threads) + ")";
  if (uint64_t(total_harts()) * memmap::kStackPerHart > 256u * 1024 * 1024)
    return "too many harts for the stack region (" + std::to_string(total_harts()) + ")";
  if (local_mem_bytes > 64 * 1024 || local_mem_bytes % 64 != 0)
    return "local memory per core must be a multiple of 64 bytes, at most 64 KiB (got " +
           std::to_string(local_mem_bytes) + ")";
  return std::nullopt;
}

std::string DeviceConfig::to_string() const {
  return std::to_string(clusters) + "x" + std::to_string(cores_per_cluster) + "x" + std::to_string(warps) + "x" +
         std::to_string(threads);
}

std::optional<DeviceConfig> DeviceConfig::parse(const std::string& text, std::string* error) {
  std::vector<uint32_t> parts;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('x', pos);
    if (end == std::string::npos) end = text.size();
    uint32_t v = 0;
    auto [p, ec] = std::from_chars(text.data() + pos, text.data() + end, v);
    if (ec != std::errc() || p != text.data() + end || end == pos) {
      if (error)
        *error = "bad device configuration '" + text + "': expected CLUSTERSxCORESxWARPSxTHREADS, e.g. 1x1x4x4";
      return std::nullopt;
    }
    parts.push_back(v);
    pos = end + 1;
  }
  DeviceConfig c;
  if (parts.size() == 4) {
    c.clusters = parts[0], c.cores_per_cluster = parts[1], c.warps = parts[2], c.threads = parts[3];
  } else if (parts.size() == 3) {
    c.cores_per_cluster = parts[0], c.warps = parts[1], c.threads = parts[2];
  } else {
    if (error) *error = "bad device configuration '" + text + "': expected CLUSTERSxCORESxWARPSxTHREADS, e.g. 1x1x4x4";
    return std::nullopt;
  }
  if (auto why = c.validate()) {
    if (error) *error = "bad device configuration '" + text + "': " + *why;
    return std::nullopt;
  }
  return c;
}

const char* schedule_name(Schedule s) {
  switch (s) {
    case Schedule::Random: return "random";
    case Schedule::Pct: return "pct";
  }
  return "unknown";
}

std::optional<Schedule> parse_schedule(const std::string& text) {
  if (text == "random") return Schedule::Random;
  if (text == "pct") return Schedule::Pct;
  return std::nullopt;
}

}  // namespace vx
