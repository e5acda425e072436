// `vxreplay view --serve [HOST:]PORT` (docs/view.md, "Serving"): the page of `vxreplay view`, and
// behind it the recording: GET /state?launch=L&instret=I[&core=C&warp=W[&lane=N]] goes to that
// point through the same Debugger as the prompt (`goto L:I`) and answers the stop, the focus lane's
// args, locals and registers; GET /memory?launch=L&instret=I&addr=A[&len=N] answers `x/Nxb A`
// there. One request at a time, each on its own connection; a bad request is answered with an
// error and the server goes on. SIGINT or SIGTERM ends it.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>

#include "cli/command.hpp"
#include "cli/debugger.hpp"
#include "cli/run_command.hpp"
#include "cli/text.hpp"
#include "cli/view_data.hpp"

namespace vx::cli {

using nlohmann::json;

namespace {

constexpr size_t kMaxRequest = 16 * 1024;  // a request line and headers; more is refused
constexpr uint32_t kMaxMemory = 4096;      // bytes one /memory request reads

// Set by SIGINT/SIGTERM: the accept loop ends. (A signal handler can only reach static storage.)
volatile std::sig_atomic_t stop_requested = 0;
extern "C" void on_stop_signal(int) { stop_requested = 1; }

struct Response {
  int status = 200;
  std::string type = "application/json";
  std::string body;
};

const char* status_text(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Request Header Fields Too Large";
    default: return "Internal Server Error";
  }
}

Response error_response(int status, const std::string& message) {
  return Response{status, "application/json", json{{"error", message}}.dump() + "\n"};
}

// %XX and '+' in a query value.
std::optional<std::string> url_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      if (i + 2 >= s.size() || !std::isxdigit(uint8_t(s[i + 1])) || !std::isxdigit(uint8_t(s[i + 2])))
        return std::nullopt;
      out += char(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

using Query = std::map<std::string, std::string>;

Result<Query> parse_query(const std::string& q) {
  Query out;
  size_t at = 0;
  while (at < q.size()) {
    size_t amp = q.find('&', at);
    if (amp == std::string::npos) amp = q.size();
    const std::string part = q.substr(at, amp - at);
    at = amp + 1;
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    auto key = url_decode(part.substr(0, eq));
    auto value = url_decode(eq == std::string::npos ? "" : part.substr(eq + 1));
    if (!key || !value) return make_error("'" + part + "' in the query is not URL-encoded");
    out[*key] = *value;
  }
  return out;
}

// A number the query must or may have (decimal, or 0x hex); errors name the parameter.
Result<std::optional<uint64_t>> number(const Query& q, const char* name, bool required) {
  auto it = q.find(name);
  if (it == q.end()) {
    if (required) return make_error(std::string("the query needs ") + name + "=NUMBER");
    return std::optional<uint64_t>{};
  }
  bool too_large = false;
  auto v = parse_u64(it->second, &too_large);
  if (!v)
    return make_error(std::string(name) + "=" + it->second + " is not a number" + (too_large ? " (too large)" : ""));
  return std::optional<uint64_t>(*v);
}

class Server {
 public:
  Server(ViewRecording& o, const std::string& page) : o_(o), page_(page) {}

  Response handle(const std::string& request) {
    const size_t eol = request.find("\r\n");
    const std::string line = request.substr(0, eol);
    const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
    if (sp1 == std::string::npos || sp2 == sp1 || line.compare(sp2 + 1, 5, "HTTP/") != 0)
      return error_response(400, "not an HTTP request line: '" + line.substr(0, 200) + "'");
    const std::string method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    if (method != "GET") return error_response(405, "only GET is served (got " + method.substr(0, 20) + ")");
    const size_t qm = target.find('?');
    const std::string path = target.substr(0, qm);
    auto query = parse_query(qm == std::string::npos ? "" : target.substr(qm + 1));
    if (!query) return error_response(400, query.error().message);
    if (path == "/" || path == "/index.html") return Response{200, "text/html; charset=utf-8", page_};
    if (path == "/state") return state(*query);
    if (path == "/memory") return memory(*query);
    return error_response(404, "no such page: " + path.substr(0, 200) +
                                   " (the page is /; the state at a point /state?launch=L&instret=I; memory there "
                                   "/memory?launch=L&instret=I&addr=A&len=N)");
  }

 private:
  // Goes to the point the query names; an error response when it cannot.
  std::optional<Response> go(const Query& q, json* header) {
    auto launch = number(q, "launch", true);
    auto instret = number(q, "instret", true);
    auto core = number(q, "core", false), warp = number(q, "warp", false), lane = number(q, "lane", false);
    for (auto* r : {&launch, &instret, &core, &warp, &lane})
      if (!*r) return error_response(400, r->error().message);
    if (**launch == 0 || **launch > UINT32_MAX)
      return error_response(400, "launch=" + q.at("launch") + ": launches count from 1");
    if (core->has_value() != warp->has_value()) return error_response(400, "give core= and warp= together");
    std::optional<Lane> focus;
    if (core->has_value()) focus = Lane{uint32_t(**core), uint32_t(**warp), uint32_t(lane->value_or(0))};
    (void)take_events(o_.events);
    const bool there = o_.rec->dbg->goto_point(engine::TimePoint{uint32_t(**launch), **instret}, focus);
    const std::vector<json> events = take_events(o_.events);
    if (!there) {
      std::string why = "cannot go there";
      for (const json& e : events)
        if (e.value("event", "") == "error") why = e.value("message", why);
      return error_response(404, why);
    }
    for (const json& e : events)
      if (e.value("event", "") == "stop") *header = e;
    return std::nullopt;
  }

  Response state(const Query& q) {
    json out;
    json header;
    if (auto failed = go(q, &header)) return *failed;
    out["launch"] = header.value("launch", 0);
    out["instret"] = header.value("instructions", 0);
    out["header"] = header;
    add_stop_values(o_, &out);
    out["sources"] = sources_json(json::array({json{{"header", header}}}));
    out["command"] = "vxreplay replay " + text::shell_quote(o_.dir) + " -ex 'goto " +
                     std::to_string(out["launch"].get<uint64_t>()) + ":" +
                     std::to_string(out["instret"].get<uint64_t>()) + "'";
    return Response{200, "application/json", out.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"};
  }

  Response memory(const Query& q) {
    auto addr = number(q, "addr", true);
    if (!addr) return error_response(400, addr.error().message);
    auto len = number(q, "len", false);
    if (!len) return error_response(400, len.error().message);
    const uint64_t n = len->value_or(64);
    if (**addr > UINT32_MAX) return error_response(400, "addr=" + q.at("addr") + " is past the 32-bit address space");
    if (n == 0 || n > kMaxMemory)
      return error_response(400, "len=" + std::to_string(n) + ": from 1 to " + std::to_string(kMaxMemory) + " bytes");
    json header;
    if (auto failed = go(q, &header)) return *failed;
    o_.rec->dbg->execute("x/" + std::to_string(n) + "xb " + std::to_string(**addr));
    const std::vector<json> events = take_events(o_.events);
    for (const json& e : events)
      if (e.value("event", "") == "error") return error_response(404, e.value("message", "cannot read there"));
    const auto v = find_event(events, "values");
    if (!v) return error_response(500, "the debugger answered no values");
    json out = {{"launch", header.value("launch", 0)},
                {"instret", header.value("instructions", 0)},
                {"address", **addr},
                {"bytes", (*v)["values"]},
                {"text", v->value("text", "")}};
    return Response{200, "application/json", out.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"};
  }

  ViewRecording& o_;
  const std::string& page_;
};

// The request's line and headers (a body is not read: GET has none); nullopt when the client sent
// nothing whole before closing or the time ran out.
std::optional<std::string> read_request(int fd, bool* too_large) {
  std::string in;
  char buf[4096];
  while (in.find("\r\n\r\n") == std::string::npos) {
    if (in.size() > kMaxRequest) {
      *too_large = true;
      return in;
    }
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR && !stop_requested) continue;
    if (n <= 0) return in.find("\r\n") != std::string::npos ? std::optional<std::string>(in) : std::nullopt;
    in.append(buf, size_t(n));
  }
  return in;
}

void send_all(int fd, const std::string& s) {
  for (size_t at = 0; at < s.size();) {
    const ssize_t n = send(fd, s.data() + at, s.size() - at, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client went away: nothing to tell it
    at += size_t(n);
  }
}

void respond(int fd, const Response& r) {
  std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " + status_text(r.status) +
                     "\r\nContent-Type: " + r.type + "\r\nContent-Length: " + std::to_string(r.body.size()) +
                     "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n";
  send_all(fd, head + r.body);
}

// Closes after the client has seen the answer: what it still sends (a request cut short for its
// size) is read and dropped first, as closing with unread input would reset the connection and
// could lose the answer.
void drain_and_close(int fd) {
  shutdown(fd, SHUT_WR);
  timeval timeout{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  char buf[4096];
  for (size_t total = 0; total < (1u << 20);) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    total += size_t(n);
  }
  close(fd);
}

}  // namespace

int serve_view(ViewRecording& o, const std::string& page, const HostPort& at) {
  auto l = listen_tcp(at, "--serve", 16);
  if (!l) {
    std::fprintf(stderr, "vxreplay: %s\n", l.error().message.c_str());
    return kExitUsage;
  }
  struct sigaction act {};
  act.sa_handler = on_stop_signal;  // no SA_RESTART: accept() returns EINTR
  struct sigaction old_int, old_term;
  sigaction(SIGINT, &act, &old_int);
  sigaction(SIGTERM, &act, &old_term);
  std::fprintf(stderr, "vxreplay: serving %s at http://%s/ (Ctrl-C ends it)\n", o.dir.c_str(), l->where.c_str());
  std::fflush(stderr);
  Server server(o, page);
  uint64_t served = 0;
  while (!stop_requested) {
    const int client = accept4(l->fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      std::fprintf(stderr, "vxreplay: --serve: accept: %s\n", std::strerror(errno));
      break;
    }
    timeval timeout{5, 0};  // a client that sends nothing does not hold the server
    setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    bool too_large = false;
    if (auto request = read_request(client, &too_large)) {
      respond(client, too_large ? error_response(
                                      413, "the request's headers are over " + std::to_string(kMaxRequest) + " bytes")
                                : server.handle(*request));
      ++served;
    }
    drain_and_close(client);
  }
  close(l->fd);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  std::fprintf(stderr, "vxreplay: served %llu requests\n", static_cast<unsigned long long>(served));
  return kExitOk;
}

}  // namespace vx::cli
