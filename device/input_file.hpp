// Reading a file a user named (a kernel image, a launch file or the data it names, a script): one
// place that refuses what is not a regular file (a directory, /dev/zero, a FIFO) and caps the size
// before reading a byte, so no input makes vxreplay read without bound.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace vx {

// Size caps for the kinds of input (bytes).
constexpr uint64_t kMaxKernelImageBytes = 256ull << 20;  // device memory is 4 GiB; an image above this is an error
constexpr uint64_t kMaxTextInputBytes = 16ull << 20;     // launch files and command scripts
constexpr uint64_t kMaxDataInputBytes = 1ull << 30;      // a launch-file buffer's contents

// The whole file. Errors name the path and what is wrong: missing or unreadable, a directory or a
// special file, larger than max_bytes (with both sizes), a read error.
Result<std::vector<uint8_t>> read_input_file(const std::string& path, uint64_t max_bytes);

}  // namespace vx
