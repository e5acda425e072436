// The Debug Module registers over the Machine (docs/debug-module.md).
#include "device/debug_module.hpp"

#include <bit>
#include <cstdio>

#include "device/machine.hpp"

namespace vx {

DebugModule::DebugModule(Machine& machine) : m_(machine) { reset(); }

uint32_t DebugModule::total_warps() const { return m_.config().total_warps(); }

uint32_t DebugModule::window_bits(uint32_t window) const {
  const uint64_t first = uint64_t(window) * 32, total = total_warps();
  if (first >= total) return 0;
  return total - first >= 32 ? 0xffffffffu : (1u << (total - first)) - 1;
}

bool DebugModule::selected_warp(uint32_t* core, uint32_t* warp) const {
  const uint32_t gid = dm::warpsel(s_.dselect);
  if (gid >= total_warps()) return false;
  *core = gid / m_.config().warps;
  *warp = gid % m_.config().warps;
  return true;
}

bool DebugModule::selected_lane(uint32_t* core, uint32_t* warp, uint32_t* lane) const {
  *lane = dm::threadsel(s_.dselect);
  return *lane < m_.config().threads && selected_warp(core, warp);
}

void DebugModule::reset() {
  // Every warp the DM halted resumes, and no reset-halt stays pending.
  for (uint32_t c = 0; c < m_.num_cores(); ++c)
    for (uint32_t w = 0; w < m_.config().warps; ++w) {
      WarpState& ws = m_.core(c).warps[w];
      ws.reset_halt = false;
      if (ws.halted) m_.resume_warp(c, w);
    }
  s_ = DmState{};
  s_.wmask.assign((total_warps() + 31) / 32, 0);
  m_.set_ebreak_halt(false);
}

uint32_t DebugModule::platform() const {
  const DeviceConfig& cfg = m_.config();
  return uint32_t(std::countr_zero(cfg.threads)) | ((cfg.warps - 1) << 3) | ((cfg.cores_per_cluster - 1) << 12) |
         ((cfg.clusters - 1) << 21) | (dm::kPlatformId << 28);
}

uint32_t DebugModule::read_dctrl(bool ndmreset) const {
  uint32_t v = dm::kDmActive;
  if (ndmreset) v |= dm::kNdmReset;
  uint32_t core = 0, warp = 0;
  if (selected_warp(&core, &warp)) v |= uint32_t(m_.core(core).warps[warp].halt_cause) << dm::kHaCauseShift;
  if (s_.exc) v |= dm::kExc | (uint32_t(s_.exc_cause) << dm::kExcCauseShift);
  // The summary flags cover the warps selected in the mask array.
  uint32_t unavailable = 0, available = 0, halted = 0;
  const uint32_t nw = m_.config().warps;
  for (uint32_t i = 0; i < s_.wmask.size(); ++i)
    for_each_lane(s_.wmask[i], [&](unsigned bit) {
      const uint32_t gid = i * 32 + bit;
      const WarpState& ws = m_.core(gid / nw).warps[gid % nw];
      if (!ws.active) {
        ++unavailable;
        return;
      }
      ++available;
      if (ws.halted) ++halted;
    });
  if (unavailable > 0) v |= dm::kAnyUnavail;
  if (available == 0) v |= dm::kAllUnavail;
  if (halted > 0) v |= dm::kAnyHalted;
  if (available > 0 && halted == available) v |= dm::kAllHalted;
  if (halted < available) v |= dm::kAnyRunning;
  if (available > 0 && halted == 0) v |= dm::kAllRunning;
  return v;
}

Result<uint32_t> DebugModule::read(uint32_t addr) {
  if (addr > dm::kLastRegister) {
    char buf[64];
    snprintf(buf, sizeof buf, "no Debug Module register at 0x%x", addr);
    return make_error(buf);
  }
  const bool ndmreset = s_.ndmreset_accesses > 0;
  if (ndmreset) --s_.ndmreset_accesses;
  if (!s_.dmactive) return 0u;
  const uint32_t window = dm::winsel(s_.dselect);
  auto window_status = [&](bool halted_only) {
    uint32_t bits = 0;
    const uint32_t nw = m_.config().warps;
    for_each_lane(window_bits(window), [&](unsigned bit) {
      const uint32_t gid = window * 32 + bit;
      const WarpState& ws = m_.core(gid / nw).warps[gid % nw];
      if (ws.active && (!halted_only || ws.halted)) bits |= 1u << bit;
    });
    return bits;
  };
  uint32_t core = 0, warp = 0, lane = 0;
  switch (addr) {
    case dm::kPlatform: return platform();
    case dm::kDconfig: return s_.dconfig;
    case dm::kDselect: return s_.dselect;
    case dm::kWmask: return window < s_.wmask.size() ? s_.wmask[window] : 0u;
    case dm::kWactive: return window_status(false);
    case dm::kWstatus: return window_status(true);
    case dm::kDctrl: return read_dctrl(ndmreset);
    case dm::kDpc: return selected_warp(&core, &warp) ? m_.core(core).warps[warp].pc : 0u;
    case dm::kInject: return s_.inject;
    default: {
      if (!selected_lane(&core, &warp, &lane)) return 0u;
      const std::vector<uint32_t>& scratch = m_.core(core).warps[warp].dscratch;
      const size_t i = size_t(lane) * 4 + (addr - dm::kDscratch0);
      return i < scratch.size() ? scratch[i] : 0u;
    }
  }
}

Result<void> DebugModule::write(uint32_t addr, uint32_t value) {
  if (addr > dm::kLastRegister) {
    char buf[64];
    snprintf(buf, sizeof buf, "no Debug Module register at 0x%x", addr);
    return make_error(buf);
  }
  if (s_.ndmreset_accesses > 0) --s_.ndmreset_accesses;
  if (addr == dm::kDctrl) {
    write_dctrl(value);
    return {};
  }
  if (!s_.dmactive) return {};  // only dmactive can be written while the DM is inactive
  const uint32_t window = dm::winsel(s_.dselect);
  uint32_t core = 0, warp = 0, lane = 0;
  switch (addr) {
    case dm::kDconfig:
      s_.dconfig = value & dm::kDconfigFields;
      m_.set_ebreak_halt(value & dm::kEbreakh);
      break;
    case dm::kDselect: s_.dselect = value; break;
    case dm::kWmask:
      if (window < s_.wmask.size()) s_.wmask[window] = value & window_bits(window);
      break;
    case dm::kDpc:
      // The PC of a running warp is not the debugger's to change.
      if (selected_warp(&core, &warp) && m_.core(core).warps[warp].halted) m_.core(core).warps[warp].pc = value;
      break;
    case dm::kInject: s_.inject = value; break;
    case dm::kPlatform:
    case dm::kWactive:
    case dm::kWstatus: break;  // read-only
    default: {
      if (!selected_lane(&core, &warp, &lane)) break;
      std::vector<uint32_t>& scratch = m_.core(core).warps[warp].dscratch;
      if (scratch.empty()) scratch.assign(size_t(m_.config().threads) * 4, 0);
      scratch[size_t(lane) * 4 + (addr - dm::kDscratch0)] = value;
      break;
    }
  }
  return {};
}

void DebugModule::write_dctrl(uint32_t value) {
  if (!(value & dm::kDmActive)) {
    reset();
    return;
  }
  if (!s_.dmactive) {
    // Activation only: requests written together with dmactive = 1 while inactive are ignored.
    s_.dmactive = true;
    return;
  }
  const uint32_t nw = m_.config().warps;
  auto for_each_selected = [&](auto&& fn) {
    for (uint32_t i = 0; i < s_.wmask.size(); ++i)
      for_each_lane(s_.wmask[i], [&](unsigned bit) {
        const uint32_t gid = i * 32 + bit;
        fn(gid / nw, gid % nw);
      });
  };
  // The order requests of one write are handled in: ndmreset, haltreq, resumereq, stepreq, injectreq.
  if (value & dm::kNdmReset) {
    if (value & dm::kResetHaltReq)
      for_each_selected([&](uint32_t c, uint32_t w) { m_.core(c).warps[w].reset_halt = true; });
    m_.reset_cores();
    s_.ndmreset_accesses = 1u << (s_.dconfig >> dm::kNrcShift);
  }
  if (value & dm::kHaltReq)
    for_each_selected([&](uint32_t c, uint32_t w) {
      if (!m_.core(c).warps[w].halted) m_.halt_warp(c, w, HaltCause::HaltReq);
    });
  if (value & dm::kResumeReq)
    for_each_selected([&](uint32_t c, uint32_t w) {
      if (m_.core(c).warps[w].halted) m_.resume_warp(c, w);
    });
  if (value & dm::kStepReq) step();
  if (value & dm::kInjectReq) inject();
}

void DebugModule::step() {
  s_.exc = false;
  s_.exc_cause = 0;
  uint32_t core = 0, warp = 0;
  if (!selected_warp(&core, &warp)) return;
  DeviceException exc;
  if (m_.debug_step(core, warp, &exc).step == Step::Exception) {
    s_.exc = true;
    s_.exc_cause = uint8_t(exc.cause);
  }
}

void DebugModule::inject() {
  s_.exc = false;
  s_.exc_cause = 0;
  uint32_t core = 0, warp = 0;
  const uint32_t lane = dm::threadsel(s_.dselect);
  DeviceException exc;
  if (!selected_warp(&core, &warp) || !m_.core(core).warps[warp].halted) {
    s_.exc = true;
    s_.exc_cause = uint8_t(Cause::IllegalInstruction);
    return;
  }
  if (m_.inject(core, warp, lane, s_.inject, &exc).step == Step::Exception) {
    s_.exc = true;
    s_.exc_cause = uint8_t(exc.cause);
  }
}

}  // namespace vx
