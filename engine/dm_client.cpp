#include "engine/dm_client.hpp"

#include <algorithm>
#include <cstdio>
#include "base/hex.hpp"

namespace vx::engine {

namespace {

// DM register addresses (docs/debug-module.md).
constexpr uint32_t kPlatform = 0x0, kDconfig = 0x1, kDselect = 0x2, kWmask = 0x3, kWactive = 0x4, kWstatus = 0x5,
                   kDctrl = 0x6, kDpc = 0x7, kInject = 0x8, kDscratch0 = 0x9;

// DCTRL fields.
constexpr uint32_t kHaltReq = 1u << 0, kResumeReq = 1u << 1, kResetHaltReq = 1u << 2, kStepReq = 1u << 3,
                   kInjectReq = 1u << 6, kExc = 1u << 12, kNdmReset = 1u << 30, kDmActive = 1u << 31;
constexpr uint32_t kBusyMask = (3u << 4) | (3u << 7);  // stepstate, injectstate
uint32_t hacause_of(uint32_t dctrl) { return (dctrl >> 9) & 7; }
uint32_t exc_cause_of(uint32_t dctrl) { return (dctrl >> 13) & 15; }

constexpr uint32_t kEbreakHalt = 1u;  // DCONFIG.ebreakh
constexpr uint32_t kPlatformId = 1;
constexpr int kMaxPolls = 1000;  // a request still busy after this many DCTRL reads is an error

// DSCRATCH0..3 as CSRs.
constexpr uint32_t kCsrScratch0 = 0x7b2, kCsrScratch1 = 0x7b3, kCsrScratch2 = 0x7b4;
constexpr uint32_t kT0 = 5, kT1 = 6;
constexpr uint32_t kEbreak = 0x00100073;
constexpr uint32_t kCsrActiveThreads = 0xCC4;
// Loads and stores reach 256 words from one base (immediates up to 1020); then the base moves on.
constexpr uint32_t kWordsPerBase = 256;

// Encoders.
constexpr uint32_t csr_op(uint32_t f3, uint32_t rd, uint32_t csr, uint32_t rs1) {
  return (csr << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | 0x73;
}
constexpr uint32_t csrrw(uint32_t rd, uint32_t csr, uint32_t rs1) { return csr_op(1, rd, csr, rs1); }
constexpr uint32_t csrw(uint32_t csr, uint32_t rs1) { return csrrw(0, csr, rs1); }
constexpr uint32_t csrr(uint32_t rd, uint32_t csr) { return csr_op(2, rd, csr, 0); }
constexpr uint32_t fmv_x_w(uint32_t rd, uint32_t fs1) { return (0x70u << 25) | (fs1 << 15) | (rd << 7) | 0x53; }
constexpr uint32_t fmv_w_x(uint32_t fd, uint32_t rs1) { return (0x78u << 25) | (rs1 << 15) | (fd << 7) | 0x53; }
constexpr uint32_t lw(uint32_t rd, uint32_t off, uint32_t rs1) {
  return (off << 20) | (rs1 << 15) | (2u << 12) | (rd << 7) | 0x03;
}
constexpr uint32_t sw(uint32_t rs2, uint32_t off, uint32_t rs1) {
  return ((off >> 5) << 25) | (rs2 << 20) | (rs1 << 15) | (2u << 12) | ((off & 31) << 7) | 0x23;
}
constexpr uint32_t addi(uint32_t rd, uint32_t rs1, uint32_t imm) {
  return (imm << 20) | (rs1 << 15) | (rd << 7) | 0x13;
}

}  // namespace

const char* halt_cause_name(HaltCause c) {
  switch (c) {
    case HaltCause::None: return "none";
    case HaltCause::Ebreak: return "ebreak";
    case HaltCause::HaltReq: return "haltreq";
    case HaltCause::Step: return "step";
    case HaltCause::ResetHaltReq: return "resethaltreq";
  }
  return "unknown";
}

// --- Register access -----------------------------------------------------------------

Result<uint32_t> DmClient::rd(uint32_t addr) {
  ++accesses_;
  return d_.dm_read(addr);
}

Result<void> DmClient::wr(uint32_t addr, uint32_t value) {
  ++accesses_;
  return d_.dm_write(addr, value);
}

Result<void> DmClient::write_dctrl(uint32_t requests) { return wr(kDctrl, kDmActive | requests); }

Result<void> DmClient::select(uint32_t gwarp, uint32_t thread) {
  // The window follows the warp, so WSTATUS / WACTIVE of the selected warp need no extra write.
  const uint32_t v = (thread & 0x7f) | ((gwarp & 0x7fff) << 7) | (((gwarp >> 5) & 0x3ff) << 22);
  if (v == dselect_) return {};
  if (auto r = wr(kDselect, v); !r) return r;
  dselect_ = v;
  return {};
}

Result<void> DmClient::select_warp(uint32_t gwarp) {
  uint32_t thread = dselect_ & 0x7f;
  return select(gwarp, thread < platform_.threads ? thread : 0);
}

Result<void> DmClient::select_window(uint32_t window) {
  const uint32_t v = (dselect_ & 0x3fffff) | (window << 22);
  if (v == dselect_) return {};
  if (auto r = wr(kDselect, v); !r) return r;
  dselect_ = v;
  return {};
}

Result<void> DmClient::set_all_masks() {
  const uint32_t total = platform_.total_warps();
  for (uint32_t w = 0; w < masks_.size(); ++w) {
    const uint32_t n = total - w * 32;
    const uint32_t want = n >= 32 ? 0xffffffffu : (1u << n) - 1u;
    if (masks_[w] == want) continue;
    if (auto r = select_window(w); !r) return r;
    if (auto r = wr(kWmask, want); !r) return r;
    masks_[w] = want;
  }
  return {};
}

Result<void> DmClient::set_inject(uint32_t instr) {
  if (instr == inject_) return {};
  if (auto r = wr(kInject, instr); !r) return r;
  inject_ = instr;
  return {};
}

Result<void> DmClient::inject(uint32_t instr) {
  if (auto r = set_inject(instr); !r) return r;
  return write_dctrl(kInjectReq);
}

Result<uint32_t> DmClient::settled_dctrl(const char* what) {
  for (int i = 0; i < kMaxPolls; ++i) {
    auto v = rd(kDctrl);
    if (!v || (*v & kBusyMask) == 0) return v;
  }
  return make_error(std::string(what) + ": the Debug Module request did not complete");
}

Result<void> DmClient::check_injection(const std::string& what) {
  auto v = settled_dctrl(what.c_str());
  if (!v) return v.error();
  if (*v & kExc) {
    // An injected access that faults names memory nothing is mapped at.
    const Cause c = Cause(exc_cause_of(*v));
    const bool unmapped = c == Cause::LoadFault || c == Cause::StoreFault || c == Cause::FetchFault;
    return make_error(unmapped ? ErrorCode::Unmapped : ErrorCode::Device, what + ": device exception " + cause_name(c));
  }
  return {};
}

std::string DmClient::where(const char* op, uint32_t gwarp, uint32_t thread) const {
  return std::string(op) + " (warp " + std::to_string(gwarp) + ", thread " + std::to_string(thread) + ")";
}

Result<void> DmClient::check_hart(const char* op, uint32_t gwarp, uint32_t thread) {
  if (!connected_) return make_error(std::string(op) + ": not connected to the Debug Module");
  if (gwarp >= platform_.total_warps())
    return make_error(std::string(op) + ": no warp " + std::to_string(gwarp) + " (the platform has " +
                      std::to_string(platform_.total_warps()) + ")");
  if (thread >= platform_.threads)
    return make_error(std::string(op) + ": no thread " + std::to_string(thread) + " (warps have " +
                      std::to_string(platform_.threads) + ")");
  return {};
}

Result<void> DmClient::require_halted(const char* op, uint32_t gwarp) {
  if (halted_[gwarp]) return {};
  auto s = rd(kWstatus);  // the selected warp's window
  if (!s) return s.error();
  if (((*s >> (gwarp & 31)) & 1) == 0)
    return make_error(std::string(op) + ": warp " + std::to_string(gwarp) + " is not halted");
  halted_[gwarp] = 1;
  return {};
}

Result<void> DmClient::prepare(const char* op, uint32_t gwarp, uint32_t thread) {
  if (auto r = check_hart(op, gwarp, thread); !r) return r;
  if (auto r = select(gwarp, thread); !r) return r;
  return require_halted(op, gwarp);
}

// --- Session --------------------------------------------------------------------------

Result<Platform> DmClient::connect() {
  auto ctrl = rd(kDctrl);
  if (!ctrl) return ctrl.error();
  const bool was_active = (*ctrl & kDmActive) != 0;
  if (!was_active) {
    // Activation starts from the reset values of every register.
    if (auto r = wr(kDctrl, kDmActive); !r) return r.error();
  }
  auto p = rd(kPlatform);
  if (!p) return p.error();
  if ((*p >> 28) != kPlatformId)
    return make_error("connect: PLATFORM " + hex32(*p) + " has platform id " + std::to_string(*p >> 28) +
                      ", expected " + std::to_string(kPlatformId) + " (Vortex)");
  platform_.threads = 1u << (*p & 7);
  platform_.warps = ((*p >> 3) & 0x1ff) + 1;
  platform_.cores_per_cluster = ((*p >> 12) & 0x1ff) + 1;
  platform_.clusters = ((*p >> 21) & 0x7f) + 1;
  const uint32_t windows = (platform_.total_warps() + 31) / 32;
  if (was_active) {
    auto sel = rd(kDselect);
    if (!sel) return sel.error();
    auto inj = rd(kInject);
    if (!inj) return inj.error();
    auto cfg = rd(kDconfig);
    if (!cfg) return cfg.error();
    dselect_ = *sel;
    inject_ = *inj;
    dconfig_ = *cfg;
    masks_.assign(windows, std::nullopt);
  } else {
    dselect_ = inject_ = dconfig_ = 0;
    masks_.assign(windows, 0u);
  }
  halted_.assign(platform_.total_warps(), 0);
  breakpoints_.clear();
  connected_ = true;
  return platform_;
}

void DmClient::forget_halts() { std::fill(halted_.begin(), halted_.end(), 0); }

Result<void> DmClient::halt_all() {
  if (!connected_) return make_error("halt_all: not connected to the Debug Module");
  if (auto r = set_all_masks(); !r) return r;
  if (auto r = write_dctrl(kHaltReq); !r) return r;
  auto h = halted_warps();
  if (!h) return h.error();
  return {};
}

Result<void> DmClient::resume_all() {
  if (!connected_) return make_error("resume_all: not connected to the Debug Module");
  if (auto r = set_all_masks(); !r) return r;
  if (auto r = write_dctrl(kResumeReq); !r) return r;
  forget_halts();
  return {};
}

Result<void> DmClient::reset_and_halt() {
  if (!connected_) return make_error("reset_and_halt: not connected to the Debug Module");
  if (auto r = set_all_masks(); !r) return r;
  if (auto r = write_dctrl(kNdmReset | kResetHaltReq); !r) return r;
  forget_halts();
  return {};
}

Result<void> DmClient::resume_warps(const std::vector<uint32_t>& gwarps) {
  if (!connected_) return make_error("resume_warps: not connected to the Debug Module");
  std::vector<uint32_t> want(masks_.size(), 0);
  for (uint32_t g : gwarps)
    if (g < platform_.total_warps()) want[g / 32] |= 1u << (g % 32);
  for (uint32_t w = 0; w < masks_.size(); ++w) {
    if (masks_[w] == want[w]) continue;
    if (auto r = select_window(w); !r) return r;
    if (auto r = wr(kWmask, want[w]); !r) return r;
    masks_[w] = want[w];
  }
  if (auto r = write_dctrl(kResumeReq); !r) return r;
  for (uint32_t g : gwarps)
    if (g < halted_.size()) halted_[g] = 0;
  return {};
}

Result<void> DmClient::set_ebreak_halt() {
  if (!connected_) return make_error("set_ebreak_halt: not connected to the Debug Module");
  keep_ebreakh_ = true;
  if (dconfig_ & kEbreakHalt) return {};
  if (auto r = wr(kDconfig, dconfig_ | kEbreakHalt); !r) return r;
  dconfig_ |= kEbreakHalt;
  return {};
}

Result<std::vector<uint32_t>> DmClient::halted_warps() {
  if (!connected_) return make_error("halted_warps: not connected to the Debug Module");
  std::vector<uint32_t> out;
  const uint32_t total = platform_.total_warps();
  for (uint32_t w = 0; w < masks_.size(); ++w) {
    if (auto r = select_window(w); !r) return r.error();
    auto s = rd(kWstatus);
    if (!s) return s.error();
    for (uint32_t b = 0; b < 32 && w * 32 + b < total; ++b) {
      const bool h = (*s >> b) & 1;
      halted_[w * 32 + b] = h;
      if (h) out.push_back(w * 32 + b);
    }
  }
  return out;
}

Result<HaltCause> DmClient::halt_cause(uint32_t gwarp) {
  if (auto r = check_hart("halt_cause", gwarp, 0); !r) return r.error();
  if (auto r = select_warp(gwarp); !r) return r.error();
  auto v = rd(kDctrl);
  if (!v) return v.error();
  return HaltCause(hacause_of(*v));
}

// --- Execution control --------------------------------------------------------------

Result<void> DmClient::step(uint32_t gwarp) {
  if (auto r = check_hart("step", gwarp, 0); !r) return r;
  if (auto r = select_warp(gwarp); !r) return r;
  if (auto r = require_halted("step", gwarp); !r) return r;
  if (auto r = write_dctrl(kStepReq); !r) return r;
  auto v = settled_dctrl("step");
  if (!v) return v.error();
  if (*v & kExc) {
    auto pc = rd(kDpc);
    return make_error("step (warp " + std::to_string(gwarp) + ") at " + (pc ? hex32(*pc) : std::string("?")) +
                      ": device exception " + cause_name(Cause(exc_cause_of(*v))));
  }
  if (hacause_of(*v) == uint32_t(HaltCause::Step)) return {};
  // No STEP cause: the warp was waiting (still halted, nothing ran), retired (TMC x0) or was not halted.
  auto s = rd(kWstatus);
  if (!s) return s.error();
  if ((*s >> (gwarp & 31)) & 1) return {};
  halted_[gwarp] = 0;
  auto a = rd(kWactive);
  if (!a) return a.error();
  if (((*a >> (gwarp & 31)) & 1) == 0) return {};  // retired
  return make_error("step: warp " + std::to_string(gwarp) + " is not halted");
}

Result<uint32_t> DmClient::read_pc(uint32_t gwarp) {
  if (auto r = check_hart("read_pc", gwarp, 0); !r) return r.error();
  if (auto r = select_warp(gwarp); !r) return r.error();
  if (auto r = require_halted("read_pc", gwarp); !r) return r.error();
  return rd(kDpc);
}

Result<void> DmClient::write_pc(uint32_t gwarp, uint32_t pc) {
  if (auto r = check_hart("write_pc", gwarp, 0); !r) return r;
  if (auto r = select_warp(gwarp); !r) return r;
  if (auto r = require_halted("write_pc", gwarp); !r) return r;
  return wr(kDpc, pc);
}

// --- Registers ------------------------------------------------------------------------

Result<uint32_t> DmClient::read_gpr(uint32_t gwarp, uint32_t thread, uint32_t reg) {
  if (reg >= 32) return make_error(where("read_gpr", gwarp, thread) + ": no register x" + std::to_string(reg));
  if (auto r = check_hart("read_gpr", gwarp, thread); !r) return r.error();
  if (reg == 0) return 0u;
  if (auto r = prepare("read_gpr", gwarp, thread); !r) return r.error();
  if (auto r = inject(csrw(kCsrScratch0, reg)); !r) return r.error();
  return rd(kDscratch0);
}

Result<void> DmClient::write_gpr(uint32_t gwarp, uint32_t thread, uint32_t reg, uint32_t value) {
  if (reg >= 32) return make_error(where("write_gpr", gwarp, thread) + ": no register x" + std::to_string(reg));
  if (auto r = check_hart("write_gpr", gwarp, thread); !r) return r;
  if (reg == 0) return {};
  if (auto r = prepare("write_gpr", gwarp, thread); !r) return r;
  if (auto r = wr(kDscratch0, value); !r) return r;
  return inject(csrr(reg, kCsrScratch0));
}

Result<uint32_t> DmClient::read_fpr(uint32_t gwarp, uint32_t thread, uint32_t reg) {
  if (reg >= 32) return make_error(where("read_fpr", gwarp, thread) + ": no register f" + std::to_string(reg));
  if (auto r = prepare("read_fpr", gwarp, thread); !r) return r.error();
  // DSCRATCH0 = t0; t0 = f; swap: DSCRATCH0 = f, t0 restored.
  for (uint32_t instr : {csrw(kCsrScratch0, kT0), fmv_x_w(kT0, reg), csrrw(kT0, kCsrScratch0, kT0)})
    if (auto r = inject(instr); !r) return r.error();
  return rd(kDscratch0);
}

Result<void> DmClient::write_fpr(uint32_t gwarp, uint32_t thread, uint32_t reg, uint32_t value) {
  if (reg >= 32) return make_error(where("write_fpr", gwarp, thread) + ": no register f" + std::to_string(reg));
  if (auto r = prepare("write_fpr", gwarp, thread); !r) return r;
  if (auto r = wr(kDscratch0, value); !r) return r;
  // swap: t0 = value, DSCRATCH0 = t0; f = t0; t0 restored.
  for (uint32_t instr : {csrrw(kT0, kCsrScratch0, kT0), fmv_w_x(reg, kT0), csrr(kT0, kCsrScratch0)})
    if (auto r = inject(instr); !r) return r;
  return {};
}

Result<uint32_t> DmClient::read_csr(uint32_t gwarp, uint32_t thread, uint32_t csr) {
  if (csr > 0xfff) return make_error(where("read_csr", gwarp, thread) + ": no CSR " + hex32(csr));
  if (auto r = prepare("read_csr", gwarp, thread); !r) return r.error();
  if (csr >= kCsrScratch0 && csr < kCsrScratch0 + 4) return rd(kDscratch0 + (csr - kCsrScratch0));
  if (auto r = inject(csrw(kCsrScratch0, kT0)); !r) return r.error();
  if (auto r = inject(csrr(kT0, csr)); !r) return r.error();
  // A faulting read changes nothing: t0 is still intact.
  if (auto r = check_injection(where("read_csr", gwarp, thread) + " " + hex32(csr)); !r) return r.error();
  if (auto r = inject(csrrw(kT0, kCsrScratch0, kT0)); !r) return r.error();
  return rd(kDscratch0);
}

Result<void> DmClient::write_csr(uint32_t gwarp, uint32_t thread, uint32_t csr, uint32_t value) {
  if (csr > 0xfff) return make_error(where("write_csr", gwarp, thread) + ": no CSR " + hex32(csr));
  if (auto r = prepare("write_csr", gwarp, thread); !r) return r;
  if (csr >= kCsrScratch0 && csr < kCsrScratch0 + 4) return wr(kDscratch0 + (csr - kCsrScratch0), value);
  if (auto r = wr(kDscratch0, value); !r) return r;
  if (auto r = inject(csrrw(kT0, kCsrScratch0, kT0)); !r) return r;
  if (auto r = inject(csrw(csr, kT0)); !r) return r;
  auto checked = check_injection(where("write_csr", gwarp, thread) + " " + hex32(csr));
  if (auto r = inject(csrr(kT0, kCsrScratch0)); !r) return r;
  return checked;
}

// --- Memory -----------------------------------------------------------------------------

Result<std::vector<uint32_t>> DmClient::read_memory(uint32_t gwarp, uint32_t thread, uint32_t addr, uint32_t words) {
  const char* op = "read_memory";
  if (addr % 4) return make_error(where(op, gwarp, thread) + ": address " + hex32(addr) + " is not word aligned");
  if (uint64_t(addr) + uint64_t(words) * 4 > (uint64_t(1) << 32))
    return make_error(where(op, gwarp, thread) + ": " + std::to_string(words) + " words from " + hex32(addr) +
                      " run past the end of the address space");
  if (words == 0) {
    if (auto r = check_hart(op, gwarp, thread); !r) return r.error();
    return std::vector<uint32_t>{};
  }
  if (auto r = prepare(op, gwarp, thread); !r) return r.error();
  std::vector<uint32_t> out(words);
  // t0 = addr, DSCRATCH1 = the thread's t0.
  if (auto r = wr(kDscratch0 + 1, addr); !r) return r.error();
  if (auto r = inject(csrrw(kT0, kCsrScratch1, kT0)); !r) return r.error();
  auto fault = [&](uint32_t i) { return where(op, gwarp, thread) + " at " + hex32(addr + 4 * i); };
  if (words == 1) {
    // One register does: t0 = [t0]; swap t0 with DSCRATCH1 restores t0 and leaves the word there.
    if (auto r = inject(lw(kT0, 0, kT0)); !r) return r.error();
    if (auto c = check_injection(fault(0)); !c) {
      if (auto r = inject(csrr(kT0, kCsrScratch1)); !r) return r.error();
      return c.error();
    }
    if (auto r = inject(csrrw(kT0, kCsrScratch1, kT0)); !r) return r.error();
    auto v = rd(kDscratch0 + 1);
    if (!v) return v.error();
    out[0] = *v;
    return out;
  }
  // t1 holds each word; its value waits in DSCRATCH2. The last word swaps with it.
  if (auto r = inject(csrw(kCsrScratch2, kT1)); !r) return r.error();
  for (uint32_t i = 0; i < words; ++i) {
    if (i > 0 && i % kWordsPerBase == 0)
      if (auto r = inject(addi(kT0, kT0, kWordsPerBase * 4)); !r) return r.error();
    if (auto r = inject(lw(kT1, (i % kWordsPerBase) * 4, kT0)); !r) return r.error();
    if (auto c = check_injection(fault(i)); !c) {
      if (auto r = inject(csrr(kT1, kCsrScratch2)); !r) return r.error();
      if (auto r = inject(csrr(kT0, kCsrScratch1)); !r) return r.error();
      return c.error();
    }
    const bool last = i + 1 == words;
    if (auto r = inject(last ? csrrw(kT1, kCsrScratch2, kT1) : csrw(kCsrScratch0, kT1)); !r) return r.error();
    auto v = rd(last ? kDscratch0 + 2 : kDscratch0);
    if (!v) return v.error();
    out[i] = *v;
  }
  if (auto r = inject(csrr(kT0, kCsrScratch1)); !r) return r.error();
  return out;
}

Result<void> DmClient::write_memory(uint32_t gwarp, uint32_t thread, uint32_t addr, std::span<const uint32_t> words) {
  const char* op = "write_memory";
  if (addr % 4) return make_error(where(op, gwarp, thread) + ": address " + hex32(addr) + " is not word aligned");
  if (uint64_t(addr) + uint64_t(words.size()) * 4 > (uint64_t(1) << 32))
    return make_error(where(op, gwarp, thread) + ": " + std::to_string(words.size()) + " words from " + hex32(addr) +
                      " run past the end of the address space");
  if (words.empty()) return check_hart(op, gwarp, thread);
  if (auto r = prepare(op, gwarp, thread); !r) return r;
  // t0 = addr (DSCRATCH1 = t0); t1 = first word (DSCRATCH2 = t1).
  if (auto r = wr(kDscratch0 + 1, addr); !r) return r;
  if (auto r = inject(csrrw(kT0, kCsrScratch1, kT0)); !r) return r;
  if (auto r = wr(kDscratch0 + 2, words[0]); !r) return r;
  if (auto r = inject(csrrw(kT1, kCsrScratch2, kT1)); !r) return r;
  Result<void> status;
  for (uint32_t i = 0; i < words.size(); ++i) {
    if (i > 0) {
      if (i % kWordsPerBase == 0)
        if (auto r = inject(addi(kT0, kT0, kWordsPerBase * 4)); !r) return r;
      if (auto r = wr(kDscratch0, words[i]); !r) return r;
      if (auto r = inject(csrr(kT1, kCsrScratch0)); !r) return r;
    }
    if (auto r = inject(sw(kT1, (i % kWordsPerBase) * 4, kT0)); !r) return r;
    status = check_injection(where(op, gwarp, thread) + " at " + hex32(addr + 4 * i));
    if (!status) break;
  }
  if (auto r = inject(csrr(kT1, kCsrScratch2)); !r) return r;
  if (auto r = inject(csrr(kT0, kCsrScratch1)); !r) return r;
  return status;
}

// --- Warp snapshot ----------------------------------------------------------------------

Result<WarpSnapshot> DmClient::read_warp(uint32_t gwarp) {
  const char* op = "read_warp";
  if (auto r = prepare(op, gwarp, 0); !r) return r.error();
  WarpSnapshot s;
  auto pc = rd(kDpc);
  if (!pc) return pc.error();
  s.pc = *pc;
  s.threads.resize(platform_.threads);
  // Per thread: x1..x31 straight through DSCRATCH0; then t0 (already read) carries
  // each FPR; the last FPR swaps with the saved t0, which restores it. The moves
  // cannot fault on a halted warp: one DCTRL check at the end covers the batch.
  for (uint32_t t = 0; t < platform_.threads; ++t) {
    if (auto r = select(gwarp, t); !r) return r.error();
    ThreadRegs& regs = s.threads[t];
    for (uint32_t x = 1; x < 32; ++x) {
      if (auto r = inject(csrw(kCsrScratch0, x)); !r) return r.error();
      auto v = rd(kDscratch0);
      if (!v) return v.error();
      regs.x[x] = *v;
    }
    if (t == 0) {
      for (uint32_t instr : {csrr(kT0, kCsrActiveThreads), csrw(kCsrScratch0, kT0)})
        if (auto r = inject(instr); !r) return r.error();
      auto v = rd(kDscratch0);
      if (!v) return v.error();
      s.tmask = *v;
    }
    for (uint32_t f = 0; f < 32; ++f) {
      const bool last = f == 31;
      if (last)
        if (auto r = wr(kDscratch0, regs.x[kT0]); !r) return r.error();
      for (uint32_t instr : {fmv_x_w(kT0, f), last ? csrrw(kT0, kCsrScratch0, kT0) : csrw(kCsrScratch0, kT0)})
        if (auto r = inject(instr); !r) return r.error();
      auto v = rd(kDscratch0);
      if (!v) return v.error();
      regs.f[f] = *v;
    }
  }
  if (auto r = check_injection(where(op, gwarp, platform_.threads - 1)); !r) return r.error();
  return s;
}

// --- Breakpoints -------------------------------------------------------------------------

Result<uint32_t> DmClient::halt_writer() {
  auto it = std::find(halted_.begin(), halted_.end(), 1);
  if (it != halted_.end()) return uint32_t(it - halted_.begin());
  auto h = halted_warps();
  if (!h) return h.error();
  if (h->empty()) return make_error("no halted warp to write code through (halt first)");
  return h->front();
}

Result<void> DmClient::set_breakpoint(uint32_t addr) {
  if (!connected_) return make_error("set_breakpoint: not connected to the Debug Module");
  if (breakpoints_.count(addr)) return {};
  auto w = halt_writer();
  if (!w) return make_error("set_breakpoint " + hex32(addr) + ": " + w.error().message);
  auto orig = read_memory(*w, 0, addr, 1);
  if (!orig) return make_error("set_breakpoint " + hex32(addr) + ": " + orig.error().message);
  const uint32_t ebreak = kEbreak;
  if (auto r = write_memory(*w, 0, addr, {&ebreak, 1}); !r)
    return make_error("set_breakpoint " + hex32(addr) + ": " + r.error().message);
  breakpoints_[addr] = (*orig)[0];
  if ((dconfig_ & kEbreakHalt) == 0) {
    if (auto r = wr(kDconfig, dconfig_ | kEbreakHalt); !r) return r;
    dconfig_ |= kEbreakHalt;
  }
  return {};
}

Result<void> DmClient::clear_breakpoint(uint32_t addr) {
  auto it = breakpoints_.find(addr);
  if (it == breakpoints_.end()) return make_error("clear_breakpoint: no breakpoint at " + hex32(addr));
  auto w = halt_writer();
  if (!w) return make_error("clear_breakpoint " + hex32(addr) + ": " + w.error().message);
  if (auto r = write_memory(*w, 0, addr, {&it->second, 1}); !r)
    return make_error("clear_breakpoint " + hex32(addr) + ": " + r.error().message);
  breakpoints_.erase(it);
  if (breakpoints_.empty() && !keep_ebreakh_ && (dconfig_ & kEbreakHalt)) {
    if (auto r = wr(kDconfig, dconfig_ & ~kEbreakHalt); !r) return r;
    dconfig_ &= ~kEbreakHalt;
  }
  return {};
}

}  // namespace vx::engine
