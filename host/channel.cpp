#include "host/channel.hpp"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <utility>

namespace vx::host {

const char* op_name(Op op) {
  switch (op) {
    case Op::Hello: return "vx_dev_open";
    case Op::Caps: return "vx_dev_caps";
    case Op::Alloc: return "vx_mem_alloc";
    case Op::Reserve: return "vx_mem_reserve";
    case Op::Free: return "vx_mem_free";
    case Op::Access: return "vx_mem_access";
    case Op::Info: return "vx_mem_info";
    case Op::CopyTo: return "vx_copy_to_dev";
    case Op::CopyFrom: return "vx_copy_from_dev";
    case Op::Upload: return "vx_upload_kernel_bytes";
    case Op::Start: return "vx_start";
    case Op::Wait: return "vx_ready_wait";
    case Op::DcrRead: return "vx_dcr_read";
    case Op::DcrWrite: return "vx_dcr_write";
    case Op::Perf: return "vx_dump_perf";
    case Op::Close: return "vx_dev_close";
  }
  return "unknown call";
}

namespace {

Result<void> write_all(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    // MSG_NOSIGNAL: a peer that is gone is an error here, not a SIGPIPE.
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == ENOTSOCK) w = ::write(fd, p, n);
    if (w < 0) return make_error(std::string("the channel is broken: ") + std::strerror(errno));
    p += w;
    n -= size_t(w);
  }
  return {};
}

}  // namespace

// ---- the shared rings ----

// The region's first page (the offsets are in channel.hpp); each counter on a cache line of its
// own. Ring r carries bytes to side r: ring 0 the program's requests, ring 1 vxreplay's replies.
struct SharedRings::Control {
  uint32_t magic;
  uint32_t version;
  uint64_t ring_bytes;
  alignas(64) std::atomic<uint64_t> head0;  // bytes written into ring 0 so far (by side 1)
  alignas(64) std::atomic<uint64_t> head1;
  alignas(64) std::atomic<uint64_t> tail0;  // bytes side 0 has read from ring 0
  alignas(64) std::atomic<uint64_t> tail1;
  alignas(64) std::atomic<uint32_t> sleeping0;  // side 0 sleeps on the socket
  alignas(64) std::atomic<uint32_t> sleeping1;
  alignas(64) std::atomic<uint32_t> in_use;  // vxreplay moved the channel onto the rings
  std::atomic<uint64_t>& head(int r) { return r == 0 ? head0 : head1; }
  std::atomic<uint64_t>& tail(int r) { return r == 0 ? tail0 : tail1; }
  std::atomic<uint32_t>& sleeping(int s) { return s == 0 ? sleeping0 : sleeping1; }
};
static_assert(offsetof(SharedRings::Control, head0) == 64 && offsetof(SharedRings::Control, head1) == 128 &&
              offsetof(SharedRings::Control, tail0) == 192 && offsetof(SharedRings::Control, tail1) == 256 &&
              offsetof(SharedRings::Control, sleeping0) == 320 && offsetof(SharedRings::Control, sleeping1) == 384 &&
              offsetof(SharedRings::Control, in_use) == 448 && sizeof(SharedRings::Control) <= 4096);

namespace {

constexpr uint32_t kRingsMagic = 0x48435856;  // "VXCH"
constexpr uint32_t kRingsVersion = 1;
constexpr size_t kControlBytes = 4096;
static_assert(sizeof(std::atomic<uint64_t>) == 8 && std::atomic<uint64_t>::is_always_lock_free);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

SharedRings::SharedRings(int memfd, void* base, size_t map_bytes, Side side)
    : memfd_(memfd), base_(base), map_bytes_(map_bytes), side_(side) {
  cap_ = size_t(control()->ring_bytes);
}

SharedRings::SharedRings(SharedRings&& o) noexcept
    : memfd_(std::exchange(o.memfd_, -1)),
      base_(std::exchange(o.base_, nullptr)),
      map_bytes_(std::exchange(o.map_bytes_, 0)),
      cap_(o.cap_),
      side_(o.side_),
      read_pos_(o.read_pos_),
      write_pos_(o.write_pos_) {}

SharedRings& SharedRings::operator=(SharedRings&& o) noexcept {
  if (this != &o) {
    release();
    memfd_ = std::exchange(o.memfd_, -1);
    base_ = std::exchange(o.base_, nullptr);
    map_bytes_ = std::exchange(o.map_bytes_, 0);
    cap_ = o.cap_;
    side_ = o.side_;
    read_pos_ = o.read_pos_;
    write_pos_ = o.write_pos_;
  }
  return *this;
}

SharedRings::~SharedRings() { release(); }

void SharedRings::release() {
  if (base_) ::munmap(base_, map_bytes_);
  base_ = nullptr;
  close_memfd();
}

void SharedRings::close_memfd() {
  if (memfd_ >= 0) ::close(memfd_);
  memfd_ = -1;
}

SharedRings::Control* SharedRings::control() const { return static_cast<Control*>(base_); }

uint8_t* SharedRings::ring(int r) const { return static_cast<uint8_t*>(base_) + kControlBytes + size_t(r) * cap_; }

Result<SharedRings> SharedRings::create(size_t ring_bytes) {
  if (ring_bytes == 0 || (ring_bytes & (ring_bytes - 1)) != 0)
    return make_error("a ring's size must be a power of two");
  const int fd = ::memfd_create("vxreplay-host-channel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return make_error(errno_text("cannot create the host channel's shared memory"));
  const size_t bytes = kControlBytes + 2 * ring_bytes;
  // Sealed at its size: a program that shrank it would make vxreplay's next access a SIGBUS.
  if (::ftruncate(fd, off_t(bytes)) != 0 || ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    auto e = make_error(errno_text("cannot size and seal the host channel's shared memory"));
    ::close(fd);
    return e;
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    auto e = make_error(errno_text("cannot map the host channel's shared memory"));
    ::close(fd);
    return e;
  }
  // A new memfd reads as zeros: every counter and flag starts at 0.
  auto* c = static_cast<Control*>(base);
  c->magic = kRingsMagic;
  c->version = kRingsVersion;
  c->ring_bytes = ring_bytes;
  return SharedRings(fd, base, bytes, kVxreplay);
}

Result<SharedRings> SharedRings::attach(int memfd) {
  struct stat st {};
  if (::fstat(memfd, &st) != 0) return make_error(errno_text("the host channel's shared memory"));
  if (st.st_size < off_t(kControlBytes))
    return make_error("the host channel's shared memory is " + std::to_string(st.st_size) + " bytes, too small");
  const size_t bytes = size_t(st.st_size);
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  if (base == MAP_FAILED) return make_error(errno_text("cannot map the host channel's shared memory"));
  const auto* c = static_cast<const Control*>(base);
  const uint64_t ring = c->ring_bytes;
  if (c->magic != kRingsMagic || c->version != kRingsVersion || ring == 0 || (ring & (ring - 1)) != 0 ||
      ring > (bytes - kControlBytes) / 2) {
    ::munmap(base, bytes);
    return make_error("the host channel's shared memory is not a vxreplay channel of this version");
  }
  // Replies an earlier process of the program did not read are not this one's.
  auto* control = static_cast<Control*>(base);
  control->tail1.store(control->head1.load(std::memory_order_acquire), std::memory_order_release);
  return SharedRings(memfd, base, bytes, kProgram);
}

bool SharedRings::in_use() const { return control()->in_use.load(std::memory_order_acquire) != 0; }

void SharedRings::mark_in_use() { control()->in_use.store(1, std::memory_order_release); }

Result<void> SharedRings::wake_peer(int socket) {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the counter just moved, then the flag is read
  if (control()->sleeping(1 - side_).load(std::memory_order_relaxed) == 0) return {};
  const uint8_t b = 1;
  ssize_t w;
  do w = ::send(socket, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (w < 0 && errno == EINTR);
  // A full socket already holds a wake-up the peer has not read.
  if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return make_error(errno_text("the channel is broken"));
  return {};
}

template <class Ready>
Result<SharedRings::Woke> SharedRings::wait(int socket, int stall_ms, Ready ready) {
  using Clock = std::chrono::steady_clock;
  const auto spin_end = Clock::now() + std::chrono::microseconds(kSpinMicros);
  for (unsigned i = 1;; ++i) {
    if (ready()) return Woke::Ready;
    cpu_relax();
    if (i % 64 == 0 && Clock::now() >= spin_end) break;
  }
  std::atomic<uint32_t>& asleep = control()->sleeping(side_);
  // Wake-ups and signals do not extend the stall limit: it counts from here.
  const auto stall_end = Clock::now() + std::chrono::milliseconds(stall_ms);
  bool ended = false;
  for (;;) {
    asleep.store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // the flag is set, then the counter is read
    if (ready()) break;
    if (ended) {
      asleep.store(0, std::memory_order_relaxed);
      return Woke::Ended;
    }
    int timeout = -1;
    if (stall_ms > 0) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(stall_end - Clock::now()).count();
      timeout = int(std::max<decltype(left)>(left, 0));
    }
    pollfd p{socket, POLLIN, 0};
    const int n = timeout == 0 ? 0 : ::poll(&p, 1, timeout);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      asleep.store(0, std::memory_order_relaxed);
      return make_error(errno_text("the channel is broken"));
    }
    if (n == 0) {
      asleep.store(0, std::memory_order_relaxed);
      return Woke::Stalled;
    }
    uint8_t drop[64];
    const ssize_t r = ::recv(socket, drop, sizeof drop, MSG_DONTWAIT);
    // The end of the socket (or a reset) is the peer's end; what it wrote before is still read.
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) ended = true;
  }
  asleep.store(0, std::memory_order_relaxed);
  return Woke::Ready;
}

Result<void> SharedRings::write(int socket, std::span<const uint8_t> bytes) {
  const int r = 1 - int(side_);
  Control* c = control();
  // The program's end trusts the region and takes its position from it: another process of the
  // program (a fork, a later program of the same command) may have moved it.
  if (side_ == kProgram) write_pos_ = c->head(r).load(std::memory_order_relaxed);
  uint8_t* data = ring(r);
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  std::string corrupt;
  auto room = [&]() -> uint64_t {
    const uint64_t used = write_pos_ - c->tail(r).load(std::memory_order_acquire);
    if (used > cap_) {
      corrupt = "the peer's read counter of the shared ring is " + std::to_string(write_pos_ - used) +
                ", outside the " + std::to_string(write_pos_) + " bytes written";
      return 1;  // ends the wait; the error is returned below
    }
    return cap_ - used;
  };
  while (n > 0) {
    uint64_t space = room();
    if (!corrupt.empty()) return make_error(corrupt);
    if (space == 0) {
      auto w = wait(socket, 0, [&] { return room() > 0; });
      if (!w) return w.error();
      if (!corrupt.empty()) return make_error(corrupt);
      if (*w != Woke::Ready) return make_error("the channel is broken: the other side is gone");
      space = room();
    }
    const size_t k = size_t(std::min<uint64_t>(space, n));
    const size_t at = size_t(write_pos_ & (cap_ - 1));
    const size_t first = std::min(k, cap_ - at);
    std::memcpy(data + at, p, first);
    std::memcpy(data, p + first, k - first);
    write_pos_ += k;
    c->head(r).store(write_pos_, std::memory_order_release);
    p += k;
    n -= k;
    if (auto w = wake_peer(socket); !w) return w;
  }
  return {};
}

Result<size_t> SharedRings::read(int socket, uint8_t* out, size_t max, int stall_ms) {
  const int r = int(side_);
  Control* c = control();
  if (side_ == kProgram) read_pos_ = c->tail(r).load(std::memory_order_relaxed);
  std::string corrupt;
  auto avail = [&]() -> uint64_t {
    const uint64_t have = c->head(r).load(std::memory_order_acquire) - read_pos_;
    if (have > cap_) {
      corrupt = "the peer's write counter of the shared ring is " + std::to_string(read_pos_ + have) + ", outside " +
                std::to_string(read_pos_) + " to " + std::to_string(read_pos_ + cap_);
      return 1;
    }
    return have;
  };
  uint64_t have = avail();
  if (!corrupt.empty()) return make_error(corrupt);
  if (have == 0) {
    auto w = wait(socket, stall_ms, [&] { return avail() > 0; });
    if (!w) return w.error();
    if (!corrupt.empty()) return make_error(corrupt);
    if (*w == Woke::Ended) return size_t(0);
    if (*w == Woke::Stalled) return kStalled;
    have = avail();
  }
  const size_t k = size_t(std::min<uint64_t>(have, max));
  const uint8_t* data = ring(r);
  const size_t at = size_t(read_pos_ & (cap_ - 1));
  const size_t first = std::min(k, cap_ - at);
  std::memcpy(out, data + at, first);
  std::memcpy(out + first, data, k - first);
  read_pos_ += k;
  c->tail(r).store(read_pos_, std::memory_order_release);
  if (auto w = wake_peer(socket); !w) return w.error();
  return k;
}

// ---- messages ----

Result<void> send_message(int fd, uint32_t head, std::span<const uint8_t> payload, SharedRings* rings) {
  uint8_t h[8];
  const uint32_t len = uint32_t(payload.size());
  std::memcpy(h, &head, 4);
  std::memcpy(h + 4, &len, 4);
  if (payload.size() <= 4096) {
    // One write for small messages: a call is one system call each way.
    uint8_t buf[8 + 4096];
    std::memcpy(buf, h, 8);
    if (!payload.empty()) std::memcpy(buf + 8, payload.data(), payload.size());
    if (rings) return rings->write(fd, {buf, 8 + payload.size()});
    return write_all(fd, buf, 8 + payload.size());
  }
  if (rings) {
    if (auto r = rings->write(fd, {h, 8}); !r) return r;
    return rings->write(fd, payload);
  }
  if (auto r = write_all(fd, h, 8); !r) return r;
  return write_all(fd, payload.data(), payload.size());
}

Result<size_t> Receiver::read_some(int stall_ms) {
  if (rings_) return rings_->read(fd_, buf_.data() + end_, buf_.size() - end_, stall_ms);
  for (;;) {
    if (stall_ms > 0) {
      pollfd p{fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, stall_ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) return SharedRings::kStalled;
    }
    ssize_t r = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return make_error(std::string("the channel is broken: ") + std::strerror(errno));
    return size_t(r);
  }
}

Result<bool> Receiver::fill(size_t n) {
  if (end_ - begin_ >= n) return true;
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  while (end_ < n) {
    // The buffer grows with the bytes that arrive, not with what a header claims: a header that
    // announces 512 MiB and sends nothing costs nothing.
    if (end_ == buf_.size()) buf_.resize(std::min(n, std::max(buf_.size() * 2, kChunk)));
    // In the middle of a message the rest must come within the stall limit.
    auto r = read_some(end_ > 0 ? stall_ms_ : 0);
    if (!r) return r.error();
    if (*r == SharedRings::kStalled)
      return make_error("the program stopped sending in the middle of a message (" + std::to_string(end_) + " of " +
                        std::to_string(n) + " bytes, nothing more for " + std::to_string(stall_ms_ / 1000) + " s)");
    if (*r == 0) {
      if (end_ == 0) return false;
      return make_error("the channel ended in the middle of a message");
    }
    end_ += *r;
  }
  return true;
}

Result<void> Receiver::use_rings(SharedRings* rings) {
  if (end_ != begin_)
    return make_error(std::to_string(end_ - begin_) + " bytes came through the socket after the handshake");
  rings_ = rings;
  return {};
}

Result<std::optional<std::pair<uint32_t, std::vector<uint8_t>>>> Receiver::next() {
  auto h = fill(8);
  if (!h) return h.error();
  if (!*h) return std::optional<std::pair<uint32_t, std::vector<uint8_t>>>{};
  uint32_t head = 0, len = 0;
  std::memcpy(&head, buf_.data() + begin_, 4);
  std::memcpy(&len, buf_.data() + begin_ + 4, 4);
  if (len > kMaxMessageBytes)
    return make_error("a message of " + std::to_string(len) + " bytes is larger than the channel's limit");
  auto b = fill(8 + size_t(len));
  if (!b) return b.error();
  if (!*b) return make_error("the channel ended in the middle of a message");
  std::vector<uint8_t> payload(buf_.begin() + std::ptrdiff_t(begin_ + 8),
                               buf_.begin() + std::ptrdiff_t(begin_ + 8 + len));
  begin_ += 8 + size_t(len);
  if (begin_ == end_) begin_ = end_ = 0;
  // A large message grew the buffer: give the memory back.
  if (buf_.size() > kChunk && end_ <= kChunk) {
    buf_.resize(kChunk);
    buf_.shrink_to_fit();
  }
  return std::optional<std::pair<uint32_t, std::vector<uint8_t>>>{std::pair{head, std::move(payload)}};
}

}  // namespace vx::host
