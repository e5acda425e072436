// The channel between a host program's libvortex and the vxreplay that started it: a stream
// socket inherited by the host, its descriptor number in the environment (kChannelEnv). Each
// vortex.h call is one request, answered by one reply (docs/host.md, "The channel").
//
// Request: u32 op, u32 payload length, payload. Reply: i32 status (0 ok), u32 length, payload
// (on failure the payload is the error message). Integers are little-endian.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace vx::host {

constexpr const char* kChannelEnv = "VXREPLAY_HOST_FD";
constexpr uint32_t kProtocolVersion = 1;
constexpr uint32_t kMaxMessageBytes = 512u << 20;  // bigger than any kernel image or copy we accept in one message

enum class Op : uint32_t {
  Hello = 1,  // u32 version -> u32 version, then the config string (the device's shape)
  Caps,       // u32 id -> u64
  Alloc,      // u64 size, i32 flags -> u32 id, u64 addr
  Reserve,    // u64 addr, u64 size, i32 flags -> u32 id
  Free,       // u32 id
  Access,     // u32 id, u64 offset, u64 size, i32 flags
  Info,       // -> u64 free, u64 used
  CopyTo,     // u32 id, u64 offset, bytes
  CopyFrom,   // u32 id, u64 offset, u64 size -> bytes
  Upload,     // u32 name length, name, bytes -> u32 id, u64 addr, u64 size
  Start,      // u32 kernel id, u32 arguments id (0 none)
  Wait,       // u64 timeout (ms) -> console bytes to print
  DcrRead,    // u32 addr -> u32
  DcrWrite,   // u32 addr, u32 value
  Perf,       // -> text
  Close,      // (the host is done with the device)
};
const char* op_name(Op op);

// Little-endian packing of a message's payload.
class Writer {
 public:
  Writer& u32(uint32_t v) { return raw(&v, 4); }
  Writer& i32(int32_t v) { return raw(&v, 4); }
  Writer& u64(uint64_t v) { return raw(&v, 8); }
  Writer& bytes(std::span<const uint8_t> b) {
    out_.insert(out_.end(), b.begin(), b.end());
    return *this;
  }
  Writer& str(const std::string& s) {
    u32(uint32_t(s.size()));
    return bytes({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  }
  std::vector<uint8_t>& data() { return out_; }

 private:
  Writer& raw(const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
    return *this;
  }
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  bool u32(uint32_t* v) { return raw(v, 4); }
  bool i32(int32_t* v) { return raw(v, 4); }
  bool u64(uint64_t* v) { return raw(v, 8); }
  bool str(std::string* s) {
    uint32_t n = 0;
    if (!u32(&n) || n > in_.size() - pos_) return false;
    s->assign(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return true;
  }
  std::span<const uint8_t> rest() const { return in_.subspan(pos_); }

 private:
  bool raw(void* p, size_t n) {
    if (in_.size() - pos_ < n) return false;
    std::copy(in_.data() + pos_, in_.data() + pos_ + n, static_cast<uint8_t*>(p));
    pos_ += n;
    return true;
  }
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
};

// Whole-message I/O on a descriptor (retrying short reads and writes and EINTR). A read at the
// end of the stream gives nullopt; a broken or malformed stream gives an error.
Result<void> send_message(int fd, uint32_t head, std::span<const uint8_t> payload);

// Reads messages from one descriptor through a buffer: a small message (a call, a reply) costs
// one read(2), header and payload together.
class Receiver {
 public:
  explicit Receiver(int fd) : fd_(fd), buf_(kChunk) {}
  Result<std::optional<std::pair<uint32_t, std::vector<uint8_t>>>> next();
  // A peer that stops sending in the middle of a message for this long breaks the stream (the
  // other side would wait for it forever otherwise). 0: wait as long as it takes. Between
  // messages the wait is unbounded either way.
  void set_stall_limit_ms(int ms) { stall_ms_ = ms; }

 private:
  static constexpr size_t kChunk = 64 * 1024;
  // Reads until at least `n` bytes are buffered; false: the stream ended first.
  Result<bool> fill(size_t n);
  int fd_;
  int stall_ms_ = 0;
  std::vector<uint8_t> buf_;
  size_t begin_ = 0, end_ = 0;
};

}  // namespace vx::host
