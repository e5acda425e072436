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
// The host may change the device only at the end of the recorded history (not after a move back).
Result<void> Session::Impl::at_frontier(const char* what) const {
  if (cursor < applied)
    return make_error(std::string(what) +
                      ": the session is back in time; the host cannot change the device until it "
                      "is at the end of its history again");
  return {};
}

// A host memory operation applied now: it goes before the pieces still queued.
void Session::Impl::insert_applied(PlanEntry e) {
  plan.insert(plan.begin() + std::ptrdiff_t(cursor), std::move(e));
  record(plan[cursor]);
  if (!store) drop(plan[cursor]);  // nothing can go back to it
  ++cursor;
  applied = cursor;
}

void Session::Impl::drop(PlanEntry& e) {
  if (e.kind != checkpoint::HostOpKind::Copy && e.kind != checkpoint::HostOpKind::Submit) return;
  std::vector<uint8_t>().swap(e.data);
  std::vector<Command>().swap(e.seg.commands);
  e.resident = false;
}

// Brings a recorded entry's data back from the store (a move back in time applies it again).
Result<void> Session::Impl::make_resident(PlanEntry& e) {
  if (e.resident) return {};
  if (!store || e.blobs.empty())
    return make_error(ErrorCode::Internal, "internal error: a host operation's data is neither kept nor recorded");
  std::vector<uint8_t> bytes;
  for (const checkpoint::PageHash& h : e.blobs) {
    // Not written yet (it goes with the next checkpoint), or in the store.
    auto pending = std::find_if(unrecorded_blobs.begin(), unrecorded_blobs.end(),
                                [&](const checkpoint::PageData& p) { return p.hash == h; });
    if (pending != unrecorded_blobs.end()) {
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
    auto pieces = split(bytes);
    if (!pieces || pieces->size() != 1)
      return make_error("a recorded command buffer is not one piece this build accepts" +
                        (pieces ? std::string() : ": " + pieces.error().message));
    e.seg.commands = std::move(pieces->front().commands);
  }
  e.resident = true;
  return {};
}

Result<uint32_t> Session::Impl::host_alloc(uint64_t size) {
  if (auto r = at_frontier("mem_alloc"); !r) return r.error();
  auto r = dev.mem_alloc(size);
  if (!r) return r;
  regions[*r] = (size + kPageSize - 1) & ~uint64_t(kPageSize - 1);
  insert_applied(PlanEntry{checkpoint::HostOpKind::Alloc, *r, size, {}, {}});
  return r;
}

Result<void> Session::Impl::host_reserve(uint32_t addr, uint64_t size) {
  if (auto r = at_frontier("mem_reserve"); !r) return r.error();
  auto r = dev.mem_reserve(addr, size);
  if (!r) return r;
  regions[addr] = size;
  insert_applied(PlanEntry{checkpoint::HostOpKind::Reserve, addr, size, {}, {}});
  return r;
}

Result<void> Session::Impl::host_free(uint32_t addr) {
  if (auto r = at_frontier("mem_free"); !r) return r.error();
  auto r = dev.mem_free(addr);
  if (!r) return r;
  regions.erase(addr);
  insert_applied(PlanEntry{checkpoint::HostOpKind::Free, addr, 0, {}, {}});
  return r;
}

Result<void> Session::Impl::host_copy(uint32_t addr, std::span<const uint8_t> bytes) {
  if (auto r = at_frontier("copy_to_device"); !r) return r.error();
  auto r = dev.copy_to_device(addr, bytes);
  if (!r) return r;
  replant(addr, bytes.size());
  insert_applied(PlanEntry{checkpoint::HostOpKind::Copy, addr, bytes.size(), {bytes.begin(), bytes.end()}, {}});
  return r;
}

Result<uint64_t> Session::Impl::accept(std::span<const uint8_t> bytes) {
  if (auto r = at_frontier("submit"); !r) return r.error();
  if (phase == Phase::Exited) phase = Phase::Idle;  // the host goes on: more work
  auto pieces = split(bytes);
  if (!pieces) return pieces.error();
  for (Segment& seg : *pieces) {
    PlanEntry e;
    e.kind = checkpoint::HostOpKind::Submit;
    e.seg = std::move(seg);
    plan.push_back(std::move(e));
  }
  return ++host_submissions;
}

Result<std::vector<Segment>> Session::Impl::split(std::span<const uint8_t> bytes) {
  auto list = decode_command_buffer(bytes);
  if (!list) return list.error();
  std::vector<Segment> out;
  Segment seg;
  for (const Command& c : list->commands) {
    if (c.op == CmdOp::Finish) break;
    if (c.op == CmdOp::RunInstances || c.op == CmdOp::RunKernelSlice)
      return make_error("vxreplay debugs grid launches (LAUNCH_GRID); " + cmd_op_name(c.op) + " at byte offset " +
                        std::to_string(c.offset) + " is not supported under the debugger yet");
    seg.commands.push_back(c);
    if (c.op == CmdOp::LaunchGrid) {
      seg.launches = true;
      out.push_back(std::move(seg));
      seg = Segment{};
    }
  }
  if (!seg.commands.empty()) out.push_back(std::move(seg));
  return out;
}

// The LAUNCH_GRID fields of a piece that launches (its last command).
LaunchGridArgs Session::Impl::grid_args(const Segment& seg) {
  LaunchGridArgs a;
  if (seg.commands.empty() || seg.commands.back().op != CmdOp::LaunchGrid) return a;
  const Command& c = seg.commands.back();
  auto lo = [&](size_t i) { return i < c.payload.size() ? uint32_t(c.payload[i]) : 0u; };
  auto hi = [&](size_t i) { return i < c.payload.size() ? uint32_t(c.payload[i] >> 32) : 0u; };
  a.entry_pc = c.inline_value;
  a.start_pc = lo(0);
  a.arg_ptr = hi(0);
  a.grid = {lo(1), hi(1), lo(2)};
  a.block = {hi(2), lo(3), hi(3)};
  a.lmem_bytes = lo(4);
  a.cluster = {hi(4), lo(5), hi(5)};
  return a;
}

void Session::Impl::drop_pending() {
  // The host dropped what it queued: pieces not applied yet go.
  while (plan.size() > cursor && plan.back().kind == checkpoint::HostOpKind::Submit && plan.size() - 1 >= applied)
    plan.pop_back();
}

Result<void> Session::Impl::load_recording() {
  if (!store) return make_error("replay needs a recording (a checkpoint store)");
  // Damage anywhere is refused now, before anything is replayed from it (docs/store.md).
  if (auto r = store->check_values(); !r) return r.error();
  auto ops = store->ops();
  if (!ops) return ops.error();
  using K = checkpoint::HostOpKind;
  std::map<size_t, size_t> symbols_before;  // plan index of a submission -> Symbols operations before it
  size_t symbols_seen = 0;
  for (size_t i = 0; i < ops->size(); ++i) {
    const checkpoint::HostOpRecord& op = (*ops)[i];
    const std::string what = "host operation " + std::to_string(i) + " (" + checkpoint::host_op_name(op.kind) + ")";
    PlanEntry e;
    e.kind = op.kind;
    e.addr = uint32_t(op.addr);
    e.size = op.size;
    if (op.kind == K::Submit) symbols_before[plan.size()] = symbols_seen;
    switch (op.kind) {
      case K::Symbols: ++symbols_seen; continue;
      case K::HostEnd: host_done = true; continue;
      case K::Copy:
        // Read when it is applied.
        e.blobs = {op.data.hash};
        e.resident = false;
        break;
      case K::Submit: {
        auto bytes = store->read_page(op.data.hash);
        if (!bytes) return make_error(what + ": " + bytes.error().message);
        auto pieces = split(*bytes);
        if (!pieces) return make_error(what + " is not a command buffer this build accepts: " + pieces.error().message);
        if (pieces->size() != 1)
          return make_error(what + " holds " + std::to_string(pieces->size()) + " pieces, not one");
        e.seg = std::move(pieces->front());
        e.blobs = {op.data.hash};
        break;
      }
      default: break;
    }
    plan.push_back(std::move(e));
  }
  // Where each launch begins, and the registers it runs with: a seek into launch L starts there.
  std::map<uint32_t, uint64_t> regs;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (plan[i].kind != K::Submit) continue;
    for (const Command& c : plan[i].seg.commands)
      if (c.op == CmdOp::WriteReg64) regs[c.inline_value] = c.payload.at(0);
    if (plan[i].seg.launches) {
      launch_entry.push_back(i);
      launch_regs.push_back(regs);
      launch_grid.push_back(grid_args(plan[i].seg));
      launch_symbols.push_back(symbols_before[i]);
    }
    drop(plan[i]);
  }
  return {};
}

// A replay seeking into launch L for the first time: the host's memory operations before it
// (allocations above all) are applied; the launches before it are not run (the checkpoint holds
// their effects).
Result<void> Session::Impl::prepare_launch(uint32_t L) {
  const size_t upto = launch_entry[L - 1];
  for (size_t i = applied; i < upto; ++i)
    if (plan[i].kind != checkpoint::HostOpKind::Submit)
      if (auto r = apply_memory_entry(plan[i], true); !r) return r;
  applied = std::max(applied, upto + 1);
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
          return make_error("replaying the recording: alloc of " + std::to_string(e.size) + " bytes gave " + hex(*r) +
                            ", the recording has " + hex(e.addr) + " (the recording does not match this device)");
        regions[e.addr] = (e.size + kPageSize - 1) & ~uint64_t(kPageSize - 1);
      }
      return {};
    case K::Reserve:
      if (first) {
        if (auto r = dev.mem_reserve(e.addr, e.size); !r)
          return make_error("replaying the recording: " + r.error().message);
        regions[e.addr] = e.size;
      }
      return {};
    case K::Free:
      if (first) {
        if (auto r = dev.mem_free(e.addr); !r) return make_error("replaying the recording: " + r.error().message);
        regions.erase(e.addr);
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
      replant(e.addr, e.data.size());
      return {};
    default: return {};
  }
}

bool Session::Impl::in_regions(uint32_t page) const {
  uint64_t a = uint64_t(page) * kPageSize;
  if (a < memmap::kIoEnd) return true;
  uint64_t stack_lo = memmap::kStackBase - uint64_t(dev.config().total_harts()) * memmap::kStackPerHart;
  if (a >= stack_lo && a < memmap::kStackBase) return true;
  auto it = regions.upper_bound(uint32_t(a + kPageSize - 1));
  if (it == regions.begin()) return false;
  --it;
  return a < uint64_t(it->first) + it->second;
}

Result<void> Session::Impl::reserve_engine_area() {
  const DeviceConfig& cfg = dev.config();
  if (cfg.local_mem_bytes % (4 * cfg.threads) != 0) return {};  // reported when a re-launch is needed
  std::vector<uint32_t> code = entry_routine_code();
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
    return make_error("re-launch needs local memory in whole rounds of 4 x NT bytes");
  return make_error("the engine's device memory could not be reserved at " + hex(kEngineArea));
}

Result<void> Session::Impl::reissue_registers() {
  if (cmp_registers.empty()) return {};
  CommandBufferBuilder b;
  for (const auto& [reg, value] : cmp_registers) b.write_reg64(reg, value);
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
  while (cursor < plan.size()) {
    PlanEntry& e = plan[cursor];
    const bool first = cursor >= applied;
    if (e.kind != checkpoint::HostOpKind::Submit) {
      if (auto r = apply_memory_entry(e, first); !r) return r.error();
      if (first) record(e);
      if (!store || !e.blobs.empty()) drop(e);
      ++cursor;
      applied = std::max(applied, cursor);
      continue;
    }
    if (auto r = make_resident(e); !r) return r.error();
    const LaunchGridArgs piece_launch = grid_args(e.seg);
    for (const Command& c : e.seg.commands)
      if (c.op == CmdOp::WriteReg64) cmp_registers[c.inline_value] = c.payload.at(0);
    // Breakpoints set before the memory they name was mapped (add_breakpoint) go in now.
    if (!quiet) plant_pending();
    auto id = dev.submit(encode(e.seg.commands));
    if (!id) return make_error(ErrorCode::Input, "the device rejected a command buffer: " + id.error().message);
    if (first) record(e);
    if (!store || !e.blobs.empty()) drop(e);  // recorded (or nothing can go back to it)
    const size_t index = cursor++;
    applied = std::max(applied, cursor);
    if (e.seg.launches) {
      ++launch;
      if (launch_entry.size() < launch) {
        launch_entry.push_back(index);
        launch_regs.push_back(cmp_registers);
        launch_grid.push_back(piece_launch);
      }
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
