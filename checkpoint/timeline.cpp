#include "checkpoint/timeline.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <limits>
#include <string>

namespace vx::checkpoint {

namespace {

constexpr uint8_t kMagic1[4] = {'V', 'X', 'T', '1'};       // fixed widths (older recordings)
constexpr uint8_t kMagic2[4] = {'V', 'X', 'T', '2'};       // varints (what encode_timeline writes)
constexpr size_t kSampleHead1 = 4 + 8 + 4;                 // launch, at, warps
constexpr size_t kWarpBytes1 = 4 + 4 + 4 + 1 + 1 + 8 + 4;  // core, slot, tmask, wait, depth, instret, cta
constexpr size_t kSampleMin2 = 4;                          // launch, at, warps, console length: a byte each at least
constexpr size_t kWarpMin2 = 7;                            // five varints and two bytes

template <typename T>
T get(const uint8_t* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= uint64_t(p[i]) << (8 * i);
  return T(v);
}

// LEB128: seven bits a byte, low first, the high bit set on every byte but the last.
size_t var_size(uint64_t v) { return size_t(std::bit_width(v | 1) + 6) / 7; }
uint8_t* put_var(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = uint8_t(v) | 0x80;
    v >>= 7;
  }
  *p++ = uint8_t(v);
  return p;
}

// Reads what encode_timeline wrote, refusing anything it would not write: a varint that is
// truncated, longer than it needs (so that an encoding is the only one of its samples) or past
// its field's width.
struct Reader {
  std::span<const uint8_t> bytes;
  size_t pos = 0;
  std::string error;  // what was wrong (set by the read that failed, which ends the decoding), at error_at
  size_t error_at = 0;

  size_t left() const { return bytes.size() - pos; }
  bool fail(size_t at, std::string what) {
    error = std::move(what);
    error_at = at;
    return false;
  }
  bool var(uint64_t max, const char* what, uint64_t* out) {
    const size_t at = pos;
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      if (pos == bytes.size()) return fail(at, std::string("a truncated ") + what);
      const uint8_t b = bytes[pos++];
      if (shift == 63 && b > 1) return fail(at, std::string("a ") + what + " past 64 bits");
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        if (b == 0 && shift != 0) return fail(at, std::string("an overlong ") + what);
        break;
      }
    }
    if (v > max) return fail(at, std::string("a ") + what + " past its width");
    *out = v;
    return true;
  }
  template <typename T>
  bool field(const char* what, T* out) {
    uint64_t v = 0;
    if (!var(std::numeric_limits<T>::max(), what, &v)) return false;
    *out = T(v);
    return true;
  }
  bool byte(const char* what, uint8_t* out) {
    if (pos == bytes.size()) return fail(pos, std::string("a truncated ") + what);
    *out = bytes[pos++];
    return true;
  }
};

Result<std::vector<TimelineSample>> decode_v1(std::span<const uint8_t> bytes) {
  auto bad = [&](size_t at, const std::string& what) {
    return make_error(ErrorCode::Input, "timeline samples: " + what + " at byte " + std::to_string(at) + " of " +
                                            std::to_string(bytes.size()));
  };
  if (bytes.size() < 8) return bad(0, "a truncated VXT1 header");
  const uint32_t n = get<uint32_t>(bytes.data() + 4);
  size_t pos = 8;
  if (uint64_t(n) * kSampleHead1 > bytes.size() - pos) return bad(4, "a sample count past the end");
  std::vector<TimelineSample> out(n);
  for (TimelineSample& s : out) {
    if (bytes.size() - pos < kSampleHead1) return bad(pos, "a truncated sample");
    s.launch = get<uint32_t>(bytes.data() + pos);
    s.at = get<uint64_t>(bytes.data() + pos + 4);
    const uint32_t nw = get<uint32_t>(bytes.data() + pos + 12);
    pos += kSampleHead1;
    if (uint64_t(nw) * kWarpBytes1 > bytes.size() - pos) return bad(pos - 4, "a warp count past the end");
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
      pos += kWarpBytes1;
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

}  // namespace

uint64_t next_sample_point(uint64_t last, uint64_t interval) {
  if (interval == 0) return UINT64_MAX;
  if (last == 0) return std::min<uint64_t>(8, interval);
  return last < interval ? std::min(2 * last, interval) : last + interval;
}

std::vector<uint8_t> encode_timeline(const std::vector<TimelineSample>& samples) {
  // Sized first and written in place: a host program of many small launches encodes 512 samples
  // every few dozen launches.
  size_t size = 4 + var_size(samples.size());
  for (const TimelineSample& s : samples) {
    size +=
        var_size(s.launch) + var_size(s.at) + var_size(s.warps.size()) + var_size(s.console.size()) + s.console.size();
    for (const WarpSample& w : s.warps)
      size += var_size(w.core) + var_size(w.slot) + var_size(w.tmask) + 2 + var_size(w.instret) + var_size(w.cta);
  }
  std::vector<uint8_t> out(size);
  uint8_t* p = std::copy(kMagic2, kMagic2 + 4, out.data());
  p = put_var(p, samples.size());
  for (const TimelineSample& s : samples) {
    p = put_var(p, s.launch);
    p = put_var(p, s.at);
    p = put_var(p, s.warps.size());
    for (const WarpSample& w : s.warps) {
      p = put_var(p, w.core);
      p = put_var(p, w.slot);
      p = put_var(p, w.tmask);
      *p++ = w.wait;
      *p++ = w.depth;
      p = put_var(p, w.instret);
      p = put_var(p, w.cta);
    }
    p = put_var(p, s.console.size());
    p = std::copy(s.console.begin(), s.console.end(), p);
  }
  assert(p == out.data() + out.size());
  return out;
}

Result<std::vector<TimelineSample>> decode_timeline(std::span<const uint8_t> bytes) {
  auto bad = [&](size_t at, const std::string& what) {
    return make_error(ErrorCode::Input, "timeline samples: " + what + " at byte " + std::to_string(at) + " of " +
                                            std::to_string(bytes.size()));
  };
  if (bytes.size() >= 4 && std::equal(kMagic1, kMagic1 + 4, bytes.begin())) return decode_v1(bytes);
  if (bytes.size() < 4 || !std::equal(kMagic2, kMagic2 + 4, bytes.begin())) return bad(0, "no VXT2 or VXT1 header");
  Reader r{bytes, 4};
  uint32_t n = 0;
  if (!r.field("sample count", &n)) return bad(r.error_at, r.error);
  if (uint64_t(n) * kSampleMin2 > r.left()) return bad(4, "a sample count past the end");
  std::vector<TimelineSample> out(n);
  for (TimelineSample& s : out) {
    uint32_t nw = 0, len = 0;
    if (!r.field("launch", &s.launch) || !r.field("count", &s.at)) return bad(r.error_at, r.error);
    const size_t warps_at = r.pos;
    if (!r.field("warp count", &nw)) return bad(r.error_at, r.error);
    if (uint64_t(nw) * kWarpMin2 > r.left()) return bad(warps_at, "a warp count past the end");
    s.warps.resize(nw);
    for (WarpSample& w : s.warps)
      if (!r.field("core", &w.core) || !r.field("slot", &w.slot) || !r.field("thread mask", &w.tmask) ||
          !r.byte("wait", &w.wait) || !r.byte("depth", &w.depth) || !r.field("instruction count", &w.instret) ||
          !r.field("CTA", &w.cta))
        return bad(r.error_at, r.error);
    const size_t len_at = r.pos;
    if (!r.field("console length", &len)) return bad(r.error_at, r.error);
    if (len > r.left()) return bad(len_at, "a console length past the end");
    s.console.assign(reinterpret_cast<const char*>(bytes.data() + r.pos), len);
    r.pos += len;
  }
  if (r.pos != bytes.size()) return bad(r.pos, "bytes after the last sample");
  return out;
}

}  // namespace vx::checkpoint
