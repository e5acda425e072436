// One watchpoint's report at a stop (debug/breakpoints.hpp decides it; the prompt's stop view
// prints it). Plain data, on its own so that printing needs no engine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vx::debug {

struct WatchReport {
  int number = 0;
  std::string kind;                     // "watch", "rwatch", "awatch"
  std::string expression;               // "bins[2]"
  uint32_t address = 0;                 // the accessed address
  uint32_t core = 0, warp = 0, pc = 0;  // the accessing warp; pc: the accessing instruction
  std::vector<uint32_t> lanes;
  std::optional<std::string> old_value;  // write accesses
  std::string new_value;                 // the value after the access
};

}  // namespace vx::debug
