// Questions over the history (docs/time-travel.md, "Questions over the history"): origin, info
// writes, info executions. One quiet re-execution of the session's history gathers every write
// (replay/history.hpp); it is kept until the history grows, and asked as often as needed.
#include <algorithm>
#include <chrono>

#include "base/hex.hpp"
#include "checkpoint/store.hpp"
#include "cli/debugger.hpp"
#include "cli/text.hpp"
#include "replay/history.hpp"

namespace vx::cli {

namespace {

using nlohmann::json;

// The value of bytes [from, from + n) of a write, as stored (little-endian), in hex.
std::string write_bytes(uint32_t v, uint32_t from, uint32_t n) {
  uint32_t part = (v >> (8 * from)) & (n >= 4 ? 0xffffffffu : ((1u << (8 * n)) - 1));
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", int(2 * n), part);
  return buf;
}

// The time points `-range A,B` names: LAUNCH:INSTRUCTION, or an instruction of `launch`.
Result<engine::TimePoint> parse_point(const std::string& text, uint32_t launch) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) {
    auto i = parse_u64(text);
    if (!i) return make_error("'" + text + "' is not a point in time (LAUNCH:INSTRUCTION or INSTRUCTION)");
    return engine::TimePoint{launch, *i};
  }
  auto l = parse_u32(text.substr(0, colon));
  auto i = parse_u64(text.substr(colon + 1));
  if (!l || !i || *l == 0) return make_error("'" + text + "' is not a point in time (LAUNCH:INSTRUCTION)");
  return engine::TimePoint{*l, *i};
}

// Splits "-flag ... rest": the flags the command knows, then the rest (the expression).
struct Flags {
  bool go = false;
  std::optional<std::string> depth, range;
  std::string rest;
};
Result<Flags> split_flags(const std::string& name, std::string_view args, bool origin) {
  Flags f;
  for (;;) {
    args = trim(args);
    if (args.empty() || args[0] != '-') break;
    const size_t end = args.find_first_of(" \t");
    const std::string flag(args.substr(0, end));
    args = end == std::string_view::npos ? std::string_view() : args.substr(end);
    auto value = [&]() -> Result<std::string> {
      args = trim(args);
      const size_t e = args.find_first_of(" \t");
      std::string v(args.substr(0, e));
      args = e == std::string_view::npos ? std::string_view() : args.substr(e);
      if (v.empty()) return make_error(name + ": " + flag + " needs a value");
      return v;
    };
    if (origin && flag == "-goto") {
      f.go = true;
    } else if (origin && flag == "-depth") {
      auto v = value();
      if (!v) return v.error();
      f.depth = *v;
    } else if (!origin && flag == "-range") {
      auto v = value();
      if (!v) return v.error();
      f.range = *v;
    } else {
      return make_error(name + ": unknown option " + flag +
                        (origin ? " (origin takes -goto and -depth N)" : " (-range A,B)"));
    }
  }
  f.rest = std::string(args);
  return f;
}

// pc's file and line into *j (and its source line, trimmed), and that line as origin shows it
// ("      18\tcode"); "" without a line.
std::string source_of(const engine::Symbols* sym, uint32_t pc, json* j) {
  if (!sym) return "";
  auto loc = sym->locate(pc);
  if (!loc || !loc->line) return "";
  (*j)["file"] = text::base_name(loc->file);
  (*j)["line"] = loc->line;
  auto src = sym->source_line(loc->file, loc->line);
  if (!src) return "";
  std::string line(trim(*src));
  (*j)["source"] = line;
  return "      " + std::to_string(loc->line) + "\t" + line;
}

// The last host copy to global address `addr` made after launch `after` (0: any) and before launch
// `by` began, or nullptr. Host copies go between launches (Session::host_writes), so such a copy
// came after every kernel write of launch `after`: the byte's value is the copy's.
const engine::Session::HostWrite* copy_between(const std::vector<engine::Session::HostWrite>& copies, uint32_t addr,
                                               uint32_t after, uint32_t by) {
  const engine::Session::HostWrite* found = nullptr;
  for (const auto& c : copies)
    if (c.before_launch <= by && c.before_launch > after && addr >= c.addr && addr - c.addr < c.size) found = &c;
  return found;
}

constexpr uint32_t kMaxOriginDepth = 4;
constexpr size_t kMaxFollowed = 64;  // writes followed at one level of origin -depth

bool same_write(const replay::WriteRecord& a, const replay::WriteRecord& b) {
  return a.when == b.when && a.pc == b.pc && a.core == b.core && a.slot == b.slot && a.lane == b.lane;
}

}  // namespace

Result<std::pair<json, std::vector<replay::WriteRecord>>> Debugger::follow_values(
    const replay::HistoryIndex& h, const std::vector<replay::WriteRecord>& writes, uint32_t depth, std::string* text) {
  replay::DataflowTracker tracker(s_.config(), writes);
  auto passes = s_.observe_history(
      tracker, [&](uint32_t n, const DeviceContext&) { tracker.begin_launch(n); }, nullptr,
      [&](uint32_t n, uint64_t from, uint64_t to) { tracker.skipped(n, from, to); });
  if (!passes) return passes.error();
  std::vector<const std::vector<replay::ValueSource>*> sources;
  bool cut = false, unreached = false, unseen = false;
  for (const auto& r : tracker.results()) {
    sources.push_back(&r.sources);
    cut |= r.truncated;
    unreached |= !r.reached;
    unseen |= r.unseen;
  }
  auto out = describe_inputs(h, sources, cut, unreached, depth, writes.front().when.launch, text);
  if (unseen) {
    *text +=
        "    (a value followed crossed an interval the live session ran by Debug Module steps: what it took "
        "there is not known)\n";
    out.first["not_reexecuted"] = true;
  }
  return out;
}

std::pair<json, std::vector<replay::WriteRecord>> Debugger::describe_inputs(
    const replay::HistoryIndex& h, const std::vector<const std::vector<replay::ValueSource>*>& sources, bool cut,
    bool unreached, uint32_t depth, uint32_t launch, std::string* text) {
  // Grouped by the instruction that read each input; for a load, the writes that produced it.
  struct Group {
    replay::ValueSource::Kind kind;
    uint32_t pc = 0;
    uint64_t count = 0;
    uint32_t lo = UINT32_MAX, hi = 0;
    bool local = false;
    std::map<uint32_t, std::set<std::string>> writers;  // by the writing pc: the writing threads
    uint64_t unwritten = 0;
  };
  std::map<std::pair<int, uint32_t>, Group> groups;
  std::vector<replay::WriteRecord> next;
  const std::vector<engine::Session::HostWrite> copies = s_.host_writes();
  json inputs = json::array();
  uint64_t total = 0;
  bool dropped = false;
  for (size_t k = 0; k < sources.size(); ++k) {
    for (const replay::ValueSource& v : *sources[k]) {
      ++total;
      Group& g = groups[{int(v.kind), v.pc}];
      g.kind = v.kind;
      g.pc = v.pc;
      ++g.count;
      json jv = {{"of", k},
                 {"kind", v.kind == replay::ValueSource::Kind::Load  ? "load"
                          : v.kind == replay::ValueSource::Kind::Csr ? "csr"
                                                                     : "lanes"},
                 {"launch", v.when.launch},
                 {"instret", v.when.instret},
                 {"pc", v.pc},
                 {"value", v.value}};
      if (v.kind == replay::ValueSource::Kind::Load) {
        g.lo = std::min(g.lo, v.addr);
        g.hi = std::max(g.hi, v.addr);
        g.local = v.local;
        jv["addr"] = v.addr;
        jv["size"] = v.size;
        jv["local"] = v.local;
        // Every byte's producer: a kernel write, unless a host copy came after it (or none).
        const replay::MemoryPlace at{v.addr, v.size, v.local, v.core};
        std::vector<const replay::WriteRecord*> by_byte(v.size, nullptr);
        if (v.when.instret) by_byte = h.last_writers(at, engine::TimePoint{v.when.launch, v.when.instret - 1});
        json jws = json::array();
        bool other = false;
        for (uint32_t b = 0; b < by_byte.size(); ++b) {
          const replay::WriteRecord* w = by_byte[b];
          const bool copied = !v.local && copy_between(copies, v.addr + b, w ? w->when.launch : 0, v.when.launch);
          if (!w || copied) {
            other = true;
            continue;
          }
          if (b > 0 && by_byte[b - 1] == w) continue;
          g.writers[w->pc].insert(h.thread_name(w->when.launch, w->who));
          json jw;
          (void)write_text(h, *w, &jw);
          jws.push_back(jw);
          if (std::none_of(next.begin(), next.end(), [&](const replay::WriteRecord& x) { return same_write(x, *w); })) {
            if (next.size() < kMaxFollowed)
              next.push_back(*w);
            else
              dropped = true;
          }
        }
        if (!jws.empty()) jv["write"] = jws[0];
        if (jws.size() > 1) jv["writes"] = jws;
        if (other) ++g.unwritten;
      } else if (v.kind == replay::ValueSource::Kind::Csr) {
        jv["csr"] = v.addr;
      }
      inputs.push_back(jv);
    }
  }
  const engine::Symbols* sym = launch_symbols(launch);
  *text += "  depth " + std::to_string(depth) + ": " + (depth == 2 ? "the value written" : "the values written") +
           (sources.size() > 1 ? " by those " + std::to_string(sources.size()) + " writes" : "") + " came from " +
           std::to_string(total) + (total == 1 ? " input" : " inputs") +
           (total == 0 ? " (immediates and the launch's initial registers only)" : "") + (cut ? " (cut)" : "") +
           (unreached ? " (a write was not reached by its thread's replay)" : "") + (total ? ":\n" : "\n");
  for (const auto& [key, g] : groups) {
    const std::string what = g.kind == replay::ValueSource::Kind::Load  ? "load"
                             : g.kind == replay::ValueSource::Kind::Csr ? "CSR read"
                                                                        : "exchange with other lanes";
    *text += "    " + std::to_string(g.count) + " " + what + (g.count == 1 ? "" : "s") + " at " +
             describe_pc(g.pc, sym) + " in " + location_text(g.pc, sym);
    if (g.kind == replay::ValueSource::Kind::Load)
      *text += ", " + std::string(g.local ? "local " : "") + hex32(g.lo) + (g.hi != g.lo ? ".." + hex32(g.hi) : "");
    *text += "\n";
    for (const auto& [pc, threads] : g.writers)
      *text += "      written at " + location_text(pc, sym) + " by " + std::to_string(threads.size()) +
               (threads.size() == 1 ? " thread: " : " threads: ") + *threads.begin() +
               (threads.size() > 1 ? " .. " + *threads.rbegin() : "") + "\n";
    if (g.unwritten)
      *text += "      " + std::to_string(g.unwritten) +
               " read bytes no kernel instruction wrote since (a host copy, the kernel image's or arguments' among "
               "them, or the command processor)\n";
  }
  if (dropped)
    *text += "    (a next level follows the first " + std::to_string(kMaxFollowed) + " of the writes behind them)\n";
  return std::pair{json{{"depth", depth}, {"inputs", inputs}, {"truncated", cut}}, std::move(next)};
}

namespace {

// Whether a stored pass of a launch answers for a pass to `until` now. A pass to an earlier point
// gathers a prefix of a later one's (a pass stops at an exact count, and the schedule does not
// depend on where it stops), so any pass that went as far fits, cut there (HistoryIndex::load);
// so does one that ended, or that a device stop cut, before `until`: this pass would end there too.
bool stored_pass_fits(const checkpoint::HistoryRecord& r, uint64_t until) {
  if (r.version != checkpoint::kHistoryVersion) return false;
  return r.reached >= until || r.ended || (!r.complete && r.reached < r.until);
}

// What the passes could not read, as the answers say it ("" when they read everything).
std::string unread_text(const replay::HistoryIndex& h) {
  std::string cut, stepped;
  for (const auto& [n, p] : h.passes()) {
    if (!p.complete)
      cut += (cut.empty() ? "" : ", ") + std::string("launch ") + std::to_string(n) + " after instruction " +
             std::to_string(p.reached);
    for (const auto& [from, to] : p.stepped)
      stepped += (stepped.empty() ? "" : ", ") + std::string("launch ") + std::to_string(n) + " from instruction " +
                 std::to_string(from) + " to " + std::to_string(to);
  }
  std::string out;
  if (!cut.empty())
    out += "(not read: " + cut +
           "; a device stop the run went on past ends a quiet re-execution there, so later writes are missing)\n";
  if (!stepped.empty())
    out += "(not re-executed: " + stepped +
           ", which the live session ran by Debug Module steps; only the ends of such an interval are recorded "
           "(docs/live.md), so writes made inside it are missing)\n";
  return out;
}

}  // namespace

replay::HistoryIndex* Debugger::history(const std::set<uint32_t>& pcs, const std::string& name) {
  if (!s_.store()) {
    err(name + ": the history is read from the recording, and this session runs with --no-db.");
    return nullptr;
  }
  if (!s_.stopped()) {
    err(name + ": the history is read from a stop, and the kernel is not stopped" +
        (state_ == State::Exited ? std::string(" (it has exited: go back into the recording first, e.g. \"goto end\")")
                                 : std::string(".")));
    return nullptr;
  }
  // What the history holds now: how far each launch goes. An index stays while that is the same.
  const std::vector<uint64_t> extent = s_.history_extent();
  const bool executions = !pcs.empty();
  gathered_ms_ = 0;
  history_note_.clear();
  if (!executions && history_ && history_extent_ == extent) return history_.get();
  if (executions && executions_ && executions_extent_ == extent && executions_pcs_ == pcs) return executions_.get();
  const auto t0 = std::chrono::steady_clock::now();
  auto index = std::make_unique<replay::HistoryIndex>(s_.config());
  index->watch_pcs(pcs);
  // The writes of a launch come from the index held before when its extent is the same, else from
  // the recording when it keeps them (docs/store.md "History"); executions are always gathered.
  std::set<uint32_t> gather;
  read_from_recording_ = 0;
  for (uint32_t n = 1; n <= extent.size(); ++n) {
    const uint64_t until = extent[n - 1];
    if (until == 0) continue;
    if (!executions && history_ && n <= history_extent_.size() && history_extent_[n - 1] == until &&
        history_->passes().count(n)) {
      index->adopt(*history_, n);
      continue;
    }
    if (!executions) {
      auto stored = s_.store()->history(n, index->loader(n, until));
      if (!stored) {
        index->load_drop();
        history_note_ += "(the recording's stored history of launch " + std::to_string(n) +
                         " could not be read, so it was gathered again: " + stored.error().message + ")\n";
      } else if (*stored && stored_pass_fits(**stored, until)) {
        index->load_finish(**stored, until);
        ++read_from_recording_;
        continue;
      } else {
        index->load_drop();
      }
    }
    gather.insert(n);
  }
  if (!gather.empty()) {
    auto passes = s_.observe_history(
        *index, [&](uint32_t n, const DeviceContext& ctx) { index->begin_launch(n, ctx.launch); }, &gather);
    if (!passes) {
      history_.reset();  // it may have given launches to `index`
      history_extent_.clear();
      err(name + ": could not read the history: " + passes.error().message);
      return nullptr;
    }
    for (const auto& p : *passes) {
      index->end_launch(p);
      // Kept in the recording for later sessions when every later pass would see the same: the
      // launch's start is a checkpoint (records are immutable, the run deterministic).
      if (executions || s_.read_only() || !s_.launch_start_recorded(p.launch)) continue;
      if (auto r =
              s_.store()->put_history(index->head(p.launch), index->write_count(p.launch), index->source(p.launch));
          !r)
        history_note_ += "(the gathered history of launch " + std::to_string(p.launch) +
                         " could not be kept in the recording: " + r.error().message + ")\n";
    }
  }
  gathered_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  history_launches_gathered_ = uint32_t(gather.size());
  if (executions) {
    executions_ = std::move(index);
    executions_extent_ = extent;
    executions_pcs_ = pcs;
    return executions_.get();
  }
  history_ = std::move(index);
  history_extent_ = extent;
  return history_.get();
}

std::string Debugger::history_unread(const replay::HistoryIndex& h) const { return unread_text(h) + history_note_; }

json Debugger::history_data(const replay::HistoryIndex& h, std::chrono::steady_clock::time_point start) const {
  // What the question cost (BENCHMARKS.md, "Questions over the history"): gathered_ms is 0 when
  // the writes gathered before were reused; launches_read counts launches whose writes came from
  // the recording (docs/store.md "History"), launches_gathered those re-executed for this question.
  json stepped = json::array();
  uint64_t stored = 0;  // the recording's entries for these launches (docs/store.md "History")
  for (const auto& [n, p] : h.passes()) {
    for (const auto& [from, to] : p.stepped) stepped.push_back({{"launch", n}, {"from", from}, {"to", to}});
    if (s_.store()) stored += s_.store()->history_bytes(n);
  }
  return {{"writes", h.write_count()},
          {"index_bytes", h.bytes()},
          {"gathered_ms", gathered_ms_},
          {"launches_read", gathered_ms_ ? read_from_recording_ : 0},
          {"launches_gathered", gathered_ms_ ? history_launches_gathered_ : 0},
          {"not_reexecuted", stepped},
          {"stored_bytes", stored},
          {"elapsed_ms", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count()}};
}

std::string Debugger::write_text(const replay::HistoryIndex& h, const replay::WriteRecord& w, json* data) const {
  const engine::Symbols* sym = launch_symbols(w.when.launch);
  std::string who = h.thread_name(w.when.launch, w.who);
  std::string text = who + " (core " + std::to_string(w.core) + " warp " + std::to_string(w.slot) + " lane " +
                     std::to_string(w.lane) + "), launch " + std::to_string(w.when.launch) + " instruction " +
                     std::to_string(w.when.instret) + ", " + describe_pc(w.pc, sym) + " in " + location_text(w.pc, sym);
  json j = {{"launch", w.when.launch},
            {"instret", w.when.instret},
            {"pc", w.pc},
            {"core", w.core},
            {"warp", w.slot},
            {"lane", w.lane},
            {"thread", who},
            {"addr", w.addr},
            {"size", w.size},
            {"local", w.local},
            {"atomic", w.atomic},
            {"before", w.before},
            {"after", w.after}};
  if (std::string line = source_of(sym, w.pc, &j); !line.empty()) text += "\n" + line;
  *data = j;
  return text;
}

void Debugger::cmd_origin(Args a) {
  const auto start = std::chrono::steady_clock::now();
  auto f = split_flags("origin", a.args, true);
  if (!f) return usage(f.error().message);
  if (f->rest.empty()) return usage("origin: expected an expression (a variable, an array element, *(TYPE *)ADDRESS)");
  uint32_t depth = 1;
  if (f->depth) {
    auto d = parse_u32(*f->depth);
    if (!d || *d == 0 || *d > kMaxOriginDepth)
      return usage("origin: -depth takes a number from 1 to " + std::to_string(kMaxOriginDepth));
    depth = *d;
  }
  if (!ensure_stopped()) return;
  // A register of the focus lane ($a0, $ft2), or a C variable the focus frame keeps in one.
  if (auto e = Expr::parse(f->rest); e && focus_warp()) {
    const Expr::Node& n = *e->root();
    if (n.op == ExprOp::Var && (n.var.kind == debug::Variable::Kind::XReg || n.var.kind == debug::Variable::Kind::FReg))
      return origin_of_register(e->text(), n.var.index + (n.var.kind == debug::Variable::Kind::FReg ? 32 : 0), depth,
                                f->go);
    if (n.op == ExprOp::Var && n.var.kind == debug::Variable::Kind::Source)
      if (auto v = evaluate_c_in(n, focus_, frame_level_); v && v->reg && !v->address && *v->reg < 64) {
        if (frame_level_ != 0)
          return err("origin: " + e->text() +
                     " lives in a register of an outer frame: select frame 0 (its value "
                     "there is a saved copy)");
        return origin_of_register(e->text(), *v->reg, depth, f->go);
      }
  }
  auto place =
      bps_.lvalue_place("origin", f->rest, focus_warp() ? std::optional<Lane>(focus_) : std::nullopt, frame_level_);
  if (!place) return err(place.error().message);
  replay::HistoryIndex* h = history({}, "origin");
  if (!h) return;
  const engine::TimePoint now = s_.now();
  const replay::MemoryPlace mp{place->spec.addr, place->spec.len, place->spec.local,
                               uint32_t(std::max(place->spec.core, 0))};
  const std::vector<const replay::WriteRecord*> last = h->last_writers(mp, now);
  // A host copy to a byte after its last kernel write (a later launch) is where its value came from.
  const std::vector<engine::Session::HostWrite> copies = s_.host_writes();
  auto host_copy = [&](uint32_t addr, uint32_t after_launch) {
    return mp.local ? nullptr : copy_between(copies, addr, after_launch, now.launch);
  };
  std::string where = place->text + " (" + std::to_string(mp.len) + (mp.len == 1 ? " byte" : " bytes") + " at " +
                      (mp.local ? "local " : "") + hex32(mp.addr) + ")";
  std::string text = "origin of " + where + " at launch " + std::to_string(now.launch) + ", instruction " +
                     std::to_string(now.instret) + ":\n";
  json parts = json::array();
  const replay::WriteRecord* goto_write = nullptr;
  for (uint32_t i = 0; i < mp.len;) {
    const replay::WriteRecord* w = last[i];
    const engine::Session::HostWrite* c = host_copy(mp.addr + i, w ? w->when.launch : 0);
    // A run of bytes with the same origin.
    uint32_t j = i + 1;
    while (j < mp.len && last[j] == w && host_copy(mp.addr + j, w ? w->when.launch : 0) == c) ++j;
    const std::string bytes = mp.len == j - i && i == 0 ? "  "
                                                        : "  bytes " + std::to_string(i) +
                                                              (j - i > 1 ? ".." + std::to_string(j - 1) : "") + ": ";
    json part = {{"offset", i}, {"length", j - i}};
    if (c) {
      // A copy that starts with the code of the image the next launch runs is that image's upload.
      const engine::Symbols* sym = launch_symbols(std::min(c->before_launch, s_.launches_started()));
      const bool image = sym && sym->function_at(c->addr).has_value();
      text += bytes + "copied by the host before launch " + std::to_string(c->before_launch) + " (" +
              std::to_string(c->size) + " bytes to " + hex32(c->addr) + (image ? ": the kernel image" : "") +
              "); no kernel instruction wrote " + (w ? "them after it\n" : "them in this history\n");
      part["host_copy"] = {{"before_launch", c->before_launch}, {"addr", c->addr}, {"size", c->size}, {"image", image}};
    } else if (w) {
      json jw;
      const uint32_t from = mp.addr + i - w->addr;
      text += bytes + "written by " + write_text(*h, *w, &jw) + "\n";
      text += std::string(bytes.size(), ' ') + "  it wrote " + write_bytes(w->after, from, j - i) + " over " +
              write_bytes(w->before, from, j - i) + (w->atomic ? " (an atomic)" : "") + "\n";
      part["write"] = jw;
      if (!goto_write) goto_write = w;
    } else {
      text += bytes +
              "not written by any kernel instruction or host copy in this history: it holds what device memory "
              "held before (zero where nothing was put), or what a command buffer's STORE_REG64, STORE_IMM64 or "
              "COPY_MEM64 put there (the command processor's writes are not in the history)\n";
      part["unwritten"] = true;
    }
    // An interval a live session stepped, after that write or copy (or the history's start) and
    // before now: a write inside it would be the origin instead, and it is not in the history.
    const engine::TimePoint since = c ? engine::TimePoint{c->before_launch, 0} : w ? w->when : engine::TimePoint{0, 0};
    json unseen = json::array();
    for (const auto& [n, p] : h->passes())
      for (const auto& [from, to] : p.stepped)
        if (since < engine::TimePoint{n, to} && engine::TimePoint{n, from} < now) {
          unseen.push_back({{"launch", n}, {"from", from}, {"to", to}});
          text += std::string(bytes.size(), ' ') + "  unless it was written from launch " + std::to_string(n) +
                  " instruction " + std::to_string(from) + " to " + std::to_string(to) +
                  ", which the live session ran by Debug Module steps (not re-executed)\n";
        }
    if (!unseen.empty()) part["not_reexecuted"] = unseen;
    parts.push_back(part);
    i = j;
  }
  // -depth: what those writes were computed from, one level per pass over the history.
  std::vector<replay::WriteRecord> level;
  for (const replay::WriteRecord* w : last)
    if (w && std::none_of(level.begin(), level.end(), [&](const replay::WriteRecord& x) { return same_write(x, *w); }))
      level.push_back(*w);
  json levels = json::array();
  for (uint32_t d = 2; d <= depth && !level.empty(); ++d) {
    auto inputs = follow_values(*h, level, d, &text);
    if (!inputs) return err("origin -depth: " + inputs.error().message);
    levels.push_back(inputs->first);
    level = std::move(inputs->second);
  }
  text += history_unread(*h);
  out(text, {{"expression", place->text},
             {"addr", mp.addr},
             {"length", mp.len},
             {"local", mp.local},
             {"launch", now.launch},
             {"instret", now.instret},
             {"origin", parts},
             {"depth", levels},
             {"history", history_data(*h, start)}});
  if (f->go) {
    if (!goto_write) return err("origin -goto: no kernel instruction wrote " + place->text + " before this point");
    goto_point(goto_write->when, Lane{goto_write->core, goto_write->slot, goto_write->lane});
  }
}

void Debugger::origin_of_register(const std::string& what, unsigned reg, uint32_t depth, bool go) {
  const auto start = std::chrono::steady_clock::now();
  replay::HistoryIndex* h = history({}, "origin");
  if (!h) return;
  const WarpState* w = focus_warp();
  if (!w) return err("origin: no focus lane");
  const engine::TimePoint now = s_.now();
  const bool grid = s_.context().launch.kind == LaunchKind::Grid;
  // The focus lane's thread up to now, as a target that is never reached (pc 0).
  replay::WriteRecord me;
  me.when = now;
  me.core = focus_.core;
  me.slot = focus_.slot;
  me.lane = focus_.lane;
  me.who = grid ? replay::LaunchThread{true, w->cta_linear, w->cta_rank * nt() + focus_.lane}
                : replay::LaunchThread{false, 0, w->instance_base + focus_.lane};
  replay::DataflowTracker tracker(s_.config(), {me});
  auto passes = s_.observe_history(
      tracker, [&](uint32_t n, const DeviceContext&) { tracker.begin_launch(n); }, nullptr,
      [&](uint32_t n, uint64_t from, uint64_t to) { tracker.skipped(n, from, to); });
  if (!passes) return err("origin: could not read the history: " + passes.error().message);
  const auto state = tracker.register_state(0, reg);
  const engine::Symbols* sym = launch_symbols(now.launch);
  const std::string name = reg < 32 ? std::string(xreg_name(reg)) : "f" + std::to_string(reg - 32);
  const std::string who = h->thread_name(now.launch, me.who);
  std::string text = "origin of " + what + " (register " + name + " of " + who + ", core " + std::to_string(me.core) +
                     " warp " + std::to_string(me.slot) + " lane " + std::to_string(me.lane) + ") at launch " +
                     std::to_string(now.launch) + ", instruction " + std::to_string(now.instret) + ":\n";
  json data = {{"expression", what}, {"register", name}, {"launch", now.launch}, {"instret", now.instret}};
  if (state.written) {
    text += "  written by instruction " + std::to_string(state.written->instret) + " of launch " +
            std::to_string(state.written->launch) + ", " + describe_pc(state.pc, sym) + " in " +
            location_text(state.pc, sym) + "\n";
    json jw = {{"launch", state.written->launch}, {"instret", state.written->instret}, {"pc", state.pc}};
    if (std::string line = source_of(sym, state.pc, &jw); !line.empty()) text += line + "\n";
    data["write"] = jw;
  } else {
    text += "  not written in this launch by the thread: it holds what the launch started it with\n";
    data["unwritten"] = true;
  }
  if (state.unseen) {
    const auto& [n, from, to] = state.interval;
    text += "  unless it was written (or computed from registers written) from launch " + std::to_string(n) +
            " instruction " + std::to_string(from) + " to " + std::to_string(to) +
            ", which the live session ran by Debug Module steps (not re-executed)\n";
    data["not_reexecuted"] = {{"launch", n}, {"from", from}, {"to", to}};
  }
  json levels = json::array();
  if (depth >= 2 && state.written) {
    auto first = describe_inputs(*h, {state.sources}, false, false, 2, now.launch, &text);
    levels.push_back(first.first);
    std::vector<replay::WriteRecord> level = std::move(first.second);
    for (uint32_t d = 3; d <= depth && !level.empty(); ++d) {
      auto inputs = follow_values(*h, level, d, &text);
      if (!inputs) return err("origin -depth: " + inputs.error().message);
      levels.push_back(inputs->first);
      level = std::move(inputs->second);
    }
  }
  data["depth"] = levels;
  data["history"] = history_data(*h, start);
  text += history_unread(*h);
  out(text, data);
  if (go) {
    if (!state.written) return err("origin -goto: nothing in this launch wrote " + what + " before this point");
    goto_point(*state.written, Lane(focus_));
  }
}

void Debugger::info_writes(const std::string& args) {
  const auto start = std::chrono::steady_clock::now();
  // EXPR [-range A,B]: the option may follow the expression, as the usage shows it.
  std::string line = args;
  std::optional<std::string> trailing;
  if (const size_t at = line.rfind(" -range "); at != std::string::npos) {
    trailing = std::string(trim(std::string_view(line).substr(at + 8)));
    line = line.substr(0, at);
  }
  auto f = split_flags("info writes", line, false);
  if (f && trailing) {
    if (f->range) return usage("info writes: -range given twice");
    f->range = *trailing;
  }
  if (!f) return usage(f.error().message);
  if (f->rest.empty())
    return usage("info writes: expected an expression (a variable, an array element, *(TYPE *)ADDRESS)");
  if (!ensure_stopped()) return;
  engine::TimePoint from{0, 0}, to{UINT32_MAX, UINT64_MAX};
  if (f->range) {
    const size_t comma = f->range->find(',');
    if (comma == std::string::npos)
      return usage("info writes: -range takes A,B (two points in time, LAUNCH:INSTRUCTION)");
    auto a = parse_point(f->range->substr(0, comma), s_.now().launch);
    auto b = parse_point(f->range->substr(comma + 1), s_.now().launch);
    if (!a) return usage("info writes: -range: " + a.error().message);
    if (!b) return usage("info writes: -range: " + b.error().message);
    if (*b < *a) return usage("info writes: -range " + *f->range + " ends before it starts");
    from = *a;
    to = *b;
  }
  auto place = bps_.lvalue_place("info writes", f->rest, focus_warp() ? std::optional<Lane>(focus_) : std::nullopt,
                                 frame_level_);
  if (!place) return err(place.error().message);
  replay::HistoryIndex* h = history({}, "info writes");
  if (!h) return;
  const replay::MemoryPlace mp{place->spec.addr, place->spec.len, place->spec.local,
                               uint32_t(std::max(place->spec.core, 0))};
  std::vector<const replay::WriteRecord*> all = h->writes_to(mp, to);
  std::erase_if(all, [&](const replay::WriteRecord* w) { return w->when < from; });
  constexpr size_t kShown = 50;
  const engine::TimePoint now = s_.now();
  std::string text = std::to_string(all.size()) + (all.size() == 1 ? " write" : " writes") + " to " + place->text +
                     " (" + std::to_string(mp.len) + (mp.len == 1 ? " byte" : " bytes") + " at " +
                     (mp.local ? "local " : "") + hex32(mp.addr) + ")" +
                     (f->range ? " from " + std::to_string(from.launch) + ":" + std::to_string(from.instret) + " to " +
                                     std::to_string(to.launch) + ":" + std::to_string(to.instret)
                               : " in the history") +
                     (all.empty() ? "." : ":") + "\n";
  json list = json::array();
  bool marked_now = false;
  for (size_t i = 0; i < all.size(); ++i) {
    const replay::WriteRecord& w = *all[i];
    if (!marked_now && now < w.when) {
      marked_now = true;
      if (i < kShown)
        text += "  --- now: launch " + std::to_string(now.launch) + ", instruction " + std::to_string(now.instret) +
                " ---\n";
    }
    json jw;
    std::string line = write_text(*h, w, &jw);
    list.push_back(jw);
    if (i >= kShown) continue;
    // The part of the write that lands in the place, as the place holds it.
    const uint32_t lo = std::max(w.addr, mp.addr),
                   hi = std::min<uint64_t>(uint64_t(w.addr) + w.size, uint64_t(mp.addr) + mp.len);
    text += "  " + std::to_string(i + 1) + ". " + line + "\n      " +
            (lo == w.addr && hi == uint64_t(w.addr) + w.size && w.size == mp.len
                 ? std::string()
                 : hex32(w.addr) + " (" + std::to_string(w.size) + "): ") +
            write_bytes(w.before, 0, w.size) + " -> " + write_bytes(w.after, 0, w.size) +
            (w.atomic ? " (atomic)" : "") + "\n";
  }
  if (all.size() > kShown)
    text += "  ... " + std::to_string(all.size() - kShown) + " more (-range A,B shows a part of the history)\n";
  text += history_unread(*h);
  out(text, {{"expression", place->text},
             {"addr", mp.addr},
             {"length", mp.len},
             {"local", mp.local},
             {"count", all.size()},
             {"writes", list},
             {"history", history_data(*h, start)}});
}

void Debugger::info_executions(const std::string& args) {
  const auto start = std::chrono::steady_clock::now();
  const std::string location(trim(args));
  if (location.empty()) return usage("info executions: expected a location (FILE:LINE, FUNCTION, *ADDRESS)");
  if (!ensure_stopped()) return;
  std::set<uint32_t> pcs;
  if (location[0] == '*') {
    auto e = Expr::parse(std::string_view(location).substr(1));
    if (!e) return usage("info executions: bad address: " + e.error().message);
    auto v = evaluate(*e, focus_warp() ? std::optional<Lane>(focus_) : std::nullopt);
    if (!v) return err("info executions: bad address: " + v.error().message);
    if (*v < 0 || *v > int64_t(UINT32_MAX))
      return err("info executions: address " + std::to_string(*v) + " is not 32-bit");
    pcs.insert(uint32_t(*v));
  }
  // A source location is resolved in each launch's image (a host program may run several at the
  // same addresses): an execution counts when its pc is LOC in the image its launch ran.
  std::map<const engine::Symbols*, std::set<uint32_t>> in_image;
  auto resolved = [&](const engine::Symbols* sym) -> const std::set<uint32_t>* {
    auto it = in_image.find(sym);
    if (it == in_image.end()) {
      std::set<uint32_t> at;
      if (sym)
        if (auto r = sym->resolve(location)) at.insert(r->addresses.begin(), r->addresses.end());
      it = in_image.emplace(sym, std::move(at)).first;
    }
    return &it->second;
  };
  if (location[0] != '*') {
    if (!sym_ && !launch_symbols(s_.now().launch))
      return err("info executions: no symbols in the kernel image: only *ADDRESS locations work");
    const engine::Symbols* here = sym_ ? sym_ : launch_symbols(s_.now().launch);
    if (auto r = here->resolve(location); !r) return err("info executions: " + r.error().message);
    for (uint32_t n = 1; n <= s_.launches_started(); ++n) {
      const auto* at = resolved(launch_symbols(n));
      pcs.insert(at->begin(), at->end());
    }
    const auto* at = resolved(here);
    pcs.insert(at->begin(), at->end());
  }
  replay::HistoryIndex* h = history(pcs, "info executions");
  if (!h) return;
  std::vector<replay::ExecutionRecord> ex;
  for (const replay::ExecutionRecord& e : h->executions())
    if (location[0] == '*' || resolved(launch_symbols(e.when.launch))->count(e.pc)) ex.push_back(e);
  // Per warp of each launch: how many times, the first and last, and every lane that ran it.
  struct PerWarp {
    uint32_t launch = 0, core = 0, slot = 0;
    uint64_t count = 0;
    engine::TimePoint first, last;
    std::set<std::pair<uint32_t, uint32_t>> threads;  // (CTA, thread) or (0, instance)
    bool grid = true;
  };
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, PerWarp> warps;
  for (const replay::ExecutionRecord& e : ex) {
    PerWarp& p = warps[{e.when.launch, e.core, e.slot}];
    if (p.count == 0) {
      p.launch = e.when.launch;
      p.core = e.core;
      p.slot = e.slot;
      p.first = e.when;
    }
    ++p.count;
    p.last = e.when;
    p.grid = e.grid;
    for (uint32_t lane = 0; lane < 32; ++lane)
      if (e.tmask & (1u << lane))
        p.threads.insert(e.grid ? std::pair{e.cta, e.rank * nt() + lane} : std::pair{0u, e.instance_base + lane});
  }
  std::string pcs_text;
  for (uint32_t pc : pcs) pcs_text += (pcs_text.empty() ? "" : ", ") + hex32(pc);
  std::string text = location + " (" + pcs_text + ") ran " + std::to_string(ex.size()) +
                     (ex.size() == 1 ? " time" : " times") + " in the history" + (ex.empty() ? "." : ":") + "\n";
  json list = json::array();
  for (const auto& [key, p] : warps) {
    text += "  launch " + std::to_string(p.launch) + " core " + std::to_string(p.core) + " warp " +
            std::to_string(p.slot) + ": " + std::to_string(p.count) + (p.count == 1 ? " time" : " times") +
            ", instructions " + std::to_string(p.first.instret) +
            (p.count > 1 ? " to " + std::to_string(p.last.instret) : "") + "\n    threads:";
    json threads = json::array();
    std::string line;
    for (const auto& [cta, thread] : p.threads) {
      const std::string t = h->thread_name(p.launch, replay::LaunchThread{p.grid, cta, thread});
      threads.push_back(t);
      text += (line.empty() ? " " : ", ") + t;
      line = t;
    }
    text += "\n";
    list.push_back({{"launch", p.launch},
                    {"core", p.core},
                    {"warp", p.slot},
                    {"count", p.count},
                    {"first", p.first.instret},
                    {"last", p.last.instret},
                    {"threads", threads}});
  }
  json each = json::array();
  for (const replay::ExecutionRecord& e : ex)
    each.push_back({{"launch", e.when.launch},
                    {"instret", e.when.instret},
                    {"pc", e.pc},
                    {"core", e.core},
                    {"warp", e.slot},
                    {"tmask", e.tmask}});
  text += history_unread(*h);
  out(text, {{"location", location},
             {"pcs", pcs},
             {"count", ex.size()},
             {"warps", list},
             {"executions", each},
             {"history", history_data(*h, start)}});
}

}  // namespace vx::cli
