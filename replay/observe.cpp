#include "replay/observe.hpp"

#include <cassert>
#include <string_view>

namespace vx::replay {

bool placement_csr(uint32_t csr) {
  switch (csr) {
    case 0xF14:  // mhartid
    case 0xCC1:  // warp id
    case 0xCC2:  // core id
    case 0xCD0:  // CTA slot
    case 0xCDF:  // the CTA's local memory address (its slot's)
      return true;
    default: return false;
  }
}

bool atomic_result_used(const CodeReader& code, uint32_t pc, uint32_t word) {
  const uint32_t rd = enc::rd(word);
  if (rd == 0) return false;
  if (!code) return true;
  // A few instructions are enough for what compilers emit after a discarded fetch-and-op.
  for (uint32_t n = 1; n <= 16; ++n) {
    uint32_t w = 0;
    if (!code(pc + 4 * n, &w)) return true;
    const Decoded d = decode(w);
    if (!d.row) return true;
    const std::string_view args = d.row->args;
    const std::string_view m = d.row->mnemonic;
    // Control flow (branches, jumps, SIMT control) ends straight-line code.
    const bool simt_control = d.row->ext == Ext::Vortex &&
                              (m.starts_with("vx_tmc") || m.starts_with("vx_wspawn") || m.starts_with("vx_split") ||
                               m == "vx_join" || m.starts_with("vx_pred") || m == "vxr.resume");
    if (m[0] == 'b' || m[0] == 'j' || simt_control || m == "ecall" || m == "ebreak" || m == "mret") return true;
    const bool reads_rs1 =
        args.find_first_of("soAz") != std::string_view::npos && args.find('z') == std::string_view::npos;
    const bool reads_rs2 = args.find('t') != std::string_view::npos;
    if ((reads_rs1 && d.rs1 == rd) || (reads_rs2 && d.rs2 == rd)) return true;
    if (args.find('d') != std::string_view::npos && d.rd == rd) return false;
  }
  return true;
}

ObservationLog::ObservationLog(const DeviceConfig& config, std::pair<uint32_t, uint32_t> skip, CodeReader code)
    : cfg_(config), skip_(skip), code_(std::move(code)) {}

void ObservationLog::launch_started(const LaunchState& launch) {
  launches_.push_back(launch);
  const uint64_t per_unit = launch.kind == LaunchKind::Grid ? uint64_t(launch.warps_per_cta) * cfg_.threads : 1;
  const uint64_t units = launch.kind == LaunchKind::Grid ? launch.total_units : 1;
  const uint64_t instances = launch.kind == LaunchKind::Grid ? 0 : launch.total_units;
  const uint64_t n = launch.kind == LaunchKind::Grid ? units * per_unit : instances;
  dense_threads_ = launch.kind == LaunchKind::Grid ? uint32_t(per_unit) : 0;
  // Beyond this, threads go through the hash map only.
  dense_.assign(n <= (1u << 24) ? size_t(n) : 0, -1);
  // The launch boundary orders everything: a later launch's reads are not attributed to writers of
  // an earlier one that it cannot name (threads are per launch), so the shadow starts afresh.
  shadow_.clear();
  shadow_page_ = ~0ull;
  shadow_last_ = nullptr;
}

int64_t ObservationLog::find(const ThreadKey& key) const {
  auto it = index_.find((uint64_t(key.launch) << 48) ^ (uint64_t(key.unit) << 24) ^ key.thread);
  if (it == index_.end()) return -1;
  // The packing can collide for huge launches: check.
  if (threads_[it->second].key == key) return it->second;
  for (size_t i = 0; i < threads_.size(); ++i)
    if (threads_[i].key == key) return int64_t(i);
  return -1;
}

uint32_t ObservationLog::thread_index(const Observation& o, uint32_t lane) {
  ThreadKey k;
  k.launch = uint32_t(launches_.size());
  size_t dense = SIZE_MAX;
  if (dense_threads_ != 0) {
    k.unit = o.cta_linear;
    k.thread = o.cta_rank * cfg_.threads + lane;
    dense = size_t(k.unit) * dense_threads_ + k.thread;
  } else {
    k.thread = o.instance_base + lane;
    dense = k.thread;
  }
  if (dense < dense_.size() && dense_[dense] >= 0) return uint32_t(dense_[dense]);
  int64_t found = find(k);
  uint32_t index;
  if (found >= 0) {
    index = uint32_t(found);
  } else {
    index = uint32_t(threads_.size());
    threads_.push_back(ObservedThread{k, {}});
    index_.emplace((uint64_t(k.launch) << 48) ^ (uint64_t(k.unit) << 24) ^ k.thread, index);
  }
  if (dense < dense_.size()) dense_[dense] = int32_t(index);
  return index;
}

uint64_t ObservationLog::normalize(const Observation& o, uint32_t lane, uint32_t v) const {
  // A pointer into the thread's own stack or its CTA's local memory differs with the slot the
  // schedule gave it: compared as an offset into that region.
  const uint32_t hart = (o.core * cfg_.warps + o.slot) * cfg_.threads + lane;
  const uint64_t top = uint64_t(memmap::kStackBase) - uint64_t(hart) * memmap::kStackPerHart;
  if (v < top && v + uint64_t(memmap::kStackPerHart) >= top) return (1ull << 32) | (top - v);
  if (!launches_.empty()) {
    const uint32_t stride = launches_.back().lmem_stride;
    const uint64_t base = uint64_t(memmap::kLocalMemBase) + uint64_t(o.cta_slot) * stride;
    if (stride != 0 && v >= base && v < base + stride) return (2ull << 32) | (v - base);
  }
  return v;
}

void ObservationLog::keep(uint32_t thread, const ThreadObs& t) {
  ObservedThread& th = threads_[thread];
  if (!reference_ || th.diverged) {
    th.obs.push_back(t);
    return;
  }
  if (!t.compared) return;  // not part of the comparison, and not needed for a report
  if (reference_index_.size() <= thread) {
    reference_index_.resize(thread + 1, -2);
    reference_cursor_.resize(thread + 1, 0);
  }
  if (reference_index_[thread] == -2) reference_index_[thread] = reference_->find(th.key);
  if (reference_index_[thread] >= 0) {
    const std::vector<ThreadObs>& ref = reference_->threads()[size_t(reference_index_[thread])].obs;
    uint64_t& i = reference_cursor_[thread];
    while (i < ref.size() && !ref[i].compared) ++i;
    if (i < ref.size() && ref[i].pc == t.pc && ref[i].key == t.key) {
      ++i;
      ++th.matched;
      return;
    }
  }
  th.diverged = true;
  th.obs.push_back(t);
}

Writer* ObservationLog::shadow(uint64_t key) {
  const uint64_t page = key >> 12;
  if (page != shadow_page_) {
    auto& slot = shadow_[page];
    if (!slot) slot = std::make_unique<std::array<Writer, 4096>>();
    shadow_page_ = page;
    shadow_last_ = slot.get();
  }
  return &(*shadow_last_)[key & 4095];
}

void ObservationLog::retired(const Observation& o) {
  if (launches_.empty()) return;  // work outside a launch (none today) has no thread to belong to
  const bool skipped = o.pc >= skip_.first && o.pc < skip_.second;
  auto shadow_key = [&](const ObservedAccess& a) {
    return a.local ? (1ull << 40) | (uint64_t(o.core) << 32) | a.addr : uint64_t(a.addr);
  };
  auto base_obs = [&](uint32_t lane) {
    ThreadObs t;
    t.launch_instret = o.launch_instret;
    t.pc = o.pc;
    t.word = o.word;
    t.core = uint16_t(o.core);
    t.slot = uint8_t(o.slot);
    t.lane = uint8_t(lane);
    t.cls = o.cls;
    return t;
  };
  switch (o.cls) {
    case InsnClass::Csr:
    case InsnClass::Warp:
      if (skipped) return;
      for_each_lane(o.tmask, [&](unsigned lane) {
        ThreadObs t = base_obs(lane);
        t.value = o.values[lane];
        t.addr = o.csr;
        t.compared = !(o.cls == InsnClass::Csr && placement_csr(o.csr));
        t.key = t.compared ? normalize(o, lane, t.value) : 0;
        keep(thread_index(o, lane), t);
        ++count_;
      });
      return;
    case InsnClass::Load:
    case InsnClass::Atomic:
      for (const ObservedAccess& a : o.accesses) {
        if (!(a.kind & kWatchRead) || skipped) continue;
        ThreadObs t = base_obs(a.lane);
        t.value = o.values.empty() ? 0 : o.values[a.lane];
        t.addr = a.addr;
        t.local = a.local;
        // The console rings' indices move with the host's drains, whose timing is the schedule's.
        t.compared = a.local || a.addr >= memmap::kIoEnd;
        if (o.cls == InsnClass::Atomic && t.compared) {
          auto [it, fresh] = atomic_used_.try_emplace(o.pc, false);
          if (fresh) it->second = atomic_result_used(code_, o.pc, o.word);
          t.compared = it->second;
        }
        t.key = t.compared ? normalize(o, a.lane, t.value) : 0;
        t.writer = *shadow(shadow_key(a));
        keep(thread_index(o, a.lane), t);
        ++count_;
      }
      [[fallthrough]];
    case InsnClass::Store:
      for (const ObservedAccess& a : o.accesses) {
        if (!(a.kind & kWatchWrite)) continue;
        Writer w;
        w.launch_instret = o.launch_instret;
        w.thread = thread_index(o, a.lane);
        w.pc = o.pc;
        w.core = uint16_t(o.core);
        w.slot = uint8_t(o.slot);
        w.lane = uint8_t(a.lane);
        w.valid = true;
        for (uint32_t i = 0; i < a.size; ++i) *shadow(shadow_key(a) + i) = w;
      }
      return;
    case InsnClass::Other:
    case InsnClass::Barrier:
    case InsnClass::Fence: return;
  }
}

}  // namespace vx::replay
