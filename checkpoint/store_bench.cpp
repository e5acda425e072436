// store_bench [DIR]: checkpoint save and restore times and bytes written per checkpoint
// (docs/store.md, "Measurements"). The store is DIR/store (default DIR: a new directory under
// $TMPDIR or /tmp, removed afterwards); put DIR on the file system to measure.
//
// Then a damage survey: copies of a store with bytes flipped anywhere in data.mdb (fixed seeds), each
// opened, listed and verified in a child process; it counts clean reads, reported errors and
// crashes. The store checks every value it reads, and LMDB's own pages on open (lmdb_check.hpp).
//
// The workload: a 1x4x4x32 device (16 warps x 32 lanes), a 4 MiB memory image (1024 pages) saved
// whole in the first checkpoint, then checkpoints that each hand over 64 dirty pages, half of them
// with the same content as in the previous checkpoint (rewritten but unchanged), and the local
// memory of two of the four cores. Data is compressible like kernel data: int and float arrays.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "checkpoint/codec.hpp"
#include "checkpoint/lmdb_check.hpp"
#include "checkpoint/store.hpp"
#include "checkpoint/test_records.hpp"

using namespace vx::checkpoint;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint32_t kImagePages = 1024;
constexpr uint32_t kDirtyPages = 64;
constexpr int kCheckpoints = 200;
const ConfigRecord kConfig{1, 4, 4, 32, 16 * 1024};

// One page of an array: ints (index-like values) or floats (smooth values), with version v mixed in.
std::vector<uint8_t> array_page(uint32_t page, uint32_t v) {
  std::vector<uint8_t> b(kPageSize);
  testing::Rng r(testing::mix(page, v));
  for (uint32_t i = 0; i < kPageSize / 4; ++i) {
    uint32_t w;
    if (page % 2) {
      w = page * 1024 + i + (r.below(16) == 0 ? r.below(100) : 0) + v;
    } else {
      float f = float((i % 64) + v % 7) * 0.25f + float(r.below(4));
      std::memcpy(&w, &f, 4);
    }
    std::memcpy(&b[4 * i], &w, 4);
  }
  return b;
}

WarpRecord warp(uint32_t core, uint32_t slot, testing::Rng& r) {
  WarpRecord w;
  w.core = core;
  w.slot = slot;
  w.active = true;
  w.pc = 0x80000100u + 4 * r.below(512);
  w.tmask = ~0u;
  w.ipdom = {IpdomRecord{~0u, w.pc + 40, false}};
  w.instret = r.below(1u << 20);
  w.cta_linear = core * 4 + slot;
  const uint32_t nt = kConfig.threads;
  w.x.resize(32 * nt);
  w.f.resize(32 * nt);
  for (uint32_t reg = 1; reg < 32; ++reg)
    for (uint32_t lane = 0; lane < nt; ++lane) {
      // Addresses, loop counters and thread indices: mostly per-lane strides of a common base.
      w.x[reg * nt + lane] = reg % 3 == 0   ? 0x10000u + reg * 0x1000 + lane * 4
                             : reg % 3 == 1 ? lane + reg
                                            : r.below(64);
      float f = float(lane) * 0.5f + float(reg);
      std::memcpy(&w.f[reg * nt + lane], &f, 4);
    }
  return w;
}

struct Checkpoint {
  CheckpointRecord rec;
  std::vector<PageData> pages;
  uint64_t dirty_bytes = 0;  // pages handed over plus the registers, raw
};

// Checkpoint n: page versions move forward for 32 of the 64 dirty pages.
Checkpoint make_checkpoint(uint32_t n, std::vector<uint32_t>& version, std::vector<PageHash>& hashes) {
  testing::Rng r(n + 1);
  Checkpoint c;
  c.rec.key = TimeKey{1, uint64_t(n) * 100000};
  c.rec.stop.kind = StopKind::Breakpoint;
  c.rec.stop.text = "Breakpoint 1, sgemm at sgemm.c:31";
  const uint32_t ncores = kConfig.total_cores();
  c.rec.scheduler.rng = r.next();
  c.rec.scheduler.current_warp.assign(ncores, 0);
  c.rec.scheduler.quantum_left.assign(ncores, 3);
  for (uint32_t core = 0; core < ncores; ++core)
    for (uint32_t slot = 0; slot < kConfig.warps; ++slot) c.rec.warps.push_back(warp(core, slot, r));
  for (const WarpRecord& w : c.rec.warps) c.dirty_bytes += 4 * (w.x.size() + w.f.size());
  for (uint32_t core = 0; core < ncores; ++core) {
    CoreRecord k;
    k.barriers.assign(kConfig.warps * 8, BarrierRecord{});
    k.slot_warps.assign(kConfig.warps, 1);
    // Local memory: cores 0 and 1 change at every checkpoint, 2 and 3 keep their content.
    std::vector<uint8_t> lm;
    for (uint32_t p = 0; p < kConfig.local_mem_bytes / kPageSize; ++p) {
      auto part = array_page(100000 + core * 16 + p, core < 2 ? n : 0);
      lm.insert(lm.end(), part.begin(), part.end());
    }
    PageData blob = make_page(std::move(lm));
    k.local_mem = BlobRef{kConfig.local_mem_bytes, blob.hash};
    c.dirty_bytes += blob.bytes.size();
    c.pages.push_back(std::move(blob));
    c.rec.cores.push_back(std::move(k));
  }
  c.rec.threads.complete = {{0, 40 + n}};
  c.rec.threads.in_progress = {{40 + n, 16}};
  c.rec.threads.not_launched = {{56 + n, 10000}};
  std::vector<uint32_t> dirty;
  if (n == 0) {
    for (uint32_t p = 0; p < kImagePages; ++p) dirty.push_back(p);
  } else {
    for (uint32_t i = 0; i < kDirtyPages; ++i) dirty.push_back((n * 37 + i * 13) % kImagePages);
    std::sort(dirty.begin(), dirty.end());
    dirty.erase(std::unique(dirty.begin(), dirty.end()), dirty.end());
    for (size_t i = 0; i < dirty.size(); i += 2) ++version[dirty[i]];  // the other half keep their content
  }
  for (uint32_t p : dirty) {
    PageData d = make_page(array_page(p, version[p]));
    hashes[p] = d.hash;
    c.dirty_bytes += kPageSize;
    bool dup = false;
    for (const PageData& q : c.pages) dup |= q.hash == d.hash;
    if (!dup) c.pages.push_back(std::move(d));
  }
  for (uint32_t p = 0; p < kImagePages; ++p) c.rec.memory.push_back(PageRef{0x10 + p, hashes[p]});
  return c;
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Times {
  std::vector<double> v;
  double median() {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
  }
  double p90() {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() * 9 / 10];
  }
};

int run(const std::string& dir, bool sync, int level) {
  std::filesystem::remove_all(dir);
  OpenOptions opt;
  opt.sync = sync;
  opt.zstd_level = level;
  auto store = Store::open(dir, StoreHeader{kFormatVersion, kConfig, 1, "store_bench"}, OpenMode::Create, opt);
  if (!store) {
    std::fprintf(stderr, "%s\n", store.error().message.c_str());
    return 1;
  }
  std::vector<uint32_t> version(kImagePages, 0);
  std::vector<PageHash> hashes(kImagePages);
  Times save, restore_record, restore_dirty, restore_full;
  uint64_t dirty = 0, written = 0, raw_record = 0;
  uint64_t file_before = 0;
  codec::Codec raw_codec(level);
  for (int n = 0; n <= kCheckpoints; ++n) {
    Checkpoint c = make_checkpoint(uint32_t(n), version, hashes);
    StoreStats before = store->stats();
    auto t0 = Clock::now();
    if (auto r = store->put(c.rec.key, c.rec, c.pages); !r) {
      std::fprintf(stderr, "%s\n", r.error().message.c_str());
      return 1;
    }
    auto t1 = Clock::now();
    StoreStats after = store->stats();
    if (n == 0) {  // the whole image: not a per-checkpoint figure
      file_before = std::filesystem::file_size(dir + "/data.mdb");
      std::printf("  first checkpoint (whole 4 MiB image): %.2f ms, %llu bytes written\n", ms(t1 - t0),
                  static_cast<unsigned long long>(after.stored_page_bytes + after.record_bytes));
      continue;
    }
    save.v.push_back(ms(t1 - t0));
    dirty += c.dirty_bytes;
    written += (after.stored_page_bytes - before.stored_page_bytes) + (after.record_bytes - before.record_bytes);
    std::vector<uint8_t> msg;
    auto sealed = raw_codec.encode_checkpoint(c.rec);
    if (!raw_codec.unseal(codec::Magic::Checkpoint, sealed.data(), sealed.size(), codec::kMaxRecordBytes, &msg))
      return 1;
    raw_record += msg.size();

    // Restore: the record, then the pages that changed since the previous checkpoint, then (every
    // 20th checkpoint) the whole image as a cold re-launch would.
    auto t2 = Clock::now();
    auto rec = store->get(c.rec.key);
    auto t3 = Clock::now();
    if (!rec) return 1;
    for (const PageData& p : c.pages)
      if (!store->read_page(p.hash)) return 1;
    auto t4 = Clock::now();
    restore_record.v.push_back(ms(t3 - t2));
    restore_dirty.v.push_back(ms(t4 - t2));
    if (n % 20 == 0) {
      auto t5 = Clock::now();
      auto full = store->get(c.rec.key);
      for (const PageRef& p : full->memory)
        if (!store->read_page(p.hash)) return 1;
      for (const CoreRecord& k : full->cores)
        if (!store->read_page(k.local_mem.hash)) return 1;
      restore_full.v.push_back(ms(Clock::now() - t5));
    }
  }
  uint64_t file_after = std::filesystem::file_size(dir + "/data.mdb");
  StoreStats st = store->stats();
  double per = double(kCheckpoints);
  std::printf("  save (put, one commit%s): median %.2f ms, p90 %.2f ms\n", sync ? " + fsync" : ", no fsync",
              save.median(), save.p90());
  std::printf(
      "  restore: record %.2f ms; record + its %u handed-over pages %.2f ms; whole image (1024 pages + 4 local "
      "memories) %.2f ms (medians)\n",
      restore_record.median(), kDirtyPages + 4, restore_dirty.median(), restore_full.median());
  std::printf(
      "  per checkpoint: dirty %.0f KiB raw -> %.1f KiB written (%.1fx); record %.1f KiB raw capnp -> %.1f KiB "
      "stored; data.mdb grows %.1f KiB\n",
      double(dirty) / per / 1024, double(written) / per / 1024, double(dirty) / double(written),
      double(raw_record) / per / 1024, double(st.record_bytes) / (per + 1) / 1024,
      double(file_after - file_before) / per / 1024);
  std::printf(
      "  pages: %llu handed over, %llu written, %llu shared; written pages %.1f KiB raw -> %.1f KiB stored "
      "(zstd %.2fx)\n",
      static_cast<unsigned long long>(st.pages_given), static_cast<unsigned long long>(st.pages_written),
      static_cast<unsigned long long>(st.pages_shared), double(st.new_page_raw_bytes) / 1024,
      double(st.stored_page_bytes) / 1024, double(st.new_page_raw_bytes) / double(st.stored_page_bytes));

  // Reopening: Store::open first walks every reachable page of data.mdb (lmdb_check.hpp).
  { Store closed = std::move(*store); }
  Times open_times, check_times;
  uint64_t walked = 0;
  for (int i = 0; i < 9; ++i) {
    auto t0 = Clock::now();
    auto shape = lmdb::check_file(dir + "/data.mdb");
    auto t1 = Clock::now();
    auto reopened = Store::open_existing(dir, OpenMode::ReadOnly);
    auto t2 = Clock::now();
    if (!shape || !reopened) return 1;
    walked = shape->pages_read;
    check_times.v.push_back(ms(t1 - t0));
    open_times.v.push_back(ms(t2 - t1));
  }
  std::printf("  open (%.1f MB data.mdb): median %.2f ms, of which the structural check (%llu pages read) %.2f ms\n",
              double(file_after) / 1e6, open_times.median(), static_cast<unsigned long long>(walked),
              check_times.median());
  return 0;
}

// Flips `flips` random bytes anywhere in a copy of a 60-checkpoint store, `trials` times.
int damage_survey(const std::string& dir, uint64_t seed, int trials, int flips) {
  const ConfigRecord cfg{1, 2, 4, 8, 4096};
  std::filesystem::remove_all(dir);
  {
    OpenOptions o;
    o.sync = false;
    auto s = Store::open(dir, StoreHeader{kFormatVersion, cfg, 1, "damage"}, OpenMode::Create, o);
    if (!s) return 1;
    for (uint32_t i = 0; i < 60; ++i) {
      TimeKey k{1, i};
      auto smp = testing::make_sample(cfg, k, seed, 16);
      if (!s->put(k, smp.rec, smp.pages)) return 1;
    }
  }
  const std::string data = dir + "/data.mdb";
  std::ifstream in(data, std::ios::binary);
  std::vector<char> whole((std::istreambuf_iterator<char>(in)), {});
  testing::Rng rng(seed);
  int clean = 0, reported = 0, crashed = 0;
  for (int t = 0; t < trials; ++t) {
    auto bad = whole;
    for (int f = 0; f < flips; ++f) bad[rng.below(uint32_t(bad.size()))] ^= char(1 + rng.below(255));
    {
      std::ofstream out(data, std::ios::binary | std::ios::trunc);
      out.write(bad.data(), std::streamsize(bad.size()));
    }
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      alarm(30);
      auto s = Store::open_existing(dir, OpenMode::ReadOnly);
      if (!s) _exit(1);
      auto keys = s->list();
      if (!keys) _exit(1);
      int e = keys->size() == 60 ? 0 : 1;
      for (const TimeKey& k : *keys)
        if (!s->verify(k) || s->get(k)->key != k) e = 1;
      _exit(e);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st)) {
      ++crashed;
      std::printf("  trial %d: killed by signal %d\n", t, WTERMSIG(st));
    } else if (WEXITSTATUS(st) == 0) {
      ++clean;
    } else {
      ++reported;
    }
  }
  std::printf(
      "  %d trials of %d flipped bytes in a %zu-byte data.mdb (seed %llu): %d read back whole and verified, "
      "%d reported an error, %d crashed\n",
      trials, flips, whole.size(), static_cast<unsigned long long>(seed), clean, reported, crashed);
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  const bool own_dir = argc < 2;
  if (!own_dir) {
    dir = argv[1];
  } else {
    const char* base = std::getenv("TMPDIR");
    std::string t = std::string(base && *base ? base : "/tmp") + "/vxck-bench-XXXXXX";
    if (!mkdtemp(t.data())) return 1;
    dir = t;
  }
  std::printf("store_bench: %d checkpoints of a 1x4x4x32 device, %u dirty pages each (half unchanged), in %s\n",
              kCheckpoints, kDirtyPages, dir.c_str());
  int rc = 0;
  for (auto [sync, level] : {std::pair{true, 3}, {false, 3}, {false, 1}}) {
    std::printf("sync %s, zstd level %d:\n", sync ? "on" : "off", level);
    rc |= run(dir + "/store", sync, level);
  }
  std::printf("damage survey (children that crash are counted, not fatal):\n");
  rc |= damage_survey(dir + "/store", 1, 1000, 1);
  rc |= damage_survey(dir + "/store", 2, 300, 20);
  std::filesystem::remove_all(dir + "/store");
  if (own_dir) std::filesystem::remove(dir);
  return rc;
}
