// What the checkpoint store holds, as plain values (docs/store.md).
//
// These mirror device/state.hpp field for field without including it: the store
// never depends on device internals. The engine converts device state into these
// records; schema.capnp is their encoding.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace vx::checkpoint {

// Version 1 was the first format; version 2 keys checkpoints by (launch, instret) alone and adds the
// host operations and the marks (docs/store.md). Bump on any change an older reader cannot ignore.
// Appending a field whose default (0, empty) an older record decodes to is not such a change.
// Version 3 adds the host operation kind `timeline` (an older reader would refuse the operation):
// a version 2 store has none, and this build reads both (it writes 3).
constexpr uint32_t kFormatVersion = 3;
constexpr uint32_t kOldestFormatVersion = 2;

// Memory image pages are 4 KiB (device/memory.hpp kPageBits = 12).
constexpr uint32_t kPageBits = 12;
constexpr uint32_t kPageSize = 1u << kPageBits;
// Largest page or local-memory blob the store accepts, raw.
constexpr uint32_t kMaxPageBytes = 64u << 20;

// The device shape (vx::DeviceConfig).
struct ConfigRecord {
  uint32_t clusters = 1;
  uint32_t cores_per_cluster = 1;
  uint32_t warps = 4;
  uint32_t threads = 4;
  uint32_t local_mem_bytes = 16 * 1024;
  uint32_t total_cores() const { return clusters * cores_per_cluster; }
  std::string to_string() const;  // "1x1x4x4, 16384 B local memory"
  bool operator==(const ConfigRecord&) const = default;
};

struct StoreHeader {
  uint32_t format_version = kFormatVersion;
  ConfigRecord config;
  uint64_t kernel_hash = 0;
  std::string workload;
  uint64_t seed = 0;               // the warp scheduler's seed
  uint32_t scheduler_version = 0;  // vx::kSchedulerVersion of the recording build
  uint64_t watchdog = 0;           // the watchdog's instruction budget (0: off)
  uint8_t schedule = 0;            // vx::Schedule of the recording (0: the seeded random scheduler)
  bool operator==(const StoreHeader&) const = default;
};

// A point in time, totally ordered: the launch (1-based, in workload order), then the warp
// instructions that launch has retired. The model is deterministic for a configuration, seed and
// inputs, so the point names one state however it was reached (which pass, which command).
struct TimeKey {
  uint32_t launch = 0;
  uint64_t instret = 0;
  auto operator<=>(const TimeKey&) const = default;
  std::string to_string() const;  // "(launch 1, instret 300)"
};

// XXH3 128-bit hash of a page's raw bytes.
struct PageHash {
  uint64_t hi = 0;
  uint64_t lo = 0;
  auto operator<=>(const PageHash&) const = default;
  std::string to_string() const;  // 32 hex digits, hi first
};

PageHash hash_page(const uint8_t* bytes, size_t size);
inline PageHash hash_page(const std::vector<uint8_t>& bytes) { return hash_page(bytes.data(), bytes.size()); }

// A page handed to Store::put: its bytes and their hash (hash_page).
struct PageData {
  PageHash hash;
  std::vector<uint8_t> bytes;
};
PageData make_page(std::vector<uint8_t> bytes);

struct PageRef {
  uint64_t number = 0;  // address >> kPageBits
  PageHash hash;
  bool operator==(const PageRef&) const = default;
};

// A blob stored as a page but outside the memory map (a core's local memory).
struct BlobRef {
  uint32_t size = 0;  // 0: nothing saved
  PageHash hash;
  bool operator==(const BlobRef&) const = default;
};

enum class StopKind : uint8_t {
  Unknown = 0,
  Breakpoint,
  Step,
  DeviceException,
  Watchdog,
  Interrupt,
  LaunchStart,
  LaunchEnd,
  Automatic,   // format 2: the timeline's own checkpoint, not a stop the user saw
  Watchpoint,  // format 2
};
constexpr uint8_t kStopKindCount = 10;

struct ExceptionRecord {
  uint8_t cause = 0;  // vx::Cause
  uint32_t pc = 0;
  uint32_t core = 0;
  uint32_t warp = 0;
  uint32_t lane = 0;
  uint32_t addr = 0;
  bool operator==(const ExceptionRecord&) const = default;
};

struct StopRecord {
  StopKind kind = StopKind::Unknown;
  std::string text;
  ExceptionRecord exception;
  uint32_t number = 0;  // a mark's number (the marks database only; 0: none given)
  bool operator==(const StopRecord&) const = default;
};

struct SchedulerRecord {
  uint64_t rng = 0;
  uint32_t core_cursor = 0;
  std::vector<int32_t> current_warp;   // per core, -1: none
  std::vector<uint32_t> quantum_left;  // per core
  bool operator==(const SchedulerRecord&) const = default;
};

struct IpdomRecord {
  uint32_t orig_mask = 0;
  uint32_t else_pc = 0;
  bool fallthrough = false;
  bool operator==(const IpdomRecord&) const = default;
};

enum class WaitKind : uint8_t { None = 0, Barrier, BarrierWait, Spawn };
constexpr uint8_t kWaitKindCount = 4;

struct WarpRecord {
  uint32_t core = 0;
  uint32_t slot = 0;
  bool active = false;
  uint32_t pc = 0;
  uint32_t tmask = 0;
  WaitKind wait = WaitKind::None;
  uint32_t wait_barrier = 0;
  uint32_t wait_phase = 0;
  std::vector<IpdomRecord> ipdom;

  uint32_t fcsr = 0;
  uint32_t mscratch = 0;
  uint32_t mstatus = 0;
  uint32_t mtvec = 0;
  uint32_t mepc = 0;
  uint32_t mcause = 0;
  uint32_t mtval = 0;
  uint64_t instret = 0;

  uint32_t cta_slot = 0;
  uint32_t cta_rank = 0;
  uint32_t cta_size = 0;
  uint32_t cta_linear = 0;
  std::array<uint32_t, 3> block_id{};
  uint32_t instance_base = 0;
  bool slot_used = false;
  uint32_t restart_pc = 0;

  std::vector<uint32_t> x;            // [reg * NT + lane], exactly 32 * NT
  std::vector<uint32_t> f;            // exactly 32 * NT
  std::vector<uint32_t> reservation;  // empty or NT

  bool halted = false;
  uint8_t halt_cause = 0;  // vx::HaltCause
  bool reset_halt = false;
  std::vector<uint32_t> dscratch;  // empty or 4 * NT

  bool operator==(const WarpRecord&) const = default;
};

struct BarrierRecord {
  uint32_t count = 0;
  uint32_t phase = 0;
  bool operator==(const BarrierRecord&) const = default;
};

struct CoreRecord {
  BlobRef local_mem;
  std::vector<BarrierRecord> barriers;
  std::vector<uint32_t> slot_warps;
  uint32_t lmem_next_slot = 0;
  uint64_t instret = 0;
  std::vector<uint32_t> global_arrived;
  bool operator==(const CoreRecord&) const = default;
};

// Units first, first + 1, ..., first + count - 1.
struct UnitRange {
  uint64_t first = 0;
  uint64_t count = 0;
  bool operator==(const UnitRange&) const = default;
};

// The patent's three lists. Each is sorted, its ranges non-empty and disjoint.
struct ThreadLists {
  std::vector<UnitRange> complete;
  std::vector<UnitRange> in_progress;
  std::vector<UnitRange> not_launched;
  bool operator==(const ThreadLists&) const = default;
};

enum class LaunchKind : uint8_t { None = 0, Grid, Instances, Slice };
constexpr uint8_t kLaunchKindCount = 4;

struct LaunchRecord {
  LaunchKind kind = LaunchKind::None;
  uint32_t start_pc = 0;
  uint32_t entry_pc = 0;
  uint32_t arg_ptr = 0;
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  std::array<uint32_t, 3> cluster{1, 1, 1};
  uint32_t lmem_bytes = 0;
  uint32_t lmem_stride = 0;
  uint32_t lmem_slots = 0;
  uint32_t warps_per_cta = 0;
  uint32_t max_harts = 0;
  uint32_t num_args = 0;
  std::array<uint32_t, 7> args{};
  uint32_t stack_top = 0;
  uint32_t return_addr = 0;
  uint32_t slice_id = 0;
  uint32_t packed_args = 0;
  uint32_t tsd_src = 0;
  uint32_t tsd_size = 0;
  uint32_t ktb_stride = 0;
  uint64_t total_units = 0;
  uint64_t next_unit = 0;
  uint32_t kmu_core_cursor = 0;
  bool operator==(const LaunchRecord&) const = default;
};

struct GlobalBarrierRecord {
  uint32_t cores_arrived = 0;
  uint32_t phase = 0;
  bool operator==(const GlobalBarrierRecord&) const = default;
};

// A host operation on the device (format 2, docs/store.md "Recorded operations").
enum class HostOpKind : uint8_t { Alloc = 0, Reserve, Free, Copy, Submit, Symbols, HostEnd, Timeline };
constexpr uint8_t kHostOpKindCount = 8;
const char* host_op_name(HostOpKind k);

struct HostOpRecord {
  HostOpKind kind = HostOpKind::Alloc;
  uint64_t addr = 0;  // alloc: the address the device gave; hostEnd: the host's exit status
  uint64_t size = 0;  // alloc/reserve: bytes; copy/submit/symbols: the data's size
  BlobRef data;       // copy, submit, symbols (size 0 for the others)
  std::string name;   // symbols: the image's file name
  bool operator==(const HostOpRecord&) const = default;
};

struct CheckpointRecord {
  TimeKey key;  // must equal the key it is stored under
  StopRecord stop;
  SchedulerRecord scheduler;
  std::vector<WarpRecord> warps;  // sorted by (core, slot), no duplicates
  std::vector<CoreRecord> cores;  // exactly one per core
  ThreadLists threads;
  std::vector<uint8_t> console;
  std::vector<PageRef> memory;  // sorted by number, no duplicates
  uint64_t state_hash = 0;
  LaunchRecord launch;
  std::vector<GlobalBarrierRecord> global_barriers;
  // Appended to format 1: a record written before them reads back with these empty or 0.
  std::vector<uint32_t> global_expected;  // per global barrier: cores expected by the last BAR; empty or one each
  uint64_t kernel_instructions = 0;       // warp instructions the launch has retired, over every pass
  uint64_t kernel_lane_instructions = 0;  // their active lanes
  uint64_t drain_countdown = 0;           // warp instructions until the next console drain
  // Live sessions (docs/live.md "Time travel while live"). live: written by a live session after the
  // launch's first Debug Module step, so a re-launch that reaches this key may hold another state.
  // stepped: the interval from the launch's previous checkpoint ran by Debug Module steps (warps run
  // alone, out of the scheduler's order): a re-launch from that checkpoint does not follow it.
  bool live = false;
  bool stepped = false;
  // The timeline samples taken since the previous checkpoint written (checkpoint/timeline.hpp), encoded.
  std::vector<uint8_t> timeline;
  bool operator==(const CheckpointRecord&) const = default;
};

// The "history" database (docs/store.md "History"): what a quiet re-execution of one launch under
// a device observer gathered for the questions over the history (docs/time-travel.md), kept so
// that later sessions read it instead of re-executing the launch. One entry per write of one lane,
// in time order (stored in columns). A launch's entry is stored only when its start is a checkpoint
// (records are immutable, the run deterministic): every later pass of it gathers the same.
struct HistoryWrite {
  uint64_t instret = 0;  // the launch's count with the writing instruction
  uint32_t pc = 0, core = 0, slot = 0, lane = 0;
  uint32_t cta = 0,
           thread = 0;  // grid launches: the CTA's linear index and the thread's in it; instances: 0, the instance
  uint32_t addr = 0;    // after the memory windows (local memory: 0xffff.... of core `core`)
  uint8_t size = 0;
  uint8_t flags = 0;               // bit 0 local memory, bit 1 an atomic
  uint32_t before = 0, after = 0;  // the low `size` bytes, little-endian
  bool operator==(const HistoryWrite&) const = default;
};

// An interval a live session ran by Debug Module steps: not re-executed, so not gathered.
struct SteppedIntervalRecord {
  uint64_t from = 0, to = 0;  // the launch's counts at its two ends (both checkpoints)
  bool operator==(const SteppedIntervalRecord&) const = default;
};

// A launch can hold millions of writes: they can be handed over in chunks instead of as one vector.
// A source fills `out` with the writes from index `first` on; a sink takes the next ones (an error
// stops the reading).
using HistoryWriteSource = std::function<void(size_t first, std::span<HistoryWrite> out)>;
using HistoryWriteSink = std::function<Result<void>(std::span<const HistoryWrite> writes)>;

constexpr uint32_t kHistoryVersion = 1;  // of what a pass gathers; an entry of another is gathered again

struct HistoryRecord {
  uint32_t launch = 0;
  uint32_t version = kHistoryVersion;
  uint64_t until = 0;    // where the pass was to go (UINT64_MAX: the launch's end)
  uint64_t reached = 0;  // the launch's count the pass ended at
  bool ended = false;    // the launch ran to its end
  bool complete = true;  // false: a device stop ended the pass before where it was to go
  bool grid = true;      // the launch's kind, for naming its threads
  std::array<uint32_t, 3> grid_dims{1, 1, 1}, block_dims{1, 1, 1};
  std::vector<SteppedIntervalRecord> stepped;
  std::vector<HistoryWrite> writes;
  bool operator==(const HistoryRecord&) const = default;
};

}  // namespace vx::checkpoint
