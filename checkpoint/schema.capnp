# The checkpoint store's records (docs/store.md).
#
# Rules: field numbers are append-only; a field is never renumbered, retyped or
# reused. A change old readers cannot ignore bumps StoreHeader.formatVersion
# (records.hpp: kFormatVersion). Appending a field does not: an older reader
# skips it, and a newer reader sees its default (0, false, empty) in an older
# record, which must therefore mean what the older record meant. Bytes are Data. Byte arrays of 32-bit values
# (lane registers) are little-endian. Every value in the store is wrapped in the
# envelope of docs/store.md (checksum, encoding) around one flat-array message.
@0xc1b37a6b131492fb;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("vx::checkpoint::schema");

# The device shape the store was recorded on.
struct DeviceConfig {
  clusters @0 :UInt32;
  coresPerCluster @1 :UInt32;
  warps @2 :UInt32;          # warp slots per core (NW)
  threads @3 :UInt32;        # lanes per warp (NT)
  localMemBytes @4 :UInt32;  # local memory per core
}

# Key "header" of the "meta" database: one per store, written when it is created.
struct StoreHeader {
  formatVersion @0 :UInt32;  # never moves: read first to refuse newer stores
  config @1 :DeviceConfig;
  kernelHash @2 :UInt64;     # hash of the kernel image the workload runs
  workload @3 :Text;         # free-form description (command line, image path)
  # Appended in format 2.
  seed @4 :UInt64;             # the warp scheduler's seed (RunOptions::seed)
  schedulerVersion @5 :UInt32; # vx::kSchedulerVersion of the build that recorded: same seed, same schedule
  watchdog @6 :UInt64;         # RunOptions::watchdog_instructions (0: off)
  schedule @7 :UInt8;          # RunOptions::schedule: 0 the seeded random scheduler, 1 PCT (docs/nondeterminism.md)
}

# 128-bit XXH3 of a page's raw bytes: the key of the "pages" database.
struct PageHash {
  hi @0 :UInt64;  # high 64 bits (first 8 bytes of the canonical, big-endian form)
  lo @1 :UInt64;  # low 64 bits
}

# One page of the memory image. The hash is inline (not a PageHash) so that a list of these is
# 24 bytes an entry with no pointers: a record lists every page of its image.
struct PageRef {
  number @0 :UInt64;  # page number: address >> 12
  hashHi @1 :UInt64;  # PageHash.hi
  hashLo @2 :UInt64;  # PageHash.lo
}

enum StopKind {
  unknown @0;
  breakpoint @1;       # a breakpoint was reached
  step @2;             # a step (instruction or line) completed
  deviceException @3;  # the device raised an exception: see StopReason.exception
  watchdog @4;         # the pass exceeded its instruction budget
  interrupt @5;        # the user asked to stop
  launchStart @6;      # the launch was intercepted before its first instruction
  launchEnd @7;        # every unit of the launch completed
  automatic @8;        # format 2: taken by the timeline for speed, not a stop the user saw
  watchpoint @9;       # format 2: a watched location was accessed
}

struct DeviceException {
  cause @0 :UInt8;  # vx::Cause
  pc @1 :UInt32;
  core @2 :UInt32;
  warp @3 :UInt32;
  lane @4 :UInt32;
  addr @5 :UInt32;  # faulting data address, or the instruction word
}

struct StopReason {
  kind @0 :StopKind;
  text @1 :Text;                   # what the user is shown, e.g. "Breakpoint 2, foo at k.c:42"
  exception @2 :DeviceException;   # meaningful when kind is deviceException
}

# The warp scheduler (vx::SchedulerState).
struct Scheduler {
  rng @0 :UInt64;
  coreCursor @1 :UInt32;
  currentWarp @2 :List(Int32);    # per core: warp running its quantum, -1 if none
  quantumLeft @3 :List(UInt32);   # per core
}

struct IpdomEntry {
  origMask @0 :UInt32;
  elsePc @1 :UInt32;
  fallthrough @2 :Bool;
}

enum WarpWait {
  none @0;
  barrier @1;      # BAR: waiting for the count to complete
  barrierWait @2;  # BAR.WAIT: waiting for the phase to move past waitPhase
  spawn @3;        # WSPAWN: waiting to be the only active warp of its core
}

# One warp slot (vx::WarpState) and where it sits.
struct Warp {
  core @0 :UInt32;  # global core index
  slot @1 :UInt32;  # warp slot on the core
  active @2 :Bool;
  pc @3 :UInt32;
  tmask @4 :UInt32;
  wait @5 :WarpWait;
  waitBarrier @6 :UInt32;  # physical barrier index (bit 31: global)
  waitPhase @7 :UInt32;
  ipdom @8 :List(IpdomEntry);  # bottom of the stack first

  # Per-warp CSRs.
  fcsr @9 :UInt32;
  mscratch @10 :UInt32;
  mstatus @11 :UInt32;
  mtvec @12 :UInt32;
  mepc @13 :UInt32;
  mcause @14 :UInt32;
  mtval @15 :UInt32;
  instret @16 :UInt64;

  # What the launch put here.
  ctaSlot @17 :UInt32;
  ctaRank @18 :UInt32;
  ctaSize @19 :UInt32;
  ctaLinear @20 :UInt32;
  blockId @21 :List(UInt32);  # x, y, z: exactly 3
  instanceBase @22 :UInt32;
  slotUsed @23 :Bool;
  restartPc @24 :UInt32;

  # Lane registers, u32 little-endian, [reg * NT + lane]: exactly 32 * NT * 4 bytes each.
  x @25 :Data;
  f @26 :Data;
  reservation @27 :Data;  # LR.W per lane (reserved address | 1, 0 = none): empty or NT * 4 bytes

  # Debug Module state.
  halted @28 :Bool;
  haltCause @29 :UInt8;  # vx::HaltCause
  resetHalt @30 :Bool;
  dscratch @31 :Data;    # DSCRATCH0..3 per lane, [lane * 4 + n]: empty or NT * 16 bytes
}

struct BarrierState {
  count @0 :UInt32;  # arrivals so far in this phase
  phase @1 :UInt32;
}

# A page that is not in the memory map: a core's local memory.
struct BlobRef {
  size @0 :UInt32;  # raw bytes (the page's decompressed size)
  hash @1 :PageHash;
}

# One core (vx::CoreState without its warps, which are in Checkpoint.warps).
struct Core {
  localMem @0 :BlobRef;          # size 0: no local memory saved
  barriers @1 :List(BarrierState);
  slotWarps @2 :List(UInt32);    # per local-memory slot: warps of its CTA still active
  lmemNextSlot @3 :UInt32;
  instret @4 :UInt64;
  globalArrived @5 :List(UInt32);  # per global barrier number: warps of this core arrived
}

# A half-open range of unit ids (CTAs or instances): first, first + 1, ..., first + count - 1.
struct UnitRange {
  first @0 :UInt64;
  count @1 :UInt64;
}

# The patent's three lists, as sorted, disjoint ranges.
struct ThreadLists {
  complete @0 :List(UnitRange);    # logically complete
  inProgress @1 :List(UnitRange);  # saved in this checkpoint's warps
  notLaunched @2 :List(UnitRange);
}

enum LaunchKind {
  none @0;
  grid @1;
  instances @2;
  slice @3;
}

# The launch in flight (vx::LaunchState).
struct Launch {
  kind @0 :LaunchKind;
  startPc @1 :UInt32;
  entryPc @2 :UInt32;
  argPtr @3 :UInt32;
  grid @4 :List(UInt32);     # exactly 3
  block @5 :List(UInt32);    # exactly 3
  cluster @6 :List(UInt32);  # exactly 3
  lmemBytes @7 :UInt32;
  lmemStride @8 :UInt32;
  lmemSlots @9 :UInt32;
  warpsPerCta @10 :UInt32;
  maxHarts @11 :UInt32;
  numArgs @12 :UInt32;
  args @13 :List(UInt32);    # exactly 7
  stackTop @14 :UInt32;
  returnAddr @15 :UInt32;
  sliceId @16 :UInt32;
  packedArgs @17 :UInt32;
  tsdSrc @18 :UInt32;
  tsdSize @19 :UInt32;
  ktbStride @20 :UInt32;
  totalUnits @21 :UInt64;
  nextUnit @22 :UInt64;
  kmuCoreCursor @23 :UInt32;
}

struct GlobalBarrier {
  coresArrived @0 :UInt32;
  phase @1 :UInt32;
}

# Time key: the record's own key, repeated so a record read under another key is caught.
# Since format 2 a point in time is (launch, instret): pass and seq are always 0.
struct TimeKey {
  launch @0 :UInt32;
  pass @1 :UInt32;    # unused since format 2 (0)
  instret @2 :UInt64; # warp instructions the launch has retired
  seq @3 :UInt32;     # unused since format 2 (0)
}

# A value of the "checkpoints" database.
struct Checkpoint {
  key @0 :TimeKey;
  stop @1 :StopReason;
  scheduler @2 :Scheduler;
  warps @3 :List(Warp);          # sorted by (core, slot), no duplicates
  cores @4 :List(Core);          # one per core of the device, in core order
  threads @5 :ThreadLists;
  console @6 :Data;              # console bytes printed so far
  memory @7 :List(PageRef);      # every page of the memory image, sorted by number, no duplicates
  stateHash @8 :UInt64;          # engine's hash of the device state (0: none), checked by replay
  launch @9 :Launch;
  globalBarriers @10 :List(GlobalBarrier);
  # Appended to format 1 (absent from older records: empty, 0).
  globalExpected @11 :List(UInt32);  # per global barrier: cores expected by the last BAR; empty or one each
  kernelInstructions @12 :UInt64;    # warp instructions the launch has retired, over every pass
  kernelLaneInstructions @13 :UInt64;  # their active lanes
  drainCountdown @14 :UInt64;        # warp instructions until the next console drain
  # Live sessions (docs/live.md "Time travel while live"; absent: false).
  live @15 :Bool;     # written live after the launch's first Debug Module step: not a re-launch's state
  stepped @16 :Bool;  # reached from the launch's previous checkpoint by Debug Module steps (a warp run alone)
  # The timeline (docs/store.md "Timeline"; absent: none): warp samples taken since the previous
  # checkpoint the session wrote, encoded as checkpoint/timeline.hpp says ("VXT1").
  timeline @17 :Data;
}

# A value of the "marks" database (format 2): a point the user stopped at or marked, listed by
# `info checkpoints` and reached with `goto N`. Its key is a time key, like a checkpoint's.
struct Mark {
  stop @0 :StopReason;
  # Appended: the mark's number, given when it was made (1 + the highest so far) and kept, so that
  # `goto N` names the same stop however many stops are later recorded earlier in time. 0 in
  # recordings made before it: those are numbered in time order.
  number @1 :UInt32;
}

enum HostOpKind {
  alloc @0;    # memory allocated: size asked, addr the address the device gave
  reserve @1;  # a fixed range mapped: addr, size
  free @2;     # addr freed
  copy @3;     # bytes copied to the device at addr: data (size bytes)
  submit @4;   # a command buffer submitted: data (size bytes)
  symbols @5;  # a kernel image the workload runs, kept for its symbols: data, name (not sent to the device)
  hostEnd @6;  # the host issued nothing more: the recording holds the whole workload; addr = host exit status
  timeline @7; # timeline samples taken after the last checkpoint written: data ("VXT1"; not sent to the device)
}

# A value of the "ops" database (format 2): the host's operations on the device, in order, keyed by
# their index (u64 big-endian). Replaying them on a device of the recorded shape re-creates the workload.
struct HostOp {
  kind @0 :HostOpKind;
  addr @1 :UInt64;
  size @2 :UInt64;
  data @3 :BlobRef;  # copy, submit, symbols: the bytes, stored as a page of that size
  name @4 :Text;     # symbols: the image's file name
}

# A launch's interval a live session ran by Debug Module steps (not re-executed).
struct SteppedInterval {
  from @0 :UInt64;
  to @1 :UInt64;
}

# A value of the "history" database (format 3, optional; docs/store.md "History"), keyed by the
# launch number (u32 big-endian): the writes a quiet re-execution of that launch gathered for the
# questions over the history (docs/time-travel.md), one entry per lane's write, in columns.
struct History {
  launch @0 :UInt32;
  version @1 :UInt32;     # of the gathering (1); an entry of another version is gathered again
  reached @2 :UInt64;     # the launch's count the pass ended at
  ended @3 :Bool;         # the launch ran to its end
  complete @4 :Bool;      # false: a device stop ended the pass early
  grid @5 :Bool;          # a grid launch (else instances)
  gridDims @6 :List(UInt32);   # 3 entries
  blockDims @7 :List(UInt32);  # 3 entries
  stepped @8 :List(SteppedInterval);
  # The writes: every list has one entry per write.
  instret @9 :List(UInt64);
  pc @10 :List(UInt32);
  core @11 :List(UInt32);
  slot @12 :List(UInt32);
  lane @13 :List(UInt32);
  cta @14 :List(UInt32);      # grid: the CTA's linear index (instances: 0)
  thread @15 :List(UInt32);   # grid: the thread's linear index in its CTA; instances: the instance
  addr @16 :List(UInt32);
  size @17 :List(UInt8);
  flags @18 :List(UInt8);     # bit 0 local memory, bit 1 an atomic
  before @19 :List(UInt32);
  after @20 :List(UInt32);
  until @21 :UInt64;      # where the pass was to go (2^64-1: the launch's end)
}
