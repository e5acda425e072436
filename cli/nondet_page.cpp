#include "cli/nondet_page.hpp"

#include "base/hex.hpp"
#include "cli/view_command.hpp"
#include "cli/view_data.hpp"

namespace vx::cli {

using nlohmann::json;

namespace {

std::string launch_name(uint32_t launch) { return "launch " + std::to_string(launch); }

json run_json(const PageRun& r) {
  return {{"label", r.label},
          {"short", r.short_label},
          {"launches", r.timeline ? launches_json(*r.timeline, launch_name) : json::array()}};
}

std::string coords(const json& c) {
  if (!c.is_array() || c.size() != 3) return "?";
  return "(" + std::to_string(c[0].get<uint64_t>()) + "," + std::to_string(c[1].get<uint64_t>()) + "," +
         std::to_string(c[2].get<uint64_t>()) + ")";
}

// "CTA (0,0,0) thread (3,0,0)" or "instance 5", from a report's thread object.
std::string thread_of(const json& t) {
  if (t.contains("instance")) return "instance " + std::to_string(t["instance"].get<uint64_t>());
  if (t.contains("cta") && t.contains("thread")) return "CTA " + coords(t["cta"]) + " thread " + coords(t["thread"]);
  return "";
}

std::string place(const json& o) {
  return "core " + std::to_string(o.value("core", 0u)) + " warp " + std::to_string(o.value("warp", 0u)) + " lane " +
         std::to_string(o.value("lane", 0u)) + ", instruction " + std::to_string(o.value("instret", uint64_t(0)));
}

std::string at_line(const json& o) {
  if (!o.contains("file")) return "";
  std::string s = " at " + o["file"].get<std::string>() + ":" + std::to_string(o.value("line", 0));
  if (o.contains("source")) s += "\n    " + o["source"].get<std::string>();
  return s;
}

}  // namespace

json diff_page_data(const std::string& kernel, const DeviceConfig& config, const PageRun& a, const PageRun& b,
                    const json& report, const std::string& text, const engine::Symbols* sym) {
  json data = view_data(kernel, "A: " + a.label + "  \u00b7  B: " + b.label, config);
  data["runs"] = json::array({run_json(a), run_json(b)});
  data["launches"] = data["runs"][0]["launches"];
  data["report"] = text;
  json points = json::array(), links = json::array(), marks = json::array();
  const json& d = report.contains("first_divergence") ? report["first_divergence"] : json();
  if (d.is_object()) {
    const uint32_t launch = d.value("launch", 1u);
    const std::string who = thread_of(d);
    for (int run = 0; run < 2; ++run) {
      const std::string side = run == 0 ? "A" : "B";
      const json& o = d[run == 0 ? "a" : "b"];
      if (!o.is_object()) continue;
      const uint32_t pc = o.value("pc", 0u);
      json header = header_at(sym, pc, o.value("core", 0u), o.value("warp", 0u), o.value("lane", 0u));
      header["cta"] = d.value("cta", json());
      header["thread"] = d.value("thread", json());
      std::string t = who + ", " + place(o) + "\n" + o.value("instruction", "") + ": read " +
                      hex32(o.value("value", 0u)) +
                      (o.contains("address") ? " from " + hex32(o["address"].get<uint32_t>()) : std::string());
      const json& w = o.contains("writer") ? o["writer"] : json();
      if (w.is_object())
        t += "\nwritten by " + thread_of(w) + " (" + place(w) + ")" + at_line(w);
      else if (o.contains("writer"))
        t += "\nnot written by the kernel in this launch (the value the launch started with)";
      t += "\nDebug it from there: the same vxreplay diff command with --open " + side;
      const std::string id = side + "-read";
      points.push_back({{"id", id},
                        {"run", run},
                        {"launch", launch},
                        {"instret", o.value("instret", uint64_t(0))},
                        {"core", o.value("core", 0u)},
                        {"warp", o.value("warp", 0u)},
                        {"lane", o.value("lane", 0u)},
                        {"kind", "read"},
                        {"title", "Run " + side + ": the first divergence (" + d.value("kind", "") + "), read " +
                                      hex32(o.value("value", 0u))},
                        {"text", t},
                        {"header", header}});
      marks.push_back({{"number", side},
                       {"stop", "divergence"},
                       {"run", run},
                       {"launch", launch},
                       {"instret", o.value("instret", uint64_t(0))},
                       {"header", header},
                       {"text", t}});
      if (w.is_object()) {
        json wh = header_at(sym, w.value("pc", 0u), w.value("core", 0u), w.value("warp", 0u), w.value("lane", 0u));
        wh["cta"] = w.value("cta", json());
        wh["thread"] = w.value("thread", json());
        points.push_back({{"id", side + "-write"},
                          {"run", run},
                          {"launch", w.value("launch", launch)},
                          {"instret", w.value("instret", uint64_t(0))},
                          {"core", w.value("core", 0u)},
                          {"warp", w.value("warp", 0u)},
                          {"lane", w.value("lane", 0u)},
                          {"kind", "write"},
                          {"title", "Run " + side + ": the write whose value the divergent read saw"},
                          {"text", thread_of(w) + ", " + place(w) + at_line(w)},
                          {"header", wh}});
        links.push_back({{"from", side + "-write"}, {"to", id}, {"kind", "wrote"}});
      }
    }
  }
  json with_lines = marks;
  for (const json& p : points) with_lines.push_back(p);
  data["sources"] = sources_json(with_lines);
  data["points"] = std::move(points);
  data["links"] = std::move(links);
  data["detailed_marks"] = marks.size();
  data["marks"] = std::move(marks);
  return data;
}

json races_page_data(const std::string& kernel, const std::string& label, const DeviceConfig& config,
                     const std::vector<replay::LaunchTimeline>& timeline, const json& races, const std::string& text,
                     const engine::Symbols* sym) {
  json data = view_data(kernel, label, config);
  data["launches"] = launches_json(timeline, launch_name);
  data["report"] = text.empty() ? std::string("No race.") : text;
  json points = json::array(), links = json::array();
  size_t n = 0;
  for (const json& r : races) {
    ++n;
    const std::string race = "race " + std::to_string(n) + " (" + r.value("kind", "") + ") on " +
                             (r.value("local", false) ? "local " : "") + hex32(r.value("address", 0u));
    for (const char* which : {"first", "second"}) {
      const json& a = r[which];
      if (!a.contains("instret")) continue;
      json header = header_at(sym, a.value("pc", 0u), a.value("core", 0u), a.value("warp", 0u), a.value("lane", 0u));
      header["cta"] = a.value("cta", json());
      header["thread"] = a.value("thread", json());
      const std::string access =
          std::string(a.value("atomic", false) ? "atomic " : "") + (a.value("write", false) ? "write" : "read");
      points.push_back(
          {{"id", "r" + std::to_string(n) + which},
           {"run", 0},
           {"launch", r.value("launch", 1u)},
           {"instret", a.value("instret", uint64_t(0))},
           {"core", a.value("core", 0u)},
           {"warp", a.value("warp", 0u)},
           {"lane", a.value("lane", 0u)},
           {"kind", "access"},
           {"title", race + ": the " + (std::string(which) == "first" ? "earlier" : "later") + " " + access},
           {"text", thread_of(a) + ", " + place(a) + at_line(a)},
           {"header", header}});
    }
    // Two lanes of one instruction: the same place; the second is drawn a little lower.
    const size_t k = points.size();
    if (k >= 2 && points[k - 1]["instret"] == points[k - 2]["instret"] &&
        points[k - 1]["core"] == points[k - 2]["core"] && points[k - 1]["warp"] == points[k - 2]["warp"])
      points[k - 1]["nudge"] = true;
    links.push_back(
        {{"from", "r" + std::to_string(n) + "first"}, {"to", "r" + std::to_string(n) + "second"}, {"kind", "race"}});
  }
  data["sources"] = sources_json(points);
  data["points"] = std::move(points);
  data["links"] = std::move(links);
  return data;
}

bool write_nondet_page(const std::string& path, const std::string& kernel, const json& data) {
  return write_view_page(path, kernel + " - vxreplay", data);
}

}  // namespace vx::cli
