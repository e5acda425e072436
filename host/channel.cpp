#include "host/channel.hpp"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

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

Result<void> send_message(int fd, uint32_t head, std::span<const uint8_t> payload) {
  uint8_t h[8];
  const uint32_t len = uint32_t(payload.size());
  std::memcpy(h, &head, 4);
  std::memcpy(h + 4, &len, 4);
  if (payload.size() <= 4096) {
    // One write for small messages: a call is one system call each way.
    uint8_t buf[8 + 4096];
    std::memcpy(buf, h, 8);
    if (!payload.empty()) std::memcpy(buf + 8, payload.data(), payload.size());
    return write_all(fd, buf, 8 + payload.size());
  }
  if (auto r = write_all(fd, h, 8); !r) return r;
  return write_all(fd, payload.data(), payload.size());
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
    if (stall_ms_ > 0 && end_ > 0) {
      // In the middle of a message: the rest must come.
      pollfd p{fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, stall_ms_);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0)
        return make_error("the program stopped sending in the middle of a message (" + std::to_string(end_) + " of " +
                          std::to_string(n) + " bytes, nothing more for " + std::to_string(stall_ms_ / 1000) + " s)");
    }
    ssize_t r = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return make_error(std::string("the channel is broken: ") + std::strerror(errno));
    if (r == 0) {
      if (end_ == 0) return false;
      return make_error("the channel ended in the middle of a message");
    }
    end_ += size_t(r);
  }
  return true;
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
