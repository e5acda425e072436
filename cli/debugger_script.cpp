// Stops that run themselves and small scripts: commands ... end, dprintf, printf, echo, ignore,
// source, define, until/advance; info line, info symbol; names for tab completion.
#include <algorithm>

#include "cli/debugger.hpp"
#include "device/input_file.hpp"

namespace vx::cli {

namespace {

// A C string literal at the start of s: its text with \n \t \" \\ resolved; `rest` is what follows.
Result<std::string> string_literal(std::string_view s, std::string_view* rest) {
  s = trim(s);
  if (s.empty() || s[0] != '"') return make_error("expected a \"FORMAT\" string");
  std::string out;
  for (size_t i = 1; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') {
      *rest = s.substr(i + 1);
      return out;
    }
    if (c == '\\' && i + 1 < s.size()) {
      char e = s[++i];
      out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
    } else {
      out += c;
    }
  }
  return make_error("missing the closing '\"' of the format");
}

// Splits "a, f(b, c), d" at the commas outside parentheses and brackets.
std::vector<std::string> split_args(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.emplace_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!std::string(trim(cur)).empty()) out.emplace_back(trim(cur));
  return out;
}

}  // namespace

void Debugger::cmd_commands(Args a) {
  std::vector<int> ids;
  for (const std::string& w : split_words(a.args)) {
    auto n = parse_u32(w);
    if (!n) return usage("commands: " + n.error().message);
    if (!bps_.find(int(*n))) return err("no breakpoint number " + std::to_string(*n));
    ids.push_back(int(*n));
  }
  if (ids.empty()) {
    if (bps_.all().empty()) return err("commands: no breakpoints");
    ids.push_back(bps_.all().rbegin()->first);
  }
  collecting_ = Collecting{true, ids, "", {}};
}

void Debugger::cmd_define(Args a) {
  auto words = split_words(a.args);
  if (words.size() != 1) return usage("define: expected one command name");
  if (parse_command_line(words[0]).ok() && parse_command_line(words[0])->name == words[0])
    return err("define: \"" + words[0] + "\" is a built-in command");
  collecting_ = Collecting{true, {}, words[0], {}};
}

void Debugger::queue_breakpoint_commands(const std::vector<int>& bps) {
  for (int id : bps)
    if (const UserBreakpoint* b = bps_.find(id))
      for (const std::string& c : b->commands)
        if (c != "silent") pending_.emplace_back(id, c);
}

void Debugger::cmd_printf(Args a) {
  std::string_view rest;
  auto fmt = string_literal(a.args, &rest);
  if (!fmt) return usage("printf: " + fmt.error().message);
  rest = trim(rest);
  if (!rest.empty() && rest[0] == ',') rest.remove_prefix(1);
  std::vector<std::string> args = split_args(rest);
  std::string text;
  size_t next = 0;
  for (size_t i = 0; i < fmt->size(); ++i) {
    char c = (*fmt)[i];
    if (c != '%') {
      text += c;
      continue;
    }
    if (i + 1 < fmt->size() && (*fmt)[i + 1] == '%') {
      text += '%';
      ++i;
      continue;
    }
    // %[flags][width][.prec]conv: the spec is handed to snprintf with the value converted.
    size_t j = i + 1;
    while (j < fmt->size() && std::string_view("-+ #0123456789.l").find((*fmt)[j]) != std::string_view::npos) ++j;
    if (j >= fmt->size()) return usage("printf: incomplete conversion at the end of the format");
    const char conv = (*fmt)[j];
    std::string spec = fmt->substr(i, j - i);
    spec.erase(std::remove(spec.begin(), spec.end(), 'l'), spec.end());
    if (next >= args.size()) return usage("printf: fewer arguments than conversions");
    auto e = Expr::parse(args[next++]);
    if (!e) return usage(e.error().message);
    auto v = evaluate_c_in(*e->root(), Lane{focus_.core, focus_.slot, focus_.lane}, frame_level_);
    if (!v) return err(v.error());
    char buf[256];
    if (conv == 'f' || conv == 'g' || conv == 'e') {
      const engine::CType& t = engine::strip_typedefs(*v->type);
      double d = 0;
      if (t.kind == engine::CType::Kind::Float) {
        auto text_v = format_c(*v, 0);
        d = std::strtod(text_v.c_str(), nullptr);
      } else if (auto iv = c_to_int(*v)) {
        d = double(*iv);
      }
      std::snprintf(buf, sizeof buf, (spec + conv).c_str(), d);
    } else if (conv == 's') {
      // A char pointer or array: the string in device memory (at most 200 bytes).
      auto addr = c_to_int(*v);
      std::string str;
      if (v->address && engine::strip_typedefs(*v->type).kind == engine::CType::Kind::Array)
        addr = int64_t(*v->address);
      if (!addr) return err(addr.error());
      for (uint32_t k = 0; k < 200; ++k) {
        auto b = read_bytes(uint32_t(*addr) + k, 1);
        if (!b || (*b)[0] == 0) break;
        str += char((*b)[0]);
      }
      std::snprintf(buf, sizeof buf, (spec + 's').c_str(), str.c_str());
    } else if (std::string_view("diuxXoc").find(conv) != std::string_view::npos) {
      auto iv = c_to_int(*v);
      if (!iv) return err(iv.error());
      if (conv == 'c')
        std::snprintf(buf, sizeof buf, (spec + 'c').c_str(), int(*iv & 0xff));
      else if (conv == 'd' || conv == 'i')
        std::snprintf(buf, sizeof buf, (spec + "lld").c_str(), static_cast<long long>(*iv));
      else
        std::snprintf(buf, sizeof buf, (spec + "ll" + conv).c_str(), static_cast<unsigned long long>(uint32_t(*iv)));
    } else {
      return usage(std::string("printf: unsupported conversion '%") + conv + "'");
    }
    text += buf;
    i = j;
  }
  if (next < args.size()) return usage("printf: more arguments than conversions");
  if (!text.empty() && text.back() == '\n') text.pop_back();
  out(text, {{"printf", text}});
}

void Debugger::cmd_dprintf(Args a) {
  // dprintf LOC,"FORMAT",ARGS: a breakpoint whose commands print and go on.
  const size_t comma = a.args.find(',');
  if (comma == std::string::npos) return usage("dprintf: expected LOC,\"FORMAT\"[,ARGS]");
  const std::string loc(trim(std::string_view(a.args).substr(0, comma)));
  const std::string format_args(trim(std::string_view(a.args).substr(comma + 1)));
  std::string_view rest;
  if (auto f = string_literal(format_args, &rest); !f) return usage("dprintf: " + f.error().message);
  auto id = place_breakpoint(loc, "", false);
  if (!id) return err(id.error());
  bps_.find(*id)->commands = {"silent", "printf " + format_args, "continue"};
  out("Dprintf " + std::to_string(*id) + " at " + loc, {{"breakpoint", *id}});
}

void Debugger::cmd_echo(Args a) {
  std::string text;
  for (size_t i = 0; i < a.args.size(); ++i) {
    if (a.args[i] == '\\' && i + 1 < a.args.size()) {
      char e = a.args[++i];
      text += e == 'n' ? '\n' : e == 't' ? '\t' : e;
    } else {
      text += a.args[i];
    }
  }
  if (!text.empty() && text.back() == '\n') text.pop_back();
  out(text, {{"echo", text}});
}

void Debugger::cmd_ignore(Args a) {
  auto words = split_words(a.args);
  if (words.size() != 2) return usage("ignore: expected N COUNT");
  auto id = parse_u32(words[0]);
  auto count = parse_u32(words[1]);
  if (!id) return usage("ignore: " + id.error().message);
  if (!count) return usage("ignore: " + count.error().message);
  UserBreakpoint* b = bps_.find(int(*id));
  if (!b) return err("no breakpoint number " + std::to_string(*id));
  b->ignore = *count;
  out(*count == 0
          ? "Will stop next time breakpoint " + std::to_string(*id) + " is reached."
          : "Will ignore next " + std::to_string(*count) + " crossings of breakpoint " + std::to_string(*id) + ".",
      {{"breakpoint", *id}, {"ignore", *count}});
}

void Debugger::cmd_source(Args a) {
  if (a.args.empty()) return usage("source: expected a file name");
  if (!no_files_.empty()) return err("source: refused: " + no_files_);
  auto bytes = read_input_file(a.args, kMaxTextInputBytes);
  if (!bytes) return err("source " + bytes.error().message);
  if (nesting_ > 16) return err("source: files nest more than 16 deep");
  ++nesting_;
  std::string text(bytes->begin(), bytes->end());
  size_t start = 0;
  bool go_on = true;
  while (go_on && start <= text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    go_on = collecting_.active ? execute(line) : execute_one(line);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  --nesting_;
  if (!go_on) quit_ = true;
}

void Debugger::cmd_advance(const std::string& name, Args a) {
  if (a.args.empty()) {
    if (name == "advance") return usage("advance: expected a location");
    if (!ensure_can_run() || !ensure_focus()) return;
    return run_and_report([this]() { return make_move(debug::plan_line(insp_, focus_, true, true, skips_)); }, 1,
                          false);
  }
  if (!ensure_can_run() || !ensure_focus()) return;
  if (!sym_) return err(name + ": needs the kernel's symbols");
  // A bare line number is a line of the focus's file, as in gdb.
  std::string where = a.args;
  if (parse_u32(where))
    if (auto loc = sym_->locate(focus_warp()->pc); loc && !loc->file.empty()) where = loc->file + ":" + where;
  auto r = sym_->resolve(where);
  if (!r) return err(r.error());
  // gdb's until/advance LOCATION: the focus lane runs until it reaches the location, or its frame
  // returns (no numbered breakpoint; the stop reads as a step's).
  std::vector<uint32_t> targets = r->addresses;
  run_and_report([this, targets]() { return make_move(debug::plan_location(insp_, focus_, targets)); }, 1, false);
}

void Debugger::info_symbol(const std::string& args) {
  if (args.empty()) return usage("info symbol: expected an address");
  auto e = Expr::parse(args);
  if (!e) return usage(e.error().message);
  auto v = evaluate(*e, Lane{focus_.core, focus_.slot, focus_.lane});
  if (!v) return err(v.error());
  if (*v < 0 || *v > int64_t(UINT32_MAX)) return err("address " + std::to_string(*v) + " is not 32-bit");
  auto d = sym_ ? sym_->describe(uint32_t(*v)) : std::nullopt;
  if (!d) return out("No symbol matches " + args + ".", {{"address", *v}});
  std::string name = *d, off;
  if (auto plus = d->find('+'); plus != std::string::npos) {
    name = d->substr(0, plus);
    off = " + " + d->substr(plus + 1);
  }
  out(name + off + " in section .text", {{"address", *v}, {"symbol", name}});
}

void Debugger::info_line(const std::string& args) {
  if (!sym_) return err("no symbols");
  uint32_t pc = 0;
  if (args.empty()) {
    const WarpState* w = focus_warp();
    if (!w) return usage("info line: expected a location");
    pc = w->pc;
  } else {
    auto r = sym_->resolve(args);
    if (!r) return err(r.error());
    pc = r->addresses.front();
  }
  auto loc = sym_->locate(pc);
  auto range = sym_->line_range(pc);
  if (!loc || !loc->line || !range) return out("No line number information for " + describe_pc(pc) + ".");
  out("Line " + std::to_string(loc->line) + " of \"" + loc->file.substr(loc->file.rfind('/') + 1) +
          "\" starts at address " + describe_pc(range->first) + " and ends at " + describe_pc(range->second) + ".",
      {{"line", loc->line}, {"file", loc->file}, {"start", range->first}, {"end", range->second}});
}

std::vector<std::string> Debugger::completions() const {
  std::vector<std::string> words;
  for (const CommandInfo& c : command_table()) words.emplace_back(c.name);
  for (const CommandInfo& c : info_table()) words.emplace_back(c.name);
  for (const auto& [name, body] : user_commands_) words.push_back(name);
  if (vars_)
    for (const std::string& n : vars_->global_names()) words.push_back(n);
  if (vars_ && focus_warp()) {
    // The names of every function level at the pc (the selected frame may be any of them).
    const uint32_t pc = focus_warp()->pc;
    for (unsigned i = 0; i < vars_->frames(pc).size(); ++i) {
      for (const auto& v : vars_->locals(pc, i)) words.push_back(v.name);
      for (const auto& v : vars_->parameters(pc, i)) words.push_back(v.name);
    }
  }
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  return words;
}

}  // namespace vx::cli
