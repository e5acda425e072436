// The timeline (docs/time-travel.md): the session's recording as a history a user moves through in
// both directions. Every move is a point in time (engine::TimePoint) reached by seeking: restore the
// latest checkpoint at or before it and run forward exactly to it, which is exact because the model
// is deterministic for a configuration, seed and inputs. Reverse moves find their target by running
// forward quietly over the checkpoint intervals before the current point (Session::scan), then seek.
//
// Front ends (the CLI prompt, the GDB server) call these functions and print the stops; nothing here
// prints.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "base/result.hpp"
#include "engine/session.hpp"
#include "engine/symbols.hpp"

namespace vx::replay {

// Accepts or drops a breakpoint or watchpoint hit found by reverse_continue (conditions,
// watchpoints whose value did not change). Session::context() holds the state at the hit.
using HitFilter = std::function<bool(const engine::StopEvent&)>;

class Timeline {
 public:
  // symbols may be null: line and frame moves then fail with a clear error.
  Timeline(engine::Session& session, const engine::Symbols* symbols);
  // The symbols of the launch being looked at (a host program's images each have their own).
  void set_symbols(const engine::Symbols* symbols) { sym_ = symbols; }

  // Back over the focus warp's last instruction: the state right before the warp executed it
  // (reported as a Step of that warp). At the warp's first instruction: a HistoryStart stop.
  Result<engine::StopEvent> reverse_stepi(engine::WarpId warp, uint32_t lane);
  // Like reverse_stepi, but back over a whole call when the last instruction was a callee's return.
  Result<engine::StopEvent> reverse_nexti(engine::WarpId warp, uint32_t lane);
  // Back to the beginning of the previous source line the lane executed (into a callee that
  // returned; reverse_next: over it).
  Result<engine::StopEvent> reverse_step(engine::WarpId warp, uint32_t lane);
  Result<engine::StopEvent> reverse_next(engine::WarpId warp, uint32_t lane);
  // Back to the call of the current function (the caller, at its call instruction).
  Result<engine::StopEvent> reverse_finish(engine::WarpId warp, uint32_t lane);
  // Back to the latest breakpoint or watchpoint hit, of any warp, before the current point (the
  // same stop a forward run reports there); the beginning of history when there is none.
  Result<engine::StopEvent> reverse_continue(const HitFilter& accept);

  // The marks (info checkpoints), in time order, each with its stable number (goto_mark's).
  Result<std::vector<engine::Mark>> marks();
  Result<engine::StopEvent> goto_mark(size_t number);
  // The first and the last point of the current launch's recorded history (goto_start before anything
  // ran: the first recorded launch's).
  Result<engine::StopEvent> goto_start();
  Result<engine::StopEvent> goto_end();
  // From a launch's end (the kernel exited): the state right before its last instruction, as a step
  // of the warp that executes it. The first move back from the exit, as rr's reverse-stepi is.
  Result<engine::StopEvent> back_from_end();

 private:
  struct Located;
  // The focus warp's retirements before the current point, from progressively earlier checkpoints,
  // until `enough` says the trace reaches back far enough or it holds the warp's whole history (its
  // CTA's first instruction in the slot): *complete says which.
  Result<std::vector<engine::TraceEntry>> trace_back(
      engine::WarpId warp, uint32_t lane, const std::function<bool(const std::vector<engine::TraceEntry>&)>& enough,
      bool* complete);
  Result<engine::StopEvent> line_move(engine::WarpId warp, uint32_t lane, bool over_calls);
  // Calls (-1) and returns (+1) between trace entries, for frame depth relative to the current frame.
  std::vector<int> depths(const std::vector<engine::TraceEntry>& trace, uint32_t pc_now);
  Result<engine::StopEvent> at_history_start(engine::WarpId warp);
  // Writes the start of now's launch when the recording lacks it, and comes back to now.
  Result<void> derive_start(engine::TimePoint now);

  engine::Session& s_;
  const engine::Symbols* sym_;
};

}  // namespace vx::replay
