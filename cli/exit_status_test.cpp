// Errors with codes (issue 35): every code reaches the exit status docs/cli.md's table gives it, and
// the store's failures carry the code their LMDB return code or errno says.
#include <lmdb.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>

#include "checkpoint/lmdb.hpp"
#include "checkpoint/store.hpp"
#include "cli/run_command.hpp"

using namespace vx;
using namespace vx::cli;

TEST_CASE("every error code reaches its exit status", "[exit]") {
  const int fallback = 42;  // the command's own status for a failure of that step
  CHECK(exit_status_of(make_error(ErrorCode::Usage, "x"), fallback) == 64);
  CHECK(exit_status_of(make_error(ErrorCode::Input, "x"), fallback) == 65);
  CHECK(exit_status_of(make_error(ErrorCode::StoreCorrupt, "x"), fallback) == 65);
  CHECK(exit_status_of(make_error(ErrorCode::Device, "x"), fallback) == 66);
  CHECK(exit_status_of(make_error(ErrorCode::Internal, "x"), fallback) == 70);
  CHECK(exit_status_of(make_error(ErrorCode::StoreFull, "x"), fallback) == 74);
  CHECK(exit_status_of(make_error(ErrorCode::StoreIo, "x"), fallback) == 74);
  for (ErrorCode c : {ErrorCode::Unspecified, ErrorCode::NotSupported, ErrorCode::Unmapped, ErrorCode::NoHaltedWarp}) {
    INFO(error_code_name(c));
    CHECK(exit_status_of(make_error(c, "x"), fallback) == fallback);
  }
  // The message never decides: the same text with another code gives another status.
  CHECK(exit_status_of(make_error("internal error: MDB_MAP_FULL: No space left on device"), fallback) == fallback);
  CHECK(with_context("--db d: ", make_error(ErrorCode::StoreFull, "full")).code == ErrorCode::StoreFull);
}

TEST_CASE("LMDB's return codes and errno values give the store's error codes", "[exit]") {
  using checkpoint::lmdb::code_of;
  CHECK(code_of(ENOSPC) == ErrorCode::StoreFull);
  CHECK(code_of(EDQUOT) == ErrorCode::StoreFull);
  CHECK(code_of(EFBIG) == ErrorCode::StoreFull);
  CHECK(code_of(MDB_MAP_FULL) == ErrorCode::StoreFull);
  CHECK(code_of(EIO) == ErrorCode::StoreIo);
  CHECK(code_of(MDB_CORRUPTED) == ErrorCode::StoreCorrupt);
  CHECK(code_of(MDB_PAGE_NOTFOUND) == ErrorCode::StoreCorrupt);
  CHECK(code_of(EACCES) == ErrorCode::Unspecified);
  const Error e = checkpoint::lmdb::error(MDB_MAP_FULL, "mdb_txn_commit");
  CHECK(e.code == ErrorCode::StoreFull);
  CHECK(exit_status_of(e, 64) == 74);
}

TEST_CASE("a store directory that is not there to open is the caller's to judge, not a write failure", "[exit]") {
  const std::string dir = (std::filesystem::temp_directory_path() / "vxreplay-exit-status-none").string();
  std::filesystem::remove_all(dir);
  auto st = checkpoint::Store::open_existing(dir, checkpoint::OpenMode::ReadOnly);
  REQUIRE_FALSE(st.ok());
  CHECK(exit_status_of(st.error(), 64) == 64);
}
