#include "engine/context_record.hpp"

#include <optional>
#include <set>
#include <string>
#include <utility>

namespace vx::engine {

namespace ck = vx::checkpoint;

namespace {

using std::to_string;

// --- Enums, value by value ------------------------------------------------------------------------
// A value that is not an enumerator (only a corrupted context holds one) is passed on as its number
// on the way out, for Store::put or record_to_context to refuse, and refused on the way in.

ck::WaitKind wait_to_record(WarpWait w) {
  switch (w) {
    case WarpWait::None: return ck::WaitKind::None;
    case WarpWait::Barrier: return ck::WaitKind::Barrier;
    case WarpWait::BarrierWait: return ck::WaitKind::BarrierWait;
    case WarpWait::Spawn: return ck::WaitKind::Spawn;
  }
  return ck::WaitKind(uint8_t(w));
}

std::optional<WarpWait> wait_from_record(ck::WaitKind w) {
  switch (w) {
    case ck::WaitKind::None: return WarpWait::None;
    case ck::WaitKind::Barrier: return WarpWait::Barrier;
    case ck::WaitKind::BarrierWait: return WarpWait::BarrierWait;
    case ck::WaitKind::Spawn: return WarpWait::Spawn;
  }
  return std::nullopt;
}

// The record keeps DCTRL.hacause's number.
uint8_t halt_to_record(HaltCause h) {
  switch (h) {
    case HaltCause::None: return 0;
    case HaltCause::Ebreak: return 1;
    case HaltCause::HaltReq: return 2;
    case HaltCause::Step: return 3;
    case HaltCause::ResetHaltReq: return 4;
  }
  return uint8_t(h);
}

std::optional<HaltCause> halt_from_record(uint8_t h) {
  switch (h) {
    case 0: return HaltCause::None;
    case 1: return HaltCause::Ebreak;
    case 2: return HaltCause::HaltReq;
    case 3: return HaltCause::Step;
    case 4: return HaltCause::ResetHaltReq;
    default: return std::nullopt;
  }
}

ck::LaunchKind launch_kind_to_record(LaunchKind k) {
  switch (k) {
    case LaunchKind::None: return ck::LaunchKind::None;
    case LaunchKind::Grid: return ck::LaunchKind::Grid;
    case LaunchKind::Instances: return ck::LaunchKind::Instances;
    case LaunchKind::Slice: return ck::LaunchKind::Slice;
  }
  return ck::LaunchKind(uint8_t(k));
}

std::optional<LaunchKind> launch_kind_from_record(ck::LaunchKind k) {
  switch (k) {
    case ck::LaunchKind::None: return LaunchKind::None;
    case ck::LaunchKind::Grid: return LaunchKind::Grid;
    case ck::LaunchKind::Instances: return LaunchKind::Instances;
    case ck::LaunchKind::Slice: return LaunchKind::Slice;
  }
  return std::nullopt;
}

// --- Device state to records ----------------------------------------------------------------------

ck::WarpRecord warp_to_record(uint32_t core, uint32_t slot, const WarpState& w) {
  ck::WarpRecord r;
  r.core = core;
  r.slot = slot;
  r.active = w.active;
  r.pc = w.pc;
  r.tmask = w.tmask;
  r.wait = wait_to_record(w.wait);
  r.wait_barrier = w.wait_barrier;
  r.wait_phase = w.wait_phase;
  r.ipdom.reserve(w.ipdom.size());
  for (const IpdomEntry& e : w.ipdom) r.ipdom.push_back(ck::IpdomRecord{e.orig_mask, e.else_pc, e.fallthrough});
  r.fcsr = w.fcsr;
  r.mscratch = w.mscratch;
  r.mstatus = w.mstatus;
  r.mtvec = w.mtvec;
  r.mepc = w.mepc;
  r.mcause = w.mcause;
  r.mtval = w.mtval;
  r.instret = w.instret;
  r.cta_slot = w.cta_slot;
  r.cta_rank = w.cta_rank;
  r.cta_size = w.cta_size;
  r.cta_linear = w.cta_linear;
  r.block_id = w.block_id;
  r.instance_base = w.instance_base;
  r.slot_used = w.slot_used;
  r.restart_pc = w.restart_pc;
  r.x = w.x;
  r.f = w.f;
  r.reservation = w.reservation;
  r.halted = w.halted;
  r.halt_cause = halt_to_record(w.halt_cause);
  r.reset_halt = w.reset_halt;
  r.dscratch = w.dscratch;
  return r;
}

ck::LaunchRecord launch_to_record(const LaunchState& l) {
  ck::LaunchRecord r;
  r.kind = launch_kind_to_record(l.kind);
  r.start_pc = l.start_pc;
  r.entry_pc = l.entry_pc;
  r.arg_ptr = l.arg_ptr;
  r.grid = l.grid;
  r.block = l.block;
  r.cluster = l.cluster;
  r.lmem_bytes = l.lmem_bytes;
  r.lmem_stride = l.lmem_stride;
  r.lmem_slots = l.lmem_slots;
  r.warps_per_cta = l.warps_per_cta;
  r.max_harts = l.max_harts;
  r.num_args = l.num_args;
  r.args = l.args;
  r.stack_top = l.stack_top;
  r.return_addr = l.return_addr;
  r.slice_id = l.slice_id;
  r.packed_args = l.packed_args;
  r.tsd_src = l.tsd_src;
  r.tsd_size = l.tsd_size;
  r.ktb_stride = l.ktb_stride;
  r.total_units = l.total_units;
  r.next_unit = l.next_unit;
  r.kmu_core_cursor = l.kmu_core_cursor;
  return r;
}

// --- Records to device state ----------------------------------------------------------------------

// Empty when the warp record fits; otherwise what is wrong (without the warp's name).
std::optional<std::string> warp_from_record(const ck::WarpRecord& r, uint32_t nt, WarpState* w) {
  auto wait = wait_from_record(r.wait);
  if (!wait) return "unknown wait kind " + to_string(int(r.wait));
  auto halt = halt_from_record(r.halt_cause);
  if (!halt) return "unknown halt cause " + to_string(int(r.halt_cause));
  if (r.x.size() != 32u * nt || r.f.size() != 32u * nt)
    return to_string(r.x.size()) + " x and " + to_string(r.f.size()) + " f register values, not " +
           to_string(32u * nt) + " (32 x " + to_string(nt) + " lanes)";
  if (!r.reservation.empty() && r.reservation.size() != nt)
    return to_string(r.reservation.size()) + " reservations, not 0 or " + to_string(nt) + " (one per lane)";
  if (!r.dscratch.empty() && r.dscratch.size() != 4u * nt)
    return to_string(r.dscratch.size()) + " dscratch values, not 0 or " + to_string(4u * nt) + " (4 per lane)";
  if (r.ipdom.size() + 1 > nt)
    return to_string(r.ipdom.size()) + " IPDOM entries; the stack holds " + to_string(nt - 1);

  w->active = r.active;
  w->pc = r.pc;
  w->tmask = r.tmask;
  w->wait = *wait;
  w->wait_barrier = r.wait_barrier;
  w->wait_phase = r.wait_phase;
  w->ipdom.clear();
  w->ipdom.reserve(r.ipdom.size());
  for (const ck::IpdomRecord& e : r.ipdom) w->ipdom.push_back(IpdomEntry{e.orig_mask, e.else_pc, e.fallthrough});
  w->fcsr = r.fcsr;
  w->mscratch = r.mscratch;
  w->mstatus = r.mstatus;
  w->mtvec = r.mtvec;
  w->mepc = r.mepc;
  w->mcause = r.mcause;
  w->mtval = r.mtval;
  w->instret = r.instret;
  w->cta_slot = r.cta_slot;
  w->cta_rank = r.cta_rank;
  w->cta_size = r.cta_size;
  w->cta_linear = r.cta_linear;
  w->block_id = r.block_id;
  w->instance_base = r.instance_base;
  w->slot_used = r.slot_used;
  w->restart_pc = r.restart_pc;
  w->x = r.x;
  w->f = r.f;
  w->reservation = r.reservation;
  w->halted = r.halted;
  w->halt_cause = *halt;
  w->reset_halt = r.reset_halt;
  w->dscratch = r.dscratch;
  return std::nullopt;
}

LaunchState launch_from_record(const ck::LaunchRecord& r, LaunchKind kind) {
  LaunchState l;
  l.kind = kind;
  l.start_pc = r.start_pc;
  l.entry_pc = r.entry_pc;
  l.arg_ptr = r.arg_ptr;
  l.grid = r.grid;
  l.block = r.block;
  l.cluster = r.cluster;
  l.lmem_bytes = r.lmem_bytes;
  l.lmem_stride = r.lmem_stride;
  l.lmem_slots = r.lmem_slots;
  l.warps_per_cta = r.warps_per_cta;
  l.max_harts = r.max_harts;
  l.num_args = r.num_args;
  l.args = r.args;
  l.stack_top = r.stack_top;
  l.return_addr = r.return_addr;
  l.slice_id = r.slice_id;
  l.packed_args = r.packed_args;
  l.tsd_src = r.tsd_src;
  l.tsd_size = r.tsd_size;
  l.ktb_stride = r.ktb_stride;
  l.total_units = r.total_units;
  l.next_unit = r.next_unit;
  l.kmu_core_cursor = r.kmu_core_cursor;
  return l;
}

}  // namespace

ck::ConfigRecord to_config_record(const DeviceConfig& cfg) {
  return ck::ConfigRecord{cfg.clusters, cfg.cores_per_cluster, cfg.warps, cfg.threads, cfg.local_mem_bytes};
}

void context_to_record(const DeviceContext& ctx, ck::CheckpointRecord* rec, std::vector<ck::PageData>* blobs) {
  rec->scheduler = ck::SchedulerRecord{ctx.scheduler.rng, ctx.scheduler.core_cursor, ctx.scheduler.current_warp,
                                       ctx.scheduler.quantum_left};

  size_t nwarps = 0;
  for (const CoreState& core : ctx.cores) nwarps += core.warps.size();
  rec->warps.clear();
  rec->warps.reserve(nwarps);
  for (uint32_t c = 0; c < ctx.cores.size(); ++c)
    for (uint32_t s = 0; s < ctx.cores[c].warps.size(); ++s)
      rec->warps.push_back(warp_to_record(c, s, ctx.cores[c].warps[s]));

  std::set<ck::PageHash> have;
  for (const ck::PageData& p : *blobs) have.insert(p.hash);
  rec->cores.clear();
  rec->cores.reserve(ctx.cores.size());
  for (const CoreState& core : ctx.cores) {
    ck::CoreRecord r;
    if (!core.local_mem.empty()) {
      r.local_mem = ck::BlobRef{uint32_t(core.local_mem.size()), ck::hash_page(core.local_mem)};
      if (have.insert(r.local_mem.hash).second) blobs->push_back(ck::PageData{r.local_mem.hash, core.local_mem});
    }
    r.barriers.reserve(core.barriers.size());
    for (const BarrierState& b : core.barriers) r.barriers.push_back(ck::BarrierRecord{b.count, b.phase});
    r.slot_warps = core.slot_warps;
    r.lmem_next_slot = core.lmem_next_slot;
    r.instret = core.instret;
    r.global_arrived = core.global_arrived;
    rec->cores.push_back(std::move(r));
  }

  rec->launch = launch_to_record(ctx.launch);
  rec->global_barriers.clear();
  rec->global_barriers.reserve(ctx.global_barriers.size());
  for (const GlobalBarrierState& g : ctx.global_barriers)
    rec->global_barriers.push_back(ck::GlobalBarrierRecord{g.cores_arrived, g.phase});
  rec->global_expected = ctx.global_expected;
  rec->kernel_instructions = ctx.kernel_instructions;
  rec->kernel_lane_instructions = ctx.kernel_lane_instructions;
  rec->drain_countdown = ctx.drain_countdown;
}

Result<DeviceContext> record_to_context(const ck::CheckpointRecord& rec, const DeviceConfig& cfg,
                                        const BlobReader& read_blob) {
  const uint32_t ncores = cfg.total_cores(), nw = cfg.warps, nt = cfg.threads;
  const uint32_t nbarriers = nw * memmap::kNumBarriersPerCta;
  const size_t nglobal = rec.global_barriers.size();
  auto misfit = [&](const std::string& what) {
    return make_error("the checkpoint record does not fit the device (" + to_config_record(cfg).to_string() +
                      "): " + what);
  };

  if (rec.cores.size() != ncores)
    return misfit("it holds " + to_string(rec.cores.size()) + " cores, the device has " + to_string(ncores));
  if (rec.warps.size() != size_t(ncores) * nw)
    return misfit("it holds " + to_string(rec.warps.size()) + " warp slots, not " + to_string(size_t(ncores) * nw) +
                  " (every slot of " + to_string(ncores) + " cores x " + to_string(nw) + " warps)");
  const auto& sc = rec.scheduler;
  if (sc.current_warp.size() != ncores || sc.quantum_left.size() != ncores)
    return misfit("the scheduler has " + to_string(sc.current_warp.size()) + " current warps and " +
                  to_string(sc.quantum_left.size()) + " quanta, not one per core");
  for (uint32_t c = 0; c < ncores; ++c)
    if (sc.current_warp[c] < -1 || sc.current_warp[c] >= int64_t(nw))
      return misfit("the scheduler's current warp of core " + to_string(c) + " is " + to_string(sc.current_warp[c]) +
                    ", not -1.." + to_string(int64_t(nw) - 1));
  if (rec.global_expected.size() != nglobal)
    return misfit(to_string(rec.global_expected.size()) + " global barrier expectations for " + to_string(nglobal) +
                  " global barriers" +
                  (rec.global_expected.empty() ? " (a record written before they were stored)" : ""));
  auto kind = launch_kind_from_record(rec.launch.kind);
  if (!kind) return misfit("unknown launch kind " + to_string(int(rec.launch.kind)));

  DeviceContext ctx;
  ctx.launch = launch_from_record(rec.launch, *kind);
  ctx.scheduler = SchedulerState{sc.rng, sc.core_cursor, sc.current_warp, sc.quantum_left};
  ctx.cores.resize(ncores);
  for (uint32_t c = 0; c < ncores; ++c) {
    CoreState& core = ctx.cores[c];
    core.warps.resize(nw);
    for (uint32_t s = 0; s < nw; ++s) {
      const ck::WarpRecord& w = rec.warps[size_t(c) * nw + s];
      if (w.core != c || w.slot != s)
        return misfit("warp record " + to_string(size_t(c) * nw + s) + " is core " + to_string(w.core) + " slot " +
                      to_string(w.slot) + " where core " + to_string(c) + " slot " + to_string(s) +
                      " belongs (every warp slot, in (core, slot) order)");
      if (auto e = warp_from_record(w, nt, &core.warps[s]))
        return misfit("warp (core " + to_string(c) + ", slot " + to_string(s) + ") has " + *e);
    }

    const ck::CoreRecord& r = rec.cores[c];
    const std::string at = "core " + to_string(c);
    if (r.barriers.size() != nbarriers)
      return misfit(at + " has " + to_string(r.barriers.size()) + " barriers, not " + to_string(nbarriers) + " (" +
                    to_string(nw) + " CTA slots x " + to_string(memmap::kNumBarriersPerCta) + ")");
    if (r.slot_warps.size() != nw)
      return misfit(at + " has " + to_string(r.slot_warps.size()) + " local-memory slot counts, not " + to_string(nw));
    if (r.global_arrived.size() != nglobal)
      return misfit(at + " has " + to_string(r.global_arrived.size()) + " global barrier arrival counts for " +
                    to_string(nglobal) + " global barriers");
    if (r.local_mem.size != cfg.local_mem_bytes)
      return misfit(at + " local memory is " +
                    (r.local_mem.size ? to_string(r.local_mem.size) + " bytes" : std::string("not saved")) + ", not " +
                    to_string(cfg.local_mem_bytes) + " bytes");
    if (r.local_mem.size) {
      const std::string blob = at + " local memory (blob " + r.local_mem.hash.to_string() + ")";
      if (!read_blob) return make_error("cannot read " + blob + ": no blob reader was given");
      auto bytes = read_blob(r.local_mem.hash);
      if (!bytes) return make_error("cannot read " + blob + ": " + bytes.error().message);
      if (bytes->size() != r.local_mem.size)
        return make_error(blob + " reads back as " + to_string(bytes->size()) + " bytes, not " +
                          to_string(r.local_mem.size));
      if (ck::hash_page(*bytes) != r.local_mem.hash)
        return make_error(blob + " reads back as bytes that hash to " + ck::hash_page(*bytes).to_string());
      core.local_mem = std::move(*bytes);
    }
    core.barriers.reserve(nbarriers);
    for (const ck::BarrierRecord& b : r.barriers) core.barriers.push_back(BarrierState{b.count, b.phase});
    core.slot_warps = r.slot_warps;
    core.lmem_next_slot = r.lmem_next_slot;
    core.instret = r.instret;
    core.global_arrived = r.global_arrived;
  }

  ctx.global_barriers.reserve(nglobal);
  for (const ck::GlobalBarrierRecord& g : rec.global_barriers)
    ctx.global_barriers.push_back(GlobalBarrierState{g.cores_arrived, g.phase});
  ctx.global_expected = rec.global_expected;
  ctx.kernel_instructions = rec.kernel_instructions;
  ctx.kernel_lane_instructions = rec.kernel_lane_instructions;
  ctx.drain_countdown = rec.drain_countdown;
  return ctx;
}

}  // namespace vx::engine
