// Numbers in hex as messages and listings print them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace vx {

// "0x0000002a": a word or an address at its full width.
inline std::string hex32(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

// "0x2a": the shortest form.
inline std::string hex_short(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace vx
