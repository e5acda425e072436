#include "engine/session_live.hpp"

namespace vx::engine {

// Device memory for checkpoints: through the Debug Module while a live launch is held (at a stop,
// and at an automatic checkpoint, for which every warp is halted too).
Result<void> Session::Impl::read_device(uint32_t addr, std::span<uint8_t> bytes) {
  if (auto r = runner->read_held(addr, uint32_t(bytes.size()), std::nullopt)) {
    if (!*r) return r->error();
    std::copy((*r)->begin(), (*r)->end(), bytes.begin());
    return {};
  }
  return dev.copy_from_device(addr, bytes);
}

Result<void> Session::Impl::read_page(uint32_t page, std::span<uint8_t> bytes) {
  const uint32_t skip = page_skip(page);
  std::fill(bytes.begin(), bytes.begin() + skip, uint8_t(0));
  return read_device(page * kPageSize + skip, bytes.subspan(skip));
}

// --- Host side ------------------------------------------------------------------------
// A host memory operation applied now: recorded, and dropped when nothing can go back to it.
void Session::Impl::insert_applied(PlanEntry e) {
  PlanEntry& in = plan.insert_applied(std::move(e));
  record(in);
  if (!store) WorkloadPlan::drop(in);
}

// Brings a recorded entry's data back from the store (a move back in time applies it again).
Result<void> Session::Impl::make_resident(PlanEntry& e) {
  if (e.resident) return {};
  if (!store || e.blobs.empty())
    return make_error(ErrorCode::Internal, "internal error: a host operation's data is neither kept nor recorded");
  std::vector<uint8_t> bytes;
  for (const checkpoint::PageHash& h : e.blobs) {
    // Not written yet (it goes with the next checkpoint), or in the store.
    if (const checkpoint::PageData* pending = recorder.queued_blob(h)) {
      bytes.insert(bytes.end(), pending->bytes.begin(), pending->bytes.end());
      continue;
    }
    auto b = store->read_page(h);
    if (!b) return make_error("reading a recorded host operation: " + b.error().message);
    bytes.insert(bytes.end(), b->begin(), b->end());
  }
  if (e.kind == checkpoint::HostOpKind::Copy) {
    e.data = std::move(bytes);
  } else {
    auto pieces = WorkloadPlan::split(bytes);
    if (!pieces || pieces->size() != 1)
      return make_error("a recorded command buffer is not one piece this build accepts" +
                        (pieces ? std::string() : ": " + pieces.error().message));
    e.seg.commands = std::move(pieces->front().commands);
  }
  e.resident = true;
  plan.made_resident(e);
  return {};
}

Result<uint32_t> Session::Impl::host_alloc(uint64_t size) {
  if (auto r = plan.at_frontier("mem_alloc"); !r) return r.error();
  auto r = dev.mem_alloc(size);
  if (!r) return r;
  plan.add_region(*r, (size + kPageSize - 1) & ~uint64_t(kPageSize - 1));
  insert_applied(PlanEntry{checkpoint::HostOpKind::Alloc, *r, size, {}, {}});
  return r;
}

Result<void> Session::Impl::host_reserve(uint32_t addr, uint64_t size) {
  if (auto r = plan.at_frontier("mem_reserve"); !r) return r.error();
  auto r = dev.mem_reserve(addr, size);
  if (!r) return r;
  plan.add_region(addr, size);
  insert_applied(PlanEntry{checkpoint::HostOpKind::Reserve, addr, size, {}, {}});
  return r;
}

Result<void> Session::Impl::host_free(uint32_t addr) {
  if (auto r = plan.at_frontier("mem_free"); !r) return r.error();
  auto r = dev.mem_free(addr);
  if (!r) return r;
  plan.remove_region(addr);
  insert_applied(PlanEntry{checkpoint::HostOpKind::Free, addr, 0, {}, {}});
  return r;
}

Result<void> Session::Impl::host_copy(uint32_t addr, std::span<const uint8_t> bytes) {
  if (auto r = plan.at_frontier("copy_to_device"); !r) return r.error();
  auto r = dev.copy_to_device(addr, bytes);
  if (!r) return r;
  traps.replant(addr, bytes.size());
  recorder.host_copied(bytes.size());
  insert_applied(PlanEntry{checkpoint::HostOpKind::Copy, addr, bytes.size(), {bytes.begin(), bytes.end()}, {}});
  return r;
}

Result<uint64_t> Session::Impl::accept(std::span<const uint8_t> bytes) {
  if (auto r = plan.at_frontier("submit"); !r) return r.error();
  if (phase == Phase::Exited) phase = Phase::Idle;  // the host goes on: more work
  auto pieces = WorkloadPlan::split(bytes);
  if (!pieces) return pieces.error();
  return plan.queue(std::move(*pieces));
}

Result<void> Session::Impl::load_recording() {
  if (!store) return make_error("replay needs a recording (a checkpoint store)");
  // Damage anywhere is refused now, before anything is replayed from it (docs/store.md).
  if (auto r = store->check_values(); !r) return r.error();
  auto ops = store->ops();
  if (!ops) return ops.error();
  return plan.load(*ops, [&](const checkpoint::PageHash& h) { return store->read_page(h); });
}

// A replay seeking into launch L for the first time: the host's memory operations before it
// (allocations above all) are applied; the launches before it are not run (the checkpoint holds
// their effects).
Result<void> Session::Impl::prepare_launch(uint32_t L) {
  for (PlanEntry* e : plan.unapplied_before(L))
    if (auto r = apply_memory_entry(*e, true); !r) return r;
  return {};
}

// Applies plan entry `cursor` (not a piece: those are submitted by run()).
Result<void> Session::Impl::apply_memory_entry(PlanEntry& e, bool first) {
  using K = checkpoint::HostOpKind;
  if (e.kind == K::Copy)
    if (auto r = make_resident(e); !r) return r;
  switch (e.kind) {
    case K::Alloc:
      if (first) {
        auto r = dev.mem_alloc(e.size);
        if (!r)
          return make_error("replaying the recording: alloc of " + std::to_string(e.size) +
                            " bytes failed: " + r.error().message);
        if (*r != e.addr)
          return make_error("replaying the recording: alloc of " + std::to_string(e.size) + " bytes gave " + hex32(*r) +
                            ", the recording has " + hex32(e.addr) + " (the recording does not match this device)");
        plan.add_region(e.addr, (e.size + kPageSize - 1) & ~uint64_t(kPageSize - 1));
      }
      return {};
    case K::Reserve:
      if (first) {
        if (auto r = dev.mem_reserve(e.addr, e.size); !r)
          return make_error("replaying the recording: " + r.error().message);
        plan.add_region(e.addr, e.size);
      }
      return {};
    case K::Free:
      if (first) {
        if (auto r = dev.mem_free(e.addr); !r) return make_error("replaying the recording: " + r.error().message);
        plan.remove_region(e.addr);
      }
      return {};
    case K::Copy:
      if (auto r = dev.copy_to_device(e.addr, e.data); !r) {
        // A region freed later in the history than this point: map it again.
        if (auto m = dev.mem_reserve(
                e.addr & ~(kPageSize - 1),
                ((e.addr & (kPageSize - 1)) + e.data.size() + kPageSize - 1) & ~uint64_t(kPageSize - 1));
            !m)
          return make_error("replaying the recording: " + r.error().message);
        if (auto r2 = dev.copy_to_device(e.addr, e.data); !r2)
          return make_error("replaying the recording: " + r2.error().message);
      }
      traps.replant(e.addr, e.data.size());
      recorder.host_copied(e.data.size());
      return {};
    default: return {};
  }
}

Result<void> Session::Impl::reserve_engine_area() {
  const DeviceConfig& cfg = dev.config();
  if (cfg.local_mem_bytes % (4 * cfg.threads) != 0) return {};  // reported when a re-launch is needed
  std::vector<uint32_t> code = entry_routine_code(cfg.threads);
  const uint64_t code_bytes = (code.size() * 4 + kPageSize - 1) & ~uint64_t(kPageSize - 1);
  const uint64_t rec_bytes =
      (uint64_t(cfg.total_cores()) * cfg.warps * routine::record_bytes(cfg.threads) + kPageSize - 1) &
      ~uint64_t(kPageSize - 1);
  const uint64_t lmem_bytes = std::max<uint64_t>(kPageSize, uint64_t(cfg.total_cores()) * cfg.local_mem_bytes);
  const uint64_t total = code_bytes + rec_bytes + lmem_bytes;
  if (auto r = dev.mem_reserve(kEngineArea, total); !r) return r.error();
  if (auto r = dev.copy_to_device(kEngineArea, {reinterpret_cast<const uint8_t*>(code.data()), code.size() * 4}); !r)
    return r.error();
  routine_addr = kEngineArea;
  records_addr = uint32_t(kEngineArea + code_bytes);
  lmem_addr = uint32_t(kEngineArea + code_bytes + rec_bytes);
  return {};
}

Result<void> Session::Impl::ensure_routine() {
  if (routine_addr) return {};
  const DeviceConfig& cfg = dev.config();
  if (cfg.local_mem_bytes % (4 * cfg.threads) != 0)
    return make_error("re-launch needs local memory in whole words per lane (a multiple of 4 x NT bytes)");
  return make_error("the engine's device memory could not be reserved at " + hex32(kEngineArea));
}

Result<void> Session::Impl::reissue_registers() {
  if (plan.registers().empty()) return {};
  CommandBufferBuilder b;
  for (const auto& [reg, value] : plan.registers()) b.write_reg64(reg, value);
  b.finish();
  auto id = dev.submit(b.bytes());
  if (!id) return id.error();
  DeviceEvent ev = dev.wait();
  if (ev.kind != EventKind::Completed) return make_error("re-issuing the launch's registers failed: " + ev.message);
  return {};
}

// Submits the next piece of the plan (applying the host's memory operations before it). Returns
// false when the plan is exhausted.
Result<bool> Session::Impl::start_next_piece() {
  while (PlanEntry* next = plan.next()) {
    PlanEntry& e = *next;
    const bool first = plan.first_time();
    if (e.kind != checkpoint::HostOpKind::Submit) {
      if (auto r = apply_memory_entry(e, first); !r) return r.error();
      if (first) record(e);
      if (!store || !e.blobs.empty()) WorkloadPlan::drop(e);
      plan.advance();
      continue;
    }
    if (auto r = make_resident(e); !r) return r.error();
    const LaunchGridArgs piece_launch = WorkloadPlan::grid_args(e.seg);
    plan.note_registers(e.seg);
    // Breakpoints set before the memory they name was mapped (add_breakpoint) go in now.
    if (!quiet) traps.plant_pending();
    const std::vector<uint8_t> commands = encode(e.seg.commands);
    auto id = dev.submit(commands);
    if (!id) return make_error(ErrorCode::Input, "the device rejected a command buffer: " + id.error().message);
    if (first) record(e, commands);
    if (!store || !e.blobs.empty()) WorkloadPlan::drop(e);  // recorded (or nothing can go back to it)
    const size_t index = plan.advance();
    if (e.seg.launches) {
      ++launch;
      plan.note_launch(launch, index, piece_launch);
      pass = 0;
      console_log.clear();
      fatal = false;
      begin_pass(0);
    }
    phase = Phase::Running;
    return true;
  }
  return false;
}

}  // namespace vx::engine
