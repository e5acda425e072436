#include "cli/listen.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vx::cli {

Result<HostPort> parse_host_port(const std::string& text, const std::string& flag) {
  HostPort hp;
  std::string port = text;
  const size_t colon = text.rfind(':');
  if (colon != std::string::npos) {
    hp.host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (hp.host.size() >= 2 && hp.host.front() == '[' && hp.host.back() == ']')
      hp.host = hp.host.substr(1, hp.host.size() - 2);
    if (hp.host.empty()) return make_error(flag + ": '" + text + "' has an empty host (give [HOST:]PORT)");
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(port) > 65535)
    return make_error(flag + ": '" + text + "' is not [HOST:]PORT with a port from 0 to 65535");
  hp.port = uint16_t(std::stoul(port));
  return hp;
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr a;
  return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

Result<Listening> listen_tcp(const HostPort& at, const std::string& flag, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(at.port);
  if (int rc = getaddrinfo(at.host.c_str(), port.c_str(), &hints, &found); rc != 0)
    return make_error(flag + ": cannot resolve '" + at.host + "': " + gai_strerror(rc));
  int fd = -1;
  std::string why;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, backlog) != 0) {
      why = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return make_error(flag + ": cannot listen on " + at.host + ":" + port + ": " + why);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  uint16_t actual = at.port;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0)
    actual = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  Listening l;
  l.fd = fd;
  l.where = (at.host.find(':') != std::string::npos ? "[" + at.host + "]" : at.host) + ":" + std::to_string(actual);
  return l;
}

}  // namespace vx::cli
