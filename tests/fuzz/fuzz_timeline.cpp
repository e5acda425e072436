// libFuzzer target: a recording's timeline samples (checkpoint/timeline.hpp), as a damaged or
// hostile recording could hold them: decoded, and what decodes in the current encoding (VXT2)
// encodes back to the same bytes; the fixed-width VXT1 of older recordings, to the same samples.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "checkpoint/timeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto samples = vx::checkpoint::decode_timeline({data, size});
  if (samples) {
    const auto again = vx::checkpoint::encode_timeline(*samples);
    if (data[3] == '1') {
      if (vx::checkpoint::decode_timeline(again).value() != *samples) std::abort();
    } else if (again.size() != size || !std::equal(again.begin(), again.end(), data)) {
      std::abort();
    }
  }
  return 0;
}
