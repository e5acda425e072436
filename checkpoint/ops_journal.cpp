#include "checkpoint/ops_journal.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "checkpoint/lmdb.hpp"

namespace vx::checkpoint {

namespace {

constexpr uint32_t kMagic = 0x4a4f5856;       // "VXOJ"
constexpr uint32_t kEntryMagic = 0x454f5856;  // "VXOE"
constexpr uint32_t kVersion = 1;
constexpr uint64_t kEntryHead = 24;  // magic, payload bytes, first index, operations, pages
constexpr uint64_t kFirstCapacity = 1u << 20;

void put32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void put64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint32_t get32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

Error io_error(const std::string& what, int e) {
  return lmdb::error(e, what);  // the codes of a full disk and an I/O error, said as the store says them
}

// The entry at p (n bytes left in the file) when it is whole and continues at `next`; its size in *size.
std::optional<JournalEntry> parse_entry(const uint8_t* p, uint64_t n, uint64_t next, uint64_t* size) {
  if (n < kEntryHead + 8 || get32(p) != kEntryMagic) return std::nullopt;
  const uint64_t payload = get32(p + 4);
  if (payload > n - kEntryHead - 8) return std::nullopt;
  const uint64_t covered = kEntryHead - 8 + payload;  // from the index to the payload's end
  if (XXH3_64bits(p + 8, covered) != get64(p + 8 + covered)) return std::nullopt;
  JournalEntry e;
  e.first = get64(p + 8);
  if (e.first != next) return std::nullopt;
  const uint32_t ops = get32(p + 16), pages = get32(p + 20);
  const uint8_t* q = p + kEntryHead;
  const uint8_t* const end = q + payload;
  auto take = [&](std::vector<uint8_t>* out) {
    if (end - q < 4) return false;
    const uint32_t len = get32(q);
    q += 4;
    if (uint64_t(end - q) < len) return false;
    out->assign(q, q + len);
    q += len;
    return true;
  };
  for (uint32_t i = 0; i < ops; ++i)
    if (!take(&e.ops.emplace_back())) return std::nullopt;
  for (uint32_t i = 0; i < pages; ++i) {
    if (end - q < 16) return std::nullopt;
    PageHash h{get64(q), get64(q + 8)};
    q += 16;
    auto& pg = e.pages.emplace_back(h, std::vector<uint8_t>{});
    if (!take(&pg.second)) return std::nullopt;
  }
  if (q != end) return std::nullopt;
  *size = kEntryHead + payload + 8;
  return e;
}

}  // namespace

Result<OpsJournal::Contents> OpsJournal::read(const std::string& path) {
  Contents c;
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    if (errno == ENOENT) return c;
    return make_error(ErrorCode::StoreIo, "cannot read " + path + ": " + std::strerror(errno));
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // Created, its header not written yet (a kill right after creating it, or its page lost by a
  // machine failure): it holds nothing.
  if (bytes.size() < kHeaderBytes || get32(bytes.data()) != kMagic) return c;
  if (get32(bytes.data() + 4) != kVersion)
    return make_error(ErrorCode::StoreCorrupt, path + " is an operations journal of version " +
                                                   std::to_string(get32(bytes.data() + 4)) +
                                                   ", which this build does not read");
  c.base = get64(bytes.data() + 8);
  uint64_t at = kHeaderBytes, next = c.base;
  for (;;) {
    uint64_t size = 0;
    auto e = parse_entry(bytes.data() + at, bytes.size() - at, next, &size);
    if (!e) break;
    next += e->ops.size();
    at += size;
    c.entries.push_back(std::move(*e));
  }
  return c;
}

OpsJournal::OpsJournal(std::string path, int fd, uint8_t* map, uint64_t capacity, uint64_t base)
    : path_(std::move(path)), fd_(fd), map_(map), capacity_(capacity), next_(base) {}

OpsJournal::OpsJournal(OpsJournal&& o) noexcept
    : path_(std::move(o.path_)),
      fd_(std::exchange(o.fd_, -1)),
      map_(std::exchange(o.map_, nullptr)),
      capacity_(std::exchange(o.capacity_, 0)),
      used_(o.used_),
      next_(o.next_) {}

OpsJournal& OpsJournal::operator=(OpsJournal&& o) noexcept {
  if (this != &o) {
    close();
    path_ = std::move(o.path_);
    fd_ = std::exchange(o.fd_, -1);
    map_ = std::exchange(o.map_, nullptr);
    capacity_ = std::exchange(o.capacity_, 0);
    used_ = o.used_;
    next_ = o.next_;
  }
  return *this;
}

OpsJournal::~OpsJournal() { close(); }

void OpsJournal::close() {
  if (map_) ::munmap(map_, capacity_);
  if (fd_ >= 0) ::close(fd_);
  map_ = nullptr;
  fd_ = -1;
}

Result<OpsJournal> OpsJournal::create(const std::string& path, uint64_t base) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot create " + path, errno);
  if (int e = ::posix_fallocate(fd, 0, off_t(kFirstCapacity))) {
    ::close(fd);
    ::unlink(path.c_str());
    return io_error("cannot make room for " + path, e);
  }
  void* m = ::mmap(nullptr, kFirstCapacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    const int e = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return io_error("cannot map " + path, e);
  }
  OpsJournal j(path, fd, static_cast<uint8_t*>(m), kFirstCapacity, base);
  put32(j.map_, kMagic);
  put32(j.map_ + 4, kVersion);
  j.reset(base);
  return j;
}

void OpsJournal::reset(uint64_t base) {
  put64(map_ + 8, base);
  // The old first entry no longer starts at `base`, and a torn new one fails its checksum; the zero
  // magic only spares a reader the checksum of stale bytes.
  put32(map_ + kHeaderBytes, 0);
  used_ = kHeaderBytes;
  next_ = base;
}

uint64_t OpsJournal::entry_bytes(const JournalEntry& e) {
  uint64_t n = kEntryHead + 8;
  for (const auto& op : e.ops) n += 4 + op.size();
  for (const auto& [h, v] : e.pages) n += 16 + 4 + v.size();
  return n;
}

Result<void> OpsJournal::grow(uint64_t need) {
  uint64_t cap = capacity_;
  while (cap < need) cap *= 2;
  if (int e = ::posix_fallocate(fd_, 0, off_t(cap))) return io_error("cannot make room in " + path_, e);
  void* m = ::mremap(map_, capacity_, cap, MREMAP_MAYMOVE);
  if (m == MAP_FAILED) return io_error("cannot map " + path_, errno);
  map_ = static_cast<uint8_t*>(m);
  capacity_ = cap;
  return {};
}

Result<void> OpsJournal::append(const JournalEntry& e) {
  const uint64_t n = entry_bytes(e);
  // The entry and the zero word after it that ends the journal for a reader.
  if (used_ + n + 4 > capacity_)
    if (auto r = grow(used_ + n + 4); !r) return r;
  uint8_t* const p = map_ + used_;
  uint8_t* q = p + kEntryHead;
  for (const auto& op : e.ops) {
    put32(q, uint32_t(op.size()));
    std::memcpy(q + 4, op.data(), op.size());
    q += 4 + op.size();
  }
  for (const auto& [h, v] : e.pages) {
    put64(q, h.hi);
    put64(q + 8, h.lo);
    put32(q + 16, uint32_t(v.size()));
    std::memcpy(q + 20, v.data(), v.size());
    q += 20 + v.size();
  }
  const uint64_t payload = uint64_t(q - p) - kEntryHead;
  put32(p + 4, uint32_t(payload));
  put64(p + 8, e.first);
  put32(p + 16, uint32_t(e.ops.size()));
  put32(p + 20, uint32_t(e.pages.size()));
  put64(q, XXH3_64bits(p + 8, kEntryHead - 8 + payload));
  put32(q + 8, 0);
  put32(p, kEntryMagic);
  used_ += n;
  next_ = e.first + e.ops.size();
  return {};
}

}  // namespace vx::checkpoint
