// The CSR file of shared/spec/vortex-v3.md. Per-warp CSRs live in WarpState;
// the rest are derived from the configuration, the launch and the warp's slot.
#include <bit>

#include "device/machine.hpp"
#include "device/registers.hpp"

namespace vx {

namespace {

// CSRs that read as 0 and ignore writes (the spec's MISA..SATP row and the
// performance counters).
bool is_zero_csr(uint32_t csr) {
  switch (csr) {
    case 0x302:
    case 0x303:
    case 0x304:
    case 0x3A0:
    case 0x3B0:
    case 0x180: return true;
    default: break;
  }
  return (csr >= 0xB03 && csr <= 0xB1F) || (csr >= 0xB83 && csr <= 0xB9F);
}

}  // namespace

bool Machine::csr_exists(uint32_t csr) const {
  if (is_zero_csr(csr)) return true;
  switch (csr) {
    case 0x001:
    case 0x002:
    case 0x003:
    case 0x300:
    case 0x301:
    case 0x305:
    case 0x340:
    case 0x341:
    case 0x342:
    case 0x343:
    case 0xB00:
    case 0xB02:
    case 0xB80:
    case 0xB82:
    case 0xF11:
    case 0xF12:
    case 0xF13:
    case 0xF14:
    case 0xCC0:
    case 0xCC1:
    case 0xCC2:
    case 0xCC3:
    case 0xCC4:
    case 0xFC0:
    case 0xFC1:
    case 0xFC2:
    case 0xFC3:
    case 0xFC4:
    case 0x7B2:
    case 0x7B3:
    case 0x7B4:
    case 0x7B5: return true;
    default: break;
  }
  return csr >= 0xCD0 && csr <= 0xCE1;
}

bool Machine::csr_read(ExecCtx& c, uint32_t lane, uint32_t csr, uint32_t* v) {
  if (csr <= 0x003) fp_settle();  // fflags, frm, fcsr: the lazily read flags first
  switch (csr) {
    // mcycle is the launch's clock: warp instructions it has retired device-wide, over every pass
    // of a re-launched debug session (virtualized, so a re-launch cannot change what a kernel reads).
    case 0xB00: *v = uint32_t(launch_clock()); return true;
    case 0xB80: *v = uint32_t(launch_clock() >> 32); return true;
    // minstret counts the core's retired warp instructions.
    case 0xB02: *v = uint32_t(c.core.instret); return true;
    case 0xB82: *v = uint32_t(c.core.instret >> 32); return true;
    case 0xCC3: *v = active_[c.core_id]; return true;
    default: break;
  }
  // Everything else is a function of the state, shared with the debuggers (device/registers.hpp).
  auto r = csr_state_value(cfg_, launch_, c.w, c.core_id, c.warp_id, lane, csr);
  if (!r) return false;
  *v = *r;
  return true;
}

bool Machine::csr_write(ExecCtx& c, uint32_t lane, uint32_t csr, uint32_t v) {
  if (!csr_exists(csr) || csr_read_only(csr)) return false;
  if (csr <= 0x003) fp_settle();
  WarpState& w = c.w;
  switch (csr) {
    case 0x001: w.fcsr = (w.fcsr & ~0x1fu) | (v & 0x1f); return true;
    case 0x002: w.fcsr = (w.fcsr & 0x1fu) | ((v & 7) << 5); return true;
    case 0x003: w.fcsr = v & 0xff; return true;
    case 0x300: w.mstatus = v; return true;
    case 0x305: w.mtvec = v; return true;
    case 0x340: w.mscratch = v; return true;
    case 0x341: w.mepc = v & ~3u; return true;
    case 0x342: w.mcause = v; return true;
    case 0x343: w.mtval = v; return true;
    case 0x7B2:
    case 0x7B3:
    case 0x7B4:
    case 0x7B5:
      if (w.dscratch.empty()) w.dscratch.assign(size_t(cfg_.threads) * 4, 0);
      w.dscratch[size_t(lane) * 4 + (csr - 0x7B2)] = v;
      return true;
    default: return true;  // MISA, counters and the zero CSRs ignore writes
  }
}

}  // namespace vx
