#include "device/machine.hpp"

#include "device/extension_units.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <string_view>

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
  if (icache_.empty()) icache_.assign(kICacheSize, ICacheEntry{});
  empty_icache();
  code_generation_seen_ = mem_.code_generation();
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
        data_hook(c, lane, a, size, kWrite ? kWatchWrite : kWatchRead, true);
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
    data_hook(c, lane, a, size, kWrite ? kWatchWrite : kWatchRead, false);
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

void Machine::empty_icache() {
  if (++icache_generation_ == 0) {  // after 2^32 generations: old keys could match again
    for (ICacheEntry& e : icache_) e.key = 0;
    icache_generation_ = 1;
  }
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
  if (!opts_.reference) e.d.exec = specialize(e.d.exec, cfg_.threads);
  return &e.d;
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
  Outcome o = d->exec(ctx, *d);
  if (observer_) [[unlikely]]
    observe_step(ctx, *d, o.step);
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
  const ICacheEntry* const cache = icache_.data();
  uint64_t gen = icache_key(0);
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
      stats_.instructions += pending;
      stats_.lane_instructions += pending * lanes;
      ws.instret += pending;
      core.instret += pending;
      ws.pc = pc;
      stepped += pending;
      pending = 0;
      sched_.quantum_left[c] = q;
    };
    for (;;) {
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
        Outcome o = d->exec(ctx, *d);
        if (observing) [[unlikely]]
          observe_step(ctx, *d, o.step);
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
        Outcome o = d->exec(ctx, *d);
        if (observing) [[unlikely]] {
          settle();  // the observer reads the counters and the pc as step() leaves them
          observe_step(ctx, *d, o.step);
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

void Machine::data_hook(ExecCtx& c, uint32_t lane, uint32_t addr, uint32_t size, uint8_t kind, bool local) {
  fp_settle();
  if (watch_active_) watch_access(c, lane, addr, size, kind, local);
  if (observer_) obs_accesses_.push_back(ObservedAccess{lane, addr, uint8_t(size), kind, local});
}

void Machine::set_observer(DeviceObserver* observer) {
  observer_ = observer;
  obs_accesses_.clear();
  update_data_hooks();
}

void Machine::observe_step(const ExecCtx& c, const Decoded& d, Step step) {
  fp_settle();  // the observer is foreign code
  // The thread-entry routine is the debugger's code, and an instruction that did not retire did nothing.
  if (step != Step::Retire || restore_phase_ || d.cls == InsnClass::Other) {
    obs_accesses_.clear();
    return;
  }
  // An AMO reads and writes through one store pointer: its accesses are both.
  if (d.cls == InsnClass::Atomic)
    for (ObservedAccess& a : obs_accesses_) a.kind = d.row->mnemonic[0] == 'l' ? kWatchRead : kWatchRead | kWatchWrite;
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

// --- Debug Module support ------------------------------------------------------

void Machine::halt_warp(uint32_t c, uint32_t w, HaltCause cause) {
  WarpState& ws = cores_[c].warps[w];
  if (!ws.active) return;
  ws.halted = true;
  ws.halt_cause = cause;
  update_ready(c, w);
}

void Machine::resume_warp(uint32_t c, uint32_t w) {
  WarpState& ws = cores_[c].warps[w];
  ws.halted = false;
  ws.halt_cause = HaltCause::None;
  update_ready(c, w);
}

Outcome Machine::debug_step(uint32_t c, uint32_t w, DeviceException* exc) {
  WarpState& ws = cores_[c].warps[w];
  if (!ws.active || !ws.halted || ws.wait != WarpWait::None) return Outcome::stall();
  // step() keeps the warp halted: the flag is only cleared by a resume or a retire (TMC 0).
  Outcome o = step(c, w, exc);
  if ((o.step == Step::Retire || o.step == Step::Trap) && ws.active) ws.halt_cause = HaltCause::Step;
  // The stepped instruction's watch hits are reported by the next run(), before anything else runs.
  if (watch_fired_) watch_end_instruction();
  arm_before_trigger();
  return o;
}

namespace {

// What DCTRL.injectreq may execute: nothing that changes the warp's control state.
bool injectable(const Decoded& d) {
  if (!d.row) return true;  // the illegal-instruction executor reports it
  std::string_view m = d.row->mnemonic;
  if (m == "ecall" || m == "ebreak" || m == "mret") return false;
  if (d.row->ext != Ext::Vortex) return true;
  return m.starts_with("vx_vote") || m.starts_with("vx_shfl") || m == "vx_wsync";
}

}  // namespace

Outcome Machine::inject(uint32_t c, uint32_t w, uint32_t lane, uint32_t word, DeviceException* exc) {
  CoreState& core = cores_[c];
  WarpState& ws = core.warps[w];
  const Decoded d = decode(word);
  if (lane >= cfg_.threads || !injectable(d)) {
    *exc = DeviceException{Cause::IllegalInstruction, ws.pc, c, w, lane, word};
    return Outcome::fault(Cause::IllegalInstruction, lane, word);
  }
  const uint32_t mask = 1u << lane;
  ExecCtx ctx{*this, c, w, core, ws, cfg_.threads, ws.x.data(), ws.f.data(), ws.pc, mask, ws.pc + 4, mask};
  // next_pc / next_tmask are dropped: the warp's control state never changes and nothing is counted.
  Outcome o = d.exec(ctx, d);
  fp_settle();
  if (o.step == Step::Exception) *exc = DeviceException{o.cause, ws.pc, c, w, o.lane, o.tval};
  // The debugger's own instruction, like its copies: never a watch hit.
  if (watch_fired_) watch_discard_instruction();
  return o;
}

void Machine::reset_cores() {
  const bool relaunch = launch_active();
  const LaunchState l = initial_launch_;
  abort_launch();
  if (!relaunch) return;
  // The same launch was accepted on this device before, so it is accepted again.
  Result<void> started = start_launch(l);
  assert(started.ok());
  (void)started;
  // The KMU dispatches at once, so warps halted by resethaltreq are visible before the next run().
  dispatch_pending();
}

// --- Save and re-launch (docs/relaunch.md) -------------------------------------------

namespace {

constexpr uint64_t kRestoreLimit = 1u << 22;  // instructions one routine may take

std::string hex32(uint32_t v) {
  char buf[16];
  snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace

Result<DeviceContext> Machine::save_context() const {
  if (launch_.kind != LaunchKind::Grid) return make_error("save_context: no grid launch is in flight");
  if (restore_phase_) return make_error("save_context: the thread-entry routine has not finished");
  DeviceContext ctx;
  ctx.launch = launch_;
  ctx.cores = cores_;
  ctx.global_barriers = global_barriers_;
  ctx.global_expected = global_expected_;
  ctx.scheduler = sched_;
  ctx.kernel_instructions = stats_.instructions - launch_base_;
  ctx.kernel_lane_instructions = stats_.lane_instructions - launch_lane_base_;
  ctx.drain_countdown = next_drain_ > stats_.instructions ? next_drain_ - stats_.instructions : 0;
  return ctx;
}

Result<void> Machine::start_resume(const ResumeRequest& req) {
  if (launch_active()) return make_error("resume: a launch is already in flight");
  const DeviceContext& ctx = req.context;
  const uint32_t nc = num_cores(), nw = cfg_.warps, nt = cfg_.threads;
  if (ctx.launch.kind != LaunchKind::Grid) return make_error("resume: only grid launches can be re-launched");
  if (ctx.cores.size() != nc || ctx.global_barriers.size() != global_barriers_.size() ||
      ctx.global_expected.size() != global_expected_.size() || ctx.scheduler.current_warp.size() != nc ||
      ctx.scheduler.quantum_left.size() != nc)
    return make_error("resume: the context was saved on a device of another shape");
  for (uint32_t c = 0; c < nc; ++c) {
    const CoreState& core = ctx.cores[c];
    if (core.warps.size() != nw || core.local_mem.size() != cfg_.local_mem_bytes ||
        core.barriers.size() != cores_[c].barriers.size() || core.slot_warps.size() != nw ||
        core.global_arrived.size() != cores_[c].global_arrived.size())
      return make_error("resume: core " + std::to_string(c) + " of the context does not fit this device");
    for (const WarpState& w : core.warps)
      if (w.x.size() != 32 * nt || w.f.size() != 32 * nt)
        return make_error("resume: a warp of core " + std::to_string(c) + " has the wrong register count");
  }
  if ((req.routine_pc & 3) || !mem_.is_mapped(req.routine_pc, 4))
    return make_error("resume: the thread-entry routine at " + hex32(req.routine_pc) + " is not mapped code");
  std::vector<uint8_t> placed(size_t(nc) * nw, 0);
  for (const RestorePlacement& p : req.placements) {
    if (p.core >= nc || p.slot >= nw)
      return make_error("resume: placement core " + std::to_string(p.core) + " slot " + std::to_string(p.slot) +
                        " does not exist");
    if (placed[p.core * nw + p.slot]++)
      return make_error("resume: two placements in core " + std::to_string(p.core) + " slot " + std::to_string(p.slot));
    if (p.restores_warp != ctx.cores[p.core].warps[p.slot].active)
      return make_error("resume: core " + std::to_string(p.core) + " slot " + std::to_string(p.slot) +
                        (p.restores_warp ? " holds no warp to restore" : " holds a warp that needs restoring"));
  }
  for (uint32_t c = 0; c < nc; ++c)
    for (uint32_t w = 0; w < nw; ++w)
      if (ctx.cores[c].warps[w].active && !placed[c * nw + w])
        return make_error("resume: the warp in core " + std::to_string(c) + " slot " + std::to_string(w) +
                          " has no placement");
  for (const FetchOverride& o : req.overrides)
    if (o.core >= nc || o.slot >= nw || !ctx.cores[o.core].warps[o.slot].active)
      return make_error("resume: a fetch override names core " + std::to_string(o.core) + " slot " +
                        std::to_string(o.slot) + ", which holds no warp");

  launch_ = ctx.launch;
  initial_launch_ = ctx.launch;
  kmu_blocked_.assign(cores_.size(), 0);
  initial_launch_.next_unit = 0;
  initial_launch_.kmu_core_cursor = 0;
  for (const RestorePlacement& p : req.placements) {
    WarpState& ws = cores_[p.core].warps[p.slot];
    const WarpState& saved = ctx.cores[p.core].warps[p.slot];
    init_warp_for_dispatch(ws);
    --stats_.warps_dispatched;  // not a dispatch of the workload
    ws.halted = false;
    ws.halt_cause = HaltCause::None;
    ws.pc = req.routine_pc;
    ws.tmask = cfg_.full_mask();
    ws.mscratch = p.arg;
    // The software coordinates the routine reads from the CTA CSRs.
    ws.cta_slot = saved.cta_slot;
    ws.cta_rank = saved.cta_rank;
    ws.cta_size = saved.cta_size;
    ws.cta_linear = saved.cta_linear;
    ws.block_id = saved.block_id;
    update_ready(p.core, p.slot);
  }
  resume_ = req;
  restore_phase_ = true;
  restore_next_ = 0;
  resume_requested_ = false;
  dispatch_new_units_ = req.dispatch_new_units;
  overrides_.clear();
  trigger_pending_ = false;
  watch_discard_pending();
  arm_before_trigger();
  return {};
}

Outcome Machine::resume_request(ExecCtx& c) {
  const bool ok = restore_phase_ && restore_next_ < resume_.placements.size() &&
                  resume_.placements[restore_next_].core == c.core_id &&
                  resume_.placements[restore_next_].slot == c.warp_id &&
                  resume_.placements[restore_next_].restores_warp;
  if (!ok) return Outcome::fault(Cause::IllegalInstruction, c.last_lane(), 0x0000007b);
  resume_requested_ = true;
  return Outcome::retire();
}

RunResult Machine::run_restore_phase() {
  const uint64_t i0 = stats_.instructions, l0 = stats_.lane_instructions;
  auto settle = [&] {
    // Routine instructions are the debugger's, not the kernel's: counted apart.
    stats_.restore_instructions += stats_.instructions - i0;
    stats_.instructions = i0;
    stats_.lane_instructions = l0;
  };
  auto failed = [&](const RestorePlacement& p, const std::string& why) {
    settle();
    const WarpState& ws = cores_[p.core].warps[p.slot];
    RunResult r{RunStop::Exception, DeviceException{Cause::RestoreFailed, ws.pc, p.core, p.slot, 0, 0}, {}};
    r.message =
        "thread-entry routine in core " + std::to_string(p.core) + " slot " + std::to_string(p.slot) + ": " + why;
    return r;
  };
  while (restore_next_ < resume_.placements.size()) {
    const RestorePlacement& p = resume_.placements[restore_next_];
    WarpState& ws = cores_[p.core].warps[p.slot];
    for (uint64_t n = 0;; ++n) {
      if (!ws.active) {
        if (p.restores_warp) return failed(p, "ended without VXR.RESUME");
        break;
      }
      if (n >= kRestoreLimit)
        return failed(p, "did not finish within " + std::to_string(kRestoreLimit) + " instructions");
      DeviceException exc;
      Outcome o = step(p.core, p.slot, &exc);
      if (o.step == Step::Exception) return failed(p, exc.to_string());
      if (o.step == Step::Stall) return failed(p, "stalled at " + hex32(ws.pc));
      if (resume_requested_) {
        resume_requested_ = false;
        break;
      }
    }
    ++restore_next_;
  }
  settle();
  std::string why = finish_restore();
  if (!why.empty()) {
    RunResult r{RunStop::Exception, DeviceException{Cause::RestoreFailed, 0, 0, 0, 0, 0}, why};
    return r;
  }
  return {RunStop::Idle, {}, {}};
}

std::string Machine::finish_restore() {
  const DeviceContext& ctx = resume_.context;
  const uint32_t nt = cfg_.threads;
  // The routine is real code: check it did its job before trusting the state it leaves.
  for (const RestorePlacement& p : resume_.placements) {
    if (!p.restores_warp) continue;
    const WarpState& ws = cores_[p.core].warps[p.slot];
    const WarpState& saved = ctx.cores[p.core].warps[p.slot];
    std::string where = "core " + std::to_string(p.core) + " slot " + std::to_string(p.slot);
    for (uint32_t i = 0; i < 32 * nt; ++i) {
      if (ws.x[i] != saved.x[i])
        return "the routine left x" + std::to_string(i / nt) + " of " + where + " lane " + std::to_string(i % nt) +
               " at " + hex32(ws.x[i]) + ", not " + hex32(saved.x[i]);
      if (ws.f[i] != saved.f[i])
        return "the routine left f" + std::to_string(i / nt) + " of " + where + " lane " + std::to_string(i % nt) +
               " at " + hex32(ws.f[i]) + ", not " + hex32(saved.f[i]);
    }
    if (ws.fcsr != saved.fcsr || ws.mscratch != saved.mscratch || ws.mstatus != saved.mstatus ||
        ws.mtvec != saved.mtvec || ws.mepc != saved.mepc || ws.mcause != saved.mcause || ws.mtval != saved.mtval)
      return "the routine left a CSR of " + where + " different from the context";
  }
  for (uint32_t c = 0; c < num_cores(); ++c)
    if (cores_[c].local_mem != ctx.cores[c].local_mem)
      return "the routine left the local memory of core " + std::to_string(c) + " different from the context";
  // What no kernel instruction can write: control state, barrier and KMU state, the scheduler. Empty
  // slots get their saved registers back too (a later CTA in the slot may read them uninitialized).
  cores_ = ctx.cores;
  global_barriers_ = ctx.global_barriers;
  global_expected_ = ctx.global_expected;
  sched_ = ctx.scheduler;
  launch_ = ctx.launch;
  launch_base_ = stats_.instructions - ctx.kernel_instructions;
  launch_lane_base_ = stats_.lane_instructions - ctx.kernel_lane_instructions;
  watchdog_base_ = launch_base_;  // the watchdog counts the whole launch, not the pass
  next_drain_ = stats_.instructions + ctx.drain_countdown;
  overrides_ = resume_.overrides;
  restore_phase_ = false;
  resume_ = ResumeRequest{};
  state_replaced();
  return {};
}

// --- Launch and dispatch -----------------------------------------------------

Result<void> Machine::start_launch(const LaunchState& in) {
  if (launch_active()) return make_error("a launch is already in flight");
  LaunchState l = in;
  l.next_unit = 0;
  l.kmu_core_cursor = 0;
  if (l.kind == LaunchKind::Grid) {
    for (int i = 0; i < 3; ++i) {
      if (l.grid[i] == 0 || l.block[i] == 0 || l.cluster[i] == 0)
        return make_error("grid, block and cluster dimensions must all be at least 1");
      if (l.grid[i] % l.cluster[i] != 0)
        return make_error("grid dimension " + std::to_string(i) + " (" + std::to_string(l.grid[i]) +
                          ") is not a multiple of the cluster dimension (" + std::to_string(l.cluster[i]) + ")");
    }
    uint64_t threads = uint64_t(l.block[0]) * l.block[1] * l.block[2];
    uint64_t warps = (threads + cfg_.threads - 1) / cfg_.threads;
    if (warps > cfg_.warps)
      return make_error("a block of " + std::to_string(threads) + " threads needs " + std::to_string(warps) +
                        " warps but a core has " + std::to_string(cfg_.warps) + " warp slots");
    if (l.lmem_bytes > cfg_.local_mem_bytes)
      return make_error("the launch asks for " + std::to_string(l.lmem_bytes) +
                        " bytes of local memory per CTA but a core has " + std::to_string(cfg_.local_mem_bytes));
    l.warps_per_cta = uint32_t(warps);
    l.lmem_stride = (l.lmem_bytes + 63) & ~63u;
    l.lmem_slots = l.lmem_stride == 0 ? cfg_.warps : std::min(cfg_.warps, cfg_.local_mem_bytes / l.lmem_stride);
    l.total_units = uint64_t(l.grid[0]) * l.grid[1] * l.grid[2];
    for (CoreState& core : cores_) {
      core.lmem_next_slot = 0;
      for (WarpState& w : core.warps) w.slot_used = false;
    }
  } else if (l.kind == LaunchKind::Instances || l.kind == LaunchKind::Slice) {
    if (l.num_args > 7) return make_error("RUN_INSTANCES takes at most 7 extra arguments");
    if (l.kind == LaunchKind::Slice && l.tsd_size > 0) {
      l.ktb_stride = (l.tsd_size + 63) & ~63u;
      uint64_t bytes = uint64_t(l.ktb_stride) * cfg_.total_harts();
      if (bytes > 0x1000000) return make_error("thread-specific data blocks do not fit the 16 MiB TCDM area");
      mem_.map(memmap::kKtbBase, bytes);
    }
  } else {
    return make_error("no launch kind");
  }
  launch_ = l;
  initial_launch_ = l;
  kmu_blocked_.assign(cores_.size(), 0);  // another launch: another room to ask for
  if (observer_) observer_->launch_started(l);
  launch_base_ = stats_.instructions;
  launch_lane_base_ = stats_.lane_instructions;
  dispatch_new_units_ = true;
  overrides_.clear();
  trigger_pending_ = false;
  watch_discard_pending();
  arm_before_trigger();
  reset_watchdog();
  return {};
}

void Machine::init_warp_for_dispatch(WarpState& w) {
  if (fp_owner_ == &w) fp_settle();
  w.active = true;
  w.wait = WarpWait::None;
  w.ipdom.clear();
  w.reservation.clear();  // no LR from an earlier occupant of the slot survives
  // ndmreset with resethaltreq: the first warp dispatched into a selected slot halts before its first instruction.
  w.halted = w.reset_halt;
  w.halt_cause = w.reset_halt ? HaltCause::ResetHaltReq : HaltCause::None;
  w.reset_halt = false;
  ++stats_.warps_dispatched;
  arm_before_trigger();  // a new warp in the trigger's slot may be the one
}

bool Machine::dispatch_cta(uint32_t c) {
  const uint64_t room_key = (uint64_t(1) << 32) | active_[c];
  if (kmu_blocked_[c] == room_key) return false;
  CoreState& core = cores_[c];
  const LaunchState& l = launch_;
  uint32_t free_warps = ~active_[c] & (cfg_.warps >= 32 ? 0xffffffffu : ((1u << cfg_.warps) - 1));
  if (lane_count(free_warps) < l.warps_per_cta) {
    kmu_blocked_[c] = room_key;
    return false;
  }
  // A free local-memory slot, round-robin.
  int32_t slot = -1;
  for (uint32_t i = 0; i < l.lmem_slots; ++i) {
    uint32_t s = (core.lmem_next_slot + i) % l.lmem_slots;
    if (core.slot_warps[s] == 0) {
      slot = int32_t(s);
      break;
    }
  }
  if (slot < 0) {
    kmu_blocked_[c] = room_key;
    return false;
  }
  core.lmem_next_slot = (uint32_t(slot) + 1) % l.lmem_slots;
  uint64_t cta = l.next_unit;
  std::array<uint32_t, 3> bid{uint32_t(cta % l.grid[0]), uint32_t((cta / l.grid[0]) % l.grid[1]),
                              uint32_t(cta / (uint64_t(l.grid[0]) * l.grid[1]))};
  uint32_t threads = l.block[0] * l.block[1] * l.block[2];
  for (uint32_t rank = 0; rank < l.warps_per_cta; ++rank) {
    uint32_t w = unsigned(std::countr_zero(free_warps));
    free_warps &= free_warps - 1;
    WarpState& ws = core.warps[w];
    init_warp_for_dispatch(ws);
    uint32_t lanes = std::min(cfg_.threads, threads - rank * cfg_.threads);
    ws.tmask = lanes >= 32 ? 0xffffffffu : ((1u << lanes) - 1);
    ws.pc = ws.slot_used ? ws.restart_pc : l.start_pc;
    ws.slot_used = true;
    ws.mscratch = l.arg_ptr;
    ws.cta_slot = uint32_t(slot);
    ws.cta_rank = rank;
    ws.cta_size = l.warps_per_cta;
    ws.cta_linear = uint32_t(cta);
    ws.block_id = bid;
    update_ready(c, w);
  }
  core.slot_warps[uint32_t(slot)] = l.warps_per_cta;
  ++launch_.next_unit;
  ++stats_.units_dispatched;
  return true;
}

bool Machine::dispatch_instances(uint32_t c, uint32_t w) {
  LaunchState& l = launch_;
  // Lanes of this warp that are real harts under MAX_HARTS.
  uint32_t lanes = cfg_.threads;
  if (l.max_harts != 0) {
    uint32_t first = hart_id(c, w, 0);
    lanes = first >= l.max_harts ? 0 : std::min(cfg_.threads, l.max_harts - first);
  }
  if (lanes == 0) return false;
  uint64_t left = l.total_units - l.next_unit;
  uint32_t n = uint32_t(std::min<uint64_t>(lanes, left));
  WarpState& ws = cores_[c].warps[w];
  init_warp_for_dispatch(ws);
  ws.tmask = n >= 32 ? 0xffffffffu : ((1u << n) - 1);
  ws.pc = l.start_pc;
  ws.mscratch = 0;
  ws.instance_base = uint32_t(l.next_unit);
  const uint32_t nt = cfg_.threads;
  for (uint32_t lane = 0; lane < n; ++lane) {
    uint32_t id = uint32_t(l.next_unit + lane);
    ws.x[1 * nt + lane] = l.return_addr;  // ra
    ws.x[2 * nt + lane] = l.stack_top;    // sp
    ws.x[10 * nt + lane] = id;            // a0 = instance id
    if (l.kind == LaunchKind::Instances) {
      for (uint32_t i = 0; i < l.num_args; ++i) ws.x[(11 + i) * nt + lane] = l.args[i];
    } else {
      uint32_t ktb = 0;
      if (l.tsd_size > 0) {
        ktb = memmap::kKtbBase + hart_id(c, w, lane) * l.ktb_stride;
        std::vector<uint8_t> tsd(l.tsd_size);
        // Addresses were validated when the command was accepted; a failed copy
        // leaves the block zeroed.
        if (mem_.read(l.tsd_src, tsd.data(), tsd.size())) mem_.write(ktb, tsd.data(), tsd.size());
      }
      ws.x[11 * nt + lane] = l.slice_id;
      ws.x[12 * nt + lane] = l.packed_args;
      ws.x[13 * nt + lane] = ktb;
    }
  }
  l.next_unit += n;
  stats_.units_dispatched += n;
  update_ready(c, w);
  return true;
}

void Machine::dispatch_pending() {
  LaunchState& l = launch_;
  if (l.next_unit >= l.total_units) return;
  const uint32_t ncores = uint32_t(cores_.size());
  if (l.kind == LaunchKind::Grid) {
    // Hand CTAs to whichever core has room, round-robin from the last one used.
    uint32_t misses = 0;
    while (l.next_unit < l.total_units && misses < ncores) {
      uint32_t c = l.kmu_core_cursor;
      l.kmu_core_cursor = (c + 1) % ncores;
      if (dispatch_cta(c))
        misses = 0;
      else
        ++misses;
    }
    return;
  }
  for (uint32_t c = 0; c < ncores && l.next_unit < l.total_units; ++c)
    for (uint32_t w = 0; w < cfg_.warps && l.next_unit < l.total_units; ++w)
      if (!(active_[c] & (1u << w))) dispatch_instances(c, w);
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

// --- Console -------------------------------------------------------------------

void Machine::drain_console() {
  for (uint32_t s = 0; s < memmap::kConsoleSlots; ++s) {
    uint32_t wr = 0, rd = 0, lost = 0;
    mem_.read(memmap::kConsoleWrIdx + 4 * s, &wr, 4);
    mem_.read(memmap::kConsoleRdIdx + 4 * s, &rd, 4);
    mem_.read(memmap::kConsoleLost + 4 * s, &lost, 4);
    if (wr == rd && lost == 0) continue;
    ConsoleChunk chunk;
    chunk.slot = s;
    uint32_t n = std::min<uint32_t>(wr - rd, memmap::kConsoleRingBytes);
    for (uint32_t i = 0; i < n; ++i) {
      uint8_t byte = 0;
      mem_.read(memmap::kConsoleData + s * memmap::kConsoleRingBytes + ((rd + i) & (memmap::kConsoleRingBytes - 1)),
                &byte, 1);
      chunk.bytes.push_back(char(byte));
    }
    chunk.lost = lost;
    mem_.write(memmap::kConsoleRdIdx + 4 * s, &wr, 4);
    if (lost) {
      uint32_t zero = 0;
      mem_.write(memmap::kConsoleLost + 4 * s, &zero, 4);
    }
    console_.push_back(std::move(chunk));
  }
}

std::vector<ConsoleChunk> Machine::take_console() {
  std::vector<ConsoleChunk> out;
  out.swap(console_);
  return out;
}

uint32_t Machine::exit_code() const {
  uint32_t v = 0;
  mem_.read(memmap::kExitCode, &v, 4);
  return v;
}

}  // namespace vx
