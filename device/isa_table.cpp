#include <array>
#include <bit>
#include <cstdio>
#include <string_view>

#include "device/isa.hpp"

namespace vx {

namespace {

Outcome exec_illegal(ExecCtx& c, const Decoded& d) {
  return Outcome::fault(Cause::IllegalInstruction, c.last_lane(), d.raw);
}

int32_t extract_imm(ImmKind k, uint32_t raw) {
  switch (k) {
    case ImmKind::None: return 0;
    case ImmKind::I: return enc::imm_i(raw);
    case ImmKind::S: return enc::imm_s(raw);
    case ImmKind::B: return enc::imm_b(raw);
    case ImmKind::U: return enc::imm_u(raw);
    case ImmKind::J: return enc::imm_j(raw);
    case ImmKind::Shamt: return int32_t((raw >> 20) & 31);
    case ImmKind::Csr: return int32_t(raw >> 20);
  }
  return 0;
}

const char* const kXNames[32] = {"zero", "ra", "sp", "gp", "tp",  "t0",  "t1", "t2", "s0", "s1", "a0",
                                 "a1",   "a2", "a3", "a4", "a5",  "a6",  "a7", "s2", "s3", "s4", "s5",
                                 "s6",   "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6"};
const char* const kFNames[32] = {"ft0", "ft1", "ft2", "ft3", "ft4",  "ft5",  "ft6", "ft7", "fs0",  "fs1", "fa0",
                                 "fa1", "fa2", "fa3", "fa4", "fa5",  "fa6",  "fa7", "fs2", "fs3",  "fs4", "fs5",
                                 "fs6", "fs7", "fs8", "fs9", "fs10", "fs11", "ft8", "ft9", "ft10", "ft11"};
const char* const kRm[8] = {"rne", "rtz", "rdn", "rup", "rmm", "rm5", "rm6", "dyn"};

}  // namespace

const char* xreg_name(unsigned r) { return r < 32 ? kXNames[r] : "?"; }
const char* freg_name(unsigned r) { return r < 32 ? kFNames[r] : "?"; }

const char* csr_name(uint32_t csr) {
  switch (csr) {
    case 0x001: return "fflags";
    case 0x002: return "frm";
    case 0x003: return "fcsr";
    case 0x300: return "mstatus";
    case 0x301: return "misa";
    case 0x302: return "medeleg";
    case 0x303: return "mideleg";
    case 0x304: return "mie";
    case 0x305: return "mtvec";
    case 0x340: return "mscratch";
    case 0x341: return "mepc";
    case 0x342: return "mcause";
    case 0x343: return "mtval";
    case 0x7B2: return "dscratch0";
    case 0x7B3: return "dscratch1";
    case 0x7B4: return "dscratch2";
    case 0x7B5: return "dscratch3";
    case 0x3A0: return "pmpcfg0";
    case 0x3B0: return "pmpaddr0";
    case 0x180: return "satp";
    case 0xB00: return "mcycle";
    case 0xB02: return "minstret";
    case 0xB80: return "mcycleh";
    case 0xB82: return "minstreth";
    case 0xF11: return "mvendorid";
    case 0xF12: return "marchid";
    case 0xF13: return "mimpid";
    case 0xF14: return "mhartid";
    case 0xCC0: return "vx_thread_id";
    case 0xCC1: return "vx_warp_id";
    case 0xCC2: return "vx_core_id";
    case 0xCC3: return "vx_active_warps";
    case 0xCC4: return "vx_active_threads";
    case 0xFC0: return "vx_num_threads";
    case 0xFC1: return "vx_num_warps";
    case 0xFC2: return "vx_num_cores";
    case 0xFC3: return "vx_local_mem_base";
    case 0xFC4: return "vx_num_barriers";
    case 0xCD0: return "vx_cta_id";
    case 0xCD1: return "vx_cta_rank";
    case 0xCD2: return "vx_cta_size";
    case 0xCD3: return "vx_cta_thread_id_x";
    case 0xCD4: return "vx_cta_thread_id_y";
    case 0xCD5: return "vx_cta_thread_id_z";
    case 0xCD6: return "vx_cta_block_id_x";
    case 0xCD7: return "vx_cta_block_id_y";
    case 0xCD8: return "vx_cta_block_id_z";
    case 0xCD9: return "vx_cta_block_dim_x";
    case 0xCDA: return "vx_cta_block_dim_y";
    case 0xCDB: return "vx_cta_block_dim_z";
    case 0xCDC: return "vx_cta_grid_dim_x";
    case 0xCDD: return "vx_cta_grid_dim_y";
    case 0xCDE: return "vx_cta_grid_dim_z";
    case 0xCDF: return "vx_cta_lmem_addr";
    case 0xCE0: return "vx_cta_cluster_size";
    case 0xCE1: return "vx_cta_entry";
    default: return "";
  }
}

const std::vector<const InsnRow*>& all_rows() {
  static const std::vector<const InsnRow*> rows = [] {
    std::vector<const InsnRow*> v;
    for (auto group : {int_rows(), fp_rows(), vortex_rows()})
      for (const InsnRow& r : group) v.push_back(&r);
    return v;
  }();
  return rows;
}

namespace {

struct RowEntry {
  const InsnRow* row;
  InsnClass cls;  // insn_class(row), which compares mnemonics
};

// For each major opcode (bits 6..0), the rows whose mask and match allow it, in table order. No two
// rows match the same encoding (isa_table_test.cpp), so the first match among them is the table's
// only one. A decode (every decode-cache miss, every instruction the Debug Module injects) then
// tests a few rows instead of all of them.
const std::array<std::vector<RowEntry>, 128>& rows_by_opcode() {
  static const auto table = [] {
    std::array<std::vector<RowEntry>, 128> t;
    for (const InsnRow* r : all_rows())
      for (uint32_t op = 0; op < 128; ++op)
        if ((op & r->mask & 0x7f) == (r->match & r->mask & 0x7f)) t[op].push_back({r, insn_class(r)});
    return t;
  }();
  return table;
}

const RowEntry* find_entry(uint32_t raw) {
  for (const RowEntry& e : rows_by_opcode()[raw & 0x7f])
    if (e.row->matches(raw)) return &e;
  return nullptr;
}

}  // namespace

const InsnRow* find_row(uint32_t raw) {
  const RowEntry* e = find_entry(raw);
  return e ? e->row : nullptr;
}

bool rows_overlap(const InsnRow& a, const InsnRow& b) {
  uint32_t common = a.mask & b.mask;
  if ((a.match & common) != (b.match & common)) return false;
  // The encodings matching both have the bits of fixed = a.mask | b.mask set to
  // fixed_value and every other bit free. An exclusion removes them all only
  // when it tests fixed bits alone and agrees with their values.
  uint32_t fixed = a.mask | b.mask;
  uint32_t fixed_value = a.match | b.match;
  for (const InsnRow* r : {&a, &b}) {
    if (r->excl_mask == 0) continue;
    if ((r->excl_mask & ~fixed) == 0 && (fixed_value & r->excl_mask) == r->excl_match) return false;
  }
  // With free bits left, one exclusion pattern cannot remove every encoding
  // unless it pins only fixed bits (handled above); two exclusions could, in
  // principle, together cover a single encoding: check that case exactly.
  if ((a.excl_mask | b.excl_mask) != 0 && (~fixed & (a.excl_mask | b.excl_mask)) != 0) {
    uint32_t free_bits = ~fixed & (a.excl_mask | b.excl_mask);
    if (std::popcount(free_bits) <= 12) {
      // Enumerate the free bits that exclusions look at.
      uint32_t sub = 0;
      do {
        uint32_t raw = fixed_value | sub;
        if (a.matches(raw) && b.matches(raw)) return true;
        sub = (sub - free_bits) & free_bits;
      } while (sub != 0);
      return false;
    }
  }
  return true;
}

bool host_has_avx2_fma() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("bmi") &&
                          __builtin_cpu_supports("bmi2");
  return has;
#else
  return false;
#endif
}

ExecFn specialize(ExecFn generic, uint32_t nt) {
  if (nt == 0 || nt > 32 || (nt & (nt - 1)) != 0) return generic;
  const unsigned index = unsigned(std::countr_zero(nt));
  const bool wide = host_has_avx2_fma();
  for (auto list : {int_specialized(), fp_specialized()})
    for (const SpecializedExec& s : list)
      if (s.generic == generic) return wide ? s.wide[index] : s.by_width[index];
  return generic;
}

ExecFn at_site(ExecFn specialized, uint32_t pc) {
  for (auto list : {int_sites(), fp_sites()})
    for (const SiteExec& s : list)
      if (s.specialized == specialized) return s.at[(pc >> 2) % kLoadSites];
  return specialized;
}

Decoded decode(uint32_t raw) {
  Decoded d;
  d.raw = raw;
  d.rd = uint8_t(enc::rd(raw));
  d.rs1 = uint8_t(enc::rs1(raw));
  d.rs2 = uint8_t(enc::rs2(raw));
  d.rs3 = uint8_t(enc::rs3(raw));
  d.rm = uint8_t(enc::funct3(raw));
  const RowEntry* e = find_entry(raw);
  if (!e) {
    d.exec = exec_illegal;
    return d;
  }
  d.row = e->row;
  d.exec = d.row->exec;
  d.imm = extract_imm(d.row->imm, raw);
  d.cls = e->cls;
  d.fp_rd = d.cls == InsnClass::Load && d.row->ext == Ext::F;
  d.sync = d.row->ext == Ext::Vortex || d.row->ext == Ext::Zicsr;
  // CSRRS/CSRRC with rs1 = x0 and CSRRSI/CSRRCI with zimm = 0 only read (a missing CSR traps, which
  // the fast loop hands to step()'s bookkeeping like any trap).
  if (d.row->ext == Ext::Zicsr && (d.rm & 2) && d.rs1 == 0 && !csr_is_counter(uint32_t(d.imm) & 0xfff)) d.sync = false;
  return d;
}

InsnClass insn_class(const InsnRow* row) {
  if (!row) return InsnClass::Other;
  const std::string_view m = row->mnemonic;
  if (m == "lb" || m == "lh" || m == "lw" || m == "lbu" || m == "lhu" || m == "flw") return InsnClass::Load;
  if (m == "sb" || m == "sh" || m == "sw" || m == "fsw") return InsnClass::Store;
  if (m.starts_with("amo") || m == "lr.w" || m == "sc.w") return InsnClass::Atomic;
  if (m.starts_with("csrr")) return InsnClass::Csr;
  if (m.starts_with("vx_vote") || m.starts_with("vx_shfl")) return InsnClass::Warp;
  if (m == "vx_bar" || m == "vx_bar.arrive") return InsnClass::Barrier;
  if (m == "fence") return InsnClass::Fence;
  return InsnClass::Other;
}

std::string disassemble(uint32_t raw, uint32_t pc) {
  Decoded d = decode(raw);
  char buf[64];
  if (!d.row) {
    snprintf(buf, sizeof buf, "unknown 0x%08x", raw);
    return buf;
  }
  std::string out = d.row->mnemonic;
  const char* a = d.row->args;
  if (*a) out += ' ';
  for (; *a; ++a) {
    switch (*a) {
      case ',': out += ", "; break;
      case 'd': out += xreg_name(d.rd); break;
      case 's': out += xreg_name(d.rs1); break;
      case 't': out += xreg_name(d.rs2); break;
      case 'D': out += freg_name(d.rd); break;
      case 'S': out += freg_name(d.rs1); break;
      case 'T': out += freg_name(d.rs2); break;
      case 'R': out += freg_name(d.rs3); break;
      case 'i': out += std::to_string(d.imm); break;
      case '>': out += std::to_string(d.imm); break;
      case 'u':
        snprintf(buf, sizeof buf, "0x%x", uint32_t(d.imm) >> 12);
        out += buf;
        break;
      case 'b':
      case 'a':
        snprintf(buf, sizeof buf, "0x%x", pc + uint32_t(d.imm));
        out += buf;
        break;
      case 'o': out += std::to_string(d.imm) + "(" + xreg_name(d.rs1) + ")"; break;
      case 'A': out += std::string("(") + xreg_name(d.rs1) + ")"; break;
      case 'c': {
        const char* n = csr_name(uint32_t(d.imm) & 0xfff);
        if (*n) {
          out += n;
        } else {
          snprintf(buf, sizeof buf, "0x%x", uint32_t(d.imm) & 0xfff);
          out += buf;
        }
        break;
      }
      case 'z': out += std::to_string(d.rs1); break;
      case 'm':
        if (d.rm != 7) {
          out += ", ";
          out += kRm[d.rm];
        }
        break;
      default: out += *a; break;
    }
  }
  return out;
}

}  // namespace vx
