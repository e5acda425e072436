#include "cli/command.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

#include "cli/command_table.hpp"

namespace vx::cli {

namespace {

template <class Run>
std::vector<CommandInfo> names_of(const std::vector<CommandEntry<Run>>& table) {
  return std::vector<CommandInfo>(table.begin(), table.end());
}

}  // namespace

const std::vector<CommandInfo>& command_table() {
  static const std::vector<CommandInfo> t = names_of(CommandTables::commands<NoHandler>());
  return t;
}

const std::vector<CommandInfo>& info_table() {
  static const std::vector<CommandInfo> t = names_of(CommandTables::info<NoHandler>());
  return t;
}

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::vector<std::string> split_words(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

namespace {

// gdb's rules: a name or an alias exactly, else a unique prefix of a name. The entry's index.
Result<size_t> resolve(std::string_view word, const std::vector<CommandInfo>& table, const char* what) {
  for (size_t i = 0; i < table.size(); ++i) {
    if (word == table[i].name) return i;
    for (const char* a : table[i].aliases)
      if (word == a) return i;
  }
  std::vector<size_t> matches;
  for (size_t i = 0; i < table.size(); ++i)
    if (std::string_view(table[i].name).substr(0, word.size()) == word) matches.push_back(i);
  if (matches.size() == 1 && !word.empty()) return matches[0];
  if (matches.empty() || word.empty())
    return make_error(std::string("unknown ") + what + " \"" + std::string(word) + "\"");
  std::string list;
  for (size_t m : matches) list += (list.empty() ? "" : ", ") + std::string(table[m].name);
  return make_error(std::string("ambiguous ") + what + " \"" + std::string(word) + "\": " + list);
}

}  // namespace

Result<CommandLine> parse_command_line(std::string_view line) {
  line = trim(line);
  CommandLine cl;
  if (line.empty() || line[0] == '#') return cl;
  size_t end = 0;
  while (end < line.size() && line[end] != ' ' && line[end] != '\t' && line[end] != '/') ++end;
  std::string_view word = line.substr(0, end);
  std::string_view rest = line.substr(end);
  if (!rest.empty() && rest[0] == '/') {
    size_t fend = 1;
    while (fend < rest.size() && rest[fend] != ' ' && rest[fend] != '\t') ++fend;
    cl.format = std::string(rest.substr(1, fend - 1));
    rest = rest.substr(fend);
    if (cl.format.empty()) return make_error("missing format after '/'");
  }
  if (word.empty()) return make_error("missing command before '/'");
  auto entry = resolve(word, command_table(), "command");
  if (!entry) return entry.error();
  cl.entry = *entry;
  cl.name = command_table()[*entry].name;
  cl.args = std::string(trim(rest));
  if (!cl.format.empty() && cl.name != "x" && cl.name != "print" && cl.name != "disassemble" && cl.name != "display")
    return make_error("\"" + cl.name + "\" takes no /FORMAT");
  return cl;
}

Result<size_t> resolve_info_subcommand(std::string_view word) {
  if (word.empty())
    return make_error(
        "\"info\" needs what to show: address, args, breakpoints, checkpoints, ctas, frame, lanes, locals, registers, "
        "session, skip, symbol, line, warps, watchpoints");
  return resolve(word, info_table(), "info command");
}

Result<std::string> parse_info_subcommand(std::string_view word) {
  auto entry = resolve_info_subcommand(word);
  if (!entry) return entry.error();
  return std::string(info_table()[*entry].name);
}

std::optional<uint64_t> parse_u64(std::string_view s, bool* too_large) {
  if (too_large) *too_large = false;
  int base = 10;
  std::string_view digits = s;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    digits = s.substr(2);
  }
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (digits.empty() || ec == std::errc::invalid_argument || end != digits.data() + digits.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    if (too_large) *too_large = true;
    return std::nullopt;
  }
  return v;
}

Result<uint32_t> parse_u32(std::string_view s) {
  s = trim(s);
  std::optional<uint64_t> v = parse_u64(s);
  if (!v) return make_error("'" + std::string(s) + "' is not a non-negative integer");
  if (*v > std::numeric_limits<uint32_t>::max()) return make_error("'" + std::string(s) + "' does not fit 32 bits");
  return uint32_t(*v);
}

Result<uint32_t> parse_count(std::string_view s) {
  s = trim(s);
  if (s.empty()) return uint32_t(1);
  auto n = parse_u32(s);
  if (!n) return n.error();
  if (*n == 0) return make_error("the count must be at least 1");
  return n;
}

Result<MemoryFormat> parse_memory_format(std::string_view spec) {
  MemoryFormat f;
  size_t i = 0;
  while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9') ++i;
  if (i > 0) {
    auto n = parse_u32(spec.substr(0, i));
    if (!n) return n.error();
    if (*n == 0) return make_error("x/: the count must be at least 1");
    if (*n > 65536) return make_error("x/: at most 65536 units at a time");
    f.count = *n;
  }
  bool have_format = false, have_unit = false;
  for (; i < spec.size(); ++i) {
    char c = spec[i];
    if (c == 'x' || c == 'd' || c == 'u' || c == 'c' || c == 'f' || c == 's') {
      if (have_format) return make_error(std::string("x/") + std::string(spec) + ": two formats");
      f.format = c;
      have_format = true;
    } else if (c == 'b' || c == 'h' || c == 'w') {
      if (have_unit) return make_error(std::string("x/") + std::string(spec) + ": two unit sizes");
      f.unit = c;
      have_unit = true;
    } else {
      return make_error(std::string("x/") + std::string(spec) + ": unknown letter '" + c +
                        "' (formats x d u c f s, units b h w)");
    }
  }
  if ((f.format == 'c' || f.format == 's') && !have_unit) f.unit = 'b';
  if (f.format == 'f' && !have_unit) f.unit = 'w';
  if (f.format == 'f' && f.unit != 'w')
    return make_error(std::string("x/") + std::string(spec) + ": floats are words (w)");
  if (f.format == 's' && f.unit != 'b')
    return make_error(std::string("x/") + std::string(spec) + ": strings are of bytes (b)");
  return f;
}

Result<char> parse_print_format(std::string_view spec) {
  if (spec.empty()) return char(0);
  if (spec.size() == 1 && std::string_view("xductf").find(spec[0]) != std::string_view::npos) return spec[0];
  return make_error("print/" + std::string(spec) + ": the format is one of x d u t c f");
}

Result<BreakSpec> parse_break_spec(std::string_view args) {
  BreakSpec b;
  args = trim(args);
  // The condition starts at the word "if".
  size_t pos = std::string_view::npos;
  for (size_t i = 0; i + 2 <= args.size(); ++i) {
    if (args.substr(i, 2) != "if") continue;
    bool start = i == 0 || args[i - 1] == ' ' || args[i - 1] == '\t';
    bool end = i + 2 == args.size() || args[i + 2] == ' ' || args[i + 2] == '\t' || args[i + 2] == '(';
    if (start && end) {
      pos = i;
      break;
    }
  }
  std::string_view loc = pos == std::string_view::npos ? args : trim(args.substr(0, pos));
  if (pos != std::string_view::npos) {
    b.condition = std::string(trim(args.substr(pos + 2)));
    if (b.condition.empty()) return make_error("\"if\" needs a condition");
  }
  if (loc.find_first_of(" \t") != std::string_view::npos)
    return make_error("one location per breakpoint (\"" + std::string(loc) + "\"); a condition starts with \"if\"");
  b.location = std::string(loc);
  return b;
}

Result<std::array<uint32_t, 3>> parse_coords(std::string_view s) {
  s = trim(s);
  std::string_view inner = s;
  if (!inner.empty() && inner.front() == '(') {
    if (inner.back() != ')') return make_error("'" + std::string(s) + "': missing ')'");
    inner = trim(inner.substr(1, inner.size() - 2));
  }
  std::array<uint32_t, 3> c{0, 0, 0};
  if (inner.empty()) return make_error("expected coordinates X[,Y[,Z]]");
  size_t i = 0;
  for (int axis = 0;; ++axis) {
    if (axis == 3) return make_error("'" + std::string(s) + "': at most three coordinates X,Y,Z");
    size_t comma = inner.find(',', i);
    std::string_view part = trim(inner.substr(i, comma == std::string_view::npos ? std::string_view::npos : comma - i));
    auto v = parse_u32(part);
    if (!v) return make_error("'" + std::string(s) + "' is not X[,Y[,Z]] with non-negative integers");
    c[axis] = *v;
    if (comma == std::string_view::npos) break;
    i = comma + 1;
  }
  return c;
}

Result<FocusSpec> parse_focus(std::string_view first_word, std::string_view args) {
  FocusSpec f;
  std::vector<std::string> words = split_words(args);
  std::string first(first_word);
  if (first == "focus") {
    if (!words.empty()) {
      first = words[0];
      words.erase(words.begin());
    } else {
      return f;
    }
  }
  // Coordinates may be written with blanks after commas ("1, 0, 0"): glue such pieces back.
  std::vector<std::string> toks;
  toks.emplace_back(first);
  for (const std::string& w : words) {
    if (toks.size() > 1 && (toks.back().back() == ',' || w.front() == ','))
      toks.back() += w;
    else
      toks.push_back(w);
  }
  for (size_t i = 0; i < toks.size(); i += 2) {
    const std::string& key = toks[i];
    if (i + 1 >= toks.size()) return make_error("\"" + key + "\" needs a value");
    const std::string& val = toks[i + 1];
    if (key == "cta" || key == "block") {
      if (f.cta) return make_error("the CTA is given twice");
      auto c = parse_coords(val);
      if (!c) return c.error();
      f.cta = *c;
    } else if (key == "thread") {
      if (f.thread) return make_error("the thread is given twice");
      auto c = parse_coords(val);
      if (!c) return c.error();
      f.thread = *c;
    } else if (key == "core" || key == "warp" || key == "lane") {
      auto v = parse_u32(val);
      if (!v) return make_error("\"" + key + "\": " + v.error().message);
      std::optional<uint32_t>& slot = key == "core" ? f.core : key == "warp" ? f.warp : f.lane;
      if (slot) return make_error("the " + key + " is given twice");
      slot = *v;
    } else {
      return make_error("unexpected \"" + key + "\" (focus takes cta X,Y,Z thread X,Y,Z or core C warp W lane L)");
    }
  }
  if (f.software() && (f.core || f.warp || f.lane))
    return make_error("give software (cta/thread) or hardware (core/warp/lane) coordinates, not both");
  return f;
}

Result<std::vector<int>> parse_id_list(std::string_view s) {
  std::vector<int> ids;
  for (const std::string& w : split_words(s)) {
    size_t dash = w.find('-');
    if (dash != std::string::npos && dash > 0) {
      auto a = parse_u32(std::string_view(w).substr(0, dash));
      auto b = parse_u32(std::string_view(w).substr(dash + 1));
      if (!a || !b || *a > *b || *b > 1000000) return make_error("'" + w + "' is not a breakpoint number or range N-M");
      for (uint32_t i = *a; i <= *b; ++i) ids.push_back(int(i));
      continue;
    }
    auto v = parse_u32(w);
    if (!v || *v > 1000000) return make_error("'" + w + "' is not a breakpoint number");
    ids.push_back(int(*v));
  }
  return ids;
}

std::pair<std::string, std::string> split_range(std::string_view s) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')') --depth;
    if (s[i] == ',' && depth == 0) return {std::string(trim(s.substr(0, i))), std::string(trim(s.substr(i + 1)))};
  }
  return {std::string(trim(s)), ""};
}

}  // namespace vx::cli
