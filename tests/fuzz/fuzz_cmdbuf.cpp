// libFuzzer target: command buffers (seed 004 format), decoded and validated against a device.
#include <cstddef>
#include <cstdint>

#include "device/cmdproc.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return vx_fuzz_command_buffer(data, size); }
