#include "cli/console.hpp"

namespace vx::cli {

void ConsoleLines::feed(const std::vector<ConsoleChunk>& chunks, std::ostream& out) {
  for (const ConsoleChunk& c : chunks) {
    std::string& line = partial_[c.slot];
    for (char ch : c.bytes) {
      line.push_back(ch);
      if (ch == '\n') {
        out << line;
        line.clear();
      }
    }
    if (c.lost) {
      lost_ += c.lost;
      out << "[console: hart ring " << c.slot << " was full and dropped " << c.lost << " bytes]\n";
    }
  }
  out.flush();
}

void ConsoleLines::flush(std::ostream& out) {
  for (auto& [slot, line] : partial_)
    if (!line.empty()) {
      out << line << "\n";
      line.clear();
    }
  out.flush();
}

}  // namespace vx::cli
