#include "device/registers.hpp"

#include "device/isa.hpp"

namespace vx {

namespace {

constexpr DebugCsr kCsrs[] = {
    {0x001, "fflags", "fflags", true},
    {0x002, "frm", "frm", true},
    {0x003, "fcsr", "fcsr", true},
    {0x300, "mstatus", "mstatus", false},
    {0x301, "misa", "misa", false},
    {0x305, "mtvec", "mtvec", false},
    {0x340, "mscratch", "mscratch", false},
    {0x341, "mepc", "mepc", false},
    {0x342, "mcause", "mcause", false},
    {0x343, "mtval", "mtval", false},
    {0xCC0, "vx_thread_id", "thread_id", false},
    {0xCC1, "vx_warp_id", "warp_id", false},
    {0xCC2, "vx_core_id", "core_id", false},
    {0xCC4, "vx_tmask", "tmask", false},
    {0xFC0, "vx_num_threads", "num_threads", false},
    {0xFC1, "vx_num_warps", "num_warps", false},
    {0xFC2, "vx_num_cores", "num_cores", false},
    {0xFC3, "vx_local_mem_base", "local_mem_base", false},
    {0xCD0, "vx_cta_slot", "cta_id", false},
    {0xCD1, "vx_cta_rank", "cta_rank", false},
    {0xCD2, "vx_cta_size", "cta_size", false},
    {0xCD3, "vx_thread_idx_x", "thread_idx_x", false},
    {0xCD4, "vx_thread_idx_y", "thread_idx_y", false},
    {0xCD5, "vx_thread_idx_z", "thread_idx_z", false},
    {0xCD6, "vx_block_idx_x", "block_idx_x", false},
    {0xCD7, "vx_block_idx_y", "block_idx_y", false},
    {0xCD8, "vx_block_idx_z", "block_idx_z", false},
    {0xCD9, "vx_block_dim_x", "block_dim_x", false},
    {0xCDA, "vx_block_dim_y", "block_dim_y", false},
    {0xCDB, "vx_block_dim_z", "block_dim_z", false},
    {0xCDC, "vx_grid_dim_x", "grid_dim_x", false},
    {0xCDD, "vx_grid_dim_y", "grid_dim_y", false},
    {0xCDE, "vx_grid_dim_z", "grid_dim_z", false},
    {0xCDF, "vx_local_mem_addr", "lmem_addr", false},
    {0xF14, "mhartid", "mhartid", false},
};

}  // namespace

std::span<const DebugCsr> debug_csrs() { return kCsrs; }

const DebugCsr* find_debug_csr(std::string_view name) {
  if (!name.empty() && name[0] == '$') name.remove_prefix(1);
  for (const DebugCsr& c : kCsrs)
    if (name == c.gdb_name || name == c.prompt_name) return &c;
  return nullptr;
}

std::optional<uint32_t> csr_state_value(const DeviceConfig& cfg, const LaunchState& l, const WarpState& w,
                                        uint32_t core, uint32_t slot, uint32_t lane, uint32_t csr) {
  const bool grid = l.kind == LaunchKind::Grid;
  auto thread_index = [&](int dim) -> uint32_t {
    if (!grid) return 0;
    const uint32_t lin = w.cta_rank * cfg.threads + lane;
    const uint32_t bx = l.block[0] ? l.block[0] : 1, by = l.block[1] ? l.block[1] : 1;
    if (dim == 0) return lin % bx;
    if (dim == 1) return (lin / bx) % by;
    return lin / (bx * by);
  };
  auto grid_value = [&](uint32_t v) -> uint32_t { return grid ? v : 0; };
  switch (csr) {
    case 0x001: return w.fcsr & 0x1f;
    case 0x002: return (w.fcsr >> 5) & 7;
    case 0x003: return w.fcsr & 0xff;
    case 0x300: return w.mstatus;
    case 0x301: return kMisaRv32imaf;
    case 0x305: return w.mtvec;
    case 0x340: return w.mscratch;
    case 0x341: return w.mepc;
    case 0x342: return w.mcause;
    case 0x343: return w.mtval;
    case 0x302:
    case 0x303:
    case 0x304:
    case 0x3A0:
    case 0x3B0:
    case 0x180: return 0u;
    case 0xF11:
    case 0xF12:
    case 0xF13: return 0u;
    case 0xF14: return (core * cfg.warps + slot) * cfg.threads + lane;
    case 0xCC0: return lane;
    case 0xCC1: return slot;
    case 0xCC2: return core;
    // The warp's mask (in a Debug Module injection, the halted warp's, not the one injected lane's).
    case 0xCC4: return w.tmask;
    case 0xFC0: return cfg.threads;
    case 0xFC1: return cfg.warps;
    case 0xFC2: return cfg.total_cores();
    case 0xFC3: return memmap::kLocalMemBase;
    case 0xFC4: return memmap::kNumBarriersPerCta;
    case 0xCD0: return w.cta_slot;
    case 0xCD1: return w.cta_rank;
    case 0xCD2: return w.cta_size;
    case 0xCD3: return thread_index(0);
    case 0xCD4: return thread_index(1);
    case 0xCD5: return thread_index(2);
    case 0xCD6: return grid_value(w.block_id[0]);
    case 0xCD7: return grid_value(w.block_id[1]);
    case 0xCD8: return grid_value(w.block_id[2]);
    case 0xCD9: return grid_value(l.block[0]);
    case 0xCDA: return grid_value(l.block[1]);
    case 0xCDB: return grid_value(l.block[2]);
    case 0xCDC: return grid_value(l.grid[0]);
    case 0xCDD: return grid_value(l.grid[1]);
    case 0xCDE: return grid_value(l.grid[2]);
    case 0xCDF: return grid_value(memmap::kLocalMemBase + w.cta_slot * l.lmem_stride);
    case 0xCE0: return grid_value(l.cluster[0] * l.cluster[1] * l.cluster[2]);
    case 0xCE1: return grid_value(l.entry_pc);
    case 0x7B2:
    case 0x7B3:
    case 0x7B4:
    case 0x7B5: {
      const size_t i = size_t(lane) * 4 + (csr - 0x7B2);
      return i < w.dscratch.size() ? w.dscratch[i] : 0u;
    }
    default:
      if ((csr >= 0xB03 && csr <= 0xB1F) || (csr >= 0xB83 && csr <= 0xB9F)) return 0u;
      return std::nullopt;
  }
}

}  // namespace vx
