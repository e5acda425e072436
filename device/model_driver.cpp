// The driver over the in-process model: memory management, the submission
// queue and the command processor in front of the Machine.
#include <cstdio>
#include <deque>
#include <map>

#include "device/cmdproc.hpp"
#include "device/debug_module.hpp"
#include "device/driver.hpp"
#include "device/machine.hpp"
#include "device/model_view.hpp"

namespace vx {

const char* event_kind_name(EventKind k) {
  switch (k) {
    case EventKind::Idle: return "idle";
    case EventKind::Completed: return "completed";
    case EventKind::Exception: return "exception";
    case EventKind::Budget: return "budget";
    case EventKind::CommandError: return "command error";
    case EventKind::Halted: return "halted";
    case EventKind::Trigger: return "trigger";
    case EventKind::Drained: return "drained";
    case EventKind::Watch: return "watch";
  }
  return "unknown";
}

namespace {

std::string hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

class ModelDevice final : public Driver {
 public:
  ModelDevice(const DeviceConfig& cfg, const RunOptions& opts)
      : m_(cfg, opts), cp_(m_), dm_(m_), has_dm_(opts.debug_module) {
    uint64_t stack_bytes = uint64_t(cfg.total_harts()) * memmap::kStackPerHart;
    reserved_floor_ = memmap::kStackBase - stack_bytes;
  }

  const DeviceConfig& config() const override { return m_.config(); }

  Result<uint32_t> mem_alloc(uint64_t size) override {
    if (size == 0) return make_error("mem_alloc: size must be at least 1 byte");
    uint64_t bytes = (size + Memory::kPageSize - 1) & ~uint64_t(Memory::kPageSize - 1);
    uint64_t candidate = memmap::kAllocBase;
    for (const auto& [addr, len] : regions_) {
      if (candidate + bytes <= addr) break;
      candidate = std::max<uint64_t>(candidate,
                                     (uint64_t(addr) + len + Memory::kPageSize - 1) & ~uint64_t(Memory::kPageSize - 1));
    }
    if (candidate + bytes > memmap::kStartupAddr)
      return make_error("mem_alloc: no room for " + std::to_string(size) + " bytes below the kernel image base");
    regions_[uint32_t(candidate)] = bytes;
    allocations_[uint32_t(candidate)] = bytes;
    m_.memory().map(uint32_t(candidate), bytes);
    return uint32_t(candidate);
  }

  Result<void> mem_reserve(uint32_t addr, uint64_t size) override {
    if (size == 0) return make_error("mem_reserve: size must be at least 1 byte");
    uint64_t end = uint64_t(addr) + size;
    if (addr < memmap::kIoEnd)
      return make_error("mem_reserve: " + hex(addr) + " lies in the I/O region (below 0x10000)");
    if (end > reserved_floor_)
      return make_error("mem_reserve: " + hex(addr) + ".." + hex(end) + " overlaps the stacks or local memory (from " +
                        hex(reserved_floor_) + ")");
    for (const auto& [a, len] : regions_)
      if (addr < uint64_t(a) + len && uint64_t(a) < end)
        return make_error("mem_reserve: " + hex(addr) + ".." + hex(end) + " overlaps the region at " + hex(a));
    regions_[addr] = size;
    m_.memory().map(addr, size);
    return {};
  }

  Result<void> mem_free(uint32_t addr) override {
    auto it = allocations_.find(addr);
    if (it == allocations_.end()) {
      // A reserved range (mem_reserve) is released the same way, by its start.
      auto r = regions_.find(addr);
      if (r == regions_.end())
        return make_error("mem_free: " + hex(addr) + " is not the start of an allocation or a reserved range");
      m_.memory().unmap(addr, r->second);
      regions_.erase(r);
      return {};
    }
    m_.memory().unmap(addr, it->second);
    regions_.erase(addr);
    allocations_.erase(it);
    return {};
  }

  Result<void> copy_to_device(uint32_t addr, std::span<const uint8_t> bytes) override {
    if (!m_.memory().write(addr, bytes.data(), bytes.size()))
      return make_error(ErrorCode::Unmapped, "copy to device: " + hex(addr) + ".." +
                                                 hex(uint64_t(addr) + bytes.size()) + " is not mapped device memory");
    return {};
  }

  Result<void> copy_from_device(uint32_t addr, std::span<uint8_t> bytes) override {
    if (!m_.memory().read(addr, bytes.data(), bytes.size()))
      return make_error(ErrorCode::Unmapped, "copy from device: " + hex(addr) + ".." +
                                                 hex(uint64_t(addr) + bytes.size()) + " is not mapped device memory");
    return {};
  }

  Result<uint64_t> submit(std::span<const uint8_t> commands) override {
    auto list = decode_command_buffer(commands);
    if (!list) return list.error();
    auto valid = validate_command_list(*list, m_.memory(), m_.config());
    if (!valid) return valid.error();
    queue_.push_back(Submission{++last_id_, std::move(list).value(), 0});
    return last_id_;
  }

  DeviceEvent wait(uint64_t max_instructions) override {
    if (halted_) return halted_event_;
    const uint64_t start = m_.stats().instructions;
    for (;;) {
      if (queue_.empty()) return DeviceEvent{EventKind::Idle, last_id_, {}, {}};
      Submission& s = queue_.front();
      if (m_.launch_active()) {
        uint64_t used = m_.stats().instructions - start;
        if (used >= max_instructions) return DeviceEvent{EventKind::Budget, s.id, {}, {}};
        RunResult r = m_.run(max_instructions - used);
        if (r.stop == RunStop::Budget) return DeviceEvent{EventKind::Budget, s.id, {}, {}};
        if (r.stop == RunStop::Exception) {
          // The workload is halted, so draining now cannot change its future:
          // what it printed before the stop (an assertion message) is shown.
          m_.drain_console();
          halted_ = true;
          halted_event_ = DeviceEvent{EventKind::Exception, s.id, r.exception, r.message};
          return halted_event_;
        }
        if (r.stop == RunStop::Halted) {
          // As at an exception: what the kernel printed before the halt (an assertion message) is shown.
          m_.drain_console();
          return DeviceEvent{EventKind::Halted, s.id, {}, {}};
        }
        if (r.stop == RunStop::Trigger) return DeviceEvent{EventKind::Trigger, s.id, {}, {}};
        if (r.stop == RunStop::Drained) return DeviceEvent{EventKind::Drained, s.id, {}, {}};
        if (r.stop == RunStop::Watch) return DeviceEvent{EventKind::Watch, s.id, {}, {}};
        continue;  // LaunchDone: the buffer goes on
      }
      std::string error;
      auto status = cp_.advance(s.list, &s.next, &error);
      if (status == CommandProcessor::Status::LaunchStarted) continue;
      uint64_t id = s.id;
      queue_.pop_front();
      if (status == CommandProcessor::Status::Finished) return DeviceEvent{EventKind::Completed, id, {}, {}};
      return DeviceEvent{EventKind::CommandError, id, {}, error};
    }
  }

  void abort() override {
    m_.abort_launch();
    m_.scrub_cores();
    queue_.clear();
    halted_ = false;
  }

  Result<DeviceContext> save_context() override { return m_.save_context(); }

  Result<uint64_t> resume(ResumeRequest request) override {
    if (!queue_.empty() || m_.launch_active())
      return make_error("resume: the device is busy (a launch is in flight or work is queued)");
    if (auto r = m_.start_resume(std::move(request)); !r) return r.error();
    // The launch runs as the first thing of a submission that then finishes.
    CommandList finish;
    finish.commands.push_back(Command{CmdOp::Finish, 0, 0, {}});
    queue_.push_back(Submission{++last_id_, std::move(finish), 0});
    return last_id_;
  }

  std::vector<uint32_t> take_dirty_pages() override {
    std::vector<uint32_t> pages = m_.memory().dirty_pages();
    m_.memory().clear_dirty();
    return pages;
  }

  Result<void> set_warp_trigger(const WarpTrigger& t) override {
    if (t.core >= m_.num_cores() || t.slot >= m_.config().warps)
      return make_error("set_warp_trigger: core " + std::to_string(t.core) + " slot " + std::to_string(t.slot) +
                        " does not exist");
    m_.set_trigger(t);
    return {};
  }
  void clear_warp_trigger() override { m_.clear_trigger(); }

  Result<void> set_watchpoints(const std::vector<WatchRange>& ranges) override {
    if (auto r = m_.set_watchpoints(ranges); !r) return make_error("set_watchpoints: " + r.error().message);
    return {};
  }
  std::vector<WatchHit> take_watch_hits() override { return m_.take_watch_hits(); }

  Result<void> continue_past_breakpoint(const std::vector<FetchOverride>& overrides) override {
    if (!halted_ || halted_event_.kind != EventKind::Exception || halted_event_.exception.cause != Cause::Breakpoint)
      return make_error(
          "continue_past_breakpoint: the last event was not a breakpoint exception (EBREAK); it is only valid "
          "right after wait() returned one, before abort() or another submit");
    if (!m_.launch_active()) return make_error("continue_past_breakpoint: no launch is in flight");
    for (const FetchOverride& o : overrides) {
      if (o.core >= m_.num_cores() || o.slot >= m_.config().warps || !m_.core(o.core).warps[o.slot].active)
        return make_error("continue_past_breakpoint: an override names core " + std::to_string(o.core) + " slot " +
                          std::to_string(o.slot) + ", which holds no warp");
      if (o.pc & 3) return make_error("continue_past_breakpoint: override pc " + hex(o.pc) + " is not word aligned");
    }
    // The workload only latched the stop (halted_): the faulting EBREAK did not execute and nothing of the
    // launch or the scheduler moved, so clearing the latch goes on exactly where it stopped.
    m_.add_overrides(overrides);
    halted_ = false;
    return {};
  }

  Result<WarpState> peek_warp(uint32_t core, uint32_t slot) override {
    if (!m_.launch_active()) return make_error("peek_warp: no launch is in flight");
    if (m_.restoring()) return make_error("peek_warp: the re-launch's thread-entry routine has not finished");
    if (core >= m_.num_cores() || slot >= m_.config().warps)
      return make_error("peek_warp: core " + std::to_string(core) + " slot " + std::to_string(slot) +
                        " does not exist (the device has " + std::to_string(m_.num_cores()) + " cores of " +
                        std::to_string(m_.config().warps) + " warp slots)");
    return m_.core(core).warps[slot];
  }

  std::vector<WarpSummary> warp_summaries() const override {
    std::vector<WarpSummary> out;
    if (!m_.launch_active() || m_.restoring()) return out;
    for (uint32_t c = 0; c < m_.num_cores(); ++c) {
      const CoreState& core = m_.core(c);
      for (uint32_t w = 0; w < core.warps.size(); ++w) {
        const WarpState& ws = core.warps[w];
        if (ws.active)
          out.push_back(WarpSummary{c, w, ws.tmask, ws.wait, uint32_t(ws.ipdom.size()), ws.instret, ws.cta_linear});
      }
    }
    return out;
  }

  void set_observer(DeviceObserver* observer) override { m_.set_observer(observer); }

  std::vector<ConsoleChunk> read_console() override { return m_.take_console(); }
  uint32_t exit_code() override { return m_.exit_code(); }
  MachineStats stats() const override { return m_.stats(); }
  std::vector<DivergentBranch> divergent_branches() const override { return m_.divergent_branches(); }
  const Machine& machine() const { return m_; }

  Result<uint32_t> dm_read(uint32_t addr) override {
    if (!has_dm_) return make_error("this device has no Debug Module");
    return dm_.read(addr);
  }

  Result<void> dm_write(uint32_t addr, uint32_t value) override {
    if (!has_dm_) return make_error("this device has no Debug Module");
    // ndmreset restarts the launch in flight, so a device exception that stopped it no longer holds.
    const bool restarts =
        addr == dm::kDctrl && (value & dm::kNdmReset) && (value & dm::kDmActive) && dm_.state().dmactive;
    Result<void> r = dm_.write(addr, value);
    if (restarts) halted_ = false;
    return r;
  }

 private:
  struct Submission {
    uint64_t id;
    CommandList list;
    size_t next;
  };
  Machine m_;
  CommandProcessor cp_;
  DebugModule dm_;
  bool has_dm_ = true;
  std::deque<Submission> queue_;
  uint64_t last_id_ = 0;
  bool halted_ = false;
  DeviceEvent halted_event_;
  std::map<uint32_t, uint64_t> regions_;      // every mapped host-visible region
  std::map<uint32_t, uint64_t> allocations_;  // the mem_alloc ones (freeable)
  uint64_t reserved_floor_ = 0;
};

}  // namespace

const Machine* model_machine_for_tests(const Driver& d) {
  const auto* model = dynamic_cast<const ModelDevice*>(&d);
  return model ? &model->machine() : nullptr;
}

Result<std::unique_ptr<Driver>> open_model_device(const DeviceConfig& config, const RunOptions& options) {
  if (auto why = config.validate()) return make_error("invalid device configuration: " + *why);
  return std::unique_ptr<Driver>(std::make_unique<ModelDevice>(config, options));
}

}  // namespace vx
