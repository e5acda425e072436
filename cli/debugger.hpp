// The debugger session's command interpreter: gdb-like commands over an engine::Session
// (docs/cli.md, "Debugging"). It parses and prints; what the commands mean is the debugger core's
// (debug/: breakpoints and their hit filter, step plans, frames, values). It keeps the focus (one
// lane of one warp) and turns the engine's stops into StopViews for the sink.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/console.hpp"
#include "cli/output.hpp"
#include "debug/breakpoints.hpp"
#include "debug/expr.hpp"
#include "debug/inspect.hpp"
#include "debug/lane.hpp"
#include "debug/step.hpp"
#include "debug/values.hpp"
#include "device/host_runtime.hpp"
#include "engine/session.hpp"
#include "engine/symbols.hpp"
#include "engine/variables.hpp"
#include "replay/history.hpp"
#include "replay/timeline.hpp"

namespace vx::cli {

// The debugger core's vocabulary (debug/), which the prompt prints.
using debug::c_to_int;
using debug::CValue;
using debug::Expr;
using debug::ExprEnv;
using debug::ExprOp;
using debug::format_c;
using debug::Lane;
using debug::parse_register;
using debug::TypeArena;
using debug::ValueEnv;
using debug::Variable;

class Debugger {
  friend struct CommandTables;  // the command table's handlers call the command functions

 public:
  // symbols may be null (no symbol information: locations are addresses only).
  Debugger(engine::Session& session, const engine::Symbols* symbols, const GridLaunch& launch, Sink& sink);
  ~Debugger();

  // Runs one command line. Returns false when the session should end (quit).
  bool execute(const std::string& line);

  // The prompt's commands, one entry each (cli/command_table.hpp): names, help and handler. The
  // table is the dispatch: execute() runs the entry a line resolves to.
  using Handler = void (*)(Debugger&, const CommandLine&);
  using InfoHandler = void (*)(Debugger&, const std::string& args);
  static const std::vector<CommandEntry<Handler>>& commands();
  static const std::vector<CommandEntry<InfoHandler>>& info_commands();

  // What front ends ask (vxreplay run, replay, a host program's session: --break, --at, attach):
  // each does what its prompt command does, and reports the same way, as that command (JSON
  // events name it), followed by the breakpoint commands it ran into; the prompt's commands call
  // the same functions. Those that return bool: false when they reported an error.
  bool add_breakpoint(const std::string& spec, bool temporary = false);  // break SPEC: LOC [if COND]
  void resume();                                                         // continue
  bool goto_mark(uint32_t number);                                       // goto N (info checkpoints)
  bool goto_start();                                                     // goto start: the current launch's first point
  bool goto_end();                                                       // goto end
  // goto LAUNCH:INSTRUCTION; lane: the lane to focus there when its warp is there.
  bool goto_point(engine::TimePoint t, std::optional<Lane> lane = std::nullopt);
  void show_warps();  // info warps
  // "launch 2 (scale)": a launch by number and its kernel function.
  std::string launch_label(uint32_t launch) const;
  void show_checkpoints() { info_checkpoints(false); }                      // info checkpoints
  void show_locals() { info_variables(false); }                             // info locals
  void show_args() { info_variables(true); }                                // info args
  void show_registers(const std::string& which) { info_registers(which); }  // info registers [NAMES]

  // The GDB server's view (cli/gdb_server.cpp): takes `ev` as the current stop and one lane as the
  // focus, so that `monitor` commands see the state gdb sees.
  void adopt_stop(const engine::StopEvent& ev, std::optional<Lane> focus);
  // The kernel's source variables (print over C names); null: registers and addresses only.
  void set_variables(const engine::Variables* vars) {
    vars_ = vars;
    insp_.set_variables(vars);
  }
  // A host program's kernel images (per-launch symbols): locations resolve in each, a stop reads
  // its launch's; images_changed() after one is added resolves pending breakpoints.
  void set_images(const debug::Images* images);
  void images_changed();
  // Makes the launch's image's symbols current (a host program's images each have their own).
  void select_launch(uint32_t launch);
  // Starts the session at point t of its launch, right before warp `warp` executes the instruction
  // that takes the launch to t + 1, with the focus on `lane` (vxreplay diff --open). Reported as a
  // stop titled `title`; false (the error reported) when the point cannot be reached.
  bool open_at(engine::TimePoint t, engine::WarpId warp, uint32_t lane, const std::string& title);

  // Errors reported so far (a failed --break makes the session a usage error).
  int errors() const { return errors_; }
  // End the session (as quit does) when the recording cannot be written, instead of going on.
  void set_stop_on_store_error(bool on) { stop_on_store_error_ = on; }
  // Commands that read files (source) are refused with `why` when it is not empty (a GDB client's
  // `monitor` commands, docs/gdb.md "Trust").
  void set_file_access(std::string why) { no_files_ = std::move(why); }
  // A host program's workload (vxreplay run -- PROGRAM): stop headers name the launch and its kernel.
  void set_host_workload(bool on) { host_workload_ = on; }

  // Drains what is left of the console and reports the end of the session; returns the process
  // exit status (docs/cli.md).
  // `status` overrides the computed status (e.g. a usage error).
  int finish_session(const std::string& store_dir, std::optional<int> status = std::nullopt);

 private:
  using UserBreakpoint = debug::Breakpoint;
  // The lane the prompt shows (its core, slot and lane), when `valid`.
  struct Focus : Lane {
    bool valid = false;
  };
  void set_focus(const Lane& l) {
    static_cast<Lane&>(focus_) = l;
    focus_.valid = true;
  }
  enum class State { NotStarted, Stopped, Exited, Killed };

  // Command handlers: each reports its own output and errors.
  using Args = const CommandLine&;
  // False (and a usage error) when the command was given arguments: "\"NAME\" takes no arguments".
  bool no_args(Args a) { return no_args(a.name, a.args); }
  bool no_args(const std::string& what, const std::string& args);
  void quit() { quit_ = true; }
  // Runs `work` as the command `text` (a front end's call): named so in reports, then the
  // breakpoint commands it queued. Inside a command (a handler calling a front end's function) it
  // is only the work. Returns whether the session goes on.
  bool as_command(const std::string& text, const std::function<void()>& work);
  // The first command of a line or a call, then the breakpoint commands it queued.
  bool run_command(const std::function<bool()>& first);
  bool in_command_ = false;
  bool ensure_recording();  // reports an error when the session has no recording (--no-db)
  void cmd_continue(Args a);
  void cmd_stepi(Args a, bool over_calls);
  void cmd_step(Args a, bool over_calls);
  void cmd_finish(Args a);
  void cmd_break(Args a, bool temporary);
  // A breakpoint at LOCATION (the focus lane's view), not reported: its number or the error.
  Result<int> place_breakpoint(const std::string& location, const std::string& condition, bool temporary);
  void cmd_delete(Args a);
  void cmd_enable(Args a, bool enable);
  void cmd_condition(Args a);
  void cmd_info(Args a);
  void cmd_print(Args a);
  void cmd_x(Args a);
  void cmd_disassemble(Args a);
  void cmd_list(Args a);
  void cmd_backtrace(Args a);
  void cmd_focus(const std::string& first, Args a);
  void cmd_help(Args a);
  // C variables (debugger_vars.cpp).
  void cmd_print_c(const Expr& e, char fmt, bool all_lanes);
  void cmd_ptype(Args a, bool expand);
  void cmd_display(Args a);
  void show_displays(int only = 0);  // 0: every display
  void cmd_undisplay(Args a);
  void info_display();
  void info_variables(bool params);
  void info_address(const std::string& name);
  void cmd_frame(const std::string& name, Args a);
  void cmd_skip(Args a);
  void cmd_set(Args a);
  // Scripted stops (debugger_script.cpp).
  void cmd_commands(Args a);
  void cmd_define(Args a);
  void cmd_dprintf(Args a);
  void cmd_printf(Args a);
  void cmd_echo(Args a);
  void cmd_ignore(Args a);
  void cmd_source(Args a);
  void cmd_advance(const std::string& name, Args a);
  void info_symbol(const std::string& args);
  void info_line(const std::string& args);
  // Runs a breakpoint's commands after the command that stopped there.
  void queue_breakpoint_commands(const std::vector<int>& bps);
  std::vector<std::string> completions() const;  // command names, info subcommands, symbols
 public:
  // Names for tab completion at the prompt.
  std::vector<std::string> completion_words() const { return completions(); }

 private:
  // `commands` and `define` read the following lines up to "end".
  struct Collecting {
    bool active = false;
    std::vector<int> bps;  // commands
    std::string define;    // define
    std::vector<std::string> lines;
  } collecting_;
  std::map<std::string, std::vector<std::string>> user_commands_;
  // Breakpoint commands to run after the current command, with the breakpoint each comes from.
  std::vector<std::pair<int, std::string>> pending_;
  unsigned nesting_ = 0;  // user commands and source files running inside each other
  void info_skip();
  // `skip`: files (matched by base name or path suffix) and functions that step goes through.
  using SkipRule = debug::SkipRule;
  std::vector<SkipRule> skips_;
  int next_skip_ = 1;
  using FrameLevel = debug::FrameLevel;
  using FrameView = debug::FrameView;
  // Evaluates a C expression in the focus lane, in the selected frame.
  Result<CValue> evaluate_c_in(const Expr::Node& e, const Lane& l, unsigned level) {
    return insp_.evaluate_c(e, l, level);
  }
  // Time travel (debugger_time.cpp).
  void cmd_reverse(const std::string& name, Args a);
  void cmd_goto(Args a);
  void cmd_checkpoint(Args a);
  void cmd_when(Args a);
  void cmd_watch(const std::string& name, Args a);
  // Questions over the history (debugger_history.cpp).
  void cmd_origin(Args a);
  void info_writes(const std::string& args);
  void info_executions(const std::string& args);
  // The history's writes (kept until the history grows) or, with pcs, the executions of those pcs
  // (a pass of its own); nullptr after reporting why not. `name` starts the messages.
  replay::HistoryIndex* history(const std::set<uint32_t>& pcs, const std::string& name);
  std::string write_text(const replay::HistoryIndex& h, const replay::WriteRecord& w, nlohmann::json* data) const;
  // origin -depth: one level, the inputs of `writes` (appended to *text), and the writes that
  // produced those inputs (the next level).
  Result<std::pair<nlohmann::json, std::vector<replay::WriteRecord>>> follow_values(
      const replay::HistoryIndex& h, const std::vector<replay::WriteRecord>& writes, uint32_t depth, std::string* text);
  // One level's text (appended) and JSON from the inputs of each followed value, and the writes
  // behind its loads (the next level).
  std::pair<nlohmann::json, std::vector<replay::WriteRecord>> describe_inputs(
      const replay::HistoryIndex& h, const std::vector<const std::vector<replay::ValueSource>*>& sources, bool cut,
      bool unreached, uint32_t depth, uint32_t launch, std::string* text);
  // origin of a register of the focus lane (DWARF number: 0..31 x, 32..63 f).
  void origin_of_register(const std::string& text, unsigned reg, uint32_t depth, bool go);
  std::unique_ptr<replay::HistoryIndex> history_, executions_;
  // How far each launch went when they were gathered (Session::history_extent), and executions_'s pcs.
  std::vector<uint64_t> history_extent_, executions_extent_;
  std::set<uint32_t> executions_pcs_;
  double gathered_ms_ = 0;                                            // the last history() call's gathering (0: reused)
  uint32_t read_from_recording_ = 0, history_launches_gathered_ = 0;  // by the last gathering
  std::string history_note_;  // what the last history() call could not read from or keep in the recording
  // What an answer from h says it could not read ("" when nothing).
  std::string history_unread(const replay::HistoryIndex& h) const;
  nlohmann::json history_data(const replay::HistoryIndex& h, std::chrono::steady_clock::time_point start) const;
  void info_watchpoints();
  void describe_watchpoint(const UserBreakpoint& b, std::string* text, nlohmann::json* list) const;
  // Reports the stop a time move reached (or its error).
  void report_move(Result<engine::StopEvent> ev, const std::string& title = "");
  // The state a stop leaves (state_, device_stop_, focus) and its report.
  void settle(const engine::StopEvent& ev, const std::vector<int>& bps);
  // Says once that the recording could not be written (a full disk); finish_session exits 74.
  void note_store();
  // A read found the recording damaged: says so once and ends the session (exit 65); true then.
  bool refuse_damage();
  bool damage_reported_ = false;
  // Reports the divergent plain branches not reported yet, one line each (at a stop, at the end).
  void report_divergence();
  std::set<uint32_t> divergence_reported_;  // branch PCs already reported
  uint64_t announced_store_failures_ = 0;
  bool stop_on_store_error_ = false;
  bool quit_ = false;  // the session ends after the current command

  void info_breakpoints();
  void info_ctas();
  void info_warps();
  void info_lanes();
  void info_registers(const std::string& args);
  void info_checkpoints(bool all);
  void info_session();  // debugger_live.cpp
  void info_launches();
  // "launch N (KERNEL)" for a stop header: the kernel is the function at the launch's entry.
  bool host_workload_ = false;
  std::string no_files_;  // why commands may not read files ("" they may)

  // Running. `run` starts one resume or step; stops that only hit breakpoints whose condition is
  // false everywhere are counted and the same request is issued again.
  // make() captures the state at the current stop and returns the request; it is made `count`
  // times while the stops are plain steps of the focus warp, and only the last stop is reported.
  using RunFn = std::function<Result<engine::StopEvent>()>;
  void run_and_report(const std::function<Result<RunFn>()>& make, uint32_t count, bool show_disassembly);
  // A move of the focus lane by a step plan (debug/step.hpp).
  Result<RunFn> make_move(Result<engine::StepPolicy> policy);
  bool ensure_stopped();  // reports an error when the kernel is not stopped at a live stop
  bool ensure_focus();    // ... or when there is no focus lane
  bool ensure_can_run();  // reports an error after exit/kill

  // A breakpoint stop's breakpoints (the table's decision, or `decided`, the hit filter's): reports
  // conditions that failed to evaluate and sets the focus to the stop's lane.
  std::vector<int> breakpoint_stop(const engine::StopEvent& ev, bool count,
                                   const std::optional<debug::BreakDecision>& decided = std::nullopt);

  // State at the stop.
  const WarpState* focus_warp() const;
  uint32_t nt() const;
  // The focus lane (core 0's lane 0 when there is none: memory reads still name a core).
  Lane focus_lane() const { return focus_.valid ? Lane(focus_) : Lane{}; }
  // Memory in the focus lane's view (local memory is its core's).
  Result<std::vector<uint8_t>> read_bytes(uint32_t addr, uint32_t size) { return insp_.read(focus_lane(), addr, size); }
  Result<uint32_t> read_word(uint32_t addr) { return insp_.read_word(focus_lane(), addr); }
  // The integer language in one lane (nullopt: no lane).
  Result<int64_t> evaluate(const Expr& e, const std::optional<Lane>& l) { return insp_.evaluate(e, l); }
  // The focus at a stop: the lane the stop is about (debug::stop_lane); hit_lane, the lane a breakpoint condition held
  // in.
  void set_default_focus(const engine::StopEvent& ev, std::optional<Lane> hit_lane = std::nullopt);
  StopView make_stop_view(const engine::StopEvent& ev, const std::vector<int>& bps, bool show_disasm);
  std::string describe_pc(uint32_t pc, const engine::Symbols* in = nullptr) const;  // "0x80000104 <reduce+20>"
  // "reduce (reduce.c:31)", with the current launch's symbols or `in`.
  std::string location_text(uint32_t pc, const engine::Symbols* in = nullptr) const;
  // The symbols a breakpoint's address i came from (its image's), else the current ones.
  const engine::Symbols* address_symbols(const UserBreakpoint& b, size_t i) const;
  const engine::Symbols* launch_symbols(uint32_t launch) const;  // the launch's image's (or the only ones)

  void drain_console();
  std::optional<engine::SourceLocation> entry_location() const;  // the kernel function's first own line

  // Reporting.
  void out(const std::string& text, const nlohmann::json& data = nlohmann::json::object());
  void err(const std::string& message);
  void err(const Error& e);                // an internal error (ErrorCode::Internal) makes the session exit 70
  void usage(const std::string& message);  // err with the hint (try "help")

  engine::Session& s_;
  // Asked once, not at every resume (an ioctl each, about 5 us of a 70 us stop on this VM).
  const bool stderr_tty_;
  const engine::Symbols* sym_;
  const engine::Variables* vars_ = nullptr;
  debug::Inspector insp_;
  debug::Breakpoints bps_;    // breakpoints, watchpoints and the engine's hit filter
  unsigned frame_level_ = 0;  // the selected frame as backtrace numbers it (frame, up, down); 0 after every stop
  struct Display {
    int id = 0;
    std::string expr;
    char fmt = 0;  // display/F: x d u t c f, 0 none
  };
  std::vector<Display> displays_;  // display N: expressions shown at every stop
  int next_display_ = 1;
  replay::Timeline timeline_;
  std::vector<int> last_bps_;  // the breakpoints the last stop reported (continue N)
  bool execute_one(const std::string& line);
  std::vector<StopView::Watch> last_watches_;  // the current stop's watch report
  GridLaunch launch_;
  Sink& sink_;
  ConsoleLines console_;
  std::string command_;                                  // the command being run (for JSON events)
  std::chrono::steady_clock::time_point command_start_;  // when it started (stop events say how long it took)
  int errors_ = 0;
  bool internal_error_ = false;  // an "internal error: ..." was reported: the session exits 70

  State state_ = State::NotStarted;
  bool device_stop_ = false;  // the last stop was an exception, assertion or watchdog
  std::optional<uint32_t> exit_code_;
  std::string killed_message_;
  ErrorCode killed_code_ = ErrorCode::Unspecified;  // the kind of failure that killed it
  Focus focus_;
  std::optional<Lane> goto_lane_;  // while goto N reports: the lane its mark was about

  // list: where the next plain `list` continues.
  std::string list_file_;
  uint32_t list_next_ = 0;
  // x: where a plain `x` continues, and with which format.
  std::optional<uint32_t> x_next_;
  MemoryFormat x_format_;
};

}  // namespace vx::cli
