// Small text helpers the front end's files share (listings, headers, tables).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>
#include "device/state.hpp"

namespace vx::cli::text {

// The last component of a path.
inline std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A word for a POSIX shell: as it is when it needs no quoting, else in single quotes.
inline std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=,:+") ==
                        std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// "x,y,z".
inline std::string coords(const std::array<uint32_t, 3>& c) {
  return std::to_string(c[0]) + "," + std::to_string(c[1]) + "," + std::to_string(c[2]);
}

// The lanes set in a mask, lowest first.
inline std::vector<uint32_t> lanes_of(uint32_t mask) {
  std::vector<uint32_t> out;
  for (uint32_t l = 0; l < 32; ++l)
    if (mask >> l & 1) out.push_back(l);
  return out;
}

// s widened to n columns.
inline std::string pad(std::string s, size_t n) {
  if (s.size() < n) s.append(n - s.size(), ' ');
  return s;
}

inline const char* wait_name(WarpWait w) {
  switch (w) {
    case WarpWait::None: return "-";
    case WarpWait::Barrier: return "barrier";
    case WarpWait::BarrierWait: return "barrier-wait";
    case WarpWait::Spawn: return "spawn";
  }
  return "?";
}

}  // namespace vx::cli::text
