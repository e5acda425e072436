// A structural check of an LMDB 0.9 data.mdb, read with pread before LMDB maps the file
// (docs/store.md, "Opening checks"). Internal to checkpoint/.
//
// LMDB 0.9 trusts its own pages: a damaged page header or node can make it abort or read outside a
// page. The check walks both meta pages and every page reachable from the newest one (the free-page
// database, the main database and each named database), each read once, and names the first problem.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.hpp"

namespace vx::checkpoint::lmdb {

struct FileShape {
  uint32_t page_size = 0;
  uint64_t last_page = 0;   // of the newest meta page
  uint64_t pages_read = 0;  // pages the walk read (overflow pages: their header only)
};

// The error names data.mdb, the page number and what is wrong with it; the caller adds the store.
Result<FileShape> check_file(const std::string& path);

}  // namespace vx::checkpoint::lmdb
