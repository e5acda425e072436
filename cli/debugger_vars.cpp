// C variables at the prompt: print over source names, print -lanes, ptype, whatis, info locals,
// info args, display, and the function levels at the focus pc (frame, up, down, info frame).
#include <algorithm>
#include <map>

#include "cli/debugger.hpp"
#include "device/isa.hpp"

namespace vx::cli {

namespace {

std::string lanes_text(const std::vector<uint32_t>& lanes) {
  std::string s;
  for (size_t i = 0; i < lanes.size();) {
    size_t j = i;
    while (j + 1 < lanes.size() && lanes[j + 1] == lanes[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(lanes[i]) + (j > i ? "-" + std::to_string(lanes[j]) : "");
    i = j + 1;
  }
  return s;
}

}  // namespace

void Debugger::cmd_print_c(const Expr& e, char fmt, bool all_lanes) {
  if (!all_lanes) {
    auto v = evaluate_c_in(*e.root(), Lane{focus_.core, focus_.slot, focus_.lane}, frame_level_);
    if (!v) return err(v.error());
    const std::string text = format_c(*v, fmt);
    nlohmann::json j = {{"expression", e.text()}, {"text", text}, {"type", v->type ? engine::type_name(*v->type) : ""}};
    if (auto i = c_to_int(*v)) j["value"] = *i;
    return out(e.text() + " = " + text, j);
  }
  if (!ensure_focus()) return;
  const WarpState& w = *focus_warp();
  // Every active lane; equal values coalesced, in lane order of their first lane.
  std::vector<std::pair<std::string, std::vector<uint32_t>>> groups;
  nlohmann::json lanes = nlohmann::json::array();
  for (uint32_t lane = 0; lane < nt(); ++lane) {
    if (!(w.tmask >> lane & 1)) continue;
    auto v = evaluate_c_in(*e.root(), Lane{focus_.core, focus_.slot, lane}, frame_level_);
    const std::string text = v ? format_c(*v, fmt) : "<error: " + v.error().message + ">";
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == text; });
    if (it == groups.end())
      groups.push_back({text, {lane}});
    else
      it->second.push_back(lane);
    lanes.push_back({{"lane", lane}, {"text", text}});
  }
  std::string text =
      e.text() + " in core " + std::to_string(focus_.core) + " warp " + std::to_string(focus_.slot) + ":";
  for (const auto& [value, ls] : groups)
    text += "\n  lane" + std::string(ls.size() > 1 ? "s " : " ") + lanes_text(ls) + ": " + value;
  out(text, {{"expression", e.text()}, {"lanes", lanes}});
}

void Debugger::cmd_ptype(Args a, bool expand) {
  const char* name = expand ? "ptype" : "whatis";
  if (a.args.empty()) return usage(std::string(name) + ": expected an expression or a type name");
  // A type name first (as gdb does), then an expression.
  const engine::CType* type = nullptr;
  if (vars_) type = vars_->find_type(a.args);
  if (!type) type = insp_.arena().builtin(a.args);
  if (!type && (a.args.find('*') != std::string::npos || a.args.rfind("struct ", 0) == 0)) {
    if (ensure_focus()) {
      if (auto t = insp_.type(a.args, Lane(focus_), frame_level_)) type = *t;
    } else {
      return;
    }
  }
  if (!type) {
    auto e = Expr::parse(a.args);
    if (!e) return usage(e.error().message);
    if (!ensure_focus()) return;
    auto v = evaluate_c_in(*e->root(), Lane{focus_.core, focus_.slot, focus_.lane}, frame_level_);
    if (!v) return err(v.error());
    type = v->type;
  }
  const std::string text = expand ? engine::type_definition(*type) : engine::type_name(*type);
  out("type = " + text, {{"type", text}});
}

void Debugger::info_variables(bool params) {
  if (!ensure_focus()) return;
  if (!vars_) return err("no debug information: the kernel's variables are unknown");
  auto frame = insp_.frame_view(Lane{focus_.core, focus_.slot, focus_.lane}, frame_level_);
  if (!frame) return err(frame.error());
  const FrameLevel& fl = frame->level;
  auto list = params ? vars_->parameters(fl.scope_pc, fl.inline_level) : vars_->locals(fl.scope_pc, fl.inline_level);
  if (list.empty()) return out(params ? "No arguments." : "No locals.", {{"variables", nlohmann::json::array()}});
  std::string text;
  nlohmann::json j = nlohmann::json::array();
  for (const engine::SourceVariable& v : list) {
    auto value = insp_.variable_value(focus_, v, *frame);
    if (value) insp_.annotate(*value, focus_);
    // As gdb's info locals: no (type *) before a pointer.
    const std::string shown = value ? format_c(*value, 0, false) : "<error: " + value.error().message + ">";
    text += (text.empty() ? "" : "\n") + v.name + " = " + shown;
    j.push_back({{"name", v.name}, {"text", shown}, {"type", v.type ? engine::type_name(*v.type) : ""}});
  }
  out(text, {{"variables", j}});
}

void Debugger::info_address(const std::string& name) {
  if (name.empty()) return usage("info address: expected a variable name");
  if (!ensure_focus()) return;
  if (!vars_) return err("no debug information: the kernel's variables are unknown");
  auto frame = insp_.frame_view(Lane{focus_.core, focus_.slot, focus_.lane}, frame_level_);
  if (!frame) return err(frame.error());
  const uint32_t pc = frame->level.scope_pc;
  auto v = vars_->find(pc, name, frame->level.inline_level);
  if (!v) return err("no symbol \"" + name + "\" in the current context");
  auto loc = vars_->locate(*v, pc, frame->view);
  if (!loc) return err(name + ": " + loc.error().message);
  static const char* kKinds[] = {"memory", "register", "value", "optimized out", "unavailable"};
  nlohmann::json j = {{"name", name},
                      {"kind", kKinds[int(loc->kind)]},
                      {"pc", pc},
                      {"scope", v->kind == engine::SourceVariable::Kind::Global      ? "global"
                                : v->kind == engine::SourceVariable::Kind::Parameter ? "parameter"
                                                                                     : "local"}};
  std::string text = "Symbol \"" + name + "\" is ";
  switch (loc->kind) {
    case engine::VarLocation::Kind::Memory:
      text += "at address " + hex32(loc->address);
      j["address"] = loc->address;
      break;
    case engine::VarLocation::Kind::Register: {
      std::string r = loc->describe().substr(std::string("register ").size());
      text += "a variable in " + r;
      j["register"] = r;
      break;
    }
    case engine::VarLocation::Kind::Value: text += "a value the compiler computed"; break;
    case engine::VarLocation::Kind::OptimizedOut: text += "optimized out"; break;
    case engine::VarLocation::Kind::Unavailable: text += "not available at this PC"; break;
  }
  out(text + ".", j);
}

void Debugger::cmd_display(Args a) {
  auto fmt = parse_print_format(a.format);
  if (!fmt) return usage(fmt.error().message);
  if (a.args.empty()) {
    if (!a.format.empty()) return usage("display/" + a.format + ": expected an expression");
    show_displays();
    return;
  }
  auto e = Expr::parse(a.args);
  if (!e) return usage(e.error().message);
  displays_.push_back(Display{next_display_++, e->text(), *fmt});
  if (focus_warp()) show_displays(displays_.back().id);
}

void Debugger::cmd_undisplay(Args a) {
  auto ids = parse_id_list(a.args);
  if (!ids) return usage("undisplay: " + ids.error().message);
  if (ids->empty()) {
    displays_.clear();
    return;
  }
  for (int id : *ids)
    if (std::none_of(displays_.begin(), displays_.end(), [&](const Display& d) { return d.id == id; }))
      return err("Arguments must be display numbers (no display number " + std::to_string(id) + ").");
  std::erase_if(displays_, [&](const Display& d) { return std::find(ids->begin(), ids->end(), d.id) != ids->end(); });
}

void Debugger::info_display() {
  if (displays_.empty())
    return out("There are no auto-display expressions now.", {{"displays", nlohmann::json::array()}});
  std::string text = "Auto-display expressions now in effect:\nNum Enb Expression";
  nlohmann::json list = nlohmann::json::array();
  for (const Display& d : displays_) {
    const std::string f = d.fmt ? std::string("/") + d.fmt + " " : "";
    text += "\n" + std::to_string(d.id) + ":   y  " + f + d.expr;
    list.push_back({{"display", d.id}, {"expression", d.expr}, {"format", d.fmt ? std::string(1, d.fmt) : ""}});
  }
  out(text, {{"displays", list}});
}

void Debugger::show_displays(int only) {
  if (!focus_warp()) return;
  for (const Display& d : displays_) {
    if (only && d.id != only) continue;
    auto e = Expr::parse(d.expr);
    if (!e) continue;
    std::string shown;
    if (e->uses_source() || d.fmt) {
      auto v = evaluate_c_in(*e->root(), Lane(focus_), frame_level_);
      shown = v ? format_c(*v, d.fmt) : "<error: " + v.error().message + ">";
    } else {
      auto v = evaluate(*e, Lane(focus_));
      shown = v ? std::to_string(*v) : "<error: " + v.error().message + ">";
    }
    // gdb's form: "1: /x total = 0x1fb".
    const std::string f = d.fmt ? std::string("/") + d.fmt + " " : "";
    out(std::to_string(d.id) + ": " + f + d.expr + " = " + shown,
        {{"display", d.id}, {"expression", d.expr}, {"text", shown}});
  }
}

void Debugger::cmd_frame(const std::string& name, Args a) {
  if (!ensure_focus()) return;
  const WarpState& w = *focus_warp();
  int64_t target = frame_level_;
  if (name == "frame" || name == "info frame") {
    if (!a.args.empty()) {
      auto n = parse_u32(a.args);
      if (!n) return usage("frame: " + n.error().message);
      target = *n;
    }
  } else {
    uint32_t n = 1;
    if (!a.args.empty()) {
      auto c = parse_count(a.args);
      if (!c) return usage(name + ": " + c.error().message);
      n = *c;
    }
    target += name == "up" ? int64_t(n) : -int64_t(n);
    if (target < 0) return err("bottom (innermost) frame selected; you cannot go down");
  }
  const std::vector<engine::Frame> frames = insp_.unwind(Lane{focus_.core, focus_.slot, focus_.lane}, 32);
  const std::vector<FrameLevel> levels = insp_.frame_levels(frames);
  if (levels.empty()) return err("no frames at " + hex32(w.pc));
  if (target >= int64_t(levels.size())) {
    if (name == "up")
      return err("initial frame selected; you cannot go up (the stack has " + std::to_string(levels.size()) +
                 " frames)");
    return err("frame " + std::to_string(target) + ": the focus lane's stack has " + std::to_string(levels.size()) +
               " frame" + (levels.size() == 1 ? "" : "s") + " (backtrace lists them)");
  }
  frame_level_ = unsigned(target);
  const FrameLevel& f = levels[frame_level_];
  std::string text = "#" + std::to_string(frame_level_) + "  " +
                     (frame_level_ > 0 && !f.inlined ? hex32(f.pc) + " in " : "") +
                     (f.function.empty() ? "??" : f.function);
  if (f.line) text += " (" + f.file.substr(f.file.rfind('/') + 1) + ":" + std::to_string(f.line) + ")";
  if (f.inlined) text += ", inlined";
  nlohmann::json j = {
      {"level", frame_level_}, {"function", f.function}, {"inlined", f.inlined}, {"line", f.line}, {"pc", f.pc},
      {"physical", f.phys}};
  if (name == "info frame") {
    const engine::Frame& pf = frames[f.phys];
    text += "\n  pc " + hex32(f.pc) + " in core " + std::to_string(focus_.core) + " warp " +
            std::to_string(focus_.slot) + " lane " + std::to_string(focus_.lane);
    text += "; CFA " + (pf.cfa ? hex32(*pf.cfa) : "unknown (no call-frame information)");
    if (pf.cfa) j["cfa"] = *pf.cfa;
    if (frame_level_ + 1 < levels.size()) {
      const FrameLevel& up = levels[frame_level_ + 1];
      text += std::string(f.inlined ? "\n  inlined into " : "\n  called by ") + "frame " +
              std::to_string(frame_level_ + 1) + ", " + up.function + (up.phys != f.phys ? " at " + hex32(up.pc) : "");
      j["caller"] = up.function;
    }
    if (frame_level_ > 0) text += "\n  calls " + levels[frame_level_ - 1].function;
    // The registers of the physical frame: all of frame 0's are the machine's; a caller's are
    // those the callees' CFI recovers (ra, sp, s0..s11), the others not available.
    if (f.phys > 0) {
      std::string saved;
      nlohmann::json regs = nlohmann::json::object();
      for (unsigned r = 1; r < 32; ++r) {
        if (!engine::callee_saved(r)) continue;
        const std::string rn = xreg_name(r);
        saved += " " + rn + "=" + (pf.regs[r] ? hex32(*pf.regs[r]) : "<not available>");
        regs[rn] = pf.regs[r] ? nlohmann::json(*pf.regs[r]) : nlohmann::json(nullptr);
      }
      text += "\n  saved registers:" + saved + "\n  other registers are not available in a caller's frame";
      j["registers"] = regs;
    }
  }
  if (f.line && sym_)
    if (auto src = sym_->source_line(f.file, f.line)) text += "\n" + std::to_string(f.line) + "\t" + *src;
  out(text, j);
}

}  // namespace vx::cli

namespace vx::cli {

// --- skip ----------------------------------------------------------------------------------------------

void Debugger::cmd_skip(Args a) {
  auto words = split_words(a.args);
  const std::string verb = words.empty() ? "" : words[0];
  if (verb == "delete" || verb == "enable" || verb == "disable") {
    std::vector<int> ids;
    for (size_t i = 1; i < words.size(); ++i) {
      auto n = parse_u32(words[i]);
      if (!n) return usage("skip " + verb + ": " + n.error().message);
      if (std::none_of(skips_.begin(), skips_.end(), [&](const SkipRule& r) { return r.id == int(*n); }))
        return err("no skip rule number " + std::to_string(*n) + " (info skip lists them)");
      ids.push_back(int(*n));
    }
    auto chosen = [&](const SkipRule& r) {
      return ids.empty() || std::find(ids.begin(), ids.end(), r.id) != ids.end();
    };
    if (verb == "delete")
      skips_.erase(std::remove_if(skips_.begin(), skips_.end(), chosen), skips_.end());
    else
      for (SkipRule& r : skips_)
        if (chosen(r)) r.enabled = verb == "enable";
    return;
  }
  SkipRule rule;
  rule.id = next_skip_;
  if (verb == "file" || verb == "-fi" || verb == "-file") {
    if (words.size() == 2) {
      rule.pattern = words[1];
    } else if (words.size() == 1) {
      const WarpState* w = focus_warp();
      auto loc = w && sym_ ? sym_->locate(w->pc) : std::nullopt;
      if (!loc || loc->file.empty()) return err("skip file: no current file (name one)");
      rule.pattern = loc->file;
    } else {
      return usage("skip file: expected one file name");
    }
  } else if (verb == "function" || verb == "-fu" || verb == "-function") {
    rule.is_file = false;
    if (words.size() != 2) return usage("skip function: expected one function name");
    rule.pattern = words[1];
  } else if (words.empty()) {
    rule.is_file = false;
    const WarpState* w = focus_warp();
    auto loc = w && sym_ ? sym_->locate(w->pc) : std::nullopt;
    if (!loc || loc->function.empty()) return err("skip: no current function (name one: skip function NAME)");
    rule.pattern = loc->function;
  } else {
    return usage("skip: expected file FILE, function NAME, delete, enable or disable");
  }
  ++next_skip_;
  skips_.push_back(rule);
  out(std::string(rule.is_file ? "File " : "Function ") + rule.pattern + " will be skipped when stepping.",
      {{"skip", rule.id}, {"kind", rule.is_file ? "file" : "function"}, {"pattern", rule.pattern}});
}

void Debugger::info_skip() {
  if (skips_.empty()) return out("Not skipping any files or functions.", {{"skips", nlohmann::json::array()}});
  std::string text = "Num  Enb  Kind      Pattern";
  nlohmann::json list = nlohmann::json::array();
  for (const SkipRule& r : skips_) {
    std::string id = std::to_string(r.id);
    text += "\n" + id + std::string(id.size() < 5 ? 5 - id.size() : 1, ' ') + (r.enabled ? "y    " : "n    ") +
            (r.is_file ? "file      " : "function  ") + r.pattern;
    list.push_back(
        {{"skip", r.id}, {"enabled", r.enabled}, {"kind", r.is_file ? "file" : "function"}, {"pattern", r.pattern}});
  }
  out(text, {{"skips", list}});
}

}  // namespace vx::cli

namespace vx::cli {

// --- set var -------------------------------------------------------------------------------------------

void Debugger::cmd_set(Args a) {
  std::string_view rest = a.args;
  auto words = split_words(rest);
  if (words.empty() || (words[0] != "var" && words[0] != "variable"))
    return usage("set: expected \"set var NAME = EXPR\"");
  rest = trim(rest.substr(rest.find(words[0]) + words[0].size()));
  // The assignment's '=': not part of ==, !=, <= or >=.
  size_t eq = std::string_view::npos;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] != '=') continue;
    const char before = i ? rest[i - 1] : ' ';
    const char after = i + 1 < rest.size() ? rest[i + 1] : ' ';
    if (after == '=' || before == '=' || before == '!' || before == '<' || before == '>') continue;
    eq = i;
    break;
  }
  if (eq == std::string_view::npos) return usage("set var: expected NAME = EXPR");
  auto lhs = Expr::parse(rest.substr(0, eq));
  if (!lhs) return usage(lhs.error().message);
  auto rhs = Expr::parse(rest.substr(eq + 1));
  if (!rhs) return usage(rhs.error().message);
  if (!ensure_focus()) return;
  auto target = evaluate_c_in(*lhs->root(), Lane{focus_.core, focus_.slot, focus_.lane}, frame_level_);
  if (!target) return err(target.error());
  std::optional<unsigned> reg = target->reg;
  bool reg_expr = false;  // $reg names the machine's register, in any frame
  if (auto var = lhs->as_variable(); var && (var->kind == Variable::Kind::XReg || var->kind == Variable::Kind::FReg)) {
    reg = var->kind == Variable::Kind::XReg ? var->index : var->index + 32;
    reg_expr = true;
  }
  if (!target->missing.empty())
    return err("set var: the variable is " + target->missing + ": there is nothing to write");
  if (target->reg && !reg_expr && frame_level_ > 0) {
    auto frame = insp_.frame_view(Lane{focus_.core, focus_.slot, focus_.lane}, frame_level_);
    if (frame && frame->level.phys > 0)
      return err("set var: the variable is in a register of a caller's frame; only frame 0's registers can be written");
  }
  if (!reg && !target->address) return err("set var: the left side is not a variable in a register or in memory");
  // The value, converted to the left side's type as C's assignment does.
  auto value = evaluate_c_in(*rhs->root(), Lane{focus_.core, focus_.slot, focus_.lane}, frame_level_);
  if (!value) return err(value.error());
  Expr::Node cast;
  cast.op = ExprOp::Cast;
  cast.name = engine::type_name(*target->type);
  const engine::CType& tt = engine::strip_typedefs(*target->type);
  std::vector<uint8_t> bytes;
  if (tt.kind == engine::CType::Kind::Struct || tt.kind == engine::CType::Kind::Union ||
      tt.kind == engine::CType::Kind::Array) {
    if (engine::type_name(*value->type) != engine::type_name(*target->type) || value->bytes.size() != tt.size)
      return err("set var: a " + engine::type_name(*value->type) + " cannot be assigned to a " + cast.name);
    bytes = value->bytes;
  } else {
    // Reuse the evaluator's cast on a literal-free tree: the value is already evaluated.
    class Fixed final : public ValueEnv {
     public:
      Fixed(const ValueEnv& base, CValue v) : base_(base), v_(std::move(v)) {}
      const ExprEnv& plain() const override { return base_.plain(); }
      Result<std::optional<CValue>> variable(const std::string& name) const override {
        if (name == "$set_value") return std::optional<CValue>(v_);
        return base_.variable(name);
      }
      Result<std::vector<uint8_t>> read(uint32_t addr, uint32_t size) const override { return base_.read(addr, size); }
      const engine::CType* type_named(const std::string& name) const override { return base_.type_named(name); }

     private:
      const ValueEnv& base_;
      CValue v_;
    };
    std::unique_ptr<ValueEnv> env = insp_.value_env(Lane(focus_), frame_level_);
    Fixed fixed(*env, *value);
    auto leaf = std::make_shared<Expr::Node>();
    leaf->op = ExprOp::Var;
    leaf->var.kind = Variable::Kind::Source;
    leaf->var.name = "$set_value";
    cast.a = leaf;
    // A typedef name or struct tag the DWARF knows; the cast needs the type itself, which
    // parse_type finds by the same spelling.
    auto converted = debug::evaluate_c(cast, fixed, insp_.arena());
    if (!converted) return err("set var: " + converted.error().message);
    bytes = converted->bytes;
  }
  Result<void> written = make_error("nothing written");
  const engine::WarpId id{focus_.core, focus_.slot};
  if (reg) {
    uint32_t word = 0;
    for (size_t i = 0; i < bytes.size() && i < 4; ++i) word |= uint32_t(bytes[i]) << (8 * i);
    // A narrower variable in a register keeps the register's other bits as C's ABI extends it.
    if (tt.kind == engine::CType::Kind::Int && tt.size < 4 && tt.is_signed)
      word = uint32_t(int32_t(word << (32 - 8 * tt.size)) >> (32 - 8 * tt.size));
    written = s_.write_register(id, focus_.lane, *reg, word);
  } else {
    written = s_.write_memory(id, *target->address, bytes);
  }
  if (!written) return err("set var: " + written.error().message);
  out("", {{"set", lhs->text()}, {"bytes", bytes.size()}});
}

}  // namespace vx::cli
