#include "checkpoint/timeline.hpp"

#include <algorithm>
#include <string>

namespace vx::checkpoint {

namespace {

constexpr uint8_t kMagic[4] = {'V', 'X', 'T', '1'};
constexpr size_t kSampleHead = 4 + 8 + 4;                 // launch, at, warps
constexpr size_t kWarpBytes = 4 + 4 + 4 + 1 + 1 + 8 + 4;  // core, slot, tmask, wait, depth, instret, cta

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(uint8_t(uint64_t(v) >> (8 * i)));
}

template <typename T>
T get(const uint8_t* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= uint64_t(p[i]) << (8 * i);
  return T(v);
}

}  // namespace

uint64_t next_sample_point(uint64_t last, uint64_t interval) {
  if (interval == 0) return UINT64_MAX;
  if (last == 0) return std::min<uint64_t>(8, interval);
  return last < interval ? std::min(2 * last, interval) : last + interval;
}

std::vector<uint8_t> encode_timeline(const std::vector<TimelineSample>& samples) {
  std::vector<uint8_t> out(kMagic, kMagic + 4);
  put<uint32_t>(out, uint32_t(samples.size()));
  for (const TimelineSample& s : samples) {
    put<uint32_t>(out, s.launch);
    put<uint64_t>(out, s.at);
    put<uint32_t>(out, uint32_t(s.warps.size()));
    for (const WarpSample& w : s.warps) {
      put<uint32_t>(out, w.core);
      put<uint32_t>(out, w.slot);
      put<uint32_t>(out, w.tmask);
      put<uint8_t>(out, w.wait);
      put<uint8_t>(out, w.depth);
      put<uint64_t>(out, w.instret);
      put<uint32_t>(out, w.cta);
    }
    put<uint32_t>(out, uint32_t(s.console.size()));
    out.insert(out.end(), s.console.begin(), s.console.end());
  }
  return out;
}

Result<std::vector<TimelineSample>> decode_timeline(std::span<const uint8_t> bytes) {
  auto bad = [&](size_t at, const std::string& what) {
    return make_error(ErrorCode::Input, "timeline samples: " + what + " at byte " + std::to_string(at) + " of " +
                                            std::to_string(bytes.size()));
  };
  if (bytes.size() < 8 || !std::equal(kMagic, kMagic + 4, bytes.begin())) return bad(0, "no VXT1 header");
  const uint32_t n = get<uint32_t>(bytes.data() + 4);
  size_t pos = 8;
  if (uint64_t(n) * kSampleHead > bytes.size() - pos) return bad(4, "a sample count past the end");
  std::vector<TimelineSample> out(n);
  for (TimelineSample& s : out) {
    if (bytes.size() - pos < kSampleHead) return bad(pos, "a truncated sample");
    s.launch = get<uint32_t>(bytes.data() + pos);
    s.at = get<uint64_t>(bytes.data() + pos + 4);
    const uint32_t nw = get<uint32_t>(bytes.data() + pos + 12);
    pos += kSampleHead;
    if (uint64_t(nw) * kWarpBytes > bytes.size() - pos) return bad(pos - 4, "a warp count past the end");
    s.warps.resize(nw);
    for (WarpSample& w : s.warps) {
      const uint8_t* p = bytes.data() + pos;
      w.core = get<uint32_t>(p);
      w.slot = get<uint32_t>(p + 4);
      w.tmask = get<uint32_t>(p + 8);
      w.wait = p[12];
      w.depth = p[13];
      w.instret = get<uint64_t>(p + 14);
      w.cta = get<uint32_t>(p + 22);
      pos += kWarpBytes;
    }
    if (bytes.size() - pos < 4) return bad(pos, "a truncated console length");
    const uint32_t len = get<uint32_t>(bytes.data() + pos);
    pos += 4;
    if (len > bytes.size() - pos) return bad(pos - 4, "a console length past the end");
    s.console.assign(reinterpret_cast<const char*>(bytes.data() + pos), len);
    pos += len;
  }
  if (pos != bytes.size()) return bad(pos, "bytes after the last sample");
  return out;
}

}  // namespace vx::checkpoint
