// The CSR file of shared/spec/vortex-v3.md. Per-warp CSRs live in WarpState;
// the rest are derived from the configuration, the launch and the warp's slot.
#include <bit>

#include "device/machine.hpp"

namespace vx {

namespace {

// CSRs that read as 0 and ignore writes (the spec's MISA..SATP row and the
// performance counters).
bool is_zero_csr(uint32_t csr) {
  switch (csr) {
    case 0x302: case 0x303: case 0x304: case 0x3A0: case 0x3B0: case 0x180: return true;
    default: break;
  }
  return (csr >= 0xB03 && csr <= 0xB1F) || (csr >= 0xB83 && csr <= 0xB9F);
}

constexpr uint32_t kMisaRv32imaf = (1u << 30) | (1u << 0) | (1u << 5) | (1u << 8) | (1u << 12);

}  // namespace

bool Machine::csr_exists(uint32_t csr) const {
  if (is_zero_csr(csr)) return true;
  switch (csr) {
    case 0x001: case 0x002: case 0x003:
    case 0x300: case 0x301: case 0x305: case 0x340: case 0x341: case 0x342: case 0x343:
    case 0xB00: case 0xB02: case 0xB80: case 0xB82:
    case 0xF11: case 0xF12: case 0xF13: case 0xF14:
    case 0xCC0: case 0xCC1: case 0xCC2: case 0xCC3: case 0xCC4:
    case 0xFC0: case 0xFC1: case 0xFC2: case 0xFC3: case 0xFC4:
    case 0x7B2: case 0x7B3: case 0x7B4: case 0x7B5:
      return true;
    default: break;
  }
  return csr >= 0xCD0 && csr <= 0xCE1;
}

bool Machine::csr_read(ExecCtx& c, uint32_t lane, uint32_t csr, uint32_t* v) {
  if (csr <= 0x003) fp_settle();  // fflags, frm, fcsr: the lazily read flags first
  const WarpState& w = c.w;
  const LaunchState& l = launch_;
  if (is_zero_csr(csr)) {
    *v = 0;
    return true;
  }
  // threadIdx of this lane: the warp's linear thread index decomposed over the block.
  auto thread_index = [&](int dim) -> uint32_t {
    if (l.kind != LaunchKind::Grid) return 0;
    uint32_t lin = w.cta_rank * cfg_.threads + lane;
    uint32_t bx = l.block[0], by = l.block[1];
    if (dim == 0) return lin % bx;
    if (dim == 1) return (lin / bx) % by;
    return lin / (bx * by);
  };
  auto grid_value = [&](uint32_t v_grid) -> uint32_t { return l.kind == LaunchKind::Grid ? v_grid : 0; };
  switch (csr) {
    case 0x001: *v = w.fcsr & 0x1f; return true;
    case 0x002: *v = (w.fcsr >> 5) & 7; return true;
    case 0x003: *v = w.fcsr & 0xff; return true;
    case 0x300: *v = w.mstatus; return true;
    case 0x301: *v = kMisaRv32imaf; return true;
    case 0x305: *v = w.mtvec; return true;
    case 0x340: *v = w.mscratch; return true;
    case 0x341: *v = w.mepc; return true;
    case 0x342: *v = w.mcause; return true;
    case 0x343: *v = w.mtval; return true;
    // mcycle is the launch's clock: warp instructions it has retired device-wide, over every pass
    // of a re-launched debug session (virtualized, so a re-launch cannot change what a kernel reads).
    case 0xB00: *v = uint32_t(launch_clock()); return true;
    case 0xB80: *v = uint32_t(launch_clock() >> 32); return true;
    // minstret counts the core's retired warp instructions.
    case 0xB02: *v = uint32_t(c.core.instret); return true;
    case 0xB82: *v = uint32_t(c.core.instret >> 32); return true;
    case 0xF11: case 0xF12: case 0xF13: *v = 0; return true;
    case 0xF14: *v = hart_id(c.core_id, c.warp_id, lane); return true;
    case 0xCC0: *v = lane; return true;
    case 0xCC1: *v = c.warp_id; return true;
    case 0xCC2: *v = c.core_id; return true;
    case 0xCC3: *v = active_[c.core_id]; return true;
    // The warp's mask, which is c.tmask except in a Debug Module injection (one lane active): there it is
    // how a debugger learns the mask of the halted warp.
    case 0xCC4: *v = w.tmask; return true;
    case 0xFC0: *v = cfg_.threads; return true;
    case 0xFC1: *v = cfg_.warps; return true;
    case 0xFC2: *v = cfg_.total_cores(); return true;
    case 0xFC3: *v = memmap::kLocalMemBase; return true;
    case 0xFC4: *v = memmap::kNumBarriersPerCta; return true;
    case 0xCD0: *v = w.cta_slot; return true;
    case 0xCD1: *v = w.cta_rank; return true;
    case 0xCD2: *v = w.cta_size; return true;
    case 0xCD3: *v = thread_index(0); return true;
    case 0xCD4: *v = thread_index(1); return true;
    case 0xCD5: *v = thread_index(2); return true;
    case 0xCD6: *v = grid_value(w.block_id[0]); return true;
    case 0xCD7: *v = grid_value(w.block_id[1]); return true;
    case 0xCD8: *v = grid_value(w.block_id[2]); return true;
    case 0xCD9: *v = grid_value(l.block[0]); return true;
    case 0xCDA: *v = grid_value(l.block[1]); return true;
    case 0xCDB: *v = grid_value(l.block[2]); return true;
    case 0xCDC: *v = grid_value(l.grid[0]); return true;
    case 0xCDD: *v = grid_value(l.grid[1]); return true;
    case 0xCDE: *v = grid_value(l.grid[2]); return true;
    case 0xCDF: *v = grid_value(memmap::kLocalMemBase + w.cta_slot * l.lmem_stride); return true;
    case 0xCE0: *v = grid_value(l.cluster[0] * l.cluster[1] * l.cluster[2]); return true;
    case 0xCE1: *v = grid_value(l.entry_pc); return true;
    // DSCRATCH0..3 (Debug Module): per thread.
    case 0x7B2: case 0x7B3: case 0x7B4: case 0x7B5: {
      size_t i = size_t(lane) * 4 + (csr - 0x7B2);
      *v = i < w.dscratch.size() ? w.dscratch[i] : 0;
      return true;
    }
    default: return false;
  }
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
    case 0x7B2: case 0x7B3: case 0x7B4: case 0x7B5:
      if (w.dscratch.empty()) w.dscratch.assign(size_t(cfg_.threads) * 4, 0);
      w.dscratch[size_t(lane) * 4 + (csr - 0x7B2)] = v;
      return true;
    default: return true;  // MISA, counters and the zero CSRs ignore writes
  }
}

}  // namespace vx
