// The user's breakpoints and watchpoints (docs/architecture.md, "The debugger core"): one table in
// gdb's numbering, kept in step with the engine's breakpoints and watchpoints, and the single owner
// of the engine's hit filter. A hit is decided where it happens, per lane, while the pass runs:
// conditions on C locals, ignore counts, whether a watched value changed. A hit nobody stops for
// costs no stop and no checkpoint. The prompt only parses and prints around it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "debug/expr.hpp"
#include "debug/inspect.hpp"
#include "debug/lane.hpp"
#include "debug/watch_report.hpp"
#include "engine/session.hpp"
#include "engine/symbols.hpp"

namespace vx::debug {

// A breakpoint or a watchpoint: they share the numbering, as in gdb.
struct Breakpoint {
  int id = 0;
  std::string location;                         // as the user wrote it; a watchpoint's expression
  std::vector<uint32_t> addresses;              // a breakpoint's code addresses (a location can have several)
  std::vector<int> address_images;              // each address's image (Images), -1: every launch's
  bool pending = false;                         // no image has the location yet (a later one may)
  std::optional<engine::SourceLocation> where;  // the first address's source position
  std::optional<Expr> condition;
  bool temporary = false;
  bool enabled = true;
  uint64_t hits = 0;                  // as gdb counts: a hit whose condition is false is none
  uint64_t ignore = 0;                // hits still to pass by (ignore N COUNT, continue N)
  std::vector<std::string> commands;  // commands ... end: run after it stops ("silent" first: no report)
  // Watchpoints: the access kinds that stop (kWatchRead/kWatchWrite bits), 0 for a breakpoint.
  uint8_t watch_kind = 0;
  std::string watch_command;  // "watch", "rwatch", "awatch"
  engine::WatchSpec watch;
  const engine::CType* watch_ctype = nullptr;  // the watched expression's type (its values print as it)
  int engine_watch = 0;

  bool is_watchpoint() const { return watch_kind != 0; }
  bool silent() const { return !commands.empty() && commands[0] == "silent"; }
};

// What a breakpoint hit stops for.
struct BreakDecision {
  std::vector<int> ids;             // the breakpoints it stops for, in number order (empty: none)
  std::optional<Lane> lane;         // the lane a condition held in (the stop is about it)
  std::vector<std::string> errors;  // conditions that could not be evaluated: they stop, as in gdb
};

// The engine's watchpoints watch memory; a watchpoint request as the user made it.
struct WatchRequest {
  std::string command;  // "watch", "rwatch", "awatch"
  std::string expression;
  std::string condition;  // "" none
};

class Breakpoints {
 public:
  // Installs the hit filter in the session; the destructor removes it. With the inspector's
  // images (a host program), locations resolve in every image and a hit counts in the launches
  // of the image the address came from.
  Breakpoints(engine::Session& session, Inspector& inspector);
  ~Breakpoints();
  Breakpoints(const Breakpoints&) = delete;
  Breakpoints& operator=(const Breakpoints&) = delete;

  // break LOCATION [if CONDITION]: "" is the focus lane's pc; *EXPR is computed in the focus lane.
  Result<int> add_breakpoint(const std::string& location, const std::string& condition, bool temporary,
                             const std::optional<Lane>& focus);
  // watch/rwatch/awatch EXPR: the memory EXPR designates (gdb's lvalue: its address and its type's
  // size), in the focus lane's frame `level`.
  Result<int> add_watchpoint(const WatchRequest& request, const std::optional<Lane>& focus, unsigned level);
  // The memory EXPR designates as gdb's `watch` takes it (the lvalue's address and its type's size;
  // *POINTER need not be readable): what a watchpoint watches and what `origin` and `info writes`
  // ask about. `name` starts the error messages. local: the focus core's local memory (core 0
  // before there is a focus).
  struct Place {
    engine::WatchSpec spec;  // addr, len, local, core (kind left as it is)
    const engine::CType* type = nullptr;
    std::string text;  // EXPR as parsed
  };
  Result<Place> lvalue_place(const std::string& name, const std::string& expression, const std::optional<Lane>& focus,
                             unsigned level);

  const std::map<int, Breakpoint>& all() const { return bps_; }
  Breakpoint* find(int id);
  // More images may come (a host program still running): a location no image has yet makes a
  // pending breakpoint instead of an error, as gdb's `set breakpoint pending on`.
  void set_pending_allowed(bool on) { pending_allowed_ = on; }
  // Resolves the locations again after an image was added: the breakpoints whose addresses changed.
  std::vector<int> refresh();
  // Errors name the first number that is not a breakpoint; an empty list means every one.
  Result<void> remove(const std::vector<int>& ids);
  Result<void> set_enabled(const std::vector<int>& ids, bool enabled);
  // "" makes it unconditional.
  Result<void> set_condition(int id, const std::string& condition);
  // Temporary breakpoints among `ids` go once they stopped.
  Result<void> stopped_at(const std::vector<int>& ids);

  // The hit filter's decisions, also usable on a hit found another way (a reverse scan, a live
  // stop): count adds to hit counts and uses up ignore counts (false: a hit seen again).
  BreakDecision breakpoint_hit(const engine::StopEvent& hit, bool count);
  std::vector<WatchReport> watch_hit(const engine::StopEvent& hit, bool count);
  // The enabled breakpoints at a hit's pcs, conditions aside.
  std::vector<int> placed_at(const engine::StopEvent& hit) const;
  // Whether a hit counts at all (a reverse scan's accept), without counting it.
  bool accept(const engine::StopEvent& hit);

  // The filter's decision on the last hit of the current request, when it made one (a live session
  // stops at every hit and decides afterwards). clear_pending() before each request.
  void clear_pending();
  const std::optional<BreakDecision>& pending_break() const { return pending_break_; }
  const std::optional<std::vector<WatchReport>>& pending_watch() const { return pending_watch_; }

  // A value of the watchpoint's type, as print shows it (raw bytes without a type).
  std::string format_value(const Breakpoint& b, const std::vector<uint8_t>& bytes) const;

 private:
  Result<void> sync_breakpoints();
  Result<void> sync_watchpoints();
  Result<void> check_ids(const std::vector<int>& ids) const;
  // Gives b the next number and puts it in the engine too.
  Result<int> insert(Breakpoint b);
  // A location's addresses in every image (or the current symbols without images).
  Result<void> resolve(Breakpoint& b, const std::string& location) const;
  bool address_matches(const Breakpoint& b, uint32_t pc, std::optional<size_t> image) const;

  engine::Session& s_;
  Inspector& insp_;
  std::map<int, Breakpoint> bps_;
  int next_id_ = 1;
  std::map<uint32_t, int> engine_bps_;  // address -> engine breakpoint id
  std::vector<int> engine_watches_;     // engine watchpoint ids in use
  std::optional<BreakDecision> pending_break_;
  std::optional<std::vector<WatchReport>> pending_watch_;
  bool pending_allowed_ = false;
};

}  // namespace vx::debug
