// A structural check of an LMDB 0.9 data.mdb, read with pread before LMDB maps the file
// (docs/store.md, "Opening checks"). Internal to checkpoint/.
//
// LMDB 0.9 trusts its own pages: a damaged page header or node can make it abort or read outside a
// page. The check walks both meta pages and every page reachable from the newest one (the free-page
// database, the main database and each named database), each read once, and names the first problem.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace vx::checkpoint::lmdb {

struct FileShape {
  uint32_t page_size = 0;
  uint64_t last_page = 0;   // of the newest meta page
  uint64_t pages_read = 0;  // pages the walk read (overflow pages: their header only)
};

// The error names data.mdb, the page number and what is wrong with it; the caller adds the store.
Result<FileShape> check_file(const std::string& path);

// Group commit's safe point (docs/store.md, "Durability"): the meta page of a transaction known to be
// on disk, kept beside data.mdb in `synced-meta`. While the store is open its writer pins that
// transaction with a reader, so no later transaction reuses a page of its tree; after a machine
// failure left the newest tree damaged, roll_back() makes LMDB read the safe one again.
struct SafePoint {
  uint64_t txnid = 0;
  std::vector<uint8_t> meta;  // the meta page's bytes LMDB uses (header, dbs, last page, txnid)
};
// The meta page of transaction txnid as data.mdb (fd) holds it now; nullopt when its slot
// (txnid & 1) holds another transaction already.
Result<std::optional<SafePoint>> read_safe_point(int fd, uint64_t txnid);
std::vector<uint8_t> encode_safe_point(const SafePoint& p);  // "VXSP", txnid, the bytes, XXH3-64
Result<SafePoint> decode_safe_point(const std::vector<uint8_t>& bytes);
// Writes p's meta into its slot and, into the other, the same tree one transaction older, so that
// LMDB opens transaction p.txnid. The caller checks the file again.
Result<void> roll_back(const std::string& path, const SafePoint& p);

}  // namespace vx::checkpoint::lmdb
