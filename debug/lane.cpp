#include "debug/lane.hpp"

#include <algorithm>
#include <bit>

namespace vx::debug {

int64_t thread_id(const DeviceConfig& c, const Lane& l) {
  return 1 + (int64_t(l.core) * c.warps + l.slot) * c.threads + l.lane;
}

std::optional<Lane> lane_of_thread(const DeviceConfig& c, int64_t tid) {
  if (tid <= 0) return std::nullopt;
  const uint64_t i = uint64_t(tid - 1), per_core = uint64_t(c.warps) * c.threads;
  if (per_core == 0 || i / per_core >= c.total_cores()) return std::nullopt;
  return Lane{uint32_t(i / per_core), uint32_t(i / c.threads % c.warps), uint32_t(i % c.threads)};
}

bool is_resident(const DeviceContext& ctx, uint32_t nt, const Lane& l) {
  if (l.core >= ctx.cores.size() || l.slot >= ctx.cores[l.core].warps.size() || l.lane >= nt) return false;
  const WarpState& w = ctx.cores[l.core].warps[l.slot];
  const auto& b = ctx.launch.block;
  const uint64_t block_threads = uint64_t(std::max(1u, b[0])) * std::max(1u, b[1]) * std::max(1u, b[2]);
  // An instance launch (no grid) has no block: every lane of a resident warp is a thread.
  if (ctx.launch.kind != LaunchKind::Grid) return w.active;
  return w.active && uint64_t(w.cta_rank) * nt + l.lane < block_threads;
}

std::vector<Lane> resident_lanes(const DeviceContext& ctx, uint32_t nt) {
  std::vector<Lane> out;
  for (uint32_t c = 0; c < ctx.cores.size(); ++c)
    for (uint32_t s = 0; s < ctx.cores[c].warps.size(); ++s)
      for (uint32_t lane = 0; lane < nt; ++lane)
        if (is_resident(ctx, nt, Lane{c, s, lane})) out.push_back(Lane{c, s, lane});
  return out;
}

namespace {

// The warp's lane `want` when active, else its lowest active lane (want itself when none is).
uint32_t pick(const DeviceContext& ctx, uint32_t core, uint32_t slot, uint32_t want) {
  const uint32_t m = ctx.cores[core].warps[slot].tmask;
  if (m >> want & 1) return want;
  return m ? uint32_t(std::countr_zero(m)) : want;
}

bool active(const DeviceContext& ctx, uint32_t core, uint32_t slot) {
  return core < ctx.cores.size() && slot < ctx.cores[core].warps.size() && ctx.cores[core].warps[slot].active;
}

}  // namespace

std::optional<Lane> stop_lane(const engine::StopEvent& ev, const DeviceContext& ctx, uint32_t nt,
                              std::optional<Lane> preferred, std::optional<Lane> hit_lane) {
  using R = engine::StopReason;
  std::optional<Lane> l;
  switch (ev.reason) {
    case R::Exception:
    case R::Assertion:
    case R::Watchdog:
    case R::Watchpoint:
    case R::Breakpoint: break;
    default:
      // A step, or a stop that names a warp (a move in time to a mark): that warp.
      if (!ev.hits.empty() && active(ctx, ev.hits[0].warp.core, ev.hits[0].warp.slot)) {
        const engine::WarpId w = ev.hits[0].warp;
        l = Lane{w.core, w.slot, pick(ctx, w.core, w.slot, preferred && preferred->warp() == w ? preferred->lane : 0)};
      }
      break;
  }
  switch (ev.reason) {
    case R::Exception:
    case R::Assertion:
    case R::Watchdog:
      if (active(ctx, ev.exception.core, ev.exception.warp))
        l = Lane{ev.exception.core, ev.exception.warp,
                 pick(ctx, ev.exception.core, ev.exception.warp, ev.exception.lane)};
      break;
    case R::Watchpoint:
      if (!ev.watches.empty() && active(ctx, ev.watches[0].warp.core, ev.watches[0].warp.slot)) {
        const auto& w = ev.watches[0];
        l = Lane{w.warp.core, w.warp.slot, w.lanes ? uint32_t(std::countr_zero(w.lanes)) : 0u};
      }
      break;
    case R::Breakpoint:
      if (hit_lane) {
        l = hit_lane;
        break;
      }
      for (const engine::WarpHit& h : ev.hits)
        if (preferred && h.warp == preferred->warp() && (h.lanes >> preferred->lane & 1)) l = preferred;
      if (!l)
        for (const engine::WarpHit& h : ev.hits)
          if (active(ctx, h.warp.core, h.warp.slot)) {
            l = Lane{h.warp.core, h.warp.slot,
                     h.lanes ? uint32_t(std::countr_zero(h.lanes)) : pick(ctx, h.warp.core, h.warp.slot, 0)};
            break;
          }
      break;
    default: break;
  }
  if (l && is_resident(ctx, nt, *l)) return l;
  if (preferred && is_resident(ctx, nt, *preferred)) {
    // The lane followed so far, or its warp's lowest active lane.
    return Lane{preferred->core, preferred->slot, pick(ctx, preferred->core, preferred->slot, preferred->lane)};
  }
  // A hit warp's lowest active lane, then the first resident lane.
  for (const engine::WarpHit& h : ev.hits)
    if (active(ctx, h.warp.core, h.warp.slot)) {
      Lane c{h.warp.core, h.warp.slot, pick(ctx, h.warp.core, h.warp.slot, 0)};
      if (is_resident(ctx, nt, c)) return c;
    }
  for (uint32_t c = 0; c < ctx.cores.size(); ++c)
    for (uint32_t s = 0; s < ctx.cores[c].warps.size(); ++s)
      if (ctx.cores[c].warps[s].active) {
        Lane x{c, s, pick(ctx, c, s, 0)};
        if (is_resident(ctx, nt, x)) return x;
      }
  auto all = resident_lanes(ctx, nt);
  if (!all.empty()) return all.front();
  return std::nullopt;
}

}  // namespace vx::debug
