// libFuzzer target: kernel images (ELF and .vxbin) as a host would upload them.
#include <cstddef>
#include <cstdint>
#include <span>

#include "device/image.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto img = vx::parse_kernel_image(std::span<const uint8_t>(data, size), "fuzz");
  if (img) (void)img->launch;
  return 0;
}
