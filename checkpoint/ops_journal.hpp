// The host's operations between commits (docs/store.md, "The operations journal"): a file beside
// data.mdb, `ops-journal`, mapped shared, into which Store::append_ops(..., journal = true) copies
// the encoded operations and the encoded data they bring. A write there is a copy into memory; it
// survives a killed process (the pages are in the system's cache) and costs no system call. The
// next commit of the store writes them into LMDB and resets the journal; opening a store after a
// kill takes the operations the journal holds past the committed ones.
//
// The file: u32 magic "VXOJ" at 0, u32 version 1 at 4, u64 `base` at 8 (the index of the first
// operation its entries hold: the store's committed operations when it was last reset); entries
// from offset 64, each: u32 magic "VXOE", u32 payload bytes, u64 index of its first operation, u32
// operations, u32 pages, the payload (each operation: u32 bytes, its encoded value; each page: 16
// bytes of hash, u32 bytes, its encoded value), u64 XXH3-64 of everything from the index on. The
// first entry holds `base`, each later one continues where the one before ended; the first entry
// that does not (a torn write, an entry from before a reset, damage) ends the journal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "checkpoint/records.hpp"

namespace vx::checkpoint {

struct JournalEntry {
  uint64_t first = 0;                                            // index of its first operation
  std::vector<std::vector<uint8_t>> ops;                         // encoded (Codec::encode_op)
  std::vector<std::pair<PageHash, std::vector<uint8_t>>> pages;  // encoded (Codec::encode_page)
};

class OpsJournal {
 public:
  static constexpr uint32_t kHeaderBytes = 64;
  // Past this size a journal is committed into the store before it takes more.
  static constexpr uint64_t kMaxBytes = 64ull << 20;

  // What the file at `path` holds: its base and its entries up to the first that does not continue
  // the ones before. A missing file, or one whose header was never written, holds nothing (base 0);
  // one of another version is an error.
  struct Contents {
    uint64_t base = 0;
    std::vector<JournalEntry> entries;
  };
  static Result<Contents> read(const std::string& path);

  // A new, empty journal at path (replacing what is there) whose first entry will hold `base`; its
  // room is reserved on disk (posix_fallocate), so that a write into the map never meets a full disk.
  static Result<OpsJournal> create(const std::string& path, uint64_t base);
  OpsJournal(OpsJournal&& o) noexcept;
  OpsJournal& operator=(OpsJournal&& o) noexcept;
  OpsJournal(const OpsJournal&) = delete;
  OpsJournal& operator=(const OpsJournal&) = delete;
  ~OpsJournal();

  // The bytes an entry takes in the file.
  static uint64_t entry_bytes(const JournalEntry& e);
  // Whether an entry of `bytes` fits before kMaxBytes.
  bool fits(uint64_t bytes) const { return used_ + bytes <= kMaxBytes; }
  // Appends e (e.first must continue the journal), growing the file when it must (an error: the
  // disk is full; nothing was appended).
  Result<void> append(const JournalEntry& e);
  // Empties the journal: its next entry holds `base` (the operations before it are committed).
  void reset(uint64_t base);
  uint64_t next() const { return next_; }  // the index the next entry must start at
  int fd() const { return fd_; }

 private:
  OpsJournal(std::string path, int fd, uint8_t* map, uint64_t capacity, uint64_t base);
  Result<void> grow(uint64_t need);
  void close();
  std::string path_;
  int fd_ = -1;
  uint8_t* map_ = nullptr;
  uint64_t capacity_ = 0;         // bytes mapped (and reserved on disk)
  uint64_t used_ = kHeaderBytes;  // bytes of header and entries
  uint64_t next_ = 0;
};

}  // namespace vx::checkpoint
