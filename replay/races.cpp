#include "replay/races.hpp"

#include <algorithm>

namespace vx::replay {

const char* race_kind_name(RaceKind k) {
  switch (k) {
    case RaceKind::WriteWrite: return "write-write";
    case RaceKind::ReadWrite: return "read-write";
    case RaceKind::SameInstruction: return "same-instruction";
  }
  return "unknown";
}

namespace {
constexpr uint32_t kAtomicBit = 1u << 31;
}  // namespace

RaceDetector::RaceDetector(const DeviceConfig& config) : cfg_(config) {}
RaceDetector::~RaceDetector() = default;

void RaceDetector::launch_started(const LaunchState& launch) {
  launch_ = launch;
  ++launches_;
  uint64_t units;
  if (launch.kind == LaunchKind::Grid) {
    warps_per_unit_ = launch.warps_per_cta;
    per_unit_ = launch.warps_per_cta * cfg_.threads;
    units = launch.total_units;
  } else {
    // Each instance is its own unit: instances share no barrier.
    warps_per_unit_ = 1;
    per_unit_ = 1;
    units = launch.total_units;
  }
  warp_epoch_.assign(size_t(units) * warps_per_unit_, 0);
  warp_fenced_.assign(size_t(units) * warps_per_unit_, 0);
  warp_hart_.assign(size_t(units) * warps_per_unit_, 0);
  cta_clock_.assign(size_t(units), 1);
  cta_vc_.assign(size_t(units), {});
  sync_.clear();
  // The launch boundary orders everything before it.
  shadow_.clear();
  page_key_ = ~0ull;
  page_ = nullptr;
}

RaceDetector::Cell* RaceDetector::cell(uint64_t key) {
  const uint64_t p = key >> 12;
  if (p != page_key_) {
    auto& slot = shadow_[p];
    if (!slot) slot = std::make_unique<Page>();
    page_key_ = p;
    page_ = slot.get();
  }
  return &(*page_)[key & 4095];
}

bool RaceDetector::ordered(const Access& prior, const Access& now, bool local) const {
  if (prior.tid == now.tid) return true;
  const uint32_t pu = (prior.tid - 1) / per_unit_, nu = (now.tid - 1) / per_unit_;
  if (pu == nu) {
    const uint32_t pt = (prior.tid - 1) % per_unit_, nt = (now.tid - 1) % per_unit_;
    if (pt / cfg_.threads == nt / cfg_.threads) return true;          // one warp: one instruction at a time
    return (prior.epoch & ~kAtomicBit) != (now.epoch & ~kAtomicBit);  // a barrier between them
  }
  // Another CTA's local memory access here was an earlier occupant of the slot.
  if (local) return true;
  const auto& vc = cta_vc_[nu];
  auto it = vc.find(pu);
  return it != vc.end() && it->second >= prior.clock;
}

RaceDetector::Access RaceDetector::access(const Observation& o, uint32_t unit, uint32_t thread, uint32_t lane,
                                          uint32_t epoch, uint32_t clock) {
  const bool grid = launch_.kind == LaunchKind::Grid;
  const size_t warp = size_t(unit) * warps_per_unit_ + thread / cfg_.threads;
  if (warp < warp_hart_.size()) warp_hart_[warp] = (o.core * cfg_.warps + o.slot) * cfg_.threads + (grid ? 0 : lane);
  return Access{unit * per_unit_ + thread + 1, epoch, clock, o.pc, uint32_t(o.launch_instret)};
}

RaceAccess RaceDetector::describe(const Access& a, bool write, uint64_t now) const {
  RaceAccess r;
  r.pc = a.pc;
  r.launch_instret = now - uint32_t(uint32_t(now) - a.instret);
  r.write = write;
  r.atomic = a.epoch & kAtomicBit;
  r.unit = (a.tid - 1) / per_unit_;
  r.thread = (a.tid - 1) % per_unit_;
  const size_t warp = size_t(r.unit) * warps_per_unit_ + r.thread / cfg_.threads;
  const uint32_t hart = (warp < warp_hart_.size() ? warp_hart_[warp] : 0) + r.thread % cfg_.threads;
  r.core = hart / cfg_.threads / cfg_.warps;
  r.slot = hart / cfg_.threads % cfg_.warps;
  r.lane = hart % cfg_.threads;
  if (launch_.kind != LaunchKind::Grid) {
    r.thread = r.unit;
    r.unit = 0;
  }
  return r;
}

void RaceDetector::report(RaceKind kind, const Access& prior, const Access& now, bool prior_write, bool now_write,
                          uint32_t addr, bool local, uint32_t core, uint64_t at) {
  const std::array<uint32_t, 3> key{uint32_t(kind), std::min(prior.pc, now.pc), std::max(prior.pc, now.pc)};
  auto [it, fresh] = seen_.try_emplace(key, races_.size());
  if (!fresh) {
    ++races_[it->second].count;
    return;
  }
  Race r;
  r.kind = kind;
  r.launch = launches_;
  r.addr = addr;
  r.local = local;
  r.core = core;
  r.first = describe(prior, prior_write, at);
  r.second = describe(now, now_write, at);
  r.shape = launch_;
  races_.push_back(r);
}

void RaceDetector::retired(const Observation& o) {
  if (launches_ == 0) return;
  const bool grid = launch_.kind == LaunchKind::Grid;
  if (o.cls == InsnClass::Barrier) {
    // A global barrier (bit 31 of the id) spans cores, not one CTA: no rule for it.
    if (grid) {
      const size_t w = size_t(o.cta_linear) * warps_per_unit_ + o.cta_rank;
      if (w < warp_epoch_.size()) ++warp_epoch_[w];
    }
    return;
  }
  const size_t lw = size_t(grid ? o.cta_linear : o.instance_base) * warps_per_unit_ + (grid ? o.cta_rank : 0);
  if (o.cls == InsnClass::Fence) {
    if (lw < warp_fenced_.size()) warp_fenced_[lw] = 1;
    return;
  }
  if (o.cls != InsnClass::Load && o.cls != InsnClass::Store && o.cls != InsnClass::Atomic) return;
  const uint64_t stack_lo = uint64_t(memmap::kStackBase) - uint64_t(cfg_.total_harts()) * memmap::kStackPerHart;
  auto unchecked = [&](const ObservedAccess& a) {
    return !a.local && (a.addr < memmap::kIoEnd || (a.addr >= stack_lo && a.addr < memmap::kStackBase));
  };
  // The first store to checked memory after a FENCE is a release store (loads and the thread's own
  // stack in between do not matter: compilers reload a spilled pointer there).
  bool release_store = false;
  if (o.cls == InsnClass::Store && lw < warp_fenced_.size() && warp_fenced_[lw] && !o.accesses.empty() &&
      !unchecked(o.accesses.front())) {
    release_store = true;
    warp_fenced_[lw] = 0;
  }
  const bool atomic = o.cls == InsnClass::Atomic || release_store;

  // Lanes of the warp writing the same bytes in this one instruction (plain stores: AMOs of several
  // lanes on one word are each applied, in lane order, by definition).
  if (o.cls == InsnClass::Store && !release_store && o.accesses.size() > 1) {
    for (size_t i = 0; i < o.accesses.size(); ++i)
      for (size_t j = i + 1; j < o.accesses.size(); ++j) {
        const ObservedAccess &x = o.accesses[i], &y = o.accesses[j];
        if (x.local != y.local || x.lane == y.lane) continue;
        if (x.addr < y.addr + y.size && y.addr < x.addr + x.size) {
          if (unchecked(x)) continue;
          auto mk = [&](const ObservedAccess& a) {
            const uint32_t unit = grid ? o.cta_linear : o.instance_base + a.lane;
            const uint32_t thread = grid ? o.cta_rank * cfg_.threads + a.lane : 0;
            return access(o, unit, thread, a.lane, 0, 0);
          };
          report(RaceKind::SameInstruction, mk(x), mk(y), true, true, std::max(x.addr, y.addr), x.local, o.core,
                 o.launch_instret);
          i = j = o.accesses.size();  // once per instruction
          break;
        }
      }
  }

  for (const ObservedAccess& a : o.accesses) {
    if (unchecked(a)) continue;
    const uint32_t unit = grid ? o.cta_linear : o.instance_base + a.lane;
    const uint32_t thread = grid ? o.cta_rank * cfg_.threads + a.lane : 0;
    if (unit >= cta_clock_.size()) continue;
    const size_t warp = size_t(unit) * warps_per_unit_ + (grid ? o.cta_rank : 0);
    const Access now =
        access(o, unit, thread, a.lane, (warp < warp_epoch_.size() ? warp_epoch_[warp] : 0) | (atomic ? kAtomicBit : 0),
               cta_clock_[unit]);
    const uint64_t base = a.local ? (1ull << 40) | (uint64_t(o.core) << 32) | a.addr : uint64_t(a.addr);
    const uint64_t word = base & ~3ull;
    if (atomic) {
      // Acquire: what the word's releases ordered now comes before this CTA's next accesses.
      auto s = sync_.find(word);
      if (s != sync_.end())
        for (const auto& [u, c] : s->second) {
          uint32_t& mine = cta_vc_[unit][u];
          mine = std::max(mine, c);
        }
    }
    const bool writes = a.kind & kWatchWrite, reads = a.kind & kWatchRead;
    bool found = false;
    for (uint32_t i = 0; i < a.size; ++i) {
      Cell* c = cell(base + i);
      auto conflict = [&](const Access& prior) {
        return prior.tid != 0 && !((prior.epoch & kAtomicBit) && atomic) && !ordered(prior, now, a.local);
      };
      if (!found && conflict(c->write)) {
        report(writes ? RaceKind::WriteWrite : RaceKind::ReadWrite, c->write, now, true, writes, a.addr + i, a.local,
               o.core, o.launch_instret);
        found = true;
      }
      if (!found && writes && conflict(c->read)) {
        report(RaceKind::ReadWrite, c->read, now, false, true, a.addr + i, a.local, o.core, o.launch_instret);
        found = true;
      }
      if (writes) c->write = now;
      if (reads) c->read = now;
    }
    if (atomic) {
      // Release: everything this CTA did so far is ordered before a later acquire of the word.
      auto& l = sync_[word];
      for (const auto& [u, c] : cta_vc_[unit]) l[u] = std::max(l[u], c);
      l[unit] = std::max(l[unit], cta_clock_[unit]);
      ++cta_clock_[unit];
    }
  }
}

}  // namespace vx::replay
