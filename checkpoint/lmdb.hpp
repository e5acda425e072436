// Thin RAII wrappers over the LMDB C API (internal to checkpoint/).
//
// Every failing call becomes an Error naming the operation and LMDB's own text.
// Transactions abort unless committed; cursors close before their transaction.
#pragma once

#include <lmdb.h>

#include <cerrno>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "base/result.hpp"

namespace vx::checkpoint::lmdb {

// LMDB's return code (or an errno) decides the error's code: no room (a full disk, a quota, the
// file-size limit, LMDB's map), an I/O error, damage (a page of the wrong type, a page that is not
// there); anything else (a permission, a bad argument) is the caller's to judge.
inline ErrorCode code_of(int rc) {
  if (rc == ENOSPC || rc == EDQUOT || rc == EFBIG || rc == MDB_MAP_FULL) return ErrorCode::StoreFull;
  if (rc == EIO) return ErrorCode::StoreIo;
  if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND) return ErrorCode::StoreCorrupt;
  return ErrorCode::Unspecified;
}

inline Error error(int rc, std::string_view op) {
  std::string m = std::string(op) + ": " + mdb_strerror(rc);
  // Running out of room shows as several errors; say which it is (a full tmpfs gives EIO when
  // LMDB writes its pages back).
  if (rc == ENOSPC || rc == EDQUOT)
    m += " (the disk is full)";
  else if (rc == EFBIG)
    m += " (the file-size limit is reached)";
  else if (rc == EIO)
    m += " (no room left on the filesystem, as a full tmpfs reports it, or a failing disk)";
  return make_error(code_of(rc), m);
}

inline MDB_val val(const void* data, size_t size) { return MDB_val{size, const_cast<void*>(data)}; }

class Env {
 public:
  Env() = default;
  explicit Env(MDB_env* env) : env_(env) {}
  Env(Env&& o) noexcept : env_(std::exchange(o.env_, nullptr)) {}
  Env& operator=(Env&& o) noexcept {
    if (this != &o) {
      reset();
      env_ = std::exchange(o.env_, nullptr);
    }
    return *this;
  }
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;
  ~Env() { reset(); }
  MDB_env* get() const { return env_; }

 private:
  void reset() {
    if (env_) mdb_env_close(env_);
    env_ = nullptr;
  }
  MDB_env* env_ = nullptr;
};

class Txn {
 public:
  static Result<Txn> begin(MDB_env* env, bool read_only) {
    MDB_txn* t = nullptr;
    int rc = mdb_txn_begin(env, nullptr, read_only ? MDB_RDONLY : 0, &t);
    if (rc) return error(rc, read_only ? "mdb_txn_begin (read)" : "mdb_txn_begin (write)");
    return Txn(t);
  }
  Txn(Txn&& o) noexcept : txn_(std::exchange(o.txn_, nullptr)) {}
  Txn& operator=(Txn&&) = delete;
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  ~Txn() {
    if (txn_) mdb_txn_abort(txn_);
  }
  MDB_txn* get() const { return txn_; }
  Result<void> commit() {
    int rc = mdb_txn_commit(std::exchange(txn_, nullptr));  // frees the transaction even on failure
    if (rc) return error(rc, "mdb_txn_commit");
    return {};
  }

  // MDB_NOTFOUND is not an error here: *found says whether the key exists.
  Result<void> get(MDB_dbi dbi, MDB_val key, MDB_val* out, bool* found, std::string_view what) {
    int rc = mdb_get(txn_, dbi, &key, out);
    *found = rc == 0;
    if (rc && rc != MDB_NOTFOUND) return error(rc, std::string("mdb_get ") + std::string(what));
    return {};
  }
  // *existed is set when flags hold MDB_NOOVERWRITE and the key was already there.
  Result<void> put(MDB_dbi dbi, MDB_val key, MDB_val value, unsigned flags, bool* existed, std::string_view what) {
    int rc = mdb_put(txn_, dbi, &key, &value, flags);
    if (existed) *existed = rc == MDB_KEYEXIST;
    if (rc && !(existed && rc == MDB_KEYEXIST)) return error(rc, std::string("mdb_put ") + std::string(what));
    return {};
  }

 private:
  explicit Txn(MDB_txn* t) : txn_(t) {}
  MDB_txn* txn_ = nullptr;
};

class Cursor {
 public:
  static Result<Cursor> open(const Txn& txn, MDB_dbi dbi) {
    MDB_cursor* c = nullptr;
    int rc = mdb_cursor_open(txn.get(), dbi, &c);
    if (rc) return error(rc, "mdb_cursor_open");
    return Cursor(c);
  }
  Cursor(Cursor&& o) noexcept : cur_(std::exchange(o.cur_, nullptr)) {}
  Cursor& operator=(Cursor&&) = delete;
  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;
  ~Cursor() {
    if (cur_) mdb_cursor_close(cur_);
  }
  // False at MDB_NOTFOUND (no such position), an Error on anything else.
  Result<bool> get(MDB_val* key, MDB_val* value, MDB_cursor_op op) {
    int rc = mdb_cursor_get(cur_, key, value, op);
    if (rc == MDB_NOTFOUND) return false;
    if (rc) return error(rc, "mdb_cursor_get");
    return true;
  }

 private:
  explicit Cursor(MDB_cursor* c) : cur_(c) {}
  MDB_cursor* cur_ = nullptr;
};

}  // namespace vx::checkpoint::lmdb
