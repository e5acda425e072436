// The host channel's message layer and vxreplay's end of it against a peer that breaks the
// protocol (issue 33): nothing waits forever, nothing is allocated for bytes that never come.
#include "host/channel.hpp"

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
