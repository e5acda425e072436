// Vortex SIMT instructions (shared/spec/vortex-v3.md, "Vortex instructions").
// All are R-type on CUSTOM0 (0x0B).
#include <array>
#include <bit>

#include "device/machine.hpp"

namespace vx {

namespace {

constexpr uint32_t kCustom0 = 0x0b;
constexpr uint32_t kMaskF7F3 = 0xfe00707f;  // funct7 | funct3 | opcode
constexpr uint32_t kRdField = 0x00000f80;
constexpr uint32_t kRs2Field = 0x01f00000;

constexpr uint32_t op(uint32_t funct7, uint32_t funct3) { return (funct7 << 25) | (funct3 << 12) | kCustom0; }

// Bit 0 of rs1 in each active lane, as a lane mask.
uint32_t predicate_mask(ExecCtx& c, unsigned rs1) {
  uint32_t m = 0;
  for_each_lane(c.tmask, [&](unsigned l) { m |= (c.X(rs1, l) & 1u) << l; });
  return m;
}

void write_all(ExecCtx& c, unsigned rd, uint32_t v) {
  if (rd == 0) return;
  for_each_lane(c.tmask, [&](unsigned l) { c.X(rd, l) = v; });
}

// TMC rs1: tmask = rs1 & full; a zero mask retires the warp.
Outcome exec_tmc(ExecCtx& c, const Decoded& d) {
  c.next_tmask = c.X(d.rs1, c.last_lane()) & c.m.config().full_mask();
  return Outcome::retire();
}

// WSPAWN rs1 = count, rs2 = pc.
Outcome exec_wspawn(ExecCtx& c, const Decoded& d) {
  unsigned l = c.last_lane();
  return c.m.wspawn(c, c.X(d.rs1, l), c.X(d.rs2, l));
}

Outcome split_impl(ExecCtx& c, const Decoded& d, bool negate) {
  uint32_t pred = predicate_mask(c, d.rs1);
  if (negate) pred = ~pred & c.tmask;
  uint32_t then_mask = c.tmask & pred, else_mask = c.tmask & ~pred;
  uint32_t token = uint32_t(c.w.ipdom.size());
  if (then_mask != 0 && else_mask != 0) {
    if (c.w.ipdom.size() >= c.m.config().ipdom_depth())
      return Outcome::fault(Cause::IpdomOverflow, c.last_lane(), c.pc);
    c.w.ipdom.push_back(IpdomEntry{c.tmask, c.pc + 4, false});
    // Vortex 3.0: the smaller side runs first, the then-side on a tie.
    c.next_tmask = lane_count(then_mask) <= lane_count(else_mask) ? then_mask : else_mask;
  }
  write_all(c, d.rd, token);
  return Outcome::retire();
}
Outcome exec_split(ExecCtx& c, const Decoded& d) { return split_impl(c, d, false); }
Outcome exec_split_n(ExecCtx& c, const Decoded& d) { return split_impl(c, d, true); }

Outcome exec_join(ExecCtx& c, const Decoded& d) {
  uint32_t token = c.X(d.rs1, c.last_lane());
  auto& stack = c.w.ipdom;
  if (token == stack.size()) return Outcome::retire();  // the split was uniform
  if (stack.empty() || token != stack.size() - 1) return Outcome::fault(Cause::IpdomUnderflow, c.last_lane(), token);
  IpdomEntry& top = stack.back();
  if (!top.fallthrough) {
    // Run the other side from the instruction after the SPLIT.
    c.next_tmask = top.orig_mask & ~c.tmask;
    c.next_pc = top.else_pc;
    top.fallthrough = true;
  } else {
    c.next_tmask = top.orig_mask;
    stack.pop_back();
  }
  return Outcome::retire();
}

Outcome exec_bar(ExecCtx& c, const Decoded& d) {
  unsigned l = c.last_lane();
  return c.m.bar(c, c.X(d.rs1, l), c.X(d.rs2, l));
}

Outcome pred_impl(ExecCtx& c, const Decoded& d, bool negate) {
  uint32_t cond = predicate_mask(c, d.rs1);
  if (negate) cond = ~cond;
  uint32_t p = c.tmask & cond;
  c.next_tmask = p != 0 ? p : (c.X(d.rs2, c.last_lane()) & c.m.config().full_mask());
  return Outcome::retire();
}
Outcome exec_pred(ExecCtx& c, const Decoded& d) { return pred_impl(c, d, false); }
Outcome exec_pred_n(ExecCtx& c, const Decoded& d) { return pred_impl(c, d, true); }

// BAR.ARRIVE rd, rs1 = barrier id, rs2 = count: rd = phase parity.
Outcome exec_bar_arrive(ExecCtx& c, const Decoded& d) {
  unsigned l = c.last_lane();
  uint32_t token = 0;
  Outcome o = c.m.bar_arrive(c, c.X(d.rs1, l), c.X(d.rs2, l), &token);
  if (o.step == Step::Retire) write_all(c, d.rd, token);
  return o;
}

// BAR.WAIT rs1 = barrier id, rs2 = token.
Outcome exec_bar_wait(ExecCtx& c, const Decoded& d) {
  unsigned l = c.last_lane();
  return c.m.bar_wait(c, c.X(d.rs1, l), c.X(d.rs2, l));
}

// WSYNC drains in-flight operations: nothing is in flight in a functional model.
Outcome exec_wsync(ExecCtx&, const Decoded&) { return Outcome::retire(); }

// VXR.RESUME (vxreplay extension, CUSTOM3): ends the thread-entry routine of a re-launched warp.
Outcome exec_vxr_resume(ExecCtx& c, const Decoded&) { return c.m.resume_request(c); }

template <int Kind>
Outcome exec_vote(ExecCtx& c, const Decoded& d) {
  uint32_t pred = predicate_mask(c, d.rs1);
  uint32_t v = 0;
  if constexpr (Kind == 0) v = pred == c.tmask;               // ALL
  if constexpr (Kind == 1) v = pred != 0;                     // ANY
  if constexpr (Kind == 2) v = pred == 0 || pred == c.tmask;  // UNI
  if constexpr (Kind == 3) v = pred;                          // BALLOT
  write_all(c, d.rd, v);
  return Outcome::retire();
}

template <int Kind>
Outcome exec_shfl(ExecCtx& c, const Decoded& d) {
  const uint32_t nt = c.nt;
  std::array<uint32_t, 32> out{};
  for_each_lane(c.tmask, [&](unsigned t) {
    uint32_t ctl = c.X(d.rs2, t);
    uint32_t b = ctl & 63, cc = (ctl >> 6) & 63, mask = (ctl >> 12) & 63;
    uint32_t lo = t & mask, hi = lo | (cc & ~mask);
    int64_t src = -1;
    if constexpr (Kind == 0) src = int64_t(t) - int64_t(b) >= int64_t(lo) ? int64_t(t) - b : -1;  // UP
    if constexpr (Kind == 1) src = t + b <= hi ? int64_t(t + b) : -1;                             // DOWN
    if constexpr (Kind == 2) src = (t ^ b) <= hi ? int64_t(t ^ b) : -1;                           // BFLY
    if constexpr (Kind == 3) src = (lo | (b & ~mask)) <= hi ? int64_t(lo | (b & ~mask)) : -1;     // IDX
    if (src < 0 || src >= int64_t(nt)) src = t;  // out of range: keep own value
    out[t] = c.X(d.rs1, uint32_t(src));          // the source lane may be inactive
  });
  if (d.rd != 0) for_each_lane(c.tmask, [&](unsigned t) { c.X(d.rd, t) = out[t]; });
  return Outcome::retire();
}

const InsnRow kRows[] = {
    {"vx_tmc", kMaskF7F3, op(0, 0), ImmKind::None, "s", exec_tmc, Ext::Vortex},
    {"vx_wspawn", kMaskF7F3, op(0, 1), ImmKind::None, "s,t", exec_wspawn, Ext::Vortex},
    {"vx_split", kMaskF7F3 | kRs2Field, op(0, 2), ImmKind::None, "d,s", exec_split, Ext::Vortex},
    {"vx_split.n", kMaskF7F3, op(0, 2), ImmKind::None, "d,s", exec_split_n, Ext::Vortex, kRs2Field, 0},
    {"vx_join", kMaskF7F3, op(0, 3), ImmKind::None, "s", exec_join, Ext::Vortex},
    {"vx_bar", kMaskF7F3, op(0, 4), ImmKind::None, "s,t", exec_bar, Ext::Vortex},
    {"vx_pred", kMaskF7F3 | kRdField, op(0, 5), ImmKind::None, "s,t", exec_pred, Ext::Vortex},
    {"vx_pred.n", kMaskF7F3, op(0, 5), ImmKind::None, "s,t", exec_pred_n, Ext::Vortex, kRdField, 0},
    {"vx_bar.arrive", kMaskF7F3, op(0, 6), ImmKind::None, "d,s,t", exec_bar_arrive, Ext::Vortex, kRdField, 0},
    {"vx_bar.wait", kMaskF7F3 | kRdField, op(0, 6), ImmKind::None, "s,t", exec_bar_wait, Ext::Vortex},
    {"vx_wsync", kMaskF7F3, op(0, 7), ImmKind::None, "", exec_wsync, Ext::Vortex},
    {"vxr.resume", 0xffffffffu, 0x0000007bu, ImmKind::None, "", exec_vxr_resume, Ext::Vortex},
    {"vx_vote.all", kMaskF7F3, op(1, 0), ImmKind::None, "d,s", exec_vote<0>, Ext::Vortex},
    {"vx_vote.any", kMaskF7F3, op(1, 1), ImmKind::None, "d,s", exec_vote<1>, Ext::Vortex},
    {"vx_vote.uni", kMaskF7F3, op(1, 2), ImmKind::None, "d,s", exec_vote<2>, Ext::Vortex},
    {"vx_vote.ballot", kMaskF7F3, op(1, 3), ImmKind::None, "d,s", exec_vote<3>, Ext::Vortex},
    {"vx_shfl.up", kMaskF7F3, op(1, 4), ImmKind::None, "d,s,t", exec_shfl<0>, Ext::Vortex},
    {"vx_shfl.down", kMaskF7F3, op(1, 5), ImmKind::None, "d,s,t", exec_shfl<1>, Ext::Vortex},
    {"vx_shfl.bfly", kMaskF7F3, op(1, 6), ImmKind::None, "d,s,t", exec_shfl<2>, Ext::Vortex},
    {"vx_shfl.idx", kMaskF7F3, op(1, 7), ImmKind::None, "d,s,t", exec_shfl<3>, Ext::Vortex},
};

}  // namespace

std::span<const InsnRow> vortex_rows() { return kRows; }

}  // namespace vx
