#include "debug/step.hpp"

#include <algorithm>
#include <memory>

#include "device/registers.hpp"

namespace vx::debug {

using Range = std::pair<uint32_t, uint32_t>;

bool SkipRule::matches(const engine::SourceLocation& loc) const {
  if (!is_file) return loc.function == pattern;
  const std::string& f = loc.file;
  if (f == pattern) return true;
  // A base name or a path suffix that starts at a directory boundary.
  return f.size() > pattern.size() && f.compare(f.size() - pattern.size(), pattern.size(), pattern) == 0 &&
         f[f.size() - pattern.size() - 1] == '/';
}

Range range_avoiding(Range r, uint32_t pc, uint32_t avoid) {
  if (avoid < r.first || avoid >= r.second) return r;
  if (pc < avoid) return {r.first, avoid};
  if (pc > avoid) return {avoid + 1, r.second};
  return {pc, pc + 4};
}

namespace {

Range fn_range(const engine::Symbols* sym, uint32_t pc) {
  if (sym)
    if (auto f = sym->function_at(pc)) return {f->lo, f->hi};
  return {pc, pc + 4};
}

}  // namespace

engine::StepPolicy nexti_plan(const engine::Symbols* sym, uint32_t pc, uint32_t word, uint32_t sp0) {
  if (!is_call(word)) return nullptr;
  // A call: run until the lane is back at the return address in this frame.
  const uint32_t ret = pc + 4;
  return [sym, ret, sp0](uint32_t pc, uint32_t sp) -> std::optional<Range> {
    if (pc == ret && sp >= sp0) return std::nullopt;
    return range_avoiding(fn_range(sym, pc), pc, ret);
  };
}

engine::StepPolicy count_plan(const engine::Symbols* sym, uint32_t pc, uint32_t count, bool over_calls,
                              WordReader read_word) {
  struct Count {
    uint32_t left;
    uint32_t prev_pc;
    bool in_call = false;
    uint32_t ret = 0, sp0 = 0;
  };
  auto st = std::make_shared<Count>(Count{count, pc});
  // Asked after each instruction the lane retires: count it, or (nexti) run a call through.
  return [sym, st, over_calls, read_word](uint32_t pc, uint32_t sp) -> std::optional<Range> {
    if (st->in_call) {
      if (!(pc == st->ret && sp >= st->sp0)) return range_avoiding(fn_range(sym, pc), pc, st->ret);
      st->in_call = false;
    } else if (over_calls) {
      auto word = read_word(st->prev_pc);
      if (word && is_call(*word) && pc != st->prev_pc + 4) {
        st->in_call = true;
        st->ret = st->prev_pc + 4;
        st->sp0 = sp;
        return range_avoiding(fn_range(sym, pc), pc, st->ret);
      }
    }
    st->prev_pc = pc;
    if (--st->left == 0) return std::nullopt;
    return Range{pc, pc};  // an empty range: the next instruction asks again
  };
}

engine::StepPolicy line_plan(const engine::Symbols& symbols, const LineStep& from) {
  const engine::Symbols* sym = &symbols;
  const uint32_t pc0 = from.pc, cfa0 = from.cfa;
  const bool over_calls = from.over_calls, until = from.until;
  const auto loc0 = sym->locate(pc0);
  const auto fn0 = sym->function_at(pc0);
  auto range0 = sym->line_range(pc0);
  if (until && range0 && fn0 && fn0->lo <= range0->first) range0->first = fn0->lo;
  auto in = [](const std::optional<Range>& r, uint32_t pc) { return r && pc >= r->first && pc < r->second; };
  auto line_or_insn = [sym](uint32_t pc) -> Range {
    if (auto r = sym->line_range(pc)) return *r;
    return {pc, pc + 4};
  };
  auto rule_says = [skips = from.skips](const engine::SourceLocation& loc) {
    return std::any_of(skips.begin(), skips.end(), [&](const SkipRule& r) { return r.enabled && r.matches(loc); });
  };
  // A step that starts in skipped code (a runtime helper inlined into the kernel) runs on to code
  // that is not; one that starts in the user's code goes through skipped code, not into it.
  const bool started_skipped = loc0 && rule_says(*loc0);
  auto skipped = [=](const std::optional<engine::SourceLocation>& loc) {
    if (!loc) return false;
    if (!started_skipped && loc0 && loc->function == loc0->function && loc->file == loc0->file) return false;
    return rule_says(*loc);
  };
  // next over a recursive call: the callee runs in fn0's own code, so leaving a range does not
  // tell its return; every instruction asks until the callee returns: a jump (not the next
  // instruction: the callee's epilogue also has sp back at its entry value) to a pc with sp back
  // at the callee's entry sp.
  struct Recursion {
    bool active = false;
    uint32_t entry_sp = 0, prev_pc = 0;
  };
  auto rec = std::make_shared<Recursion>();
  return [=](uint32_t pc, uint32_t sp) -> std::optional<Range> {
    const bool in_fn0 = fn0 && pc >= fn0->lo && pc < fn0->hi;
    if (rec->active) {
      const bool returned = sp >= rec->entry_sp && pc != rec->prev_pc + 4 && !(fn0 && pc == fn0->lo);
      rec->prev_pc = pc;
      if (!returned) return Range{pc, pc};
      rec->active = false;  // back in the frame the step started in
    }
    if (!loc0 || loc0->line == 0) {
      // Started without line information: run to code that has it.
      auto loc = sym->locate(pc);
      if (loc && loc->line) return std::nullopt;
      return line_or_insn(pc);
    }
    if (in(range0, pc) && !(fn0 && pc == fn0->lo)) return *range0;
    const bool callee = (!in_fn0 && sp < cfa0) || (fn0 && pc == fn0->lo && sp < cfa0);
    if (callee) {
      auto loc = sym->locate(pc);
      // A skipped callee (the runtime's trampolines, such as vx_serial) runs through, but the
      // engine asks again when it calls out of its own code: a callee of the user's with line
      // information is stepped into there (gdb's step through a trampoline).
      if (over_calls && in_fn0) {
        *rec = Recursion{true, sp, pc};  // at the recursive callee's entry
        return Range{pc, pc};
      }
      if (over_calls || !loc || loc->line == 0 || skipped(loc)) return fn_range(sym, pc);
      // Step into a function with line information: stop after its prologue.
      auto f = sym->function_at(pc);
      if (f && pc == f->lo) {
        if (auto res = sym->resolve(f->name)) {
          for (uint32_t a : res->addresses)
            if (a > pc && a < f->hi) return Range{pc, a};
        }
      }
      return std::nullopt;
    }
    auto loc = sym->locate(pc);
    if (!in_fn0) {
      // Returned to the caller (or left by a tail call): finish the caller's line, then stop.
      if (!loc || loc->line == 0) return std::nullopt;
      auto r = sym->line_range(pc);
      if (r && pc != r->first) return *r;
      if (sym->row_start(pc) == false) return Range{pc, pc + 4};  // not a statement: on
      return std::nullopt;
    }
    if (!loc || loc->line == 0) return line_or_insn(pc);
    if (loc->file == loc0->file && loc->line == loc0->line && loc->function == loc0->function) return line_or_insn(pc);
    if (over_calls && loc->function != loc0->function && fn0 && loc->function != fn0->name && !started_skipped)
      return line_or_insn(pc);                  // inside an inlined call: step over it
    if (skipped(loc)) return line_or_insn(pc);  // inlined code of a skipped file or function
    // gdb's rule for line tables: stop only where a statement of another line begins. A row that
    // is not a statement goes on (the line being stepped stays the current one, so coming back to
    // it goes on too); in the middle of a line (a jump into it) the line runs to its end first.
    const std::optional<bool> row = sym->row_start(pc);
    if (!row) return line_or_insn(pc);
    if (!*row) return Range{pc, pc + 4};
    return std::nullopt;
  };
}

engine::StepPolicy location_plan(const engine::Symbols* sym, std::vector<uint32_t> targets, uint32_t cfa,
                                 std::optional<engine::Symbols::Function> fn) {
  std::sort(targets.begin(), targets.end());
  return [sym, targets, cfa, fn](uint32_t pc, uint32_t sp) -> std::optional<Range> {
    if (std::binary_search(targets.begin(), targets.end(), pc)) return std::nullopt;
    const bool in_fn = fn && pc >= fn->lo && pc < fn->hi;
    if (!in_fn && sp >= cfa) return std::nullopt;  // the frame returned to its caller
    // On while the pc stays clear of every target.
    Range r = fn_range(sym, pc);
    for (uint32_t t : targets) {
      if (t > pc && t < r.second) r.second = t;
      if (t < pc && t >= r.first) r.first = t + 4;
    }
    return r;
  };
}

engine::StepPolicy finish_plan(const engine::Symbols& symbols, uint32_t cfa,
                               std::optional<engine::Symbols::Function> fn, uint32_t ret) {
  const engine::Symbols* sym = &symbols;
  return [sym, cfa, fn, ret](uint32_t pc, uint32_t sp) -> std::optional<Range> {
    const bool in_fn = fn && pc >= fn->lo && pc < fn->hi;
    // Back at the return address with the frame popped (sp is the frame's CFA again). In a
    // recursive function the caller is the same function and deeper frames return to the same
    // address with a lower sp: those go on.
    if (pc == ret && sp >= cfa) return std::nullopt;
    if (sp >= cfa && !in_fn) return std::nullopt;  // left some other way (a tail call's return)
    if (in_fn) return range_avoiding(Range{fn->lo, fn->hi}, pc, ret);
    return range_avoiding(fn_range(sym, pc), pc, ret);
  };
}

engine::StepPolicy finish_inline_plan(const engine::Symbols& symbols, const engine::Variables& variables, uint32_t cfa,
                                      std::optional<engine::Symbols::Function> fn, size_t levels) {
  const engine::Symbols* sym = &symbols;
  const engine::Variables* vars = &variables;
  return [sym, vars, cfa, fn, levels](uint32_t pc, uint32_t sp) -> std::optional<Range> {
    const bool in_fn = fn && pc >= fn->lo && pc < fn->hi;
    if (!in_fn) {
      if (sp >= cfa) return std::nullopt;  // the physical function returned with it
      return fn_range(sym, pc);            // a callee: run it through
    }
    if (vars->frames(pc).size() <= levels) return std::nullopt;
    return Range{pc, pc + 4};
  };
}

// --- One lane's moves ----------------------------------------------------------------------------------

namespace {

constexpr unsigned kRegSp = 2;

Result<const WarpState*> stepping_warp(Inspector& insp, const Lane& l) {
  if (!insp.session().stopped()) return make_error("The kernel is not stopped.");
  const WarpState* w = insp.warp(l);
  if (!w || !w->active) return make_error("No focus warp to step.");
  return w;
}

// The frame's CFA (the sp at the function's entry): below it are its callees, at or above it the callers.
uint32_t frame0_cfa(Inspector& insp, const Lane& l) {
  if (auto frames = insp.unwind(l, 1); !frames.empty()) return frames[0].sp;
  return insp.reg(l, kRegSp).value_or(0);
}

}  // namespace

Result<engine::StepPolicy> plan_stepi(Inspector& insp, const Lane& l, uint32_t count, bool over_calls) {
  auto w = stepping_warp(insp, l);
  if (!w) return w.error();
  const uint32_t pc = (*w)->pc;
  if (count > 1)
    return count_plan(insp.symbols(), pc, count, over_calls, [&insp, l](uint32_t addr) {
      auto v = insp.read_word(l, addr);
      return v ? std::optional<uint32_t>(*v) : std::nullopt;
    });
  if (!over_calls) return engine::StepPolicy();
  auto word = insp.read_word(l, pc);
  if (!word) return engine::StepPolicy();
  return nexti_plan(insp.symbols(), pc, *word, insp.reg(l, kRegSp).value_or(0));
}

Result<engine::StepPolicy> plan_line(Inspector& insp, const Lane& l, bool over_calls, bool until,
                                     const std::vector<SkipRule>& skips) {
  auto w = stepping_warp(insp, l);
  if (!w) return w.error();
  const engine::Symbols* sym = insp.symbols();
  if (!sym || !sym->has_debug_info())
    return make_error("The kernel has no line information; use \"stepi\" and \"nexti\".");
  LineStep from;
  from.pc = (*w)->pc;
  from.sp = insp.reg(l, kRegSp).value_or(0);
  from.cfa = frame0_cfa(insp, l);
  from.over_calls = over_calls;
  from.until = until;
  from.skips = skips;
  return line_plan(*sym, from);
}

Result<engine::StepPolicy> plan_location(Inspector& insp, const Lane& l, std::vector<uint32_t> targets) {
  auto w = stepping_warp(insp, l);
  if (!w) return w.error();
  const engine::Symbols* sym = insp.symbols();
  if (!sym) return make_error("needs the kernel's symbols");
  return location_plan(sym, std::move(targets), frame0_cfa(insp, l), sym->function_at((*w)->pc));
}

Result<FinishPlan> plan_finish(Inspector& insp, const Lane& l, unsigned level) {
  auto w = stepping_warp(insp, l);
  if (!w) return w.error();
  const engine::Symbols* sym = insp.symbols();
  if (!sym) return make_error("\"finish\" needs the kernel's symbols (call-frame information).");
  const std::vector<engine::Frame> frames = insp.unwind(l, 32);
  const std::vector<FrameLevel> levels = insp.frame_levels(frames);
  if (level >= levels.size()) return make_error("no frame " + std::to_string(level) + " at the focus");
  if (level + 1 >= levels.size()) return make_error("\"finish\" not meaningful in the outermost frame.");
  FinishPlan plan;
  plan.frame = levels[level];
  const FrameLevel& sel = plan.frame;
  const unsigned k = sel.phys;
  const uint32_t cfa = frames[k].sp;  // the frame's CFA: below it are its callees
  const auto fn = sym->function_at(sel.scope_pc);
  const engine::Variables* vars = insp.variables();
  if (sel.inlined) {
    // gdb's finish out of an inlined call: on in the same physical frame until the pc has left the
    // inlined instance (fewer function levels there than the instance's caller has).
    if (k != 0)
      return make_error(
          "\"finish\" out of an inlined call in a caller's frame is not supported yet (select frame 0 or a physical "
          "frame)");
    if (!vars) return make_error("\"finish\" out of an inlined call needs the kernel's debug information");
    size_t levels_here = 0;
    for (const FrameLevel& f : levels) levels_here += f.phys == 0;
    const size_t target = levels_here - sel.inline_level - 1;  // levels once the instance is left
    plan.policy = finish_inline_plan(*sym, *vars, cfa, fn, target);
    return plan;  // gdb prints no value for an inlined call
  }
  plan.policy = finish_plan(*sym, cfa, fn, frames[k + 1].pc);
  // The function's return type (DWARF): none for void.
  if (vars) {
    auto scopes = vars->frames(sel.scope_pc);
    if (sel.inline_level < scopes.size()) {
      plan.return_type = scopes[sel.inline_level].return_type;
      plan.known_type = true;
    }
  }
  return plan;
}

}  // namespace vx::debug
