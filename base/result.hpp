// The base every layer may use (base/): errors are values at every boundary. Result<T> carries
// either a value or an Error whose message says what was wrong and where, and whose code says what
// kind of failure it is (the decisions taken on it read the code, never the text).
#pragma once

#include <cassert>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace vx {

// What kind of failure an error is, for the decisions taken on it (an exit status, whether a
// failure is fatal, a fallback): decided by code, never by matching the message's text.
// docs/cli.md's exit-status table maps them (cli::exit_status_of).
enum class ErrorCode : uint8_t {
  Unspecified = 0,  // nothing decides on it: reported as it is
  Usage,            // a request or an argument is wrong (exit 64)
  Input,            // an input file, a recording or a program's data is unusable (exit 65)
  Device,           // the device failed or stopped the work (exit 66)
  StoreFull,        // a recording could not be written: no room (disk, quota, LMDB's map, file size) (exit 74)
  StoreIo,          // a recording could not be written: an I/O error, a directory it cannot write (exit 74)
  StoreCorrupt,     // a recording is damaged (exit 65)
  Internal,         // vxreplay's own invariant failed (exit 70)
  NotSupported,     // something vxreplay does not do yet
  Unmapped,         // an address with no device memory behind it
  NoHaltedWarp,     // live: no halted warp to read through
};

const char* error_code_name(ErrorCode c);

struct Error {
  std::string message;
  ErrorCode code = ErrorCode::Unspecified;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error e) : v_(std::move(e)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : err_(std::move(e)), ok_(false) {}
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return err_; }

 private:
  Error err_;
  bool ok_ = true;
};

inline Error make_error(std::string msg) { return Error{std::move(msg)}; }
inline Error make_error(ErrorCode code, std::string msg) { return Error{std::move(msg), code}; }

// The same failure said with more context in front (the code stays).
inline Error with_context(const std::string& context, const Error& e) { return Error{context + e.message, e.code}; }

inline const char* error_code_name(ErrorCode c) {
  switch (c) {
    case ErrorCode::Unspecified: return "unspecified";
    case ErrorCode::Usage: return "usage";
    case ErrorCode::Input: return "input";
    case ErrorCode::Device: return "device";
    case ErrorCode::StoreFull: return "store-full";
    case ErrorCode::StoreIo: return "store-io";
    case ErrorCode::StoreCorrupt: return "store-corrupt";
    case ErrorCode::Internal: return "internal";
    case ErrorCode::NotSupported: return "not-supported";
    case ErrorCode::Unmapped: return "unmapped";
    case ErrorCode::NoHaltedWarp: return "no-halted-warp";
  }
  return "unknown";
}

}  // namespace vx
