#include "cli/gdb_server.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "cli/command.hpp"
#include "cli/debugger.hpp"
#include "cli/listen.hpp"
#include "cli/output.hpp"
#include "device/config.hpp"
#include "device/isa.hpp"
#include "device/registers.hpp"

namespace vx::cli {

namespace {

using engine::StopEvent;
using engine::StopReason;

// gdb's own signal numbers (the protocol's, not the host's): include/gdb/signals.def.
enum GdbSignal : int {
  kSigInt = 2,
  kSigIll = 4,
  kSigTrap = 5,
  kSigAbrt = 6,
  kSigBus = 10,
  kSigSegv = 11,
  kSigSys = 12,
  kSigKill = 9,
  kSigXcpu = 24,
};

int exception_signal(Cause c) {
  switch (c) {
    case Cause::IllegalInstruction:
    case Cause::IpdomOverflow:
    case Cause::IpdomUnderflow:
    case Cause::BarrierZeroCount:
    case Cause::BadBarrier:
    case Cause::DivergentBranch:  // --strict-branches: a SIMT control-flow error, like the IPDOM faults
      return kSigIll;
    case Cause::MisalignedFetch:
    case Cause::MisalignedLoad:
    case Cause::MisalignedStore: return kSigBus;
    case Cause::FetchFault:
    case Cause::LoadFault:
    case Cause::StoreFault: return kSigSegv;
    case Cause::Breakpoint: return kSigTrap;
    case Cause::EnvironmentCall: return kSigSys;
    case Cause::Deadlock:
    case Cause::Watchdog: return kSigXcpu;
    case Cause::RestoreFailed:
    case Cause::None: return kSigAbrt;
  }
  return kSigAbrt;
}

std::string hex2(int v) {
  char b[4];
  std::snprintf(b, sizeof b, "%02x", v & 0xff);
  return b;
}

std::string hexn(uint64_t v) {
  char b[20];
  std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
  return b;
}

// Registers: the cpu feature (0..32: x0..x31, pc), the fpu feature (33..64: f0..f31), then the CSRs
// of device/registers.hpp's debug_csrs() in its order (fflags, frm, fcsr in the fpu feature).
constexpr uint32_t kRegPc = 32, kRegF0 = 33, kRegCsr0 = 65;
uint32_t reg_count() { return kRegCsr0 + uint32_t(debug_csrs().size()); }
constexpr uint32_t kMaxRead = 1u << 16;

std::string make_target_xml() {
  std::string x =
      "<?xml version=\"1.0\"?>\n<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n<target version=\"1.0\">\n"
      "<architecture>riscv:rv32</architecture>\n<feature name=\"org.gnu.gdb.riscv.cpu\">\n";
  for (unsigned i = 0; i < 32; ++i) {
    const char* type = i == 1 ? "code_ptr" : i == 2 || i == 8 ? "data_ptr" : "int";
    x += std::string("  <reg name=\"") + (i == 8 ? "fp" : xreg_name(i)) + "\" bitsize=\"32\" type=\"" + type +
         "\" regnum=\"" + std::to_string(i) + "\"/>\n";
  }
  x += "  <reg name=\"pc\" bitsize=\"32\" type=\"code_ptr\" regnum=\"32\"/>\n</feature>\n"
       "<feature name=\"org.gnu.gdb.riscv.fpu\">\n";
  for (unsigned i = 0; i < 32; ++i)
    x += std::string("  <reg name=\"") + freg_name(i) + "\" bitsize=\"32\" type=\"ieee_single\" regnum=\"" +
         std::to_string(kRegF0 + i) + "\"/>\n";
  std::string csr;
  for (uint32_t i = 0; i < debug_csrs().size(); ++i) {
    const DebugCsr& c = debug_csrs()[i];
    std::string line = std::string("  <reg name=\"") + c.gdb_name + "\" bitsize=\"32\" type=\"int\" regnum=\"" +
                       std::to_string(kRegCsr0 + i) + "\" group=\"" + (c.fp ? "float" : "csr") + "\"/>\n";
    if (c.fp)
      x += line;
    else
      csr += line;
  }
  x += "</feature>\n<feature name=\"org.gnu.gdb.riscv.csr\">\n" + csr + "</feature>\n</target>\n";
  return x;
}

// --- The capture sink for `monitor` -----------------------------------------------------------------

class CaptureSink final : public Sink {
 public:
  void start(const StartView&) override {}
  void console(const std::string& line) override { text_ += line + "\n"; }
  void output(const std::string&, const std::string& text, const nlohmann::json&) override {
    text_ += text;
    if (!text.empty() && text.back() != '\n') text_ += "\n";
  }
  void error(const std::string&, const std::string& message) override { text_ += message + "\n"; }
  void stop(const StopView& v) override { text_ += HumanSink::format_stop(v, false); }
  void exit(const ExitView&) override {}
  bool json() const override { return false; }
  std::string take() { return std::exchange(text_, {}); }

 private:
  std::string text_;
};

// Commands that move the kernel or change breakpoints belong to gdb's own commands: through
// `monitor` they would leave gdb's view of the threads and breakpoints wrong.
const char* refused_monitor_command(const std::string& name) {
  static const char* kGdbOwn[][2] = {{"continue", "continue"},
                                     {"stepi", "stepi"},
                                     {"nexti", "nexti"},
                                     {"step", "step"},
                                     {"next", "next"},
                                     {"finish", "finish"},
                                     {"break", "break"},
                                     {"tbreak", "tbreak"},
                                     {"delete", "delete"},
                                     {"disable", "disable"},
                                     {"enable", "enable"},
                                     {"condition", "condition"},
                                     {"watch", "watch"},
                                     {"rwatch", "rwatch"},
                                     {"awatch", "awatch"},
                                     {"quit", "detach"},
                                     {"reverse-stepi", "reverse-stepi"},
                                     {"reverse-nexti", "reverse-nexti"},
                                     {"reverse-step", "reverse-step"},
                                     {"reverse-next", "reverse-next"},
                                     {"reverse-finish", "reverse-finish"},
                                     {"reverse-continue", "reverse-continue"}};
  for (const auto& row : kGdbOwn)
    if (name == row[0]) return row[1];
  return nullptr;
}

}  // namespace

std::unique_ptr<Sink> make_capture_sink() { return std::make_unique<CaptureSink>(); }
std::string take_captured(Sink& sink) { return static_cast<CaptureSink&>(sink).take(); }

// --- Endpoint and connection ----------------------------------------------------------------------

Result<GdbEndpoint> parse_gdb_endpoint(const std::string& text) {
  GdbEndpoint ep;
  if (text == "-") {
    ep.stdio = true;
    return ep;
  }
  auto hp = parse_host_port(text, "--gdb");
  if (!hp) return make_error(hp.error().message + ", or - for stdin/stdout");
  ep.host = hp->host;
  ep.port = hp->port;
  return ep;
}

Result<GdbConnection> open_gdb_connection(const GdbEndpoint& ep, const std::string& kernel) {
  if (ep.stdio) {
    std::fprintf(stderr, "vxreplay: serving gdb on stdin/stdout (in gdb: target remote | vxreplay ... --gdb -)\n");
    return GdbConnection{STDIN_FILENO, STDOUT_FILENO, false};
  }
  if (!is_loopback_host(ep.host) && !ep.allow_remote)
    return make_error("--gdb " + ep.host +
                      ": not a loopback address: whoever reaches it controls the session, reads "
                      "and writes device memory; add --gdb-remote to listen there anyway (docs/gdb.md, \"Trust\")");
  auto l = listen_tcp(HostPort{ep.host, ep.port}, "--gdb", 1);
  if (!l) return l.error();
  const int fd = l->fd;
  const std::string& where = l->where;
  if (!is_loopback_host(ep.host))
    std::fprintf(stderr,
                 "vxreplay: warning: listening on %s, not a loopback address: anyone who can reach it "
                 "controls this session\n",
                 where.c_str());
  std::fprintf(stderr,
               "vxreplay: gdb server listening on %s\nvxreplay: in gdb: gdb-multiarch %s -ex 'target remote %s'\n",
               where.c_str(), kernel.c_str(), where.c_str());
  int client = -1;
  do client = accept(fd, nullptr, nullptr);
  while (client < 0 && errno == EINTR);
  const int accept_errno = errno;
  close(fd);
  if (client < 0) return make_error(std::string("--gdb: accept: ") + std::strerror(accept_errno));
  int one = 1;
  setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return GdbConnection{client, client, true};
}

// --- The server ------------------------------------------------------------------------------------------

GdbServer::GdbServer(engine::Session& session, const engine::Symbols* symbols, Debugger& dbg, Sink& capture,
                     GdbConnection conn, std::string exec_file)
    : s_(session),
      insp_(session, symbols, nullptr, LaunchGridArgs{}),
      timeline_(session, symbols),
      dbg_(dbg),
      capture_(capture),
      conn_(conn),
      target_xml_(make_target_xml()),
      exec_file_(std::move(exec_file)) {}

GdbServer::~GdbServer() {
  if (conn_.owned) close(conn_.in);
}

void GdbServer::send(const std::string& payload, bool binary) {
  last_sent_ = gdb::frame_reply(payload, binary);
  size_t done = 0;
  while (done < last_sent_.size()) {
    ssize_t n = write(conn_.out, last_sent_.data() + done, last_sent_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      done_ = true;  // the client is gone
      return;
    }
    done += size_t(n);
  }
}

void GdbServer::send_output(const std::string& text) {
  // Console packets in pieces, so that no packet is very long.
  for (size_t i = 0; i < text.size(); i += 1024) send("O" + gdb::to_hex(std::string_view(text).substr(i, 1024)));
}

bool GdbServer::read_more() {
  char buf[4096];
  ssize_t n;
  do n = read(conn_.in, buf, sizeof buf);
  while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  reader_.feed(std::string_view(buf, size_t(n)), &events_);
  return true;
}

// While the kernel runs: the interrupt byte stops it at the next slice; other bytes wait their turn.
void GdbServer::poll_input() {
  pollfd p{conn_.in, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return;
  if (!read_more()) {
    s_.interrupt();  // the client is gone: stop, and end when the run returns
    done_ = true;
    return;
  }
  for (size_t i = next_event_; i < events_.size(); ++i)
    if (events_[i].kind == gdb::PacketEvent::Interrupt) {
      s_.interrupt();
      events_.erase(events_.begin() + long(i));
      --i;
    }
}

void GdbServer::send_console() {
  std::ostringstream os;
  console_.feed(s_.take_console(), os);
  if (!os.str().empty()) send_output(os.str());
}

// --- Threads -----------------------------------------------------------------------------------------

int64_t GdbServer::thread_id(const Lane& l) const { return debug::thread_id(s_.config(), l); }

// A stop with nothing resident (the start of a launch's history, before its first CTA is
// dispatched): gdb needs a thread to stand at a stop, so lane 0 of core 0's warp 0 stands for the
// launch, with its registers zero and its pc the launch's start (rr shows the process at exec).
bool GdbServer::nothing_resident() const {
  return s_.stopped() && debug::resident_lanes(s_.context(), s_.config().threads).empty();
}

std::vector<Lane> GdbServer::resident() const {
  if (!s_.stopped()) return {};
  if (nothing_resident()) return {Lane{}};
  return debug::resident_lanes(s_.context(), s_.config().threads);
}

std::optional<Lane> GdbServer::lane_of(int64_t tid) const {
  if (!s_.stopped()) return std::nullopt;
  if (nothing_resident()) return tid == thread_id(Lane{}) ? std::optional<Lane>(Lane{}) : std::nullopt;
  auto l = debug::lane_of_thread(s_.config(), tid);
  if (!l || !debug::is_resident(s_.context(), s_.config().threads, *l)) return std::nullopt;
  return l;
}

std::optional<Lane> GdbServer::selected(char op) const {
  int64_t t = op == 'g' ? g_thread_ : c_thread_;
  if (t > 0)
    if (auto l = lane_of(t)) return l;
  if (stop_lane_ && lane_of(thread_id(*stop_lane_))) return stop_lane_;
  auto all = resident();
  if (!all.empty()) return all.front();
  return std::nullopt;
}

// gdb's register numbers, read through the debugger core (the prompt reads the same).
std::optional<uint32_t> GdbServer::register_value(const Lane& l, uint32_t reg) const {
  if (!s_.stopped()) return std::nullopt;
  if (nothing_resident()) {
    if (reg == kRegPc) return s_.context().launch.start_pc;
    return reg < reg_count() ? std::optional<uint32_t>(0u) : std::nullopt;
  }
  if (reg < 32) return insp_.reg(l, reg);
  if (reg == kRegPc) {
    const WarpState* w = insp_.warp(l);
    return w ? std::optional<uint32_t>(w->pc) : std::nullopt;
  }
  if (reg < kRegCsr0) return insp_.reg(l, 32 + (reg - kRegF0));
  if (reg >= reg_count()) return std::nullopt;
  return insp_.csr(l, debug_csrs()[reg - kRegCsr0].number);
}

std::string GdbServer::extra_info(const Lane& l) const {
  if (nothing_resident())
    return "launch " + std::to_string(stop_.launch) + " before its first CTA: no warp is resident yet";
  const DeviceContext& ctx = s_.context();
  const WarpState& w = ctx.cores.at(l.core).warps.at(l.slot);
  const std::array<uint32_t, 3> t = insp_.thread_idx(l);
  std::string state = w.wait == WarpWait::Barrier || w.wait == WarpWait::BarrierWait ? "at a barrier"
                      : (w.tmask >> l.lane & 1)                                      ? "active"
                                                                                     : "inactive";
  return "cta " + std::to_string(w.block_id[0]) + "," + std::to_string(w.block_id[1]) + "," +
         std::to_string(w.block_id[2]) + " thread " + std::to_string(t[0]) + "," + std::to_string(t[1]) + "," +
         std::to_string(t[2]) + " core " + std::to_string(l.core) + " warp " + std::to_string(l.slot) + " lane " +
         std::to_string(l.lane) + " " + state;
}

// --- Stops -----------------------------------------------------------------------------------------------

void GdbServer::settle(const StopEvent& ev, std::optional<Lane> stepped) {
  // The lane gdb follows: the one it stepped, else the one it selected, else the last stop's.
  std::optional<Lane> preferred = stepped;
  if (!preferred) preferred = followed_;
  if (!preferred) preferred = stop_lane_;
  if (auto l = lane_of(c_thread_ > 0 ? c_thread_ : g_thread_); !preferred && l) preferred = l;
  stop_ = ev;
  stop_lane_.reset();
  // The one rule for the lane a stop is about (debug/lane.hpp), the prompt's too.
  if (s_.stopped()) stop_lane_ = debug::stop_lane(ev, s_.context(), s_.config().threads, preferred);
  if (!stop_lane_ && nothing_resident()) stop_lane_ = Lane{};
  // gdb selects the stop's thread: Hg/Hc follow it until gdb sets them again.
  g_thread_ = c_thread_ = 0;
}

std::string GdbServer::stop_reply() const {
  const StopEvent& ev = stop_;
  if (ev.reason == StopReason::Exited) return "W" + hex2(int(ev.exit_code & 0xff));
  if (ev.reason == StopReason::Killed) return "X" + hex2(kSigKill);
  if (!s_.stopped()) return "W00";  // the end of a recording with nothing resident
  int sig = kSigTrap;
  std::string why;
  switch (ev.reason) {
    case StopReason::Breakpoint: why = "swbreak:;"; break;
    case StopReason::Step:
      if (stop_lane_ && breakpoints_.count(s_.context().cores.at(stop_lane_->core).warps.at(stop_lane_->slot).pc))
        why = "swbreak:;";
      break;
    case StopReason::Exception: sig = exception_signal(ev.exception.cause); break;
    case StopReason::Assertion: sig = kSigAbrt; break;
    case StopReason::Watchdog: sig = kSigXcpu; break;
    case StopReason::Interrupt: sig = kSigInt; break;
    case StopReason::HistoryStart: why = "replaylog:begin;"; break;
    case StopReason::EndOfRecording: why = "replaylog:end;"; break;
    case StopReason::Watchpoint:
      if (!ev.watches.empty()) {
        const engine::WatchEvent& we = ev.watches[0];
        for (const Watch& w : watches_)
          if (w.engine == we.watchpoint) {
            why = std::string(w.type == 2 ? "watch" : w.type == 3 ? "rwatch" : "awatch") + ":" + hexn(w.addr) + ";";
            break;
          }
      }
      break;
    default: break;
  }
  std::string reply = "T" + hex2(sig) + why;
  if (stop_lane_) reply += "thread:" + hexn(uint64_t(thread_id(*stop_lane_))) + ";";
  return reply;
}

void GdbServer::run(Move m, std::optional<Lane> lane) {
  if (stop_.reason == StopReason::Exited || stop_.reason == StopReason::Killed || !s_.stopped()) {
    send(stop_reply());
    return;
  }
  if ((m == Move::Step || m == Move::ThreadToBreakpoint || m == Move::ReverseStep) && !lane) {
    send("E01");
    return;
  }
  Result<StopEvent> ev = make_error("");
  s_.set_progress([this](uint32_t, uint64_t) {
    poll_input();
    send_console();
  });
  switch (m) {
    case Move::Continue: ev = s_.resume(); break;
    case Move::Step: ev = s_.step(engine::WarpId{lane->core, lane->slot}, 1u << lane->lane, nullptr); break;
    case Move::ThreadToBreakpoint: {
      // The other warps run as the engine's step lets them, and do not stop at breakpoints: gdb
      // expects a stop of this thread only.
      std::vector<int> disabled;
      for (const auto& [addr, id] : breakpoints_)
        if (s_.enable_breakpoint(id, false)) disabled.push_back(id);
      std::map<uint32_t, int> targets = breakpoints_;
      engine::StepPolicy policy = [targets](uint32_t pc, uint32_t) -> std::optional<std::pair<uint32_t, uint32_t>> {
        if (targets.count(pc)) return std::nullopt;
        return std::pair<uint32_t, uint32_t>{pc, pc};  // an empty range: the next instruction asks again
      };
      ev = s_.step(engine::WarpId{lane->core, lane->slot}, 1u << lane->lane, policy);
      for (int id : disabled) (void)s_.enable_breakpoint(id, true);
      break;
    }
    case Move::ReverseStep: ev = timeline_.reverse_stepi(engine::WarpId{lane->core, lane->slot}, lane->lane); break;
    case Move::ReverseContinue: ev = timeline_.reverse_continue(nullptr); break;
  }
  s_.set_progress(nullptr);
  send_console();
  if (!ev) {
    send_output("vxreplay: " + ev.error().message + "\n");
    // The session is where it was (or killed, when the engine says so).
    if (s_.last_stop().reason == StopReason::Killed && !s_.stopped()) settle(s_.last_stop(), std::nullopt);
    send(stop_reply());
    return;
  }
  settle(*ev, lane);
  send(stop_reply());
}

// --- The loop ----------------------------------------------------------------------------------------------

int GdbServer::serve(const GdbStart& start, const std::string& store_dir) {
  // A client that goes away must not kill us with SIGPIPE; on stdin/stdout, Ctrl-C reaches us as
  // the protocol's interrupt byte, not as a signal.
  struct sigaction ign {
  }, old_pipe{}, old_int{};
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &old_pipe);
  if (!conn_.owned) sigaction(SIGINT, &ign, &old_int);

  // The first stop gdb sees.
  Result<StopEvent> first = make_error("");
  if (start.at_first_mark) {
    auto marks = s_.marks();
    first = marks && !marks->empty() ? timeline_.goto_mark(marks->front().number) : timeline_.goto_start();
  } else if (start.entry_pc) {
    auto bp = s_.add_breakpoint(start.entry_pc);
    first = s_.resume();
    if (bp) (void)s_.remove_breakpoint(*bp);
  } else {
    first = s_.run_to(1);
  }
  send_console();
  if (first)
    settle(*first, std::nullopt);
  else {
    std::fprintf(stderr, "vxreplay: cannot start the session: %s\n", first.error().message.c_str());
    settle(s_.last_stop(), std::nullopt);
  }

  while (!done_) {
    if (next_event_ == events_.size()) {
      events_.clear();
      next_event_ = 0;
      if (!read_more()) break;
      continue;
    }
    gdb::PacketEvent e = std::move(events_[next_event_++]);
    switch (e.kind) {
      case gdb::PacketEvent::Ack:
      case gdb::PacketEvent::Interrupt:  // nothing runs: nothing to stop
        break;
      case gdb::PacketEvent::Nack:
        if (!no_ack_ && !last_sent_.empty()) {
          const std::string again = last_sent_;
          if (write(conn_.out, again.data(), again.size()) < 0) done_ = true;
        }
        break;
      case gdb::PacketEvent::BadPacket:
        // Ack mode asks for it again ('-'); in no-ack mode there is no '-', so the packet gets an
        // error reply saying what was wrong (every packet is answered, docs/gdb.md "Trust").
        if (!no_ack_) {
          if (write(conn_.out, "-", 1) < 0) done_ = true;
        } else {
          send("E." + gdb::reply_text(e.payload));
        }
        break;
      case gdb::PacketEvent::Packet:
        if (!no_ack_ && write(conn_.out, "+", 1) < 0) done_ = true;
        std::visit([this](const auto& r) { handle(r); }, gdb::parse_request(e.payload));
        break;
    }
  }
  sigaction(SIGPIPE, &old_pipe, nullptr);
  if (!conn_.owned) sigaction(SIGINT, &old_int, nullptr);
  dbg_.adopt_stop(stop_, stop_lane_);
  int status = dbg_.finish_session(store_dir);
  (void)take_captured(capture_);
  return status;
}

int serve_gdb(engine::Session& session, const engine::Symbols* symbols, const GridLaunch& launch,
              const GdbEndpoint& endpoint, const std::string& kernel, const std::string& store_dir,
              const GdbStart& start, const engine::Variables* variables) {
  std::unique_ptr<Sink> capture = make_capture_sink();
  Debugger dbg(session, symbols, launch, *capture);
  if (variables) dbg.set_variables(variables);
  // The client reads no file here unless the server was started to allow it (docs/gdb.md, "Trust").
  dbg.set_file_access(
      endpoint.allow_files
          ? ""
          : "the GDB server does not read files for its client (start vxreplay with --gdb-allow-files to allow it)");
  // gdb decides about its own breakpoints (conditions included): every hit stops.
  session.set_breakpoint_filter(nullptr);
  auto conn = open_gdb_connection(endpoint, kernel);
  if (!conn) {
    std::fprintf(stderr, "vxreplay: %s\n", conn.error().message.c_str());
    return 64;  // docs/cli.md: a usage error (the address cannot be used)
  }
  std::error_code ec;
  std::string exec_file = std::filesystem::absolute(kernel, ec).string();
  if (ec || !symbols) exec_file.clear();
  GdbServer server(session, symbols, dbg, *capture, *conn, exec_file);
  return server.serve(start, store_dir);
}

// --- Handlers --------------------------------------------------------------------------------------------

void GdbServer::handle(const gdb::QSupported&) {
  std::string r = "PacketSize=4000;QStartNoAckMode+;swbreak+;qXfer:features:read+;vContSupported+";
  if (!exec_file_.empty()) r += ";qXfer:exec-file:read+";
  if (s_.store() && !s_.info().live) r += ";ReverseStep+;ReverseContinue+";
  send(r);
}

void GdbServer::handle(const gdb::StartNoAck&) {
  send("OK");
  no_ack_ = true;
}

void GdbServer::handle(const gdb::HaltReason&) { send(stop_reply()); }

void GdbServer::handle(const gdb::ReadRegisters&) {
  auto l = selected('g');
  if (!l) return send("E01");
  std::string r;
  for (uint32_t i = 0; i <= kRegPc; ++i) r += gdb::hex_u32_le(*register_value(*l, i));
  send(r);
}

// gdb's register numbers (the target description) to the engine's DWARF numbers: x0..x31 are 0..31,
// f0..f31 32..63. The engine writes only those (Session::write_register): pc and the CSRs are
// refused.
static std::optional<unsigned> dwarf_of(uint32_t reg) {
  if (reg < 32) return reg;
  if (reg >= kRegF0 && reg < kRegCsr0) return reg - kRegF0 + 32;
  return std::nullopt;
}

static uint32_t le_u32(std::string_view b) {
  return uint32_t(uint8_t(b[0])) | uint32_t(uint8_t(b[1])) << 8 | uint32_t(uint8_t(b[2])) << 16 |
         uint32_t(uint8_t(b[3])) << 24;
}

// A refused write is E01 alone: gdb shows "remote failure reply 'E01'" and the session goes on.
// The engine's reason goes to stderr, as an 'O' packet is not allowed outside a resume.
void GdbServer::refuse_write(const std::string& why) {
  std::fprintf(stderr, "vxreplay: gdb write refused: %s\n", why.c_str());
  send("E01");
}

void GdbServer::handle(const gdb::WriteRegisters& g) {
  auto l = selected('g');
  if (!l) return send("E01");
  // The layout of 'g': x0..x31 then pc, 4 bytes each. Only the registers that changed are written,
  // all checked first so that a refused one leaves the others as they were.
  if (g.bytes.size() % 4 != 0 || g.bytes.size() > 4 * (kRegPc + 1)) return send("E01");
  std::vector<std::pair<unsigned, uint32_t>> writes;
  for (uint32_t i = 0; i < g.bytes.size() / 4; ++i) {
    const uint32_t v = le_u32(std::string_view(g.bytes).substr(4 * i, 4));
    auto now = register_value(*l, i);
    if (!now) return send("E01");
    if (v == *now) continue;
    auto d = dwarf_of(i);
    if (!d) return refuse_write("pc cannot be written (only x1..x31 and f0..f31 can)");
    if (i == 0) return refuse_write("x0 is always zero");
    writes.emplace_back(*d, v);
  }
  for (const auto& [d, v] : writes)
    if (auto r = s_.write_register(engine::WarpId{l->core, l->slot}, l->lane, d, v); !r)
      return refuse_write(r.error().message);
  send("OK");
}

void GdbServer::handle(const gdb::WriteRegister& p) {
  auto l = selected('g');
  if (!l) return send("E01");
  if (p.bytes.size() != 4) return send("E01");
  auto d = dwarf_of(p.reg);
  if (!d) {
    const std::string name = p.reg == kRegPc ? std::string("pc")
                             : p.reg >= kRegCsr0 && p.reg < reg_count()
                                 ? std::string(debug_csrs()[p.reg - kRegCsr0].gdb_name)
                                 : "register " + std::to_string(p.reg);
    return refuse_write(name + " cannot be written (only x1..x31 and f0..f31 can)");
  }
  if (auto r = s_.write_register(engine::WarpId{l->core, l->slot}, l->lane, *d, le_u32(p.bytes)); !r)
    return refuse_write(r.error().message);
  send("OK");
}

void GdbServer::handle(const gdb::ReadRegister& r) {
  auto l = selected('g');
  if (!l) return send("E01");
  auto v = register_value(*l, r.reg);
  if (!v) return send("E00");
  send(gdb::hex_u32_le(*v));
}

void GdbServer::handle(const gdb::ReadMemory& m) {
  if (m.len == 0) return send("");
  const uint32_t len = std::min(m.len, kMaxRead);
  const uint64_t end = uint64_t(m.addr) + len;
  if (end > (1ull << 32)) return send("E14");
  if (end > memmap::kLocalMemBase) {
    // The selected thread's core's local memory.
    auto l = selected('g');
    if (m.addr < memmap::kLocalMemBase || !l) return send("E14");
    const auto& lm = s_.context().cores.at(l->core).local_mem;
    const uint64_t off = m.addr - memmap::kLocalMemBase;
    if (off >= lm.size()) return send("E14");
    const uint64_t n = std::min<uint64_t>(len, lm.size() - off);
    return send(gdb::to_hex(std::string_view(reinterpret_cast<const char*>(lm.data()) + off, n)));
  }
  auto bytes = s_.read_memory(m.addr, len);
  if (bytes) return send(gdb::to_hex(*bytes));
  // A read that runs into unmapped memory: what can be read, up to it (the protocol allows a short reply).
  uint32_t ok = 0;
  std::string out;
  while (ok < len) {
    const uint32_t chunk = std::min<uint32_t>(len - ok, 4096 - ((m.addr + ok) & 4095));
    auto b = s_.read_memory(m.addr + ok, chunk);
    if (!b) break;
    out += std::string(b->begin(), b->end());
    ok += chunk;
  }
  if (out.empty()) return send("E14");
  send(gdb::to_hex(out));
}

void GdbServer::handle(const gdb::WriteMemory& m) {
  // gdb probes 'X' with an empty write: OK says binary writes are understood.
  if (m.bytes.empty()) return send("OK");
  if (uint64_t(m.addr) + m.bytes.size() > (1ull << 32)) return send("E14");
  // In the selected thread's view: local memory is its core's.
  auto l = selected('g');
  if (!l && uint64_t(m.addr) + m.bytes.size() > memmap::kLocalMemBase) return send("E14");
  const engine::WarpId warp = l ? engine::WarpId{l->core, l->slot} : engine::WarpId{0, 0};
  if (auto r = s_.write_memory(warp, m.addr, std::vector<uint8_t>(m.bytes.begin(), m.bytes.end())); !r)
    return refuse_write(r.error().message);
  send("OK");
}

void GdbServer::handle(const gdb::ThreadInfoFirst&) {
  auto all = resident();
  if (all.empty()) return send("l");
  std::string r = "m";
  for (size_t i = 0; i < all.size(); ++i) r += (i ? "," : "") + hexn(uint64_t(thread_id(all[i])));
  send(r);
}

void GdbServer::handle(const gdb::ThreadInfoNext&) { send("l"); }

void GdbServer::handle(const gdb::CurrentThread&) {
  auto l = selected('g');
  if (!l) return send("QC0");
  send("QC" + hexn(uint64_t(thread_id(*l))));
}

void GdbServer::handle(const gdb::SetThread& h) {
  if (h.thread.id > 0 && !lane_of(h.thread.id)) return send("E01");
  (h.op == 'g' ? g_thread_ : c_thread_) = h.thread.id;
  if (h.thread.id > 0) followed_ = lane_of(h.thread.id);
  send("OK");
}

void GdbServer::handle(const gdb::ThreadAlive& t) { send(lane_of(t.thread.id) ? "OK" : "E01"); }

void GdbServer::handle(const gdb::ThreadExtraInfo& t) {
  auto l = lane_of(t.thread.id);
  if (!l) return send("E01");
  send(gdb::to_hex(extra_info(*l)));
}

void GdbServer::handle(const gdb::VContQuery&) { send("vCont;c;C;s;S"); }

void GdbServer::handle(const gdb::VCont& v) {
  // A step action (for one thread) steps that lane's warp; the others run as the engine's step lets
  // them. Otherwise everything continues.
  for (const gdb::VContAction& a : v.actions) {
    if (a.action != 's' && a.action != 'r') continue;
    std::optional<Lane> l;
    if (a.thread && a.thread->id > 0)
      l = lane_of(a.thread->id);
    else
      l = selected('c');
    if (!l) return send("E01");
    return run(Move::Step, l);
  }
  // One thread resumed alone, the others left stopped: gdb's software single step (or scheduler locking).
  if (v.actions.size() == 1 && v.actions[0].action == 'c' && v.actions[0].thread && v.actions[0].thread->id > 0) {
    auto l = lane_of(v.actions[0].thread->id);
    if (!l) return send("E01");
    return run(breakpoints_.empty() ? Move::Step : Move::ThreadToBreakpoint, l);
  }
  for (const gdb::VContAction& a : v.actions)
    if (a.action == 'c') return run(Move::Continue, std::nullopt);
  send("E01");
}

void GdbServer::handle(const gdb::Continue&) { run(Move::Continue, std::nullopt); }
void GdbServer::handle(const gdb::Step&) { run(Move::Step, selected('c')); }

void GdbServer::handle(const gdb::ReverseStep&) {
  if (!s_.store()) return send("E01");
  run(Move::ReverseStep, selected('c'));
}

void GdbServer::handle(const gdb::ReverseContinue&) {
  if (!s_.store()) return send("E01");
  run(Move::ReverseContinue, std::nullopt);
}

void GdbServer::handle(const gdb::Breakpoint& b) {
  if (b.type <= 1) {
    if (b.insert) {
      if (breakpoints_.count(b.addr)) return send("OK");
      auto id = s_.add_breakpoint(b.addr);
      if (!id) return send("E01");
      breakpoints_[b.addr] = *id;
    } else if (auto it = breakpoints_.find(b.addr); it != breakpoints_.end()) {
      (void)s_.remove_breakpoint(it->second);
      breakpoints_.erase(it);
    }
    return send("OK");
  }
  if (b.insert) {
    engine::WatchSpec spec;
    spec.addr = b.addr;
    spec.len = b.kind;
    spec.kind = uint8_t(b.type == 2 ? kWatchWrite : b.type == 3 ? kWatchRead : kWatchRead | kWatchWrite);
    if (b.addr >= memmap::kLocalMemBase) {
      spec.local = true;
      if (auto l = selected('g')) spec.core = int32_t(l->core);
    }
    auto id = s_.add_watchpoint(spec);
    if (!id) return send("E01");
    watches_.push_back(Watch{b.type, b.addr, b.kind, *id});
    return send("OK");
  }
  for (auto it = watches_.begin(); it != watches_.end(); ++it)
    if (it->type == b.type && it->addr == b.addr && it->len == b.kind) {
      (void)s_.remove_watchpoint(it->engine);
      watches_.erase(it);
      break;
    }
  send("OK");
}

void GdbServer::handle(const gdb::Monitor& m) {
  auto cl = parse_command_line(m.command);
  if (cl && !cl->name.empty())
    if (const char* own = refused_monitor_command(cl->name)) {
      send_output("monitor " + cl->name + ": use gdb's own \"" + own +
                  "\" (gdb keeps the threads and breakpoints it shows in step with it)\n");
      return send("OK");
    }
  dbg_.adopt_stop(stop_, selected('g'));
  const engine::TimePoint before = s_.now();
  (void)take_captured(capture_);
  dbg_.execute(m.command);
  std::string text = take_captured(capture_);
  if (s_.now() != before || !s_.stopped()) {
    // `monitor goto N`: the session stands somewhere else now.
    settle(s_.last_stop(), std::nullopt);
    text += "(the kernel moved: gdb's registers and frames are stale until \"maintenance flush register-cache\")\n";
  }
  send_output(text);
  send("OK");
}

void GdbServer::handle(const gdb::XferRead& x) {
  // exec-file: the kernel's path, so that gdb reads its symbols with no `file` command.
  const std::string* text = nullptr;
  if (x.object == "features" && x.annex == "target.xml")
    text = &target_xml_;
  else if (x.object == "exec-file" && !exec_file_.empty())
    text = &exec_file_;
  if (!text) return send("E00");
  if (x.offset >= text->size()) return send("l");
  std::string chunk = text->substr(x.offset, x.length);
  const bool last = x.offset + chunk.size() >= text->size();
  send((last ? "l" : "m") + chunk, true);
}

void GdbServer::handle(const gdb::Attached&) { send("1"); }

void GdbServer::handle(const gdb::Kill&) { done_ = true; }

void GdbServer::handle(const gdb::VKill&) {
  send("OK");
  done_ = true;
}

void GdbServer::handle(const gdb::Detach&) {
  send("OK");
  done_ = true;
}

void GdbServer::handle(const gdb::Unknown&) { send(""); }
void GdbServer::handle(const gdb::Malformed&) { send("E01"); }

}  // namespace vx::cli
