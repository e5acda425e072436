// `vxreplay view --serve [HOST:]PORT` (docs/view.md, "Serving"): the page of `vxreplay view`, and
// behind it the recording: GET /state?launch=L&instret=I[&core=C&warp=W[&lane=N]] goes to that
// point through the same Debugger as the prompt (`goto L:I`) and answers the stop, the focus lane's
// args, locals and registers; GET /memory?launch=L&instret=I&addr=A[&len=N] answers `x/Nxb A`
// there; GET /origin?launch=L&instret=I[&core=C&warp=W[&lane=N]]&expr=EXPR answers `origin EXPR`
// there with that lane in focus (who last wrote it). One request at a time, each on its own
// connection; a bad request is answered with an error and the server goes on. SIGINT or SIGTERM
// ends it.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <poll.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
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
constexpr size_t kMaxPending = 64;         // connections being read at once; more are told to come back
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
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
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
    std::string line = request.substr(0, request.find('\n'));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
    if (sp1 == std::string::npos || sp2 == sp1 || line.compare(sp2 + 1, 5, "HTTP/") != 0)
      return error_response(400, "not an HTTP request line: '" + line.substr(0, 200) + "'");
    const std::string method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    if (const std::string v = line.substr(sp2 + 1); v != "HTTP/1.0" && v != "HTTP/1.1")
      return error_response(505, "HTTP/1.0 and HTTP/1.1 are served, not " + v.substr(0, 20));
    if (method != "GET") return error_response(405, "only GET is served (got " + method.substr(0, 20) + ")");
    const size_t qm = target.find('?');
    const std::string path = target.substr(0, qm);
    auto query = parse_query(qm == std::string::npos ? "" : target.substr(qm + 1));
    if (!query) return error_response(400, query.error().message);
    if (path == "/" || path == "/index.html") return Response{200, "text/html; charset=utf-8", page_};
    if (path == "/state") return state(*query);
    if (path == "/memory") return memory(*query);
    if (path == "/origin") return origin(*query);
    return error_response(404, "no such page: " + path.substr(0, 200) +
                                   " (the page is /; the state at a point /state?launch=L&instret=I; memory there "
                                   "/memory?launch=L&instret=I&addr=A&len=N; who wrote a value there "
                                   "/origin?launch=L&instret=I&expr=EXPR)");
  }

 private:
  // Goes to the point the query names; an error response when it cannot.
  // note: set when the lane asked for is not the one in focus there (its warp has no work then).
  std::optional<Response> go(const Query& q, json* header, std::string* note = nullptr) {
    auto launch = number(q, "launch", true);
    auto instret = number(q, "instret", true);
    auto core = number(q, "core", false), warp = number(q, "warp", false), lane = number(q, "lane", false);
    for (auto* r : {&launch, &instret, &core, &warp, &lane})
      if (!*r) return error_response(400, r->error().message);
    if (**launch == 0 || **launch > UINT32_MAX)
      return error_response(400, "launch=" + q.at("launch") + ": launches count from 1");
    if (core->has_value() != warp->has_value()) return error_response(400, "give core= and warp= together");
    const DeviceConfig& cfg = o_.rec->info.config;
    if (core->has_value() && (**core >= cfg.total_cores() || **warp >= cfg.warps || lane->value_or(0) >= cfg.threads))
      return error_response(400, "core " + std::to_string(**core) + " warp " + std::to_string(**warp) + " lane " +
                                     std::to_string(lane->value_or(0)) + " is not a lane of the " + cfg.to_string() +
                                     " device");
    if (lane->has_value() && !core->has_value()) return error_response(400, "lane= needs core= and warp=");
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
    if (focus && note &&
        (header->value("core", ~0u) != focus->core || header->value("warp", ~0u) != focus->slot ||
         header->value("lane", ~0u) != focus->lane)) {
      *note = "core " + std::to_string(focus->core) + " warp " + std::to_string(focus->slot) + " lane " +
              std::to_string(focus->lane) + " has no work at this point (or the lane is not active)";
      if (header->contains("core"))
        *note += ": shown is core " + std::to_string(header->value("core", 0u)) + " warp " +
                 std::to_string(header->value("warp", 0u)) + " lane " + std::to_string(header->value("lane", 0u));
    }
    return std::nullopt;
  }

  Response state(const Query& q) {
    json out;
    json header;
    std::string note;
    if (auto failed = go(q, &header, &note)) return *failed;
    if (!note.empty()) out["note"] = note;
    out["launch"] = header.value("launch", 0);
    out["instret"] = header.value("instructions", 0);
    out["header"] = header;
    add_stop_values(o_, &out);
    out["sources"] = sources_json(json::array({json{{"header", header}}}));
    out["command"] = "vxreplay replay " + text::shell_quote(o_.dir) + " -ex 'goto " +
                     std::to_string(out["launch"].get<uint64_t>()) + ":" +
                     std::to_string(out["instret"].get<uint64_t>()) + "'";
    if (header.contains("core"))  // the lane shown, in focus at the prompt too
      out["command"] = out["command"].get<std::string>() + " -ex 'focus core " +
                       std::to_string(header.value("core", 0u)) + " warp " + std::to_string(header.value("warp", 0u)) +
                       " lane " + std::to_string(header.value("lane", 0u)) + "'";
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

  // `origin EXPR` at the point, with the query's lane in focus: the debugger's answer as the prompt
  // gives it with --json, and the lane it was asked in (`focus`, and `note` when that is not the
  // lane the query named).
  Response origin(const Query& q) {
    auto it = q.find("expr");
    if (it == q.end())
      return error_response(400,
                            "the query needs expr=EXPRESSION (URL-encoded): a C variable, an array element, "
                            "*(TYPE *)ADDRESS or a register ($a0)");
    const std::string expr(trim(it->second));
    if (expr.empty()) return error_response(400, "expr= is empty: give the expression to ask about");
    if (std::any_of(expr.begin(), expr.end(), [](char c) { return std::iscntrl(uint8_t(c)); }))
      return error_response(400, "expr= holds a control character: one expression on one line");
    if (expr[0] == '-')
      return error_response(400, "expr=" + expr.substr(0, 200) +
                                     ": an expression, not an option (this answers `origin EXPR`; -goto and -depth "
                                     "are the prompt's)");
    json header;
    std::string note;
    if (auto failed = go(q, &header, &note)) return *failed;
    o_.rec->dbg->execute("origin " + expr);
    const std::vector<json> events = take_events(o_.events);
    // The debugger refused the question: the expression is no place (or names nothing there), 400;
    // or the recording's history could not be read, 500.
    for (const json& e : events)
      if (e.value("event", "") == "error") {
        const std::string why = e.value("message", "origin: no answer");
        return error_response(why.find("could not read the history") != std::string::npos ? 500 : 400, why);
      }
    auto answer = find_event(events, "expression");
    if (!answer) return error_response(500, "the debugger answered no origin");
    if (header.contains("core"))
      (*answer)["focus"] = {{"core", header["core"]}, {"warp", header["warp"]}, {"lane", header["lane"]}};
    if (!note.empty()) (*answer)["note"] = note;
    return Response{200, "application/json", answer->dump(-1, ' ', false, json::error_handler_t::replace) + "\n"};
  }

  ViewRecording& o_;
  const std::string& page_;
};

// Where a request's headers end in what a client sent (after the blank line; a bare LF is taken
// for CRLF, as most servers do), or npos while they have not.
size_t headers_end(const std::string& in) {
  const size_t crlf = in.find("\r\n\r\n"), lf = in.find("\n\n");
  if (crlf == std::string::npos && lf == std::string::npos) return std::string::npos;
  return std::min(crlf == std::string::npos ? SIZE_MAX : crlf + 4, lf == std::string::npos ? SIZE_MAX : lf + 2);
}

void make_blocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK); }

void send_all(int fd, const std::string& s) {
  for (size_t at = 0; at < s.size();) {
    const ssize_t n = send(fd, s.data() + at, s.size() - at, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client went away: nothing to tell it
    at += size_t(n);
  }
}

void respond(int fd, const Response& r) {
  make_blocking(fd);  // the answer is sent whole
  std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " + status_text(r.status) +
                     "\r\nContent-Type: " + r.type + "\r\nContent-Length: " + std::to_string(r.body.size()) +
                     "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n";
  send_all(fd, head + r.body);
}

// Closes after the client has seen the answer: what it still sends (a request cut short for its
// size) is read and dropped first, as closing with unread input would reset the connection and
// could lose the answer.
void drain_and_close(int fd) {
  make_blocking(fd);
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
  act.sa_handler = on_stop_signal;  // no SA_RESTART: poll() returns EINTR
  struct sigaction old_int, old_term;
  sigaction(SIGINT, &act, &old_int);
  sigaction(SIGTERM, &act, &old_term);
  std::fprintf(stderr, "vxreplay: serving %s at http://%s/ (Ctrl-C ends it)\n", o.dir.c_str(), l->where.c_str());
  std::fflush(stderr);
  Server server(o, page);
  uint64_t served = 0;
  // Connections being read, each until its headers end (then answered, one at a time: the debugger
  // is one), it closes, or its time runs out; a client that sends nothing holds no one up.
  struct Pending {
    int fd;
    std::string in;
    std::chrono::steady_clock::time_point deadline;
  };
  std::vector<Pending> pending;
  while (!stop_requested) {
    std::vector<pollfd> fds{{l->fd, POLLIN, 0}};
    for (const Pending& p : pending) fds.push_back({p.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 500) < 0 && errno != EINTR) {
      std::fprintf(stderr, "vxreplay: --serve: poll: %s\n", std::strerror(errno));
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (fds[0].revents & POLLIN) {
      const int client = accept4(l->fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (client >= 0 && pending.size() >= kMaxPending) {
        respond(client, error_response(503, "too many connections waiting: try again"));
        close(client);
      } else if (client >= 0) {
        pending.push_back({client, {}, now + std::chrono::seconds(5)});
      }
    }
    // The connections polled (one accepted just now waits for the next poll).
    const size_t polled = fds.size() - 1;
    for (size_t i = 0; i < polled && i < pending.size();) {
      Pending& p = pending[i];
      bool done = false;  // answered, or dropped
      if (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[4096];
        const ssize_t n = recv(p.fd, buf, sizeof buf, 0);
        if (n > 0) p.in.append(buf, size_t(n));
        const size_t end = headers_end(p.in);
        if (end != std::string::npos && end <= kMaxRequest) {
          respond(p.fd, server.handle(p.in.substr(0, end)));
          ++served;
          done = true;
        } else if (p.in.size() > kMaxRequest) {
          respond(p.fd, error_response(413, "the request's headers do not end within its first " +
                                                std::to_string(kMaxRequest) + " bytes"));
          ++served;
          drain_and_close(p.fd);  // what it still sends is read first, or closing would reset the answer
          p.fd = -1;
          done = true;
        } else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
          done = true;  // closed before its request was whole: nothing to answer
        }
      }
      if (!done && std::chrono::steady_clock::now() > p.deadline) done = true;  // sent nothing whole in time
      if (done) {
        if (p.fd >= 0) close(p.fd);
        pending.erase(pending.begin() + long(i));
        // fds no longer lines up with pending past i: the rest wait for the next poll
        break;
      }
      ++i;
    }
  }
  for (const Pending& p : pending) close(p.fd);
  close(l->fd);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  std::fprintf(stderr, "vxreplay: served %llu requests\n", static_cast<unsigned long long>(served));
  return kExitOk;
}

}  // namespace vx::cli
