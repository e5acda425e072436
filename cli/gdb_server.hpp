// The GDB Remote Serial Protocol server (docs/gdb.md): the handler table from the packet layer's
// typed requests (gdb_packet.hpp) to engine::Session and replay::Timeline. Every lane of every
// resident warp is a gdb thread; `monitor` runs the prompt's commands (Debugger) and sends their
// output as console packets.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/console.hpp"
#include "cli/gdb_packet.hpp"
#include "cli/listen.hpp"
#include "debug/inspect.hpp"
#include "debug/lane.hpp"
#include "device/host_runtime.hpp"
#include "engine/session.hpp"
#include "engine/symbols.hpp"
#include "replay/timeline.hpp"

namespace vx::cli {

class Debugger;
class Sink;

// Where gdb connects: "-" is stdin/stdout, else [HOST:]PORT (default host 127.0.0.1).
struct GdbEndpoint {
  bool stdio = false;
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: the system picks one (printed on stderr)
  // The trust boundary (docs/gdb.md): a host that is not a loopback address only with
  // --gdb-remote; `monitor source FILE` (reading files here for the client) only with
  // --gdb-allow-files.
  bool allow_remote = false;
  bool allow_files = false;
};
Result<GdbEndpoint> parse_gdb_endpoint(const std::string& text);

// One connected client's byte stream.
struct GdbConnection {
  int in = -1, out = -1;
  bool owned = false;  // a socket: closed at the end
};
// Listens on `ep` for one client (printing on stderr what to type in gdb, with `kernel` for gdb to
// read the symbols from), or takes stdin/stdout.
Result<GdbConnection> open_gdb_connection(const GdbEndpoint& ep, const std::string& kernel);

// How the session begins: at the first mark of a recording, or where the kernel function is first
// reached (an engine breakpoint at entry_pc, removed again).
struct GdbStart {
  bool at_first_mark = false;
  uint32_t entry_pc = 0;
};

class GdbServer {
 public:
  // `monitor` runs on `dbg`, whose sink is `capture` (make_capture_sink()). exec_file: the kernel ELF's
  // path for gdb to load ("" none).
  GdbServer(engine::Session& session, const engine::Symbols* symbols, Debugger& dbg, Sink& capture, GdbConnection conn,
            std::string exec_file = "");
  ~GdbServer();

  // Serves the client until it detaches, kills the kernel or disconnects. Returns the process exit
  // status (docs/cli.md), computed as the prompt's session computes it.
  int serve(const GdbStart& start, const std::string& store_dir);

 private:
  // The handler table: one overload per request kind.
  void handle(const gdb::QSupported&);
  void handle(const gdb::StartNoAck&);
  void handle(const gdb::HaltReason&);
  void handle(const gdb::ReadRegisters&);
  void handle(const gdb::WriteRegisters&);
  void handle(const gdb::ReadRegister&);
  void handle(const gdb::WriteRegister&);
  void handle(const gdb::ReadMemory&);
  void handle(const gdb::WriteMemory&);
  void handle(const gdb::ThreadInfoFirst&);
  void handle(const gdb::ThreadInfoNext&);
  void handle(const gdb::CurrentThread&);
  void handle(const gdb::SetThread&);
  void handle(const gdb::ThreadAlive&);
  void handle(const gdb::ThreadExtraInfo&);
  void handle(const gdb::VContQuery&);
  void handle(const gdb::VCont&);
  void handle(const gdb::Continue&);
  void handle(const gdb::Step&);
  void handle(const gdb::ReverseStep&);
  void handle(const gdb::ReverseContinue&);
  void handle(const gdb::Breakpoint&);
  void handle(const gdb::Monitor&);
  void handle(const gdb::XferRead&);
  void handle(const gdb::Attached&);
  void handle(const gdb::Kill&);
  void handle(const gdb::VKill&);
  void handle(const gdb::Detach&);
  void handle(const gdb::Unknown&);
  void handle(const gdb::Malformed&);

  // Threads: lanes of resident warps; ids from hardware coordinates (debug/lane.hpp).
  using Lane = debug::Lane;
  int64_t thread_id(const Lane& l) const;
  std::optional<Lane> lane_of(int64_t tid) const;  // nullopt: not a resident lane now
  std::vector<Lane> resident() const;
  bool nothing_resident() const;
  std::optional<Lane> selected(char op) const;  // Hg / Hc, else the stop's thread
  std::optional<uint32_t> register_value(const Lane& l, uint32_t reg) const;
  std::string extra_info(const Lane& l) const;

  // Running: the engine call, console as 'O' packets, the interrupt byte watched; then the stop reply.
  // ThreadToBreakpoint: gdb resumed one thread alone (`vCont;c:TID`, how it single-steps RISC-V in
  // software: a breakpoint at each possible next pc): that lane's warp runs until the lane stands
  // at one of gdb's breakpoints.
  enum class Move { Continue, Step, ThreadToBreakpoint, ReverseStep, ReverseContinue };
  void run(Move m, std::optional<Lane> lane);
  void settle(const engine::StopEvent& ev, std::optional<Lane> stepped);
  std::string stop_reply() const;
  void poll_input();
  void send_console();

  void send(const std::string& payload, bool binary = false);
  void send_output(const std::string& text);  // an 'O' packet
  void refuse_write(const std::string& why);  // E01, the reason on stderr
  bool read_more();                           // false: the client is gone

  engine::Session& s_;
  mutable debug::Inspector insp_;  // registers and CSRs as the prompt reads them
  replay::Timeline timeline_;
  Debugger& dbg_;
  Sink& capture_;
  GdbConnection conn_;
  gdb::PacketReader reader_;
  std::vector<gdb::PacketEvent> events_;
  size_t next_event_ = 0;
  bool no_ack_ = false;
  bool done_ = false;
  std::string last_sent_;
  ConsoleLines console_;

  engine::StopEvent stop_;
  std::optional<Lane> stop_lane_;
  // The thread gdb last selected itself (Hg/Hc): a breakpoint hit of its warp names it, so that a
  // `finish` or `until` in it sees its own hit. gdb sends no thread with a breakpoint.
  std::optional<Lane> followed_;
  int64_t g_thread_ = 0, c_thread_ = 0;  // 0 / -1: the stop's thread
  std::map<uint32_t, int> breakpoints_;  // address -> engine breakpoint
  struct Watch {
    int type = 0;
    uint32_t addr = 0, len = 0;
    int engine = 0;
  };
  std::vector<Watch> watches_;
  std::string target_xml_;
  std::string exec_file_;
};

// `--gdb`: a session served to gdb instead of the prompt (debug_command, replay_command). `kernel`
// names the ELF gdb should read the symbols from (printed in the hint on stderr). variables: the
// kernel's C variables, for `monitor` commands that name them (nullptr: none).
int serve_gdb(engine::Session& session, const engine::Symbols* symbols, const GridLaunch& launch,
              const GdbEndpoint& endpoint, const std::string& kernel, const std::string& store_dir,
              const GdbStart& start, const engine::Variables* variables = nullptr);

// A Sink that keeps the text a command prints (for `monitor`).
std::unique_ptr<Sink> make_capture_sink();
// What the capture sink holds, emptied.
std::string take_captured(Sink& sink);

}  // namespace vx::cli
