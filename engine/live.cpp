#include "engine/live.hpp"

#include <cstring>

#include "device/debug_module.hpp"

namespace vx::engine {

namespace {
constexpr uint32_t kCsrMinstret = 0xB02;  // the core's retired warp instructions
}

const char* session_mode_name(SessionMode m) {
  switch (m) {
    case SessionMode::Relaunch: return "relaunch";
    case SessionMode::Live: return "live";
    case SessionMode::Auto: return "auto";
  }
  return "?";
}

std::optional<SessionMode> parse_session_mode(const std::string& text) {
  if (text == "relaunch") return SessionMode::Relaunch;
  if (text == "live") return SessionMode::Live;
  if (text == "auto") return SessionMode::Auto;
  return std::nullopt;
}

bool probe_debug_module(Driver& d) {
  DmClient c(d);
  return c.connect().ok();
}

Result<Platform> LiveDevice::connect() {
  auto p = dm_.connect();
  if (!p) return p.error();
  platform_ = *p;
  if (auto r = dm_.set_ebreak_halt(); !r) return r.error();
  return platform_;
}

Result<void> LiveDevice::sync_breakpoints(const std::set<uint32_t>& want) {
  std::vector<uint32_t> drop;
  for (const auto& [addr, word] : dm_.breakpoints())
    if (!want.count(addr)) drop.push_back(addr);
  for (uint32_t a : drop)
    if (auto r = dm_.clear_breakpoint(a); !r) return r;
  for (uint32_t a : want)
    if (auto r = dm_.set_breakpoint(a); !r) return r;
  return {};
}

Result<LiveStep> LiveDevice::step(uint32_t g) {
  auto pc0 = dm_.read_pc(g);
  if (!pc0) return pc0.error();
  const bool at_bp = dm_.breakpoints().count(*pc0) != 0;
  if (at_bp)
    if (auto r = dm_.clear_breakpoint(*pc0); !r) return r.error();
  auto one = [&]() -> Result<LiveStep> {
    LiveStep out;
    auto r = dm_.step(g);
    if (!r) {
      // DCTRL.EXC and its cause (DSELECT still names g).
      auto ctrl = d_.dm_read(dm::kDctrl);
      ++extra_;
      if (!ctrl) return ctrl.error();
      if (!(*ctrl & dm::kExc)) return r.error();
      out.kind = LiveStep::Fault;
      out.pc = *pc0;
      out.cause = Cause((*ctrl >> dm::kExcCauseShift) & 0xf);
      return out;
    }
    ++extra_;
    auto active = d_.dm_read(dm::kWactive);  // the window follows the selected warp
    if (!active) return active.error();
    if (!((*active >> (g % 32)) & 1)) {
      out.kind = LiveStep::Exited;
      return out;
    }
    auto pc = dm_.read_pc(g);
    if (!pc) return pc.error();
    out.pc = *pc;
    return out;
  };
  auto res = one();
  if (res && res->kind == LiveStep::Retired && res->pc == *pc0) {
    // Same PC: a waiting warp (barrier, spawn) executed nothing, or a jump to itself. The core's
    // minstret tells (every other warp is halted): a second step either moves it or not.
    auto m1 = dm_.read_csr(g, 0, kCsrMinstret);
    if (!m1) return m1.error();
    auto again = one();
    if (!again) return again;
    if (again->kind == LiveStep::Retired) {
      auto m2 = dm_.read_csr(g, 0, kCsrMinstret);
      if (!m2) return m2.error();
      if (*m2 == *m1) again->kind = LiveStep::Waiting;
    }
    res = again;
  }
  if (at_bp)
    if (auto r = dm_.set_breakpoint(*pc0); !r) return r.error();
  return res;
}

Result<void> LiveDevice::read_warps(DeviceContext& ctx, uint32_t threads) {
  for (uint32_t c = 0; c < ctx.cores.size(); ++c)
    for (uint32_t w = 0; w < ctx.cores[c].warps.size(); ++w) {
      WarpState& ws = ctx.cores[c].warps[w];
      if (!ws.active) continue;
      auto snap = dm_.read_warp(gid(c, w));
      if (!snap) return snap.error();
      ws.pc = snap->pc;
      ws.tmask = snap->tmask;
      // The per-warp CSRs a kernel can read (lane 0 reads the warp's), by injected csrr.
      for (auto [csr, field] : {std::pair{0x003u, &ws.fcsr},
                                {0x300u, &ws.mstatus},
                                {0x305u, &ws.mtvec},
                                {0x340u, &ws.mscratch},
                                {0x341u, &ws.mepc},
                                {0x342u, &ws.mcause},
                                {0x343u, &ws.mtval}}) {
        auto v = dm_.read_csr(gid(c, w), 0, csr);
        if (!v) return v.error();
        *field = *v;
      }
      for (uint32_t t = 0; t < threads && t < snap->threads.size(); ++t)
        for (uint32_t r = 0; r < 32; ++r) {
          if (ws.x.size() > r * threads + t) ws.x[r * threads + t] = snap->threads[t].x[r];
          if (ws.f.size() > r * threads + t) ws.f[r * threads + t] = snap->threads[t].f[r];
        }
    }
  return {};
}

Result<std::optional<std::vector<uint32_t>>> LiveDevice::range_stops(uint32_t through, uint32_t lo, uint32_t hi) {
  using Out = std::optional<std::vector<uint32_t>>;
  if ((lo & 3) || (hi & 3) || hi <= lo || (hi - lo) / 4 > kMaxRangeRunWords) return Out{};
  const uint32_t n = (hi - lo) / 4;
  auto words = dm_.read_memory(through, 0, lo, n);
  if (!words) return words.error();
  const auto& planted = dm_.breakpoints();
  std::set<uint32_t> stops;
  auto outside = [&](uint32_t t) { return t < lo || t >= hi; };
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t a = lo + 4 * i;
    if (planted.count(a)) continue;  // halts there already
    const uint32_t w = (*words)[i];
    if ((w & 3) != 3) return Out{};  // a compressed instruction: no 4-byte EBREAK fits its slot
    switch (w & 0x7f) {
      case 0x03:
      case 0x07:
      case 0x13:
      case 0x17:
      case 0x23:
      case 0x27:
      case 0x2f:  // loads, stores, ALU, AMO
      case 0x33:
      case 0x37:
      case 0x43:
      case 0x47:
      case 0x4b:
      case 0x4f:
      case 0x53:  // OP, LUI, FP
        if (outside(a + 4)) stops.insert(a + 4);
        break;
      case 0x63: {  // branches: both ways
        const int32_t imm =
            int32_t(((w >> 31) & 1) << 12 | ((w >> 7) & 1) << 11 | ((w >> 25) & 0x3f) << 5 | ((w >> 8) & 0xf) << 1)
                << 19 >>
            19;
        const uint32_t t = a + uint32_t(imm);
        if (t & 3) return Out{};
        if (outside(t)) stops.insert(t);
        if (outside(a + 4)) stops.insert(a + 4);
        break;
      }
      case 0x6f: {  // jal
        const int32_t imm =
            int32_t(((w >> 31) & 1) << 20 | ((w >> 12) & 0xff) << 12 | ((w >> 20) & 1) << 11 | ((w >> 21) & 0x3ff) << 1)
                << 11 >>
            11;
        const uint32_t t = a + uint32_t(imm);
        if (t & 3) return Out{};
        if (outside(t)) stops.insert(t);
        break;
      }
      default: stops.insert(a);  // executed by a DM step
    }
  }
  return Out{std::vector<uint32_t>(stops.begin(), stops.end())};
}

Result<void> LiveDevice::read_bytes(uint32_t through, uint32_t addr, std::span<uint8_t> out) {
  if (out.empty()) return {};
  const uint32_t base = addr & ~3u;
  const uint64_t end = uint64_t(addr) + out.size();
  const uint32_t words = uint32_t((end - base + 3) / 4);
  auto v = dm_.read_memory(through, 0, base, words);
  if (!v) return v.error();
  std::vector<uint8_t> bytes(size_t(words) * 4);
  std::memcpy(bytes.data(), v->data(), bytes.size());
  std::memcpy(out.data(), bytes.data() + (addr - base), out.size());
  return {};
}

}  // namespace vx::engine
