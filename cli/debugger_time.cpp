// The debugger's time-travel commands (docs/cli.md, "Time travel"): reverse moves, goto, checkpoints,
// when, and watchpoints. The moves themselves live in replay/ (replay::Timeline); this file parses,
// reports and keeps the front end's state (focus, breakpoint numbers) in step.
#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include "checkpoint/store.hpp"
#include "cli/debugger.hpp"
#include "cli/text.hpp"
#include "device/isa.hpp"

namespace vx::cli {

namespace {

using engine::StopEvent;
using engine::StopReason;

std::string where_text(const engine::WatchSpec& w) {
  return w.local ? " (local memory of core " + std::to_string(w.core) + ")" : "";
}

using text::pad;

const char* mark_text(StopReason r) {
  switch (r) {
    case StopReason::Breakpoint: return "breakpoint";
    case StopReason::Step: return "step";
    case StopReason::Exception: return "device exception";
    case StopReason::Assertion: return "assertion";
    case StopReason::Watchdog: return "watchdog";
    case StopReason::Watchpoint: return "watchpoint";
    case StopReason::Interrupt:
    case StopReason::InstructionCount: return "stop";
    default: return engine::stop_reason_name(r);
  }
}

}  // namespace

bool Debugger::open_at(engine::TimePoint t, engine::WarpId warp, uint32_t lane, const std::string& title) {
  const int before = errors_;
  if (state_ == State::NotStarted) {
    // The launch starts like a first `continue` that stops at the point.
    auto first = s_.run_to(t.instret);
    if (!first) {
      err(first.error());
      return false;
    }
    if (first->reason != StopReason::InstructionCount || first->launch != t.launch) {
      report_move(first);
      err("the run did not reach launch " + std::to_string(t.launch) + ", instruction " + std::to_string(t.instret));
      return false;
    }
  }
  focus_.lane = lane;
  report_move(s_.seek(t, StopReason::Step, warp), title);
  return errors_ == before;
}

// --- Reporting a move --------------------------------------------------------------------------------

void Debugger::settle(const StopEvent& ev, const std::vector<int>& bps) {
  switch (ev.reason) {
    case StopReason::Exited:
      state_ = State::Exited;
      exit_code_ = ev.exit_code;
      device_stop_ = false;
      focus_.valid = false;
      break;
    case StopReason::EndOfRecording:
      state_ = State::Exited;
      device_stop_ = false;
      focus_.valid = false;
      break;
    case StopReason::Killed:
      state_ = State::Killed;
      killed_message_ = ev.message;
      killed_code_ = ev.error;
      focus_.valid = false;
      break;
    default:
      state_ = State::Stopped;
      device_stop_ =
          ev.reason == StopReason::Exception || ev.reason == StopReason::Assertion || ev.reason == StopReason::Watchdog;
      if (ev.reason != StopReason::Breakpoint || bps.empty()) set_default_focus(ev);
      if (ev.reason == StopReason::Watchpoint && !last_watches_.empty()) {
        const auto& w = last_watches_.front();
        set_focus(Lane{w.core, w.warp, w.lanes.empty() ? 0u : w.lanes.front()});
      }
      break;
  }
  list_next_ = 0;
  x_next_.reset();
  frame_level_ = 0;
}

void Debugger::adopt_stop(const StopEvent& ev, std::optional<Lane> focus) {
  select_launch(ev.launch);
  last_watches_.clear();
  settle(ev, {});
  if (focus && state_ == State::Stopped) set_focus(*focus);
}

void Debugger::report_move(Result<StopEvent> ev, const std::string& title) {
  drain_console();
  if (!ev) return err(ev.error());
  select_launch(ev->launch);
  std::vector<int> bps;
  last_watches_.clear();
  if (ev->reason == StopReason::Breakpoint) {
    // The breakpoint's stop as a forward run shows it (hit counts are those of the forward runs).
    // A stop whose conditions no longer hold (a breakpoint changed since) names the breakpoints there.
    bps = breakpoint_stop(*ev, false);
    if (bps.empty()) bps = bps_.placed_at(*ev);
  }
  if (ev->reason == StopReason::Watchpoint) last_watches_ = bps_.watch_hit(*ev, false);
  settle(*ev, bps);
  StopView view = make_stop_view(*ev, bps, ev->reason == StopReason::Step);
  if (!title.empty()) view.title = title;
  if (ev->reason == StopReason::Watchpoint) view.watches = last_watches_;
  sink_.stop(view);
  report_divergence();
  show_displays();
  note_store();
}

void Debugger::note_store() {
  const uint64_t failures = s_.stats().store_failures + s_.stats().ops_failures;
  if (failures == announced_store_failures_) return;
  if (stop_on_store_error_) {
    err("The recording could not be written (" + s_.store_error() + "); the session ends (--stop-on-store-error).");
    quit_ = true;
  } else if (announced_store_failures_ == 0) {
    err("The recording could not be written (" + s_.store_error() +
        "); the session goes on, and what was not written is retried at the next stop.");
  }
  announced_store_failures_ = failures;
}

// --- Reverse moves -------------------------------------------------------------------------------------

void Debugger::cmd_reverse(const std::string& name, Args a) {
  const bool counted =
      name == "reverse-stepi" || name == "reverse-nexti" || name == "reverse-step" || name == "reverse-next";
  uint32_t n = 1;
  if (counted) {
    auto c = parse_count(a.args);
    if (!c) return usage(name + ": " + c.error().message);
    n = *c;
  } else if (!a.args.empty()) {
    return usage("\"" + name + "\" takes no arguments");
  }
  if (!s_.store()) return err("Time travel needs the recording: this session runs with --no-db.");
  if (name == "reverse-continue") {
    if (state_ == State::NotStarted) return err("The kernel is not running: \"continue\" starts it.");
    auto ev = timeline_.reverse_continue([this](const StopEvent& hit) { return bps_.accept(hit); });
    return report_move(ev);
  }
  Result<StopEvent> ev = make_error("");
  uint32_t i = 0;
  if (state_ == State::Exited) {
    // From the exit, the first move back lands before the launch's last instruction (rr's
    // reverse-stepi from the exit); the rest of the count goes on from there.
    ev = timeline_.back_from_end();
    if (!ev || ev->reason != StopReason::Step) return report_move(ev);
    settle(*ev, {});
    if (++i == n) return report_move(ev);
  }
  if (!ensure_focus()) return;
  for (; i < n; ++i) {
    const WarpState* w = focus_warp();
    if (!w) return err("No focus warp to move.");
    const engine::WarpId id{focus_.core, focus_.slot};
    const uint32_t lane = focus_.lane;
    if (name == "reverse-stepi")
      ev = timeline_.reverse_stepi(id, lane);
    else if (name == "reverse-nexti")
      ev = timeline_.reverse_nexti(id, lane);
    else if (name == "reverse-step")
      ev = timeline_.reverse_step(id, lane);
    else if (name == "reverse-next")
      ev = timeline_.reverse_next(id, lane);
    else
      ev = timeline_.reverse_finish(id, lane);
    if (!ev) break;
    if (i + 1 < n && ev->reason == StopReason::Step) {
      // Keep the focus on the moved warp and lane for the next move.
      set_focus(Lane{id.core, id.slot, lane});
      state_ = State::Stopped;
      continue;
    }
    break;
  }
  if (ev && ev->reason == StopReason::Step) {
    // The stop is the moved warp's: keep its lane in focus.
    const engine::WarpId id{focus_.core, focus_.slot};
    const uint32_t lane = focus_.lane;
    report_move(ev);
    if (focus_warp() && focus_.core == id.core && focus_.slot == id.slot) focus_.lane = lane;
    return;
  }
  report_move(ev);
}

bool Debugger::ensure_recording() {
  if (s_.store()) return true;
  err("Time travel needs the recording: this session runs with --no-db.");
  return false;
}

void Debugger::cmd_goto(Args a) {
  if (!ensure_recording()) return;
  const std::string arg(trim(a.args));
  if (arg.empty()) return usage("goto: expected a checkpoint number (info checkpoints), \"start\" or \"end\"");
  if (arg == "start") {
    goto_start();
  } else if (arg == "end") {
    goto_end();
  } else if (const size_t colon = arg.find(':'); colon != std::string::npos) {
    auto launch = parse_u32(arg.substr(0, colon));
    auto instret = parse_u64(arg.substr(colon + 1));
    if (!launch || !instret || *launch == 0)
      return usage("goto: '" + arg + "' is not LAUNCH:INSTRUCTION (a launch from 1 and its warp instruction count)");
    goto_point(engine::TimePoint{*launch, *instret});
  } else {
    auto n = parse_u32(arg);
    if (!n)
      return usage("goto: expected a checkpoint number, \"start\", \"end\" or LAUNCH:INSTRUCTION: " +
                   n.error().message);
    goto_mark(*n);
  }
}

bool Debugger::goto_point(engine::TimePoint t, std::optional<Lane> lane) {
  const int before = errors_;
  as_command("goto " + std::to_string(t.launch) + ":" + std::to_string(t.instret), [this, t, lane] {
    if (!ensure_recording()) return;
    // The lane asked for, else the focus warp, stays in focus when it is there at that point.
    std::optional<engine::WarpId> warp;
    if (lane)
      warp = engine::WarpId{lane->core, lane->slot};
    else if (focus_warp())
      warp = engine::WarpId{focus_.core, focus_.slot};
    goto_lane_ = lane;
    report_move(s_.seek(t, StopReason::InstructionCount, warp),
                "Launch " + std::to_string(t.launch) + ", instruction " + std::to_string(t.instret));
    goto_lane_.reset();
  });
  return errors_ == before;
}

bool Debugger::goto_start() {
  const int before = errors_;
  as_command("goto start", [this] {
    if (!ensure_recording()) return;
    Result<StopEvent> ev = timeline_.goto_start();
    report_move(ev, ev ? "Start of launch " + std::to_string(ev->launch) : "");
  });
  return errors_ == before;
}

bool Debugger::goto_end() {
  const int before = errors_;
  as_command("goto end", [this] {
    if (!ensure_recording()) return;
    report_move(timeline_.goto_end(), "End of the recorded history");
  });
  return errors_ == before;
}

bool Debugger::goto_mark(uint32_t number) {
  const int before = errors_;
  as_command("goto " + std::to_string(number), [this, number] {
    if (!ensure_recording()) return;
    // The lane the mark was about (its warp, the lane recorded with it).
    if (auto marks = s_.marks())
      for (const engine::Mark& m : *marks)
        if (m.number == number) goto_lane_ = Lane{m.warp.core, m.warp.slot, m.lane};
    Result<StopEvent> ev = timeline_.goto_mark(number);
    std::string title;
    if (ev && ev->reason != StopReason::Exception && ev->reason != StopReason::Assertion &&
        ev->reason != StopReason::Watchdog)
      title = "Checkpoint " + std::to_string(number);
    report_move(ev, title);
    goto_lane_.reset();
  });
  return errors_ == before;
}

void Debugger::cmd_checkpoint(Args a) {
  if (!a.args.empty()) return usage("\"checkpoint\" takes no arguments");
  if (!s_.store()) return err("Checkpoints need the recording: this session runs with --no-db.");
  if (!ensure_stopped()) return;
  if (auto r = s_.mark("checkpoint"); !r) return err(r.error());
  auto marks = s_.marks();
  if (!marks) return err(marks.error());
  const engine::TimePoint now = s_.now();
  for (const engine::Mark& m : *marks)
    if (m.when == now)
      return out("Checkpoint " + std::to_string(m.number) + " at launch " + std::to_string(now.launch) +
                     ", instruction " + std::to_string(now.instret) + ".",
                 {{"checkpoint", m.number}, {"launch", now.launch}, {"instret", now.instret}});
  err(make_error(ErrorCode::Internal, "internal error: the mark was not listed"));
}

void Debugger::cmd_when(Args a) {
  if (!a.args.empty()) return usage("\"when\" takes no arguments");
  if (state_ == State::NotStarted) return err("The kernel is not running: \"continue\" starts it.");
  const engine::TimePoint now = s_.now();
  std::string text = "launch " + std::to_string(now.launch) + ", instruction " + std::to_string(now.instret);
  nlohmann::json data = {{"launch", now.launch}, {"instret", now.instret}};
  if (const WarpState* w = focus_warp()) {
    text += "; core " + std::to_string(focus_.core) + " warp " + std::to_string(focus_.slot) + " has retired " +
            std::to_string(w->instret) + " instructions";
    data["core"] = focus_.core;
    data["warp"] = focus_.slot;
    data["warp_instret"] = w->instret;
  }
  if (!s_.stopped()) text += " (the launch has ended)";
  out(text, data);
}

// --- Checkpoints ------------------------------------------------------------------------------------------

void Debugger::info_checkpoints(bool all) {
  if (!s_.store())
    return out("No recording (the session runs with --no-db).", {{"checkpoints", nlohmann::json::array()}});
  auto marks = s_.marks();
  if (!marks) return err("cannot list the checkpoints: " + marks.error().message);
  const engine::TimePoint now = s_.now();
  const bool at_stop = s_.stopped();
  nlohmann::json list = nlohmann::json::array();
  std::string text;
  if (marks->empty()) {
    text = "No checkpoints yet in " + s_.store()->dir() + ".\n";
  } else {
    text = "   Num  Launch  Instruction   Stop\n";
    for (size_t i = 0; i < marks->size(); ++i) {
      const engine::Mark& m = (*marks)[i];
      const bool here = at_stop && m.when == now;
      text += std::string(here ? " * " : "   ") + pad(std::to_string(m.number), 5) +
              pad(std::to_string(m.when.launch), 8) + pad(std::to_string(m.when.instret), 14) +
              (m.text == "checkpoint" ? "checkpoint" : mark_text(m.reason)) + "\n";
      list.push_back({{"number", m.number},
                      {"launch", m.when.launch},
                      {"instret", m.when.instret},
                      {"stop", m.text == "checkpoint" ? "checkpoint" : mark_text(m.reason)},
                      {"current", here}});
    }
  }
  nlohmann::json data = {{"checkpoints", list}};
  if (all) {
    auto keys = s_.checkpoint_keys();
    if (!keys) return err("cannot list the checkpoints: " + keys.error().message);
    text += "All " + std::to_string(keys->size()) +
            " checkpoints stored (automatic ones included; a stop without one is reached from the one before it):\n";
    nlohmann::json every = nlohmann::json::array();
    for (const auto& k : *keys) {
      text += "  launch " + std::to_string(k.launch) + ", instruction " + std::to_string(k.instret) + "\n";
      every.push_back({{"launch", k.launch}, {"instret", k.instret}});
    }
    data["all"] = every;
  }
  out(text, data);
}

// --- Watchpoints ------------------------------------------------------------------------------------------

void Debugger::cmd_watch(const std::string& name, Args a) {
  if ((state_ == State::Exited || state_ == State::Killed) && !s_.store())
    return err("The kernel has ended; watchpoints have no effect (no recording to go back in).");
  // LOCATION [if COND]: the location may hold blanks ("*(unsigned int *) &bins").
  std::string loc(trim(a.args)), cond;
  for (size_t i = 0; i + 2 <= loc.size(); ++i) {
    const bool start = i == 0 || loc[i - 1] == ' ' || loc[i - 1] == '\t';
    const bool end = i + 2 == loc.size() || loc[i + 2] == ' ' || loc[i + 2] == '\t';
    if (start && end && loc.compare(i, 2, "if") == 0) {
      cond = std::string(trim(std::string_view(loc).substr(i + 2)));
      loc = std::string(trim(std::string_view(loc).substr(0, i)));
      if (cond.empty()) return usage(name + ": \"if\" without a condition");
      break;
    }
  }
  if (loc.empty()) return usage(name + ": expected an expression (a variable, an array element, *(TYPE *)ADDRESS)");
  // gdb's -l / -location EXPR: the memory EXPR designates now. vxreplay watches memory either way
  // (a hardware watchpoint of the lvalue's address and size), so the flag changes nothing else.
  for (const char* flag : {"-location ", "-l "})
    if (loc.rfind(flag, 0) == 0) loc = std::string(trim(std::string_view(loc).substr(std::strlen(flag))));
  if (loc.empty()) return usage(name + ": expected an expression after -location");
  if (auto e = Expr::parse(loc); !e) return usage(name + ": " + e.error().message);
  if (auto c = Expr::parse(cond); !cond.empty() && !c) return usage("bad condition: " + c.error().message);
  auto id = bps_.add_watchpoint(debug::WatchRequest{name, loc, cond},
                                focus_warp() ? std::optional<Lane>(focus_) : std::nullopt, frame_level_);
  if (!id) return err(id.error());
  const UserBreakpoint& b = *bps_.find(*id);
  const uint32_t addr = b.watch.addr, len = b.watch.len;
  std::string what = name == "watch"    ? "Hardware watchpoint "
                     : name == "rwatch" ? "Hardware read watchpoint "
                                        : "Hardware access (read/write) watchpoint ";
  out(what + std::to_string(b.id) + ": " + b.location + where_text(b.watch),
      {{"watchpoint", b.id}, {"kind", name}, {"address", addr}, {"length", len}, {"local", b.watch.local}});
}

void Debugger::info_watchpoints() {
  nlohmann::json list = nlohmann::json::array();
  std::string text;
  for (const auto& [id, b] : bps_.all()) {
    if (!b.is_watchpoint()) continue;
    if (text.empty()) text = "Num  Type             Enb  Address     What\n";
    describe_watchpoint(b, &text, &list);
  }
  if (text.empty()) text = "No watchpoints.";
  out(text, {{"watchpoints", list}});
}

void Debugger::describe_watchpoint(const UserBreakpoint& b, std::string* text, nlohmann::json* list) const {
  *text += pad(std::to_string(b.id), 5) +
           pad(b.watch_command == "rwatch"   ? "read watchpoint"
               : b.watch_command == "awatch" ? "acc watchpoint"
                                             : "hw watchpoint",
               17) +
           pad(b.enabled ? "y" : "n", 5) + pad(hex32(b.watch.addr), 12) + b.location + where_text(b.watch) + "\n";
  if (b.condition) *text += "\tstop only if " + b.condition->text() + "\n";
  if (b.hits) *text += "\twatchpoint already hit " + std::to_string(b.hits) + (b.hits == 1 ? " time\n" : " times\n");
  list->push_back({{"id", b.id},
                   {"type", b.watch_command},
                   {"location", b.location},
                   {"address", b.watch.addr},
                   {"length", b.watch.len},
                   {"enabled", b.enabled},
                   {"hits", b.hits},
                   {"condition", b.condition ? nlohmann::json(b.condition->text()) : nlohmann::json(nullptr)}});
}

}  // namespace vx::cli
