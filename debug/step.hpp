// Step plans (docs/architecture.md, "The debugger core"): how a forward move of one lane goes on,
// as engine::StepPolicy functions the engine asks after each instruction the lane retires. One
// definition of a call and a return for all of them (device/registers.hpp: t0 millicode included).
// The front ends only choose a plan and report the stop.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "debug/inspect.hpp"
#include "debug/lane.hpp"
#include "engine/session.hpp"
#include "engine/symbols.hpp"
#include "engine/variables.hpp"

namespace vx::debug {

// `skip`: files (by base name or path suffix) and functions that `step` goes through.
struct SkipRule {
  int id = 0;
  bool is_file = true;
  std::string pattern;
  bool enabled = true;
  bool matches(const engine::SourceLocation& loc) const;
};

// A range around pc that leaves out `avoid` (so that reaching it asks the plan again).
std::pair<uint32_t, uint32_t> range_avoiding(std::pair<uint32_t, uint32_t> r, uint32_t pc, uint32_t avoid);

// Reads the instruction word at an address (the plans that look at the instruction just run).
using WordReader = std::function<std::optional<uint32_t>(uint32_t addr)>;

// nexti over the call at pc (word is the instruction there): on until the lane is back at the
// return address with sp at or above sp0. nullptr when the instruction is not a call (a plain stepi).
engine::StepPolicy nexti_plan(const engine::Symbols* sym, uint32_t pc, uint32_t word, uint32_t sp0);
// stepi N / nexti N: one run to the count, calls run through for nexti.
engine::StepPolicy count_plan(const engine::Symbols* sym, uint32_t pc, uint32_t count, bool over_calls,
                              WordReader read_word);

// step / next / until from pc with sp and the frame's CFA cfa0: on to the start of another source
// line of this function (next: calls and inlined calls run through; step: into a callee with line
// information, past its prologue, unless a skip rule names it; until: gdb's rule by address, the
// step's range runs from the function's start to the end of the current line, so a jump back in a
// loop does not stop and the first line reached at a higher address does).
struct LineStep {
  uint32_t pc = 0, sp = 0, cfa = 0;
  bool over_calls = false;
  bool until = false;
  std::vector<SkipRule> skips;
};
engine::StepPolicy line_plan(const engine::Symbols& sym, const LineStep& from);

// until LOCATION / advance LOCATION: on until the lane stands at one of `targets`, or the frame it
// started in (function fn, CFA cfa) returns to its caller (gdb's momentary breakpoints at the
// location and at the caller, for the lane that moves).
engine::StepPolicy location_plan(const engine::Symbols* sym, std::vector<uint32_t> targets, uint32_t cfa,
                                 std::optional<engine::Symbols::Function> fn);

// finish out of a physical frame whose CFA is cfa and whose code is fn, to its caller's return
// address ret.
engine::StepPolicy finish_plan(const engine::Symbols& sym, uint32_t cfa, std::optional<engine::Symbols::Function> fn,
                               uint32_t ret);
// finish out of an inlined call in frame 0: on in the physical function fn (CFA cfa) until the pc
// has left the call, where the function levels are at most `levels` (callees run through).
engine::StepPolicy finish_inline_plan(const engine::Symbols& sym, const engine::Variables& vars, uint32_t cfa,
                                      std::optional<engine::Symbols::Function> fn, size_t levels);

// --- One lane's moves at a stop, planned from its state (what the prompt's commands ask for) ----------
// Each returns the policy for Session::step(l.warp(), 1 << l.lane, policy); nullptr is a plain
// stepi. Errors say why the lane cannot make the move.

// stepi (over_calls false) or nexti, count times.
Result<engine::StepPolicy> plan_stepi(Inspector& insp, const Lane& l, uint32_t count, bool over_calls);
// step / next / until (no argument).
Result<engine::StepPolicy> plan_line(Inspector& insp, const Lane& l, bool over_calls, bool until,
                                     const std::vector<SkipRule>& skips);
// until LOCATION / advance LOCATION: targets are the location's addresses.
Result<engine::StepPolicy> plan_location(Inspector& insp, const Lane& l, std::vector<uint32_t> targets);
// finish out of frame `level` (as backtrace numbers it), with what the stop then reports.
struct FinishPlan {
  engine::StepPolicy policy;
  FrameLevel frame;                            // the frame being finished
  bool known_type = false;                     // DWARF gave the function's return type
  const engine::CType* return_type = nullptr;  // nullptr with known_type: void; an inlined call: no value
};
Result<FinishPlan> plan_finish(Inspector& insp, const Lane& l, unsigned level);

}  // namespace vx::debug
