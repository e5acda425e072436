// The Vortex 3.0 functional model: cores, warps, the SIMT stack, barriers, the
// KMU, the deterministic scheduler and the data path of every load and store.
//
// Only device/ includes this header. Everything outside device/ reaches the
// model through device/driver.hpp.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.hpp"
#include "device/config.hpp"
#include "device/context.hpp"
#include "device/driver.hpp"
#include "device/isa.hpp"
#include "device/jit.hpp"
#include "device/memory.hpp"
#include "device/state.hpp"

namespace vx {

// The scheduler's generator step (a splitmix64 finalizer over the previous output).
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Why Machine::run returned.
enum class RunStop : uint8_t {
  Idle,        // no launch in flight
  LaunchDone,  // the launch finished: the KMU has nothing left and no warp is active
  Budget,      // max_instructions reached; call run() again to go on exactly where it stopped
  Exception,   // a device exception; the faulting instruction did not execute
  Halted,      // Debug Module: a warp halted on EBREAK, or nothing can run and some active warp is halted
  Trigger,     // the warp trigger fired (set_trigger)
  Watch,       // an instruction that retired touched a watched range (set_watchpoints, take_watch_hits)
  Drained,     // ResumeRequest::dispatch_new_units was false and no warp is left; the launch stays in flight
};

struct RunResult {
  RunStop stop = RunStop::Idle;
  DeviceException exception;
  std::string message;  // Cause::RestoreFailed: what went wrong
};

// at[m][k]: the index of the k-th (from 0) set bit of the byte m (the warp scheduler's pick).
struct KthBit {
  uint8_t at[256][8] = {};
  constexpr KthBit() {
    for (uint32_t m = 0; m < 256; ++m)
      for (uint32_t k = 0, i = 0; i < 8; ++i)
        if (m & (1u << i)) at[m][k++] = uint8_t(i);
  }
};
inline constexpr KthBit kKthBit{};

class Machine {
 public:
  Machine(const DeviceConfig& config, const RunOptions& options);
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;

  const DeviceConfig& config() const { return cfg_; }
  const RunOptions& options() const { return opts_; }
  Memory& memory() { return mem_; }
  const Memory& memory() const { return mem_; }
  uint32_t num_cores() const { return uint32_t(cores_.size()); }
  CoreState& core(uint32_t c) { return cores_[c]; }
  const CoreState& core(uint32_t c) const { return cores_[c]; }
  const MachineStats& stats() const { return stats_; }
  const SchedulerState& scheduler() const { return sched_; }

  // --- Launches -----------------------------------------------------------
  // Validates and starts a launch (grid, instances or slice). Fails without
  // changing anything when another launch is in flight or the shape cannot fit.
  Result<void> start_launch(const LaunchState& launch);
  bool launch_active() const { return launch_.kind != LaunchKind::None; }
  const LaunchState& launch() const { return launch_; }
  // Kills every warp and forgets the launch (the engine's "kill the workload").
  void abort_launch();
  // Zeroes every warp's registers and CSRs and every core's local memory: after Driver::abort(),
  // nothing of a killed workload survives into the next one by accident (a re-launch restores what
  // it needs through the thread-entry routine, which the device then checks).
  void scrub_cores();

  // Runs at most max_instructions warp instructions. Deterministic: the same
  // state and the same calls give the same result, however run() is split.
  RunResult run(uint64_t max_instructions);
  // The watchdog counts warp instructions since the last reset.
  void reset_watchdog() { watchdog_base_ = stats_.instructions; }

  // --- Save and re-launch (device/context.hpp) ----------------------------
  // The state of the grid launch in flight; fails when there is none.
  Result<DeviceContext> save_context() const;
  // Starts a saved grid launch again through the thread-entry routine (the restore phase runs at
  // the start of the next run()). Fails without changing anything when a launch is in flight or
  // the request does not fit this device.
  Result<void> start_resume(ResumeRequest request);
  void set_trigger(const WarpTrigger& t);
  void clear_trigger();
  // Going on past a breakpoint stop without a re-launch: each warp executes its override's word
  // instead of memory's the first time it runs at the override's pc (replacing an override of the
  // same warp and pc).
  void add_overrides(const std::vector<FetchOverride>& overrides);
  bool restoring() const { return restore_phase_; }

  // --- Watchpoints (docs/device.md) -----------------------------------------
  // Replaces every watched range; fails, changing nothing, on a range that cannot be watched.
  Result<void> set_watchpoints(const std::vector<WatchRange>& ranges);
  // The hits of the last RunStop::Watch, handed over once.
  std::vector<WatchHit> take_watch_hits();
  // SC.W (exec_int.cpp): lane `lane` failed, so its store did not happen.
  void note_sc_failed(uint32_t lane) {
    if (data_hooks_) [[unlikely]] {
      if (watch_active_) watch_drop_lane(lane);
      if (observer_) std::erase_if(obs_accesses_, [&](const ObservedAccess& a) { return a.lane == lane; });
    }
  }
  // Observations (driver.hpp): nullptr turns them off.
  void set_observer(DeviceObserver* observer);
  // VXR.RESUME (exec_vortex.cpp): the routine of an in-progress warp is done.
  Outcome resume_request(ExecCtx& c);
  // mcycle: warp instructions the launch in flight has retired, over every pass.
  uint64_t launch_clock() const { return stats_.instructions - launch_base_; }

  // --- Command-processor memory windows, applied to core data accesses ----
  std::array<MemWindow, 8>& windows() { return windows_; }
  void windows_changed();
  // Resolves addr as hart `hart` sees it through the windows (perm: 1 read,
  // 2 write). False when a window denies the access or the result leaves 32 bits.
  bool translate_for_hart(uint32_t hart, uint32_t* addr, uint32_t size, uint32_t perm) const;

  // --- Console ------------------------------------------------------------
  // Host side of the console rings: copies out what each ring holds and
  // advances its read index. Called at deterministic points by run() and at
  // launch end; take_console() hands the drained bytes to the driver.
  void drain_console();
  std::vector<ConsoleChunk> take_console();
  uint32_t exit_code() const;

  // --- Used by executors --------------------------------------------------
  uint32_t hart_id(uint32_t core, uint32_t warp, uint32_t lane) const {
    return (core * cfg_.warps + warp) * cfg_.threads + lane;
  }
  // Address of `size` bytes at `addr` for lane `lane`, after local memory and
  // windows; nullptr with *fault set when the access faults.
  // Inline for the common case (aligned, no watchpoints or observer, no windows, local memory or a
  // mapped page);
  // everything else, faults included, takes the full path.
  const uint8_t* data_for_load(ExecCtx& c, uint32_t lane, uint32_t addr, uint32_t size, Outcome* fault) {
    if (const uint8_t* p = data_direct<false>(c, addr, size)) return p;
    return data_for_load_full(c, lane, addr, size, fault);
  }
  uint8_t* data_for_store(ExecCtx& c, uint32_t lane, uint32_t addr, uint32_t size, Outcome* fault) {
    if (uint8_t* p = data_direct<true>(c, addr, size)) return p;
    return data_for_store_full(c, lane, addr, size, fault);
  }
  const uint8_t* data_for_load_full(ExecCtx& c, uint32_t lane, uint32_t addr, uint32_t size, Outcome* fault);
  // A fully active warp's word accesses at once: when nothing watches or observes, no window is on,
  // every lane's address is aligned and all of them lie in local memory or in one page the data path
  // has a direct pointer for (for a write: one already dirty and free of fetched code), the host
  // address of device address *lo, the lowest of them (every lane's word is at result + addr - *lo);
  // nullptr when the lanes need the per-lane path.
  template <bool kWrite, unsigned N>
  uint8_t* words_direct(ExecCtx& c, const LaneVec<N>& addr, uint32_t* lo) {
    if (data_hooks_ || windows_active_) return nullptr;
    uint32_t min = addr[0], max = addr[0], misaligned = 0;
    for (unsigned l = 0; l < N; ++l) {
      misaligned |= addr[l];
      min = addr[l] < min ? addr[l] : min;
      max = addr[l] > max ? addr[l] : max;
    }
    if (misaligned & 3) return nullptr;
    *lo = min;
    if (min >= memmap::kLocalMemBase) {
      const uint32_t off = min - memmap::kLocalMemBase;
      if (uint64_t(max) + 4 - memmap::kLocalMemBase > c.core.local_mem.size()) return nullptr;
      return c.core.local_mem.data() + off;
    }
    if ((min >> Memory::kPageBits) != ((max + 3) >> Memory::kPageBits) || max >= memmap::kLocalMemBase) return nullptr;
    return kWrite ? mem_.writable_cached(min) : const_cast<uint8_t*>(mem_.readable(min));
  }
  uint8_t* data_for_store_full(ExecCtx& c, uint32_t lane, uint32_t addr, uint32_t size, Outcome* fault);
  // CSR access; false means the CSR does not exist (or a write to a read-only
  // CSR): the caller reports an illegal instruction.
  bool csr_read(ExecCtx& c, uint32_t lane, uint32_t csr, uint32_t* value);
  bool csr_write(ExecCtx& c, uint32_t lane, uint32_t csr, uint32_t value);
  bool csr_exists(uint32_t csr) const;
  bool csr_read_only(uint32_t csr) const { return (csr >> 10) == 3; }
  // A CSR whose value differs between the lanes of one warp (mhartid, the lane id, threadIdx,
  // DSCRATCH); every other CSR reads the same in every lane.
  static bool csr_per_lane(uint32_t csr) {
    return csr == 0xF14 || csr == 0xCC0 || (csr >= 0xCD3 && csr <= 0xCD5) || (csr >= 0x7B2 && csr <= 0x7B5);
  }
  // Barriers and spawning (exec_vortex.cpp). They set the warp's wait state.
  Outcome bar(ExecCtx& c, uint32_t id, uint32_t count);
  Outcome bar_arrive(ExecCtx& c, uint32_t id, uint32_t count, uint32_t* token);
  Outcome bar_wait(ExecCtx& c, uint32_t id, uint32_t token);
  Outcome wspawn(ExecCtx& c, uint32_t count, uint32_t pc);
  // The host FPU's exception flags, read lazily (exec_fp.cpp). Arithmetic rounded to nearest does not
  // read MXCSR after each instruction: the flags it raises stay in the host until they are settled
  // into the warp that owns them. fp_claim(w) makes w the owner (settling the previous owner's flags
  // and clearing host flags w's fflags lacks); fp_settle() ORs the host flags into the owner's fflags.
  // The owner is settled before anything reads or writes fflags, before any code that might raise
  // host flags of its own runs (a fetch miss, hooks, the divergent-branch log), when its slot is
  // retired or dispatched again, and before every public entry that executes instructions returns:
  // outside run(), step(), debug_step() and inject() there is never an owner.
  void fp_claim(WarpState& w) {
    if (fp_owner_ != &w) [[unlikely]]
      fp_switch(&w);
  }
  void fp_settle() {
    if (fp_owner_) [[unlikely]]
      fp_switch(nullptr);
  }
  // A plain branch whose active lanes disagreed (only called then: the uniform path costs nothing).
  void note_divergent_branch(const ExecCtx& c, uint32_t taken);
  bool strict_branches() const { return opts_.strict_branches; }
  // Every PC whose branch diverged since the machine was made, in the order first seen.
  const std::vector<DivergentBranch>& divergent_branches() const { return divergent_; }

  // --- Test and debugger support -----------------------------------------
  // Starts a warp directly (no launch bookkeeping); used by unit tests.
  void activate_warp(uint32_t core, uint32_t warp, uint32_t pc, uint32_t tmask);
  // Runs one instruction of one warp; used by unit tests.
  Outcome step(uint32_t core, uint32_t warp, DeviceException* exc);
  // Recomputes derived state (ready masks, decode cache) after state was replaced.
  void state_replaced();

  // --- Debug Module support (docs/debug-module.md) ---------------------------
  // Halts an active warp (no-op otherwise) with DCTRL.hacause `cause`; a halted warp is never scheduled.
  void halt_warp(uint32_t core, uint32_t warp, HaltCause cause);
  // Resumes a halted warp; its halt cause goes back to NONE.
  void resume_warp(uint32_t core, uint32_t warp);
  // DCONFIG.ebreakh: EBREAK halts its warp (pc on the EBREAK) instead of trapping or stopping the device.
  void set_ebreak_halt(bool on) { ebreak_halt_ = on; }
  bool ebreak_halt() const { return ebreak_halt_; }
  // DCTRL.stepreq on a halted warp: one instruction with the warp's own mask, counted like normal
  // execution; the warp stays halted (hacause STEP, or EBREAK when it halted on one). A waiting warp
  // executes nothing (Step::Stall). On Step::Exception nothing executed and *exc says why.
  Outcome debug_step(uint32_t core, uint32_t warp, DeviceException* exc);
  // DCTRL.injectreq: executes `word` once in (core, warp) with only `lane` active, at the warp's pc.
  // Register and memory effects stay; pc, mask, IPDOM, barriers and counters do not change. Vortex
  // instructions other than VOTE/SHFL/WSYNC, ECALL, EBREAK and MRET are rejected (IllegalInstruction).
  Outcome inject(uint32_t core, uint32_t warp, uint32_t lane, uint32_t word, DeviceException* exc);
  // ndmreset: every warp slot becomes empty and the launch in flight (if any) restarts from its first
  // CTA or instance, dispatching at once; memory is kept. Slots marked reset_halt start halted.
  void reset_cores();

 private:
  // An entry holds the instruction at pc decoded in cache generation g under the key (g << 32) | pc:
  // one comparison tests both, and emptying the whole cache is bumping the generation.
  struct ICacheEntry {
    uint64_t key = 0;  // generation 0 is never current: an empty entry
    Decoded d;
  };
  uint64_t icache_key(uint32_t pc) const { return (uint64_t(icache_generation_) << 32) | pc; }
  // A basic block for run_fast and run_routine: the instructions from pc up to and including the first
  // one after which the next pc is not pc + 4 or the decode cache must be checked (a branch, a jump, a
  // system instruction, a store, an atomic, a fence), at most kBlockMax, copied from the decode cache into
  // the block pool, where they are `len` entries from `start`. An instruction with Decoded::sync ends
  // the block before it; len 0 when the one at pc has it or cannot be fetched. Keyed like
  // ICacheEntry: a new cache generation empties both caches. A block is built the second time the
  // fast loop reaches its pc in a generation (kBlockUnbuilt marks the first). The thread-entry
  // routine's loop builds blocks that go on past stores (its copy of local memory alternates loads
  // and stores) and checks the code generation after each one, ending the block there when the store
  // rewrote code; their keys carry kStoresInside, so run_fast, whose loop checks nothing inside a
  // block, never runs one. A kernel's blocks end at stores: a check after every instruction of every
  // block cost the scalar workload 2.7% more host instructions (callgrind), and even a test of a
  // per-block flag in run_fast's lookup cost 2%.
  static constexpr uint32_t kBlockMax = 31;
  static constexpr uint32_t kBlockUnbuilt = UINT32_MAX;  // Block::start of a pc seen once: not built yet
  // A block that goes on past stores (run_routine's) has this bit in its key: pcs are word-aligned,
  // so run_fast never finds one (it builds its own at that pc).
  static constexpr uint64_t kStoresInside = 1;
  struct Block {
    uint64_t key = 0;
    uint32_t start = 0;
    uint32_t len = 0;
    JitFn jit = nullptr;  // the block as host code (run_fast's blocks, RunOptions::jit), or none
  };
  static constexpr uint32_t kBlocks = 1u << 13;  // as many as the decode cache's entries
  static constexpr uint32_t kBlockPool = 1u << 14;
  // The block cache's mapping: the blocks, then the pool (Decoded's alignment divides the blocks' size).
  static constexpr size_t kBlockMapBytes() { return kBlocks * sizeof(Block) + kBlockPool * sizeof(Decoded); }
  // stores_inside: a store does not end the block (run_routine's blocks; run_fast's end at one).
  void build_block(uint32_t pc, Block& b, bool stores_inside);
  void empty_icache();
  const Decoded* fetch(uint32_t pc, Cause* cause);
  void code_rewritten();
  // What step() does once the instruction executed: counting, the new pc and mask, traps, stalls.
  Outcome complete_step(uint32_t c, uint32_t w, ExecCtx& ctx, Outcome o, DeviceException* exc);
  Outcome run_fast(uint32_t c, uint64_t limit, DeviceException* exc);
  // Core c's quantum ended: when the round boundary would do nothing (one core, nothing to dispatch,
  // no drain due, some warp ready), makes the next pick and draws its quantum as the next round
  // would and returns true (the counters must be settled).
  bool redraw(uint32_t c) {
    const uint32_t ready = ready_[c];
    if (ready == 0 || !boundary_idle(c, stats_.instructions)) return false;
    if ((ready & (ready - 1)) == 0) {
      (void)next_random();  // pick_warp's draw: the pick is forced
      sched_.current_warp[c] = int32_t(std::countr_zero(ready));
    } else {
      sched_.current_warp[c] = int32_t(pick_warp(c));
    }
    sched_.quantum_left[c] = 1 + uint32_t(next_random() % kMaxQuantum);
    return true;
  }
  // One core whose round boundary would do nothing: it dispatches nothing (no unit left, or the core
  // had no room and its warps did not change since) and drains nothing (not yet the next drain), so
  // the next round only picks, with the same draws. `instructions`: stats_.instructions as it stands.
  bool boundary_idle(uint32_t c, uint64_t instructions) const {
    return opts_.schedule == Schedule::Random && cores_.size() == 1 && instructions < next_drain_ &&
           (!dispatch_new_units_ || launch_.next_unit >= launch_.total_units ||
            (launch_.kind == LaunchKind::Grid && kmu_blocked_[c] == ((uint64_t(1) << 32) | active_[c])));
  }
  void update_ready(uint32_t c, uint32_t w);
  void retire_warp(uint32_t c, uint32_t w);
  void wake_spawn_waiters(uint32_t c);
  void release_local_barrier(uint32_t c, uint32_t index);
  void core_global_arrival_check(uint32_t c, uint32_t num);
  void dispatch_pending();
  bool dispatch_cta(uint32_t c);
  bool dispatch_instances(uint32_t c, uint32_t w);
  static constexpr uint32_t kMaxQuantum = 64;  // a quantum is 1..64 instructions (kSchedulerVersion 2)
  // A ready warp of core c, drawn from the generator: the k-th ready one for k = r % (ready warps).
  uint32_t pick_warp(uint32_t c) {
    uint32_t ready = ready_[c];
    const uint32_t n = lane_count(ready);
    // A mask when n is a power of two (1, 2, 4... ready warps).
    const uint64_t r = next_random();
    uint32_t k = (n & (n - 1)) == 0 ? uint32_t(r & (n - 1)) : uint32_t(r % n);
    // A table for up to 8 warps: the loop's exit is random, a mispredicted branch at every pick.
    if (ready < 256) return kKthBit.at[ready][k];
    while (k--) ready &= ready - 1;
    return unsigned(std::countr_zero(ready));
  }

  uint32_t pick_warp_pct(uint32_t c);
  static constexpr uint64_t kPctChangePoints = 3;  // PCT's depth - 1
  static constexpr uint64_t kPctHorizon = 4096;    // change points fall in the launch's first instructions
  static constexpr uint64_t kPctRepick = 4096;     // then priorities are drawn again this often
  uint64_t next_random() {
    sched_.rng = splitmix64(sched_.rng);
    return sched_.rng;
  }
  bool translate(uint32_t core, uint32_t hart, uint32_t* addr, uint32_t size, uint32_t perm) const;
  template <bool kWrite>
  uint8_t* data_pointer(ExecCtx& c, uint32_t lane, uint32_t addr, uint32_t size, Outcome* fault);
  // What data_pointer returns when nothing watches or observes and no window is on, or nullptr when
  // the access needs the full path (a fault, a window, a watchpoint, an observer, the edge of local
  // memory).
  template <bool kWrite>
  uint8_t* data_direct(ExecCtx& c, uint32_t addr, uint32_t size) {
    if ((addr & (size - 1)) || data_hooks_ || windows_active_) return nullptr;
    if (addr >= memmap::kLocalMemBase) {
      const uint32_t off = addr - memmap::kLocalMemBase;
      return off + size <= c.core.local_mem.size() ? c.core.local_mem.data() + off : nullptr;
    }
    // A load may get the shared zero page: load paths only read through it.
    return kWrite ? mem_.writable(addr) : const_cast<uint8_t*>(mem_.readable(addr));
  }
  void init_warp_for_dispatch(WarpState& w);
  // n instructions of warp ws retired, each with `lanes` lanes active: the counters step() keeps.
  void count_retired(CoreState& core, WarpState& ws, uint64_t n, uint64_t lanes) {
    stats_.instructions += n;
    stats_.lane_instructions += n * lanes;
    ws.instret += n;
    core.instret += n;
  }
  RunResult run_restore_phase();
  // Runs the routine in warp (c, w) for at most `limit` instructions (counted in *ran), without
  // step()'s per-instruction checks: for when nothing observes or watches. Returns at VXR.RESUME, the
  // warp's end, an instruction that did not retire, or the limit.
  Outcome run_routine(uint32_t c, uint32_t w, uint64_t limit, uint64_t* ran, DeviceException* exc);
  std::string finish_restore();
  // After warp (c, w) retired an instruction: an after-trigger fires, a before-trigger arms.
  void check_trigger_after(uint32_t c, uint32_t w);
  // Before warp (c, w) executes its next instruction, when stop_pending_: what to report, or Idle.
  RunStop pending_stop(uint32_t c, uint32_t w);
  void refresh_stop_pending() { stop_pending_ = trigger_pending_ || before_armed_ || watch_fired_; }
  void arm_before_trigger() {
    before_armed_ = trigger_ && trigger_->before;
    refresh_stop_pending();
  }
  void watch_access(ExecCtx& c, uint32_t lane, uint32_t addr, uint32_t size, uint8_t kind, bool local);
  void watch_drop_lane(uint32_t lane);
  // The current instruction retired: its accesses become hits (pending until the next stop check).
  void watch_end_instruction();
  // The current instruction did not retire (or was the debugger's): its accesses are forgotten.
  void watch_discard_instruction();
  // Forgets everything not yet reported.
  void watch_discard_pending();
  void data_hook(ExecCtx& c, uint32_t lane, uint32_t addr, uint32_t size, uint8_t kind, bool local,
                 const uint8_t* data);
  // Before an instruction executes while an observer is set: what observe_step needs of the state
  // the instruction changes (a store's or atomic's source register).
  void observe_before(const ExecCtx& c, const Decoded& d);
  void observe_step(const ExecCtx& c, const Decoded& d, Step step);
  void update_data_hooks() { data_hooks_ = watch_active_ || observer_ != nullptr; }
  void fp_switch(WarpState* next);  // exec_fp.cpp
  RunResult run_inner(uint64_t max_instructions);
  Outcome step_inner(uint32_t core, uint32_t warp, DeviceException* exc);

  DeviceConfig cfg_;
  RunOptions opts_;
  Memory mem_;
  std::vector<CoreState> cores_;
  LaunchState launch_;
  std::vector<GlobalBarrierState> global_barriers_;
  std::vector<uint32_t> global_expected_;
  SchedulerState sched_;
  MachineStats stats_;
  std::array<MemWindow, 8> windows_{};
  bool windows_active_ = false;
  uint64_t watchdog_base_ = 0;
  uint64_t next_drain_ = 0;
  std::vector<ConsoleChunk> console_;
  LaunchState initial_launch_;     // the launch as start_launch accepted it: what ndmreset restarts
  bool ebreak_halt_ = false;       // mirrors DCONFIG.ebreakh
  uint64_t launch_base_ = 0;       // stats_.instructions when the launch (virtually) began
  uint64_t launch_lane_base_ = 0;  // stats_.lane_instructions likewise

  // Re-launch: the restore phase runs the routine in these slots, one after another, before the
  // saved state is installed and the launch goes on.
  bool restore_phase_ = false;
  ResumeRequest resume_;
  size_t restore_next_ = 0;        // placement whose routine runs next
  bool resume_requested_ = false;  // VXR.RESUME executed by the warp being restored
  bool dispatch_new_units_ = true;
  std::vector<FetchOverride> overrides_;
  std::optional<WarpTrigger> trigger_;
  bool trigger_pending_ = false;  // fired; run() returns before the next instruction
  bool before_armed_ = false;     // a before-trigger may fire before some next instruction
  // Something to report or check before the next instruction: the one flag run() tests per instruction.
  bool stop_pending_ = false;

  // Watchpoints. watch_active_ is the data path's one test when nothing is watched.
  struct WatchAccess {
    uint32_t range;  // index into watches_
    uint32_t lane;
    uint32_t addr;
    uint8_t kind;
  };
  std::vector<WatchRange> watches_;
  bool watch_active_ = false;
  bool watch_fired_ = false;                 // accesses or hits wait for the next stop check
  std::vector<WatchAccess> watch_accesses_;  // the current instruction's accesses to watched ranges
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> watch_old_;  // range index, bytes before it
  uint32_t watch_core_ = 0, watch_slot_ = 0, watch_pc_ = 0;
  std::vector<WatchHit> watch_pending_;  // hits of retired instructions, not yet reported
  std::vector<WatchHit> watch_hits_;     // reported by the last RunStop::Watch
  // The data path's one test: watchpoints or an observer want to see accesses.
  bool data_hooks_ = false;

  // Observations (driver.hpp). observer_ is step()'s one test when nothing observes.
  DeviceObserver* observer_ = nullptr;
  bool observe_all_ = false;                  // observer_->wants_every_instruction()
  bool observe_reads_ = false;                // observer_->wants_reads()
  std::vector<ObservedAccess> obs_accesses_;  // the current instruction's
  std::vector<uint32_t> obs_values_;
  std::vector<uint32_t> obs_sources_;  // a store's or atomic's rs2, lane by lane, before it executed

  // The warp whose FP flags may still be in the host FPU (fp_claim), or nullptr.
  WarpState* fp_owner_ = nullptr;

  // Divergent plain branches: a diagnostic log like stats_, not architectural state.
  std::vector<DivergentBranch> divergent_;
  std::unordered_map<uint32_t, size_t> divergent_index_;  // pc -> index into divergent_

  // Derived, never persisted.
  std::vector<uint64_t> pct_change_points_;  // launch clock values where PCT's priorities change
  std::vector<uint32_t> ready_;              // per core: warps that are active, not waiting and not halted
  std::vector<uint32_t> active_;             // per core: active warps
  // Per core: bit 32 set and active_ in the low bits when dispatch_cta last found no room there. The
  // room (free warp slots, free local-memory slots) only changes when active_ does, so until then
  // the answer is known. Dropped when a launch starts or the state is replaced.
  std::vector<uint64_t> kmu_blocked_;
  // kICacheSize entries in their own anonymous mapping: an empty entry is all zero bytes, which the
  // kernel's fresh pages are, so a process faults in only the pages of the entries it fills (a short
  // run touches a few of the 80; a vector assigned them all, 70 of a short run's 411 page faults).
  struct Unmap {
    void operator()(ICacheEntry* p) const;
  };
  std::unique_ptr<ICacheEntry[], Unmap> icache_;
  // kBlocks basic blocks, indexed by their first pc, then the pool of kBlockPool instructions they
  // are cut from in the order they were built (so the blocks of a small kernel share a few pages),
  // in a mapping of their own for the same reason. When the pool is full, every block is dropped.
  struct UnmapBlocks {
    void operator()(Block* p) const;
  };
  std::unique_ptr<Block[], UnmapBlocks> blocks_;
  // The block translator (jit.hpp), made when the first block is built with RunOptions::jit; its
  // code is dropped with the blocks.
  std::unique_ptr<BlockJit> jit_;
  bool jit_tried_ = false;
  void drop_blocks();
  Decoded* block_pool_ = nullptr;  // inside blocks_'s mapping
  // inject()'s decodings: decode(word) of the last word injected with each hash (exec nullptr: none).
  static constexpr uint32_t kInjectDecodedBits = 6;
  std::array<Decoded, 1u << kInjectDecodedBits> inject_decoded_{};
  uint32_t block_pool_used_ = 0;
  uint32_t icache_generation_ = 1;
  uint64_t code_generation_seen_ = 0;  // memory's code generation the cache reflects
};

// LW, FLW, SW and FSW of a fully active warp through the one pointer Machine::words_direct has for
// all its lanes; false when the per-lane path must run. `to` / `from`: the register the words go to
// (nullptr: x0, read and discarded) or come from. The executors use it from 4 lanes on: the
// thread-entry routine's copy of local memory is most of a re-launch's instructions, and at 4 lanes
// this path cut a session of stops by 12% of its host instructions (BENCHMARKS.md, "Re-launch
// without copies"); 1 and 2 lanes keep the per-lane loop.
template <unsigned N>
inline bool load_words_direct(ExecCtx& c, const Decoded& d, uint32_t* to) {
  if (c.tmask != full_lane_mask(N)) return false;
  LaneVec<N> addr;
  load_lanes<N>(addr, c.x + d.rs1 * N);
  addr += uint32_t(d.imm);
  uint32_t lo = 0;
  const uint8_t* p = c.m.words_direct<false, N>(c, addr, &lo);
  if (!p) return false;
  uint32_t v[N];
  for (unsigned l = 0; l < N; ++l) std::memcpy(&v[l], p + (addr[l] - lo), 4);
  if (to) copy_lanes<N>(to, v);
  return true;
}
template <unsigned N>
inline bool store_words_direct(ExecCtx& c, const Decoded& d, const uint32_t* from) {
  if (c.tmask != full_lane_mask(N)) return false;
  LaneVec<N> addr;
  load_lanes<N>(addr, c.x + d.rs1 * N);
  addr += uint32_t(d.imm);
  uint32_t lo = 0;
  uint8_t* p = c.m.words_direct<true, N>(c, addr, &lo);
  if (!p) return false;
  // Lowest lane first: when lanes store to the same word the highest one wins.
  for (unsigned l = 0; l < N; ++l) std::memcpy(p + (addr[l] - lo), &from[l], 4);
  return true;
}

}  // namespace vx
