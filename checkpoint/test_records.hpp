// Deterministic sample checkpoints for the store's tests, crash helper and benchmark.
// The same (config, key, seed) always gives the same record and pages, so a process that only
// knows a key can rebuild what was written under it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/records.hpp"

namespace vx::checkpoint::testing {

class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {  // splitmix64
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint32_t u32() { return uint32_t(next()); }
  uint32_t below(uint32_t n) { return n ? uint32_t(next() % n) : 0; }
  bool coin() { return next() & 1; }

 private:
  uint64_t s_;
};

inline uint64_t mix(uint64_t a, uint64_t b) { return Rng(a * 0x100000001b3ull ^ b).next(); }

// Page contents that compress like device data: small integers in 32-bit words, runs of zeros.
inline std::vector<uint8_t> page_bytes(uint64_t tag, uint32_t size) {
  Rng r(tag);
  std::vector<uint8_t> b(size, 0);
  uint32_t base = r.below(1000);
  uint32_t zero_from = size / 2 + r.below(size / 2 + 1) / 4 * 4;
  for (uint32_t i = 0; i + 4 <= zero_from; i += 4) {
    uint32_t v = base + i / 4 + (r.below(8) == 0 ? r.below(64) : 0);
    b[i] = uint8_t(v);
    b[i + 1] = uint8_t(v >> 8);
  }
  return b;
}

struct Sample {
  CheckpointRecord rec;
  std::vector<PageData> pages;  // every page rec names, each once
};

inline void add_page(Sample& s, PageData p) {
  for (const PageData& q : s.pages)
    if (q.hash == p.hash) return;
  s.pages.push_back(std::move(p));
}

// A record with every field set. Memory page i of the checkpoint at instret n holds content (i, (n + i) / 2):
// consecutive checkpoints share about half their pages.
inline Sample make_sample(const ConfigRecord& cfg, const TimeKey& key, uint64_t seed, uint32_t mem_pages = 8) {
  Rng r(mix(seed, key.instret) ^ mix(key.instret, key.launch * 31));
  const uint32_t ncores = cfg.total_cores(), nw = cfg.warps, nt = cfg.threads;
  Sample s;
  CheckpointRecord& c = s.rec;
  c.key = key;
  c.stop.kind = StopKind(r.below(kStopKindCount));
  c.stop.text = "Breakpoint " + std::to_string(r.below(10)) + ", k at kernel.c:" + std::to_string(r.below(200));
  c.stop.exception = ExceptionRecord{uint8_t(r.below(16)), r.u32(), r.below(ncores), r.below(nw), r.below(nt), r.u32()};
  c.scheduler.rng = r.next();
  c.scheduler.core_cursor = r.below(ncores);
  for (uint32_t i = 0; i < ncores; ++i) {
    c.scheduler.current_warp.push_back(int32_t(r.below(nw + 1)) - 1);
    c.scheduler.quantum_left.push_back(r.below(17));
  }
  for (uint32_t core = 0; core < ncores; ++core) {
    for (uint32_t slot = 0; slot < nw; ++slot) {
      if (slot && r.below(4) == 0) continue;
      WarpRecord w;
      w.core = core;
      w.slot = slot;
      w.active = r.coin();
      w.pc = 0x80000000u + 4 * r.below(4096);
      w.tmask = r.u32() & (nt >= 32 ? ~0u : (1u << nt) - 1);
      w.wait = WaitKind(r.below(kWaitKindCount));
      w.wait_barrier = r.u32();
      w.wait_phase = r.u32();
      for (uint32_t i = 0, n = r.below(nt); i < n; ++i) w.ipdom.push_back(IpdomRecord{r.u32(), r.u32(), r.coin()});
      w.fcsr = r.below(256);
      w.mscratch = r.u32();
      w.mstatus = r.u32();
      w.mtvec = r.u32();
      w.mepc = r.u32();
      w.mcause = r.u32();
      w.mtval = r.u32();
      w.instret = r.next();
      w.cta_slot = r.below(nw);
      w.cta_rank = r.below(nw);
      w.cta_size = 1 + r.below(nw);
      w.cta_linear = r.u32();
      w.block_id = {r.u32(), r.u32(), r.u32()};
      w.instance_base = r.u32();
      w.slot_used = r.coin();
      w.restart_pc = r.u32();
      for (uint32_t i = 0; i < 32 * nt; ++i) {
        w.x.push_back(i < nt ? 0 : r.below(4) ? r.below(4096) : r.u32());
        w.f.push_back(r.below(2) ? 0x3f800000u + (r.below(1024) << 13) : 0);
      }
      if (r.coin()) w.reservation.assign(nt, 0), w.reservation[r.below(nt)] = r.u32() | 1;
      w.halted = r.coin();
      w.halt_cause = uint8_t(r.below(5));
      w.reset_halt = r.coin();
      if (r.coin())
        for (uint32_t i = 0; i < 4 * nt; ++i) w.dscratch.push_back(r.u32());
      c.warps.push_back(std::move(w));
    }
  }
  for (uint32_t core = 0; core < ncores; ++core) {
    CoreRecord k;
    if (cfg.local_mem_bytes && r.below(4)) {
      PageData lm = make_page(page_bytes(mix(seed, 1000 + core) ^ (key.instret / 2), cfg.local_mem_bytes));
      k.local_mem = BlobRef{cfg.local_mem_bytes, lm.hash};
      add_page(s, std::move(lm));
    }
    for (uint32_t i = 0; i < nw * 8; ++i) k.barriers.push_back(BarrierRecord{r.below(nw), r.below(3)});
    for (uint32_t i = 0; i < nw; ++i) k.slot_warps.push_back(r.below(nw + 1));
    k.lmem_next_slot = r.below(nw);
    k.instret = r.next();
    k.global_arrived = {r.below(nw), r.below(nw)};
    c.cores.push_back(std::move(k));
  }
  uint64_t a = r.below(100), b = 1 + r.below(10), d = r.below(100);
  if (a) c.threads.complete.push_back(UnitRange{0, a});
  c.threads.in_progress.push_back(UnitRange{a, b});
  if (d) c.threads.not_launched.push_back(UnitRange{a + b, d});
  for (uint32_t i = 0, n = r.below(300); i < n; ++i) c.console.push_back(uint8_t(' ' + r.below(95)));
  for (uint32_t i = 0; i < mem_pages; ++i) {
    PageData p = make_page(page_bytes(mix(seed, mix(i, (key.instret + i) / 2)), kPageSize));
    c.memory.push_back(PageRef{0x10 + i * (1 + r.below(3)) + i, p.hash});
    add_page(s, std::move(p));
  }
  for (size_t i = 1; i < c.memory.size(); ++i)
    if (c.memory[i].number <= c.memory[i - 1].number) c.memory[i].number = c.memory[i - 1].number + 1;
  c.state_hash = r.next();
  LaunchRecord& l = c.launch;
  l.kind = LaunchKind(r.below(kLaunchKindCount));
  l.start_pc = r.u32();
  l.entry_pc = r.u32();
  l.arg_ptr = r.u32();
  l.grid = {r.u32(), r.u32(), r.u32()};
  l.block = {r.u32(), r.u32(), r.u32()};
  l.cluster = {r.u32(), r.u32(), r.u32()};
  l.lmem_bytes = r.u32();
  l.lmem_stride = r.u32();
  l.lmem_slots = r.u32();
  l.warps_per_cta = r.u32();
  l.max_harts = r.u32();
  l.num_args = r.u32();
  for (auto& arg : l.args) arg = r.u32();
  l.stack_top = r.u32();
  l.return_addr = r.u32();
  l.slice_id = r.u32();
  l.packed_args = r.u32();
  l.tsd_src = r.u32();
  l.tsd_size = r.u32();
  l.ktb_stride = r.u32();
  l.total_units = r.next();
  l.next_unit = r.next();
  l.kmu_core_cursor = r.u32();
  c.global_barriers = {GlobalBarrierRecord{r.u32(), r.u32()}, GlobalBarrierRecord{r.u32(), r.u32()}};
  c.global_expected = {r.below(ncores + 1), r.below(ncores + 1)};
  c.kernel_instructions = r.next();
  c.kernel_lane_instructions = r.next();
  c.drain_countdown = r.below(4097);
  c.live = r.below(2) != 0;
  c.stepped = r.below(2) != 0;
  return s;
}

}  // namespace vx::checkpoint::testing
