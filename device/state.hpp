// Architectural and scheduling state of the model as plain values.
//
// Nothing here holds a pointer or a virtual: every struct serializes field for
// field into the checkpoint schema. Derived data (the decode cache, ready
// masks) lives in Machine and is recomputed after a restore.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace vx {

// Why the device stopped on its own. Never a host crash.
enum class Cause : uint8_t {
  None = 0,
  IllegalInstruction,  // unknown encoding, unknown CSR, unmodelled Vortex unit, bad rounding mode
  MisalignedFetch,
  MisalignedLoad,
  MisalignedStore,
  FetchFault,        // instruction fetch from an unmapped address
  LoadFault,         // load from an unmapped address or through a window without read permission
  StoreFault,        // store to an unmapped address or through a window without write permission
  Breakpoint,        // EBREAK with no trap handler (mtvec == 0)
  EnvironmentCall,   // ECALL with no trap handler (mtvec == 0)
  IpdomOverflow,     // SPLIT pushing onto a full IPDOM stack
  IpdomUnderflow,    // JOIN with a token that does not match the stack
  BarrierZeroCount,  // BAR with a warp count of 0
  BadBarrier,        // BAR naming a CTA slot or barrier number that does not exist
  Deadlock,          // every remaining warp waits on a barrier that can never complete
  Watchdog,          // the pass exceeded its instruction budget
  RestoreFailed,     // the thread-entry routine of a re-launch failed (docs/relaunch.md); a debugger bug
  DivergentBranch,   // RunOptions::strict_branches: a plain branch whose active lanes disagree
};
const char* cause_name(Cause c);

struct DeviceException {
  Cause cause = Cause::None;
  uint32_t pc = 0;
  uint32_t core = 0;
  uint32_t warp = 0;
  uint32_t lane = 0;
  uint32_t addr = 0;  // faulting data address, or the instruction word for illegal instructions
  std::string to_string() const;
  bool operator==(const DeviceException&) const = default;
};

// A plain branch whose active lanes disagreed (the highest active lane decided for the warp).
// The model keeps one per PC: where and how it first diverged, and how often it did.
struct DivergentBranch {
  uint32_t pc = 0;
  uint32_t taken = 0;      // lanes whose condition held, the first time
  uint32_t not_taken = 0;  // active lanes whose condition did not hold, the first time
  uint32_t core = 0;
  uint32_t warp = 0;
  uint64_t count = 0;  // times it diverged since the device was opened
  bool operator==(const DivergentBranch&) const = default;
};

// Console bytes drained from one hart ring.
struct ConsoleChunk {
  uint32_t slot = 0;
  std::string bytes;
  uint32_t lost = 0;  // bytes the ring dropped since the last drain
};

struct MachineStats {
  uint64_t instructions = 0;       // warp instructions retired
  uint64_t lane_instructions = 0;  // sum of active lanes over retired instructions
  uint64_t warps_dispatched = 0;
  uint64_t units_dispatched = 0;      // CTAs or instances
  uint64_t divergent_branches = 0;    // plain branches whose lanes disagreed (last-lane rule applied)
  uint64_t restore_instructions = 0;  // warp instructions of thread-entry routines (not in `instructions`)
};

struct IpdomEntry {
  uint32_t orig_mask = 0;
  uint32_t else_pc = 0;
  bool fallthrough = false;
  bool operator==(const IpdomEntry&) const = default;
};

enum class WarpWait : uint8_t {
  None = 0,
  Barrier,      // BAR: waiting for the count to complete
  BarrierWait,  // BAR.WAIT: waiting for the phase to move past wait_phase
  Spawn,        // WSPAWN: waiting to be the only active warp of its core
};

// DCTRL.hacause (seed 000): why the Debug Module halted a warp.
enum class HaltCause : uint8_t { None = 0, Ebreak = 1, HaltReq = 2, Step = 3, ResetHaltReq = 4 };

struct WarpState {
  bool active = false;
  uint32_t pc = 0;
  uint32_t tmask = 0;
  WarpWait wait = WarpWait::None;
  uint32_t wait_barrier = 0;  // physical barrier index (bit 31: global)
  uint32_t wait_phase = 0;
  std::vector<IpdomEntry> ipdom;

  // Per-warp CSRs.
  uint32_t fcsr = 0;  // frm in bits 7..5, fflags in bits 4..0
  uint32_t mscratch = 0;
  uint32_t mstatus = 0;
  uint32_t mtvec = 0;
  uint32_t mepc = 0;
  uint32_t mcause = 0;
  uint32_t mtval = 0;
  uint64_t instret = 0;

  // What the launch put here (software coordinates of the work it holds).
  uint32_t cta_slot = 0;    // local-memory slot on the core (CTA_ID)
  uint32_t cta_rank = 0;    // warp index within the CTA
  uint32_t cta_size = 0;    // warps per CTA
  uint32_t cta_linear = 0;  // linear CTA index in the grid (x fastest)
  std::array<uint32_t, 3> block_id{};
  uint32_t instance_base = 0;  // RUN_INSTANCES / RUN_KERNEL_SLICE: instance of lane 0

  // Slot reuse: a slot that ran a CTA before restarts at the dispatch window.
  bool slot_used = false;
  uint32_t restart_pc = 0;

  // Lane registers, [reg * NT + lane]. x0 is kept zero.
  std::vector<uint32_t> x;
  std::vector<uint32_t> f;
  std::vector<uint32_t> reservation;  // LR.W, per lane: reserved address | 1, 0 = none (sized lazily)

  // Debug Module (docs/debug-module.md). A halted warp is never scheduled.
  bool halted = false;
  HaltCause halt_cause = HaltCause::None;
  bool reset_halt = false;         // ndmreset with resethaltreq: the next dispatch into this slot starts halted
  std::vector<uint32_t> dscratch;  // DSCRATCH0..3 (CSRs 0x7B2..0x7B5), 4 per lane: [lane * 4 + n] (sized lazily)

  bool operator==(const WarpState&) const = default;
};

struct BarrierState {
  uint32_t count = 0;  // arrivals so far in this phase
  uint32_t phase = 0;
  bool operator==(const BarrierState&) const = default;
};

struct CoreState {
  std::vector<WarpState> warps;
  std::vector<uint8_t> local_mem;
  std::vector<BarrierState> barriers;  // NW CTA slots x 8
  std::vector<uint32_t> slot_warps;    // per local-memory slot: warps of its CTA still active
  uint32_t lmem_next_slot = 0;
  uint64_t instret = 0;
  std::vector<uint32_t> global_arrived;  // per global barrier number: warps of this core arrived
  bool operator==(const CoreState&) const = default;
};

enum class LaunchKind : uint8_t { None = 0, Grid, Instances, Slice };

// One launch in flight, whichever command started it.
struct LaunchState {
  LaunchKind kind = LaunchKind::None;
  uint32_t start_pc = 0;  // Grid: image base (startup code); instances: the entry point
  uint32_t entry_pc = 0;  // Grid: CTA_ENTRY
  uint32_t arg_ptr = 0;   // Grid: mscratch of every warp
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  std::array<uint32_t, 3> cluster{1, 1, 1};
  uint32_t lmem_bytes = 0;
  uint32_t lmem_stride = 0;
  uint32_t lmem_slots = 0;
  uint32_t warps_per_cta = 0;
  // Instances.
  uint32_t max_harts = 0;  // 0: every hart
  uint32_t num_args = 0;
  std::array<uint32_t, 7> args{};
  uint32_t stack_top = 0;
  uint32_t return_addr = 0;
  uint32_t slice_id = 0;
  uint32_t packed_args = 0;
  uint32_t tsd_src = 0;
  uint32_t tsd_size = 0;
  uint32_t ktb_stride = 0;
  // Progress.
  uint64_t total_units = 0;  // CTAs or instances
  uint64_t next_unit = 0;
  uint32_t kmu_core_cursor = 0;
  bool operator==(const LaunchState&) const = default;
};

struct GlobalBarrierState {
  uint32_t cores_arrived = 0;
  uint32_t phase = 0;
  bool operator==(const GlobalBarrierState&) const = default;
};

// The warp scheduler is a small plain value: the same state gives the same future.
struct SchedulerState {
  uint64_t rng = 0;
  uint32_t core_cursor = 0;            // next core to run within the current round
  std::vector<int32_t> current_warp;   // per core: warp running its quantum, -1 if none
  std::vector<uint32_t> quantum_left;  // per core
  bool operator==(const SchedulerState&) const = default;
};

// A window of the command processor (CMP_REG_WINDOW_*), applied to core accesses.
struct MemWindow {
  uint64_t base = 0;
  uint64_t target = 0;
  uint64_t mode_reg = 0;   // raw CMP_REG_WINDOW_MODE
  uint64_t scale_reg = 0;  // raw CMP_REG_WINDOW_SCALE
  bool active() const { return mode_reg & 1; }
  uint32_t mode() const { return uint32_t(mode_reg >> 1) & 3; }   // 0 SHARED, 1 PER_HART, 2 PER_CORE
  uint32_t perms() const { return uint32_t(mode_reg >> 4) & 7; }  // bit0 R, bit1 W, bit2 X
  uint64_t size() const {
    uint64_t s = mode_reg >> 32;
    return s == 0 ? (1ull << 32) : s;
  }
  uint64_t scale() const {
    uint32_t a = uint32_t(scale_reg) & 31;
    uint64_t b = scale_reg >> 32;
    if (b == 0) b = 1ull << 32;  // SCALE_B is 1..2^32: 0 encodes 2^32
    return (a == 0 ? 0ull : (1ull << a)) * b;
  }
  bool operator==(const MemWindow&) const = default;
};

}  // namespace vx
