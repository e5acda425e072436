#include "cli/view_command.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/output.hpp"
#include "cli/replay_command.hpp"
#include "cli/run_command.hpp"
#include "cli/text.hpp"
#include "cli/view_data.hpp"
#include "replay/warp_timeline.hpp"

namespace vx::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Marks whose registers and C variables the page carries (a session of more stops lists the rest
// without them: the page says how many).
constexpr size_t kMaxDetailedMarks = 2000;
constexpr int kSourceContext = 6;  // lines shown around a stop's line

int say_fail(int status, const std::string& message) {
  std::fprintf(stderr, "vxreplay: %s\n", message.c_str());
  return status;
}

// Every mark (info checkpoints) with the stop's header, the focus lane's C variables and
// registers, read by going to it with the debugger.
json marks_json(ViewRecording& o, const std::string& dir, size_t* detailed) {
  Debugger& dbg = *o.rec->dbg;
  dbg.show_checkpoints();
  json marks = json::array();
  const std::optional<json> list = find_event(take_events(o.events), "checkpoints");
  if (!list) return marks;
  *detailed = 0;
  for (const json& c : (*list)["checkpoints"]) {
    json m = {{"number", c.value("number", 0)},
              {"launch", c.value("launch", 0)},
              {"instret", c.value("instret", 0)},
              {"stop", c.value("stop", "")}};
    const uint32_t n = m["number"].get<uint32_t>();
    m["command"] = "vxreplay replay " + text::shell_quote(dir) + " -ex 'goto " + std::to_string(n) + "'";
    if (*detailed < kMaxDetailedMarks) {
      ++*detailed;
      const bool there = dbg.goto_mark(n);
      auto stop = take_events(o.events);
      for (const json& e : stop)
        if (e.value("event", "") == "stop") m["header"] = e;
      if (there) add_stop_values(o, &m);
    }
    marks.push_back(std::move(m));
  }
  return marks;
}

}  // namespace

std::vector<json> take_events(std::stringstream& ss) {
  std::vector<json> out;
  std::string line;
  while (std::getline(ss, line))
    if (!line.empty()) out.push_back(json::parse(line, nullptr, false));
  ss.str({});
  ss.clear();
  return out;
}

void add_stop_values(ViewRecording& o, json* into) {
  Debugger& dbg = *o.rec->dbg;
  dbg.show_args();
  if (const auto v = find_event(take_events(o.events), "variables")) (*into)["args"] = (*v)["variables"];
  dbg.show_locals();
  if (const auto v = find_event(take_events(o.events), "variables")) (*into)["locals"] = (*v)["variables"];
  dbg.show_registers("");
  if (const auto r = find_event(take_events(o.events), "registers")) (*into)["registers"] = (*r)["registers"];
}

std::optional<json> find_event(const std::vector<json>& events, const char* key) {
  for (const json& e : events)
    if (e.is_object() && e.contains(key)) return e;
  return std::nullopt;
}

Result<std::unique_ptr<ViewRecording>> open_view_recording(const std::string& dir_arg, const std::string& root) {
  auto o = std::make_unique<ViewRecording>();
  std::string error;
  auto latest = dir_arg.empty() ? latest_recording(root, &error) : std::optional<std::string>(dir_arg);
  if (!latest) return make_error(ErrorCode::Input, error);
  const std::string& dir = o->dir = *latest;
  auto rec = open_recording(dir, "", false, &o->sink, true);  // a view writes nothing into the recording
  if (!rec) return rec.error();
  o->rec = std::move(rec).value();
  checkpoint::Store* store = o->rec->session->store();
  if (!store) return make_error(ErrorCode::Input, "the recording " + dir + " has no store");
  auto t = replay::read_warp_timeline(*store);
  if (!t) return with_context("the recording's timeline: ", t.error());
  o->timeline = std::move(t).value();
  (void)take_events(o->events);
  return o;
}

json sources_json(const json& marks) {
  std::map<std::string, std::set<int>> wanted;
  for (const json& m : marks)
    if (m.contains("header")) {
      const json& h = m["header"];
      if (h.contains("file") && h["file"].is_string() && h.contains("line") && h["line"].is_number())
        for (int l = h["line"].get<int>() - kSourceContext; l <= h["line"].get<int>() + kSourceContext; ++l)
          if (l > 0) wanted[h["file"].get<std::string>()].insert(l);
    }
  json out = json::object();
  for (const auto& [file, lines] : wanted) {
    std::ifstream in(file);
    if (!in) continue;
    json f = json::object();
    std::string text;
    for (int l = 1; std::getline(in, text) && l <= *lines.rbegin(); ++l)
      if (lines.count(l)) f[std::to_string(l)] = text;
    out[file] = std::move(f);
  }
  return out;
}

int view_command(const ViewArgs& a) {
  std::optional<HostPort> serve;
  if (!a.serve.empty()) {
    if (!a.out.empty()) return say_fail(kExitUsage, "view: --serve serves the page, -o writes it: give one");
    auto hp = parse_host_port(a.serve, "--serve");
    if (!hp) return say_fail(kExitUsage, hp.error().message);
    if (!is_loopback_host(hp->host) && !a.serve_remote)
      return say_fail(kExitUsage, "--serve " + hp->host +
                                      ": not a loopback address: whoever reaches it reads the recording and the "
                                      "kernel's memory; add --serve-remote to listen there anyway");
    serve = *hp;
  }
  auto o = open_view_recording(a.dir, a.root);
  if (!o) return say_fail(exit_status_of(o.error(), kExitBadInput), o.error().message);
  const std::string* dir = &(*o)->dir;
  size_t detailed = 0;
  json data = view_data((*o)->rec->kernel_name, *dir, (*o)->rec->info.config);
  data["launches"] = launches_json((*o)->timeline, [&](uint32_t l) { return (*o)->rec->dbg->launch_label(l); });
  data["marks"] = marks_json(**o, *dir, &detailed);
  data["detailed_marks"] = detailed;
  data["sources"] = sources_json(data["marks"]);
  data["serve"] = serve.has_value();
  const std::string out = a.out.empty() ? fs::path(*dir).filename().string() + ".html" : a.out;
  const std::string title = (*o)->rec->kernel_name + " - vxreplay";
  if (serve) return serve_view(**o, view_page(title, data), *serve);
  if (!write_view_page(out, title, data)) return say_fail(kExitCantWrite, "cannot write the page " + out);
  size_t rows = 0;
  for (const auto& t : (*o)->timeline) rows += t.rows.size();
  std::printf("%s: %zu launch%s, %zu warp rows, %zu marks\n", out.c_str(), (*o)->timeline.size(),
              (*o)->timeline.size() == 1 ? "" : "es", rows, data["marks"].size());
  return kExitOk;
}

int export_command(const ExportArgs& a) {
  if (a.trace.empty()) return say_fail(kExitUsage, "export: say what to write (--trace FILE.json)");
  auto o = open_view_recording(a.dir, a.root);
  if (!o) return say_fail(exit_status_of(o.error(), kExitBadInput), o.error().message);
  const std::string* dir = &(*o)->dir;
  size_t detailed = 0;
  json marks = marks_json(**o, *dir, &detailed);
  // One process per launch, one thread per warp slot; 1 µs of the trace is one warp instruction of
  // the launch, and the launches follow each other.
  json events = json::array();
  std::map<uint32_t, uint64_t> offset;
  uint64_t at = 0;
  for (const replay::LaunchTimeline& t : (*o)->timeline) {
    offset[t.launch] = at;
    at += t.end + std::max<uint64_t>(t.end / 20, 1);
    const int pid = int(t.launch);
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", pid},
                      {"args", {{"name", (*o)->rec->dbg->launch_label(t.launch)}}}});
    for (const replay::WarpRow& r : t.rows) {
      const int tid = int(r.core * 1000 + r.slot);
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", pid},
                        {"tid", tid},
                        {"args", {{"name", "core " + std::to_string(r.core) + " warp " + std::to_string(r.slot)}}}});
      for (const replay::WarpInterval& i : r.intervals)
        events.push_back({{"ph", "X"},
                          {"cat", "warp"},
                          {"name", replay::activity_name(i.activity)},
                          {"pid", pid},
                          {"tid", tid},
                          {"ts", offset[t.launch] + i.from},
                          {"dur", i.to - i.from},
                          {"args", {{"lanes", i.lanes}, {"cta", i.cta}}}});
    }
    for (uint64_t c : t.checkpoints)
      events.push_back({{"ph", "i"},
                        {"s", "p"},
                        {"cat", "checkpoint"},
                        {"name", "checkpoint"},
                        {"pid", pid},
                        {"tid", 0},
                        {"ts", offset[t.launch] + c}});
    // A console line is known to be out by the point that first holds it.
    for (const replay::ConsoleLine& c : t.console)
      events.push_back({{"ph", "i"},
                        {"s", "p"},
                        {"cat", "console"},
                        {"name", c.text},
                        {"pid", pid},
                        {"tid", 0},
                        {"ts", offset[t.launch] + c.by}});
  }
  for (const json& m : marks) {
    const uint32_t launch = m["launch"].get<uint32_t>();
    std::string name = "#" + std::to_string(m["number"].get<uint32_t>()) + " " + m["stop"].get<std::string>();
    json args = {{"command", m["command"]}};
    if (m.contains("header")) {
      const json& h = m["header"];
      if (h.contains("file") && h["file"].is_string())
        name +=
            " " + fs::path(h["file"].get<std::string>()).filename().string() + ":" + std::to_string(h.value("line", 0));
      args["pc"] = h.value("pc", 0u);
    }
    events.push_back({{"ph", "i"},
                      {"s", "g"},
                      {"cat", "stop"},
                      {"name", name},
                      {"pid", int(launch)},
                      {"tid", 0},
                      {"ts", offset[launch] + m["instret"].get<uint64_t>()},
                      {"args", args}});
  }
  json trace = {{"traceEvents", std::move(events)},
                {"otherData",
                 {{"recording", *dir},
                  {"kernel", (*o)->rec->kernel_name},
                  {"time", "1 us of the trace is one warp instruction of its launch; launches follow each other"}}}};
  std::ofstream f(a.trace, std::ios::binary | std::ios::trunc);
  f << trace.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  f.close();
  if (!f) return say_fail(kExitCantWrite, "cannot write the trace " + a.trace);
  return kExitOk;
}

}  // namespace vx::cli
