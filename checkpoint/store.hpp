// The checkpoint store: an LMDB environment in one directory (docs/store.md).
//
// Checkpoints are Cap'n Proto records keyed by time; memory pages are stored once, zstd-compressed,
// under the XXH3-128 hash of their bytes and shared by every checkpoint that names them. Pages are
// immutable and never deleted in this version. Every read is validated: a damaged record or page is
// an Error naming its key or hash, never a crash and never a silently wrong value.
//
// One Store per directory per process (an LMDB rule); a Store is used from one thread at a time.
// Other processes may read the same store while one writes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "checkpoint/records.hpp"

namespace vx::checkpoint {

enum class OpenMode {
  Create,     // make the directory and the store when missing; an existing store must match the header
  ReadWrite,  // the store must exist
  ReadOnly,   // the store must exist; put() fails
};

struct OpenOptions {
  // fsync at every commit (LMDB's default): a committed checkpoint survives a power loss, not just a
  // killed process. Off only for tests and scratch stores.
  bool sync = true;
  // With sync, group commit (docs/store.md, "Durability"): N > 0 commits without a sync of their own,
  // and a thread syncs the file N ms after the first commit not synced yet, and closing the store
  // syncs it. A killed process loses nothing committed (the writes are in the system's cache); a
  // machine failure loses at most the commits of the last N ms (and the time a sync takes). 0: a
  // sync at every commit.
  uint32_t sync_interval_ms = 0;
  int zstd_level = 3;          // of pages
  int record_zstd_level = -1;  // of checkpoint records (zstd's fast levels are negative)
  // Virtual address space reserved for the file; it grows on disk only as pages are written.
  uint64_t map_size = sizeof(void*) >= 8 ? (64ull << 30) : (1ull << 30);
};

struct StoreStats {
  uint64_t records = 0;  // checkpoints in the store
  uint64_t pages = 0;    // distinct pages in the store
  // Since this Store was opened (committed and staged puts):
  uint64_t puts = 0;
  uint64_t pages_given = 0;         // pages handed to put
  uint64_t pages_written = 0;       // of those, pages new to the store
  uint64_t pages_shared = 0;        // of those, pages already stored (or given twice): not written again
  uint64_t raw_page_bytes = 0;      // bytes of every page handed to put
  uint64_t new_page_raw_bytes = 0;  // raw bytes of the pages written
  uint64_t stored_page_bytes = 0;   // bytes of the page values written (compressed, with envelope)
  uint64_t record_bytes = 0;        // bytes of the checkpoint values written (compressed, with envelope)
};

class Store {
 public:
  // Opens the store in dir (the caller picks it, e.g. ".vxreplay/"). header is written when Create makes
  // a new store; an existing store must have a supported format version, the same device
  // configuration and the same kernel hash as header.
  static Result<Store> open(const std::string& dir, const StoreHeader& header, OpenMode mode,
                            const OpenOptions& options = {});
  // Opens an existing store whatever its configuration (only its format version is checked), for
  // readers that learn the configuration from the store. mode is ReadWrite or ReadOnly.
  static Result<Store> open_existing(const std::string& dir, OpenMode mode, const OpenOptions& options = {});

  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  const StoreHeader& header() const;
  const std::string& dir() const;

  // Adds a checkpoint in one write transaction: the pages the store lacks, then the record,
  // committed atomically (all or nothing, even if the process is killed). The record must be valid
  // for the device shape, rec.key must equal key, and no checkpoint may exist at key already. Every
  // page the record names (memory pages and local memories) must be in pages or already stored;
  // every page in pages must be named, with a hash that matches its bytes. Memory pages are
  // kPageSize bytes, local memories the configured size.
  // mark: also list the checkpoint as a stop the user saw (marks()), in the same transaction.
  // durable = false (a checkpoint that can be derived again, such as an automatic one): the checkpoint
  // is staged in memory, visible to every read of this Store at once, and committed with the next
  // durable write (a durable put, set_mark, append_ops, set_writer_open, sync()) or when this Store
  // closes; it costs no fsync of its own, and a killed process or a crash loses it (never what was
  // committed before). A put with a mark is durable. Past 64 MiB staged, a put commits them. When
  // committing them fails (a full disk, the map full), they are given up, counted in staged_lost(),
  // and the durable write that carried them is tried again without them; their pages stay staged
  // for the next write (later checkpoints may name them). A store open read-only stages them the same
  // way but never commits them (they live as long as this Store; past 64 MiB staged, a put fails);
  // a durable put is refused.
  Result<void> put(const TimeKey& key, const CheckpointRecord& rec, const std::vector<PageData>& pages,
                   const StopRecord* mark = nullptr, bool durable = true);
  // Commits the staged checkpoints (nothing to do when there are none); an error when they could
  // not be (they are given up: staged_lost()).
  Result<void> sync();
  // Group commit (OpenOptions::sync_interval_ms): syncs what was committed now, and says whether the
  // syncs since the last flush() succeeded. Nothing to do for a store that syncs every commit.
  Result<void> flush();
  // Opening found the newest commits damaged (a machine failure under group commit) and rolled the
  // store back to the safe point its last sync recorded: what was found. nullopt: it did not.
  std::optional<std::string> rolled_back() const;
  // Staged checkpoints not committed yet.
  uint64_t staged() const;
  // Since this Store was opened: staged checkpoints given up because their commit failed, and why
  // the last of them were (an empty message: none; its code says whether the store was full).
  uint64_t staged_lost() const;
  const Error& staged_error() const;
  // A recording session marks the store while it writes, and clears the mark when it ends cleanly:
  // writer_left_open() says the last writer was killed (its recording ends at its last commit).
  Result<void> set_writer_open(bool open);
  Result<bool> writer_left_open();

  // Whether a checkpoint exists at key (nothing is decoded).
  Result<bool> has(const TimeKey& key);

  // Marks: the points the user stopped at or marked (`info checkpoints`). A mark's checkpoint is
  // stored, or derived by re-execution from the checkpoint before it (docs/store.md, "Stops").
  // set_mark adds or replaces the mark at key (durably, with the staged checkpoints).
  Result<void> set_mark(const TimeKey& key, const StopRecord& mark);
  Result<std::vector<std::pair<TimeKey, StopRecord>>> marks();

  // The host's operations on the device, in order (docs/store.md "Recorded operations"). append_ops
  // adds ops after the stored ones in one transaction; blobs are the data the ops name that the store
  // may lack (content-addressed in the pages database, like memory pages).
  // journal: the ops and their data are copied into the operations journal instead (docs/store.md,
  // "The operations journal"), a file mapped in memory: a killed process loses none of them (the
  // next open of the store for writing commits them) and the copy costs no system call; every read
  // of this Store sees them at once, and the next durable write (or closing the Store) commits them.
  // Under group commit a machine failure loses at most the journal's last interval, as for commits.
  // A store that syncs every commit, or a journal that cannot be written (no room), writes them
  // into the store at once, as journal = false does.
  Result<void> append_ops(const std::vector<HostOpRecord>& ops, const std::vector<PageData>& blobs,
                          bool journal = false);
  // Every op, decoded and checked: indexes without gaps, data present.
  Result<std::vector<HostOpRecord>> ops();
  uint64_t op_count() const;

  // The gathered history of a launch (docs/store.md "History"): derivable data that saves later
  // sessions a re-execution. put_history replaces the launch's entry (the "history" database is
  // created at the first one). history() is nullopt when there is none; a damaged entry is an
  // error (StoreCorrupt) that does not count as the store's damage: the caller gathers it again.
  Result<void> put_history(const HistoryRecord& rec);
  // The same with the writes in chunks (records.hpp): `head`'s own writes are ignored / left empty.
  Result<void> put_history(const HistoryRecord& head, size_t count, const HistoryWriteSource& source);
  Result<std::optional<HistoryRecord>> history(uint32_t launch, const HistoryWriteSink& sink);
  static constexpr uint64_t kMaxHistoryWrites = 16u << 20;  // decoded, well under codec::kMaxRecordBytes
  Result<std::optional<HistoryRecord>> history(uint32_t launch);
  uint64_t history_bytes(uint32_t launch);  // the stored entry's size (0: none)

  // The record at key, decoded and validated: checksum, structure, key, shape, and every page it
  // names is present with the right size. Page contents are verified when read (read_page, verify).
  Result<CheckpointRecord> get(const TimeKey& key);
  // get, then reads and verifies every page the record names.
  Result<void> verify(const TimeKey& key);
  // The latest checkpoint at or before t; nullopt when every checkpoint is after t (or there is none).
  Result<std::optional<TimeKey>> at_or_before(const TimeKey& t);
  // Every checkpoint key, in time order.
  Result<std::vector<TimeKey>> list();
  // A page's bytes, decompressed and checked against its hash.
  Result<std::vector<uint8_t>> read_page(const PageHash& hash);

  StoreStats stats() const;
  // Every value in the store (header, checkpoints, pages, marks, host operations) against its
  // envelope's checksum, without decoding: the first damaged one, named. A reopened recording is
  // checked whole before it is used (vxreplay replay).
  Result<void> check_values();
  // The first damage a read found (a record, a page, a key that is corrupt), naming it: the
  // recording cannot be trusted and a session refuses it (exit 65). nullopt: none found so far.
  std::optional<std::string> damage() const;

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  static Result<Store> open_impl(const std::string& dir, const StoreHeader* header, OpenMode mode,
                                 const OpenOptions& options);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vx::checkpoint
