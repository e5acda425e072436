// The host channel's message layer and vxreplay's end of it against a peer that breaks the
// protocol (issue 33): nothing waits forever, nothing is allocated for bytes that never come.
#include "host/channel.hpp"

#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>

#include "device/driver.hpp"
#include "host/server.hpp"

using namespace vx;
using namespace vx::host;

namespace {

struct Pair {
  int fd[2] = {-1, -1};
  Pair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fd) == 0); }
  ~Pair() {
    ::close(fd[0]);
    ::close(fd[1]);
  }
  void put(const void* p, size_t n) const { REQUIRE(::write(fd[0], p, n) == ssize_t(n)); }
  void header(uint32_t op, uint32_t len) const {
    uint8_t h[8];
    std::memcpy(h, &op, 4);
    std::memcpy(h + 4, &len, 4);
    put(h, 8);
  }
};

}  // namespace

TEST_CASE("a message that stops in the middle breaks the stream after the stall limit, not never") {
  Pair p;
  p.header(1, 100);
  p.put("0123456789", 10);
  Receiver in(p.fd[1]);
  in.set_stall_limit_ms(100);
  const auto t0 = std::chrono::steady_clock::now();
  auto m = in.next();
  const auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE_FALSE(m);
  CHECK(m.error().message.find("stopped sending in the middle of a message (18 of 108 bytes") != std::string::npos);
  CHECK(took < std::chrono::seconds(5));
}

TEST_CASE("a length over the limit is refused before anything is read or allocated") {
  Pair p;
  p.header(2, 0xffffffffu);
  Receiver in(p.fd[1]);
  auto m = in.next();
  REQUIRE_FALSE(m);
  CHECK(m.error().message == "a message of 4294967295 bytes is larger than the channel's limit");
}

TEST_CASE("a large message within the limit arrives whole; the end of the stream between messages is no error") {
  Pair p;
  std::vector<uint8_t> payload(300000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i * 7);
  std::thread writer([&] {
    REQUIRE(send_message(p.fd[0], 8, payload));
    ::shutdown(p.fd[0], SHUT_WR);
  });
  Receiver in(p.fd[1]);
  auto m = in.next();
  writer.join();
  REQUIRE(m);
  REQUIRE(*m);
  CHECK((*m)->first == 8);
  CHECK((*m)->second == payload);
  auto end = in.next();
  REQUIRE(end);
  CHECK_FALSE(*end);
}

TEST_CASE("the server answers a call before the handshake with the error and closes the channel") {
  Pair p;
  p.header(uint32_t(Op::Info), 0);
  DeviceConfig cfg;
  auto dev = open_model_device(cfg, RunOptions{});
  REQUIRE(dev);
  HostServer server(**dev, p.fd[1], cfg.to_string());
  auto r = server.pump();
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("before the handshake") != std::string::npos);
  CHECK(server.broken());
  // The program's pending call got the error, then the end of the stream.
  Receiver back(p.fd[0]);
  auto reply = back.next();
  REQUIRE(reply);
  REQUIRE(*reply);
  CHECK(int32_t((*reply)->first) == -1);
  const std::string text((*reply)->second.begin(), (*reply)->second.end());
  CHECK(text.find("vxreplay closed the channel") == 0);
  auto end = back.next();
  REQUIRE(end);
  CHECK_FALSE(*end);
  // Later pumps end at once.
  auto again = server.pump();
  REQUIRE(again);
  CHECK(*again == HostServer::Pump::Ended);
}

// ---- the shared rings (SharedRings) ----

namespace {

// vxreplay's end and the program's end of one region, in one process (each a thread below).
struct Rings {
  Pair p;
  SharedRings ours, theirs;
  static SharedRings make(size_t ring_bytes) {
    auto r = SharedRings::create(ring_bytes);
    REQUIRE(r);
    return std::move(r).value();
  }
  static SharedRings join(const SharedRings& ours) {
    auto r = SharedRings::attach(::dup(ours.memfd()));
    REQUIRE(r);
    return std::move(r).value();
  }
  explicit Rings(size_t ring_bytes) : ours(make(ring_bytes)), theirs(join(ours)) {}
  int vx_fd() const { return p.fd[1]; }
  int program_fd() const { return p.fd[0]; }
  // The region as the program could write it: a u64 at `offset`.
  void poke_u64(size_t offset, uint64_t v) const { REQUIRE(::pwrite(ours.memfd(), &v, 8, off_t(offset)) == 8); }
};

std::vector<uint8_t> pattern(size_t n, unsigned seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i * 131 + seed + (i >> 9));
  return v;
}

}  // namespace

TEST_CASE("messages go both ways through the rings, larger ones wrapping around a small ring many times") {
  Rings r(4096);
  const auto big = pattern(300000, 3), small = pattern(100, 9);
  std::thread program([&] {
    Receiver in(r.program_fd());
    REQUIRE(in.use_rings(&r.theirs));
    for (int i = 0; i < 50; ++i)
      REQUIRE(send_message(r.program_fd(), uint32_t(i), i % 10 == 0 ? big : small, &r.theirs));
    auto back = in.next();
    REQUIRE(back);
    REQUIRE(*back);
    CHECK((*back)->second == big);
    ::shutdown(r.program_fd(), SHUT_RDWR);  // the program ends
  });
  Receiver in(r.vx_fd());
  REQUIRE(in.use_rings(&r.ours));
  for (int i = 0; i < 50; ++i) {
    auto m = in.next();
    REQUIRE(m);
    REQUIRE(*m);
    CHECK((*m)->first == uint32_t(i));
    CHECK((*m)->second == (i % 10 == 0 ? big : small));
  }
  REQUIRE(send_message(r.vx_fd(), 0, big, &r.ours));
  program.join();
  // What the program wrote before it ended is read first; then the end, not an error.
  auto end = in.next();
  REQUIRE(end);
  CHECK_FALSE(*end);
}

TEST_CASE("a side that waited past its spin sleeps on the socket and the other side's write wakes it") {
  Rings r(1 << 16);
  const auto msg = pattern(5000, 1);
  std::thread program([&] {
    // Well past kSpinMicros: vxreplay's reader is asleep by then.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    REQUIRE(send_message(r.program_fd(), 7, msg, &r.theirs));
  });
  Receiver in(r.vx_fd());
  REQUIRE(in.use_rings(&r.ours));
  auto m = in.next();
  program.join();
  REQUIRE(m);
  REQUIRE(*m);
  CHECK((*m)->first == 7);
  CHECK((*m)->second == msg);
  // The asleep flag was set (the write saw it and rang), and is clear again.
  uint32_t asleep = 1;
  REQUIRE(::pread(r.ours.memfd(), &asleep, 4, 320) == 4);
  CHECK(asleep == 0);
}

TEST_CASE("through the rings, a message that stops in the middle breaks the stream after the stall limit") {
  Rings r(4096);
  uint8_t h[8 + 10];
  const uint32_t op = 1, len = 100;
  std::memcpy(h, &op, 4);
  std::memcpy(h + 4, &len, 4);
  std::memcpy(h + 8, "0123456789", 10);
  REQUIRE(r.theirs.write(r.program_fd(), h));
  Receiver in(r.vx_fd());
  REQUIRE(in.use_rings(&r.ours));
  in.set_stall_limit_ms(100);
  auto m = in.next();
  REQUIRE_FALSE(m);
  CHECK(m.error().message.find("stopped sending in the middle of a message (18 of 108 bytes") != std::string::npos);
}

TEST_CASE("vxreplay refuses ring counters the program moved backwards or past the ring") {
  Rings r(4096);
  Receiver in(r.vx_fd());
  REQUIRE(in.use_rings(&r.ours));
  SECTION("the write counter of the requests' ring past the ring") {
    r.poke_u64(64, 5000);
    auto m = in.next();
    REQUIRE_FALSE(m);
    CHECK(m.error().message == "the peer's write counter of the shared ring is 5000, outside 0 to 4096");
  }
  SECTION("the read counter of the replies' ring ahead of what was written") {
    r.poke_u64(256, 7);
    auto w = send_message(r.vx_fd(), 0, pattern(10, 0), &r.ours);
    REQUIRE_FALSE(w);
    CHECK(w.error().message.find("the peer's read counter of the shared ring is 7, outside the 0 bytes written") == 0);
  }
}

TEST_CASE("a region that is not a channel is refused by the program's end") {
  const int fd = ::memfd_create("not-a-channel", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, 3 * 4096) == 0);
  auto r = SharedRings::attach(fd);
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "the host channel's shared memory is not a vxreplay channel of this version");
  ::close(fd);
}

TEST_CASE("the handshake moves the channel to the rings when the program offers them, and keeps the socket otherwise") {
  DeviceConfig cfg;
  auto dev = open_model_device(cfg, RunOptions{});
  REQUIRE(dev);
  const bool offer = GENERATE(true, false);
  Rings r(1 << 16);
  HostServer server(**dev, r.vx_fd(), cfg.to_string(), &r.ours);
  Writer hello;
  hello.u32(kProtocolVersion).u32(offer ? 1 : 0);
  REQUIRE(send_message(r.program_fd(), uint32_t(Op::Hello), hello.data()));
  Receiver back(r.program_fd());
  std::thread program([&] {
    auto reply = back.next();  // the handshake's answer comes through the socket either way
    REQUIRE(reply);
    REQUIRE(*reply);
    Reader in((*reply)->second);
    uint32_t version = 0, rings = 9;
    std::string shape;
    REQUIRE(in.u32(&version));
    REQUIRE(in.str(&shape));
    REQUIRE(in.u32(&rings));
    CHECK(rings == (offer ? 1u : 0u));
    SharedRings* via = offer ? &r.theirs : nullptr;
    if (offer) REQUIRE(back.use_rings(via));
    Writer none;
    REQUIRE(send_message(r.program_fd(), uint32_t(Op::Info), none.data(), via));
    auto info = back.next();
    REQUIRE(info);
    REQUIRE(*info);
    CHECK((*info)->first == 0);
    CHECK((*info)->second.size() == 16);
    ::shutdown(r.program_fd(), SHUT_RDWR);
  });
  auto p = server.pump();
  program.join();
  REQUIRE(p);
  CHECK(*p == HostServer::Pump::Ended);
  CHECK(server.calls() == 2);
}
