// Where a debugger session's events go: human text on a terminal or in a pipe, or one JSON
// object per line (--json; docs/cli.md lists the events and their fields).
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/hex.hpp"
#include "debug/watch_report.hpp"

namespace vx::cli {

// A stop as the front end describes it.
struct StopView {
  std::string reason;            // engine::stop_reason_name: breakpoint, step, exception, ...
  std::string title;             // human: "Breakpoint 1", "Device exception: store to unmapped memory at 0x00000028"
  std::vector<int> breakpoints;  // the user's breakpoint numbers that stopped
  uint32_t launch = 0, pass = 0;
  std::string launch_label;  // "launch 2 (sgemm)" when the workload has several launches or a host program
  uint64_t instructions = 0;
  // Where the focus is (absent after the kernel exited or was killed, or when no warp is in progress).
  bool has_focus = false;
  uint32_t core = 0, warp = 0, lane = 0;
  std::vector<uint32_t> lanes;  // active lanes of the focus warp
  std::array<uint32_t, 3> cta{}, thread{};
  uint32_t pc = 0;
  std::string function, file;  // function: the out-of-line function holding pc; "" when unknown
  std::string inlined;         // the innermost inlined function at pc, when it is not `function`
  uint32_t line = 0;
  std::string source;       // the source line's text ("" when unavailable)
  std::string disassembly;  // the instruction at pc (shown when there is no source line, and after stepi)
  bool show_disassembly = false;
  struct Hit {
    uint32_t core = 0, warp = 0, pc = 0;
    std::vector<uint32_t> lanes;
    std::string where;  // its own location ("reduce (reduce.c:79)"), when it is not the focus warp's
  };
  std::vector<Hit> hits;  // every warp concerned (breakpoints hit in the same pass, the stepped warp, ...)
  // Exception, assertion, watchdog.
  bool has_exception = false;
  std::string cause;
  uint32_t exception_pc = 0, exception_address = 0, exception_core = 0, exception_warp = 0, exception_lane = 0;
  std::string message;                // killed: why; also notes such as "the focus warp finished"
  std::optional<uint32_t> exit_code;  // exited
  // Watchpoint stops: each watched access (the access has happened; pc is the accessing instruction).
  using Watch = debug::WatchReport;
  std::vector<Watch> watches;
  double elapsed_ms = 0;  // how long the command that stopped here took (JSON only)
  bool recorded = false;  // the stop was written to the recording (JSON only; engine::StopEvent::recorded)
};

struct ExitView {
  int status = 0;                     // the process exit status
  std::optional<uint32_t> exit_code;  // the kernel's exit-code word when it completed
  std::string state;                  // "exited", "stopped", "killed", "not started"
  uint64_t instructions = 0, lane_instructions = 0, restore_instructions = 0, checkpoints = 0, bytes_stored = 0;
  uint64_t marks_only = 0;  // stops recorded by their mark alone (docs/store.md, "Stops")
  uint32_t passes = 0;
  double reexecution_ratio = 1.0;
  std::string store;  // the store directory, "" without one
};

struct StartView {
  std::string kernel, config, store;
  std::array<uint32_t, 3> grid{}, block{};
  uint32_t lmem = 0;
  uint64_t seed = 0;
  bool symbols = false;
  bool replay = false;            // a recording reopened (vxreplay replay): store is the recording
  std::string host;               // the host program's command line (vxreplay run -- PROGRAM), "" for a kernel alone
  std::string mode = "relaunch";  // the session's method: "live" or "relaunch" (docs/live.md)
  std::string mode_why;           // why that method
  std::string requested = "relaunch";  // the method asked for (--mode): relaunch, live or auto
  bool debug_module = false;           // the device has a Debug Module
  bool held = false;                   // a launch is halted on the device
};

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void start(const StartView& v) = 0;
  // A line of the kernel's console (without its line break).
  virtual void console(const std::string& line) = 0;
  // A command's output. data holds extra machine-readable fields (JSON only).
  virtual void output(const std::string& command, const std::string& text,
                      const nlohmann::json& data = nlohmann::json::object()) = 0;
  virtual void error(const std::string& command, const std::string& message) = 0;
  virtual void stop(const StopView& v) = 0;
  virtual void exit(const ExitView& v) = 0;
  virtual bool json() const = 0;
};

// Human-readable text on stdout (errors on stderr). Colour only when asked (stdout is a terminal).
class HumanSink final : public Sink {
 public:
  HumanSink(bool color, bool quiet) : color_(color), quiet_(quiet) {}
  void start(const StartView& v) override;
  void console(const std::string& line) override;
  void output(const std::string& command, const std::string& text, const nlohmann::json& data) override;
  void error(const std::string& command, const std::string& message) override;
  void stop(const StopView& v) override;
  void exit(const ExitView& v) override;
  bool json() const override { return false; }

  // The text of a stop header (also used by tests).
  static std::string format_stop(const StopView& v, bool color);

 private:
  bool color_, quiet_;
};

// One JSON object per line on stdout (or another stream: vxreplay view reads its own session's).
class JsonSink final : public Sink {
 public:
  explicit JsonSink(std::ostream& out = std::cout) : out_(out) {}
  void start(const StartView& v) override;
  void console(const std::string& line) override;
  void output(const std::string& command, const std::string& text, const nlohmann::json& data) override;
  void error(const std::string& command, const std::string& message) override;
  void stop(const StopView& v) override;
  void exit(const ExitView& v) override;
  bool json() const override { return true; }

  static nlohmann::ordered_json stop_json(const StopView& v);

 private:
  void emit(const nlohmann::ordered_json& j);
  std::ostream& out_;
};

// "0-3,5,7": lane numbers as ranges.
std::string format_lanes(const std::vector<uint32_t>& lanes);

}  // namespace vx::cli
