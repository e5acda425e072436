// The live runner (docs/live.md): Session's run control when the session is live, over the
// session's implementation (engine/session_impl.hpp); defined in session_live.cpp.
//
// Every stop halts every warp (haltreq over all); the state at a stop is read through the Debug
// Module (LiveDevice::read_warps: PC, thread mask, registers by instruction injection) over the
// context the DM cannot see (launch and KMU progress, barriers, scheduler, local memory), and
// written as a checkpoint; the device stays held until the user goes on.
#pragma once

#include <algorithm>
#include <bit>
#include <memory>
#include <optional>
#include <set>

#include "checkpoint/store.hpp"
#include "device/debug_module.hpp"
#include "engine/live.hpp"
#include "engine/session_impl.hpp"

namespace vx::engine {

namespace live {

// Where a range run ended: a stop, or the focus warp halted at `pc` (moved), or nothing ran (the
// range or the instruction at the PC cannot run so: the step goes on by a DM step).
struct RangeRun {
  std::optional<StopEvent> stop;
  bool moved = false;
  uint32_t pc = 0;
};

DeviceException at(Cause c, uint32_t pc, WarpId w);
WarpId warp_of(const Session::Impl& s, uint32_t g);
// A warp is about to run alone (a DM step), out of the scheduler's order: from here the launch's
// live history departs from what a re-launch reproduces (docs/live.md "Time travel while live").
void solo(Session::Impl& s);
Result<void> sync_breakpoints(Session::Impl& s);
// The state at a halt: the context the DM cannot reach, then every warp's PC, mask and
// registers read through the DM. The DM's own marks (halted, causes) and its scratch registers
// (DSCRATCH, which every injected read goes through) are the debugger's, not the kernel's: the
// checkpoint holds the kernel as if nobody had halted it, so a re-launch that reaches the same
// point finds the same state.
Result<void> capture(Session::Impl& s);
Result<StopEvent> stop(Session::Impl& s, StopReason reason, const DeviceException& exc,
                       std::vector<WatchEvent> watch = {});
// A checkpoint while the launch runs (every N instructions): halt, read, write, resume.
Result<void> auto_checkpoint(Session::Impl& s, bool resume);
bool is_assertion(Session::Impl& s, uint32_t through, uint32_t pc);
// A breakpoint hit the front end does not want (a false condition) costs no stop, as in re-launch
// mode: no mark, no stop counted. The filter reads the state at the hit (every warp halted, read
// through the DM). A dropped hit is an automatic checkpoint (the seeded interval before it ends
// there), then the hit warps go on past their breakpoints as a continue does (a departure, with
// its checkpoint). nullopt: the hit was dropped and every warp runs again.
// A hit as the front end's filter sees it: every warp halted and read through the DM.
Result<StopEvent> halted_hit(Session::Impl& s, StopReason reason, const DeviceException& exc,
                             std::vector<WatchEvent> watches = {});
Result<std::optional<StopEvent>> filter_breakpoint_hit(Session::Impl& s, const DeviceException& exc);
// After a Halted event: a breakpoint or the kernel's own EBREAK stops; warps that a reset-halt
// caught in a slot dispatched later are resumed (nullopt: go on). filter: a breakpoint hit goes to
// the front end's filter first (the run loop; not while a step runs the other warps).
Result<std::optional<StopEvent>> on_halted(Session::Impl& s, bool filter = false);
// A launch was just submitted: every warp starts halted at its first instruction (ndmreset with
// resethaltreq), the breakpoints are written through a halted warp, then everything resumes.
Result<std::optional<StopEvent>> start_launch(Session::Impl& s);
Result<uint32_t> read_tmask(Session::Impl& s, uint32_t g);
// The focus warp waits (barrier, spawn): the other warps run, in slices, until it can step.
// `held`: warps that stay halted too (others waiting on a planted breakpoint's address).
Result<std::optional<StopEvent>> run_others(Session::Impl& s, uint32_t g, LiveStep* out,
                                            const std::set<uint32_t>& held = {});
// DM steps count like normal execution, and so against the watchdog: the launch's instruction
// budget (SessionOptions::watchdog) ends a step that never leaves a spin loop, as it ends a run.
std::optional<DeviceException> watchdog_due(const Session::Impl& s, WarpId w, uint32_t pc, uint32_t tmask);
// A range run: the focus warp alone (every other warp stays halted) runs on the device until it
// leaves [lo, hi), the way a debugger on hardware steps a range without single-stepping it:
// EBREAKs planted where it can leave (LiveDevice::range_stops), resumereq of the focus warp alone,
// then the halt on one of them (a planted breakpoint of the user's halts it too), and the EBREAKs
// are taken out. Its instructions are counted by the device like any others, so the device's
// watchdog ends it at the launch's budget exactly as it ends a run or a re-launch step (the same
// Watchdog stop, at the same count); Ctrl-C is noticed at every return from the device
// (SessionOptions::slice instructions at most), as in a run.
Result<RangeRun> range_run(
    Session::Impl& s, uint32_t g, WarpId w, std::pair<uint32_t, uint32_t> range, uint32_t pc,
    std::optional<std::pair<std::pair<uint32_t, uint32_t>, std::optional<std::vector<uint32_t>>>>& cache);
// stepi / step / next / finish: DM steps of the focus warp, every other warp halted.
Result<StopEvent> step(Session::Impl& s, const Session::Impl::Mode& mode);
// A watch hit the front end does not want (a false condition, a `watch` whose value did not
// change) costs no stop, as in re-launch mode: no checkpoint, no mark, no stop counted. The filter
// reads the state at the hit, so every warp halts and is read through the DM; a dropped hit
// resumes them all, which keeps the schedule seeded (as an automatic checkpoint does).
Result<bool> keep_watch_hit(Session::Impl& s, const std::vector<WatchEvent>& watches);
// A launch (or the plan) ended.
void launch_done(Session::Impl& s);
// Every warp goes on from a stop: warps at a planted breakpoint execute the original instruction
// first (docs/live.md "continue"), then every warp resumes. A stop event when that stopped.
Result<std::optional<StopEvent>> depart(Session::Impl& s);
Result<StopEvent> run(Session::Impl& s, const Session::Impl::Mode& mode);
// From a stop: breakpoints written, past the kernel's own EBREAK, every warp resumed (depart).
Result<std::optional<StopEvent>> leave_stop(Session::Impl& s);
// One device event of a live run: a stop event, or nullopt to go on.
Result<std::optional<StopEvent>> on_event(Session::Impl& s, const DeviceEvent& e);
// Session::create: the method (SessionOptions::mode) and what info session reports. A re-launch
// session probes the DM too (for info session) and leaves it inactive.
Result<void> setup(Session::Impl& s, Driver& device, const SessionOptions& options);
// Time travel re-launches from checkpoints: the session leaves live mode for good (docs/live.md).
void leave(Session::Impl& s, const std::string& why);
// Memory through a halted warp's view (on `core` when given: its local memory).
Result<std::vector<uint8_t>> read_memory(Session::Impl& s, uint32_t addr, uint32_t size,
                                         std::optional<uint32_t> core = {});

}  // namespace live
}  // namespace vx::engine
