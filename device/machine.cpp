#include "device/machine.hpp"

#include <sys/mman.h>

#include "device/extension_units.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <new>
#include <string_view>
#include <type_traits>

namespace vx {

namespace {

constexpr uint32_t kICacheSize = 1u << 13;
constexpr uint64_t kDrainInterval = 4096;  // warp instructions between console drains
constexpr uint32_t kGlobalBarriers = memmap::kNumBarriersPerCta;

}  // namespace

const char* cause_name(Cause c) {
  switch (c) {
    case Cause::None: return "none";
    case Cause::IllegalInstruction: return "illegal instruction";
    case Cause::MisalignedFetch: return "misaligned instruction fetch";
    case Cause::MisalignedLoad: return "misaligned load";
    case Cause::MisalignedStore: return "misaligned store";
    case Cause::FetchFault: return "instruction fetch from unmapped memory";
    case Cause::LoadFault: return "load from unmapped memory";
    case Cause::StoreFault: return "store to unmapped memory";
    case Cause::Breakpoint: return "breakpoint (EBREAK)";
    case Cause::EnvironmentCall: return "environment call (ECALL)";
    case Cause::IpdomOverflow: return "IPDOM stack overflow";
    case Cause::IpdomUnderflow: return "IPDOM stack underflow (JOIN without a matching SPLIT)";
    case Cause::BarrierZeroCount: return "barrier with a warp count of 0";
    case Cause::BadBarrier: return "barrier id out of range";
    case Cause::Deadlock: return "deadlock: every warp waits on a barrier that cannot complete";
    case Cause::Watchdog: return "watchdog: instruction budget exceeded";
    case Cause::RestoreFailed: return "the re-launch's thread-entry routine failed";
    case Cause::DivergentBranch: return "divergent branch (lanes disagree outside a split)";
  }
  return "unknown";
}

std::string DeviceException::to_string() const {
  char buf[160];
  const char* what = cause == Cause::IllegalInstruction ? "instruction"
                     : cause == Cause::DivergentBranch  ? "lanes taken"
                                                        : "address";
  snprintf(buf, sizeof buf, "%s at pc 0x%08x (core %u, warp %u, lane %u, %s 0x%08x)", cause_name(cause), pc, core, warp,
           lane, what, addr);
  std::string out = buf;
  // An instruction of an upstream extension unit the model does not have: say which unit.
  if (cause == Cause::IllegalInstruction) {
    if (const ExtensionRow* ext = classify_extension(addr)) {
      out += std::string(": a Vortex ") + ext->unit + " instruction";
      if (*ext->instruction) out += std::string(" (") + ext->instruction + ")";
      out += "; the model has no such unit";
    }
  }
  return out;
}

Machine::Machine(const DeviceConfig& config, const RunOptions& options) : cfg_(config), opts_(options) {
  assert(!cfg_.validate());
  const uint32_t nt = cfg_.threads, nw = cfg_.warps;
  cores_.resize(cfg_.total_cores());
  for (CoreState& c : cores_) {
    c.warps.resize(nw);
    for (WarpState& w : c.warps) {
      w.x.assign(32 * nt, 0);
      w.f.assign(32 * nt, 0);
    }
    c.local_mem.assign(cfg_.local_mem_bytes, 0);
    c.barriers.resize(nw * memmap::kNumBarriersPerCta);
    c.slot_warps.assign(nw, 0);
    c.global_arrived.assign(kGlobalBarriers, 0);
  }
  global_barriers_.resize(kGlobalBarriers);
  global_expected_.assign(kGlobalBarriers, 0);
  // The I/O region (console rings, exit code) and every hart's stack.
  mem_.map(0, memmap::kIoEnd);
  uint64_t stack_bytes = uint64_t(cfg_.total_harts()) * memmap::kStackPerHart;
  mem_.map(uint32_t(memmap::kStackBase - stack_bytes), stack_bytes);
  sched_.rng = splitmix64(opts_.seed);
  for (uint64_t i = 0; i < kPctChangePoints; ++i)
    pct_change_points_.push_back(splitmix64(opts_.seed + 0x5bd1e995ull * (i + 1)) % kPctHorizon);
  sched_.current_warp.assign(cores_.size(), -1);
  sched_.quantum_left.assign(cores_.size(), 0);
  state_replaced();
}

void Machine::state_replaced() {
  ready_.assign(cores_.size(), 0);
  active_.assign(cores_.size(), 0);
  kmu_blocked_.assign(cores_.size(), 0);
  for (uint32_t c = 0; c < cores_.size(); ++c)
    for (uint32_t w = 0; w < cfg_.warps; ++w) update_ready(c, w);
  // The decode cache holds what memory holds (every write to a fetched word bumps the code
  // generation): it survives a kill and a re-launch's restore unless code was written since.
  if (!icache_) {
    static_assert(std::is_trivially_copyable_v<ICacheEntry> && std::is_trivially_destructible_v<ICacheEntry>);
    // Not calloc: once glibc has freed a mapped block this large it serves the next from the heap and
    // clears every byte, faulting in every page.
    static_assert(std::is_trivially_copyable_v<Block> && std::is_trivially_destructible_v<Block>);
    auto zero_pages = [](size_t bytes) {
      void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      return p;
    };
    icache_.reset(static_cast<ICacheEntry*>(zero_pages(kICacheSize * sizeof(ICacheEntry))));
    static_assert(std::is_trivially_copyable_v<Decoded> && (kBlocks * sizeof(Block)) % alignof(Decoded) == 0);
    blocks_.reset(static_cast<Block*>(zero_pages(kBlockMapBytes())));
    block_pool_ = reinterpret_cast<Decoded*>(blocks_.get() + kBlocks);
    empty_icache();
    code_generation_seen_ = mem_.code_generation();
  } else if (mem_.code_generation() != code_generation_seen_) {
    code_rewritten();
  }
  windows_changed();
  arm_before_trigger();
}

void Machine::update_ready(uint32_t c, uint32_t w) {
  const WarpState& ws = cores_[c].warps[w];
  uint32_t bit = 1u << w;
  active_[c] = ws.active ? (active_[c] | bit) : (active_[c] & ~bit);
  bool ready = ws.active && ws.wait == WarpWait::None && !ws.halted;
  ready_[c] = ready ? (ready_[c] | bit) : (ready_[c] & ~bit);
}

void Machine::windows_changed() {
  windows_active_ = std::any_of(windows_.begin(), windows_.end(), [](const MemWindow& w) { return w.active(); });
}

// --- Data path ---------------------------------------------------------------

bool Machine::translate_for_hart(uint32_t hart, uint32_t* addr, uint32_t size, uint32_t perm) const {
  return translate(hart / (cfg_.warps * cfg_.threads), hart, addr, size, perm);
}

bool Machine::translate(uint32_t core, uint32_t hart, uint32_t* addr, uint32_t size, uint32_t perm) const {
  for (const MemWindow& win : windows_) {
    if (!win.active()) continue;
    uint64_t a = *addr;
    if (a < win.base || a + size > win.base + win.size()) continue;
    if (!(win.perms() & perm)) return false;
    uint64_t id = 0;
    if (win.mode() == 1) id = hart;
    if (win.mode() == 2) id = core;
    uint64_t eff = win.target + win.scale() * id + (a - win.base);
    if (eff + size > (1ull << 32)) return false;
    *addr = uint32_t(eff);
    return true;
  }
  return true;
}

template <bool kWrite>
uint8_t* Machine::data_pointer(ExecCtx& c, uint32_t lane, uint32_t addr, uint32_t size, Outcome* fault) {
  if (addr & (size - 1)) {
    *fault = Outcome::fault(kWrite ? Cause::MisalignedStore : Cause::MisalignedLoad, lane, addr);
    return nullptr;
  }
  uint32_t a = addr;
  if (a >= memmap::kLocalMemBase) {
    uint32_t off = a - memmap::kLocalMemBase;
    if (off + size <= c.core.local_mem.size()) {
      if (data_hooks_) [[unlikely]]
        data_hook(c, lane, a, size, kWrite ? kWatchWrite : kWatchRead, true, c.core.local_mem.data() + off);
      return c.core.local_mem.data() + off;
    }
  }
  uint8_t* p = nullptr;
  if (!windows_active_ || translate(c.core_id, hart_id(c.core_id, c.warp_id, lane), &a, size, kWrite ? 2 : 1))
    // A load may get the shared zero page: load paths only read through it.
    p = kWrite ? mem_.writable(a) : const_cast<uint8_t*>(mem_.readable(a));
  if (!p) {
    *fault = Outcome::fault(kWrite ? Cause::StoreFault : Cause::LoadFault, lane, addr);
  } else if (data_hooks_) [[unlikely]] {
    data_hook(c, lane, a, size, kWrite ? kWatchWrite : kWatchRead, false, p);
  }
  return p;
}

const uint8_t* Machine::data_for_load_full(ExecCtx& c, uint32_t lane, uint32_t addr, uint32_t size, Outcome* fault) {
  return data_pointer<false>(c, lane, addr, size, fault);
}

uint8_t* Machine::data_for_store_full(ExecCtx& c, uint32_t lane, uint32_t addr, uint32_t size, Outcome* fault) {
  return data_pointer<true>(c, lane, addr, size, fault);
}

// --- Fetch and step ----------------------------------------------------------

void Machine::Unmap::operator()(ICacheEntry* p) const { ::munmap(p, kICacheSize * sizeof(ICacheEntry)); }
void Machine::UnmapBlocks::operator()(Block* p) const { ::munmap(p, kBlockMapBytes()); }

void Machine::empty_icache() {
  if (++icache_generation_ == 0) {  // after 2^32 generations: old keys could match again
    for (uint32_t i = 0; i < kICacheSize; ++i) icache_[i].key = 0;
    drop_blocks();
    icache_generation_ = 1;
  }
}

void Machine::drop_blocks() {
  for (uint32_t i = 0; i < kBlocks; ++i) blocks_[i] = Block{};
  block_pool_used_ = 0;
  if (jit_) jit_->reset();
}

void Machine::code_rewritten() {
  // Every decoded instruction is suspect (a debugger planting or removing a breakpoint, a loader
  // reusing a page, a checkpoint restored).
  code_generation_seen_ = mem_.code_generation();
  empty_icache();
}

const Decoded* Machine::fetch(uint32_t pc, Cause* cause) {
  if (mem_.code_generation() != code_generation_seen_) code_rewritten();
  ICacheEntry& e = icache_[(pc >> 2) & (kICacheSize - 1)];
  if (e.key == icache_key(pc) && opts_.decode_cache) return &e.d;
  if (pc & 3) {
    *cause = Cause::MisalignedFetch;
    return nullptr;
  }
  fp_settle();  // Memory::fetch may grow a hash table (float arithmetic in its rehash policy)
  uint32_t word;
  if (!mem_.fetch(pc, &word)) {
    *cause = Cause::FetchFault;
    return nullptr;
  }
  // fetch() may have marked the page as code; that never bumps the generation.
  e.key = icache_key(pc);
  e.d = decode(word);
  if (!opts_.reference) {
    e.d.exec = specialize(e.d.exec, cfg_.threads);
    if (e.d.cls == InsnClass::Load) e.d.exec = at_site(e.d.exec, pc);  // only loads have site copies
  }
  return &e.d;
}

void Machine::build_block(uint32_t pc, Block& b, bool stores_inside) {
  // A new cache generation now, not inside the loop: the block's instructions and its key must be
  // of the same generation, and a wrap of the generation counter empties the pool.
  if (mem_.code_generation() != code_generation_seen_) code_rewritten();
  const bool translate = opts_.jit && !stores_inside && !opts_.reference && cfg_.threads == 1;
  if (translate && !jit_tried_) {
    jit_tried_ = true;
    jit_ = BlockJit::create(JitEnv{&windows_active_, mem_.read_tlb_entries(), memmap::kLocalMemBase});
  }
  // Full (the pool, or the translator's code buffer): every block goes.
  if (block_pool_used_ > kBlockPool - kBlockMax || (translate && jit_ && jit_->full())) drop_blocks();
  const uint32_t start = block_pool_used_;
  const uint64_t key = icache_key(pc);
  Decoded* const out = block_pool_ + start;
  uint32_t len = 0;
  for (uint32_t at = pc; len < kBlockMax; at += 4) {
    Cause cause = Cause::None;
    const Decoded* d = fetch(at, &cause);
    if (!d || d->sync) break;
    out[len++] = *d;
    const uint32_t opcode = d->raw & 0x7f;
    if (opcode == 0x63 || opcode == 0x67 || opcode == 0x6f || opcode == 0x73 ||
        (d->cls == InsnClass::Store && !stores_inside) || d->cls == InsnClass::Atomic || d->cls == InsnClass::Fence)
      break;
  }
  assert(icache_key(pc) == key && block_pool_used_ == start);  // nothing was written since the check
  b = Block{key | (stores_inside ? kStoresInside : 0), start, len,
            translate && jit_ ? jit_->compile(out, len, pc, cfg_.threads) : nullptr};
  block_pool_used_ = start + len;
}

Outcome Machine::step(uint32_t c, uint32_t w, DeviceException* exc) {
  Outcome o = step_inner(c, w, exc);
  fp_settle();
  return o;
}

Outcome Machine::step_inner(uint32_t c, uint32_t w, DeviceException* exc) {
  CoreState& core = cores_[c];
  WarpState& ws = core.warps[w];
  Cause fetch_cause = Cause::None;
  const Decoded* d = nullptr;
  Decoded displaced;
  size_t override_index = overrides_.size();
  for (size_t i = 0; i < overrides_.size(); ++i)
    if (overrides_[i].core == c && overrides_[i].slot == w && overrides_[i].pc == ws.pc) {
      // Resuming over a planted breakpoint: the word the debugger saved runs instead of the EBREAK.
      displaced = decode(overrides_[i].word);
      d = &displaced;
      override_index = i;
      break;
    }
  if (!d) d = fetch(ws.pc, &fetch_cause);
  if (!d) {
    *exc = DeviceException{fetch_cause, ws.pc, c, w, ws.tmask ? 31u - unsigned(std::countl_zero(ws.tmask)) : 0u, ws.pc};
    return Outcome::fault(fetch_cause, exc->lane, ws.pc);
  }
  ExecCtx ctx{*this, c, w, core, ws, cfg_.threads, ws.x.data(), ws.f.data(), ws.pc, ws.tmask, ws.pc + 4, ws.tmask};
  Outcome o;
  if (observer_) [[unlikely]] {
    observe_before(ctx, *d);
    o = d->exec(ctx, *d);
    observe_step(ctx, *d, o.step);
  } else {
    o = d->exec(ctx, *d);
  }
  if (override_index < overrides_.size() && (o.step == Step::Retire || o.step == Step::Trap))
    overrides_.erase(overrides_.begin() + ptrdiff_t(override_index));
  return complete_step(c, w, ctx, o, exc);
}

// The fast path: core c's current warp runs its quantum (sched_.quantum_left[c], decremented per
// instruction) without going back to run()'s dispatcher between instructions; when the quantum ends
// and the round boundary would do nothing, the next pick is made here as the boundary would make it
// (redraw) and the loop goes on with that warp. It keeps every check of the reference loop that can
// change between two instructions, where it can change: the code generation after each store or
// atomic (a store may rewrite the next instruction), stop_pending_ after each instruction when
// something is watched or observed (watch hits, which the data path flags), the warp's readiness
// after each instruction that can change it. `limit` is what the budget and the watchdog allow;
// fetch overrides and triggers never reach here (run() takes the reference loop).
//
// Most instructions (Decoded::sync false) only read and write registers and memory and choose the
// next pc: for them the pc and the counters stay in locals and are stored when the loop leaves the
// warp or before an instruction that may read them (a CSR read of mcycle or minstret) or change the
// mask, the wait state or readiness; that one runs with step()'s bookkeeping (complete_step). Every
// instruction is counted exactly as step() counts it, so mcycle and minstret read the same.
// A stalled, trapped or faulting instruction returns at once, its quantum not yet charged for it.
Outcome Machine::run_fast(uint32_t c, uint64_t limit, DeviceException* exc) {
  CoreState& core = cores_[c];
  // Neither can change while instructions run (they are set between runs): stop_pending_ is only ever
  // raised by the data path's hooks, and the observer is called only when there is one.
  const bool hooks = data_hooks_;
  const bool observing = observer_ != nullptr;
  uint32_t q = sched_.quantum_left[c];  // a local while the loop runs; stored on every way out
  uint64_t stepped = 0;                 // counted, over every warp this call ran
  if (mem_.code_generation() != code_generation_seen_) code_rewritten();
  // The decode cache's entries and the current generation's key bits, in locals: only fetch() and
  // code_rewritten() change the generation, and the loop reloads them after calling either.
  const ICacheEntry* const cache = icache_.get();
  uint64_t gen = icache_key(0);
  // Basic blocks run one after another without the per-instruction checks; only when nothing is
  // watched or observed (a data hook may ask for a stop after any load or store).
  const bool use_blocks = !hooks && !observing;
  Block* const blocks = blocks_.get();
  const Decoded* const pool = block_pool_;
  for (;;) {
    const uint32_t w = uint32_t(sched_.current_warp[c]);
    WarpState& ws = core.warps[w];
    const uint32_t bit = 1u << w;
    ExecCtx ctx{*this, c, w, core, ws, cfg_.threads, ws.x.data(), ws.f.data(), 0, ws.tmask, 0, ws.tmask};
    uint64_t lanes = lane_count(ws.tmask);
    uint32_t pc = ws.pc;
    uint64_t pending = 0;  // retired by the plain loop, not yet counted
    // The loop counts q down and checks one value per instruction: `cut` is the q at which the limit
    // is reached (0 when the quantum ends first, the limit is then checked with the quantum's end).
    auto cut_of = [&] {
      const uint64_t room = limit - std::min(limit, stepped + pending);
      return room < q ? q - uint32_t(room) : 0u;
    };
    uint32_t cut = cut_of();
    auto settle = [&] {
      count_retired(core, ws, pending, lanes);
      ws.pc = pc;
      stepped += pending;
      pending = 0;
      sched_.quantum_left[c] = q;
    };
    for (;;) {
      const Block* b = nullptr;
      if (use_blocks) {
        Block& slot = blocks[(pc >> 2) & (kBlocks - 1)];
        if (slot.key != (gen | pc)) [[unlikely]] {
          // The first time here in this cache generation: this instruction runs on its own and the
          // block is built the next time, so code that runs once (or a step after a breakpoint was
          // planted, which empties the caches) does not decode the instructions ahead of it.
          slot = Block{gen | pc, kBlockUnbuilt, 0};
        } else if (slot.start == kBlockUnbuilt) [[unlikely]] {
          build_block(pc, slot, false);
          gen = icache_key(0);
        }
        if (slot.len != 0) [[likely]]
          b = &slot;
      }
      if (b) {
        // The whole block, or as much of it as the quantum and the limit allow. Every instruction but
        // the block's last continues at pc + 4 and leaves ctx.next_pc alone.
        const uint32_t n = std::min(b->len, q - cut);
        const Decoded* const first = pool + b->start;
        const Decoded* const end = first + n;
        ctx.next_pc = pc + 4 * n;  // as the last one run leaves it unless it is a taken branch or a jump
        // As step() would have it when instruction `done` of the block does not retire: the ones
        // before it retired, its next pc is its own + 4.
        auto stop_at = [&](uint32_t done, Outcome o) {
          const uint32_t at = pc + 4 * done;
          ctx.pc = at;
          pending += done;
          q -= done;
          pc = at;
          if (done + 1 != n) ctx.next_pc = at + 4;
          settle();
          return complete_step(c, w, ctx, o, exc);
        };
        if (b->jit && n != 0) {
          const JitResult r = b->jit(ctx, n);
          if (r.o.step != Step::Retire) [[unlikely]]
            return stop_at(uint32_t(r.done), r.o);
        } else {
          uint32_t at = pc;
          for (const Decoded* d = first; d != end; ++d, at += 4) {
            ctx.pc = at;
            const Outcome o = d->exec(ctx, *d);
            if (o.step != Step::Retire) [[unlikely]]
              return stop_at(uint32_t(d - first), o);
          }
        }
        pending += n;
        q -= n;
        pc = ctx.next_pc;
        // The block's last instruction may have been a store or an atomic that rewrote code.
        if (mem_.code_generation() != code_generation_seen_) [[unlikely]] {
          code_rewritten();
          gen = icache_key(0);
        }
        if (q != cut) continue;
        if (q != 0) {  // the limit inside the quantum
          settle();
          return Outcome::retire();
        }
      } else {
        const ICacheEntry& e = cache[(pc >> 2) & (kICacheSize - 1)];
        const Decoded* d = &e.d;
        if (e.key != (gen | pc)) [[unlikely]] {
          Cause cause = Cause::None;
          d = fetch(pc, &cause);
          gen = icache_key(0);
          if (!d) {
            settle();
            *exc = DeviceException{cause, pc, c, w, ws.tmask ? 31u - unsigned(std::countl_zero(ws.tmask)) : 0u, pc};
            return Outcome::fault(cause, exc->lane, pc);
          }
        }
        ctx.pc = pc;
        ctx.next_pc = pc + 4;
        if (d->sync) [[unlikely]] {
          settle();
          ctx.tmask = ctx.next_tmask = ws.tmask;
          Outcome o;
          if (observing) [[unlikely]] {
            observe_before(ctx, *d);
            o = d->exec(ctx, *d);
            observe_step(ctx, *d, o.step);
          } else {
            o = d->exec(ctx, *d);
          }
          ++stepped;
          o = complete_step(c, w, ctx, o, exc);
          if (o.step != Step::Retire) return o;
          pc = ws.pc;
          --q;
          if (!(ready_[c] & bit)) q = 0;  // retired (TMC 0), waiting, halted
          lanes = lane_count(ws.tmask);
          ctx.tmask = ctx.next_tmask = ws.tmask;
          // A Vortex instruction or a CSR write may have written memory too (never code, but checked).
          if (mem_.code_generation() != code_generation_seen_) [[unlikely]]
            code_rewritten();
          gen = icache_key(0);
          cut = cut_of();
          if (q != 0 && (q == cut || (hooks && stop_pending_))) {
            settle();
            return Outcome::retire();
          }
        } else {
          Outcome o;
          if (observing) [[unlikely]] {
            observe_before(ctx, *d);
            o = d->exec(ctx, *d);
            settle();  // the observer reads the counters and the pc as step() leaves them
            observe_step(ctx, *d, o.step);
          } else {
            o = d->exec(ctx, *d);
          }
          if (o.step != Step::Retire) [[unlikely]] {
            settle();
            return complete_step(c, w, ctx, o, exc);
          }
          ++pending;
          pc = ctx.next_pc;
          --q;
          // Only a store or an atomic can rewrite the next instruction: the decode cache is checked after them.
          if ((d->cls == InsnClass::Store || d->cls == InsnClass::Atomic) &&
              mem_.code_generation() != code_generation_seen_) [[unlikely]] {
            code_rewritten();
            gen = icache_key(0);
          }
          if (q != cut && !(hooks && stop_pending_)) [[likely]]
            continue;
          if (q != 0) {  // the limit, or a stop pending, inside the quantum
            settle();
            return Outcome::retire();
          }
        }
      }
      if (q == 0) {
        if (ready_[c] == bit && boundary_idle(c, stats_.instructions + pending)) [[likely]] {
          // The warp is the only one that can run: the pick is forced, only the draws are made.
          (void)next_random();
          q = 1 + uint32_t(next_random() % kMaxQuantum);
          if (stepped + pending >= limit || (hooks && stop_pending_)) {
            settle();
            return Outcome::retire();
          }
          cut = cut_of();
          continue;
        }
        settle();
        if (!redraw(c)) return Outcome::retire();
        q = sched_.quantum_left[c];
        if (stepped >= limit || (hooks && stop_pending_)) return Outcome::retire();
        // On with the warp just picked, through the warp's set-up even when it is the same warp: a
        // test of the pick here is a branch mispredicted at random, costlier than the set-up.
        break;
      }
    }
  }
}

Outcome Machine::complete_step(uint32_t c, uint32_t w, ExecCtx& ctx, Outcome o, DeviceException* exc) {
  CoreState& core = cores_[c];
  WarpState& ws = core.warps[w];
  switch (o.step) {
    case Step::Retire: {
      stats_.lane_instructions += lane_count(ws.tmask);
      ++stats_.instructions;
      ++ws.instret;
      ++core.instret;
      ws.pc = ctx.next_pc;
      ws.tmask = ctx.next_tmask;
      if (ws.tmask == 0) {
        retire_warp(c, w);
      } else if (ws.wait != WarpWait::None) {
        update_ready(c, w);
      }
      break;
    }
    case Step::Trap: {
      if (o.cause == Cause::Breakpoint && ebreak_halt_) {
        // DCONFIG.ebreakh: the EBREAK does not execute; its warp halts on it for the debugger.
        halt_warp(c, w, HaltCause::Ebreak);
        o.step = Step::Stall;
        break;
      }
      uint32_t code = o.cause == Cause::Breakpoint ? 3 : 11;
      if (ws.mtvec != 0) {
        ws.mepc = ws.pc;
        ws.mcause = code;
        ws.mtval = 0;
        ws.pc = ws.mtvec & ~3u;
        stats_.lane_instructions += lane_count(ws.tmask);
        ++stats_.instructions;
        ++ws.instret;
        ++core.instret;
        break;
      }
      *exc = DeviceException{o.cause, ws.pc, c, w, ctx.last_lane(), ws.pc};
      o.step = Step::Exception;
      if (watch_fired_) watch_discard_instruction();
      break;
    }
    case Step::Stall:
      update_ready(c, w);
      if (watch_fired_) watch_discard_instruction();
      break;
    case Step::Exception:
      *exc = DeviceException{o.cause, ws.pc, c, w, o.lane, o.tval};
      // A faulting instruction did not happen: its accesses are no hits.
      if (watch_fired_) watch_discard_instruction();
      break;
  }
  return o;
}

void Machine::activate_warp(uint32_t c, uint32_t w, uint32_t pc, uint32_t tmask) {
  WarpState& ws = cores_[c].warps[w];
  ws.active = true;
  ws.pc = pc;
  ws.tmask = tmask;
  ws.wait = WarpWait::None;
  ws.ipdom.clear();
  update_ready(c, w);
}

void Machine::retire_warp(uint32_t c, uint32_t w) {
  CoreState& core = cores_[c];
  WarpState& ws = core.warps[w];
  if (fp_owner_ == &ws) fp_settle();
  ws.active = false;
  ws.wait = WarpWait::None;
  ws.ipdom.clear();
  ws.halted = false;  // an empty slot is unavailable, not halted
  ws.halt_cause = HaltCause::None;
  // The post-TMC PC is ws.pc; a re-used slot starts 20 bytes earlier, at the
  // dispatch window of the startup code.
  ws.restart_pc = ws.pc - 20;
  update_ready(c, w);
  if (launch_.kind == LaunchKind::Grid && ws.cta_slot < core.slot_warps.size() && core.slot_warps[ws.cta_slot] > 0)
    --core.slot_warps[ws.cta_slot];
  wake_spawn_waiters(c);
  for (uint32_t n = 0; n < kGlobalBarriers; ++n)
    if (core.global_arrived[n] > 0) core_global_arrival_check(c, n);
}

void Machine::note_divergent_branch(const ExecCtx& c, uint32_t taken) {
  fp_settle();  // a hash table again
  ++stats_.divergent_branches;
  auto [it, fresh] = divergent_index_.try_emplace(c.pc, divergent_.size());
  if (fresh) divergent_.push_back(DivergentBranch{c.pc, taken, c.tmask & ~taken, c.core_id, c.warp_id, 0});
  ++divergent_[it->second].count;
}

void Machine::wake_spawn_waiters(uint32_t c) {
  CoreState& core = cores_[c];
  if (lane_count(active_[c]) != 1) return;
  uint32_t w = unsigned(std::countr_zero(active_[c]));
  if (core.warps[w].wait == WarpWait::Spawn) {
    core.warps[w].wait = WarpWait::None;
    update_ready(c, w);
  }
}

// --- The run loop ------------------------------------------------------------

// PCT (probabilistic concurrency testing): every warp has a random priority, drawn from the seed,
// its slot, its CTA and the current priority epoch; the highest ready one runs. The epoch moves at
// a few change points early in the launch (where the interleavings that matter begin), then every
// kPctRepick instructions, so a warp that spins on a lower-priority one cannot hold the core forever.
uint32_t Machine::pick_warp_pct(uint32_t c) {
  const uint64_t clock = launch_clock();
  uint64_t epoch = uint64_t(
      std::count_if(pct_change_points_.begin(), pct_change_points_.end(), [&](uint64_t p) { return p <= clock; }));
  if (clock >= kPctHorizon) epoch += (clock - kPctHorizon) / kPctRepick + 1;
  uint32_t best = 0;
  uint64_t best_priority = 0;
  bool any = false;
  for_each_lane(ready_[c], [&](unsigned w) {
    const WarpState& ws = cores_[c].warps[w];
    const uint64_t p = splitmix64(opts_.seed ^ splitmix64((uint64_t(c) << 40) ^ (uint64_t(w) << 32) ^
                                                          (uint64_t(ws.cta_linear) << 8) ^ (epoch << 48)));
    if (!any || p > best_priority) {
      any = true;
      best = w;
      best_priority = p;
    }
  });
  return best;
}

void Machine::check_trigger_after(uint32_t c, uint32_t w) {
  const WarpTrigger& t = *trigger_;
  if (t.core != c || t.slot != w) return;
  const WarpState& ws = cores_[c].warps[w];
  if (t.cta_linear != UINT32_MAX && ws.cta_linear != t.cta_linear) return;
  if (!ws.active) {  // the warp finished
    trigger_pending_ = stop_pending_ = true;
    return;
  }
  if (t.before) {
    // Its next instruction may be the one: checked when the warp is about to run it.
    if (ws.instret + 1 >= t.min_instret) before_armed_ = stop_pending_ = true;
    return;
  }
  if (ws.instret < t.min_instret) return;
  if (t.pc_lo != t.pc_hi && ws.pc >= t.pc_lo && ws.pc < t.pc_hi) return;
  if (ws.tmask & t.lane_mask) trigger_pending_ = stop_pending_ = true;
}

RunStop Machine::pending_stop(uint32_t c, uint32_t w) {
  if (watch_fired_) {
    watch_end_instruction();  // accesses of a DM step not yet turned into hits
    watch_fired_ = false;
    if (!watch_pending_.empty()) {
      watch_hits_ = std::move(watch_pending_);
      watch_pending_.clear();
      refresh_stop_pending();
      return RunStop::Watch;
    }
  }
  if (trigger_pending_) {
    trigger_pending_ = false;
    if (trigger_ && trigger_->before) trigger_.reset();  // a before-trigger fires once
    arm_before_trigger();
    return RunStop::Trigger;
  }
  if (before_armed_ && trigger_) {
    const WarpTrigger& t = *trigger_;
    const WarpState& tw = cores_[t.core].warps[t.slot];
    if (!tw.active || tw.instret + 1 < t.min_instret || (t.cta_linear != UINT32_MAX && tw.cta_linear != t.cta_linear)) {
      // Not due before the slot's warp retires an instruction or a new warp is dispatched into it,
      // both of which arm the check again.
      before_armed_ = false;
    } else if (t.core == c && t.slot == w && (tw.tmask & t.lane_mask)) {
      trigger_.reset();
      before_armed_ = false;
      refresh_stop_pending();
      return RunStop::Trigger;
    }
  }
  refresh_stop_pending();
  return RunStop::Idle;
}

void Machine::set_trigger(const WarpTrigger& t) {
  trigger_ = t;
  arm_before_trigger();
}

void Machine::clear_trigger() {
  trigger_.reset();
  arm_before_trigger();
}

void Machine::add_overrides(const std::vector<FetchOverride>& overrides) {
  for (const FetchOverride& o : overrides) {
    auto same = std::find_if(overrides_.begin(), overrides_.end(), [&](const FetchOverride& e) {
      return e.core == o.core && e.slot == o.slot && e.pc == o.pc;
    });
    if (same != overrides_.end())
      *same = o;
    else
      overrides_.push_back(o);
  }
}

// --- Watchpoints -----------------------------------------------------------------

Result<void> Machine::set_watchpoints(const std::vector<WatchRange>& ranges) {
  for (size_t i = 0; i < ranges.size(); ++i) {
    const WatchRange& r = ranges[i];
    const std::string which = "watch range " + std::to_string(i) + " (id " + std::to_string(r.id) + ")";
    if (r.len == 0 || r.len > 4096)
      return make_error(which + ": length " + std::to_string(r.len) + " is not between 1 and 4096 bytes");
    if (uint64_t(r.addr) + r.len > (1ull << 32))
      return make_error(which + ": 0x" +
                        [&] {
                          char b[16];
                          snprintf(b, sizeof b, "%08x", r.addr);
                          return std::string(b);
                        }() +
                        " + " + std::to_string(r.len) + " runs past the 4 GiB address space");
    if (r.kind == 0 || (r.kind & ~(kWatchRead | kWatchWrite)))
      return make_error(which + ": kind " + std::to_string(r.kind) + " is not kWatchRead, kWatchWrite or both");
    if (r.core < -1 || (r.core >= 0 && uint32_t(r.core) >= num_cores()))
      return make_error(which + ": core " + std::to_string(r.core) + " does not exist (-1 means any core)");
    if (r.local &&
        (r.addr < memmap::kLocalMemBase || uint64_t(r.addr - memmap::kLocalMemBase) + r.len > cfg_.local_mem_bytes))
      return make_error(which + ": a local range must lie in the local memory, 0xffff0000 + " +
                        std::to_string(cfg_.local_mem_bytes) + " bytes");
  }
  watch_discard_pending();
  watches_ = ranges;
  watch_active_ = !watches_.empty();
  update_data_hooks();
  return {};
}

std::vector<WatchHit> Machine::take_watch_hits() {
  std::vector<WatchHit> out;
  out.swap(watch_hits_);
  return out;
}

void Machine::data_hook(ExecCtx& c, uint32_t lane, uint32_t addr, uint32_t size, uint8_t kind, bool local,
                        const uint8_t* data) {
  fp_settle();
  if (watch_active_) watch_access(c, lane, addr, size, kind, local);
  if (observer_ && (observe_reads_ || (kind & kWatchWrite))) {
    ObservedAccess a{lane, addr, uint8_t(size), kind, local};
    // Executors find every lane's target before any lane writes: this is the memory before the
    // instruction (observe_step lays the lower lanes' writes over it).
    if (kind & kWatchWrite) std::memcpy(&a.before, data, std::min<uint32_t>(size, 4));
    obs_accesses_.push_back(a);
  }
}

void Machine::observe_before(const ExecCtx& c, const Decoded& d) {
  if (d.cls != InsnClass::Store && d.cls != InsnClass::Atomic) return;
  const uint32_t* regs = d.row->mnemonic[0] == 'f' ? c.f : c.x;  // fsw stores an F register
  obs_sources_.assign(regs + size_t(d.rs2) * c.nt, regs + size_t(d.rs2) * c.nt + c.nt);
}

void Machine::set_observer(DeviceObserver* observer) {
  observer_ = observer;
  observe_all_ = observer && observer->wants_every_instruction();
  observe_reads_ = observer && observer->wants_reads();
  obs_accesses_.clear();
  update_data_hooks();
}

void Machine::observe_step(const ExecCtx& c, const Decoded& d, Step step) {
  fp_settle();  // the observer is foreign code
  // The thread-entry routine is the debugger's code, and an instruction that did not retire did nothing.
  if (step != Step::Retire || restore_phase_ || (d.cls == InsnClass::Other && !observe_all_) ||
      (d.cls == InsnClass::Load && !observe_reads_ && !observe_all_)) {
    obs_accesses_.clear();
    return;
  }
  if (d.cls == InsnClass::Store || d.cls == InsnClass::Atomic) {
    // What each write wrote: lane by lane, lowest first, over the memory as the lower lanes left it.
    for (size_t i = 0; i < obs_accesses_.size(); ++i) {
      ObservedAccess& a = obs_accesses_[i];
      if (!(a.kind & kWatchWrite)) continue;
      uint8_t cur[4];
      std::memcpy(cur, &a.before, 4);
      for (size_t j = 0; j < i; ++j) {
        const ObservedAccess& b = obs_accesses_[j];
        if (!(b.kind & kWatchWrite) || b.local != a.local) continue;
        for (uint32_t k = 0; k < a.size; ++k)
          if (a.addr + k >= b.addr && a.addr + k < b.addr + b.size)
            cur[k] = uint8_t(b.after >> (8 * (a.addr + k - b.addr)));
      }
      std::memcpy(&a.before, cur, 4);
      const uint32_t src = a.lane < obs_sources_.size() ? obs_sources_[a.lane] : 0;
      const std::string_view m = d.row->mnemonic;
      uint32_t v = m.starts_with("amo") ? amo_value(d.raw, a.before, src) : src;
      if (a.size < 4) v &= (1u << (8 * a.size)) - 1;
      a.after = v;
    }
  }
  // An AMO reads and writes through one store pointer: its accesses (the write's and the read's
  // the executor checks after it) are both, with the write's values.
  if (d.cls == InsnClass::Atomic) {
    const ObservedAccess* write = nullptr;
    for (ObservedAccess& a : obs_accesses_) {
      if (a.kind & kWatchWrite) {
        write = &a;
      } else if (write && write->lane == a.lane && write->addr == a.addr && write->local == a.local) {
        a.before = write->before;
        a.after = write->after;
      }
    }
    for (ObservedAccess& a : obs_accesses_) a.kind = d.row->mnemonic[0] == 'l' ? kWatchRead : kWatchRead | kWatchWrite;
  }
  Observation o;
  o.cls = d.cls;
  o.core = c.core_id;
  o.slot = c.warp_id;
  o.pc = c.pc;
  o.word = d.raw;
  o.tmask = c.tmask;
  o.launch_instret = stats_.instructions - launch_base_ + 1;  // counted after this returns
  o.csr = d.cls == InsnClass::Csr ? uint32_t(d.imm) & 0xfff : 0;
  o.cta_linear = c.w.cta_linear;
  o.cta_rank = c.w.cta_rank;
  o.cta_slot = c.w.cta_slot;
  o.instance_base = c.w.instance_base;
  if (d.cls == InsnClass::Load || d.cls == InsnClass::Atomic || d.cls == InsnClass::Csr || d.cls == InsnClass::Warp) {
    const uint32_t* regs = d.fp_rd ? c.f : c.x;
    obs_values_.assign(regs + size_t(d.rd) * c.nt, regs + size_t(d.rd) * c.nt + c.nt);
    o.values = obs_values_;
  }
  o.accesses = obs_accesses_;
  observer_->retired(o);
  obs_accesses_.clear();
}

void Machine::watch_access(ExecCtx& c, uint32_t lane, uint32_t addr, uint32_t size, uint8_t kind, bool local) {
  for (uint32_t i = 0; i < watches_.size(); ++i) {
    const WatchRange& r = watches_[i];
    if (r.local != local || (r.core >= 0 && uint32_t(r.core) != c.core_id)) continue;
    if (uint64_t(addr) + size <= r.addr || uint64_t(addr) >= uint64_t(r.addr) + r.len) continue;
    if (watch_accesses_.empty()) {
      watch_core_ = c.core_id;
      watch_slot_ = c.warp_id;
      watch_pc_ = c.pc;
    }
    // Executors check every lane before writing anything, so memory still holds what it held before the
    // instruction: capture the range once, at its first access.
    if (std::none_of(watch_old_.begin(), watch_old_.end(), [&](const auto& o) { return o.first == i; })) {
      std::vector<uint8_t> old(r.len, 0);
      if (local) {
        std::memcpy(old.data(), c.core.local_mem.data() + (r.addr - memmap::kLocalMemBase), r.len);
      } else {
        for (uint32_t k = 0; k < r.len; ++k)
          if (const uint8_t* p = mem_.readable(r.addr + k)) old[k] = *p;  // unmapped bytes read as 0
      }
      watch_old_.emplace_back(i, std::move(old));
    }
    watch_accesses_.push_back(WatchAccess{i, lane, addr, kind});
    watch_fired_ = stop_pending_ = true;
  }
}

void Machine::watch_drop_lane(uint32_t lane) {
  std::erase_if(watch_accesses_, [&](const WatchAccess& a) { return a.lane == lane; });
}

void Machine::watch_end_instruction() {
  for (auto& [i, old] : watch_old_) {
    const WatchRange& r = watches_[i];
    WatchHit h;
    h.addr = UINT32_MAX;
    for (const WatchAccess& a : watch_accesses_)
      if (a.range == i && (a.kind & r.kind)) {
        h.lanes |= 1u << a.lane;
        h.addr = std::min(h.addr, a.addr);
      }
    if (h.lanes == 0) continue;  // touched, but not the way the range is watched
    for (const WatchAccess& a : watch_accesses_)
      if (a.range == i && (h.lanes & (1u << a.lane))) h.kind |= a.kind;  // an AMO: read and write
    h.id = r.id;
    h.core = watch_core_;
    h.slot = watch_slot_;
    h.pc = watch_pc_;
    h.old_bytes = std::move(old);
    watch_pending_.push_back(std::move(h));
  }
  watch_accesses_.clear();
  watch_old_.clear();
}

void Machine::watch_discard_instruction() {
  watch_accesses_.clear();
  watch_old_.clear();
  watch_fired_ = !watch_pending_.empty();
  refresh_stop_pending();
}

void Machine::watch_discard_pending() {
  watch_pending_.clear();
  watch_discard_instruction();
}

RunResult Machine::run(uint64_t max_instructions) {
  RunResult r = run_inner(max_instructions);
  fp_settle();
  return r;
}

RunResult Machine::run_inner(uint64_t max_instructions) {
  if (restore_phase_) {
    RunResult r = run_restore_phase();
    watch_discard_pending();  // the thread-entry routine is the debugger's code
    if (r.stop != RunStop::Idle) return r;
  }
  const uint64_t start = stats_.instructions;
  const uint64_t budget_end = max_instructions > UINT64_MAX - start ? UINT64_MAX : start + max_instructions;
  const uint64_t watchdog_end =
      opts_.watchdog_instructions == 0 ? UINT64_MAX : watchdog_base_ + opts_.watchdog_instructions;
  const uint32_t ncores = uint32_t(cores_.size());
  for (;;) {
    if (!launch_active()) return {RunStop::Idle, {}};
    // A round boundary: the KMU fills free slots, the host drains the console. A run that returned
    // inside core 0's turn (a budget, a trigger, a watch hit) comes back with core_cursor 0 too, but
    // with core 0's warp picked: the round already began, and running the boundary again would drain
    // or dispatch at a count the undisturbed run does not (every turn ends with current_warp -1).
    if (sched_.core_cursor == 0 && sched_.current_warp[0] < 0) {
      if (dispatch_new_units_) dispatch_pending();
      if (stats_.instructions >= next_drain_) {
        drain_console();
        next_drain_ = stats_.instructions + kDrainInterval;
      }
      bool any_active = std::any_of(active_.begin(), active_.end(), [](uint32_t m) { return m != 0; });
      if (!any_active && launch_.next_unit >= launch_.total_units) {
        drain_console();
        launch_ = LaunchState{};
        trigger_pending_ = false;
        watch_discard_pending();
        return {RunStop::LaunchDone, {}};
      }
      if (!any_active && !dispatch_new_units_) return {RunStop::Drained, {}};
      if (std::all_of(ready_.begin(), ready_.end(), [](uint32_t m) { return m == 0; })) {
        // Nothing can run. Warps halted by the Debug Module wait for the debugger, not forever.
        for (uint32_t c = 0; c < ncores; ++c)
          for (uint32_t w = 0; w < cfg_.warps; ++w)
            if (cores_[c].warps[w].halted) return {RunStop::Halted, {}};
        // Something is active: every warp waits forever.
        for (uint32_t c = 0; c < ncores; ++c)
          if (active_[c]) {
            uint32_t w = unsigned(std::countr_zero(active_[c]));
            const WarpState& ws = cores_[c].warps[w];
            return {RunStop::Exception,
                    DeviceException{Cause::Deadlock, ws.pc - 4, c, w,
                                    ws.tmask ? 31u - unsigned(std::countl_zero(ws.tmask)) : 0u, ws.wait_barrier}};
          }
      }
    }
    for (uint32_t c = sched_.core_cursor; c < ncores; ++c) {
      sched_.core_cursor = c;
      int32_t& cur = sched_.current_warp[c];
      uint32_t& q = sched_.quantum_left[c];
      if (cur < 0 || q == 0 || !(ready_[c] & (1u << cur))) {
        if (!ready_[c]) {
          cur = -1;
          q = 0;
          continue;
        }
        if (opts_.schedule == Schedule::Pct) {
          cur = int32_t(pick_warp_pct(c));
          q = 1;
        } else {
          cur = int32_t(pick_warp(c));
          q = 1 + uint32_t(next_random() % kMaxQuantum);
        }
      }
      while (q > 0) {
        // The reference loop below steps one instruction at a time; the fast path may take many.
        const bool fast = !opts_.reference && opts_.decode_cache && overrides_.empty() && !trigger_;
        if (stop_pending_) [[unlikely]] {
          RunStop s = pending_stop(c, uint32_t(cur));
          if (s != RunStop::Idle) return {s, {}};
        }
        if (stats_.instructions >= budget_end) return {RunStop::Budget, {}};
        if (stats_.instructions >= watchdog_end) {
          const WarpState& ws = cores_[c].warps[uint32_t(cur)];
          return {RunStop::Exception, DeviceException{Cause::Watchdog, ws.pc, c, uint32_t(cur),
                                                      ws.tmask ? 31u - unsigned(std::countl_zero(ws.tmask)) : 0u, 0}};
        }
        DeviceException exc;
        if (fast) {
          // Many instructions at once, stopping where the loop below would check something.
          const uint64_t limit = std::min(budget_end, watchdog_end) - stats_.instructions;
          Outcome o = run_fast(c, limit, &exc);
          if (o.step == Step::Exception) return {RunStop::Exception, exc};
          if (o.step == Step::Stall) {
            if (cores_[c].warps[uint32_t(cur)].halted) return {RunStop::Halted, {}};
            q = 0;
            break;
          }
          if (o.step == Step::Trap) {  // into the handler: counted like a retired instruction
            --q;
            if (!(ready_[c] & (1u << cur))) q = 0;
            if (q == 0) redraw(c);
          }
          continue;
        }
        Outcome o = step_inner(c, uint32_t(cur), &exc);
        if (o.step == Step::Exception) return {RunStop::Exception, exc};
        if (o.step == Step::Stall) {
          if (cores_[c].warps[uint32_t(cur)].halted) return {RunStop::Halted, {}};  // EBREAK with ebreakh
          q = 0;
          break;
        }
        --q;
        if (!(ready_[c] & (1u << cur))) q = 0;
        // Reported before the next instruction anywhere, so a trigger stop and a budget stop after the
        // same instruction leave the same state (watch hits likewise, flagged by the data path).
        if (trigger_) [[unlikely]]
          check_trigger_after(c, uint32_t(cur));
      }
      cur = -1;
    }
    sched_.core_cursor = 0;
  }
}

void Machine::abort_launch() {
  for (uint32_t c = 0; c < cores_.size(); ++c) {
    CoreState& core = cores_[c];
    for (uint32_t w = 0; w < cfg_.warps; ++w) {
      WarpState& ws = core.warps[w];
      ws.active = false;
      ws.wait = WarpWait::None;
      ws.ipdom.clear();
      ws.tmask = 0;
      ws.halted = false;
      ws.halt_cause = HaltCause::None;
    }
    std::fill(core.barriers.begin(), core.barriers.end(), BarrierState{});
    std::fill(core.slot_warps.begin(), core.slot_warps.end(), 0u);
    std::fill(core.global_arrived.begin(), core.global_arrived.end(), 0u);
    sched_.current_warp[c] = -1;
    sched_.quantum_left[c] = 0;
  }
  std::fill(global_barriers_.begin(), global_barriers_.end(), GlobalBarrierState{});
  sched_.core_cursor = 0;
  launch_ = LaunchState{};
  restore_phase_ = false;
  resume_ = ResumeRequest{};
  resume_requested_ = false;
  dispatch_new_units_ = true;
  overrides_.clear();
  trigger_.reset();
  trigger_pending_ = false;
  watch_discard_pending();  // the watched ranges stay: they are the debugger's
  state_replaced();
}

void Machine::scrub_cores() {
  for (CoreState& core : cores_) {
    for (WarpState& ws : core.warps) {
      std::fill(ws.x.begin(), ws.x.end(), 0u);
      std::fill(ws.f.begin(), ws.f.end(), 0u);
      ws.fcsr = ws.mscratch = ws.mstatus = ws.mtvec = ws.mepc = ws.mcause = ws.mtval = 0;
      ws.reservation.clear();
    }
    std::fill(core.local_mem.begin(), core.local_mem.end(), uint8_t(0));
  }
}

// --- Barriers and spawn --------------------------------------------------------

void Machine::release_local_barrier(uint32_t c, uint32_t index) {
  CoreState& core = cores_[c];
  BarrierState& b = core.barriers[index];
  b.count = 0;
  ++b.phase;
  for (uint32_t w = 0; w < cfg_.warps; ++w) {
    WarpState& ws = core.warps[w];
    if (ws.active && ws.wait_barrier == index &&
        (ws.wait == WarpWait::Barrier || (ws.wait == WarpWait::BarrierWait && (b.phase & 1) != ws.wait_phase))) {
      ws.wait = WarpWait::None;
      update_ready(c, w);
    }
  }
}

Outcome Machine::bar(ExecCtx& ctx, uint32_t id, uint32_t count) {
  const uint32_t lane = ctx.last_lane();
  if (count == 0) return Outcome::fault(Cause::BarrierZeroCount, lane, id);
  uint32_t num = (id >> 8) & 0x7fffff;
  if (num >= memmap::kNumBarriersPerCta) return Outcome::fault(Cause::BadBarrier, lane, id);
  if (id & 0x80000000u) {
    if (count > cores_.size()) return Outcome::fault(Cause::BadBarrier, lane, id);
    global_expected_[num] = count;
    ctx.w.wait = WarpWait::Barrier;
    ctx.w.wait_barrier = 0x80000000u | num;
    ++ctx.core.global_arrived[num];
    core_global_arrival_check(ctx.core_id, num);
    return Outcome::retire();
  }
  uint32_t slot = id & 0xff;
  if (slot >= cfg_.warps) return Outcome::fault(Cause::BadBarrier, lane, id);
  uint32_t index = slot * memmap::kNumBarriersPerCta + num;
  BarrierState& b = ctx.core.barriers[index];
  ctx.w.wait = WarpWait::Barrier;
  ctx.w.wait_barrier = index;
  if (++b.count >= count) {
    release_local_barrier(ctx.core_id, index);
    ctx.w.wait = WarpWait::None;
  }
  return Outcome::retire();
}

void Machine::core_global_arrival_check(uint32_t c, uint32_t num) {
  CoreState& core = cores_[c];
  // The core arrives once all of its active warps wait on this global barrier.
  uint32_t waiting = 0;
  for (uint32_t w = 0; w < cfg_.warps; ++w) {
    const WarpState& ws = core.warps[w];
    if (ws.active && ws.wait == WarpWait::Barrier && ws.wait_barrier == (0x80000000u | num)) ++waiting;
  }
  if (waiting == 0 || waiting != uint32_t(lane_count(active_[c]))) return;
  // Counted once per core per phase: global_arrived drops to 0 when the core arrives.
  core.global_arrived[num] = 0;
  GlobalBarrierState& g = global_barriers_[num];
  if (++g.cores_arrived < global_expected_[num]) return;
  g.cores_arrived = 0;
  ++g.phase;
  for (uint32_t k = 0; k < cores_.size(); ++k)
    for (uint32_t w = 0; w < cfg_.warps; ++w) {
      WarpState& ws = cores_[k].warps[w];
      if (ws.active && ws.wait == WarpWait::Barrier && ws.wait_barrier == (0x80000000u | num)) {
        ws.wait = WarpWait::None;
        update_ready(k, w);
      }
    }
}

Outcome Machine::bar_arrive(ExecCtx& ctx, uint32_t id, uint32_t count, uint32_t* token) {
  const uint32_t lane = ctx.last_lane();
  if (count & 0x80000000u) {
    // Expected-transaction counts come from the DXA copy engine, which the model does not have.
    return Outcome::fault(Cause::IllegalInstruction, lane, 0);
  }
  if (count == 0) return Outcome::fault(Cause::BarrierZeroCount, lane, id);
  uint32_t num = (id >> 8) & 0x7fffff, slot = id & 0xff;
  if (num >= memmap::kNumBarriersPerCta || slot >= cfg_.warps || (id & 0x80000000u))
    return Outcome::fault(Cause::BadBarrier, lane, id);
  uint32_t index = slot * memmap::kNumBarriersPerCta + num;
  BarrierState& b = ctx.core.barriers[index];
  *token = b.phase & 1;
  if (++b.count >= count) release_local_barrier(ctx.core_id, index);
  return Outcome::retire();
}

Outcome Machine::bar_wait(ExecCtx& ctx, uint32_t id, uint32_t token) {
  const uint32_t lane = ctx.last_lane();
  uint32_t num = (id >> 8) & 0x7fffff, slot = id & 0xff;
  if (num >= memmap::kNumBarriersPerCta || slot >= cfg_.warps || (id & 0x80000000u))
    return Outcome::fault(Cause::BadBarrier, lane, id);
  uint32_t index = slot * memmap::kNumBarriersPerCta + num;
  const BarrierState& b = ctx.core.barriers[index];
  if ((b.phase & 1) == (token & 1)) {
    ctx.w.wait = WarpWait::BarrierWait;
    ctx.w.wait_barrier = index;
    ctx.w.wait_phase = token & 1;
  }
  return Outcome::retire();
}

Outcome Machine::wspawn(ExecCtx& ctx, uint32_t count, uint32_t pc) {
  count = std::min(count, cfg_.warps);
  uint32_t others = active_[ctx.core_id] & ~(1u << ctx.warp_id);
  if (others != 0) {
    // Wait until this is the only active warp, then execute the WSPAWN again.
    ctx.w.wait = WarpWait::Spawn;
    return Outcome::stall();
  }
  for (uint32_t w = 1; w < count; ++w) {
    if (w == ctx.warp_id) continue;
    WarpState& ws = ctx.core.warps[w];
    init_warp_for_dispatch(ws);
    ws.pc = pc;
    ws.tmask = 1;
    ws.mscratch = ctx.w.mscratch;
    ws.cta_slot = ctx.w.cta_slot;
    ws.block_id = ctx.w.block_id;
    ws.cta_linear = ctx.w.cta_linear;
    update_ready(ctx.core_id, w);
  }
  return Outcome::retire();
}

}  // namespace vx
