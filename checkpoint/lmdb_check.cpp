#include "checkpoint/lmdb_check.hpp"

#include <fcntl.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace vx::checkpoint::lmdb {

namespace {

// LMDB 0.9's on-disk layout on a 64-bit little-endian host (pgno_t and txnid_t are 8 bytes).
static_assert(std::endian::native == std::endian::little && sizeof(size_t) == 8,
              "the structural check reads LMDB's 64-bit little-endian layout");

constexpr uint32_t kMagic = 0xBEEFC0DE;
constexpr uint32_t kDataVersion = 1;
constexpr uint64_t kInvalidPage = ~uint64_t(0);
// Page header: pgno u64, pad u16, flags u16, then lower u16 and upper u16 (or the overflow page count u32).
constexpr uint32_t kHeaderBytes = 16;
constexpr uint16_t kBranch = 0x01, kLeaf = 0x02, kOverflow = 0x04, kMeta = 0x08;
// Node: size or child page low 16 bits, high 16 bits, flags (a child page's bits 32..47), key size; then the key.
constexpr uint32_t kNodeBytes = 8;
constexpr uint16_t kBigData = 0x01, kSubData = 0x02, kDupData = 0x04;
// A database record (MDB_db): pad u32, flags u16, depth u16, branch/leaf/overflow page counts, entries, root.
constexpr uint32_t kDbBytes = 48;
// The meta record after the page header: magic, version, address, map size, the free and main
// database records, the last page, the transaction id.
constexpr uint32_t kMetaDbs = kHeaderBytes + 24;
constexpr uint32_t kMetaLastPage = kMetaDbs + 2 * kDbBytes;
constexpr uint32_t kMetaBytes = kMetaLastPage + 16;
constexpr uint32_t kMinPageSize = 512, kMaxPageSize = 0x8000;  // LMDB 0.9's largest page
constexpr unsigned kMaxDepth = 32;                             // LMDB's cursor stack
constexpr uint32_t kMaxKeyBytes = 511;

template <class T>
T load(const uint8_t* p, size_t off) {
  T v;
  std::memcpy(&v, p + off, sizeof v);
  return v;
}

struct Db {
  uint16_t flags = 0, depth = 0;
  uint64_t root = kInvalidPage;
};
Db load_db(const uint8_t* p) { return Db{load<uint16_t>(p, 4), load<uint16_t>(p, 6), load<uint64_t>(p, 40)}; }

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}
std::string printable(const uint8_t* p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += p[i] >= 0x20 && p[i] < 0x7f ? char(p[i]) : '?';
  return s;
}

// One database to walk: its record and how to name it.
struct Tree {
  std::string name;  // "the main database", "database checkpoints"
  Db db;
  bool free_db = false;  // LMDB's free-page database: integer keys, page lists as values
  bool main_db = false;  // holds the named databases' records
};

class Walker {
 public:
  Walker(int fd, uint32_t page_size, uint64_t last) : fd_(fd), psize_(page_size), last_(last), seen_(last + 1) {}

  Result<void> walk_tree(const Tree& t, std::vector<Tree>* named) {
    if (t.db.root == kInvalidPage) return {};
    if (bufs_.size() < t.db.depth) bufs_.resize(t.db.depth);
    return walk(t, t.db.root, 0, named);
  }
  uint64_t pages_read() const { return reads_; }

 private:
  Error bad(uint64_t pgno, const std::string& role, const std::string& what) const {
    return make_error("data.mdb page " + std::to_string(pgno) + " (" + role + ") " + what + ": the file is corrupt");
  }
  Result<void> read(uint64_t pgno, uint8_t* out, size_t n, size_t skip = 0) {
    ++reads_;
    ssize_t got = pread(fd_, out, n, off_t(pgno * psize_ + skip));
    if (got < 0) return make_error("data.mdb page " + std::to_string(pgno) + " cannot be read: " + strerror(errno));
    if (size_t(got) != n) return make_error("data.mdb page " + std::to_string(pgno) + " lies past the end of the file");
    return {};
  }
  std::string range() const { return " (pages 2.." + std::to_string(last_) + " hold data)"; }

  Result<void> walk(const Tree& t, uint64_t pgno, unsigned level, std::vector<Tree>* named) {
    const bool leaf = level + 1 == t.db.depth;
    // Names are built only for an error: the walk visits thousands of pages.
    auto role = [&] { return (leaf ? "a leaf of " : "a branch page of ") + t.name; };
    if (seen_[pgno]) return bad(pgno, role(), "is reached a second time (a cycle, or a page used twice)");
    seen_[pgno] = true;
    std::vector<uint8_t>& buf = bufs_[level];
    buf.resize(psize_);
    if (auto r = read(pgno, buf.data(), psize_); !r) return r;
    const uint8_t* p = buf.data();
    if (uint64_t own = load<uint64_t>(p, 0); own != pgno)
      return bad(pgno, role(), "holds the header of page " + std::to_string(own));
    const uint16_t flags = load<uint16_t>(p, 10);
    if (flags != (leaf ? kLeaf : kBranch))
      return bad(pgno, role(),
                 "has page flags " + hex(flags) + " where the database's depth (" + std::to_string(t.db.depth) +
                     ") puts a " + (leaf ? "leaf (0x2)" : "branch page (0x1)"));
    const uint32_t lower = load<uint16_t>(p, 12), upper = load<uint16_t>(p, 14);
    if (lower < kHeaderBytes || (lower - kHeaderBytes) % 2)
      return bad(pgno, role(), "has a key index ending at byte " + std::to_string(lower) + ", not a whole index");
    const uint32_t n = (lower - kHeaderBytes) / 2;
    if (lower > upper || upper > psize_)
      return bad(pgno, role(),
                 "claims " + std::to_string(n) + " keys in a " + std::to_string(psize_) + "-byte page (index end " +
                     std::to_string(lower) + ", nodes start " + std::to_string(upper) + ")");
    // LMDB merges a branch page with one key into its parent everywhere but in the free-page database
    // (mdb_page_search_root asserts this), and removes empty leaves.
    const uint32_t min_keys = leaf ? 1 : (t.free_db ? 1 : 2);
    if (n < min_keys)
      return bad(
          pgno, role(),
          "holds " + std::to_string(n) + (n == 1 ? " key" : " keys") + " (at least " + std::to_string(min_keys) + ")");
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t off = load<uint16_t>(p, kHeaderBytes + 2 * i);
      auto node = [i] { return "node " + std::to_string(i); };
      if (off < upper || off + kNodeBytes > psize_)
        return bad(pgno, role(),
                   node() + " starts at byte " + std::to_string(off) + ", outside the node area " +
                       std::to_string(upper) + ".." + std::to_string(psize_));
      const uint32_t lo = load<uint16_t>(p, off), hi = load<uint16_t>(p, off + 2);
      const uint16_t nflags = load<uint16_t>(p, off + 4);
      const uint32_t ksize = load<uint16_t>(p, off + 6);
      if (ksize > kMaxKeyBytes)
        return bad(pgno, role(), node() + " has a " + std::to_string(ksize) + "-byte key (LMDB keys are at most 511)");
      if (!leaf) {
        if (off + kNodeBytes + ksize > psize_) return bad(pgno, role(), node() + " runs past the end of the page");
        const uint64_t child = lo | uint64_t(hi) << 16 | uint64_t(nflags) << 32;
        if (child < 2 || child > last_)
          return bad(pgno, role(), node() + " points to page " + std::to_string(child) + range());
        if (auto r = walk(t, child, level + 1, named); !r) return r;
        continue;
      }
      const uint64_t dsize = lo | uint64_t(hi) << 16;
      if (nflags & ~(kBigData | kSubData) || nflags == (kBigData | kSubData))
        return bad(pgno, role(),
                   node() + " has node flags " + hex(nflags) +
                       (nflags & kDupData ? " (duplicate data, which no database here uses)" : ""));
      if (nflags & kSubData && (!t.main_db || dsize != kDbBytes))
        return bad(pgno, role(), node() + " claims to hold a database record (" + std::to_string(dsize) + " bytes)");
      const uint64_t stored = nflags & kBigData ? 8 : dsize;
      if (off + kNodeBytes + ksize + stored > psize_)
        return bad(pgno, role(),
                   node() + " (a " + std::to_string(ksize) + "-byte key and " + std::to_string(stored) +
                       " bytes of value) runs past the end of the page");
      const uint8_t* key = p + off + kNodeBytes;
      const uint8_t* data = key + ksize;
      if (t.free_db && ksize != 8)
        return bad(pgno, role(), node() + " has a " + std::to_string(ksize) + "-byte key, not 8");
      if (nflags & kSubData) {
        Tree sub{"database " + printable(key, ksize), load_db(data)};
        if (auto r = check_db(sub, "data.mdb page " + std::to_string(pgno) + " (a leaf of the main database)"); !r)
          return r;
        named->push_back(sub);
      }
      if (nflags & kBigData) {
        const uint64_t first = load<uint64_t>(data, 0);
        if (auto r = overflow(t, pgno, i, first, dsize); !r) return r;
        if (t.free_db) {
          std::vector<uint8_t> list(dsize);
          if (auto r = read(first, list.data(), dsize, kHeaderBytes); !r) return r;
          if (auto r = page_list(t, pgno, i, list.data(), dsize); !r) return r;
        }
      } else if (t.free_db) {
        if (auto r = page_list(t, pgno, i, data, dsize); !r) return r;
      }
    }
    return {};
  }

  // A value on its own pages: the first page's header and the page count, inside the file and unshared.
  Result<void> overflow(const Tree& t, uint64_t pgno, uint32_t i, uint64_t first, uint64_t dsize) {
    auto role = [&] { return "a leaf of " + t.name; };
    auto node = [i] { return "node " + std::to_string(i); };
    const uint64_t need = (kHeaderBytes - 1 + dsize) / psize_ + 1;
    if (first < 2 || first > last_ || need > last_ - first + 1)
      return bad(pgno, role(),
                 node() + " puts its " + std::to_string(dsize) + "-byte value on pages " + std::to_string(first) +
                     ".." + std::to_string(first + need - 1) + range());
    uint8_t h[kHeaderBytes];
    if (auto r = read(first, h, sizeof h); !r) return r;
    auto orole = [&] { return "an overflow page of " + t.name; };
    if (uint64_t own = load<uint64_t>(h, 0); own != first)
      return bad(first, orole(), "holds the header of page " + std::to_string(own));
    if (uint16_t f = load<uint16_t>(h, 10); f != kOverflow)
      return bad(first, orole(), "has page flags " + hex(f) + ", not an overflow page's (0x4)");
    const uint64_t count = load<uint32_t>(h, 12);
    if (count < need || count > last_ - first + 1)
      return bad(first, orole(),
                 "claims a run of " + std::to_string(count) + " pages for a " + std::to_string(dsize) +
                     "-byte value (it needs " + std::to_string(need) + ")" + range());
    for (uint64_t q = first; q < first + count; ++q) {
      if (seen_[q]) return bad(q, orole(), "is reached a second time (a page used twice)");
      seen_[q] = true;
    }
    return {};
  }

  // A free-page database value: a count, then that many page numbers, all of them data pages.
  Result<void> page_list(const Tree& t, uint64_t pgno, uint32_t i, const uint8_t* v, uint64_t n) {
    auto role = [&] { return "a leaf of " + t.name; };
    auto node = [i] { return "node " + std::to_string(i); };
    if (n < 8 || n % 8) return bad(pgno, role(), node() + " holds a " + std::to_string(n) + "-byte page list");
    const uint64_t count = load<uint64_t>(v, 0);
    if (count > n / 8 - 1)
      return bad(pgno, role(),
                 node() + " claims " + std::to_string(count) + " free pages in a " + std::to_string(n) + "-byte list");
    for (uint64_t j = 1; j <= count; ++j)
      if (uint64_t q = load<uint64_t>(v, 8 * j); q < 2 || q > last_)
        return bad(pgno, role(), node() + " lists free page " + std::to_string(q) + range());
    return {};
  }

 public:
  // A database record: flags the store uses, a depth LMDB can walk, a root inside the file.
  Result<void> check_db(const Tree& t, const std::string& where) const {
    const uint16_t want = t.free_db ? MDB_INTEGERKEY : 0;
    auto fail = [&](const std::string& what) {
      return make_error(where + " describes " + t.name + " with " + what + ": the file is corrupt");
    };
    if (t.db.flags != want) return fail("flags " + hex(t.db.flags) + " (the store's databases have " + hex(want) + ")");
    if (t.db.root == kInvalidPage) {
      if (t.db.depth != 0) return fail("no root page but depth " + std::to_string(t.db.depth));
      return {};
    }
    if (t.db.depth < 1 || t.db.depth > kMaxDepth) return fail("depth " + std::to_string(t.db.depth));
    if (t.db.root < 2 || t.db.root > last_) return fail("root page " + std::to_string(t.db.root) + range());
    return {};
  }

 private:
  int fd_;
  uint32_t psize_;
  uint64_t last_;
  std::vector<bool> seen_;
  std::vector<std::vector<uint8_t>> bufs_;  // one page buffer per tree level
  uint64_t reads_ = 0;
};

struct Meta {
  uint32_t page_size = 0;
  uint64_t last = 0, txnid = 0;
  Db free, main;
};

Result<Meta> read_meta(int fd, int i, uint32_t page_size, uint64_t file_bytes) {
  const std::string where = "data.mdb meta page " + std::to_string(i);
  uint8_t m[kMetaBytes];
  ssize_t got = pread(fd, m, sizeof m, off_t(i) * page_size);
  if (got != ssize_t(sizeof m)) return make_error(where + " cannot be read: the file is truncated");
  if (load<uint32_t>(m, kHeaderBytes) != kMagic)
    return make_error(where + " lacks LMDB's magic number: not an LMDB file");
  if (uint32_t v = load<uint32_t>(m, kHeaderBytes + 4); v != kDataVersion)
    return make_error(where + " has LMDB data format " + std::to_string(v) + " (LMDB 0.9 writes " +
                      std::to_string(kDataVersion) + ")");
  auto fail = [&](const std::string& what) { return make_error(where + " " + what + ": the file is corrupt"); };
  if (uint64_t own = load<uint64_t>(m, 0); own != uint64_t(i))
    return fail("holds the header of page " + std::to_string(own));
  if (uint16_t f = load<uint16_t>(m, 10); f != kMeta)
    return fail("has page flags " + hex(f) + ", not a meta page's (0x8)");
  Meta meta;
  meta.page_size = load<uint32_t>(m, kMetaDbs);  // the free-page database record's pad holds the page size
  meta.free = load_db(m + kMetaDbs);
  meta.main = load_db(m + kMetaDbs + kDbBytes);
  meta.last = load<uint64_t>(m, kMetaLastPage);
  meta.txnid = load<uint64_t>(m, kMetaLastPage + 8);
  const uint32_t ps = meta.page_size;
  if (ps < kMinPageSize || ps > kMaxPageSize || (ps & (ps - 1)))
    return fail("gives a page size of " + std::to_string(ps) + " bytes");
  if (page_size && ps != page_size)
    return fail("gives a page size of " + std::to_string(ps) + " bytes, meta page 0 " + std::to_string(page_size));
  const uint64_t pages = file_bytes / ps;
  if (meta.last < 1 || meta.last >= pages)
    return make_error(where + " names pages up to " + std::to_string(meta.last) + " but data.mdb holds " +
                      std::to_string(pages) + ": the file is truncated or corrupt");
  return meta;
}

Result<FileShape> check_once(int fd, uint64_t file_bytes, uint64_t* walked_txnid) {
  auto m0 = read_meta(fd, 0, 0, file_bytes);
  if (!m0) return m0.error();
  auto m1 = read_meta(fd, 1, m0->page_size, file_bytes);
  if (!m1) return m1.error();
  // LMDB takes the larger transaction id T (meta page 0 on a tie) as the current one, but its
  // transactions then read meta page T & 1 (mdb_txn_renew0: me_metas[txnid & 1]). A store LMDB
  // wrote always has T on page T & 1 (transaction T writes that page); anything else is damage, and
  // checking the page with T would validate a tree LMDB does not read.
  const int newest = m1->txnid > m0->txnid ? 1 : 0;
  const uint64_t current = newest ? m1->txnid : m0->txnid;
  if ((current & 1) != uint64_t(newest))
    return make_error("data.mdb's meta pages disagree: meta page " + std::to_string(newest) + " holds transaction " +
                      std::to_string(current) + ", which LMDB would read from meta page " +
                      std::to_string(current & 1) + " (transaction " + std::to_string(newest ? m0->txnid : m1->txnid) +
                      "): the store is corrupt");
  // Transaction T writes meta page T & 1, so the two ids LMDB leaves differ by exactly 1 (both are 0
  // before the first commit). A larger gap is a damaged id: on the newest page it would have LMDB
  // read that page as current whatever it holds, on the older one it is the only sign that a flipped
  // byte made the older tree the current one (the store would open with its last checkpoint lost).
  const uint64_t older = newest ? m0->txnid : m1->txnid;
  if (current - older != 1 && !(current == 0 && older == 0))
    return make_error("data.mdb's meta pages hold transactions " + std::to_string(m0->txnid) + " (page 0) and " +
                      std::to_string(m1->txnid) + " (page 1), which LMDB never leaves (it keeps them 1 apart): the " +
                      "store is corrupt");
  // Pages are only ever added at the end (freed ones are reused, the file never shrinks), so the
  // older transaction's last page cannot be past the current one's: when it is, the ids were
  // damaged (the newest lowered by 2 keeps gap and parity) and LMDB would read the older tree.
  const Meta& old_meta = newest ? *m0 : *m1;
  if (old_meta.last > (newest ? m1->last : m0->last))
    return make_error("data.mdb's meta page " + std::to_string(newest ? 0 : 1) + " (transaction " +
                      std::to_string(old_meta.txnid) + ") uses pages up to " + std::to_string(old_meta.last) +
                      ", past the current transaction's " + std::to_string(newest ? m1->last : m0->last) +
                      ": the store is corrupt");
  const Meta& m = newest ? *m1 : *m0;
  *walked_txnid = m.txnid;
  Walker w(fd, m.page_size, m.last);
  const std::string where = "data.mdb meta page " + std::to_string(newest);
  Tree free_tree{"the free-page database", m.free, true, false};
  Tree main_tree{"the main database", m.main, false, true};
  for (const Tree* t : {&free_tree, &main_tree})
    if (auto r = w.check_db(*t, where); !r) return r.error();
  std::vector<Tree> named;
  if (auto r = w.walk_tree(free_tree, &named); !r) return r.error();
  if (auto r = w.walk_tree(main_tree, &named); !r) return r.error();
  for (const Tree& t : named)
    if (auto r = w.walk_tree(t, nullptr); !r) return r.error();
  return FileShape{m.page_size, m.last, w.pages_read()};
}

// The larger transaction id of the two meta pages, as read now (0 when they cannot be read).
uint64_t newest_txnid(int fd) {
  uint8_t m[kMetaBytes];
  if (pread(fd, m, sizeof m, 0) != ssize_t(sizeof m)) return 0;
  const uint64_t t0 = load<uint64_t>(m, kMetaLastPage + 8);
  const uint32_t ps = load<uint32_t>(m, kMetaDbs);
  if (ps < kMinPageSize || ps > kMaxPageSize || pread(fd, m, sizeof m, off_t(ps)) != ssize_t(sizeof m)) return t0;
  return std::max(t0, load<uint64_t>(m, kMetaLastPage + 8));
}

}  // namespace

Result<FileShape> check_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("cannot open " + path + ": " + strerror(errno));
  Result<FileShape> out = make_error("");
  // Another process may commit while we read: a writer reuses pages no reader holds, so the walk can
  // meet a page rewritten under it. A failure counts only if the newest meta page did not change.
  for (int attempt = 0; attempt < 3; ++attempt) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
      out = make_error("cannot read the size of " + path + ": " + strerror(errno));
      break;
    }
    uint64_t txnid = 0;
    out = check_once(fd, uint64_t(st.st_size), &txnid);
    if (out) break;
    if (newest_txnid(fd) == txnid) break;
  }
  ::close(fd);
  return out;
}

Result<std::optional<SafePoint>> read_safe_point(int fd, uint64_t txnid) {
  const int slot = int(txnid & 1);
  uint8_t m0[kMetaBytes];
  if (pread(fd, m0, sizeof m0, 0) != ssize_t(sizeof m0)) return make_error("data.mdb meta page 0 cannot be read");
  const uint32_t ps = load<uint32_t>(m0, kMetaDbs);
  if (ps < kMinPageSize || ps > kMaxPageSize || (ps & (ps - 1)))
    return make_error("data.mdb meta page 0 gives a page size of " + std::to_string(ps) + " bytes");
  SafePoint p;
  p.txnid = txnid;
  p.meta.resize(kMetaBytes);
  if (pread(fd, p.meta.data(), kMetaBytes, off_t(slot) * ps) != ssize_t(kMetaBytes))
    return make_error("data.mdb meta page " + std::to_string(slot) + " cannot be read");
  if (load<uint64_t>(p.meta.data(), kMetaLastPage + 8) != txnid) return std::optional<SafePoint>{};
  return std::optional<SafePoint>(std::move(p));
}

namespace {
constexpr char kSafeMagic[4] = {'V', 'X', 'S', 'P'};
}

std::vector<uint8_t> encode_safe_point(const SafePoint& p) {
  std::vector<uint8_t> out(kSafeMagic, kSafeMagic + 4);
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(p.txnid >> (8 * i)));
  out.insert(out.end(), p.meta.begin(), p.meta.end());
  const uint64_t h = XXH3_64bits(out.data(), out.size());
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(h >> (8 * i)));
  return out;
}

Result<SafePoint> decode_safe_point(const std::vector<uint8_t>& b) {
  if (b.size() != 4 + 8 + kMetaBytes + 8 || std::memcmp(b.data(), kSafeMagic, 4) != 0)
    return make_error("synced-meta is not a safe point (" + std::to_string(b.size()) + " bytes)");
  if (load<uint64_t>(b.data(), b.size() - 8) != XXH3_64bits(b.data(), b.size() - 8))
    return make_error("synced-meta is corrupt: checksum mismatch");
  SafePoint p;
  p.txnid = load<uint64_t>(b.data(), 4);
  p.meta.assign(b.begin() + 12, b.end() - 8);
  if (p.txnid == 0 || load<uint64_t>(p.meta.data(), kMetaLastPage + 8) != p.txnid ||
      load<uint32_t>(p.meta.data(), kHeaderBytes) != kMagic)
    return make_error("synced-meta does not hold the meta page of transaction " + std::to_string(p.txnid));
  return p;
}

Result<void> roll_back(const std::string& path, const SafePoint& p) {
  const uint32_t ps = load<uint32_t>(p.meta.data(), kMetaDbs);
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return make_error("cannot open " + path + " to roll it back: " + strerror(errno));
  std::vector<uint8_t> older = p.meta;
  const uint64_t own = p.txnid & 1, other = own ^ 1, before = p.txnid - 1;
  std::memcpy(older.data(), &other, 8);  // the page header's page number
  std::memcpy(older.data() + kMetaLastPage + 8, &before, 8);
  bool ok = pwrite(fd, p.meta.data(), p.meta.size(), off_t(own * ps)) == ssize_t(p.meta.size()) &&
            pwrite(fd, older.data(), older.size(), off_t(other * ps)) == ssize_t(older.size()) && fdatasync(fd) == 0;
  const int e = errno;
  ::close(fd);
  if (!ok) return make_error("cannot roll " + path + " back: " + strerror(e));
  return {};
}

}  // namespace vx::checkpoint::lmdb
