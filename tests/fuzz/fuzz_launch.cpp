// libFuzzer target: launch files (JSON), parsed as --launch does (buffers naming files stay unread:
// the base directory does not exist).
#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/launch_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)vx::cli::parse_launch_file(text, "fuzz.json", "/nonexistent-vxreplay-fuzz");
  return 0;
}
