// The channel between a host program's libvortex and the vxreplay that started it: a stream
// socket inherited by the host, its descriptor number in the environment (kChannelEnv), and a
// shared memory region with one ring each way (kRingsEnv, SharedRings) that carries the messages
// once the handshake has agreed on it; the socket then only wakes a sleeping side and tells each
// side that the other is gone. Each vortex.h call is one request, answered by one reply
// (docs/host.md, "The channel").
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
constexpr const char* kRingsEnv = "VXREPLAY_HOST_RINGS";
// 2: Hello carries the transport (u32 after the version: 1 = the shared rings, 0 = the socket).
constexpr uint32_t kProtocolVersion = 2;
constexpr uint32_t kMaxMessageBytes = 512u << 20;  // bigger than any kernel image or copy we accept in one message

enum class Op : uint32_t {
  Hello = 1,  // u32 version, u32 transport -> u32 version, then the config string (the device's shape)
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

// The shared memory part of the channel: two single-producer single-consumer byte rings in one
// memfd that vxreplay creates and the program maps (kRingsEnv). A message through them costs no
// system call while the reader is awake: a side that waits spins for kSpinMicros, then sleeps in
// poll(2) on the socket after saying so in the region, and the other side writes one byte to the
// socket when it moves a ring's counter and sees the peer asleep (an event count: each side
// publishes, fences, then looks at the other's flag). The socket's end of stream is the other
// side's end. vxreplay trusts nothing the program can write there: it keeps its own counters and
// refuses a peer counter that runs backwards or past the ring (a broken stream, as a malformed
// message is).
//
// The region: u32 magic "VXCH" at 0, u32 version 1 at 4, u64 ring size at 8 (a power of two);
// u64 counters at 64 (bytes written into ring 0 so far), 128 (into ring 1), 192 (read from ring
// 0), 256 (from ring 1); u32 "asleep" flags at 320 (vxreplay) and 384 (the program); u32 "in
// use" at 448 (vxreplay moved the channel onto the rings: a later process of the program says
// hello through them); ring 0 (to vxreplay) at 4096, ring 1 (to the program) after it. A byte's
// place in its ring is its count modulo the ring's size. vxreplay seals the region at its size.
// The program's end reads its positions from the region at each call (a fork or a later process
// of the program may have moved them); vxreplay's end keeps its own.
class SharedRings {
 public:
  enum Side : uint32_t { kVxreplay = 0, kProgram = 1 };
  static constexpr size_t kRingBytes = 1u << 20;  // each way; larger messages stream through
  static constexpr int kSpinMicros = 200;

  // vxreplay's end: a new region (its descriptor to pass to the program is memfd()).
  static Result<SharedRings> create(size_t ring_bytes = kRingBytes);
  // The program's end: the region vxreplay made, checked (magic, version, size).
  static Result<SharedRings> attach(int memfd);
  SharedRings(SharedRings&& o) noexcept;
  SharedRings& operator=(SharedRings&& o) noexcept;
  SharedRings(const SharedRings&) = delete;
  SharedRings& operator=(const SharedRings&) = delete;
  ~SharedRings();
  int memfd() const { return memfd_; }
  // Closes the descriptor (vxreplay, once the program has its copy); the mapping stays.
  void close_memfd();
  // The channel is on the rings (set by vxreplay at the handshake that moved it there).
  bool in_use() const;
  void mark_in_use();

  // All of `bytes` into the ring to the peer, waiting for room as it reads.
  Result<void> write(int socket, std::span<const uint8_t> bytes);
  // At least one byte and at most `max` from the ring to this side; 0: the peer closed its end
  // and left nothing; kStalled: `stall_ms` (> 0) passed without a byte.
  static constexpr size_t kStalled = ~size_t(0);
  Result<size_t> read(int socket, uint8_t* out, size_t max, int stall_ms);

  // The region's control page (its layout above), defined where it is used.
  struct Control;

 private:
  SharedRings(int memfd, void* base, size_t map_bytes, Side side);
  void release();
  Control* control() const;
  uint8_t* ring(int r) const;
  // Spins, then sleeps on the socket, until `ready` holds, the socket ends (or breaks) with
  // `ready` still false, or `stall_ms` (> 0) passes.
  enum class Woke { Ready, Ended, Stalled };
  template <class Ready>
  Result<Woke> wait(int socket, int stall_ms, Ready ready);
  Result<void> wake_peer(int socket);
  int memfd_ = -1;
  void* base_ = nullptr;
  size_t map_bytes_ = 0;
  size_t cap_ = 0;
  Side side_ = kVxreplay;
  uint64_t read_pos_ = 0;  // this side's counters, never read back from the region
  uint64_t write_pos_ = 0;
};

// Whole-message I/O on a descriptor (retrying short reads and writes and EINTR), or through the
// rings when given. A read at the end of the stream gives nullopt; a broken or malformed stream
// gives an error.
Result<void> send_message(int fd, uint32_t head, std::span<const uint8_t> payload, SharedRings* rings = nullptr);

// Reads messages from one descriptor (or the rings, once use_rings is called) through a buffer: a
// small message (a call, a reply) costs one read, header and payload together.
class Receiver {
 public:
  explicit Receiver(int fd) : fd_(fd), buf_(kChunk) {}
  Result<std::optional<std::pair<uint32_t, std::vector<uint8_t>>>> next();
  // From now on messages come through `rings` (after the handshake); an error if bytes from the
  // socket are still unread (the program sent more than the handshake before its answer).
  Result<void> use_rings(SharedRings* rings);
  // A peer that stops sending in the middle of a message for this long breaks the stream (the
  // other side would wait for it forever otherwise). 0: wait as long as it takes. Between
  // messages the wait is unbounded either way.
  void set_stall_limit_ms(int ms) { stall_ms_ = ms; }

 private:
  static constexpr size_t kChunk = 64 * 1024;
  // Reads until at least `n` bytes are buffered; false: the stream ended first.
  Result<bool> fill(size_t n);
  // Reads what is there into the buffer's free end, at least one byte: 0 at the end of the stream,
  // SharedRings::kStalled when `stall_ms` (> 0) passed first.
  Result<size_t> read_some(int stall_ms);
  int fd_;
  SharedRings* rings_ = nullptr;
  int stall_ms_ = 0;
  std::vector<uint8_t> buf_;
  size_t begin_ = 0, end_ = 0;
};

}  // namespace vx::host
