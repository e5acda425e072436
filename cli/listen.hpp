// A TCP endpoint the user names as [HOST:]PORT (the GDB server's --gdb, the view's --serve): parsing,
// the loopback rule, and listening. Loopback by default: whoever reaches the socket controls what
// it serves (docs/gdb.md, "Trust").
#pragma once

#include <cstdint>
#include <string>

#include "base/result.hpp"

namespace vx::cli {

struct HostPort {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: the system picks one
};
// "[HOST:]PORT" ("[::1]:PORT" for IPv6). flag names the option in errors ("--gdb").
Result<HostPort> parse_host_port(const std::string& text, const std::string& flag);
bool is_loopback_host(const std::string& host);

struct Listening {
  int fd = -1;
  std::string where;  // "HOST:PORT" with the port bound ([HOST]:PORT for IPv6)
};
// Binds and listens; flag names the option in errors.
Result<Listening> listen_tcp(const HostPort& at, const std::string& flag, int backlog);

}  // namespace vx::cli
