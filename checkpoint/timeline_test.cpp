// The timeline samples' encoding (checkpoint/timeline.hpp): exact round trips, and damage refused
// with where it is.
#include "checkpoint/timeline.hpp"

#include <catch2/catch.hpp>

using namespace vx::checkpoint;

namespace {

std::vector<TimelineSample> sample_set() {
  return {TimelineSample{1, 64, {WarpSample{0, 0, 0xf, 0, 0, 40, 0}, WarpSample{0, 1, 0x3, 1, 2, 38, 7}}},
          TimelineSample{1, 128, {WarpSample{1, 3, 0xffffffffu, 3, 255, 1ull << 40, 0xfffffffeu}}},
          TimelineSample{1, 9000, {}, "sum = 42\npartial"}};
}

}  // namespace

TEST_CASE("Timeline samples read back exactly, the end of a launch (no warp) included") {
  const auto samples = sample_set();
  const auto bytes = encode_timeline(samples);
  auto back = decode_timeline(bytes);
  REQUIRE(back);
  CHECK(*back == samples);
  CHECK(decode_timeline(encode_timeline({})).value().empty());
}

TEST_CASE("Damaged timeline samples are refused, saying what is wrong and at which byte", "[malformed]") {
  const auto bytes = encode_timeline(sample_set());
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    auto r = decode_timeline(std::span<const uint8_t>(bytes.data(), cut));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == vx::ErrorCode::Input);
    CHECK(r.error().message.find("timeline samples: ") == 0);
  }
  auto longer = bytes;
  longer.push_back(0);
  CHECK(decode_timeline(longer).error().message == "timeline samples: bytes after the last sample at byte " +
                                                       std::to_string(bytes.size()) + " of " +
                                                       std::to_string(longer.size()));
  const std::vector<uint8_t> huge = {'V', 'X', 'T', '2', 0xff, 0xff, 0xff, 0xff, 0x0f};  // four billion samples
  CHECK(decode_timeline(huge).error().message == "timeline samples: a sample count past the end at byte 4 of 9");
  auto wrong = bytes;
  wrong[0] = 'X';
  CHECK(decode_timeline(wrong).error().message.find("no VXT2 or VXT1 header at byte 0") != std::string::npos);
}

TEST_CASE("Timeline varints are refused when overlong or past their field's width", "[malformed]") {
  // One sample of launch 1 at count 8, no warp, no console text: the only encoding of it.
  const std::vector<uint8_t> one = {'V', 'X', 'T', '2', 1, 1, 8, 0, 0};
  REQUIRE(decode_timeline(one).value() == std::vector<TimelineSample>{TimelineSample{1, 8, {}, ""}});
  CHECK(encode_timeline(decode_timeline(one).value()) == one);
  const std::vector<uint8_t> overlong = {'V', 'X', 'T', '2', 1, 0x81, 0x00, 8, 0, 0};  // launch 1 in two bytes
  CHECK(decode_timeline(overlong).error().message == "timeline samples: an overlong launch at byte 5 of 10");
  const std::vector<uint8_t> wide = {'V', 'X', 'T', '2', 1, 0x80, 0x80, 0x80, 0x80, 0x10, 8, 0, 0};  // launch 2^32
  CHECK(decode_timeline(wide).error().message == "timeline samples: a launch past its width at byte 5 of 13");
  std::vector<uint8_t> past64 = {'V', 'X', 'T', '2', 1, 1};  // a count of 2^64
  for (int i = 0; i < 9; ++i) past64.push_back(0x80);
  past64.insert(past64.end(), {0x02, 0, 0});
  CHECK(decode_timeline(past64).error().message == "timeline samples: a count past 64 bits at byte 6 of 18");
  // The largest values of every field round-trip.
  const std::vector<TimelineSample> top = {TimelineSample{
      UINT32_MAX, UINT64_MAX, {WarpSample{UINT32_MAX, UINT32_MAX, UINT32_MAX, 255, 255, UINT64_MAX, UINT32_MAX}}}};
  CHECK(decode_timeline(encode_timeline(top)).value() == top);
}

TEST_CASE("Timeline samples recorded in the fixed-width VXT1 encoding still read") {
  // sample_set() as VXT1 wrote it: u32 count; per sample u32 launch, u64 count, u32 warps; per warp
  // u32 core, slot and mask, u8 wait and depth, u64 instret, u32 CTA; u32 console length and text.
  std::vector<uint8_t> v1 = {'V', 'X', 'T', '1'};
  auto put = [&](uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) v1.push_back(uint8_t(v >> (8 * i)));
  };
  const auto samples = sample_set();
  put(samples.size(), 4);
  for (const TimelineSample& s : samples) {
    put(s.launch, 4), put(s.at, 8), put(s.warps.size(), 4);
    for (const WarpSample& w : s.warps)
      put(w.core, 4), put(w.slot, 4), put(w.tmask, 4), put(w.wait, 1), put(w.depth, 1), put(w.instret, 8),
          put(w.cta, 4);
    put(s.console.size(), 4);
    v1.insert(v1.end(), s.console.begin(), s.console.end());
  }
  CHECK(decode_timeline(v1).value() == samples);
  CHECK(encode_timeline(samples).size() < v1.size() / 2);  // what VXT2 is for
  for (size_t cut = 0; cut < v1.size(); ++cut) CHECK_FALSE(decode_timeline(std::span<const uint8_t>(v1.data(), cut)));
}
