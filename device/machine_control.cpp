// The machine's control outside the instruction path: Debug Module support (halt, resume, step,
// inject), saving a launch and re-launching it (docs/relaunch.md), starting a launch and dispatching
// CTAs, and the console. The data path, fetch, the run loop, watchpoints, barriers and spawn are in
// machine.cpp.
#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cstring>
#include "device/machine.hpp"

namespace vx {

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
  // decode() is a function of the word alone; a debugger injects the same few words over and over
  // (reading registers through dscratch), so their decodings are kept, indexed by a hash of the word.
  Decoded& cached = inject_decoded_[(word * 0x9e3779b1u) >> (32 - kInjectDecodedBits)];
  if (cached.exec == nullptr || cached.raw != word) cached = decode(word);
  const Decoded d = cached;
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

Result<void> Machine::start_resume(ResumeRequest req) {
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
  resume_ = std::move(req);  // ctx and req are not read after this
  restore_phase_ = true;
  restore_next_ = 0;
  resume_requested_ = false;
  dispatch_new_units_ = resume_.dispatch_new_units;
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
  // The routine is the engine's own code: with no observer and no watch (whose hooks step() serves), it
  // runs without step()'s per-instruction checks. The reference mode keeps step() for everything.
  const bool lean = !observer_ && !data_hooks_ && !opts_.reference;
  while (restore_next_ < resume_.placements.size()) {
    const RestorePlacement& p = resume_.placements[restore_next_];
    WarpState& ws = cores_[p.core].warps[p.slot];
    for (uint64_t n = 0;;) {
      if (!ws.active) {
        if (p.restores_warp) return failed(p, "ended without VXR.RESUME");
        break;
      }
      if (n >= kRestoreLimit)
        return failed(p, "did not finish within " + std::to_string(kRestoreLimit) + " instructions");
      DeviceException exc;
      Outcome o;
      if (lean) {
        uint64_t ran = 0;
        o = run_routine(p.core, p.slot, kRestoreLimit - n, &ran, &exc);
        n += ran;
      } else {
        o = step(p.core, p.slot, &exc);
        ++n;
      }
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

Outcome Machine::run_routine(uint32_t c, uint32_t w, uint64_t limit, uint64_t* ran, DeviceException* exc) {
  CoreState& core = cores_[c];
  WarpState& ws = core.warps[w];
  ExecCtx ctx{*this, c, w, core, ws, cfg_.threads, ws.x.data(), ws.f.data(), 0, ws.tmask, 0, ws.tmask};
  uint64_t lanes = lane_count(ws.tmask), pending = 0;
  uint32_t pc = ws.pc;
  // Counted exactly as step() counts (run_restore_phase moves the count to restore_instructions).
  auto settle = [&] {
    count_retired(core, ws, pending, lanes);
    ws.pc = pc;
    pending = 0;
  };
  auto done = [&](Outcome o) {
    fp_settle();
    return o;
  };
  Block* const blocks = opts_.decode_cache ? blocks_.get() : nullptr;  // without the cache, no blocks either
  for (*ran = 0; *ran < limit;) {
    // A basic block (built the second time its pc is reached, as in run_fast): its instructions run
    // one after another, with the code generation checked after each store.
    Block* b = nullptr;
    if (blocks) {
      if (mem_.code_generation() != code_generation_seen_) code_rewritten();
      Block& slot = blocks[(pc >> 2) & (kBlocks - 1)];
      const uint64_t key = icache_key(pc) | kStoresInside;  // this loop's kind of block
      if (slot.key != key) {
        slot = Block{key, kBlockUnbuilt, 0};
      } else if (slot.start == kBlockUnbuilt) {
        build_block(pc, slot, true);
        if (slot.len != 0) b = &slot;
      } else if (slot.len != 0) {
        b = &slot;
      }
    }
    if (b) {
      const Block& slot = *b;
      const uint64_t room = limit - *ran;
      const uint32_t n = uint32_t(std::min<uint64_t>(slot.len, room));
      const Decoded* const first = block_pool_ + slot.start;
      const Decoded* const end = first + n;
      ctx.next_pc = pc + 4 * n;  // as the last one run leaves it unless it is a taken branch or a jump
      uint32_t at = pc, retired = n;
      for (const Decoded* d = first; d != end; ++d, at += 4) {
        ctx.pc = at;
        const Outcome o = d->exec(ctx, *d);
        if (o.step != Step::Retire) {
          // As step() would have it: the ones before retired, this one's next pc is its own + 4.
          pending += uint64_t(d - first);
          *ran += uint64_t(d - first) + 1;
          pc = at;
          if (d + 1 != end) ctx.next_pc = at + 4;
          settle();
          return done(complete_step(c, w, ctx, o, exc));
        }
        if (d->cls == InsnClass::Store && mem_.code_generation() != code_generation_seen_) {
          retired = uint32_t(d - first) + 1;  // the instructions after it may have been rewritten
          if (d + 1 != end) ctx.next_pc = at + 4;
          break;
        }
      }
      pending += retired;
      *ran += retired;
      pc = ctx.next_pc;
      continue;
    }
    Cause cause = Cause::None;
    const Decoded* d = fetch(pc, &cause);  // checks the code generation: a store may rewrite code
    if (!d) {
      settle();
      *exc = DeviceException{cause, pc, c, w, ws.tmask ? 31u - unsigned(std::countl_zero(ws.tmask)) : 0u, pc};
      return done(Outcome::fault(cause, exc->lane, pc));
    }
    ctx.pc = pc;
    ctx.next_pc = pc + 4;
    ++*ran;
    if (d->sync) {  // CSRs, Vortex instructions (TMC), VXR.RESUME: with step()'s bookkeeping
      settle();
      ctx.tmask = ctx.next_tmask = ws.tmask;
      const Outcome o = complete_step(c, w, ctx, d->exec(ctx, *d), exc);
      if (o.step != Step::Retire || resume_requested_ || !ws.active) return done(o);
      pc = ws.pc;
      lanes = lane_count(ws.tmask);
      ctx.tmask = ctx.next_tmask = ws.tmask;  // a Vortex instruction may have changed the mask
    } else {
      const Outcome o = d->exec(ctx, *d);
      if (o.step != Step::Retire) {
        settle();
        return done(complete_step(c, w, ctx, o, exc));
      }
      ++pending;
      pc = ctx.next_pc;
    }
  }
  settle();
  return done(Outcome::retire());
}

std::string Machine::finish_restore() {
  DeviceContext& ctx = resume_.context;
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
  // Moved, not copied: the request is dropped below. The warps move to new addresses, so no warp
  // may own the host's FP flags (none does after the routine: its runs settle them).
  fp_settle();
  cores_ = std::move(ctx.cores);
  global_barriers_ = std::move(ctx.global_barriers);
  global_expected_ = std::move(ctx.global_expected);
  sched_ = std::move(ctx.scheduler);
  launch_ = ctx.launch;
  launch_base_ = stats_.instructions - ctx.kernel_instructions;
  launch_lane_base_ = stats_.lane_instructions - ctx.kernel_lane_instructions;
  watchdog_base_ = launch_base_;  // the watchdog counts the whole launch, not the pass
  next_drain_ = stats_.instructions + ctx.drain_countdown;
  overrides_ = std::move(resume_.overrides);
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

// --- Console -------------------------------------------------------------------

void Machine::drain_console() {
  // Every slot's indices at once: this runs every few thousand instructions, mostly to find nothing.
  std::array<uint32_t, memmap::kConsoleSlots> wrs{}, rds{}, losts{};
  mem_.read(memmap::kConsoleWrIdx, wrs.data(), sizeof wrs);
  mem_.read(memmap::kConsoleRdIdx, rds.data(), sizeof rds);
  mem_.read(memmap::kConsoleLost, losts.data(), sizeof losts);
  for (uint32_t s = 0; s < memmap::kConsoleSlots; ++s) {
    const uint32_t wr = wrs[s], rd = rds[s], lost = losts[s];
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
