// The GDB server's handler table over a socket pair, byte for byte: a client writes packets, the
// server (on a thread) answers on a session of the vecadd example kernel.
#include "cli/gdb_server.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <thread>

#include "cli/debugger.hpp"
#include "cli/output.hpp"
#include "device/host_runtime.hpp"
#include "device/image.hpp"

#ifndef VX_EXAMPLES_DIR
#error "VX_EXAMPLES_DIR must name the built example kernels"
#endif

using namespace vx;
using namespace vx::cli;

namespace {

// A packet as the server frames its replies (runs encoded); the server reads such packets too.
std::string framed(const std::string& payload) { return gdb::frame_reply(payload, false); }

class Client {
 public:
  explicit Client(int fd) : fd_(fd) {}
  void write_raw(const std::string& bytes) {
    REQUIRE(::write(fd_, bytes.data(), bytes.size()) == ssize_t(bytes.size()));
  }
  // Exactly n bytes from the server.
  std::string read_exact(size_t n) {
    std::string out;
    while (out.size() < n) {
      char buf[4096];
      ssize_t got = ::read(fd_, buf, std::min(sizeof buf, n - out.size()));
      REQUIRE(got > 0);
      out.append(buf, size_t(got));
    }
    return out;
  }
  // One whole packet ("$...#cc"), skipping nothing.
  std::string read_packet() {
    std::string out = read_exact(1);
    REQUIRE(out == "$");
    for (;;) {
      out += read_exact(1);
      if (out.back() == '#') break;
    }
    return out + read_exact(2);
  }

 private:
  int fd_;
};

struct Served {
  std::unique_ptr<Driver> dev;
  std::unique_ptr<engine::Session> session;
  std::optional<engine::Symbols> symbols;
  GridLaunch launch;
};

Served serve_vecadd() {
  Served s;
  auto d = open_model_device(DeviceConfig{}, RunOptions{});
  REQUIRE(d);
  s.dev = std::move(d).value();
  const std::string elf = std::string(VX_EXAMPLES_DIR) + "/vecadd.elf";
  auto image = load_kernel_image(elf);
  REQUIRE(image);
  auto session = engine::Session::create(*s.dev, engine::SessionOptions{});
  REQUIRE(session);
  s.session = std::move(session).value();
  auto sym = engine::Symbols::load(elf);
  REQUIRE(sym);
  s.symbols.emplace(std::move(sym).value());
  HostRuntime rt(s.session->host());
  auto launch = resolve_grid_launch(*image, s.dev->config(), {});
  REQUIRE(launch);
  s.launch = *launch;
  REQUIRE(rt.load_image(*image));
  REQUIRE(rt.launch_grid(*launch));
  return s;
}

}  // namespace

TEST_CASE("the server acknowledges, answers, refuses a bad checksum and runs vecadd to its exit code", "[gdb]") {
  Served sv = serve_vecadd();
  int fds[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  std::unique_ptr<Sink> capture = make_capture_sink();
  Debugger dbg(*sv.session, &*sv.symbols, sv.launch, *capture);
  sv.session->set_breakpoint_filter(nullptr);
  int status = -1;
  std::thread server([&] {
    GdbServer srv(*sv.session, &*sv.symbols, dbg, *capture, GdbConnection{fds[1], fds[1], false});
    status = srv.serve(GdbStart{false, sv.launch.entry_pc}, "");
  });
  Client c(fds[0]);

  // Acknowledged mode: '+' before each reply.
  c.write_raw(framed("qSupported:swbreak+;xmlRegisters=i386"));
  CHECK(c.read_exact(1) == "+");
  // No store: no reverse execution offered.
  CHECK(c.read_packet() == framed("PacketSize=4000;QStartNoAckMode+;swbreak+;qXfer:features:read+;vContSupported+"));
  c.write_raw("$g#00");
  CHECK(c.read_exact(1) == "-");  // a wrong checksum
  c.write_raw(framed("vMustReplyEmpty"));
  CHECK(c.read_exact(1) == "+");
  CHECK(c.read_packet() == "$#00");
  c.write_raw(framed("m80000000"));
  CHECK(c.read_exact(1) == "+");
  CHECK(c.read_packet() == "$E01#a6");
  c.write_raw(framed("QStartNoAckMode"));
  CHECK(c.read_exact(1) == "+");
  CHECK(c.read_packet() == "$OK#9a");

  // No acknowledgements from here on. The first stop: the kernel's entry, in the first warp there.
  const engine::StopEvent& first = sv.session->last_stop();
  REQUIRE(first.reason == engine::StopReason::Breakpoint);
  const engine::WarpHit h = first.hits.at(0);
  const uint32_t nt = sv.dev->config().threads, nw = sv.dev->config().warps;
  const uint32_t tid = 1 + (h.warp.core * nw + h.warp.slot) * nt + uint32_t(__builtin_ctz(h.lanes));
  char hex[16];
  std::snprintf(hex, sizeof hex, "%x", tid);
  c.write_raw(framed("?"));
  CHECK(c.read_packet() == framed(std::string("T05swbreak:;thread:") + hex + ";"));
  c.write_raw(framed("qC"));
  CHECK(c.read_packet() == framed(std::string("QC") + hex));
  // The pc register of that lane: register 32, little-endian.
  c.write_raw(framed("p20"));
  CHECK(c.read_packet() == framed(gdb::hex_u32_le(sv.launch.entry_pc)));
  // Memory with the planted entry breakpoint gone: the kernel's own instruction word.
  auto word = sv.session->read_memory(sv.launch.entry_pc, 4);
  REQUIRE(word);
  char addr[16];
  std::snprintf(addr, sizeof addr, "m%x,4", sv.launch.entry_pc);
  c.write_raw(framed(addr));
  CHECK(c.read_packet() == framed(gdb::to_hex(*word)));
  // A thread that is not resident.
  c.write_raw(framed("T7fffffff"));
  CHECK(c.read_packet() == "$E01#a6");
  c.write_raw(framed("Hg7fffffff"));
  CHECK(c.read_packet() == "$E01#a6");
  // A write of unmapped memory is refused; one of device memory lands (here the entry's own word,
  // written back as it was, and read again).
  c.write_raw(framed("M7fff0000,4:00000000"));
  CHECK(c.read_packet() == "$E01#a6");
  std::snprintf(addr, sizeof addr, "M%x,4:", sv.launch.entry_pc);
  c.write_raw(framed(addr + gdb::to_hex(*word)));
  CHECK(c.read_packet() == "$OK#9a");
  std::snprintf(addr, sizeof addr, "m%x,4", sv.launch.entry_pc);
  c.write_raw(framed(addr));
  CHECK(c.read_packet() == framed(gdb::to_hex(*word)));
  // pc has no engine write.
  c.write_raw(framed("P20=00000000"));
  CHECK(c.read_packet() == "$E01#a6");
  // No store: no reverse execution.
  c.write_raw(framed("bs"));
  CHECK(c.read_packet() == "$E01#a6");
  // monitor: the prompt's output as 'O' packets, then OK.
  c.write_raw(framed("qRcmd," + gdb::to_hex(std::string("info ctas"))));
  std::string o = c.read_packet();
  CHECK(o.rfind("$O", 0) == 0);
  CHECK(gdb::from_hex(o.substr(2, o.size() - 5)).value_or("").find("in progress:") != std::string::npos);
  CHECK(c.read_packet() == "$OK#9a");
  c.write_raw(framed("qRcmd," + gdb::to_hex(std::string("continue"))));
  o = c.read_packet();
  CHECK(gdb::from_hex(o.substr(2, o.size() - 5)).value_or("").find("use gdb's own \"continue\"") != std::string::npos);
  CHECK(c.read_packet() == "$OK#9a");

  // Run to the end: vecadd exits with 0.
  c.write_raw(framed("vCont;c"));
  CHECK(c.read_packet() == "$W00#b7");
  c.write_raw(framed("D"));
  CHECK(c.read_packet() == "$OK#9a");
  server.join();
  CHECK(status == 0);
  close(fds[0]);
  close(fds[1]);
}

TEST_CASE("a client that disconnects ends the session", "[gdb]") {
  Served sv = serve_vecadd();
  int fds[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  std::unique_ptr<Sink> capture = make_capture_sink();
  Debugger dbg(*sv.session, &*sv.symbols, sv.launch, *capture);
  sv.session->set_breakpoint_filter(nullptr);
  int status = -1;
  std::thread server([&] {
    GdbServer srv(*sv.session, &*sv.symbols, dbg, *capture, GdbConnection{fds[1], fds[1], false});
    status = srv.serve(GdbStart{false, sv.launch.entry_pc}, "");
  });
  Client c(fds[0]);
  c.write_raw(framed("?"));
  CHECK(c.read_exact(1) == "+");
  CHECK(c.read_packet().rfind("$T05", 0) == 0);
  shutdown(fds[0], SHUT_WR);
  server.join();
  CHECK(status == 0);  // stopped at a breakpoint: a session's status 0
  close(fds[0]);
  close(fds[1]);
}

TEST_CASE("--gdb takes -, PORT or HOST:PORT", "[gdb]") {
  auto stdio = parse_gdb_endpoint("-");
  REQUIRE(stdio);
  CHECK(stdio->stdio);
  auto port = parse_gdb_endpoint("1234");
  REQUIRE(port);
  CHECK(port->host == "127.0.0.1");
  CHECK(port->port == 1234);
  auto hp = parse_gdb_endpoint("0.0.0.0:99");
  REQUIRE(hp);
  CHECK(hp->host == "0.0.0.0");
  auto v6 = parse_gdb_endpoint("[::1]:5");
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  CHECK_FALSE(parse_gdb_endpoint("65536"));
  CHECK_FALSE(parse_gdb_endpoint(":1"));
  CHECK_FALSE(parse_gdb_endpoint("host:"));
  CHECK_FALSE(parse_gdb_endpoint("12a"));
  CHECK(is_loopback_host("127.0.0.1"));
  CHECK(is_loopback_host("127.1.2.3"));
  CHECK(is_loopback_host("localhost"));
  CHECK_FALSE(is_loopback_host("0.0.0.0"));
  CHECK_FALSE(is_loopback_host("192.168.1.1"));
}
