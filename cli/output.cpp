#include "cli/output.hpp"
#include "cli/text.hpp"

#include <iostream>
#include "base/hex.hpp"

namespace vx::cli {

namespace {

const char* kBold = "\033[1m";
const char* kRed = "\033[31m";
const char* kGreen = "\033[32m";
const char* kReset = "\033[0m";

using text::base_name;
using text::coords;

}  // namespace

std::string format_lanes(const std::vector<uint32_t>& lanes) {
  std::string out;
  for (size_t i = 0; i < lanes.size();) {
    size_t j = i;
    while (j + 1 < lanes.size() && lanes[j + 1] == lanes[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(lanes[i]);
    if (j > i) out += "-" + std::to_string(lanes[j]);
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

// --- Human --------------------------------------------------------------------------------------

std::string HumanSink::format_stop(const StopView& v, bool color) {
  std::string s;
  if (v.reason == "exited") {
    s += std::string(color ? kBold : "") + "[Kernel exited with code " + std::to_string(v.exit_code.value_or(0)) + "]" +
         (color ? kReset : "") + "\n";
    return s;
  }
  if (v.reason == "killed") {
    s +=
        std::string(color ? kBold : "") + "[The kernel cannot go on: " + v.message + "]" + (color ? kReset : "") + "\n";
    return s;
  }
  s += color ? kBold : "";
  s += v.title;
  if (v.has_focus) {
    if (!v.function.empty()) s += ", " + v.function;
    if (!v.inlined.empty()) s += ", inlined " + v.inlined;
    if (!v.file.empty()) s += " (" + base_name(v.file) + ":" + std::to_string(v.line) + ")";
  }
  if (!v.launch_label.empty()) s += ", " + v.launch_label;
  // Pass 0: the stop was reached by a move in time (a reverse command, goto), not by a pass of its own.
  if (v.pass) s += ", pass " + std::to_string(v.pass);
  s += ", " + std::to_string(v.instructions) + " instructions";
  s += color ? kReset : "";
  s += "\n";
  if (v.has_focus) {
    s += "  core " + std::to_string(v.core) + " warp " + std::to_string(v.warp) + " lanes " + format_lanes(v.lanes) +
         " (cta " + coords(v.cta) + "); focus lane " + std::to_string(v.lane) + " = thread " + coords(v.thread) +
         "; pc " + hex32(v.pc) + "\n";
    std::string also;
    for (size_t i = 1; i < v.hits.size(); ++i) {
      const auto& h = v.hits[i];
      if ((h.core == v.core && h.warp == v.warp) || h.lanes.empty()) continue;  // a warp with no lanes left is not here
      also += (also.empty() ? "" : ", ") + std::string("core ") + std::to_string(h.core) + " warp " +
              std::to_string(h.warp) + " lanes " + format_lanes(h.lanes);
      if (h.pc != v.pc) also += " at " + hex32(h.pc) + (h.where.empty() ? "" : " in " + h.where);
    }
    if (!also.empty()) s += "  also here: " + also + "\n";
  }
  for (const auto& w : v.watches) {
    s += "  " +
         std::string(w.kind == "rwatch"   ? "read watchpoint "
                     : w.kind == "awatch" ? "access watchpoint "
                                          : "watchpoint ") +
         std::to_string(w.number) + ": " + w.expression + ", by core " + std::to_string(w.core) + " warp " +
         std::to_string(w.warp) + " lanes " + format_lanes(w.lanes) + " at pc " + hex32(w.pc) + "\n";
    if (w.old_value)
      s += "  Old value = " + *w.old_value + "\n  New value = " + w.new_value + "\n";
    else
      s += "  Value = " + w.new_value + "\n";
  }
  if (!v.message.empty()) s += "  " + v.message + "\n";
  if (v.has_focus) {
    if (!v.source.empty() || v.line != 0) s += std::to_string(v.line) + "\t" + v.source + "\n";
    if ((v.show_disassembly || (v.source.empty() && v.line == 0)) && !v.disassembly.empty())
      s += "=> " + hex32(v.pc) + ":\t" + v.disassembly + "\n";
  }
  return s;
}

void HumanSink::start(const StartView& v) {
  if (quiet_) return;
  std::string s = v.replay ? "Recording " + v.store + " of " + v.kernel + " on " + v.config + " (grid " +
                                 coords(v.grid) + ", block " + coords(v.block) + ", seed " + std::to_string(v.seed) +
                                 "), replayed without the kernel file or the host."
                           : "Kernel " + v.kernel + " launched on " + v.config + " (grid " + coords(v.grid) +
                                 ", block " + coords(v.block) + ", seed " + std::to_string(v.seed) +
                                 "), not started: \"continue\" runs it.";
  if (!v.host.empty())
    s = "Host program " + v.host + " on " + v.config + ": launch 1 of " + v.kernel + " (grid " + coords(v.grid) +
        ", block " + coords(v.block) + ", seed " + std::to_string(v.seed) + ") is ready; \"continue\" runs it.";
  if (!v.mode_why.empty()) s += "\nMode: " + v.mode + " (" + v.mode_why + ").";
  if (!v.symbols) s += "\n(no symbols: locations are addresses only)";
  std::cout << s << "\n" << std::flush;
}

void HumanSink::console(const std::string& line) { std::cout << line << "\n" << std::flush; }

void HumanSink::output(const std::string&, const std::string& text, const nlohmann::json&) {
  if (text.empty()) return;
  std::cout << text;
  if (text.back() != '\n') std::cout << "\n";
  std::cout << std::flush;
}

void HumanSink::error(const std::string&, const std::string& message) {
  std::cout << std::flush;
  std::cerr << (color_ ? kRed : "") << message << (color_ ? kReset : "") << "\n" << std::flush;
}

void HumanSink::stop(const StopView& v) { std::cout << format_stop(v, color_) << std::flush; }

void HumanSink::exit(const ExitView& v) {
  if (quiet_) return;
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.3f", v.reexecution_ratio);
  std::string s;
  if (v.exit_code) s += "exit code: " + std::to_string(*v.exit_code) + "\n";
  s += std::string(color_ ? kGreen : "") + "session: " + v.state + "; " + std::to_string(v.instructions) + " warp, " +
       std::to_string(v.lane_instructions) + " lane instructions over " + std::to_string(v.passes) +
       (v.passes == 1 ? " pass" : " passes") + " (re-execution ratio " + ratio + ", " +
       std::to_string(v.restore_instructions) + " restore instructions); " + std::to_string(v.checkpoints) +
       " checkpoints, " + std::to_string(v.bytes_stored) + " bytes stored" + (v.store.empty() ? "" : " in " + v.store) +
       (color_ ? kReset : "") + "\n";
  std::cout << s << std::flush;
}

// --- JSON ---------------------------------------------------------------------------------------

void JsonSink::emit(const nlohmann::ordered_json& j) {
  out_ << j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n" << std::flush;
}

void JsonSink::start(const StartView& v) {
  emit({{"event", "start"},
        {"kernel", v.kernel},
        {"config", v.config},
        {"grid", v.grid},
        {"block", v.block},
        {"lmem", v.lmem},
        {"seed", v.seed},
        {"symbols", v.symbols},
        {"replay", v.replay},
        {"mode", v.mode},
        {"host", v.host.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v.host)},
        {"requested", v.requested},
        {"why", v.mode_why},
        {"debug_module", v.debug_module},
        {"held", v.held},
        {"store", v.store.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v.store)}});
}

void JsonSink::console(const std::string& line) { emit({{"event", "output"}, {"text", line}}); }

void JsonSink::output(const std::string& command, const std::string& text, const nlohmann::json& data) {
  nlohmann::ordered_json j = {{"event", "output"}, {"command", command}, {"text", text}};
  if (data.is_object())
    for (auto it = data.begin(); it != data.end(); ++it) j[it.key()] = it.value();
  emit(j);
}

void JsonSink::error(const std::string& command, const std::string& message) {
  nlohmann::ordered_json j = {{"event", "error"}, {"message", message}};
  if (!command.empty()) j["command"] = command;
  emit(j);
}

nlohmann::ordered_json JsonSink::stop_json(const StopView& v) {
  using J = nlohmann::ordered_json;
  J j = {{"event", "stop"}, {"reason", v.reason}};
  if (v.reason == "breakpoint") j["breakpoints"] = v.breakpoints;
  if (!v.watches.empty()) {
    J ws = J::array();
    for (const auto& w : v.watches)
      ws.push_back({{"watchpoint", w.number},
                    {"kind", w.kind},
                    {"expression", w.expression},
                    {"address", w.address},
                    {"core", w.core},
                    {"warp", w.warp},
                    {"pc", w.pc},
                    {"lanes", w.lanes},
                    {"old", w.old_value ? J(*w.old_value) : J(nullptr)},
                    {"new", w.new_value}});
    j["watchpoints"] = ws;
  }
  if (v.has_focus) {
    j["pc"] = v.pc;
    j["function"] = v.function.empty() ? J(nullptr) : J(v.function);
    j["inlined"] = v.inlined.empty() ? J(nullptr) : J(v.inlined);
    j["file"] = v.file.empty() ? J(nullptr) : J(v.file);
    j["line"] = v.line ? J(v.line) : J(nullptr);
    j["core"] = v.core;
    j["warp"] = v.warp;
    j["lanes"] = v.lanes;
  }
  j["launch"] = v.launch;
  if (!v.launch_label.empty()) j["launch_label"] = v.launch_label;
  j["pass"] = v.pass;
  j["instructions"] = v.instructions;
  if (v.has_focus) {
    j["lane"] = v.lane;
    j["cta"] = v.cta;
    j["thread"] = v.thread;
    j["source"] = v.source;
    j["disassembly"] = v.disassembly;
    J hits = J::array();
    for (const auto& h : v.hits) hits.push_back({{"core", h.core}, {"warp", h.warp}, {"pc", h.pc}, {"lanes", h.lanes}});
    j["hits"] = hits;
  }
  if (v.has_exception)
    j["exception"] = {{"cause", v.cause},         {"pc", v.exception_pc},     {"address", v.exception_address},
                      {"core", v.exception_core}, {"warp", v.exception_warp}, {"lane", v.exception_lane}};
  if (!v.message.empty()) j["message"] = v.message;
  if (v.exit_code) j["exit_code"] = *v.exit_code;
  j["elapsed_ms"] = v.elapsed_ms;
  j["recorded"] = v.recorded;
  return j;
}

void JsonSink::stop(const StopView& v) { emit(stop_json(v)); }

void JsonSink::exit(const ExitView& v) {
  emit({{"event", "exit"},
        {"status", v.status},
        {"exit_code", v.exit_code ? nlohmann::ordered_json(*v.exit_code) : nlohmann::ordered_json(nullptr)},
        {"state", v.state},
        {"stats",
         {{"instructions", v.instructions},
          {"lane_instructions", v.lane_instructions},
          {"passes", v.passes},
          {"reexecution_ratio", v.reexecution_ratio},
          {"restore_instructions", v.restore_instructions},
          {"checkpoints", v.checkpoints},
          {"marks_only", v.marks_only},
          {"bytes_stored", v.bytes_stored}}},
        {"store", v.store.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v.store)}});
}

}  // namespace vx::cli
