// Assembles console bytes drained from the per-hart rings into whole lines.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "device/state.hpp"

namespace vx::cli {

class ConsoleLines {
 public:
  // Appends drained bytes; completed lines go to `out` in the order they completed.
  void feed(const std::vector<ConsoleChunk>& chunks, std::ostream& out);
  // Writes what is left of unterminated lines.
  void flush(std::ostream& out);
  uint64_t lost_bytes() const { return lost_; }

 private:
  std::map<uint32_t, std::string> partial_;
  uint64_t lost_ = 0;
};

}  // namespace vx::cli
