// libFuzzer target: kernel images (ELF and .vxbin) as a host would upload them, and the same bytes
// through the symbol reader (ELF symbols, DWARF line tables and scopes, call-frame information) as
// `vxreplay run KERNEL` reads them.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "device/image.hpp"
#include "engine/symbols.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto img = vx::parse_kernel_image(std::span<const uint8_t>(data, size), "fuzz");
  if (img) (void)img->launch;
  auto syms = vx::engine::Symbols::load_bytes(std::vector<uint8_t>(data, data + size), "fuzz.elf");
  if (syms) {
    // A few lookups over the start of the code: they walk the tables the load built.
    for (uint32_t pc = 0x80000000; pc < 0x80000100; pc += 4) {
      (void)syms->locate(pc);
      (void)syms->function_at(pc);
      (void)syms->describe(pc);
    }
    (void)syms->resolve("main");
  }
  return 0;
}
