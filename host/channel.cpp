#include "host/channel.hpp"

#include <errno.h>
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

// false: end of stream before the first byte.
Result<bool> read_all(int fd, uint8_t* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return make_error(std::string("the channel is broken: ") + std::strerror(errno));
    if (r == 0) {
      if (got == 0) return false;
      return make_error("the channel ended in the middle of a message");
    }
    got += size_t(r);
  }
  return true;
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

Result<std::optional<std::pair<uint32_t, std::vector<uint8_t>>>> receive_message(int fd) {
  uint8_t h[8];
  auto r = read_all(fd, h, 8);
  if (!r) return r.error();
  if (!*r) return std::optional<std::pair<uint32_t, std::vector<uint8_t>>>{};
  uint32_t head = 0, len = 0;
  std::memcpy(&head, h, 4);
  std::memcpy(&len, h + 4, 4);
  if (len > kMaxMessageBytes)
    return make_error("a message of " + std::to_string(len) + " bytes is larger than the channel's limit");
  std::vector<uint8_t> payload(len);
  if (len > 0) {
    auto b = read_all(fd, payload.data(), len);
    if (!b) return b.error();
    if (!*b) return make_error("the channel ended in the middle of a message");
  }
  return std::optional<std::pair<uint32_t, std::vector<uint8_t>>>{std::pair{head, std::move(payload)}};
}

}  // namespace vx::host
