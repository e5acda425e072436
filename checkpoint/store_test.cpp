// Tests of the checkpoint store (docs/store.md): round trips, time order, page sharing, crash
// safety, and damaged stores. Seeds are fixed; the property test prints its seed when it fails.
#include "checkpoint/store.hpp"

#include <fcntl.h>
#include <lmdb.h>
#include <poll.h>
#include <rapidcheck.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/codec.hpp"
#include "checkpoint/lmdb_check.hpp"
#include "checkpoint/ops_journal.hpp"
#include "checkpoint/test_records.hpp"
#include "tests/property.hpp"

using namespace vx::checkpoint;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kSeed = 20261122;
// rapidcheck announces its global configuration (a random seed unless told) on first use; the
// property below passes its own fixed seed, so make the announcement say the same.
const int kRcParams = setenv("RC_PARAMS", "seed=20261122", 0);
const ConfigRecord kConfig{1, 2, 4, 8, 4096};

StoreHeader header_for(const ConfigRecord& cfg, uint64_t kernel = 0xc0ffee) {
  return StoreHeader{kFormatVersion, cfg, kernel, "store_test"};
}
OpenOptions no_sync() {
  OpenOptions o;
  o.sync = false;
  return o;
}

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string t = std::string(base && *base ? base : "/tmp") + "/vxck-XXXXXX";
    REQUIRE(mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};

template <class T>
T must(vx::Result<T> r) {
  if (!r) FAIL(r.error().message);
  return std::move(r).value();
}
void must(vx::Result<void> r) {
  if (!r) FAIL(r.error().message);
}
// The error message of a result that must have failed.
template <class T>
std::string error_of(const vx::Result<T>& r) {
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

using testing::make_sample;
using testing::Sample;

Sample sample_at(const TimeKey& key, uint32_t mem_pages = 8) { return make_sample(kConfig, key, kSeed, mem_pages); }

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}
void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}
std::vector<size_t> find_all(const std::vector<uint8_t>& hay, const std::vector<uint8_t>& needle) {
  std::vector<size_t> at;
  auto it = hay.begin();
  while ((it = std::search(it, hay.end(), needle.begin(), needle.end())) != hay.end()) {
    at.push_back(size_t(it - hay.begin()));
    ++it;
  }
  return at;
}
// XORs one byte at each offset of data.mdb, in place (an open store's map sees the change).
void xor_bytes(const std::string& path, const std::vector<size_t>& offsets, uint8_t mask) {
  int fd = ::open(path.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  for (size_t off : offsets) {
    uint8_t b = 0;
    REQUIRE(pread(fd, &b, 1, off_t(off)) == 1);
    b ^= mask;
    REQUIRE(pwrite(fd, &b, 1, off_t(off)) == 1);
  }
  ::close(fd);
}

// Raw LMDB access, to build damaged stores the Store API refuses to write. The Store must be closed.
class RawEnv {
 public:
  explicit RawEnv(const std::string& dir) {
    REQUIRE(mdb_env_create(&env_) == 0);
    mdb_env_set_maxdbs(env_, 4);
    mdb_env_set_mapsize(env_, 1ull << 30);
    REQUIRE(mdb_env_open(env_, dir.c_str(), MDB_NOTLS, 0644) == 0);
    REQUIRE(mdb_txn_begin(env_, nullptr, 0, &txn_) == 0);
  }
  ~RawEnv() {
    if (txn_) mdb_txn_abort(txn_);
    mdb_env_close(env_);
  }
  MDB_dbi db(const char* name) {
    MDB_dbi d;
    REQUIRE(mdb_dbi_open(txn_, name, MDB_CREATE, &d) == 0);
    return d;
  }
  void put(const char* dbname, const void* k, size_t kn, const void* v, size_t vn) {
    MDB_val key{kn, const_cast<void*>(k)}, val{vn, const_cast<void*>(v)};
    REQUIRE(mdb_put(txn_, db(dbname), &key, &val, 0) == 0);
  }
  std::vector<uint8_t> get(const char* dbname, const void* k, size_t kn) {
    MDB_val key{kn, const_cast<void*>(k)}, val;
    REQUIRE(mdb_get(txn_, db(dbname), &key, &val) == 0);
    auto* p = static_cast<const uint8_t*>(val.mv_data);
    return std::vector<uint8_t>(p, p + val.mv_size);
  }
  void del(const char* dbname, const void* k, size_t kn) {
    MDB_val key{kn, const_cast<void*>(k)};
    REQUIRE(mdb_del(txn_, db(dbname), &key, nullptr) == 0);
  }
  void commit() {
    REQUIRE(mdb_txn_commit(txn_) == 0);
    txn_ = nullptr;
  }

 private:
  MDB_env* env_ = nullptr;
  MDB_txn* txn_ = nullptr;
};

// A store in dir holding the checkpoints at keys (make_sample content).
void fill(const std::string& dir, const std::vector<TimeKey>& keys, uint32_t mem_pages = 8) {
  auto store = must(Store::open(dir, header_for(kConfig), OpenMode::Create, no_sync()));
  for (const TimeKey& k : keys) {
    auto s = sample_at(k, mem_pages);
    must(store.put(k, s.rec, s.pages));
  }
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("A checkpoint with every field set reads back exactly, before and after reopening the store") {
  TempDir dir;
  const TimeKey key{3, 123456789012ull};
  auto s = sample_at(key);
  REQUIRE(s.rec.warps.size() > 1);
  REQUIRE_FALSE(s.rec.warps[0].ipdom.empty());
  {
    auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::Create));
    must(store.put(key, s.rec, s.pages));
    CHECK(must(store.get(key)) == s.rec);
  }
  auto store = must(Store::open_existing(dir.path, OpenMode::ReadOnly));
  CHECK(store.header() == header_for(kConfig));
  CHECK(must(store.get(key)) == s.rec);
  for (const PageData& p : s.pages) CHECK(must(store.read_page(p.hash)) == p.bytes);
  must(store.verify(key));
}

TEST_CASE("Random records round-trip through the store exactly (rapidcheck, fixed seed)") {
  TempDir dir;
  const ConfigRecord cfg{1, 2, 2, 4, 256};
  auto store = must(Store::open(dir.path, header_for(cfg), OpenMode::Create, no_sync()));
  const uint32_t ncores = cfg.total_cores(), nw = cfg.warps, nt = cfg.threads;
  uint32_t seq = 0;
  std::vector<PageData> earlier;  // pages of earlier records, named again to exercise sharing

  auto property = [&] {
    using namespace rc;
    auto u32 = [] { return *gen::arbitrary<uint32_t>(); };
    auto u64 = [] { return *gen::arbitrary<uint64_t>(); };
    auto below = [](uint32_t n) { return *gen::inRange<uint32_t>(0, n); };
    auto words = [&](size_t n) { return *gen::container<std::vector<uint32_t>>(n, gen::arbitrary<uint32_t>()); };
    std::vector<PageData> pages;
    auto page = [&](uint32_t size) {
      if (size == kPageSize && !earlier.empty() && *gen::arbitrary<bool>()) {
        const PageData& p = earlier[below(uint32_t(earlier.size()))];
        return p.hash;  // already stored: named, not given
      }
      PageData p = make_page(testing::page_bytes(u64(), size));
      for (const PageData& q : pages)
        if (q.hash == p.hash) return p.hash;
      pages.push_back(p);
      return p.hash;
    };

    CheckpointRecord r;
    r.key = TimeKey{u32(), (u64() & ~0xffffull) | seq++};
    r.stop.kind = StopKind(below(kStopKindCount));
    r.stop.text = *gen::arbitrary<std::string>();
    r.stop.exception = ExceptionRecord{uint8_t(below(256)), u32(), u32(), u32(), u32(), u32()};
    r.scheduler.rng = u64();
    r.scheduler.core_cursor = below(ncores);
    for (uint32_t c = 0; c < ncores; ++c) {
      r.scheduler.current_warp.push_back(int32_t(below(nw + 1)) - 1);
      r.scheduler.quantum_left.push_back(u32());
    }
    for (uint32_t c = 0; c < ncores; ++c)
      for (uint32_t slot = 0; slot < nw; ++slot) {
        if (!*gen::arbitrary<bool>()) continue;
        WarpRecord w;
        w.core = c;
        w.slot = slot;
        w.active = *gen::arbitrary<bool>();
        w.pc = u32();
        w.tmask = u32();
        w.wait = WaitKind(below(kWaitKindCount));
        w.wait_barrier = u32();
        w.wait_phase = u32();
        for (uint32_t i = 0, n = below(nt); i < n; ++i)
          w.ipdom.push_back(IpdomRecord{u32(), u32(), *gen::arbitrary<bool>()});
        w.fcsr = u32();
        w.mscratch = u32();
        w.mstatus = u32();
        w.mtvec = u32();
        w.mepc = u32();
        w.mcause = u32();
        w.mtval = u32();
        w.instret = u64();
        w.cta_slot = u32();
        w.cta_rank = u32();
        w.cta_size = u32();
        w.cta_linear = u32();
        w.block_id = {u32(), u32(), u32()};
        w.instance_base = u32();
        w.slot_used = *gen::arbitrary<bool>();
        w.restart_pc = u32();
        w.x = words(32 * nt);
        w.f = words(32 * nt);
        if (*gen::arbitrary<bool>()) w.reservation = words(nt);
        w.halted = *gen::arbitrary<bool>();
        w.halt_cause = uint8_t(below(256));
        w.reset_halt = *gen::arbitrary<bool>();
        if (*gen::arbitrary<bool>()) w.dscratch = words(4 * nt);
        r.warps.push_back(std::move(w));
      }
    for (uint32_t c = 0; c < ncores; ++c) {
      CoreRecord k;
      if (*gen::arbitrary<bool>()) k.local_mem = BlobRef{cfg.local_mem_bytes, page(cfg.local_mem_bytes)};
      for (uint32_t i = 0, n = below(20); i < n; ++i) k.barriers.push_back(BarrierRecord{u32(), u32()});
      k.slot_warps = words(below(5));
      k.lmem_next_slot = u32();
      k.instret = u64();
      k.global_arrived = words(below(5));
      r.cores.push_back(std::move(k));
    }
    // Sorted, disjoint ranges dealt to the three lists (or left as gaps).
    uint64_t at = *gen::inRange<uint64_t>(0, 1ull << 40);
    for (uint32_t i = 0, n = below(8); i < n; ++i) {
      uint64_t count = 1 + below(1000);
      switch (below(4)) {
        case 0: r.threads.complete.push_back({at, count}); break;
        case 1: r.threads.in_progress.push_back({at, count}); break;
        case 2: r.threads.not_launched.push_back({at, count}); break;
        default: break;
      }
      at += count + below(3);
    }
    r.console = *gen::arbitrary<std::vector<uint8_t>>();
    uint64_t number = below(1u << 20);
    for (uint32_t i = 0, n = below(6); i < n; ++i) {
      r.memory.push_back(PageRef{number, page(kPageSize)});
      number += 1 + below(1u << 20);
    }
    r.state_hash = u64();
    LaunchRecord& l = r.launch;
    l.kind = LaunchKind(below(kLaunchKindCount));
    l.start_pc = u32();
    l.entry_pc = u32();
    l.arg_ptr = u32();
    l.grid = {u32(), u32(), u32()};
    l.block = {u32(), u32(), u32()};
    l.cluster = {u32(), u32(), u32()};
    l.lmem_bytes = u32();
    l.lmem_stride = u32();
    l.lmem_slots = u32();
    l.warps_per_cta = u32();
    l.max_harts = u32();
    l.num_args = u32();
    for (auto& a : l.args) a = u32();
    l.stack_top = u32();
    l.return_addr = u32();
    l.slice_id = u32();
    l.packed_args = u32();
    l.tsd_src = u32();
    l.tsd_size = u32();
    l.ktb_stride = u32();
    l.total_units = u64();
    l.next_unit = u64();
    l.kmu_core_cursor = u32();
    for (uint32_t i = 0, n = below(4); i < n; ++i) r.global_barriers.push_back({u32(), u32()});
    // Empty as in a record written before it was stored, or one per global barrier.
    if (*gen::arbitrary<bool>()) r.global_expected = words(r.global_barriers.size());
    r.kernel_instructions = u64();
    r.kernel_lane_instructions = u64();
    r.drain_countdown = u64();
    r.live = *gen::arbitrary<bool>();
    r.stepped = *gen::arbitrary<bool>();

    // RC_ASSERT does not short-circuit && or ||: failures are reported with RC_FAIL.
    if (auto put = store.put(r.key, r, pages); !put) RC_FAIL(put.error().message);
    auto back = store.get(r.key);
    if (!back) RC_FAIL(back.error().message);
    RC_ASSERT(*back == r);
    for (const PageData& p : pages) {
      auto bytes = store.read_page(p.hash);
      if (!bytes) RC_FAIL(bytes.error().message);
      RC_ASSERT(*bytes == p.bytes);
      if (p.bytes.size() == kPageSize) earlier.push_back(p);
    }
  };

  vx::test::check_property("store round trip", kSeed, 150, 50, property);
}

TEST_CASE("Checkpoints put out of time order list in time order: launch, then instret") {
  // Big-endian keys: byte order must be numeric order across byte boundaries.
  std::vector<TimeKey> keys = {
      {0, 1},          {0, 256},  {0, 255},   {0, 1ull << 32}, {0, (1ull << 32) + 1},
      {0, 1ull << 56}, {1, 0},    {0x100, 0}, {0x01000000, 0}, {0, ~0ull},
      {2, 1000},       {2, 1001}, {2, 999},   {~0u, ~0ull},    {1, 0xff00},
  };
  std::vector<TimeKey> shuffled = keys;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(kSeed));
  TempDir dir;
  fill(dir.path, shuffled, 1);
  auto store = must(Store::open_existing(dir.path, OpenMode::ReadOnly));
  std::sort(keys.begin(), keys.end());
  CHECK(must(store.list()) == keys);
  CHECK(store.stats().records == keys.size());
}

TEST_CASE("at_or_before finds the latest checkpoint at or before a time, and nothing before the first") {
  TempDir dir;
  {
    auto empty = must(Store::open(dir.path, header_for(kConfig), OpenMode::Create, no_sync()));
    CHECK_FALSE(must(empty.at_or_before(TimeKey{9, 9})).has_value());
  }
  std::vector<TimeKey> keys = {{1, 100}, {1, 101}, {1, 355}, {1, 0x100000000ull}, {2, 50}};
  fill(dir.path, {keys[3], keys[0], keys[4], keys[2], keys[1]}, 1);
  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadOnly));

  SECTION("before all") {
    CHECK_FALSE(must(store.at_or_before(TimeKey{0, 0})).has_value());
    CHECK_FALSE(must(store.at_or_before(TimeKey{1, 99})).has_value());
  }
  SECTION("equal") {
    for (const TimeKey& k : keys) CHECK(must(store.at_or_before(k)) == k);
  }
  SECTION("between") {
    CHECK(must(store.at_or_before(TimeKey{1, 102})) == keys[1]);
    CHECK(must(store.at_or_before(TimeKey{1, 354})) == keys[1]);
    CHECK(must(store.at_or_before(TimeKey{1, 0xffffffffull})) == keys[2]);
    CHECK(must(store.at_or_before(TimeKey{1, ~0ull})) == keys[3]);
    CHECK(must(store.at_or_before(TimeKey{2, 49})) == keys[3]);
  }
  SECTION("after all") {
    CHECK(must(store.at_or_before(TimeKey{2, 51})) == keys[4]);
    CHECK(must(store.at_or_before(TimeKey{~0u, ~0ull})) == keys[4]);
  }
  SECTION("agrees with a search of the sorted keys at random times") {
    std::mt19937_64 rng(kSeed);
    for (int i = 0; i < 2000; ++i) {
      TimeKey t{uint32_t(rng() % 4), (rng() % 2) ? rng() % 400 : 0x100000000ull - 2 + rng() % 4};
      auto it = std::upper_bound(keys.begin(), keys.end(), t);
      std::optional<TimeKey> want = it == keys.begin() ? std::nullopt : std::optional<TimeKey>(*std::prev(it));
      INFO(t.to_string());
      REQUIRE(must(store.at_or_before(t)) == want);
    }
  }
}

TEST_CASE("Two checkpoints naming the same page content store it once") {
  TempDir dir;
  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::Create, no_sync()));
  PageData shared = make_page(testing::page_bytes(1, kPageSize));
  PageData own1 = make_page(testing::page_bytes(2, kPageSize));
  PageData own2 = make_page(testing::page_bytes(3, kPageSize));
  auto a = sample_at(TimeKey{1, 10}, 0);
  auto b = sample_at(TimeKey{1, 20}, 0);
  for (auto* s : {&a, &b})
    for (auto& c : s->rec.cores) c.local_mem = BlobRef{};
  a.rec.memory = {{0x10, shared.hash}, {0x11, own1.hash}, {0x12, shared.hash}};  // the same content twice
  b.rec.memory = {{0x10, shared.hash}, {0x11, own2.hash}};
  must(store.put(a.rec.key, a.rec, {shared, own1}));
  CHECK(store.stats().pages == 2);
  must(store.put(b.rec.key, b.rec, {shared, own2}));
  StoreStats st = store.stats();
  CHECK(st.records == 2);
  CHECK(st.pages == 3);
  CHECK(st.pages_given == 4);
  CHECK(st.pages_written == 3);
  CHECK(st.pages_shared == 1);
  CHECK(st.raw_page_bytes == 4 * kPageSize);
  CHECK(st.stored_page_bytes < 3 * kPageSize / 2);  // compressible pages
  // A third checkpoint may name stored pages without handing them over again.
  auto c = sample_at(TimeKey{1, 30}, 0);
  for (auto& core : c.rec.cores) core.local_mem = BlobRef{};
  c.rec.memory = {{0x10, own1.hash}, {0x20, own2.hash}};
  must(store.put(c.rec.key, c.rec, {}));
  CHECK(store.stats().pages == 3);
  CHECK(must(store.get(c.rec.key)) == c.rec);
  must(store.verify(a.rec.key));
  must(store.verify(c.rec.key));
}

TEST_CASE("A staged checkpoint reads back at once, commits with the next durable write, and a kill loses only it") {
  TempDir dir;
  auto a = sample_at(TimeKey{1, 10}), b = sample_at(TimeKey{1, 20}), c = sample_at(TimeKey{1, 30});
  // In a child that ends like a killed process (no destructors): a durable put, then a staged one.
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto st = Store::open(dir.path, header_for(kConfig), OpenMode::Create);
    bool ok = st && st->put(a.rec.key, a.rec, a.pages) && st->put(b.rec.key, b.rec, b.pages, nullptr, false) &&
              st->staged() == 1;
    if (ok) {
      auto has = st->has(b.rec.key);
      ok = has && *has;
    }
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadWrite));
  CHECK(must(store.list()) == std::vector<TimeKey>{a.rec.key});

  must(store.put(b.rec.key, b.rec, b.pages, nullptr, false));
  must(store.put(c.rec.key, c.rec, c.pages, nullptr, false));
  CHECK(store.staged() == 2);
  CHECK(must(store.get(b.rec.key)) == b.rec);
  must(store.verify(c.rec.key));
  CHECK(must(store.has(c.rec.key)));
  CHECK(must(store.list()) == std::vector<TimeKey>{a.rec.key, b.rec.key, c.rec.key});
  CHECK(must(store.at_or_before(TimeKey{1, 25})) == b.rec.key);
  CHECK(must(store.at_or_before(TimeKey{1, 15})) == a.rec.key);
  CHECK_FALSE(store.put(b.rec.key, b.rec, b.pages, nullptr, false));  // records are immutable, staged too
  // A mark is durable: it commits the staged checkpoints in its transaction.
  must(store.set_mark(c.rec.key, StopRecord{StopKind::Breakpoint, "breakpoint", {}}));
  CHECK(store.staged() == 0);
  CHECK(must(store.marks()).size() == 1);
  must(store.verify(b.rec.key));
  // Marks keep the number they were made with (goto N): one made earlier in time takes the next
  // number, and marking a point again keeps its number.
  must(store.set_mark(a.rec.key, StopRecord{StopKind::Step, "step", {}}));
  must(store.set_mark(c.rec.key, StopRecord{StopKind::Breakpoint, "again", {}}));
  auto marks = must(store.marks());
  REQUIRE(marks.size() == 2);
  CHECK(marks[0].first == a.rec.key);
  CHECK(marks[0].second.number == 2);
  CHECK(marks[1].first == c.rec.key);
  CHECK(marks[1].second.number == 1);
  CHECK(marks[1].second.text == "again");
  // A stop derived from the checkpoint before it is recorded by its mark alone (docs/store.md, "Stops").
  const TimeKey derived{1, 27};
  REQUIRE_FALSE(must(store.has(derived)));
  must(store.set_mark(derived, StopRecord{StopKind::Step, "step", {}}));
  CHECK_FALSE(must(store.has(derived)));
  marks = must(store.marks());
  REQUIRE(marks.size() == 3);
  auto it = std::find_if(marks.begin(), marks.end(), [&](const auto& m) { return m.first == derived; });
  REQUIRE(it != marks.end());
  CHECK(it->second.number == 3);
  CHECK(contains(error_of(store.set_mark(TimeKey{0, 5}, StopRecord{StopKind::Step, "step", {}})),
                 "launches are numbered from 1"));
}

TEST_CASE("Staged checkpoints that cannot be committed are given up and counted; durable writes go on without them") {
  TempDir dir;
  OpenOptions oo = no_sync();
  oo.map_size = 256 * 1024;
  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::Create, oo));
  std::mt19937 rng(kSeed);
  auto one_page_at = [&](TimeKey key) {
    std::vector<uint8_t> noise(kPageSize);
    for (auto& b : noise) b = uint8_t(rng());
    Sample s = sample_at(key, 0);
    for (auto& c : s.rec.cores) c.local_mem = BlobRef{};
    s.pages = {make_page(noise)};
    s.rec.memory = {{7, s.pages[0].hash}};
    return s;
  };
  auto a = one_page_at(TimeKey{1, 0});
  must(store.put(a.rec.key, a.rec, a.pages));
  // More incompressible pages than the map holds: staging them writes nothing, so it succeeds.
  std::vector<Sample> autos;
  for (uint64_t i = 1; i <= 80; ++i) {
    autos.push_back(one_page_at(TimeKey{1, i * 10}));
    must(store.put(autos.back().rec.key, autos.back().rec, autos.back().pages, nullptr, false));
  }
  CHECK(store.staged() == 80);
  CHECK(store.staged_lost() == 0);
  // A mark is durable: carrying the staged checkpoints it cannot commit; they are given up and it is
  // committed alone.
  must(store.set_mark(a.rec.key, StopRecord{StopKind::Breakpoint, "breakpoint", {}}));
  CHECK(store.staged() == 0);
  CHECK(store.staged_lost() == 80);
  CHECK(store.staged_error().code == vx::ErrorCode::StoreFull);
  CHECK(store.staged_error().message.find("MDB_MAP_FULL") != std::string::npos);  // what the user reads
  CHECK(must(store.list()) == std::vector<TimeKey>{a.rec.key});
  CHECK(must(store.marks()).size() == 1);
  // A later stop may name a page of a given-up checkpoint without giving it (its writer counts it
  // as stored): it is written then.
  Sample m = sample_at(TimeKey{1, 1000}, 0);
  for (auto& c : m.rec.cores) c.local_mem = BlobRef{};
  m.rec.memory = {{7, autos[3].pages[0].hash}};
  must(store.put(m.rec.key, m.rec, {}, nullptr, true));
  must(store.verify(m.rec.key));
  // sync() fails the same way and counts what it gives up; a checkpoint that fits goes on staging.
  for (uint64_t i = 0; i < 80; ++i) {
    auto s = one_page_at(TimeKey{2, i});
    must(store.put(s.rec.key, s.rec, s.pages, nullptr, false));
  }
  CHECK_FALSE(store.sync());
  CHECK(store.staged_lost() == 160);
  auto late = one_page_at(TimeKey{3, 0});
  must(store.put(late.rec.key, late.rec, late.pages, nullptr, false));
  must(store.sync());
  CHECK(must(store.list()) == std::vector<TimeKey>{a.rec.key, m.rec.key, late.rec.key});
  must(store.verify(late.rec.key));
}

TEST_CASE("An incompressible page is stored raw: never more than its bytes plus the envelope") {
  TempDir dir;
  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::Create, no_sync()));
  std::vector<uint8_t> noise(kPageSize);
  std::mt19937 rng(kSeed);
  for (auto& b : noise) b = uint8_t(rng());
  PageData p = make_page(noise);
  auto s = sample_at(TimeKey{1, 0}, 0);
  for (auto& c : s.rec.cores) c.local_mem = BlobRef{};
  s.rec.memory = {{7, p.hash}};
  must(store.put(s.rec.key, s.rec, {p}));
  CHECK(store.stats().stored_page_bytes == kPageSize + codec::kEnvelopeBytes);
  CHECK(must(store.read_page(p.hash)) == noise);
}

TEST_CASE("put refuses inconsistent input and leaves the store unchanged") {
  TempDir dir;
  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::Create, no_sync()));
  const TimeKey key{1, 100};
  auto s = sample_at(key);
  must(store.put(key, s.rec, s.pages));
  const StoreStats before = store.stats();
  const TimeKey other{1, 200};
  auto t = sample_at(other);

  SECTION("a checkpoint at an existing time") {
    CHECK(contains(error_of(store.put(key, s.rec, s.pages)), "already exists"));
  }
  SECTION("a record whose own key differs") { CHECK(contains(error_of(store.put(other, s.rec, s.pages)), "own key")); }
  SECTION("a page whose bytes do not match its hash") {
    t.pages[0].bytes[5] ^= 1;
    CHECK(contains(error_of(store.put(other, t.rec, t.pages)), "hash to"));
  }
  SECTION("a page the record does not name") {
    t.pages.push_back(make_page(testing::page_bytes(99, kPageSize)));
    CHECK(contains(error_of(store.put(other, t.rec, t.pages)), "does not name it"));
  }
  SECTION("a named page that is neither given nor stored") {
    t.rec.memory.push_back(PageRef{1u << 30, make_page(testing::page_bytes(98, kPageSize)).hash});
    CHECK(contains(error_of(store.put(other, t.rec, t.pages)), "neither given nor stored"));
  }
  SECTION("a memory page of the wrong size") {
    PageData small = make_page(std::vector<uint8_t>(100, 1));
    t.rec.memory.push_back(PageRef{1u << 30, small.hash});
    t.pages.push_back(small);
    CHECK(contains(error_of(store.put(other, t.rec, t.pages)), "uses it as 4096"));
  }
  SECTION("a warp with the wrong number of registers") {
    t.rec.warps[0].x.pop_back();
    CHECK(contains(error_of(store.put(other, t.rec, t.pages)), "register values"));
  }
  SECTION("a warp outside the device") {
    t.rec.warps.back().slot = kConfig.warps;
    CHECK(contains(error_of(store.put(other, t.rec, t.pages)), "outside the device"));
  }
  SECTION("overlapping thread lists") {
    t.rec.threads.complete = {{0, 10}};
    t.rec.threads.in_progress = {{5, 1}};
    t.rec.threads.not_launched.clear();
    CHECK(contains(error_of(store.put(other, t.rec, t.pages)), "thread lists"));
  }
  SECTION("global barrier expectations that are neither empty nor one per global barrier") {
    t.rec.global_expected.push_back(1);
    CHECK(contains(error_of(store.put(other, t.rec, t.pages)), "3 global barrier expectations for 2 global barriers"));
  }
  SECTION("memory pages out of order") {
    std::swap(t.rec.memory[0], t.rec.memory[1]);
    CHECK(contains(error_of(store.put(other, t.rec, t.pages)), "increasing order"));
  }
  CHECK(must(store.list()) == std::vector<TimeKey>{key});
  CHECK(store.stats().pages == before.pages);
}

TEST_CASE(
    "A read-only store refuses a durable put and keeps staged ones in memory; a new store needs a valid device "
    "configuration") {
  TempDir dir;
  fill(dir.path, {TimeKey{1, 0}});
  const auto bytes_before = read_file(dir.path + "/data.mdb");
  {
    auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadOnly));
    // Staged (a launch start a read-only session derives): read back from memory, never written.
    auto t = sample_at(TimeKey{2, 0});
    must(store.put(t.rec.key, t.rec, t.pages, nullptr, false));
    // A durable write is refused, and the staged checkpoint stays (nothing to commit it with).
    auto s = sample_at(TimeKey{1, 5});
    CHECK(contains(error_of(store.put(s.rec.key, s.rec, s.pages)), "read-only"));
    StopRecord mark;
    CHECK(contains(error_of(store.set_mark(TimeKey{2, 0}, mark)), "read-only"));
    CHECK(store.staged() == 1);
    CHECK(store.staged_lost() == 0);
    CHECK(must(store.has(TimeKey{2, 0})));
    CHECK(must(store.get(TimeKey{2, 0})) == t.rec);
    CHECK(must(store.at_or_before(TimeKey{2, 7})) == std::optional<TimeKey>(TimeKey{2, 0}));
    CHECK(must(store.list()).size() == 2);
    CHECK(store.staged() == 1);
    CHECK(store.sync());  // nothing to commit for a read-only store
  }
  CHECK(read_file(dir.path + "/data.mdb") == bytes_before);
  auto again = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadOnly));
  CHECK_FALSE(must(again.has(TimeKey{2, 0})));
  TempDir other;
  CHECK(contains(
      error_of(Store::open(other.path + "/new", header_for(ConfigRecord{1, 1, 4, 64, 4096}), OpenMode::Create)),
      "not valid"));
}

// --- Crash safety -----------------------------------------------------------------------------

namespace {

// Reads committed checkpoint numbers from the helper's pipe until want more arrive (want 0: until EOF).
void read_lines(int fd, std::string& buf, std::vector<uint32_t>& out, size_t want) {
  size_t target = out.size() + want;
  for (;;) {
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      out.push_back(uint32_t(std::stoul(buf.substr(0, nl))));
      buf.erase(0, nl + 1);
    }
    if (want && out.size() >= target) return;
    pollfd p{fd, POLLIN, 0};
    int ready = poll(&p, 1, 30000);
    REQUIRE(ready == 1);  // the helper neither wrote nor exited for 30 s
    char chunk[4096];
    ssize_t n = read(fd, chunk, sizeof chunk);
    REQUIRE(n >= 0);
    if (n == 0) {
      REQUIRE(want == 0);  // the helper exited before it was killed
      return;
    }
    buf.append(chunk, size_t(n));
  }
}

TimeKey crash_key(uint32_t n) { return TimeKey{1, uint64_t(n) * 1000 + 7}; }
uint32_t crash_index(const TimeKey& k) { return uint32_t((k.instret - 7) / 1000); }

}  // namespace

TEST_CASE("A writer killed at 20 points leaves every committed checkpoint readable and no partial one", "[crash]") {
  // A sync at every commit, and group commit (a commit not synced yet is in the system's cache: a
  // killed process does not take it along).
  const uint32_t interval = GENERATE(0u, 200u);
  INFO("sync interval " << interval << " ms");
  TempDir dir;
  std::mt19937 rng(kSeed);
  std::set<uint32_t> announced;
  for (int kill_no = 0; kill_no < 20; ++kill_no) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      dup2(fds[1], 1);
      ::close(fds[0]);
      ::close(fds[1]);
      execl(VX_CRASH_HELPER, VX_CRASH_HELPER, dir.path.c_str(), std::to_string(kSeed).c_str(),
            std::to_string(interval).c_str(), (char*)nullptr);
      _exit(127);
    }
    ::close(fds[1]);
    std::string buf;
    std::vector<uint32_t> got;
    // Kill after 1..6 commits plus 0..12 ms: inside a put (page writes, fsync) or between puts.
    read_lines(fds[0], buf, got, 1 + rng() % 6);
    usleep(useconds_t(rng() % 12000));
    REQUIRE(kill(pid, SIGKILL) == 0);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    read_lines(fds[0], buf, got, 0);
    ::close(fds[0]);
    INFO("kill " << kill_no);
    REQUIRE(WIFSIGNALED(status));
    REQUIRE(WTERMSIG(status) == SIGKILL);
    announced.insert(got.begin(), got.end());

    auto store = must(
        Store::open(dir.path, StoreHeader{kFormatVersion, kConfig, 0xc0ffee, "crash_helper"}, OpenMode::ReadWrite));
    auto keys = must(store.list());
    std::set<uint32_t> stored;
    for (const TimeKey& k : keys) {
      REQUIRE(k == crash_key(crash_index(k)));
      stored.insert(crash_index(k));
    }
    // Every announced checkpoint is there; at most one more (committed, killed before announcing).
    for (uint32_t n : announced) REQUIRE(stored.count(n));
    REQUIRE(stored.size() <= announced.size() + 1);
    REQUIRE(!stored.empty());
    REQUIRE(*stored.rbegin() + 1 == stored.size());  // 0..n without holes
    for (const TimeKey& k : keys) {
      INFO(k.to_string());
      must(store.verify(k));
      REQUIRE(must(store.get(k)) == make_sample(kConfig, k, kSeed, 16).rec);
    }
    announced = stored;  // the unannounced one is now known to be committed
  }
  CHECK(announced.size() >= 20);
}

TEST_CASE("A writer killed inside its write transaction leaves the store as it was, and unlocked", "[crash]") {
  TempDir dir;
  const TimeKey kept{1, 1}, lost{1, 1000};  // far apart: no page in common
  fill(dir.path, {kept});
  const auto lost_sample = sample_at(lost);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Everything a put writes, in one write transaction, then death before the commit. Plain LMDB
    // calls: the child must not run Catch assertions.
    MDB_env* env = nullptr;
    MDB_txn* txn = nullptr;
    MDB_dbi pages, checkpoints;
    if (mdb_env_create(&env) || mdb_env_set_maxdbs(env, 4) || mdb_env_set_mapsize(env, 1ull << 30) ||
        mdb_env_open(env, dir.path.c_str(), MDB_NOTLS, 0644) || mdb_txn_begin(env, nullptr, 0, &txn) ||
        mdb_dbi_open(txn, "pages", 0, &pages) || mdb_dbi_open(txn, "checkpoints", 0, &checkpoints))
      _exit(1);
    codec::Codec c;
    for (const PageData& p : lost_sample.pages) {
      auto k = codec::encode_hash(p.hash);
      auto v = c.encode_page(p.bytes.data(), p.bytes.size());
      MDB_val key{k.size(), k.data()}, val{v.size(), v.data()};
      if (mdb_put(txn, pages, &key, &val, 0)) _exit(1);
    }
    auto k = codec::encode_key(lost);
    auto v = c.encode_checkpoint(lost_sample.rec);
    MDB_val key{k.size(), k.data()}, val{v.size(), v.data()};
    if (mdb_put(txn, checkpoints, &key, &val, 0)) _exit(1);
    kill(getpid(), SIGKILL);
    _exit(1);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);

  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadWrite));
  CHECK(must(store.list()) == std::vector<TimeKey>{kept});
  CHECK(store.stats().pages == sample_at(kept).pages.size());
  for (const PageData& p : lost_sample.pages) CHECK(contains(error_of(store.read_page(p.hash)), "not in the store"));
  must(store.verify(kept));
  // The dead writer's lock was recovered: the same checkpoint can now be put for real.
  must(store.put(lost, lost_sample.rec, lost_sample.pages));
  CHECK(must(store.get(lost)) == lost_sample.rec);
}

// --- Damaged stores ---------------------------------------------------------------------------

TEST_CASE("A directory without a store is reported, and ReadWrite does not create one", "[malformed]") {
  TempDir dir;
  for (auto mode : {OpenMode::ReadWrite, OpenMode::ReadOnly}) {
    CHECK(contains(error_of(Store::open(dir.path, header_for(kConfig), mode)), "no checkpoint store"));
    CHECK(contains(error_of(Store::open_existing(dir.path + "/missing", mode)), "no checkpoint store"));
  }
  CHECK_FALSE(fs::exists(dir.path + "/data.mdb"));
}

TEST_CASE("A store written by another format version is refused with both versions named", "[malformed]") {
  TempDir dir;
  fill(dir.path, {TimeKey{1, 0}});
  for (uint32_t version : {kFormatVersion + 1, kOldestFormatVersion - 1, 0u}) {
    {
      RawEnv raw(dir.path);
      codec::Codec c;
      auto value = c.encode_header(StoreHeader{version, kConfig, 0xc0ffee, "future"});
      raw.put("meta", "header", 6, value.data(), value.size());
      raw.commit();
    }
    auto msg = error_of(Store::open(dir.path, header_for(kConfig), OpenMode::ReadOnly));
    INFO(msg);
    CHECK(contains(msg, "version " + std::to_string(version)));
    CHECK(
        (contains(msg, "version " + std::to_string(kFormatVersion)) ||
         contains(msg, "versions " + std::to_string(kOldestFormatVersion) + " to " + std::to_string(kFormatVersion))));
    CHECK(contains(msg, version > kFormatVersion ? "newer" : "older"));
  }
}

TEST_CASE("A store of format version 2 (before timeline operations) is still read") {
  TempDir dir;
  fill(dir.path, {TimeKey{1, 0}, TimeKey{1, 100}});
  {
    RawEnv raw(dir.path);
    codec::Codec c;
    auto value = c.encode_header(StoreHeader{2, kConfig, 0xc0ffee, "store_test"});
    raw.put("meta", "header", 6, value.data(), value.size());
    raw.commit();
  }
  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadOnly));
  CHECK(store.header().format_version == 2);
  CHECK(must(store.list()).size() == 2);
}

TEST_CASE("A store recorded on another device configuration or kernel is refused, naming both", "[malformed]") {
  TempDir dir;
  fill(dir.path, {TimeKey{1, 0}});
  ConfigRecord other = kConfig;
  other.threads = 16;
  for (auto mode : {OpenMode::Create, OpenMode::ReadWrite, OpenMode::ReadOnly}) {
    auto msg = error_of(Store::open(dir.path, header_for(other), mode));
    CHECK(contains(msg, "1x2x4x8"));
    CHECK(contains(msg, "1x2x4x16"));
    CHECK(contains(error_of(Store::open(dir.path, header_for(kConfig, 0xbad), mode)), "another kernel image"));
  }
  CHECK(must(Store::open_existing(dir.path, OpenMode::ReadOnly)).header().config == kConfig);
}

TEST_CASE("Every single flipped byte of a checkpoint value is reported, naming its key", "[malformed]") {
  TempDir dir;
  const TimeKey key{4, 77}, neighbour{4, 78};
  fill(dir.path, {key, neighbour});
  codec::Codec c;
  const auto value = c.encode_checkpoint(sample_at(key).rec);
  const std::string data = dir.path + "/data.mdb";
  auto at = find_all(read_file(data), value);
  REQUIRE(!at.empty());
  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadOnly));
  for (size_t i = 0; i < value.size(); ++i) {
    std::vector<size_t> offs;
    for (size_t a : at) offs.push_back(a + i);
    xor_bytes(data, offs, uint8_t(1u << (i % 8)));
    auto r = store.get(key);
    INFO("byte " << i << " of " << value.size());
    REQUIRE_FALSE(r.ok());
    REQUIRE(contains(r.error().message, key.to_string()));
    xor_bytes(data, offs, uint8_t(1u << (i % 8)));
  }
  CHECK(must(store.get(key)) == sample_at(key).rec);
  CHECK(must(store.get(neighbour)) == sample_at(neighbour).rec);
}

TEST_CASE("Every single flipped byte of a stored page is reported by read_page and verify, naming the page",
          "[malformed]") {
  TempDir dir;
  const TimeKey key{1, 0};
  fill(dir.path, {key});
  auto s = sample_at(key);
  const PageData& page = s.pages.back();
  codec::Codec c;
  const auto value = c.encode_page(page.bytes.data(), page.bytes.size());
  const std::string data = dir.path + "/data.mdb";
  auto at = find_all(read_file(data), value);
  REQUIRE(!at.empty());
  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadOnly));
  for (size_t i = 0; i < value.size(); ++i) {
    std::vector<size_t> offs;
    for (size_t a : at) offs.push_back(a + i);
    xor_bytes(data, offs, 0x80);
    INFO("byte " << i << " of " << value.size());
    REQUIRE(contains(error_of(store.read_page(page.hash)), page.hash.to_string()));
    auto v = error_of(store.verify(key));
    REQUIRE(contains(v, page.hash.to_string()));
    REQUIRE(contains(v, key.to_string()));
    // The whole-store check finds it without being asked for the page, and names it.
    REQUIRE(contains(error_of(store.check_values()), "page " + page.hash.to_string() + " is corrupt"));
    // The store keeps the first damage a read found (a session refuses the recording then).
    REQUIRE(store.damage());
    REQUIRE(contains(*store.damage(), page.hash.to_string()));
    xor_bytes(data, offs, 0x80);
  }
  must(store.verify(key));
  must(store.check_values());
}

TEST_CASE("Every single flipped byte of the store header makes open fail", "[malformed]") {
  TempDir dir;
  fill(dir.path, {TimeKey{1, 0}});
  codec::Codec c;
  const auto value = c.encode_header(header_for(kConfig));
  const std::string data = dir.path + "/data.mdb";
  auto at = find_all(read_file(data), value);
  REQUIRE(!at.empty());
  for (size_t i = 0; i < value.size(); ++i) {
    std::vector<size_t> offs;
    for (size_t a : at) offs.push_back(a + i);
    xor_bytes(data, offs, 0x10);
    INFO("byte " << i);
    REQUIRE(contains(error_of(Store::open_existing(dir.path, OpenMode::ReadOnly)), "header is corrupt"));
    xor_bytes(data, offs, 0x10);
  }
  must(Store::open_existing(dir.path, OpenMode::ReadOnly));
}

TEST_CASE("A truncated data.mdb is refused by every open mode and never recreated", "[malformed]") {
  TempDir dir;
  std::vector<TimeKey> keys;
  for (uint32_t i = 0; i < 40; ++i) keys.push_back(TimeKey{1, i});
  fill(dir.path, keys, 16);
  const std::string data = dir.path + "/data.mdb";
  const auto whole = read_file(data);
  REQUIRE(whole.size() > 64 * 4096);
  for (size_t size : {size_t(0), size_t(100), size_t(4096), size_t(8192), size_t(3 * 4096), whole.size() / 2,
                      whole.size() - 4096, whole.size() - 1}) {
    for (auto mode : {OpenMode::Create, OpenMode::ReadWrite, OpenMode::ReadOnly}) {
      write_file(data, std::vector<uint8_t>(whole.begin(), whole.begin() + std::ptrdiff_t(size)));
      INFO("size " << size);
      auto msg = error_of(Store::open(dir.path, header_for(kConfig), mode));
      CHECK((contains(msg, "truncated") || contains(msg, "mdb_env_open")));
      CHECK(fs::file_size(data) == size);
    }
  }
  write_file(data, whole);
  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadOnly));
  for (const TimeKey& k : keys) must(store.verify(k));
}

TEST_CASE("A data.mdb that is not LMDB, or an LMDB file that is not a store, is reported", "[malformed]") {
  TempDir dir;
  std::vector<uint8_t> junk(64 * 1024);
  std::mt19937 rng(kSeed);
  for (auto& b : junk) b = uint8_t(rng());
  write_file(dir.path + "/data.mdb", junk);
  CHECK(contains(error_of(Store::open(dir.path, header_for(kConfig), OpenMode::Create)), "not an LMDB file"));
  CHECK(read_file(dir.path + "/data.mdb") == junk);

  TempDir other;
  {
    RawEnv raw(other.path);
    raw.put("unrelated", "k", 1, "v", 1);
    raw.commit();
  }
  CHECK(contains(error_of(Store::open(other.path, header_for(kConfig), OpenMode::Create)), "not a vxreplay"));
}

TEST_CASE("A missing page, a record under the wrong key and a malformed key are reported", "[malformed]") {
  TempDir dir;
  const TimeKey a{1, 10}, b{1, 20};
  fill(dir.path, {a, b});
  auto sa = sample_at(a);
  const PageHash victim = sa.rec.memory.front().hash;

  SECTION("missing page") {
    {
      RawEnv raw(dir.path);
      auto k = codec::encode_hash(victim);
      raw.del("pages", k.data(), k.size());
      raw.commit();
    }
    auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadOnly));
    auto msg = error_of(store.get(a));
    CHECK(contains(msg, a.to_string()));
    CHECK(contains(msg, victim.to_string()));
    CHECK(contains(msg, "not in the store"));
    CHECK(contains(error_of(store.read_page(victim)), "not in the store"));
  }
  SECTION("record under another key") {
    {
      RawEnv raw(dir.path);
      auto ka = codec::encode_key(a), kb = codec::encode_key(b);
      auto value = raw.get("checkpoints", ka.data(), ka.size());
      raw.put("checkpoints", kb.data(), kb.size(), value.data(), value.size());
      raw.commit();
    }
    auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadOnly));
    CHECK(contains(error_of(store.get(b)), "holds the record of " + a.to_string()));
  }
  SECTION("malformed key") {
    {
      RawEnv raw(dir.path);
      raw.put("checkpoints", "short", 5, "x", 1);
      raw.commit();
    }
    auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadOnly));
    CHECK(contains(error_of(store.list()), "key of 5 bytes"));
  }
}

TEST_CASE("Malformed Cap'n Proto behind a valid checksum is an error, never a crash", "[malformed]") {
  // The checksum catches damage; this covers records crafted with a valid one (or a checksum
  // collision): the decoder and validation must still refuse them cleanly.
  codec::Codec c;
  auto value = c.encode_checkpoint(sample_at(TimeKey{1, 0}).rec);
  std::vector<uint8_t> message;
  must(c.unseal(codec::Magic::Checkpoint, value.data(), value.size(), codec::kMaxRecordBytes, &message));
  std::mt19937 rng(kSeed);
  int refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> m = message;
    if (i % 3 == 0) {
      m.resize(m.size() / 8 * (rng() % 8) / 8 * 8);  // truncated to whole words
    } else {
      for (int j = 0, n = 1 + int(rng() % 8); j < n; ++j) m[rng() % m.size()] ^= uint8_t(1 + rng() % 255);
    }
    auto sealed = c.seal(codec::Magic::Checkpoint, m.data(), m.size(), i % 2 == 0);
    auto r = c.decode_checkpoint(sealed.data(), sealed.size());
    if (!r.ok() || codec::validate(*r, kConfig)) ++refused;
  }
  CHECK(refused > 1000);
  // Each kind of envelope damage has its own message.
  CHECK(contains(error_of(c.decode_checkpoint(value.data(), 10)), "truncated"));
  auto wrong = c.seal(codec::Magic::Page, message.data(), message.size(), false);
  CHECK(contains(error_of(c.decode_checkpoint(wrong.data(), wrong.size())), "not a checkpoint record"));
  auto odd = c.seal(codec::Magic::Checkpoint, message.data(), message.size() - 3, false);
  CHECK(contains(error_of(c.decode_checkpoint(odd.data(), odd.size())), "8-byte words"));
}

TEST_CASE("A record written before Checkpoint fields 11..14 existed reads back with them empty and 0") {
  // `capnp encode` of this text with schema.capnp as it was before globalExpected, kernelInstructions,
  // kernelLaneInstructions and drainCountdown were appended (format 1 all along):
  //   (key = (launch = 1, instret = 5),
  //    scheduler = (coreCursor = 0, currentWarp = [-1], quantumLeft = [0]), cores = [(localMem = (size = 0))],
  //    launch = (kind = grid, grid = [1,1,1], block = [1,1,1], cluster = [1,1,1], args = [0,0,0,0,0,0,0]),
  //    globalBarriers = [(coresArrived = 1, phase = 2)])
  const std::string hex =
      "00000000390000000000000001000a000000000000000000240000000300000000000000000000002800000002000200"
      "000000000000000039000000370000000000000000000000000000000000000000000000000000004c0000000b000400"
      "ad0000000f00000001000000000000000500000000000000000000000000000000000000000000000000000000000000"
      "050000000c000000050000000c000000ffffffff00000000000000000000000004000000020004000000000000000000"
      "00000000000000000c000000010001000000000000000000000000000000000000000000000000000000000000000000"
      "000000000000000001000000000000000000000000000000000000000000000000000000000000000000000000000000"
      "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
      "0d0000001c000000110000001c000000150000001c000000190000003c00000001000000010000000100000000000000"
      "010000000100000001000000000000000100000001000000010000000000000000000000000000000000000000000000"
      "0000000000000000000000000000000004000000010000000100000002000000";
  std::vector<uint8_t> message;
  for (size_t i = 0; i < hex.size(); i += 2) message.push_back(uint8_t(std::stoul(hex.substr(i, 2), nullptr, 16)));
  codec::Codec c;
  auto sealed = c.seal(codec::Magic::Checkpoint, message.data(), message.size(), true);
  CheckpointRecord want;
  want.key = TimeKey{1, 5};
  want.scheduler.current_warp = {-1};
  want.scheduler.quantum_left = {0};
  want.cores.resize(1);
  want.launch.kind = LaunchKind::Grid;
  want.global_barriers = {GlobalBarrierRecord{1, 2}};
  CheckpointRecord got = must(c.decode_checkpoint(sealed.data(), sealed.size()));
  CHECK(got == want);
  CHECK(got.global_expected.empty());
  CHECK(got.kernel_instructions == 0);
  CHECK(got.kernel_lane_instructions == 0);
  CHECK(got.drain_countdown == 0);
  CHECK_FALSE(got.live);
  CHECK_FALSE(got.stepped);
  CHECK_FALSE(codec::validate(got, ConfigRecord{1, 1, 4, 4, 0}));
}

TEST_CASE("A meta page whose transaction id LMDB would read from the other page is refused", "[malformed]") {
  // LMDB 0.9 takes the larger transaction id T but reads meta page T & 1: a damaged id that makes them
  // differ would have the check validate one tree while LMDB reads the other (fewer checkpoints, or
  // a SIGBUS). Meta page 0's transaction id (byte 144 of page 0) is set odd and above page 1's.
  TempDir dir;
  fill(dir.path, {TimeKey{1, 10}, TimeKey{1, 20}, TimeKey{1, 30}});
  const std::string data = dir.path + "/data.mdb";
  {
    auto store = must(Store::open_existing(dir.path, OpenMode::ReadOnly));
    CHECK(must(store.list()).size() == 3);
  }
  std::fstream f(data, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(f);
  uint64_t t0 = 0, t1 = 0;
  uint32_t page_size = 0;
  f.seekg(40);  // meta page 0's free-database record begins with the page size (pad field)
  f.read(reinterpret_cast<char*>(&page_size), 4);
  REQUIRE((page_size >= 512 && page_size <= 65536));
  f.seekg(144);
  f.read(reinterpret_cast<char*>(&t0), 8);
  f.seekg(std::streamoff(page_size) + 144);
  f.read(reinterpret_cast<char*>(&t1), 8);
  const uint64_t forged = (std::max(t0, t1) | 1) + 2;  // odd and newest, on page 0
  f.seekp(144);
  f.write(reinterpret_cast<const char*>(&forged), 8);
  f.close();
  auto msg = error_of(Store::open_existing(dir.path, OpenMode::ReadOnly));
  CHECK(contains(msg, "meta pages disagree"));
  CHECK(contains(msg, std::to_string(forged)));
}

TEST_CASE("A flipped byte in either meta page's transaction id is refused or harmless, never a lost checkpoint",
          "[malformed]") {
  // A flip in a high byte of the older page's id keeps its parity and makes it the newest: LMDB
  // would read the older tree (one checkpoint fewer) without a word. The newest id lowered by 2
  // keeps gap and parity; it is caught because the last commit here grew the file (the older
  // page then names pages past the current one's last).
  TempDir dir;
  std::vector<TimeKey> keys;
  for (uint32_t i = 0; i < 10; ++i) keys.push_back(TimeKey{1, 100 * i});
  fill(dir.path, keys);
  const std::string data = dir.path + "/data.mdb";
  uint32_t page_size = 0;
  uint64_t t0 = 0, t1 = 0;
  {
    std::ifstream f(data, std::ios::binary);
    f.seekg(40);
    f.read(reinterpret_cast<char*>(&page_size), 4);
    f.seekg(144);
    f.read(reinterpret_cast<char*>(&t0), 8);
    f.seekg(std::streamoff(page_size) + 144);
    f.read(reinterpret_cast<char*>(&t1), 8);
  }
  REQUIRE((page_size >= 512 && page_size <= 65536));
  REQUIRE((t0 > t1 ? t0 - t1 : t1 - t0) == 1);  // LMDB's own two metas
  int refused = 0;
  for (uint64_t page : {uint64_t(0), uint64_t(1)})
    for (size_t byte = 0; byte < 8; ++byte)
      for (uint8_t mask : {uint8_t(0x01), uint8_t(0x02), uint8_t(0x80), uint8_t(0xff)}) {
        const size_t off = size_t(page * page_size + 144 + byte);
        xor_bytes(data, {off}, mask);
        auto s = Store::open_existing(dir.path, OpenMode::ReadOnly);
        if (s) {
          INFO("meta page " << page << " transaction id byte " << byte << " ^ " << int(mask));
          auto got = s->list();
          CHECK((!got || *got == keys));
        } else {
          ++refused;
          INFO(s.error().message);
          CHECK(contains(s.error().message, "meta page"));
        }
        xor_bytes(data, {off}, mask);
      }
  CHECK(refused > 0);
  auto s = must(Store::open_existing(dir.path, OpenMode::ReadOnly));
  CHECK(must(s.list()) == keys);
}

TEST_CASE("Any single flipped byte of data.mdb gives a clean error or a whole store, never a crash in LMDB",
          "[malformed]") {
  TempDir dir;
  std::vector<TimeKey> keys;
  for (uint32_t i = 0; i < 20; ++i) keys.push_back(TimeKey{1 + i / 4, 100 * i});
  fill(dir.path, keys, 16);
  const std::string data = dir.path + "/data.mdb";
  const size_t size = read_file(data).size();
  int whole = 0, reported = 0;
  std::vector<std::string> crashed, lost;
  // Opens, lists, gets and verifies everything in a child process with byte off flipped. A store that
  // opens and reads back without an error but with another key list lost checkpoints silently.
  auto trial = [&](size_t off, uint8_t mask) {
    xor_bytes(data, {off}, mask);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      alarm(30);
      auto s = Store::open_existing(dir.path, OpenMode::ReadOnly);
      if (!s) _exit(1);
      auto got = s->list();
      if (!got) _exit(1);
      for (const TimeKey& k : *got)
        if (!s->get(k) || !s->verify(k)) _exit(1);
      _exit(*got == keys ? 0 : 2);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    xor_bytes(data, {off}, mask);
    if (WIFSIGNALED(status))
      crashed.push_back("byte " + std::to_string(off) + " ^ " + std::to_string(mask) + ": signal " +
                        std::to_string(WTERMSIG(status)));
    else if (WEXITSTATUS(status) == 0)
      ++whole;
    else if (WEXITSTATUS(status) == 2)
      lost.push_back("byte " + std::to_string(off) + " ^ " + std::to_string(mask));
    else
      ++reported;
  };
#if defined(__SANITIZE_ADDRESS__)
  // Under AddressSanitizer every forked child costs many times more: a fixed-seed sample checks the
  // code for memory errors, the normal build runs the full set.
  constexpr int kAnywhere = 150, kInHeaders = 150;
#else
  constexpr int kAnywhere = 2000, kInHeaders = 1000;
#endif
  std::mt19937_64 rng(kSeed);
  // Anywhere in the file; then in the first 24 bytes of a page (its header and first node offsets),
  // where LMDB without the structural check crashes (SIGABRT, SIGSEGV, SIGBUS) on several flips in 1000.
  for (int i = 0; i < kAnywhere; ++i) {
    const size_t off = size_t(rng() % size);
    trial(off, uint8_t(1 + rng() % 255));
  }
  for (int i = 0; i < kInHeaders; ++i) {
    const size_t off = size_t(rng() % (size / 4096)) * 4096 + size_t(rng() % 24);
    trial(off, uint8_t(1 + rng() % 255));
  }
  std::ostringstream list;
  for (const auto& c : crashed) list << "\n  " << c;
  for (const auto& c : lost) list << "\n  " << c << ": opened with another key list, no error";
  INFO(whole << " read back whole, " << reported << " reported, " << crashed.size() << " crashed, " << lost.size()
             << " silently different:" << list.str());
  CHECK(crashed.empty());
  CHECK(lost.empty());
  CHECK(reported > 0);
  auto store = must(Store::open_existing(dir.path, OpenMode::ReadOnly));
  for (const TimeKey& k : keys) must(store.verify(k));
}

TEST_CASE("Group commit: a machine failure that lost the commits after the last sync rolls back to it", "[crash]") {
  TempDir dir, failed;
  OpenOptions o;
  o.sync_interval_ms = 60000;  // no timer sync during the test: flush() is the sync
  const std::vector<TimeKey> synced{{1, 1000}, {1, 2000}, {1, 3000}}, later{{1, 4000}, {1, 5000}, {1, 6000}, {1, 7000}};
  {
    auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::Create, o));
    for (const TimeKey& k : synced) {
      auto s = sample_at(k);
      must(store.put(k, s.rec, s.pages));
    }
    must(store.flush());  // the safe point: these three on disk, synced-meta written
    for (const TimeKey& k : later) {
      auto s = sample_at(k);
      must(store.put(k, s.rec, s.pages));  // committed, not synced
    }
    // The machine fails now. The disk kept the newest meta pages but not the pages written after the
    // safe point: data.mdb as it is, with every page past the safe point's last page zeroed.
    namespace fs = std::filesystem;
    fs::copy_file(fs::path(dir.path) / "data.mdb", fs::path(failed.path) / "data.mdb");
    fs::copy_file(fs::path(dir.path) / "synced-meta", fs::path(failed.path) / "synced-meta");
  }
  std::ifstream in(std::filesystem::path(failed.path) / "synced-meta", std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto point = must(lmdb::decode_safe_point(bytes));
  uint32_t page_size = 0;
  uint64_t last = 0;
  std::memcpy(&page_size, point.meta.data() + 16 + 24, 4);  // LMDB 0.9: the free db's pad, then the last page
  std::memcpy(&last, point.meta.data() + 16 + 24 + 96, 8);
  const std::string data = failed.path + "/data.mdb";
  const uint64_t size = std::filesystem::file_size(data);
  REQUIRE(size > (last + 1) * page_size);  // the later commits wrote pages past the safe point's
  {
    int fd = ::open(data.c_str(), O_WRONLY);
    REQUIRE(fd >= 0);
    std::vector<uint8_t> zeros(size - (last + 1) * page_size, 0);
    REQUIRE(pwrite(fd, zeros.data(), zeros.size(), off_t((last + 1) * page_size)) == ssize_t(zeros.size()));
    ::close(fd);
  }
  // Read-only: refused, with how to roll it back.
  auto ro = Store::open_existing(failed.path, OpenMode::ReadOnly);
  REQUIRE(!ro);
  CHECK(ro.error().message.find("rolled back to its last synced state") != std::string::npos);
  // For writing: rolled back to the safe point, every synced checkpoint intact, nothing after it.
  auto store = must(Store::open_existing(failed.path, OpenMode::ReadWrite));
  REQUIRE(store.rolled_back());
  CHECK(store.rolled_back()->find("transaction " + std::to_string(point.txnid)) != std::string::npos);
  CHECK(must(store.list()) == synced);
  for (const TimeKey& k : synced) {
    must(store.verify(k));
    CHECK(must(store.get(k)) == sample_at(k).rec);
  }
  // And it goes on: a new checkpoint commits.
  auto s = sample_at(later[0]);
  must(store.put(later[0], s.rec, s.pages));
}

TEST_CASE("Group commit: a value past the last sync that never reached the disk rolls the store back to it",
          "[crash]") {
  namespace fs = std::filesystem;
  TempDir dir, failed, killed;
  OpenOptions o;
  o.sync_interval_ms = 60000;  // no timer sync during the test: flush() is the sync
  const std::vector<TimeKey> synced{{1, 1000}, {1, 2000}, {1, 3000}}, later{{1, 4000}, {1, 5000}};
  {
    auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::Create, o));
    for (const TimeKey& k : synced) {
      auto s = sample_at(k);
      must(store.put(k, s.rec, s.pages));
    }
    must(store.flush());  // the safe point
    for (const TimeKey& k : later) {
      auto s = sample_at(k);
      must(store.put(k, s.rec, s.pages));  // committed, not synced
    }
    // Copies while the store is open (closing it would sync): one as a kill leaves it, one as a
    // machine failure that lost one page after the safe point.
    for (const TempDir* d : {&failed, &killed}) {
      fs::copy_file(fs::path(dir.path) / "data.mdb", fs::path(d->path) / "data.mdb");
      fs::copy_file(fs::path(dir.path) / "synced-meta", fs::path(d->path) / "synced-meta");
    }
  }
  // The lost page held a later checkpoint's memory page (a value of its own, no other checkpoint
  // names it): its bytes are what the disk had before. The tree is whole, so only its checksum shows it.
  const Sample lost = sample_at(later[0]);
  auto unique = std::find_if(lost.pages.begin(), lost.pages.end(), [&](const PageData& p) {
    for (const TimeKey& k : synced)
      for (const PageData& q : sample_at(k).pages)
        if (q.hash == p.hash) return false;
    return true;
  });
  REQUIRE(unique != lost.pages.end());
  const PageData& page = *unique;
  codec::Codec c;
  const auto value = c.encode_page(page.bytes.data(), page.bytes.size());
  const std::string data = failed.path + "/data.mdb";
  auto at = find_all(read_file(data), value);
  REQUIRE(at.size() == 1);
  xor_bytes(data, {at[0] + value.size() / 2}, 0x5a);
  // Read-only: refused, naming the damage and how to roll it back.
  auto ro = Store::open_existing(failed.path, OpenMode::ReadOnly);
  REQUIRE(!ro);
  CHECK(contains(ro.error().message, "page " + page.hash.to_string() + " is corrupt"));
  CHECK(contains(ro.error().message, "it can be rolled back to its last synced state"));
  CHECK(ro.error().code == vx::ErrorCode::StoreCorrupt);
  {
    // For writing: rolled back to the safe point, every synced checkpoint intact, nothing after it.
    auto store = must(Store::open_existing(failed.path, OpenMode::ReadWrite));
    REQUIRE(store.rolled_back());
    CHECK(contains(*store.rolled_back(), "page " + page.hash.to_string() + " is corrupt"));
    CHECK(contains(*store.rolled_back(), "rolled back to its last synced state (transaction "));
    CHECK_FALSE(store.damage());
    CHECK(must(store.list()) == synced);
    for (const TimeKey& k : synced) {
      must(store.verify(k));
      CHECK(must(store.get(k)) == sample_at(k).rec);
    }
    must(store.check_values());
    auto s = sample_at(later[1]);
    must(store.put(later[1], s.rec, s.pages));  // and it goes on
  }
  CHECK(must(Store::open_existing(failed.path, OpenMode::ReadOnly)).rolled_back() == std::nullopt);
  std::vector<TimeKey> all = synced;
  all.insert(all.end(), later.begin(), later.end());
  {
    // Damage older than the safe point: rolling back would only lose the later commits. The open
    // fails naming it, and data.mdb is as it was (the newest state put back).
    TempDir old_damage;
    for (const char* f : {"data.mdb", "synced-meta"})
      fs::copy_file(fs::path(killed.path) / f, fs::path(old_damage.path) / f);
    const Sample first = sample_at(synced[0]);
    const PageData& old_page = first.pages.front();
    const auto old_value = c.encode_page(old_page.bytes.data(), old_page.bytes.size());
    const std::string old_data = old_damage.path + "/data.mdb";
    auto old_at = find_all(read_file(old_data), old_value);
    REQUIRE(!old_at.empty());
    xor_bytes(old_data, {old_at[0] + old_value.size() / 2}, 0x5a);
    const auto before = read_file(old_data);
    auto refused = Store::open_existing(old_damage.path, OpenMode::ReadWrite);
    REQUIRE_FALSE(refused);
    CHECK(contains(refused.error().message, "page " + old_page.hash.to_string() + " is corrupt"));
    CHECK(contains(refused.error().message, "its last synced state is damaged too"));
    CHECK(refused.error().code == vx::ErrorCode::StoreCorrupt);
    CHECK(read_file(old_data) == before);
  }
  // A kill loses nothing committed: every value checks, nothing is rolled back.
  auto whole = must(Store::open_existing(killed.path, OpenMode::ReadWrite));
  CHECK_FALSE(whole.rolled_back());
  CHECK(must(whole.list()) == all);
}

namespace {
HistoryRecord sample_history(uint32_t launch, size_t writes) {
  HistoryRecord h;
  h.launch = launch;
  h.reached = 20 + 3 * writes;
  h.until = h.reached + 100;
  h.ended = true;
  h.grid = true;
  h.grid_dims = {4, 2, 1};
  h.block_dims = {8, 1, 1};
  h.stepped = {{100, 250}};
  for (size_t i = 0; i < writes; ++i)
    h.writes.push_back(HistoryWrite{10 + i * 3, 0x80000100u + uint32_t(i % 7) * 4, 0, uint32_t(i % 4), uint32_t(i % 4),
                                    uint32_t(i % 8), uint32_t(i % 8), 0x10000u + uint32_t(i) * 4,
                                    uint8_t(i % 3 == 0 ? 1 : 4), uint8_t(i % 4), uint32_t(i * 2654435761u),
                                    uint32_t(i * 40503u)});
  return h;
}
}  // namespace

TEST_CASE(
    "A launch's gathered history reads back exactly, is replaced by a later one, and a read-only store keeps it") {
  TempDir dir;
  fill(dir.path, {{1, 0}});
  const HistoryRecord first = sample_history(2, 3000), later = sample_history(2, 10);
  {
    auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadWrite, no_sync()));
    CHECK_FALSE(must(store.history(2)).has_value());  // no history database yet
    must(store.put_history(first));
    CHECK(must(store.history(2)) == first);
    CHECK_FALSE(must(store.history(1)).has_value());
    CHECK(store.history_bytes(2) > 0);
    CHECK(store.history_bytes(2) < 3000 * 16);  // compressed columns: the raw ones take 50 bytes a write
  }
  {
    auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadWrite, no_sync()));
    CHECK(must(store.history(2)) == first);
    must(store.put_history(later));
    CHECK(must(store.history(2)) == later);
    must(store.check_values());
  }
  auto ro = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadOnly));
  CHECK(must(ro.history(2)) == later);
  auto refused = ro.put_history(first);
  REQUIRE_FALSE(refused.ok());
  CHECK(contains(refused.error().message, "read-only"));
}

TEST_CASE("Damage in a stored history is an error naming the launch, and not the recording's damage", "[malformed]") {
  TempDir dir;
  const TimeKey key{1, 0};
  fill(dir.path, {key});
  const HistoryRecord h = sample_history(3, 40);
  {
    auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadWrite, no_sync()));
    must(store.put_history(h));
  }
  codec::Codec c;
  const auto value = c.encode_history(h);
  const std::string data = dir.path + "/data.mdb";
  auto at = find_all(read_file(data), value);
  REQUIRE(!at.empty());
  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadOnly));
  for (size_t i = 0; i < value.size(); i += 7) {
    std::vector<size_t> offs;
    for (size_t a : at) offs.push_back(a + i);
    xor_bytes(data, offs, uint8_t(1u << (i % 8)));
    auto r = store.history(3);
    INFO("byte " << i << " of " << value.size());
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().message, "history of launch 3"));
    xor_bytes(data, offs, uint8_t(1u << (i % 8)));
  }
  CHECK_FALSE(store.damage().has_value());
  CHECK(must(store.history(3)) == h);
  CHECK(must(store.get(key)) == sample_at(key).rec);
}

TEST_CASE("A stored history whose writes are out of order, too large or past its pass is refused by the codec",
          "[malformed]") {
  codec::Codec c;
  HistoryRecord h = sample_history(1, 5);
  std::swap(h.writes[1].instret, h.writes[3].instret);
  auto v = c.encode_history(h);
  auto r = c.decode_history(v.data(), v.size());
  REQUIRE_FALSE(r.ok());
  CHECK(contains(r.error().message, "time order"));
  h = sample_history(1, 5);
  h.writes[2].size = 8;
  v = c.encode_history(h);
  r = c.decode_history(v.data(), v.size());
  REQUIRE_FALSE(r.ok());
  CHECK(contains(r.error().message, "size 8"));
  h = sample_history(1, 5);
  h.reached = 12;
  v = c.encode_history(h);
  r = c.decode_history(v.data(), v.size());
  REQUIRE_FALSE(r.ok());
  CHECK(contains(r.error().message, "past the point"));
}

TEST_CASE(
    "A history of more writes than a chunk streams through put_history and history whole, and a sink's error "
    "stops the reading") {
  TempDir dir;
  fill(dir.path, {{1, 0}});
  const HistoryRecord h = sample_history(5, 10000);  // two and a half chunks of 4096
  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadWrite, no_sync()));
  std::vector<size_t> asked;
  must(store.put_history(h, h.writes.size(), [&](size_t first, std::span<HistoryWrite> out) {
    asked.push_back(first);
    std::copy_n(h.writes.begin() + ptrdiff_t(first), out.size(), out.begin());
  }));
  CHECK(asked == std::vector<size_t>{0, 4096, 8192});
  std::vector<HistoryWrite> got;
  auto head = must(store.history(5, [&](std::span<const HistoryWrite> part) -> vx::Result<void> {
    got.insert(got.end(), part.begin(), part.end());
    return {};
  }));
  REQUIRE(head.has_value());
  CHECK(head->writes.empty());
  CHECK(got == h.writes);
  size_t chunks = 0;
  auto stopped = store.history(5, [&](std::span<const HistoryWrite>) -> vx::Result<void> {
    ++chunks;
    return vx::make_error("enough");
  });
  REQUIRE_FALSE(stopped.ok());
  CHECK(contains(stopped.error().message, "enough"));
  CHECK(chunks == 1);
  CHECK_FALSE(store.damage().has_value());
}

// --- The operations journal (docs/store.md, "The operations journal") ------------------------------

namespace {

// Operation i of a recording: an allocation (i % 4 == 1), or a copy of a page of data, new when
// i % 3 == 0 (given with its append) and otherwise the last one made (named again, not given).
struct JournalOps {
  std::vector<HostOpRecord> ops;
  std::vector<std::vector<PageData>> blobs;  // what each append gives
};
JournalOps journal_ops(size_t appends, size_t per_append) {
  JournalOps j;
  std::vector<PageData> made;
  for (size_t a = 0; a < appends; ++a) {
    j.blobs.emplace_back();
    for (size_t k = 0; k < per_append; ++k) {
      const size_t i = a * per_append + k;
      HostOpRecord op;
      if (i % 4 == 1) {
        op.kind = HostOpKind::Alloc;
        op.addr = 0x1000 * i;
        op.size = 64;
      } else {
        op.kind = HostOpKind::Copy;
        op.addr = 0x8000 + i;
        if (i % 3 == 0 || made.empty()) {
          std::vector<uint8_t> bytes(4096);
          for (size_t b = 0; b < bytes.size(); ++b) bytes[b] = uint8_t(i * 7 + b * 13);
          made.push_back(make_page(std::move(bytes)));
          j.blobs.back().push_back(made.back());
        }
        op.size = made.back().bytes.size();
        op.data = BlobRef{uint32_t(op.size), made.back().hash};
      }
      j.ops.push_back(op);
    }
  }
  return j;
}

OpenOptions group_commit() {
  OpenOptions o;
  o.sync_interval_ms = 50;
  return o;
}

// Appends j's first `appends` batches to the journal in a child that then ends as a killed process
// does (no destructors, nothing committed after them).
void journal_and_die(const std::string& dir, const JournalOps& j, size_t appends, size_t per_append) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto st = Store::open(dir, header_for(kConfig), OpenMode::Create, group_commit());
    bool ok = bool(st);
    for (size_t a = 0; ok && a < appends; ++a) {
      std::vector<HostOpRecord> part(j.ops.begin() + ptrdiff_t(a * per_append),
                                     j.ops.begin() + ptrdiff_t((a + 1) * per_append));
      ok = bool(st->append_ops(part, j.blobs[a], true));
    }
    ok = ok && st->op_count() == appends * per_append;
    if (!ok) _exit(1);
    raise(SIGKILL);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
}

std::vector<HostOpRecord> first_ops(const JournalOps& j, size_t n) {
  return std::vector<HostOpRecord>(j.ops.begin(), j.ops.begin() + ptrdiff_t(n));
}

}  // namespace

TEST_CASE(
    "Journaled operations read back at once, commit with the next durable write, and a clean close leaves no "
    "journal") {
  TempDir dir;
  const JournalOps j = journal_ops(3, 5);
  const std::string journal = dir.path + "/ops-journal";
  {
    auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::Create, group_commit()));
    must(store.append_ops(first_ops(j, 5), j.blobs[0], true));
    CHECK(fs::exists(journal));
    CHECK(store.op_count() == 5);
    CHECK(must(store.ops()) == first_ops(j, 5));
    for (const PageData& p : j.blobs[0]) CHECK(must(store.read_page(p.hash)) == p.bytes);
    // Journaled and durable appends interleave in order.
    std::vector<HostOpRecord> second(j.ops.begin() + 5, j.ops.begin() + 10);
    must(store.append_ops(second, j.blobs[1]));
    CHECK(store.op_count() == 10);
    CHECK(must(store.ops()) == first_ops(j, 10));
    std::vector<HostOpRecord> third(j.ops.begin() + 10, j.ops.end());
    must(store.append_ops(third, j.blobs[2], true));
    // A mark commits them in its transaction.
    auto a = sample_at(TimeKey{1, 10});
    must(store.put(a.rec.key, a.rec, a.pages));
    CHECK(store.op_count() == 15);
    CHECK(must(store.ops()) == j.ops);
  }
  CHECK_FALSE(fs::exists(journal));
  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadWrite, group_commit()));
  CHECK(must(store.ops()) == j.ops);
  // A store that syncs every commit writes them into the store at once: no journal.
  auto synced = must(Store::open(dir.path + "-synced", header_for(kConfig), OpenMode::Create));
  must(synced.append_ops(first_ops(j, 5), j.blobs[0], true));
  CHECK_FALSE(fs::exists(dir.path + "-synced/ops-journal"));
  std::error_code ec;
  fs::remove_all(dir.path + "-synced", ec);
}

TEST_CASE(
    "A writer killed after journaling operations loses none of them: a reader sees them, the next writer "
    "commits them",
    "[crash]") {
  TempDir dir;
  const JournalOps j = journal_ops(8, 3);
  journal_and_die(dir.path, j, 8, 3);
  REQUIRE(fs::exists(dir.path + "/ops-journal"));
  {
    auto reader = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadOnly));
    CHECK(reader.op_count() == 24);
    CHECK(must(reader.ops()) == j.ops);
    for (const auto& b : j.blobs)
      for (const PageData& p : b) CHECK(must(reader.read_page(p.hash)) == p.bytes);
  }
  CHECK(fs::exists(dir.path + "/ops-journal"));  // a reader changes nothing
  {
    auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadWrite, group_commit()));
    CHECK_FALSE(fs::exists(dir.path + "/ops-journal"));
    CHECK(store.op_count() == 24);
    CHECK(must(store.ops()) == j.ops);
    must(store.check_values());
    // The recording goes on after them.
    HostOpRecord end;
    end.kind = HostOpKind::HostEnd;
    must(store.append_ops({end}, {}, true));
    CHECK(store.op_count() == 25);
  }
  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadOnly));
  CHECK(store.op_count() == 25);
  for (const auto& b : j.blobs)
    for (const PageData& p : b) CHECK(must(store.read_page(p.hash)) == p.bytes);
}

TEST_CASE(
    "A writer opening a killed writer's journal while another process has the store open reads it and leaves it "
    "to the next writer",
    "[crash]") {
  TempDir dir;
  const JournalOps j = journal_ops(4, 3);
  journal_and_die(dir.path, j, 4, 3);
  const std::string journal = dir.path + "/ops-journal";
  auto bytes_of_file = [&] {
    std::ifstream f(journal, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(f), {});
  };
  const std::vector<char> left = bytes_of_file();
  REQUIRE_FALSE(left.empty());
  // Another process (a view, say) holds the store open until the pipe closes.
  int ready[2], hold[2];
  REQUIRE(pipe(ready) == 0);
  REQUIRE(pipe(hold) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(ready[0]);
    close(hold[1]);
    auto reader = Store::open(dir.path, header_for(kConfig), OpenMode::ReadOnly);
    const char c = reader ? 1 : 0;
    if (write(ready[1], &c, 1) != 1) _exit(2);
    char drop;
    while (read(hold[0], &drop, 1) > 0) {
    }
    _exit(reader ? 0 : 1);
  }
  close(ready[1]);
  close(hold[0]);
  char c = 0;
  REQUIRE(read(ready[0], &c, 1) == 1);
  REQUIRE(c == 1);
  {
    auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadWrite, group_commit()));
    // A replay of the killed recording sees every operation the host saw complete.
    CHECK(store.op_count() == 12);
    CHECK(must(store.ops()) == j.ops);
    for (const auto& b : j.blobs)
      for (const PageData& p : b) CHECK(must(store.read_page(p.hash)) == p.bytes);
    // Its checkpoints are written; the journal is not taken into them.
    auto a = sample_at(TimeKey{1, 10});
    must(store.put(a.rec.key, a.rec, a.pages));
    must(store.sync());
    // No operation goes after the ones it cannot commit, journaled or not.
    HostOpRecord end;
    end.kind = HostOpKind::HostEnd;
    for (bool journaled : {true, false}) {
      auto r = store.append_ops({end}, {}, journaled);
      REQUIRE_FALSE(r);
      CHECK(r.error().message.find("ops-journal holds 12 operations of a killed writer, which cannot be committed "
                                   "while another process has the store open") != std::string::npos);
    }
    CHECK(store.op_count() == 12);
  }
  CHECK(bytes_of_file() == left);  // the journal as the killed writer left it
  close(hold[1]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // The next writer with the store to itself commits them, after the checkpoint written meanwhile.
  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadWrite, group_commit()));
  CHECK_FALSE(fs::exists(journal));
  CHECK(store.op_count() == 12);
  CHECK(must(store.ops()) == j.ops);
  CHECK(must(store.has(TimeKey{1, 10})));
  must(store.check_values());
}

TEST_CASE("A journal's torn or damaged entry ends it: the entries before it are kept, nothing after it", "[crash]") {
  TempDir dir;
  const JournalOps j = journal_ops(4, 3);
  journal_and_die(dir.path, j, 4, 3);
  const std::string journal = dir.path + "/ops-journal";
  auto contents = must(OpsJournal::read(journal));
  REQUIRE(contents.entries.size() == 4);
  // The offset of the third entry: the header, then the first two.
  uint64_t third = OpsJournal::kHeaderBytes + OpsJournal::entry_bytes(contents.entries[0]) +
                   OpsJournal::entry_bytes(contents.entries[1]);
  SECTION("a byte of the third entry changed") {
    std::fstream f(journal, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(std::streamoff(third + 40));
    char c = 0;
    f.read(&c, 1);
    c = char(c ^ 0x20);
    f.seekp(std::streamoff(third + 40));
    f.write(&c, 1);
  }
  SECTION("the file cut inside the third entry") { fs::resize_file(journal, third + 30); }
  auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadWrite, group_commit()));
  CHECK(store.op_count() == 6);
  CHECK(must(store.ops()) == first_ops(j, 6));
  CHECK_FALSE(store.damage().has_value());
}

TEST_CASE("A journal that does not continue the committed operations adds none of them", "[crash]") {
  TempDir dir;
  const JournalOps j = journal_ops(2, 3);
  journal_and_die(dir.path, j, 2, 3);
  const std::string journal = dir.path + "/ops-journal";
  auto contents = must(OpsJournal::read(journal));
  REQUIRE(contents.entries.size() == 2);
  SECTION("its entries are committed already (a kill between a commit and the journal's reset)") {
    {
      auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadWrite, group_commit()));
      CHECK(store.op_count() == 6);
    }
    // The same journal again, as the kill would have left it.
    auto again = must(OpsJournal::create(journal, 0));
    for (const auto& e : contents.entries) must(again.append(e));
    auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadWrite, group_commit()));
    CHECK(store.op_count() == 6);
    CHECK(must(store.ops()) == j.ops);
  }
  SECTION("its header was never written (a kill right after the file was made)") {
    fs::resize_file(journal, 0);
    fs::resize_file(journal, 1 << 20);
    auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadWrite, group_commit()));
    CHECK(store.op_count() == 0);
    CHECK_FALSE(fs::exists(journal));
  }
  SECTION("it starts past them (the store rolled back to an older sync)") {
    auto moved = must(OpsJournal::create(journal, 3));
    JournalEntry e = contents.entries[1];
    must(moved.append(e));
    auto store = must(Store::open(dir.path, header_for(kConfig), OpenMode::ReadWrite, group_commit()));
    CHECK(store.op_count() == 0);
    CHECK(must(store.ops()).empty());
  }
}
