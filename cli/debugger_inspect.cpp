// The debugger's inspection commands (docs/cli.md): `info` and its subcommands, print, x,
// disassemble, list and backtrace. Run control, breakpoints, focus and the session's end are in
// debugger.cpp.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>

#include "base/hex.hpp"
#include "checkpoint/store.hpp"
#include "cli/command_table.hpp"
#include "cli/debugger.hpp"
#include "cli/kernel_symbols.hpp"
#include "cli/text.hpp"
#include "device/isa.hpp"
#include "device/registers.hpp"

namespace vx::cli {

namespace {

using namespace text;

constexpr uint32_t kMaxDisassembly = 4096;  // instructions

}  // namespace

// --- info ---------------------------------------------------------------------------------------------------

void Debugger::cmd_info(Args a) {
  std::string_view args = a.args;
  size_t sp = args.find_first_of(" \t");
  auto sub = resolve_info_subcommand(args.substr(0, sp));
  if (!sub) return usage(sub.error().message);
  const std::string rest = sp == std::string_view::npos ? "" : std::string(trim(args.substr(sp)));
  info_commands()[*sub].run(*this, rest);
}

void Debugger::show_warps() {
  as_command("info warps", [this] { info_warps(); });
}

std::string Debugger::launch_label(uint32_t launch) const {
  if (launch == 0) return "";
  std::string label = "launch " + std::to_string(launch);
  const std::vector<LaunchGridArgs> all = s_.launch_args();
  if (const engine::Symbols* sym = launch_symbols(launch); sym && launch <= all.size())
    if (auto f = sym->function_at(all[launch - 1].entry_pc)) label += " (" + f->name + ")";
  return label;
}

void Debugger::info_launches() {
  const std::vector<LaunchGridArgs> all = s_.launch_args();
  if (all.empty()) return out("No launches yet.", {{"launches", nlohmann::json::array()}});
  const uint32_t current = s_.last_stop().launch;
  auto dims3 = [](const std::array<uint32_t, 3>& d) {
    return std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]);
  };
  std::string text = "  Launch  Kernel              Entry       Grid        Block       LMem    Argument\n";
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < all.size(); ++i) {
    const LaunchGridArgs& l = all[i];
    std::string kernel = "??";
    const uint32_t n = uint32_t(i + 1);
    if (const engine::Symbols* sym = launch_symbols(n))
      if (auto f = sym->function_at(l.entry_pc)) kernel = f->name;
    text += std::string(n == current ? "* " : "  ") + pad(std::to_string(n), 8) + pad(kernel, 20) +
            pad(hex32(l.entry_pc), 12) + pad(dims3(l.grid), 12) + pad(dims3(l.block), 12) +
            pad(std::to_string(l.lmem_bytes), 8) + hex32(l.arg_ptr) + "\n";
    list.push_back({{"launch", n},
                    {"kernel", kernel},
                    {"entry", l.entry_pc},
                    {"grid", l.grid},
                    {"block", l.block},
                    {"lmem", l.lmem_bytes},
                    {"argument", l.arg_ptr},
                    {"current", n == current}});
  }
  out(text, {{"launches", list}});
}

void Debugger::info_breakpoints() {
  if (bps_.all().empty()) return out("No breakpoints.", {{"breakpoints", nlohmann::json::array()}});
  std::string text = "Num  Type             Enb  Address     What\n";
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [id, b] : bps_.all()) {
    if (b.is_watchpoint()) {
      describe_watchpoint(b, &text, &list);
      continue;
    }
    std::string what = b.location;
    if (b.addresses.size() == 1 && address_symbols(b, 0))
      what = "in " + location_text(b.addresses[0], address_symbols(b, 0));
    else if (b.addresses.size() > 1)
      what = b.location + " (" + std::to_string(b.addresses.size()) + " locations)";
    text += pad(std::to_string(id), 5) + pad(b.temporary ? "tbreakpoint" : "breakpoint", 17) +
            pad(b.enabled ? "y" : "n", 5) +
            pad(b.addresses.size() == 1 ? hex32(b.addresses[0])
                : b.addresses.empty()   ? "<PENDING>"
                                        : "<MULTIPLE>",
                12) +
            what + "\n";
    if (b.addresses.size() > 1)
      for (size_t i = 0; i < b.addresses.size(); ++i)
        text += pad(std::to_string(id) + "." + std::to_string(i + 1), 27) + pad(hex32(b.addresses[i]), 12) +
                location_text(b.addresses[i], address_symbols(b, i)) + "\n";
    if (b.condition) text += "\tstop only if " + b.condition->text() + "\n";
    if (b.hits) text += "\tbreakpoint already hit " + std::to_string(b.hits) + (b.hits == 1 ? " time\n" : " times\n");
    nlohmann::json j = {{"id", id},
                        {"location", b.location},
                        {"addresses", b.addresses},
                        {"enabled", b.enabled},
                        {"temporary", b.temporary},
                        {"hits", b.hits},
                        {"condition", b.condition ? nlohmann::json(b.condition->text()) : nlohmann::json(nullptr)}};
    if (b.where) {
      j["function"] = b.where->function;
      j["file"] = b.where->file;
      j["line"] = b.where->line;
    }
    list.push_back(j);
  }
  out(text, {{"breakpoints", list}});
}

void Debugger::info_ctas() {
  if (!ensure_stopped()) return;
  engine::ThreadLists l = s_.lists();
  const auto& grid = s_.context().launch.grid;
  auto cta_coords = [&](uint64_t u) {
    uint64_t gx = std::max(1u, grid[0]), gy = std::max(1u, grid[1]);
    return std::to_string(u % gx) + "," + std::to_string((u / gx) % gy) + "," + std::to_string(u / (gx * gy));
  };
  std::string text;
  nlohmann::json data;
  auto one = [&](const char* name, const char* key, const std::vector<engine::UnitRange>& v, bool show_coords) {
    uint64_t n = 0;
    std::string ranges;
    nlohmann::json jr = nlohmann::json::array();
    for (const auto& r : v) {
      n += r.count;
      ranges += (ranges.empty() ? "" : ", ") + std::to_string(r.first);
      if (r.count > 1)
        ranges += "-" + std::to_string(r.first + r.count - 1);
      else if (show_coords)
        ranges += " (" + cta_coords(r.first) + ")";
      jr.push_back({r.first, r.count});
    }
    text += pad(std::string(name) + ":", 14) + std::to_string(n) + (n == 1 ? " CTA" : " CTAs") +
            (ranges.empty() ? "" : ": " + ranges) + "\n";
    data[key] = {{"count", n}, {"ranges", jr}};
  };
  one("complete", "complete", l.complete, false);
  one("in progress", "in_progress", l.in_progress, true);
  one("not launched", "not_launched", l.not_launched, false);
  text += "grid " + coords(grid) + " = " + std::to_string(s_.context().launch.total_units) + " CTAs";
  data["total"] = s_.context().launch.total_units;
  out(text, data);
}

void Debugger::info_warps() {
  if (!ensure_stopped()) return;
  const DeviceContext& ctx = s_.context();
  std::string text = "  core warp  cta        rank  pc          function              mask        depth  wait\n";
  nlohmann::json list = nlohmann::json::array();
  for (uint32_t c = 0; c < ctx.cores.size(); ++c)
    for (uint32_t s = 0; s < ctx.cores[c].warps.size(); ++s) {
      const WarpState& w = ctx.cores[c].warps[s];
      if (!w.active) continue;
      bool focused = focus_.valid && focus_.core == c && focus_.slot == s;
      std::string fn;
      if (sym_)
        if (auto f = sym_->function_at(w.pc)) fn = f->name;
      std::string wait = wait_name(w.wait);
      if (w.wait == WarpWait::Barrier || w.wait == WarpWait::BarrierWait)
        wait += " " + std::to_string(w.wait_barrier & 0x7fffffffu) + ((w.wait_barrier >> 31) ? " (global)" : "");
      text += std::string(focused ? "* " : "  ") + pad(std::to_string(c), 5) + pad(std::to_string(s), 6) +
              pad(coords(w.block_id), 11) + pad(std::to_string(w.cta_rank), 6) + pad(hex32(w.pc), 12) +
              pad(fn.empty() ? "??" : fn, 22) + pad(hex32(w.tmask), 12) + pad(std::to_string(w.ipdom.size()), 7) +
              wait + "\n";
      list.push_back({{"core", c},
                      {"warp", s},
                      {"cta", w.block_id},
                      {"cta_linear", w.cta_linear},
                      {"rank", w.cta_rank},
                      {"pc", w.pc},
                      {"function", fn.empty() ? nlohmann::json(nullptr) : nlohmann::json(fn)},
                      {"mask", w.tmask},
                      {"lanes", lanes_of(w.tmask)},
                      {"depth", w.ipdom.size()},
                      {"wait", wait_name(w.wait)},
                      {"focus", focused}});
    }
  if (list.empty()) text = "No warp is in progress.";
  out(text, {{"warps", list}});
}

void Debugger::info_lanes() {
  if (!ensure_focus()) return;
  const WarpState& w = *focus_warp();
  const auto& b = s_.context().launch.block;
  const uint64_t threads = uint64_t(b[0]) * b[1] * b[2];
  std::string text = "Core " + std::to_string(focus_.core) + " warp " + std::to_string(focus_.slot) + " (cta " +
                     coords(w.block_id) + ", rank " + std::to_string(w.cta_rank) + "):\n";
  nlohmann::json list = nlohmann::json::array();
  for (uint32_t l = 0; l < nt(); ++l) {
    bool active = w.tmask >> l & 1;
    uint64_t t = uint64_t(w.cta_rank) * nt() + l;
    bool exists = t < threads;
    auto ti = insp_.thread_idx(Lane{focus_.core, focus_.slot, l});
    std::string line = std::string(focus_.lane == l ? "* " : "  ") + "lane " + pad(std::to_string(l), 3) +
                       pad(active ? "active" : "inactive", 10);
    line += exists ? "thread " + pad(coords(ti), 10) : pad("(no thread)", 17);
    if (active) line += "pc " + hex32(w.pc);
    text += line + "\n";
    nlohmann::json j = {{"lane", l}, {"active", active}, {"focus", focus_.lane == l}};
    j["thread"] = exists ? nlohmann::json(ti) : nlohmann::json(nullptr);
    j["pc"] = active ? nlohmann::json(w.pc) : nlohmann::json(nullptr);
    list.push_back(j);
  }
  out(text, {{"lanes", list}});
}

void Debugger::info_registers(const std::string& args) {
  if (!ensure_focus()) return;
  const WarpState& w = *focus_warp();
  const uint32_t lane = focus_.lane;
  std::string text;
  nlohmann::json regs = nlohmann::json::object();
  auto xline = [&](unsigned r) {
    uint32_t v = r == 0 ? 0 : w.x[r * nt() + lane];
    // Pointers (ra, sp, gp, tp) as addresses, the rest as signed integers, as gdb shows them.
    std::string shown = std::to_string(int32_t(v));
    if (r >= 1 && r <= 4) {
      shown = hex_short(v);
      if (r == 1)
        if (sym_)
          if (auto d = sym_->describe(v)) shown += " <" + *d + ">";
    }
    text += pad(xreg_name(r), 15) + pad(hex_short(v), 19) + shown + "\n";
    regs[xreg_name(r)] = v;
  };
  auto fline = [&](unsigned r) {
    uint32_t bits = w.f[r * nt() + lane];
    float f;
    std::memcpy(&f, &bits, 4);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", double(f));
    text += pad(freg_name(r), 15) + pad(hex_short(bits), 19) + buf + "\n";
    regs[freg_name(r)] = bits;
  };
  auto pcline = [&]() {
    std::string d = describe_pc(w.pc);
    text += pad("pc", 15) + pad(hex_short(w.pc), 19) + (d.size() > 11 ? d.substr(11) : "") + "\n";
    regs["pc"] = w.pc;
  };
  std::vector<std::string> words = split_words(args);
  if (words.empty()) {
    for (unsigned r = 0; r < 32; ++r) xline(r);
    pcline();
  } else if (words.size() == 1 && (words[0] == "f" || words[0] == "float")) {
    for (unsigned r = 0; r < 32; ++r) fline(r);
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%x", w.fcsr);
    text += pad("fcsr", 15) + buf + "\n";
    regs["fcsr"] = w.fcsr;
  } else {
    for (const std::string& name : words) {
      auto v = parse_register(name);
      if (!v) return usage("info registers: unknown register \"" + name + "\"");
      if (v->kind == Variable::Kind::XReg)
        xline(v->index);
      else if (v->kind == Variable::Kind::FReg)
        fline(v->index);
      else
        pcline();
    }
  }
  out(text, {{"registers", regs}, {"core", focus_.core}, {"warp", focus_.slot}, {"lane", lane}});
}

// --- Data ----------------------------------------------------------------------------------------------------

void Debugger::cmd_print(Args a) {
  auto fmt = parse_print_format(a.format);
  if (!fmt) return usage(fmt.error().message);
  if (a.args.empty()) return usage("print: expected an expression");
  std::string text_arg = a.args;
  bool all_lanes = false;
  if (text_arg.rfind("-lanes", 0) == 0 && (text_arg.size() == 6 || text_arg[6] == ' ')) {
    all_lanes = true;
    text_arg = std::string(trim(text_arg.substr(6)));
    if (text_arg.empty()) return usage("print -lanes: expected an expression");
  }
  auto e = Expr::parse(text_arg);
  if (!e) return usage(e.error().message);
  // C types print it as gdb does (a character literal as a char).
  if (all_lanes || e->uses_source() || *fmt == 't' || *fmt == 'f' || text_arg.find('\'') != std::string::npos)
    return cmd_print_c(*e, *fmt, all_lanes);
  auto v = evaluate(*e, Lane{focus_.core, focus_.slot, focus_.lane});
  if (!v) return err(v.error());
  int64_t x = *v;
  std::string text = e->text() + " = ";
  auto var = e->as_variable();
  switch (*fmt) {
    case 'x':
      text += hex_short(x >= INT32_MIN && x <= int64_t(UINT32_MAX) ? uint64_t(uint32_t(x)) : uint64_t(x));
      break;
    case 'd': text += std::to_string(x); break;
    // The target is 32-bit: /u and /x show the value's low 32 bits when it fits them as a signed or
    // unsigned 32-bit number (p/u -1 is 4294967295), all 64 bits otherwise.
    case 'u':
      text += std::to_string(x >= INT32_MIN && x <= int64_t(UINT32_MAX) ? uint64_t(uint32_t(x)) : uint64_t(x));
      break;
    case 'c': {
      char c = char(x & 0xff);
      text += std::to_string(x & 0xff) + " '" + (c >= 32 && c < 127 ? std::string(1, c) : std::string("?")) + "'";
      break;
    }
    default:
      if (var && var->kind == Variable::Kind::FReg) {
        float f;
        uint32_t bits = uint32_t(x);
        std::memcpy(&f, &bits, 4);
        char buf[64];
        std::snprintf(buf, sizeof buf, "%g", double(f));
        text += std::string(buf) + " (bits " + hex_short(bits) + ")";
      } else if (var && (var->kind == Variable::Kind::Pc || (var->kind == Variable::Kind::XReg && var->index == 1))) {
        // As gdb prints the target description's code pointers (pc, ra).
        text += "(void (*)()) " + hex_short(uint32_t(x));
        if (sym_)
          if (auto d = sym_->describe(uint32_t(x))) text += " <" + *d + ">";
      } else if (var && var->kind == Variable::Kind::XReg && (var->index == 2 || var->index == 8)) {
        text += "(void *) " + hex_short(uint32_t(x));  // data pointers (sp, fp)
      } else if (var && var->kind == Variable::Kind::XReg) {
        text += std::to_string(int32_t(uint32_t(x)));  // an int register, as gdb shows it
      } else {
        text += std::to_string(x);
      }
  }
  out(text, {{"expression", e->text()}, {"value", x}});
}

void Debugger::cmd_x(Args a) {
  MemoryFormat f = x_format_;
  if (!a.format.empty()) {
    auto pf = parse_memory_format(a.format);
    if (!pf) return usage(pf.error().message);
    f = *pf;
  }
  uint32_t addr = 0;
  if (a.args.empty()) {
    if (!x_next_) return usage("x: expected an address");
    addr = *x_next_;
  } else {
    auto e = Expr::parse(a.args);
    if (!e) return usage(e.error().message);
    auto v = evaluate(*e, Lane{focus_.core, focus_.slot, focus_.lane});
    if (!v) return err(v.error());
    if (*v < 0 || *v > int64_t(UINT32_MAX)) return err("address " + std::to_string(*v) + " is not 32-bit");
    addr = uint32_t(*v);
  }
  const uint32_t unit = f.unit_bytes();
  if (f.format == 's') {
    // N strings, each up to its NUL (at most 200 bytes shown, as gdb limits its print).
    std::string text;
    nlohmann::json values = nlohmann::json::array();
    uint32_t at = addr;
    for (uint32_t i = 0; i < f.count; ++i) {
      std::string str;
      uint32_t len = 0;
      for (; len < 200; ++len) {
        auto b = read_bytes(at + len, 1);
        if (!b) return err(b.error());
        if ((*b)[0] == 0) break;
        str += char((*b)[0]);
      }
      std::string shown;
      for (char c : str)
        shown += c == '\n' ? "\\n" : c == '"' ? "\\\"" : (c >= 32 && c < 127) ? std::string(1, c) : "?";
      text += (i ? "\n" : "") + describe_pc(at) + ":\t\"" + shown + "\"" + (len == 200 ? "..." : "");
      values.push_back(str);
      at += len + 1;
    }
    x_next_ = at;
    x_format_ = f;
    return out(text, {{"address", addr}, {"format", "s"}, {"values", values}});
  }
  if (addr % unit)
    return err("address " + hex32(addr) + " is not aligned to the unit size (" + std::to_string(unit) + ")");
  auto bytes = read_bytes(addr, f.count * unit);
  if (!bytes) return err(bytes.error());
  const uint32_t per_line = f.format == 'c' ? 8 : unit == 4 ? 4 : 8;
  std::string text;
  nlohmann::json values = nlohmann::json::array();
  for (uint32_t i = 0; i < f.count; ++i) {
    uint32_t at = addr + i * unit;
    if (i % per_line == 0) {
      if (i) text += "\n";
      text += describe_pc(at) + ":";
    }
    uint32_t u = 0;
    for (uint32_t k = 0; k < unit; ++k) u |= uint32_t((*bytes)[i * unit + k]) << (8 * k);
    int64_t s = unit == 1 ? int64_t(int8_t(u)) : unit == 2 ? int64_t(int16_t(u)) : int64_t(int32_t(u));
    char buf[48];
    switch (f.format) {
      case 'x':
        std::snprintf(buf, sizeof buf, "0x%0*x", int(unit * 2), u);
        values.push_back(u);
        break;
      case 'd':
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(s));
        values.push_back(s);
        break;
      case 'u':
        std::snprintf(buf, sizeof buf, "%u", u);
        values.push_back(u);
        break;
      case 'f': {
        float fl;
        std::memcpy(&fl, &u, 4);
        std::snprintf(buf, sizeof buf, "%.9g", double(fl));
        values.push_back(double(fl));
        break;
      }
      default: {
        char c = char(u & 0xff);
        if (c >= 32 && c < 127 && c != '\'' && c != '\\')
          std::snprintf(buf, sizeof buf, "%u '%c'", u, c);
        else
          std::snprintf(buf, sizeof buf, "%u '\\%03o'", u, u & 0xff);
        values.push_back(u);
      }
    }
    text += "\t";
    text += buf;
  }
  x_next_ = addr + f.count * unit;
  x_format_ = f;
  out(text, {{"address", addr}, {"unit", unit}, {"format", std::string(1, f.format)}, {"values", values}});
}

void Debugger::cmd_disassemble(Args in) {
  // /s (and gdb's older /m): source lines before the instructions of each line; gdb writes it
  // after a space too ("disassemble /s").
  CommandLine a = in;
  if (a.format.empty() && a.args.size() >= 2 && a.args[0] == '/' && (a.args.size() == 2 || a.args[2] == ' ')) {
    a.format = a.args.substr(1, 1);
    a.args = std::string(trim(a.args.substr(2)));
  }
  if (!a.format.empty() && a.format != "s" && a.format != "m")
    return usage("disassemble/" + a.format + ": the modifier is s (source lines with the code)");
  const bool with_source = !a.format.empty();
  uint32_t lo = 0, hi = 0, mark = 0;
  bool have_mark = false, in_function = false;
  std::string title;
  auto eval_addr = [&](const std::string& text) -> Result<uint32_t> {
    // A function name stands for its address, as in gdb's `disassemble FUNC`.
    if (sym_ && !text.empty() && (std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_'))
      if (auto a = sym_->symbol_address(text)) return *a;
    auto e = Expr::parse(text);
    if (!e) return e.error();
    auto v = evaluate(*e, Lane{focus_.core, focus_.slot, focus_.lane});
    if (!v) return v.error();
    if (*v < 0 || *v > int64_t(UINT32_MAX)) return make_error("address " + std::to_string(*v) + " is not 32-bit");
    return uint32_t(*v);
  };
  if (const WarpState* w = focus_warp()) {
    mark = w->pc;
    have_mark = true;
  }
  auto function_range = [&](uint32_t addr) {
    if (sym_)
      if (auto f = sym_->function_at(addr)) {
        lo = f->lo;
        hi = f->hi;
        title = "Dump of assembler code for function " + f->name + ":";
        in_function = true;
        return;
      }
    lo = addr & ~3u;
    hi = lo + 40;
    title = "Dump of assembler code from " + hex32(lo) + " to " + hex32(hi) + ":";
  };
  if (a.args.empty()) {
    if (!have_mark) {
      if (!ensure_focus()) return;
    }
    function_range(mark);
  } else {
    auto [first, second] = split_range(a.args);
    auto start = eval_addr(first);
    if (!start) return usage("disassemble: " + start.error().message);
    if (second.empty()) {
      function_range(*start);
    } else {
      bool plus = second[0] == '+';
      auto end = eval_addr(plus ? second.substr(1) : second);
      if (!end) return usage("disassemble: " + end.error().message);
      lo = *start & ~3u;
      hi = plus ? *start + *end : *end;
      if (hi <= lo) return usage("disassemble: the end " + hex32(hi) + " is not above the start " + hex32(lo));
      title = "Dump of assembler code from " + hex32(lo) + " to " + hex32(hi) + ":";
    }
  }
  if ((hi - lo) / 4 > kMaxDisassembly)
    return err("disassemble: " + std::to_string((hi - lo) / 4) + " instructions is too many (at most " +
               std::to_string(kMaxDisassembly) + ")");
  auto bytes = read_bytes(lo, ((hi - lo) + 3) & ~3u);
  if (!bytes) return err(bytes.error());
  std::string text = title + "\n";
  nlohmann::json list = nlohmann::json::array();
  std::string fn_name;
  for (uint32_t at = lo; at < hi; at += 4) {
    size_t i = at - lo;
    uint32_t word = uint32_t((*bytes)[i]) | uint32_t((*bytes)[i + 1]) << 8 | uint32_t((*bytes)[i + 2]) << 16 |
                    uint32_t((*bytes)[i + 3]) << 24;
    std::string d = disassemble(word, at);
    if (with_source && sym_) {
      // A new source line starts here: show it (file:line and its text), as gdb's /s does.
      auto loc = sym_->locate(at);
      std::optional<engine::SourceLocation> prev = at > lo ? sym_->locate(at - 4) : std::nullopt;
      if (loc && loc->line &&
          (!prev || prev->line != loc->line || prev->file != loc->file || prev->function != loc->function)) {
        text += base_name(loc->file) + ":" + std::to_string(loc->line) + "\n";
        if (auto src = sym_->source_line(loc->file, loc->line)) text += std::to_string(loc->line) + "\t" + *src + "\n";
      }
    }
    std::string label;
    if (in_function)
      label = " <+" + std::to_string(at - lo) + ">";
    else if (sym_)
      if (auto desc = sym_->describe(at)) label = " <" + *desc + ">";
    text += std::string(have_mark && at == mark ? "=> " : "   ") + hex32(at) + label + ":\t" + d + "\n";
    list.push_back({{"address", at}, {"word", word}, {"text", d}});
  }
  text += "End of assembler dump.";
  out(text, {{"instructions", list}});
}

std::optional<engine::SourceLocation> Debugger::entry_location() const {
  if (!sym_ || !launch_.entry_pc) return std::nullopt;
  // The kernel function's own first line, not code inlined into it.
  auto f = sym_->function_at(launch_.entry_pc);
  if (f)
    for (uint32_t pc = f->lo; pc < f->hi && pc - f->lo < 4096; pc += 4)
      if (auto loc = sym_->locate(pc); loc && loc->line && loc->function == f->name) return loc;
  return sym_->locate(launch_.entry_pc);
}

void Debugger::cmd_list(Args a) {
  if (!sym_ || !sym_->has_debug_info()) return err("The kernel has no line information.");
  std::string file;
  uint32_t center = 0, first = 0;
  if (a.args.empty()) {
    if (list_next_ && !list_file_.empty()) {
      file = list_file_;
      first = list_next_;
    } else {
      std::optional<engine::SourceLocation> loc;
      if (const WarpState* w = focus_warp())
        loc = sym_->locate(w->pc);
      else
        loc = entry_location();
      if (!loc || !loc->line) return err("No source here; give a location: list FUNC | FILE:LINE | LINE.");
      file = loc->file;
      center = loc->line;
    }
  } else if (auto n = parse_u32(a.args)) {
    file = list_file_;
    if (file.empty()) {
      std::optional<engine::SourceLocation> loc;
      if (const WarpState* w = focus_warp())
        loc = sym_->locate(w->pc);
      else
        loc = entry_location();
      if (loc) file = loc->file;
    }
    if (file.empty()) return err("No current source file; give FILE:LINE.");
    center = *n;
  } else {
    auto r = sym_->resolve(a.args);
    if (!r) return err(r.error());
    if (!r->where || !r->where->line) return err("\"" + a.args + "\" has no line information.");
    file = r->where->file;
    center = r->where->line;
  }
  if (!first) first = center > 5 ? center - 5 : 1;
  std::string text;
  uint32_t line = first;
  for (; line < first + 10; ++line) {
    auto t = sym_->source_line(file, line);
    if (!t) break;
    text += std::to_string(line) + "\t" + *t + "\n";
  }
  if (line == first)
    return err("Line " + std::to_string(first) + " is out of range for \"" + base_name(file) +
               "\" (or it cannot be read).");
  list_file_ = file;
  list_next_ = line;
  out(text, {{"file", file}, {"first", first}, {"last", line - 1}});
}

void Debugger::cmd_backtrace(Args a) {
  uint32_t max = 32;
  if (!a.args.empty()) {
    auto n = parse_count(a.args);
    if (!n) return usage("backtrace: " + n.error().message);
    max = *n;
  }
  if (!ensure_focus()) return;
  const WarpState& w = *focus_warp();
  const uint32_t c = focus_.core, s = focus_.slot, lane = focus_.lane;
  std::vector<engine::Frame> frames = insp_.unwind(Lane{c, s, lane}, max);
  (void)w;
  // One line per frame as frame N selects them: inlined function levels, then physical callers,
  // each with its arguments in the focus lane, evaluated with that frame's registers.
  std::vector<FrameLevel> levels = insp_.frame_levels(frames);
  if (levels.size() > max) levels.resize(max);
  std::string text;
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < levels.size(); ++i) {
    const FrameLevel& f = levels[i];
    std::string args_text;
    nlohmann::json args = nlohmann::json::array();
    if (vars_) {
      auto frame = insp_.frame_view(Lane{c, s, lane}, unsigned(i));
      if (frame)
        for (const engine::SourceVariable& p : vars_->parameters(f.scope_pc, f.inline_level)) {
          auto value = insp_.variable_value(Lane{c, s, lane}, p, *frame);
          if (value) insp_.annotate(*value, Lane{c, s, lane});
          const std::string shown = value ? format_c(*value, 0, false) : "<error>";
          args_text += (args_text.empty() ? "" : ", ") + p.name + "=" + shown;
          args.push_back({{"name", p.name}, {"text", shown}});
        }
    }
    // gdb's form: an inlined level has no pc of its own to show.
    text += "#" + pad(std::to_string(i), 3) + (f.inlined ? std::string(11, ' ') : hex32(f.pc) + " in ") +
            (f.function.empty() ? "??" : f.function) + (vars_ ? " (" + args_text + ")" : "");
    if (f.line) text += " (" + base_name(f.file) + ":" + std::to_string(f.line) + ")";
    text += "\n";
    nlohmann::json j = {{"pc", f.pc},
                        {"sp", frames[f.phys].sp},
                        {"function", f.function.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.function)},
                        {"inlined", f.inlined},
                        {"physical", f.phys}};
    if (vars_) j["args"] = args;
    if (f.line) {
      j["file"] = f.file;
      j["line"] = f.line;
    }
    list.push_back(j);
  }
  out(text, {{"frames", list}});
}

}  // namespace vx::cli
