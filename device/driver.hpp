// The driver interface: the only way into the device model from outside
// device/. The engine intercepts work here, as rr records at system calls.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "device/config.hpp"
#include "device/context.hpp"
#include "device/isa.hpp"
#include "device/state.hpp"

namespace vx {

enum class EventKind : uint8_t {
  Idle,          // nothing was submitted, or everything submitted has completed
  Completed,     // a command buffer reached FINISH
  Exception,     // a device exception (including the watchdog); the workload is halted
  Budget,        // wait()'s instruction budget ran out; wait() again to go on
  CommandError,  // a command could not execute (e.g. a launch that does not fit); the buffer is dropped
  Halted,        // Debug Module: a warp halted on EBREAK (ebreak-halt on), or every runnable warp is halted
  Trigger,       // the warp trigger fired (set_warp_trigger); wait() again to go on
  Drained,       // a resume without new units: the warps in progress finished, the launch waits (save_context)
  Watch,         // an instruction touched a watched range (set_watchpoints); take_watch_hits(), wait() to go on
};
const char* event_kind_name(EventKind k);

struct DeviceEvent {
  EventKind kind = EventKind::Idle;
  uint64_t submission = 0;    // which submit() the event belongs to
  DeviceException exception;  // Exception
  std::string message;        // CommandError; Exception with Cause::RestoreFailed
};

// --- Observations (docs/nondeterminism.md) ----------------------------------------------------
// What the kernel's threads read and write, reported while the device runs, for the diff of two runs
// and the race detector (replay/). Nothing is observed unless an observer is set; then every retired
// kernel instruction that touches memory, reads a CSR, exchanges values between lanes, or
// synchronizes (InsnClass other than Other) is reported once, right after it retired. The
// thread-entry routine of a re-launch and Debug Module injections are the debugger's: never reported.
struct ObservedAccess {
  uint32_t lane = 0;
  uint32_t addr = 0;  // after the memory windows; local memory keeps its 0xffff.... address
  uint8_t size = 0;
  uint8_t kind = 0;    // kWatchRead, kWatchWrite, both for an AMO (device/context.hpp)
  bool local = false;  // the core's local memory
  // A write: what the `size` bytes held right before this access wrote them, and what it wrote
  // (little-endian, the low `size` bytes). Lanes of one instruction write lowest first, so a lane's
  // `before` is what a lower lane of the same instruction wrote there, if one did.
  uint32_t before = 0;
  uint32_t after = 0;
};

struct Observation {
  InsnClass cls = InsnClass::Other;
  uint32_t core = 0, slot = 0;  // hardware coordinates
  uint32_t pc = 0;
  uint32_t word = 0;            // the instruction word
  uint32_t tmask = 0;           // lanes that executed it
  uint64_t launch_instret = 0;  // the launch's warp instructions, this one included (a session's time)
  uint32_t csr = 0;             // InsnClass::Csr: which CSR
  // Software coordinates of the work the warp holds (WarpState): linear CTA and warp within it
  // (grid launches), or the instance of lane 0 (instance launches).
  uint32_t cta_linear = 0, cta_rank = 0, cta_slot = 0, instance_base = 0;
  // Load, Atomic, Csr, Warp: each lane's rd after the instruction, indexed by lane (NT entries).
  std::span<const uint32_t> values;
  // Load, Store, Atomic: the accesses, lane by lane in execution order (an SC.W that failed has none).
  std::span<const ObservedAccess> accesses;
};

// A warp's state in brief (Driver::warp_summaries).
struct WarpSummary {
  uint32_t core = 0, slot = 0;
  uint32_t tmask = 0;
  WarpWait wait = WarpWait::None;
  uint32_t depth = 0;    // IPDOM entries: inside that many splits
  uint64_t instret = 0;  // instructions it retired
  uint32_t cta = 0;      // its CTA's linear index
};

class DeviceObserver {
 public:
  virtual ~DeviceObserver() = default;
  // A launch started (not a re-launch): its shape and the launch's index since the device opened.
  virtual void launch_started(const LaunchState& launch) = 0;
  virtual void retired(const Observation& o) = 0;
  // Also report the instructions of InsnClass Other (no values, no accesses): read once, when the
  // observer is set.
  virtual bool wants_every_instruction() const { return false; }
  // false: leave out loads and their values (an observer of writes only; a run observed this way
  // pays nothing on its loads).
  virtual bool wants_reads() const { return true; }
};

class Driver {
 public:
  virtual ~Driver() = default;

  virtual const DeviceConfig& config() const = 0;

  // Device memory. Allocations start at 0x10000 and are page aligned.
  virtual Result<uint32_t> mem_alloc(uint64_t size) = 0;
  // Maps a fixed range (a kernel image at its link address).
  virtual Result<void> mem_reserve(uint32_t addr, uint64_t size) = 0;
  // Releases an allocation or a reserved range, named by its start.
  virtual Result<void> mem_free(uint32_t addr) = 0;
  virtual Result<void> copy_to_device(uint32_t addr, std::span<const uint8_t> bytes) = 0;
  virtual Result<void> copy_from_device(uint32_t addr, std::span<uint8_t> bytes) = 0;

  // Validates a command buffer (seed 004 format, docs/command-buffer.md) and
  // queues it. A malformed buffer is rejected with an error naming the chunk
  // offset and the problem; nothing is queued and the device is unchanged.
  virtual Result<uint64_t> submit(std::span<const uint8_t> commands) = 0;
  // Runs queued work until the next event, executing at most max_instructions
  // warp instructions.
  virtual DeviceEvent wait(uint64_t max_instructions = UINT64_MAX) = 0;
  // Kills the running workload and drops queued buffers; the device is idle after.
  virtual void abort() = 0;

  // --- Save and re-launch (device/context.hpp, docs/relaunch.md) -----------------
  // The state of the grid launch in flight, read while wait() is not running (after any event
  // but Idle and Completed). Fails when no grid launch is in flight.
  virtual Result<DeviceContext> save_context() = 0;
  // Re-launches a saved grid launch through the thread-entry routine. The device must be idle
  // (nothing queued, no launch). wait() then runs the routine, and the launch goes on exactly
  // where the context left it. Errors name what does not fit (shape, slots, addresses). Taken by
  // value: a caller that moves its request in saves copying the context's cores (local memories too).
  virtual Result<uint64_t> resume(ResumeRequest request) = 0;
  // Pages (address >> 12) written since the last call, by anyone, in first-written order.
  virtual std::vector<uint32_t> take_dirty_pages() = 0;
  // At most one trigger; setting one replaces the last. It stays until cleared or abort(); a
  // before-trigger (WarpTrigger::before) is also cleared when it fires. Fires as EventKind::Trigger.
  virtual Result<void> set_warp_trigger(const WarpTrigger& trigger) = 0;
  virtual void clear_warp_trigger() = 0;

  // --- Debugger support (docs/device.md, "Debugger support") ----------------------
  // Watchpoints on device data memory (WatchRange, device/context.hpp). Replaces every range; empty:
  // none. Fails, changing nothing, for a length of 0 or above 4096, a range past 4 GiB, a kind that is
  // not read/write, a core that does not exist, or a local range outside local memory. When a retired
  // instruction's load, store or atomic touched a range the way it is watched, wait() returns
  // EventKind::Watch right after that instruction, before any other instruction anywhere (the state
  // equals a Budget stop at that count); a faulting instruction is no hit. Global ranges see the
  // address after the memory windows; local ranges only local-memory accesses (of `core`, or any core).
  // Instruction fetch, copy_to_device/copy_from_device, the thread-entry routine and Debug Module
  // injection never hit. The ranges stay across wait(), abort() and resume(): they are the debugger's.
  virtual Result<void> set_watchpoints(const std::vector<WatchRange>& ranges) = 0;
  // The hits of the last EventKind::Watch (one per range and instruction), handed over once.
  virtual std::vector<WatchHit> take_watch_hits() = 0;
  // Valid right after wait() returned EventKind::Exception with Cause::Breakpoint (before abort() or
  // another submit): each warp in `overrides` executes overrides[i].word instead of the word in memory
  // the first time it runs at overrides[i].pc (exactly like ResumeRequest::overrides), and the next
  // wait() goes on from the very state of the stop: no re-launch. Fails, changing nothing, when the
  // last event was not a breakpoint exception or an override names a slot without a warp.
  virtual Result<void> continue_past_breakpoint(const std::vector<FetchOverride>& overrides) = 0;
  // A copy of one warp slot (pc, tmask, instret, cta_linear, registers, ...), read between wait()
  // calls while a launch is in flight (after Budget, Trigger, Watch, Exception events); much cheaper
  // than save_context(). Fails when no launch is in flight, during a re-launch's routine, or for a
  // slot that does not exist.
  virtual Result<WarpState> peek_warp(uint32_t core, uint32_t slot) = 0;
  // Every active warp's state in brief (the recording's timeline, docs/view.md), far cheaper than
  // peek_warp on each: no registers. Empty when no launch is in flight or the device cannot say.
  virtual std::vector<WarpSummary> warp_summaries() const { return {}; }
  // Observations (above): every retired instruction worth observing is reported to `observer`
  // until it is replaced; nullptr: none (the model then pays one predictable branch per instruction).
  // The observer must outlive the device or be removed first.
  virtual void set_observer(DeviceObserver* observer) = 0;

  // Console bytes drained since the last call, per hart ring, in drain order.
  virtual std::vector<ConsoleChunk> read_console() = 0;
  // The exit-code word (0x8348).
  virtual uint32_t exit_code() = 0;
  virtual MachineStats stats() const = 0;
  // Every plain branch whose active lanes disagreed since the device was opened, one per PC in the
  // order first seen, with the lanes' directions that first time and how often it diverged
  // (docs/device.md, "Divergence"). Recording costs nothing while branches are uniform. A driver
  // that cannot observe branches (one in front of another process) reports none.
  virtual std::vector<DivergentBranch> divergent_branches() const { return {}; }

  // Debug Module registers (seed 000), addresses 0x0..0xC; docs/debug-module.md
  // is the reference for every field and every decision the seed leaves open.
  // An address beyond 0xC is an error; the DM itself never fails a valid access.
  virtual Result<uint32_t> dm_read(uint32_t addr) = 0;
  virtual Result<void> dm_write(uint32_t addr, uint32_t value) = 0;
};

// Opens a model device. Fails with a message when the configuration is invalid.
Result<std::unique_ptr<Driver>> open_model_device(const DeviceConfig& config, const RunOptions& options);

}  // namespace vx
