#include "checkpoint/store.hpp"

#include <fcntl.h>
#include <kj/exception.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

#include "checkpoint/codec.hpp"
#include "checkpoint/lmdb.hpp"
#include "checkpoint/lmdb_check.hpp"
#include "checkpoint/ops_journal.hpp"

namespace vx::checkpoint {

namespace {

namespace fs = std::filesystem;

constexpr char kMetaDb[] = "meta";
constexpr char kCheckpointDb[] = "checkpoints";
constexpr char kPageDb[] = "pages";
constexpr char kMarkDb[] = "marks";
constexpr char kOpDb[] = "ops";
constexpr char kHistoryDb[] = "history";  // optional: created at the first put_history
constexpr char kHeaderKey[] = "header";
// Present while a recording session has the store open for writing: a store that still has it was
// left by a process that did not end cleanly (killed).
constexpr char kOpenKey[] = "writer-open";
// An LMDB file holds at least its two meta pages.
constexpr uint64_t kMinFileBytes = 2 * 4096;

MDB_val key_val(const std::array<uint8_t, codec::kKeyBytes>& k) { return lmdb::val(k.data(), k.size()); }
MDB_val hash_val(const std::array<uint8_t, codec::kHashBytes>& h) { return lmdb::val(h.data(), h.size()); }
// A host operation's key: its index, big-endian (codec::kOpKeyBytes).
std::array<uint8_t, codec::kOpKeyBytes> op_key(uint64_t index) {
  std::array<uint8_t, codec::kOpKeyBytes> k{};
  for (size_t i = 0; i < k.size(); ++i) k[i] = uint8_t(index >> (8 * (k.size() - 1 - i)));
  return k;
}
const uint8_t* bytes_of(const MDB_val& v) { return static_cast<const uint8_t*>(v.mv_data); }
// A host operation's datum compressed at the records' faster level: a timeline operation's samples
// are written once and read only by a view (docs/store.md, "Timeline"), and a host program of many
// small launches writes one every few dozen launches.
bool fast_datum(HostOpKind k) { return k == HostOpKind::Timeline; }

// Runs f, turning any exception (an allocation failure, a Cap'n Proto error) into an Error.
template <class T, class F>
Result<T> guarded(const std::string& what, F&& f) {
  std::string failure;
  try {
    return f();
  } catch (const kj::Exception& e) {
    failure = e.getDescription().cStr();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  return make_error(what + ": " + failure);
}

// The start of the file mapping that holds p (LMDB maps data.mdb from offset 0), from
// /proc/self/maps; nullptr when that cannot be read. LMDB 0.9 does not tell where its map is.
const uint8_t* find_map_base(const uint8_t* p) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  auto addr = reinterpret_cast<uintptr_t>(p);
  while (std::getline(maps, line)) {
    unsigned long long start = 0, end = 0, offset = 0;
    char perms[8];
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx", &start, &end, perms, &offset) != 4) continue;
    if (addr >= start && addr < end) return reinterpret_cast<const uint8_t*>(uintptr_t(start - offset));
  }
  return nullptr;
}

// Every page a record names, with the size it must have.
Result<std::map<PageHash, uint32_t>> named_pages(const CheckpointRecord& rec) {
  std::map<PageHash, uint32_t> named;
  auto add = [&](const PageHash& h, uint32_t size) -> Result<void> {
    auto [it, fresh] = named.emplace(h, size);
    if (!fresh && it->second != size)
      return make_error("page " + h.to_string() + " is named both as " + std::to_string(it->second) + " and as " +
                        std::to_string(size) + " bytes");
    return {};
  };
  for (const PageRef& p : rec.memory)
    if (auto r = add(p.hash, kPageSize); !r) return r.error();
  for (const CoreRecord& c : rec.cores)
    if (c.local_mem.size)
      if (auto r = add(c.local_mem.hash, c.local_mem.size); !r) return r.error();
  return named;
}

}  // namespace

// The safe point in `path` (GroupSync), or nullopt when there is none usable.
std::optional<lmdb::SafePoint> read_safe_point_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto p = lmdb::decode_safe_point(bytes);
  if (!p) return std::nullopt;
  return std::move(p).value();
}

// Group commit (OpenOptions::sync_interval_ms; docs/store.md, "Durability"): commits are written
// without a sync of their own; this thread syncs the file at most `every` after the first commit it
// was told of, and once more when it stops (the store closing). Each sync records a safe point: the
// newest transaction, pinned by a reader so that no later transaction reuses a page of its tree,
// synced, its meta page written to `synced-meta` (lmdb::SafePoint). After a machine failure that
// left the newest tree damaged, opening the store rolls back to it (Store::rolled_back).
class GroupSync {
 public:
  GroupSync(MDB_env* env, std::string dir, std::chrono::milliseconds every)
      : env_(env), dir_(std::move(dir)), every_(every), thread_([this] { run(); }) {}
  ~GroupSync() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
    sync();
    for (MDB_txn* r : readers_)
      if (r) mdb_txn_abort(r);
  }
  // The operations journal's file (ops_journal.hpp), synced with every safe point; -1: none.
  void set_journal_fd(int fd) { journal_fd_.store(fd, std::memory_order_release); }
  void committed() {
    std::lock_guard<std::mutex> l(m_);
    if (dirty_) return;
    dirty_ = true;
    cv_.notify_one();
  }
  // Syncs now; the first failure since the last call, if any.
  Result<void> flush() {
    {
      std::lock_guard<std::mutex> l(m_);
      dirty_ = false;
    }
    sync();
    std::lock_guard<std::mutex> l(m_);
    if (!failed_) return {};
    Error e = *failed_;
    failed_.reset();
    return e;
  }

 private:
  void run() {
    std::unique_lock<std::mutex> l(m_);
    while (!stop_) {
      cv_.wait(l, [&] { return dirty_ || stop_; });
      if (stop_) break;
      cv_.wait_for(l, every_, [&] { return stop_; });
      if (stop_) break;  // the destructor syncs
      dirty_ = false;
      l.unlock();
      sync();
      l.lock();
    }
  }
  void sync() {
    std::lock_guard<std::mutex> one(sync_m_);
    auto r = safe_point();
    // The journal's entries start at the operations committed when it was last reset, which this
    // safe point holds: synced after it, they continue the synced recording.
    if (const int fd = journal_fd_.load(std::memory_order_acquire); r && fd >= 0 && ::fdatasync(fd) != 0)
      r = make_error(lmdb::code_of(errno), std::string("syncing the operations journal: ") + std::strerror(errno));
    if (!r) {
      std::lock_guard<std::mutex> l(m_);
      if (!failed_) failed_ = r.error();
    }
  }
  // Pins the newest transaction with the spare reader, syncs, and writes its safe point; the pin of
  // the previous safe point is released only once the new one is on disk.
  Result<void> safe_point() {
    MDB_txn*& next = readers_[current_ ^ 1];
    if (int rc = next ? mdb_txn_renew(next) : mdb_txn_begin(env_, nullptr, MDB_RDONLY, &next))
      return lmdb::error(rc, "pinning the transaction to sync");
    auto release = [&](MDB_txn* t) { mdb_txn_reset(t); };
    const uint64_t txnid = mdb_txn_id(next);
    if (txnid == pinned_) {  // nothing committed since the last safe point
      release(next);
      return {};
    }
    if (int rc = mdb_env_sync(env_, 1)) {
      release(next);
      return lmdb::error(rc, "mdb_env_sync");
    }
    int fd = -1;
    mdb_env_get_fd(env_, &fd);
    auto point = lmdb::read_safe_point(fd, txnid);
    if (!point || !*point) {  // its meta page was overwritten already: the next sync records a newer one
      release(next);
      return point ? Result<void>{} : Result<void>(point.error());
    }
    const std::vector<uint8_t> bytes = lmdb::encode_safe_point(**point);
    const std::string path = dir_ + "/synced-meta", tmp = path + ".new";
    if (auto w = write_synced(tmp, bytes, path); !w) {
      release(next);
      return w;
    }
    if (readers_[current_]) release(readers_[current_]);
    current_ ^= 1;
    pinned_ = txnid;
    return {};
  }
  // Writes bytes to tmp, syncs it, renames it to path and syncs the directory.
  Result<void> write_synced(const std::string& tmp, const std::vector<uint8_t>& bytes, const std::string& path) {
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return make_error("cannot write " + tmp + ": " + std::strerror(errno));
    bool ok = ::write(fd, bytes.data(), bytes.size()) == ssize_t(bytes.size()) && fdatasync(fd) == 0;
    int e = errno;
    ::close(fd);
    if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) ok = false, e = errno;
    if (ok) {
      int d = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (d >= 0) {
        (void)fsync(d);
        ::close(d);
      }
    }
    if (!ok) return make_error("cannot write " + path + ": " + std::strerror(e));
    return {};
  }
  MDB_env* env_;
  std::string dir_;
  std::chrono::milliseconds every_;
  std::mutex sync_m_;  // one sync at a time (the thread's, flush()'s)
  MDB_txn* readers_[2] = {nullptr, nullptr};
  int current_ = 0;      // readers_[current_] pins the safe point
  uint64_t pinned_ = 0;  // its transaction
  std::mutex m_;
  std::condition_variable cv_;
  bool dirty_ = false, stop_ = false;
  std::optional<Error> failed_;
  std::atomic<int> journal_fd_{-1};
  std::thread thread_;  // last: it starts once the rest is ready
};

struct Store::Impl {
  std::string dir;
  lmdb::Env env;
  MDB_dbi meta = 0;
  MDB_dbi checkpoints = 0;
  MDB_dbi pages = 0;
  MDB_dbi marks = 0;
  MDB_dbi ops = 0;
  MDB_dbi history = 0;  // 0: the store has no "history" database (yet)
  uint64_t op_count = 0;
  StoreHeader header;
  codec::Codec codec;
  StoreStats stats;
  bool read_only = false;

  Error err(const std::string& msg, ErrorCode code = ErrorCode::Unspecified) const {
    return make_error(code, "checkpoint store " + dir + ": " + msg);
  }
  Error err(const std::string& what, const Error& e) const {
    // LMDB's own damage reports (a page of the wrong type, a page that is not there) are damage too.
    if (e.code == ErrorCode::StoreCorrupt) return corrupt(what, e);
    return err(what.empty() ? e.message : what + ": " + e.message, e.code);
  }
  // Damage found in a read: the error, and the first one kept (Store::damage) so that the session
  // refuses the recording (exit 65) however the read's caller goes on.
  mutable std::optional<std::string> damage;
  Error corrupt(const std::string& msg) const {
    Error e = err(msg, ErrorCode::StoreCorrupt);
    if (!damage) damage = e.message;
    return e;
  }
  Error corrupt(const std::string& what, const Error& e) const {
    return corrupt(what.empty() ? e.message : what + ": " + e.message);
  }

  // LMDB hands out a pointer and a size read from the page itself: a damaged size could reach past
  // the end of the file, where touching the map faults (SIGBUS). Values in the map must end inside
  // the file; values outside it are in a write transaction's own dirty pages.
  const uint8_t* map_base = nullptr;  // where data.mdb is mapped (nullptr: unknown)
  uint64_t map_size = 0;
  mutable uint64_t file_bytes = 0;  // data.mdb's size when last looked at: it only grows
  bool in_file(const MDB_val& v) const {
    auto* p = bytes_of(v);
    uint64_t end = v.mv_size;  // the value's end as a file offset, when it is in the map
    if (map_base) {
      if (p < map_base || p >= map_base + map_size) return true;
      end += uint64_t(p - map_base);
    }
    if (end <= file_bytes) return true;
    int fd = -1;
    struct stat st;
    if (mdb_env_get_fd(env.get(), &fd) != 0 || fstat(fd, &st) != 0) return false;
    file_bytes = uint64_t(st.st_size);
    return end <= file_bytes;
  }
  // The highest mark number committed, read once (a scan of the marks) and kept up to date by the
  // commits that write marks (pending_mark until its transaction commits): a stop costs no scan.
  std::optional<uint32_t> highest_mark;
  uint32_t pending_mark = 0;
  // A mark as it is written at key k: with the number (and the stop's warp and lane) it already has
  // when the point is marked again, else 1 + the highest number so far (numbers are never reused,
  // so `goto N` stays N and comes back to the lane stop N was about).
  template <class Txn, class Key>
  Result<StopRecord> numbered(Txn& txn, const Key& k, StopRecord mark) {
    if (mark.number) return mark;
    MDB_val mv;
    bool found = false;
    if (auto r = txn.get(marks, lmdb::val(k.data(), k.size()), &mv, &found, "mark"); !r) return r.error();
    if (found) {
      if (!in_file(mv)) return past_end("a mark", mv);
      auto old = codec.decode_mark(static_cast<const uint8_t*>(mv.mv_data), mv.mv_size);
      if (!old) return corrupt("a mark is corrupt: " + old.error().message);
      if (old->number) {
        // Marked again: the mark keeps its number and the warp and lane of the stop it was given to.
        mark.number = old->number;
        mark.exception = old->exception;
        return mark;
      }
    }
    if (!highest_mark) {
      auto cur = lmdb::Cursor::open(txn, marks);
      if (!cur) return cur.error();
      uint32_t highest = 0;
      MDB_val mk;
      for (MDB_cursor_op op = MDB_FIRST;; op = MDB_NEXT) {
        auto more = cur->get(&mk, &mv, op);
        if (!more) return more.error();
        if (!*more) break;
        if (!in_file(mv)) return past_end("a mark", mv);
        auto old = codec.decode_mark(static_cast<const uint8_t*>(mv.mv_data), mv.mv_size);
        if (!old) return corrupt("a mark is corrupt: " + old.error().message);
        highest = std::max(highest, old->number);
      }
      highest_mark = highest;
    }
    mark.number = *highest_mark + 1;
    pending_mark = mark.number;
    return mark;
  }

  Error past_end(const std::string& what, const MDB_val& v) const {
    return corrupt(what + " is corrupt: its size (" + std::to_string(v.mv_size) +
                   " bytes) reaches past the end of data.mdb");
  }
  Result<void> check_pages(lmdb::Txn& txn, const CheckpointRecord& rec, const std::string& what);
  // Every value of the record databases against its envelope's checksum (Store::check_values).
  Result<void> check_values();
  bool values_checked = false;  // check_values passed and nothing was written since
  Result<CheckpointRecord> read_record(lmdb::Txn& txn, const TimeKey& key, bool* found);

  // Checkpoints put with durable = false, not committed yet: encoded records by encoded key (byte
  // order is time order) and the encoded pages they brought. A write transaction takes them along.
  std::map<std::array<uint8_t, codec::kKeyBytes>, std::vector<uint8_t>> staged;
  std::map<PageHash, std::vector<uint8_t>> staged_pages;
  uint64_t staged_bytes = 0;
  // Past this many staged bytes, a put commits them (memory stays bounded however long a run goes).
  static constexpr uint64_t kMaxStagedBytes = 64ull << 20;
  // The operations journal (ops_journal.hpp; docs/store.md, "The operations journal"): operations
  // appended with journal = true and the data they brought, encoded, in the file and here, not
  // committed yet (op_count counts the committed ones). A write transaction takes them along, and
  // its commit empties the journal. Declared before group_sync, which syncs its file.
  std::optional<OpsJournal> journal;
  std::vector<std::vector<uint8_t>> journal_ops;
  std::map<PageHash, std::vector<uint8_t>> journal_pages;
  bool journal_allowed = false;  // group commit, or no sync at all (a sync at every commit: no journal)
  bool txn_has_journal = false;  // the write transaction begun last holds journal_ops
  // journal_ops and journal_pages are a killed writer's, read from a journal this open could not
  // take (another process had the store open): read like a reader's, never committed by this Store,
  // and no operation is appended after them (docs/store.md, "The operations journal").
  bool foreign_journal = false;
  // Operations of this Store's own not committed yet.
  bool own_journal_ops() const { return !foreign_journal && !journal_ops.empty(); }
  std::string journal_path() const { return dir + "/ops-journal"; }
  // Encoded pages into the pages database (one already there is left as it is).
  Result<void> put_pages(lmdb::Txn& txn, const std::map<PageHash, std::vector<uint8_t>>& held) {
    for (const auto& [hash, value] : held) {
      auto hk = codec::encode_hash(hash);
      bool existed = false;
      if (auto r =
              txn.put(pages, hash_val(hk), lmdb::val(value.data(), value.size()), MDB_NOOVERWRITE, &existed, "page");
          !r && !existed)
        return r.error();
    }
    return {};
  }
  Result<void> write_journal(lmdb::Txn& txn) {
    if (foreign_journal) return {};
    if (auto r = put_pages(txn, journal_pages); !r) return r;
    for (size_t i = 0; i < journal_ops.size(); ++i) {
      const auto k = op_key(op_count + i);
      const auto& v = journal_ops[i];
      if (auto r = txn.put(ops, lmdb::val(k.data(), k.size()), lmdb::val(v.data(), v.size()), MDB_NOOVERWRITE, nullptr,
                           "host operation");
          !r)
        return r.error();
    }
    txn_has_journal = !journal_ops.empty();
    return {};
  }
  // The journal's operations and data are in the store now: it starts again after them.
  void journal_committed() {
    if (!txn_has_journal) return;
    op_count += journal_ops.size();
    journal_ops.clear();
    journal_pages.clear();
    if (journal) journal->reset(op_count);
    txn_has_journal = false;
  }
  Result<void> append_journal(const std::vector<HostOpRecord>& ops, const std::map<PageHash, const PageData*>& given,
                              const std::string& what);
  Result<void> recover_journal();

  Result<void> write_staged(lmdb::Txn& txn) {
    if (auto r = write_journal(txn); !r) return r;
    if (auto r = put_pages(txn, staged_pages); !r) return r;
    for (const auto& [k, value] : staged)
      if (auto r = txn.put(checkpoints, key_val(k), lmdb::val(value.data(), value.size()), MDB_NOOVERWRITE, nullptr,
                           "checkpoint");
          !r)
        return r.error();
    return {};
  }
  void clear_staged() {
    staged.clear();
    staged_pages.clear();
    staged_bytes = 0;
  }
  // A write transaction that already holds the staged checkpoints (cleared once it commits).
  Result<lmdb::Txn> begin_write() {
    pending_mark = 0;  // a transaction that never committed numbered nothing
    txn_has_journal = false;
    auto txn = lmdb::Txn::begin(env.get(), false);
    if (!txn) return txn.error();
    if (auto r = write_staged(*txn); !r) return r.error();
    return txn;
  }
  Result<void> commit(lmdb::Txn& txn) {
    const uint32_t marked = std::exchange(pending_mark, 0);
    if (auto r = txn.commit(); !r) return r;
    values_checked = false;
    if (marked && highest_mark) highest_mark = std::max(*highest_mark, marked);
    journal_committed();
    clear_staged();
    if (group_sync) group_sync->committed();
    return {};
  }
  // Group commit (OpenOptions::sync_interval_ms); destroyed before env (declared after it).
  std::unique_ptr<GroupSync> group_sync;
  std::optional<std::string> rolled_back;  // opening rolled the store back to its safe point: why

  // Staged checkpoints whose commit failed (a full disk, the map full): given up, never written.
  uint64_t staged_lost = 0;
  Error staged_error;  // why the last of them were given up
  // Pages of given-up checkpoints: their writers count them as stored, so a later checkpoint or
  // host operation may name them without giving them; they are written when one does (encoded).
  std::map<PageHash, std::vector<uint8_t>> orphans;
  // Pages this Store has seen committed in the file, checked once (in the file, the size the
  // records use them at), with that size: a put names every page of memory at every stop, and
  // pages are never deleted, so a stop looks up only the pages new to it.
  std::map<PageHash, uint32_t> known_pages;
  // A commit of the staged checkpoints failed: they are given up (counted in staged_lost, the
  // error kept) with their pages (kept in orphans), so that a durable write no longer carries what
  // does not fit; a later checkpoint that names one of those pages writes it then.
  void give_up_staged(const Error& e) {
    if (staged.empty() && staged_pages.empty()) return;
    orphans.merge(staged_pages);
    staged_pages.clear();
    if (staged.empty()) {
      staged_bytes = 0;
      return;
    }
    staged_lost += staged.size();
    staged_error =
        err(std::to_string(staged.size()) + (staged.size() == 1 ? " staged checkpoint" : " staged checkpoints") +
                " could not be committed",
            e);
    stats.records -= std::min<uint64_t>(stats.records, staged.size());
    staged.clear();
    staged_bytes = 0;
  }
  // Commits the staged checkpoints alone; gives them up when that fails.
  Result<void> commit_staged() {
    auto txn = begin_write();
    Result<void> r = txn ? commit(*txn) : Result<void>(txn.error());
    if (!r) give_up_staged(r.error());
    return r;
  }
  // Runs a durable write (attempt begins its transaction with begin_write and commits it). When it
  // fails while checkpoints are staged, they may be what did not fit: they are committed alone (or
  // given up) and the write is tried once more, so that a stop, a mark or the host's operations are
  // not lost for the sake of automatic checkpoints.
  template <class F>
  Result<void> durable_write(F&& attempt) {
    auto r = attempt();
    // A read-only store's staged checkpoints are never committed, nor given up for a refused write.
    if (r || staged.empty() || read_only) return r;
    (void)commit_staged();
    return attempt();
  }
};

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() {
  if (!impl_) return;
  if (!impl_->staged.empty() || !impl_->staged_pages.empty() || impl_->own_journal_ops()) (void)sync();
  // Everything it held is committed: a clean close leaves no journal.
  if (impl_->journal && impl_->journal_ops.empty()) ::unlink(impl_->journal_path().c_str());
}

uint64_t Store::staged() const { return impl_->staged.size(); }
uint64_t Store::staged_lost() const { return impl_->staged_lost; }
const Error& Store::staged_error() const { return impl_->staged_error; }

std::optional<std::string> Store::rolled_back() const { return impl_->rolled_back; }

Result<void> Store::flush() {
  if (!impl_->group_sync) return {};
  if (auto r = impl_->group_sync->flush(); !r) return impl_->err("syncing the recording to disk", r.error());
  return {};
}

Result<void> Store::sync() {
  Impl& I = *impl_;
  if ((I.staged.empty() && I.staged_pages.empty() && !I.own_journal_ops()) || I.read_only) return {};
  const std::string what = "committing staged checkpoints";
  auto r = guarded<void>(I.err(what).message, [&]() -> Result<void> {
    if (auto c = I.commit_staged(); !c) return I.err(what, c.error());
    return {};
  });
  // An exception thrown part way is a failed commit as well.
  if (!r) I.give_up_staged(r.error());
  return r;
}

const StoreHeader& Store::header() const { return impl_->header; }
const std::string& Store::dir() const { return impl_->dir; }
std::optional<std::string> Store::damage() const { return impl_->damage; }

Result<void> Store::check_values() {
  Impl& I = *impl_;
  if (I.values_checked) return {};
  auto r = I.check_values();
  if (r) I.values_checked = true;
  return r;
}

Result<void> Store::Impl::check_values() {
  Impl& I = *this;
  return guarded<void>(I.err("checking the values").message, [&]() -> Result<void> {
    auto txn = lmdb::Txn::begin(I.env.get(), true);
    if (!txn) return I.err("checking the values", txn.error());
    struct Db {
      MDB_dbi dbi;
      const char* what;
    };
    for (const Db& db :
         {Db{I.checkpoints, "checkpoint"}, Db{I.pages, "page"}, Db{I.marks, "mark"}, Db{I.ops, "host operation"}}) {
      auto cur = lmdb::Cursor::open(*txn, db.dbi);
      if (!cur) return I.err(std::string("the ") + db.what + "s database", cur.error());
      MDB_val k, v;
      uint64_t n = 0;
      for (MDB_cursor_op op = MDB_FIRST;; op = MDB_NEXT, ++n) {
        auto more = cur->get(&k, &v, op);
        if (!more) return I.err(std::string("the ") + db.what + "s database", more.error());
        if (!*more) break;
        // The value's name: its key as the store spells it.
        std::string name = std::string(db.what) + " #" + std::to_string(n);
        if (db.dbi == I.pages) {
          if (auto h = codec::decode_hash(bytes_of(k), k.mv_size)) name = std::string(db.what) + " " + h->to_string();
        } else if (db.dbi != I.ops) {
          if (auto t = codec::decode_key(bytes_of(k), k.mv_size)) name = std::string(db.what) + " " + t->to_string();
        }
        if (!I.in_file(v)) return I.past_end(name, v);
        if (auto r = codec::Codec::check_sum(bytes_of(v), v.mv_size); !r)
          return I.corrupt(name + " is corrupt", r.error());
      }
    }
    return {};
  });
}

StoreStats Store::stats() const { return impl_->stats; }

Result<Store> Store::open(const std::string& dir, const StoreHeader& header, OpenMode mode,
                          const OpenOptions& options) {
  return open_impl(dir, &header, mode, options);
}

namespace {

// Writes a scratch file in dir (larger for a writer) and removes it: a full filesystem, a quota or a
// file-size limit fail here with an error number instead of later through a map. 0 when it could.
int probe_space(const std::string& dir, bool writer) {
  const fs::path probe = fs::path(dir) / ".vxreplay-space-probe";
  FILE* f = std::fopen(probe.c_str(), "wb");
  if (!f) return errno;
  // The lock file is 8 KiB for LMDB's default 126 readers; a writer needs more. No sync: local
  // filesystems (ext4, XFS, btrfs, tmpfs) reserve the room at write() and refuse it there, as a
  // file-size limit does; a network filesystem that defers the write reports it at close.
  std::vector<char> zeros(writer ? 64 * 1024 : 16 * 1024, 0);
  const bool wrote = std::fwrite(zeros.data(), 1, zeros.size(), f) == zeros.size() && std::fflush(f) == 0;
  int err = wrote ? 0 : errno;
  if (std::fclose(f) != 0 && err == 0) err = errno;
  std::error_code ec;
  fs::remove(probe, ec);
  return err;
}

// Whether lock.mdb is there at its full size with its first page written (where LMDB's header and
// the reader slots in use are): opening the store then writes nothing that needs room, and a
// read-only open need not probe. A lock file left sparse (a process died initializing it) is not.
bool lock_initialized(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && st.st_size >= 8192 && st.st_blocks > 0;
}

// Whether a process has the LMDB environment whose lock file is path open: each holds a shared
// fcntl lock on its first byte while it does (an exclusive one while it initializes the file).
bool lock_in_use(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // no lock file: nobody has the store open
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 1;
  const bool busy = ::fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type != F_UNLCK;
  ::close(fd);
  return busy;
}

}  // namespace

Result<Store> Store::open_existing(const std::string& dir, OpenMode mode, const OpenOptions& options) {
  if (mode == OpenMode::Create)
    return make_error("checkpoint store " + dir + ": open_existing cannot create a store; use Store::open");
  return open_impl(dir, nullptr, mode, options);
}

Result<Store> Store::open_impl(const std::string& dir, const StoreHeader* want, OpenMode mode,
                               const OpenOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->codec = codec::Codec(options.zstd_level, options.record_zstd_level);
  impl->read_only = mode == OpenMode::ReadOnly;
  Impl& I = *impl;
  std::optional<lmdb::SafePoint> roll_to;  // values past the safe point were damaged: roll back to it
  std::string value_damage;
  uint32_t roll_page_size = 0;
  const std::string where = "checkpoint store " + dir + ": ";
  auto bare = [&](std::string message) {  // an error of this store without its name in front
    if (message.rfind(where, 0) == 0) message.erase(0, where.size());
    return message;
  };
  auto body = [&]() -> Result<void> {
    std::error_code ec;
    const fs::path data = fs::path(dir) / "data.mdb";
    const bool existed = fs::exists(data, ec);
    uint64_t file_bytes = 0;
    uint32_t page_size = 0;  // of an existing file, as the structural check read it
    if (!existed) {
      if (mode != OpenMode::Create)
        return I.err("there is no checkpoint store here (" + data.string() + " does not exist)");
      if (!want) return I.err("a new store needs a header");
      if (auto e = codec::check_config(want->config)) return I.err("cannot create the store: " + *e);
      fs::create_directories(dir, ec);
      if (ec) return I.err("cannot create the directory: " + ec.message(), lmdb::code_of(ec.value()));
    } else {
      file_bytes = fs::file_size(data, ec);
      if (ec) return I.err("cannot read the size of " + data.string() + ": " + ec.message());
      // A shorter file is not a store LMDB could have written; opening it for writing would start an
      // empty store over whatever was lost.
      if (file_bytes < kMinFileBytes)
        return I.err(data.string() + " is truncated (" + std::to_string(file_bytes) + " bytes; a store has at least " +
                     std::to_string(kMinFileBytes) + ")");
      // LMDB trusts its own pages (a damaged one can make it abort): walk them before it maps the file.
      auto shape = lmdb::check_file(data.string());
      if (!shape) {
        // A machine failure after commits not synced yet (group commit) can leave the newest tree
        // damaged: the safe point recorded by the last sync is intact (docs/store.md, "Durability").
        auto point = read_safe_point_file((fs::path(dir) / "synced-meta").string());
        if (!point) return I.err("", shape.error());
        if (I.read_only)
          return I.err(shape.error().message + " (it can be rolled back to its last synced state, transaction " +
                       std::to_string(point->txnid) + ", by opening it for writing: vxreplay replay DIR)");
        if (auto r = lmdb::roll_back(data.string(), *point); !r) return I.err("", r.error());
        auto again = lmdb::check_file(data.string());
        if (!again) return I.err("", shape.error());
        I.rolled_back = "the recording's newest commits were damaged (" + shape.error().message +
                        "): rolled back to its last synced state (transaction " + std::to_string(point->txnid) + ")";
        shape = std::move(again);
      }
      page_size = shape->page_size;
    }

    // LMDB maps its lock file (lock.mdb, created on first use, and its header written through the map
    // by the first process to open the store): on a filesystem with no room, touching that map is a
    // SIGBUS. A probe write first turns a full disk (or a file-size limit) into an error.
    bool no_lock = false;
    const std::string lock = (fs::path(dir) / "lock.mdb").string();
    if (!I.read_only) {
      if (int e = probe_space(dir, true))
        return I.err("cannot write here: " + std::string(std::strerror(e)), ErrorCode::StoreIo);
    } else if (int e = lock_initialized(lock) ? 0 : probe_space(dir, false);
               e && e != EACCES && e != EPERM && e != EROFS) {
      // Reading needs no room, but the first process to open a store initializes lock.mdb through
      // its map. When no process has the store open (each holds a lock on lock.mdb while it does),
      // nobody needs our reader slot and no writer can reuse pages under us: open without the lock
      // file. When one does, the file is initialized and only a reader slot is written. (A directory
      // that cannot be written at all is LMDB's case: it reads without locking on a read-only filesystem.)
      no_lock = !lock_in_use(lock);
    }
    MDB_env* raw = nullptr;
    if (int rc = mdb_env_create(&raw)) return I.err("", lmdb::error(rc, "mdb_env_create"));
    I.env = lmdb::Env(raw);
    if (int rc = mdb_env_set_mapsize(raw, options.map_size)) {
      Error e = lmdb::error(rc, "mdb_env_set_mapsize");
      e.code = ErrorCode::StoreIo;  // a map the system will not give: the recording cannot be written
      return I.err("", e);
    }
    if (int rc = mdb_env_set_maxdbs(raw, 8)) return I.err("", lmdb::error(rc, "mdb_env_set_maxdbs"));
    unsigned flags = MDB_NOTLS;
    if (I.read_only) flags |= MDB_RDONLY;
    if (no_lock) flags |= MDB_NOLOCK;
    if (!options.sync || options.sync_interval_ms) flags |= MDB_NOSYNC;
    if (int rc = mdb_env_open(raw, dir.c_str(), flags, 0644))
      return I.err("cannot open " + data.string(), lmdb::error(rc, "mdb_env_open"));
    // Reader slots of processes that were killed are freed here rather than leaking forever.
    int dead = 0;
    mdb_reader_check(raw, &dead);

    if (existed) {
      // The last committed transaction names pages up to me_last_pgno: a file shorter than that was
      // truncated, and reading it through the map would fault (SIGBUS) instead of failing.
      MDB_envinfo info;
      MDB_stat st;
      if (int rc = mdb_env_info(raw, &info)) return I.err("", lmdb::error(rc, "mdb_env_info"));
      if (int rc = mdb_env_stat(raw, &st)) return I.err("", lmdb::error(rc, "mdb_env_stat"));
      if (st.ms_psize != page_size)
        return I.err(data.string() + " changed while it was opened: LMDB reads " + std::to_string(st.ms_psize) +
                     "-byte pages, the check read " + std::to_string(page_size));
      uint64_t need = (uint64_t(info.me_last_pgno) + 1) * st.ms_psize;
      if (file_bytes < need)
        return I.err(data.string() + " is truncated: " + std::to_string(file_bytes) +
                     " bytes, but its last committed transaction uses " + std::to_string(need));
    }

    const bool create = !existed;
    {
      auto txn = lmdb::Txn::begin(raw, !create);
      if (!txn) return I.err("", txn.error());
      unsigned dflags = create ? MDB_CREATE : 0;
      for (auto [name, dbi] : {std::pair{kMetaDb, &I.meta},
                               {kCheckpointDb, &I.checkpoints},
                               {kPageDb, &I.pages},
                               {kMarkDb, &I.marks},
                               {kOpDb, &I.ops},
                               {kHistoryDb, &I.history}}) {
        // The history is created when a question first stores one (put_history).
        int rc = mdb_dbi_open(txn->get(), name, dbi == &I.history ? 0 : dflags, dbi);
        // A store of format 1 has no marks or ops: the header check below says so.
        if (rc == MDB_NOTFOUND && (dbi == &I.marks || dbi == &I.ops || dbi == &I.history)) continue;
        if (rc == MDB_NOTFOUND)
          return I.err(std::string("not a vxreplay checkpoint store (an LMDB file without the '") + name +
                       "' database)");
        if (rc) return I.err(std::string("cannot open the '") + name + "' database", lmdb::error(rc, "mdb_dbi_open"));
      }
      if (create) {
        StoreHeader h = *want;
        h.format_version = kFormatVersion;
        auto value = I.codec.encode_header(h);
        MDB_val k = lmdb::val(kHeaderKey, sizeof kHeaderKey - 1);
        if (auto r = txn->put(I.meta, k, lmdb::val(value.data(), value.size()), MDB_NOOVERWRITE, nullptr, "header"); !r)
          return I.err("cannot write the header", r.error());
      }
      if (auto r = txn->commit(); !r) return I.err("", r.error());  // keeps the database handles open
    }

    auto txn = lmdb::Txn::begin(raw, true);
    if (!txn) return I.err("", txn.error());
    MDB_val v;
    bool found = false;
    if (auto r = txn->get(I.meta, lmdb::val(kHeaderKey, sizeof kHeaderKey - 1), &v, &found, "header"); !r)
      return I.err("", r.error());
    if (!found) return I.err("not a vxreplay checkpoint store (no header record)");
    I.map_base = find_map_base(bytes_of(v));
    I.map_size = options.map_size;
    if (!I.in_file(v)) return I.past_end("the store header", v);
    auto h = I.codec.decode_header(bytes_of(v), v.mv_size);
    if (!h) return I.corrupt("the store header is corrupt", h.error());
    I.header = std::move(*h);
    if (I.header.format_version > kFormatVersion)
      return I.err("written by a newer vxreplay (store format version " + std::to_string(I.header.format_version) +
                   "; this build reads version " + std::to_string(kFormatVersion) + ")");
    if (I.header.format_version < kOldestFormatVersion)
      return I.err("written by an older vxreplay (store format version " + std::to_string(I.header.format_version) +
                   "; this build reads versions " + std::to_string(kOldestFormatVersion) + " to " +
                   std::to_string(kFormatVersion) + ": record the workload again)");
    if (I.marks == 0 || I.ops == 0)
      return I.err("not a vxreplay checkpoint store (an LMDB file without the 'marks' or 'ops' database)");
    if (want) {
      if (I.header.config != want->config)
        return I.err("recorded on a " + I.header.config.to_string() + " device, not the " + want->config.to_string() +
                     " device asked for; use another store directory or the store's configuration");
      if (I.header.kernel_hash != want->kernel_hash)
        return I.err("holds checkpoints of another kernel image (hash " +
                     PageHash{0, I.header.kernel_hash}.to_string().substr(16) + ", not " +
                     PageHash{0, want->kernel_hash}.to_string().substr(16) + "); use another store directory");
    }
    MDB_stat st;
    if (int rc = mdb_stat(txn->get(), I.checkpoints, &st)) return I.err("", lmdb::error(rc, "mdb_stat checkpoints"));
    I.stats.records = st.ms_entries;
    if (int rc = mdb_stat(txn->get(), I.pages, &st)) return I.err("", lmdb::error(rc, "mdb_stat pages"));
    I.stats.pages = st.ms_entries;
    if (int rc = mdb_stat(txn->get(), I.ops, &st)) return I.err("", lmdb::error(rc, "mdb_stat ops"));
    I.op_count = st.ms_entries;
    // A machine failure under group commit can also leave the newest tree whole but holding values
    // whose pages never reached the disk (an overflow page's old bytes): past the safe point of the
    // last sync, every value is checked, and damage rolls the store back to that safe point as the
    // structural check's does (docs/store.md, "Durability").
    if (existed && !I.rolled_back) {
      auto point = read_safe_point_file((fs::path(dir) / "synced-meta").string());
      MDB_envinfo info;
      if (point && mdb_env_info(raw, &info) == 0 && info.me_last_txnid > point->txnid) {
        auto values = I.check_values();
        if (!values && values.error().code == ErrorCode::StoreCorrupt) {
          value_damage = bare(values.error().message);
          if (I.read_only)
            return I.err(value_damage + " (it can be rolled back to its last synced state, transaction " +
                             std::to_string(point->txnid) + ", by opening it for writing: vxreplay replay DIR)",
                         ErrorCode::StoreCorrupt);
          roll_to = std::move(point);
          roll_page_size = page_size;
          return {};
        }
        if (!values) return values.error();
        I.values_checked = true;
      }
    }
    return {};
  };
  auto r = guarded<void>("checkpoint store " + dir, body);
  if (!r) return r.error();
  if (roll_to) {
    // This open's map is closed before the meta pages are written (no GroupSync was started: it
    // would have recorded the damaged tree as safe), then the store is opened again.
    impl.reset();
    const std::string data = (fs::path(dir) / "data.mdb").string();
    const std::string how =
        " (it can be rolled back to its last synced state, transaction " + std::to_string(roll_to->txnid) + ", ";
    // Another process's map of the newest tree would be written under.
    if (lock_in_use((fs::path(dir) / "lock.mdb").string()))
      return make_error(ErrorCode::StoreCorrupt, where + value_damage + how + "once no other process has it open)");
    // The meta pages as they are: put back if the safe point's tree holds the damage too (it is older
    // than the safe point, and rolling back would only lose the commits after it).
    std::vector<uint8_t> metas(2 * size_t(roll_page_size));
    const int fd = ::open(data.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0 || ::pread(fd, metas.data(), metas.size(), 0) != ssize_t(metas.size())) {
      if (fd >= 0) ::close(fd);
      return make_error(ErrorCode::StoreCorrupt, where + value_damage + how + "but " + data + " cannot be read back)");
    }
    auto undo = [&](const std::string& why) -> Error {
      const bool put_back = ::pwrite(fd, metas.data(), metas.size(), 0) == ssize_t(metas.size()) && ::fsync(fd) == 0;
      ::close(fd);
      return make_error(ErrorCode::StoreCorrupt, where + value_damage + "; " + why +
                                                     (put_back ? "" : ", and the newest state could not be put back"));
    };
    if (auto rb = lmdb::roll_back(data, *roll_to); !rb)
      return undo("it could not be rolled back (" + rb.error().message + ")");
    {
      auto again = open_impl(dir, want, mode, options);
      Result<void> checked = again ? again->check_values() : Result<void>(again.error());
      if (checked) {
        ::close(fd);
        again->impl_->rolled_back = "the recording's newest commits were damaged (" + value_damage +
                                    "): rolled back to its last synced state (transaction " +
                                    std::to_string(roll_to->txnid) + ")";
        return again;
      }
      const std::string why = bare(checked.error().message);
      again = Result<Store>(Error{why});  // closed before the meta pages are put back
      return undo("its last synced state is damaged too (" + why + ")");
    }
  }
  if (options.sync && options.sync_interval_ms && !impl->read_only) {
    impl->group_sync =
        std::make_unique<GroupSync>(impl->env.get(), dir, std::chrono::milliseconds(options.sync_interval_ms));
    impl->group_sync->committed();  // the header a new store was given
  }
  impl->journal_allowed = !options.sync || options.sync_interval_ms;
  // A writer killed with operations in its journal: they continue the recording. While another
  // process has the store open (it may be that writer) they are only read, as a reader does.
  impl->foreign_journal = !impl->read_only && lock_in_use((fs::path(dir) / "lock.mdb").string());
  if (auto r = guarded<void>("checkpoint store " + dir, [&] { return impl->recover_journal(); }); !r) return r.error();
  return Store(std::move(impl));
}

Result<void> Store::Impl::check_pages(lmdb::Txn& txn, const CheckpointRecord& rec, const std::string& what) {
  auto named = named_pages(rec);
  if (!named) return err(what, named.error());
  for (const auto& [hash, size] : *named) {
    auto k = codec::encode_hash(hash);
    MDB_val v;
    bool found = false;
    if (auto st = staged_pages.find(hash); st != staged_pages.end()) {
      auto raw = codec::Codec::raw_size(st->second.data(), st->second.size());
      if (!raw || *raw != size)
        return err(what + " uses page " + hash.to_string() + " as " + std::to_string(size) + " bytes, but it is not");
      continue;
    }
    if (auto r = txn.get(pages, hash_val(k), &v, &found, "page"); !r) return err(what, r.error());
    if (!found) return err(what + " names page " + hash.to_string() + ", which is not in the store");
    if (!in_file(v)) return past_end(what + ": page " + hash.to_string(), v);
    auto raw = codec::Codec::raw_size(bytes_of(v), v.mv_size);
    if (!raw || *raw != size)
      return err(what + " uses page " + hash.to_string() + " as " + std::to_string(size) +
                 " bytes, but the stored page is " + (raw ? std::to_string(*raw) + " bytes" : "truncated"));
  }
  return {};
}

Result<CheckpointRecord> Store::Impl::read_record(lmdb::Txn& txn, const TimeKey& key, bool* found) {
  const std::string what = "checkpoint " + key.to_string();
  auto k = codec::encode_key(key);
  MDB_val v;
  if (auto st = staged.find(k); st != staged.end()) {
    v = lmdb::val(st->second.data(), st->second.size());
    *found = true;
  } else {
    if (auto r = txn.get(checkpoints, key_val(k), &v, found, "checkpoint"); !r) return err(what, r.error());
    if (!*found) return err("there is no " + what);
    if (!in_file(v)) return past_end(what, v);
  }
  auto rec = codec.decode_checkpoint(bytes_of(v), v.mv_size);
  if (!rec) return corrupt(what + " is corrupt", rec.error());
  if (rec->key != key) return corrupt(what + " is corrupt: it holds the record of " + rec->key.to_string());
  if (auto e = codec::validate(*rec, header.config)) return corrupt(what + " is corrupt: " + *e);
  if (auto r = check_pages(txn, *rec, what); !r) return r.error();
  return rec;
}

Result<void> Store::put(const TimeKey& key, const CheckpointRecord& rec, const std::vector<PageData>& pages,
                        const StopRecord* mark, bool durable) {
  if (mark) durable = true;
  Impl& I = *impl_;
  const std::string what = "cannot put checkpoint " + key.to_string();
  auto attempt = [&]() -> Result<void> {
    if (I.read_only && durable) return I.err(what + ": the store is open read-only");
    // A read-only store keeps staged checkpoints in memory only, up to the staging bound.
    if (I.read_only && I.staged_bytes > Impl::kMaxStagedBytes)
      return I.err(what + ": the store is open read-only and the checkpoints kept in memory reached " +
                   std::to_string(Impl::kMaxStagedBytes >> 20) + " MiB");
    if (rec.key != key) return I.err(what + ": the record's own key is " + rec.key.to_string());
    if (auto e = codec::validate(rec, I.header.config)) return I.err(what + ": " + *e);
    auto named = named_pages(rec);
    if (!named) return I.err(what, named.error());
    std::map<PageHash, const PageData*> given;
    uint64_t raw_bytes = 0;
    for (const PageData& p : pages) {
      std::string at = "page " + p.hash.to_string();
      if (p.bytes.empty() || p.bytes.size() > kMaxPageBytes)
        return I.err(what + ": " + at + " is " + std::to_string(p.bytes.size()) + " bytes (1.." +
                     std::to_string(kMaxPageBytes) + ")");
      if (hash_page(p.bytes) != p.hash)
        return I.err(what + ": " + at + " holds bytes that hash to " + hash_page(p.bytes).to_string());
      auto n = named->find(p.hash);
      if (n == named->end()) return I.err(what + ": " + at + " is given but the record does not name it");
      if (n->second != p.bytes.size())
        return I.err(what + ": " + at + " is " + std::to_string(p.bytes.size()) + " bytes; the record uses it as " +
                     std::to_string(n->second));
      given.emplace(p.hash, &p);
      raw_bytes += p.bytes.size();
    }
    auto value = I.codec.encode_checkpoint(rec);

    // A staged put only reads the store; a durable one writes the staged checkpoints first.
    auto txn = durable ? I.begin_write() : lmdb::Txn::begin(I.env.get(), true);
    if (!txn) return I.err(what, txn.error());
    auto k = codec::encode_key(key);
    MDB_val existing;
    bool found = I.staged.count(k) > 0;
    if (!found)
      if (auto r = txn->get(I.checkpoints, key_val(k), &existing, &found, "checkpoint"); !r)
        return I.err(what, r.error());
    if (found) return I.err(what + ": a checkpoint at that time already exists (records are immutable)");
    std::map<PageHash, std::vector<uint8_t>> new_staged;
    std::vector<PageHash> adopted;  // pages of given-up checkpoints this one writes

    uint64_t written = 0, stored_bytes = 0, new_raw = 0;
    std::vector<std::pair<PageHash, uint32_t>> committed;  // known once the transaction commits
    for (const auto& [hash, size] : *named) {
      if (auto kp = I.known_pages.find(hash); kp != I.known_pages.end()) {
        if (kp->second != size)
          return I.corrupt(what + ": the stored page " + hash.to_string() + " is not " + std::to_string(size) +
                           " bytes (the store is corrupt)");
        continue;
      }
      auto hk = codec::encode_hash(hash);
      MDB_val v;
      if (auto r = txn->get(I.pages, hash_val(hk), &v, &found, "page"); !r) return I.err(what, r.error());
      if (found) {
        if (!I.in_file(v)) return I.past_end(what + ": page " + hash.to_string(), v);
        auto raw = codec::Codec::raw_size(bytes_of(v), v.mv_size);
        if (!raw || *raw != size)
          return I.corrupt(what + ": the stored page " + hash.to_string() + " is not " + std::to_string(size) +
                           " bytes (the store is corrupt)");
        committed.emplace_back(hash, size);
        continue;
      }
      if (!durable && I.staged_pages.count(hash)) continue;
      auto g = given.find(hash);
      std::vector<uint8_t> pv;
      if (g != given.end()) {
        pv = I.codec.encode_page(g->second->bytes.data(), g->second->bytes.size());
      } else if (auto o = I.orphans.find(hash); o != I.orphans.end()) {
        pv = o->second;
        adopted.push_back(hash);
      } else {
        return I.err(what + ": the record names page " + hash.to_string() + ", which is neither given nor stored");
      }
      if (!durable) {
        stored_bytes += pv.size();
        new_raw += size;
        new_staged.emplace(hash, std::move(pv));
        ++written;
        continue;
      }
      if (auto r = txn->put(I.pages, hash_val(hk), lmdb::val(pv.data(), pv.size()), 0, nullptr, "page"); !r)
        return I.err(what, r.error());
      committed.emplace_back(hash, size);
      ++written;
      stored_bytes += pv.size();
      new_raw += size;
    }
    if (durable) {
      if (auto r = txn->put(I.checkpoints, key_val(k), lmdb::val(value.data(), value.size()), 0, nullptr, "checkpoint");
          !r)
        return I.err(what, r.error());
      if (mark) {
        auto numbered = I.numbered(*txn, k, *mark);
        if (!numbered) return I.err(what, numbered.error());
        auto mv = I.codec.encode_mark(*numbered);
        if (auto r = txn->put(I.marks, key_val(k), lmdb::val(mv.data(), mv.size()), 0, nullptr, "mark"); !r)
          return I.err(what, r.error());
      }
      if (auto r = I.commit(*txn); !r) return I.err(what, r.error());
      for (const auto& h : adopted) I.orphans.erase(h);
      I.known_pages.insert(committed.begin(), committed.end());
    } else {
      for (const auto& h : adopted) I.orphans.erase(h);
      I.known_pages.insert(committed.begin(), committed.end());  // found by a read: committed already
      I.staged_bytes += value.size() + stored_bytes;
      I.staged.emplace(k, value);
      I.staged_pages.merge(new_staged);
    }

    StoreStats& s = I.stats;
    s.records += 1;
    s.pages += written;
    s.puts += 1;
    s.pages_given += pages.size();
    s.pages_written += written;
    s.pages_shared += pages.size() - written;
    s.raw_page_bytes += raw_bytes;
    s.new_page_raw_bytes += new_raw;
    s.stored_page_bytes += stored_bytes;
    s.record_bytes += value.size();
    return {};
  };
  auto r = guarded<void>(I.err(what).message, [&] { return durable ? I.durable_write(attempt) : attempt(); });
  if (r && !durable && !I.read_only && I.staged_bytes > Impl::kMaxStagedBytes) {
    // Committed now, so that memory stays bounded; should that fail, the checkpoints are given up
    // (counted in staged_lost, never silently) and their pages go with the next write.
    (void)sync();
  }
  return r;
}

Result<CheckpointRecord> Store::get(const TimeKey& key) {
  Impl& I = *impl_;
  return guarded<CheckpointRecord>(I.err("checkpoint " + key.to_string()).message, [&]() -> Result<CheckpointRecord> {
    auto txn = lmdb::Txn::begin(I.env.get(), true);
    if (!txn) return I.err("", txn.error());
    bool found = false;
    return I.read_record(*txn, key, &found);
  });
}

Result<void> Store::verify(const TimeKey& key) {
  auto rec = get(key);
  if (!rec) return rec.error();
  auto named = named_pages(*rec);
  if (!named) return impl_->err("checkpoint " + key.to_string(), named.error());
  for (const auto& [hash, size] : *named) {
    auto page = read_page(hash);
    if (!page) return make_error(page.error().message + " (named by checkpoint " + key.to_string() + ")");
  }
  return {};
}

Result<std::vector<uint8_t>> Store::read_page(const PageHash& hash) {
  Impl& I = *impl_;
  const std::string what = "page " + hash.to_string();
  return guarded<std::vector<uint8_t>>(I.err(what).message, [&]() -> Result<std::vector<uint8_t>> {
    for (const auto* held : {&I.staged_pages, &I.journal_pages})
      if (auto st = held->find(hash); st != held->end()) {
        auto bytes = I.codec.decode_page(st->second.data(), st->second.size(), hash);
        if (!bytes) return I.corrupt(what + " is corrupt", bytes.error());
        return bytes;
      }
    auto txn = lmdb::Txn::begin(I.env.get(), true);
    if (!txn) return I.err(what, txn.error());
    auto k = codec::encode_hash(hash);
    MDB_val v;
    bool found = false;
    if (auto r = txn->get(I.pages, hash_val(k), &v, &found, "page"); !r) return I.err(what, r.error());
    if (!found) return I.corrupt(what + " is not in the store");
    if (!I.in_file(v)) return I.past_end(what, v);
    auto bytes = I.codec.decode_page(bytes_of(v), v.mv_size, hash);
    if (!bytes) return I.corrupt(what + " is corrupt", bytes.error());
    return bytes;
  });
}

Result<std::vector<TimeKey>> Store::list() {
  Impl& I = *impl_;
  return guarded<std::vector<TimeKey>>(I.err("list").message, [&]() -> Result<std::vector<TimeKey>> {
    auto txn = lmdb::Txn::begin(I.env.get(), true);
    if (!txn) return I.err("list", txn.error());
    auto cur = lmdb::Cursor::open(*txn, I.checkpoints);
    if (!cur) return I.err("list", cur.error());
    std::vector<TimeKey> keys;
    MDB_val k, v;
    for (MDB_cursor_op op = MDB_FIRST;; op = MDB_NEXT) {
      auto more = cur->get(&k, &v, op);
      if (!more) return I.err("list", more.error());
      if (!*more) break;
      auto key = codec::decode_key(bytes_of(k), k.mv_size);
      if (!key)
        return I.corrupt("the checkpoints database holds a key of " + std::to_string(k.mv_size) + " bytes, not " +
                         std::to_string(codec::kKeyBytes) + " (the store is corrupt)");
      keys.push_back(*key);
    }
    if (!I.staged.empty()) {
      for (const auto& [k2, value] : I.staged) keys.push_back(*codec::decode_key(k2.data(), k2.size()));
      std::sort(keys.begin(), keys.end());
    }
    return keys;
  });
}

Result<std::optional<TimeKey>> Store::at_or_before(const TimeKey& t) {
  Impl& I = *impl_;
  const std::string what = "looking up the checkpoint at or before " + t.to_string();
  using Out = std::optional<TimeKey>;
  auto stored = guarded<Out>(I.err(what).message, [&]() -> Result<Out> {
    auto txn = lmdb::Txn::begin(I.env.get(), true);
    if (!txn) return I.err(what, txn.error());
    auto cur = lmdb::Cursor::open(*txn, I.checkpoints);
    if (!cur) return I.err(what, cur.error());
    auto tk = codec::encode_key(t);
    MDB_val k = key_val(tk), v;
    // The first key >= t; if it is t, done; otherwise the one before it (or the last, if none is >= t).
    auto at = cur->get(&k, &v, MDB_SET_RANGE);
    if (!at) return I.err(what, at.error());
    if (*at) {
      auto key = codec::decode_key(bytes_of(k), k.mv_size);
      if (!key) return I.corrupt(what + ": the checkpoints database holds a malformed key (the store is corrupt)");
      if (*key == t) return Out(*key);
      at = cur->get(&k, &v, MDB_PREV);
    } else {
      at = cur->get(&k, &v, MDB_LAST);
    }
    if (!at) return I.err(what, at.error());
    if (!*at) return Out();
    auto key = codec::decode_key(bytes_of(k), k.mv_size);
    if (!key) return I.corrupt(what + ": the checkpoints database holds a malformed key (the store is corrupt)");
    return Out(*key);
  });
  if (!stored || I.staged.empty()) return stored;
  auto it = I.staged.upper_bound(codec::encode_key(t));
  if (it == I.staged.begin()) return stored;
  --it;
  const TimeKey key = *codec::decode_key(it->first.data(), it->first.size());
  if (!*stored || **stored < key) return Out(key);
  return stored;
}

Result<bool> Store::has(const TimeKey& key) {
  Impl& I = *impl_;
  const std::string what = "looking up checkpoint " + key.to_string();
  return guarded<bool>(I.err(what).message, [&]() -> Result<bool> {
    auto k = codec::encode_key(key);
    if (I.staged.count(k)) return true;
    auto txn = lmdb::Txn::begin(I.env.get(), true);
    if (!txn) return I.err(what, txn.error());
    MDB_val v;
    bool found = false;
    if (auto r = txn->get(I.checkpoints, key_val(k), &v, &found, "checkpoint"); !r) return I.err(what, r.error());
    return found;
  });
}

Result<void> Store::set_writer_open(bool open) {
  Impl& I = *impl_;
  auto attempt = [&]() -> Result<void> {
    if (I.read_only) return I.err("the store is open read-only");
    auto txn = I.begin_write();
    if (!txn) return I.err("writer flag", txn.error());
    MDB_val k = lmdb::val(kOpenKey, sizeof kOpenKey - 1);
    if (open) {
      const uint8_t one = 1;
      if (auto r = txn->put(I.meta, k, lmdb::val(&one, 1), 0, nullptr, "writer flag"); !r) return I.err("", r.error());
    } else {
      int rc = mdb_del(txn->get(), I.meta, &k, nullptr);
      if (rc != 0 && rc != MDB_NOTFOUND) return I.err("", lmdb::error(rc, "mdb_del writer flag"));
    }
    if (auto r = I.commit(*txn); !r) return I.err("writer flag", r.error());
    return {};
  };
  return guarded<void>(I.err("writer flag").message, [&] { return I.durable_write(attempt); });
}

Result<bool> Store::writer_left_open() {
  Impl& I = *impl_;
  return guarded<bool>(I.err("writer flag").message, [&]() -> Result<bool> {
    auto txn = lmdb::Txn::begin(I.env.get(), true);
    if (!txn) return I.err("writer flag", txn.error());
    MDB_val v;
    bool found = false;
    if (auto r = txn->get(I.meta, lmdb::val(kOpenKey, sizeof kOpenKey - 1), &v, &found, "writer flag"); !r)
      return I.err("", r.error());
    return found;
  });
}

Result<void> Store::set_mark(const TimeKey& key, const StopRecord& mark) {
  Impl& I = *impl_;
  const std::string what = "cannot mark " + key.to_string();
  auto attempt = [&]() -> Result<void> {
    if (I.read_only) return I.err(what + ": the store is open read-only");
    if (uint8_t(mark.kind) >= kStopKindCount) return I.err(what + ": unknown stop kind");
    auto txn = I.begin_write();
    if (!txn) return I.err(what, txn.error());
    if (key.launch == 0) return I.err(what + ": launches are numbered from 1");
    auto k = codec::encode_key(key);
    auto numbered = I.numbered(*txn, k, mark);
    if (!numbered) return I.err(what, numbered.error());
    auto mv = I.codec.encode_mark(*numbered);
    if (auto r = txn->put(I.marks, key_val(k), lmdb::val(mv.data(), mv.size()), 0, nullptr, "mark"); !r)
      return I.err(what, r.error());
    if (auto r = I.commit(*txn); !r) return I.err(what, r.error());
    return {};
  };
  return guarded<void>(I.err(what).message, [&] { return I.durable_write(attempt); });
}

namespace {
std::array<uint8_t, 4> launch_key(uint32_t launch) {
  return {uint8_t(launch >> 24), uint8_t(launch >> 16), uint8_t(launch >> 8), uint8_t(launch)};
}
}  // namespace

Result<void> Store::put_history(const HistoryRecord& rec) {
  return put_history(rec, rec.writes.size(), [&](size_t first, std::span<HistoryWrite> out) {
    std::copy_n(rec.writes.begin() + ptrdiff_t(first), out.size(), out.begin());
  });
}

Result<std::optional<HistoryRecord>> Store::history(uint32_t launch) {
  std::vector<HistoryWrite> all;
  auto h = history(launch, [&](std::span<const HistoryWrite> part) -> Result<void> {
    all.insert(all.end(), part.begin(), part.end());
    return {};
  });
  if (h && *h) (*h)->writes = std::move(all);
  return h;
}

Result<void> Store::put_history(const HistoryRecord& rec, size_t count, const HistoryWriteSource& source) {
  Impl& I = *impl_;
  const std::string what = "cannot store the history of launch " + std::to_string(rec.launch);
  // A value is read back only up to kMaxRecordBytes decoded: a larger one is refused here, not
  // written to be refused at every later read. (About 46 bytes a write before compression.)
  if (count > kMaxHistoryWrites)
    return I.err(what + ": " + std::to_string(count) + " writes are more than a stored history holds (" +
                 std::to_string(kMaxHistoryWrites) + ")");
  auto attempt = [&]() -> Result<void> {
    if (I.read_only) return I.err(what + ": the store is open read-only");
    auto txn = I.begin_write();
    if (!txn) return I.err(what, txn.error());
    MDB_dbi dbi = I.history;
    if (!dbi)
      if (int rc = mdb_dbi_open(txn->get(), kHistoryDb, MDB_CREATE, &dbi))
        return I.err(what, lmdb::error(rc, "mdb_dbi_open history"));
    auto k = launch_key(rec.launch);
    auto v = I.codec.encode_history(rec, count, source);
    if (auto r = txn->put(dbi, lmdb::val(k.data(), k.size()), lmdb::val(v.data(), v.size()), 0, nullptr, "history"); !r)
      return I.err(what, r.error());
    if (auto r = I.commit(*txn); !r) return I.err(what, r.error());
    I.history = dbi;  // a handle opened in a transaction lives on once it committed
    return {};
  };
  return guarded<void>(I.err(what).message, [&] { return I.durable_write(attempt); });
}

Result<std::optional<HistoryRecord>> Store::history(uint32_t launch, const HistoryWriteSink& sink) {
  Impl& I = *impl_;
  using Out = std::optional<HistoryRecord>;
  const std::string what = "the history of launch " + std::to_string(launch);
  return guarded<Out>(I.err(what).message, [&]() -> Result<Out> {
    if (!I.history) {
      // Another process may have created the database since this store was opened.
      auto t = lmdb::Txn::begin(I.env.get(), true);
      if (!t) return I.err(what, t.error());
      MDB_dbi dbi = 0;
      int rc = mdb_dbi_open(t->get(), kHistoryDb, 0, &dbi);
      if (rc == MDB_NOTFOUND) return Out();
      if (rc) return I.err(what, lmdb::error(rc, "mdb_dbi_open history"));
      if (auto r = t->commit(); !r) return I.err(what, r.error());  // the handle outlives the transaction
      I.history = dbi;
    }
    auto txn = lmdb::Txn::begin(I.env.get(), true);
    if (!txn) return I.err(what, txn.error());
    auto k = launch_key(launch);
    MDB_val v;
    bool found = false;
    if (auto r = txn->get(I.history, lmdb::val(k.data(), k.size()), &v, &found, "history"); !r)
      return I.err(what, r.error());
    if (!found) return Out();
    if (!I.in_file(v)) return I.past_end(what, v);
    auto h = I.codec.decode_history(bytes_of(v), v.mv_size, sink);
    // Derivable data: damage here is the caller's to gather again, not the recording's.
    if (!h) return I.err(what + " is corrupt: " + h.error().message, ErrorCode::StoreCorrupt);
    if (h->launch != launch)
      return I.err(what + " is corrupt: it is stored under launch " + std::to_string(launch) + " but names launch " +
                       std::to_string(h->launch),
                   ErrorCode::StoreCorrupt);
    return Out(std::move(*h));
  });
}

uint64_t Store::history_bytes(uint32_t launch) {
  Impl& I = *impl_;
  if (!I.history) return 0;
  auto txn = lmdb::Txn::begin(I.env.get(), true);
  if (!txn) return 0;
  auto k = launch_key(launch);
  MDB_val v;
  bool found = false;
  if (!txn->get(I.history, lmdb::val(k.data(), k.size()), &v, &found, "history") || !found) return 0;
  return v.mv_size;
}

Result<std::vector<std::pair<TimeKey, StopRecord>>> Store::marks() {
  Impl& I = *impl_;
  using Out = std::vector<std::pair<TimeKey, StopRecord>>;
  return guarded<Out>(I.err("marks").message, [&]() -> Result<Out> {
    auto txn = lmdb::Txn::begin(I.env.get(), true);
    if (!txn) return I.err("marks", txn.error());
    auto cur = lmdb::Cursor::open(*txn, I.marks);
    if (!cur) return I.err("marks", cur.error());
    Out out;
    MDB_val k, v;
    for (MDB_cursor_op op = MDB_FIRST;; op = MDB_NEXT) {
      auto more = cur->get(&k, &v, op);
      if (!more) return I.err("marks", more.error());
      if (!*more) break;
      auto key = codec::decode_key(bytes_of(k), k.mv_size);
      if (!key) return I.corrupt("the marks database holds a malformed key (the store is corrupt)");
      if (!I.in_file(v)) return I.past_end("mark " + key->to_string(), v);
      auto m = I.codec.decode_mark(bytes_of(v), v.mv_size);
      if (!m) return I.corrupt("mark " + key->to_string() + " is corrupt", m.error());
      out.emplace_back(*key, std::move(*m));
    }
    return out;
  });
}

uint64_t Store::op_count() const { return impl_->op_count + impl_->journal_ops.size(); }

Result<void> Store::Impl::append_journal(const std::vector<HostOpRecord>& ops,
                                         const std::map<PageHash, const PageData*>& given, const std::string& what) {
  JournalEntry e;
  e.first = op_count + journal_ops.size();
  std::vector<PageHash> adopted;      // data of given-up checkpoints these ops write
  std::unique_ptr<lmdb::Txn> reader;  // opened for the first datum to look up in the store
  std::set<PageHash> brought;
  for (const HostOpRecord& op : ops) {
    if (uint8_t(op.kind) >= kHostOpKindCount) return err(what + ": unknown kind");
    e.ops.push_back(codec.encode_op(op));
    if (!op.data.size || journal_pages.count(op.data.hash) || brought.count(op.data.hash)) continue;
    // Every datum a journaled operation names is committed or in the journal: a kill loses staged pages.
    std::vector<uint8_t> pv;
    auto g = given.find(op.data.hash);
    if (g != given.end() && g->second->bytes.size() == op.data.size) {
      pv = codec.encode_page(g->second->bytes.data(), g->second->bytes.size(), fast_datum(op.kind));
    } else if (auto st = staged_pages.find(op.data.hash); st != staged_pages.end()) {
      pv = st->second;
    } else if (auto o = orphans.find(op.data.hash); o != orphans.end()) {
      pv = o->second;
      adopted.push_back(op.data.hash);
    } else {
      if (!reader) {
        auto t = lmdb::Txn::begin(env.get(), true);
        if (!t) return err(what, t.error());
        reader = std::make_unique<lmdb::Txn>(std::move(*t));
      }
      auto hk = codec::encode_hash(op.data.hash);
      MDB_val v;
      bool found = false;
      if (auto r = reader->get(pages, hash_val(hk), &v, &found, "page"); !r) return err(what, r.error());
      if (!found)
        return err(what + ": " + host_op_name(op.kind) + " names data " + op.data.hash.to_string() +
                   ", which is neither given nor stored");
      continue;
    }
    brought.insert(op.data.hash);
    e.pages.emplace_back(op.data.hash, std::move(pv));
  }
  reader.reset();
  const uint64_t bytes = OpsJournal::entry_bytes(e);
  if (bytes > OpsJournal::kMaxBytes / 2) return err(what + ": too large for the journal");
  if (journal && !journal->fits(bytes)) {
    // Full: what it holds is committed (durably, as every commit), and it starts again.
    if (auto r = commit_staged(); !r) return r;
  }
  if (!journal) {
    // A journal a killed writer left that this open could not take (another process had the store
    // open) is not written over: these operations are committed at once instead.
    auto left = OpsJournal::read(journal_path());
    if (!left || (!left->entries.empty() && left->entries.back().first + left->entries.back().ops.size() > op_count))
      return err(what + ": " + journal_path() + " holds a killed writer's operations");
    auto j = OpsJournal::create(journal_path(), op_count + journal_ops.size());
    if (!j) return err(what, j.error());
    journal.emplace(std::move(*j));
    if (group_sync) group_sync->set_journal_fd(journal->fd());
  }
  assert(journal->next() == e.first);
  if (auto r = journal->append(e); !r) return err(what, r.error());
  for (auto& op : e.ops) journal_ops.push_back(std::move(op));
  for (auto& [h, v] : e.pages) {
    stats.stored_page_bytes += v.size();
    ++stats.pages;
    journal_pages.emplace(h, std::move(v));
  }
  for (const auto& h : adopted) orphans.erase(h);
  if (group_sync) group_sync->committed();  // the journal's file is synced with the next safe point
  return {};
}

Result<void> Store::append_ops(const std::vector<HostOpRecord>& ops, const std::vector<PageData>& blobs, bool journal) {
  Impl& I = *impl_;
  const std::string what = "cannot record " + std::to_string(ops.size()) + " host operations";
  if (ops.empty()) return {};
  if (I.foreign_journal)
    return I.err(what + ": " + I.journal_path() + " holds " + std::to_string(I.journal_ops.size()) +
                 " operations of a killed writer, which cannot be committed while another process has the store "
                 "open");
  std::map<PageHash, const PageData*> given;
  auto check_given = [&]() -> Result<void> {
    for (const PageData& p : blobs) {
      if (p.bytes.empty() || p.bytes.size() > kMaxPageBytes)
        return I.err(what + ": data " + p.hash.to_string() + " is " + std::to_string(p.bytes.size()) + " bytes");
      if (hash_page(p.bytes) != p.hash)
        return I.err(what + ": data " + p.hash.to_string() + " does not hash to its key");
      given.emplace(p.hash, &p);
    }
    return {};
  };
  if (journal && I.journal_allowed && !I.read_only) {
    auto j = guarded<void>(I.err(what).message, [&]() -> Result<void> {
      if (auto r = check_given(); !r) return r;
      return I.append_journal(ops, given, what);
    });
    if (j) return {};
    // Not journaled (no room for the journal, an operation that does not belong there): written
    // into the store at once, which says what is wrong when it cannot be either.
    given.clear();
  }
  auto attempt = [&]() -> Result<void> {
    if (I.read_only) return I.err(what + ": the store is open read-only");
    given.clear();
    if (auto r = check_given(); !r) return r;
    auto txn = I.begin_write();
    if (!txn) return I.err(what, txn.error());
    // After the journal's operations, which the transaction holds (write_staged).
    uint64_t index = I.op_count + I.journal_ops.size(), written = 0, stored_bytes = 0;
    std::vector<PageHash> adopted;  // data of given-up checkpoints these ops write
    for (const HostOpRecord& op : ops) {
      if (uint8_t(op.kind) >= kHostOpKindCount) return I.err(what + ": unknown kind");
      if (op.data.size) {
        auto hk = codec::encode_hash(op.data.hash);
        MDB_val v;
        bool found = false;
        if (auto r = txn->get(I.pages, hash_val(hk), &v, &found, "page"); !r) return I.err(what, r.error());
        if (!found) {
          auto g = given.find(op.data.hash);
          auto o = I.orphans.find(op.data.hash);
          std::vector<uint8_t> pv;
          if (g != given.end() && g->second->bytes.size() == op.data.size)
            pv = I.codec.encode_page(g->second->bytes.data(), g->second->bytes.size(), fast_datum(op.kind));
          else if (o != I.orphans.end())
            pv = o->second, adopted.push_back(op.data.hash);
          else
            return I.err(what + ": " + host_op_name(op.kind) + " names data " + op.data.hash.to_string() +
                         ", which is neither given nor stored");
          if (auto r = txn->put(I.pages, hash_val(hk), lmdb::val(pv.data(), pv.size()), 0, nullptr, "page"); !r)
            return I.err(what, r.error());
          ++written;
          stored_bytes += pv.size();
        }
      }
      const auto k = op_key(index);
      auto ov = I.codec.encode_op(op);
      if (auto r = txn->put(I.ops, lmdb::val(k.data(), k.size()), lmdb::val(ov.data(), ov.size()), MDB_NOOVERWRITE,
                            nullptr, "host operation");
          !r)
        return I.err(what, r.error());
      ++index;
    }
    if (auto r = I.commit(*txn); !r) return I.err(what, r.error());
    I.op_count = index;  // the journal's operations and these
    if (I.journal) I.journal->reset(I.op_count);
    for (const auto& h : adopted) I.orphans.erase(h);
    I.stats.pages += written;
    I.stats.stored_page_bytes += stored_bytes;
    return {};
  };
  return guarded<void>(I.err(what).message, [&] { return I.durable_write(attempt); });
}

Result<std::vector<HostOpRecord>> Store::ops() {
  Impl& I = *impl_;
  using Out = std::vector<HostOpRecord>;
  return guarded<Out>(I.err("host operations").message, [&]() -> Result<Out> {
    auto txn = lmdb::Txn::begin(I.env.get(), true);
    if (!txn) return I.err("host operations", txn.error());
    auto cur = lmdb::Cursor::open(*txn, I.ops);
    if (!cur) return I.err("host operations", cur.error());
    // An operation's data is in the store or in the journal.
    auto data_present = [&](const HostOpRecord& rec, const std::string& what) -> Result<void> {
      if (!rec.data.size || I.journal_pages.count(rec.data.hash)) return {};
      auto hk = codec::encode_hash(rec.data.hash);
      MDB_val pv;
      bool found = false;
      if (auto r = txn->get(I.pages, hash_val(hk), &pv, &found, "page"); !r) return I.err(what, r.error());
      if (!found) return I.err(what + " names data " + rec.data.hash.to_string() + ", which is not in the store");
      return {};
    };
    Out out;
    MDB_val k, v;
    for (MDB_cursor_op op = MDB_FIRST;; op = MDB_NEXT) {
      auto more = cur->get(&k, &v, op);
      if (!more) return I.err("host operations", more.error());
      if (!*more) break;
      uint64_t index = 0;
      if (k.mv_size != codec::kOpKeyBytes)
        return I.corrupt("the ops database holds a malformed key (the store is corrupt)");
      for (size_t i = 0; i < k.mv_size; ++i) index = index << 8 | bytes_of(k)[i];
      if (index != out.size())
        return I.corrupt("host operation " + std::to_string(out.size()) + " is missing (the store is corrupt)");
      const std::string what = "host operation " + std::to_string(index);
      if (!I.in_file(v)) return I.past_end(what, v);
      auto rec = I.codec.decode_op(bytes_of(v), v.mv_size);
      if (!rec) return I.corrupt(what + " is corrupt", rec.error());
      if (auto r = data_present(*rec, what); !r) return r.error();
      out.push_back(std::move(*rec));
    }
    // Then the journal's, after the committed ones (a reader's journal, read when it opened the store,
    // may be committed since by its writer: those are in the store already).
    for (size_t i = 0; i < I.journal_ops.size(); ++i) {
      if (I.op_count + i < out.size()) continue;
      if (I.op_count + i > out.size()) break;
      const auto& v = I.journal_ops[i];
      const std::string what = "host operation " + std::to_string(out.size()) + " (in the operations journal)";
      auto rec = I.codec.decode_op(v.data(), v.size());
      if (!rec) return I.corrupt(what + " is corrupt", rec.error());
      if (auto r = data_present(*rec, what); !r) return r.error();
      out.push_back(std::move(*rec));
    }
    return out;
  });
}

Result<void> Store::Impl::recover_journal() {
  auto c = OpsJournal::read(journal_path());
  if (!c) return err("", c.error());
  uint64_t next = op_count;
  size_t taken = 0;
  for (JournalEntry& e : c->entries) {
    const uint64_t end = e.first + e.ops.size();
    if (end <= next) continue;  // committed before the kill (between a commit and the journal's reset)
    // A journal that starts past the committed operations: the store was rolled back to an older
    // safe point (a machine failure); what the journal holds does not continue it.
    if (e.first > next) break;
    // An entry whose operations do not all decode ends the journal, as a damaged one does.
    bool whole = true;
    for (uint64_t i = next - e.first; i < e.ops.size() && whole; ++i)
      whole = bool(codec.decode_op(e.ops[i].data(), e.ops[i].size()));
    if (!whole) break;
    for (uint64_t i = next - e.first; i < e.ops.size(); ++i) journal_ops.push_back(std::move(e.ops[i]));
    taken += end - next;
    next = end;
    for (auto& [h, v] : e.pages) journal_pages.emplace(h, std::move(v));
  }
  // Another process has the store open: what the journal holds is kept in memory for this Store's
  // reads, and its file is left as it is (it may be that process's own).
  const bool other = foreign_journal;
  foreign_journal = other && taken != 0;
  if (read_only || other) return {};
  if (taken) {
    auto txn = begin_write();
    if (!txn) return err("committing the operations journal", txn.error());
    if (auto r = commit(*txn); !r) return err("committing the operations journal", r.error());
  }
  std::error_code ec;
  fs::remove(journal_path(), ec);
  return {};
}

}  // namespace vx::checkpoint
