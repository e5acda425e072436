#include "engine/plan.hpp"

#include <algorithm>
#include "device/cmdbuf_builder.hpp"

namespace vx::engine {

std::vector<uint8_t> encode(const std::vector<Command>& commands) {
  CommandBufferBuilder b;
  for (const Command& c : commands) b.packet(c.op, c.inline_value, std::span<const uint64_t>(c.payload));
  b.finish();
  return b.bytes();
}

Result<std::vector<Segment>> WorkloadPlan::split(std::span<const uint8_t> bytes) {
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

LaunchGridArgs WorkloadPlan::grid_args(const Segment& seg) {
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

void WorkloadPlan::drop(PlanEntry& e) {
  if (e.kind != checkpoint::HostOpKind::Copy && e.kind != checkpoint::HostOpKind::Submit) return;
  std::vector<uint8_t>().swap(e.data);
  std::vector<Command>().swap(e.seg.commands);
  e.resident = false;
}

// --- Entries and the cursor --------------------------------------------------------------------
size_t WorkloadPlan::advance() {
  const size_t index = cursor_++;
  applied_ = std::max(applied_, cursor_);
  return index;
}

Result<void> WorkloadPlan::at_frontier(const char* what) const {
  if (cursor_ < applied_)
    return make_error(std::string(what) +
                      ": the session is back in time; the host cannot change the device until it "
                      "is at the end of its history again");
  return {};
}

PlanEntry& WorkloadPlan::insert_applied(PlanEntry e) {
  auto it = entries_.insert(entries_.begin() + std::ptrdiff_t(cursor_), std::move(e));
  ++cursor_;
  applied_ = cursor_;
  return *it;
}

uint64_t WorkloadPlan::queue(std::vector<Segment> pieces) {
  for (Segment& seg : pieces) {
    PlanEntry e;
    e.kind = checkpoint::HostOpKind::Submit;
    e.seg = std::move(seg);
    entries_.push_back(std::move(e));
  }
  return ++submissions_;
}

void WorkloadPlan::drop_pending() {
  while (entries_.size() > cursor_ && entries_.back().kind == checkpoint::HostOpKind::Submit &&
         entries_.size() - 1 >= applied_)
    entries_.pop_back();
}

void WorkloadPlan::drop_recorded() {
  const size_t end = std::min(cursor_, entries_.size());
  for (size_t i = resident_from_; i < end; ++i)
    if (entries_[i].resident && !entries_[i].blobs.empty()) drop(entries_[i]);
  resident_from_ = std::max(resident_from_, end);
}

void WorkloadPlan::made_resident(const PlanEntry& e) {
  if (!entries_.empty() && &e >= entries_.data() && &e < entries_.data() + entries_.size())
    resident_from_ = std::min(resident_from_, size_t(&e - entries_.data()));
}

// --- Launches ----------------------------------------------------------------------------------
void WorkloadPlan::note_registers(const Segment& seg) {
  for (const Command& c : seg.commands)
    if (c.op == CmdOp::WriteReg64) registers_[c.inline_value] = c.payload.at(0);
}

void WorkloadPlan::note_launch(uint32_t launch, size_t index, const LaunchGridArgs& grid) {
  if (launches_.size() >= launch) return;
  launches_.push_back(LaunchStart{index, registers_, grid, 0});
}

std::vector<LaunchGridArgs> WorkloadPlan::grids() const {
  std::vector<LaunchGridArgs> out;
  for (const LaunchStart& l : launches_) out.push_back(l.grid);
  return out;
}

std::vector<size_t> WorkloadPlan::images() const {
  std::vector<size_t> out;
  if (!loaded_) return out;
  for (const LaunchStart& l : launches_) out.push_back(l.images);
  return out;
}

void WorkloadPlan::rewind_to(uint32_t L) {
  const LaunchStart& l = launch(L);
  cursor_ = l.entry + 1;
  registers_ = l.registers;
}

std::vector<PlanEntry*> WorkloadPlan::unapplied_before(uint32_t L) {
  const size_t upto = launch(L).entry;
  std::vector<PlanEntry*> out;
  for (size_t i = applied_; i < upto; ++i)
    if (entries_[i].kind != checkpoint::HostOpKind::Submit) out.push_back(&entries_[i]);
  applied_ = std::max(applied_, upto + 1);
  return out;
}

// --- The host's memory ---------------------------------------------------------------------
bool WorkloadPlan::in_regions(uint32_t page, const DeviceConfig& cfg) const {
  const uint64_t a = uint64_t(page) * checkpoint::kPageSize;
  if (a < memmap::kIoEnd) return true;
  const uint64_t stack_lo = memmap::kStackBase - uint64_t(cfg.total_harts()) * memmap::kStackPerHart;
  if (a >= stack_lo && a < memmap::kStackBase) return true;
  auto it = regions_.upper_bound(uint32_t(a + checkpoint::kPageSize - 1));
  if (it == regions_.begin()) return false;
  --it;
  return a < uint64_t(it->first) + it->second;
}

// --- A recording's plan ------------------------------------------------------------------------
Result<void> WorkloadPlan::load(const std::vector<checkpoint::HostOpRecord>& ops,
                                const std::function<Result<std::vector<uint8_t>>(const checkpoint::PageHash&)>& read) {
  using K = checkpoint::HostOpKind;
  std::map<size_t, size_t> images_before;  // plan index of a submission -> Symbols operations before it
  size_t images_seen = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const checkpoint::HostOpRecord& op = ops[i];
    const std::string what = "host operation " + std::to_string(i) + " (" + checkpoint::host_op_name(op.kind) + ")";
    PlanEntry e;
    e.kind = op.kind;
    e.addr = uint32_t(op.addr);
    e.size = op.size;
    if (op.kind == K::Submit) images_before[entries_.size()] = images_seen;
    switch (op.kind) {
      case K::Symbols: ++images_seen; continue;
      case K::HostEnd: host_done_ = true; continue;
      case K::Timeline: continue;
      case K::Copy:
        // Read when it is applied.
        e.blobs = {op.data.hash};
        e.resident = false;
        break;
      case K::Submit: {
        auto bytes = read(op.data.hash);
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
    entries_.push_back(std::move(e));
  }
  // Where each launch begins, and the registers it runs with: a seek into launch L starts there.
  loaded_ = true;
  std::map<uint32_t, uint64_t> regs;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].kind != K::Submit) continue;
    for (const Command& c : entries_[i].seg.commands)
      if (c.op == CmdOp::WriteReg64) regs[c.inline_value] = c.payload.at(0);
    if (entries_[i].seg.launches)
      launches_.push_back(LaunchStart{i, regs, grid_args(entries_[i].seg), images_before[i]});
    drop(entries_[i]);
  }
  return {};
}

}  // namespace vx::engine
