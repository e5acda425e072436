// The command language of the debugger session: splitting a line into a command and its
// arguments, and the small argument grammars (x/FMT, break LOC if COND, focus coordinates, ...).
// Nothing here touches a session, so all of it is unit-tested on its own (cli/command_test.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace vx::cli {

// One command line after alias and prefix resolution.
struct CommandLine {
  std::string name;    // canonical command name ("continue", "stepi", "info", "x", ...)
  std::string format;  // text after '/' in "x/4xw" or "p/x" (without the '/'), else ""
  std::string args;    // the rest of the line, trimmed
  size_t entry = 0;    // the command's entry in the table (command_table(), the Debugger's)
};

// Every command: canonical name, aliases, argument synopsis and a one-line description (help).
struct CommandInfo {
  const char* name;
  std::vector<const char*> aliases;
  const char* synopsis;
  const char* summary;
};

// One entry of a command table (cli/command_table.hpp): the command's names and help, and `run`,
// what runs it. The table is written once, with a handler in every entry (the constructor takes
// one: an entry without is a compile error); Run is the handler's type where the table is made:
// the Debugger's function pointer, or NoHandler where only the names are needed (parsing, help).
template <class Run>
struct CommandEntry : CommandInfo {
  CommandEntry(const char* name, std::vector<const char*> aliases, const char* synopsis, const char* summary,
               Run handler)
      : CommandInfo{name, std::move(aliases), synopsis, summary}, run(handler) {}
  Run run;
};
// Takes any handler and keeps nothing: its body is never instantiated.
struct NoHandler {
  template <class F>
  NoHandler(F&&) {}
};

// The prompt's commands (names and help), in the table's order.
const std::vector<CommandInfo>& command_table();

// Resolves the first word of a line: an alias, a canonical name, or an unambiguous prefix of
// one. Empty lines and comments ('#') give a CommandLine with an empty name. Errors:
// `unknown command "foo"`, `ambiguous command "di": disable, disassemble`.
Result<CommandLine> parse_command_line(std::string_view line);

// `info` subcommands resolve the same way.
const std::vector<CommandInfo>& info_table();
// The `info` subcommand's entry in info_table() (and the Debugger's table of them).
Result<size_t> resolve_info_subcommand(std::string_view word);
Result<std::string> parse_info_subcommand(std::string_view word);

std::string_view trim(std::string_view s);
// Splits on blanks.
std::vector<std::string> split_words(std::string_view s);

// A non-negative integer (decimal or 0x-hex), the whole of s: nothing when it is not one.
// *too_large (when given) says whether it was digits past 2^64 - 1. The one number parser of the
// command line's flags and the prompt's commands.
std::optional<uint64_t> parse_u64(std::string_view s, bool* too_large = nullptr);
// A non-negative integer (decimal or 0x-hex) that fits 32 bits.
Result<uint32_t> parse_u32(std::string_view s);
// A count for stepi/nexti/step/next: empty = 1; at least 1.
Result<uint32_t> parse_count(std::string_view s);

// x/NFU: N count (default 1), F format x d u c (default x), U unit b h w (default w, c defaults
// to b). Letters may come in any order after the count, as in gdb.
struct MemoryFormat {
  uint32_t count = 1;
  char format = 'x';
  char unit = 'w';
  uint32_t unit_bytes() const { return unit == 'b' ? 1 : unit == 'h' ? 2 : 4; }
};
Result<MemoryFormat> parse_memory_format(std::string_view spec);
// print/F: x d u c (or empty).
Result<char> parse_print_format(std::string_view spec);

// break [LOC] [if COND]: the location (may be empty: the focus PC) and the condition text.
struct BreakSpec {
  std::string location;
  std::string condition;
};
Result<BreakSpec> parse_break_spec(std::string_view args);

// "X", "X,Y" or "X,Y,Z" (missing dimensions 0), optionally in parentheses.
Result<std::array<uint32_t, 3>> parse_coords(std::string_view s);

// Focus: `cta X,Y,Z thread X,Y,Z` (software; either part may be left out to keep the current
// one) or `core C warp W lane L` (hardware; any part may be left out). `block` is `cta`.
struct FocusSpec {
  std::optional<std::array<uint32_t, 3>> cta, thread;
  std::optional<uint32_t> core, warp, lane;
  bool software() const { return cta || thread; }
  bool empty() const { return !cta && !thread && !core && !warp && !lane; }
};
// `first` is the command word (cta, block, thread, core, warp, lane, focus), args the rest.
Result<FocusSpec> parse_focus(std::string_view first, std::string_view args);

// Breakpoint numbers for delete/enable/disable: "1 3 5-7"; empty = all (an empty list).
Result<std::vector<int>> parse_id_list(std::string_view s);

// Splits "A,B" at the first comma outside parentheses (disassemble START,END). No comma: second empty.
std::pair<std::string, std::string> split_range(std::string_view s);

}  // namespace vx::cli
