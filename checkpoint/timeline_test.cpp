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
  auto huge = bytes;
  huge[4] = huge[5] = huge[6] = huge[7] = 0xff;  // four billion samples in 100 bytes
  CHECK(decode_timeline(huge).error().message.find("a sample count past the end at byte 4") != std::string::npos);
  auto wrong = bytes;
  wrong[0] = 'X';
  CHECK(decode_timeline(wrong).error().message.find("no VXT1 header at byte 0") != std::string::npos);
}
