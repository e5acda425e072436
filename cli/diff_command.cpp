#include "cli/diff_command.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "cli/command.hpp"
#include "cli/debug_command.hpp"
#include "cli/kernel_symbols.hpp"
#include "cli/nondet_page.hpp"
#include "cli/replay_command.hpp"
#include "cli/session_options.hpp"
#include "device/image.hpp"
#include "device/isa.hpp"
#include "engine/session.hpp"
#include "replay/history.hpp"
#include "replay/recording.hpp"

namespace vx::cli {

namespace {

using nlohmann::json;
using replay::Divergence;
using replay::ThreadKey;
using replay::ThreadObs;

using replay::dims3;
using replay::split3;

// Software coordinates of a thread, as a person names it.
struct ThreadName {
  std::string text;
  json data;
};
ThreadName name_thread(const replay::ObservationLog& log, const ThreadKey& k) {
  ThreadName n;
  n.data = {{"launch", k.launch}};
  if (k.launch == 0 || k.launch > log.launches()) return n;
  const LaunchState& l = log.launch(k.launch);
  if (l.kind == LaunchKind::Grid) {
    auto cta = split3(k.unit, l.grid), thread = split3(k.thread, l.block);
    n.text = "CTA " + dims3(cta) + " thread " + dims3(thread);
    n.data["cta"] = cta;
    n.data["thread"] = thread;
  } else {
    n.text = "instance " + std::to_string(k.thread);
    n.data["instance"] = k.thread;
  }
  if (log.launches() > 1) n.text += " of launch " + std::to_string(k.launch);
  return n;
}

struct Where {
  std::string text;  // "racy (racy.c:21)"
  std::string source;
  json data;
};
Where where_is(const engine::Symbols* sym, uint32_t pc) {
  Where w;
  w.data = {{"pc", pc}};
  if (!sym) return w;
  std::string function;
  if (auto f = sym->function_at(pc)) function = f->name;
  if (auto loc = sym->locate(pc); loc && loc->line) {
    const std::string base = std::filesystem::path(loc->file).filename().string();
    w.text = (function.empty() ? loc->function : function) + " (" + base + ":" + std::to_string(loc->line) + ")";
    w.data["function"] = function.empty() ? loc->function : function;
    w.data["file"] = base;
    w.data["line"] = loc->line;
    if (auto src = sym->source_line(loc->file, loc->line)) {
      size_t start = src->find_first_not_of(" \t");
      w.source = start == std::string::npos ? "" : src->substr(start);
      w.data["source"] = w.source;
    }
  } else if (!function.empty()) {
    w.text = function;
    w.data["function"] = function;
  }
  return w;
}

std::string what_is_read(const ThreadObs& o) {
  switch (o.cls) {
    case InsnClass::Csr: return std::string("CSR ") + (csr_name(o.addr)[0] ? csr_name(o.addr) : hex32(o.addr));
    case InsnClass::Warp: return "the other lanes";
    default: return std::string(o.local ? "local " : "") + hex32(o.addr);
  }
}

std::pair<std::string, json> describe_obs(const replay::ObservationLog& log, const engine::Symbols* sym,
                                          const ThreadObs& o, const std::optional<ThreadKey>& writer) {
  std::string t = "core " + std::to_string(o.core) + " warp " + std::to_string(o.slot) + " lane " +
                  std::to_string(o.lane) + ", instruction " + std::to_string(o.launch_instret) +
                  " of the launch: read " + hex32(o.value) + " from " + what_is_read(o);
  json j = {{"core", o.core},
            {"warp", o.slot},
            {"lane", o.lane},
            {"instret", o.launch_instret},
            {"pc", o.pc},
            {"value", o.value},
            {"instruction", disassemble(o.word, o.pc)}};
  if (o.cls == InsnClass::Csr) j["csr"] = o.addr;
  if (o.cls == InsnClass::Load || o.cls == InsnClass::Atomic) {
    j["address"] = o.addr;
    j["local"] = o.local;
  }
  if (o.cls == InsnClass::Load || o.cls == InsnClass::Atomic) {
    if (o.writer.valid && writer) {
      ThreadName wn = name_thread(log, *writer);
      Where ww = where_is(sym, o.writer.pc);
      t += "\n      written by " + wn.text + " (core " + std::to_string(o.writer.core) + " warp " +
           std::to_string(o.writer.slot) + " lane " + std::to_string(o.writer.lane) + ") at " + hex32(o.writer.pc) +
           (ww.text.empty() ? "" : " " + ww.text) + ", instruction " + std::to_string(o.writer.launch_instret) +
           (ww.source.empty() ? "" : "\n        " + ww.source);
      json w = wn.data;
      w.update(ww.data);
      w["core"] = o.writer.core;
      w["warp"] = o.writer.slot;
      w["lane"] = o.writer.lane;
      w["instret"] = o.writer.launch_instret;
      j["writer"] = w;
    } else {
      t += "\n      not written by the kernel in this launch (the value the launch started with)";
      j["writer"] = nullptr;
    }
  }
  return {t, j};
}

std::string hex_bytes(const std::vector<uint8_t>& b) {
  std::string s;
  char x[4];
  for (uint8_t v : b) {
    std::snprintf(x, sizeof x, "%02x", v);
    s += (s.empty() ? "" : " ") + std::string(x);
  }
  return s;
}

// The startup code (the image's entry function): a re-used warp slot skips it, so it is placement.
std::pair<uint32_t, uint32_t> startup_range(const engine::Symbols* sym, uint32_t start_pc) {
  if (!sym) return {0, 0};
  auto f = sym->function_at(start_pc);
  if (!f) return {0, 0};
  return {f->lo, f->hi};
}

// The kernel image's code for the observer (atomic_result_used).
replay::CodeReader code_reader(const KernelImage& image) {
  auto segs = std::make_shared<std::vector<ImageSegment>>(image.segments);
  return [segs](uint32_t pc, uint32_t* word) {
    for (const ImageSegment& s : *segs)
      if (pc >= s.vaddr && uint64_t(pc) + 4 <= uint64_t(s.vaddr) + s.bytes.size()) {
        std::memcpy(word, s.bytes.data() + (pc - s.vaddr), 4);
        return true;
      }
    return false;
  };
}

struct Report {
  std::string text;
  json data;
};

Report make_report(const ObservedRun& a, const ObservedRun& b, const replay::DiffReport& r, const engine::Symbols* sym,
                   bool open_hint) {
  Report out;
  std::ostringstream t;
  json j;
  j["same"] = r.same();
  j["a"] = {
      {"label", a.label}, {"seed", a.seed}, {"config", a.config.to_string()}, {"outcome", run_end(a.run).outcome}};
  j["b"] = {
      {"label", b.label}, {"seed", b.seed}, {"config", b.config.to_string()}, {"outcome", run_end(b.run).outcome}};
  j["threads_compared"] = r.threads_compared;
  j["threads_diverged"] = r.threads_diverged;
  j["observations"] = {r.observations_a, r.observations_b};
  if (r.same()) {
    t << "The runs do not differ: A (" << a.label << ") and B (" << b.label << ") observed the same values in all "
      << r.threads_compared << " threads and ended alike (" << run_end(a.run).outcome << ").\n";
  } else {
    t << "The runs differ: A (" << a.label << ") and B (" << b.label << ").\n";
  }
  if (r.first) {
    const Divergence& d = *r.first;
    ThreadName tn = name_thread(*a.log, d.thread);
    const ThreadObs& any = d.a ? *d.a : *d.b;
    Where w = where_is(sym, any.pc);
    t << "First divergence (" << replay::divergence_kind_name(d.kind) << "): " << tn.text << "\n";
    t << "  at " << hex32(any.pc) << (w.text.empty() ? "" : " " + w.text) << ": " << disassemble(any.word, any.pc)
      << "\n";
    if (!w.source.empty()) t << "    " << w.source << "\n";
    json dj = tn.data;
    dj["kind"] = replay::divergence_kind_name(d.kind);
    dj["index"] = d.index;
    dj.update(w.data);
    dj["instruction"] = disassemble(any.word, any.pc);
    if (d.a) {
      auto [text, data] = describe_obs(*a.log, sym, *d.a, d.writer_a);
      t << "  A: " << text << "\n";
      dj["a"] = data;
    } else {
      t << "  A: the thread made no such observation (it ended, or went another way)\n";
      dj["a"] = nullptr;
    }
    if (d.b) {
      if (d.kind == replay::DivergenceKind::Path) {
        Where wb = where_is(sym, d.b->pc);
        t << "  B is at " << hex32(d.b->pc) << (wb.text.empty() ? "" : " " + wb.text) << " instead\n";
      }
      auto [text, data] = describe_obs(*b.log, sym, *d.b, d.writer_b);
      t << "  B: " << text << "\n";
      dj["b"] = data;
    } else {
      t << "  B: the thread made no such observation (it ended, or went another way)\n";
      dj["b"] = nullptr;
    }
    t << "Threads that diverged: " << r.threads_diverged << " of " << r.threads_compared << ".\n";
    j["first_divergence"] = dj;
  } else {
    j["first_divergence"] = nullptr;
    if (!r.same()) t << "No thread observed a different value.\n";
  }
  json fj;
  fj["outcome_differs"] = r.outcome_differs;
  fj["console_differs"] = r.console_differs;
  fj["memory_bytes_differ"] = r.memory_bytes_differ;
  json mem = json::array();
  for (const replay::MemoryDifference& m : r.memory)
    mem.push_back({{"addr", m.addr}, {"len", m.len}, {"a", hex_bytes(m.a)}, {"b", hex_bytes(m.b)}});
  fj["memory"] = mem;
  j["final"] = fj;
  if (!r.same()) {
    t << "Final differences:\n";
    const std::string oa = run_end(a.run).outcome, ob = run_end(b.run).outcome;
    t << "  outcome: " << (r.outcome_differs ? "A " + oa + ", B " + ob : "the same (" + oa + ")") << "\n";
    if (r.console_differs.empty()) {
      t << "  console: the same\n";
    } else {
      t << "  console: hart rings";
      for (uint32_t s : r.console_differs) t << " " << s;
      t << " differ\n";
    }
    if (r.memory_bytes_differ == 0) {
      t << "  memory: the same\n";
    } else {
      t << "  memory: " << r.memory_bytes_differ
        << (r.memory_bytes_differ == 1 ? " byte differs\n" : " bytes differ\n");
      for (const replay::MemoryDifference& m : r.memory) {
        Where w = where_is(sym, m.addr);
        std::string sym_name;
        if (sym)
          if (auto dsc = sym->describe(m.addr)) sym_name = " <" + *dsc + ">";
        t << "    " << hex32(m.addr) << sym_name << " (" << m.len << (m.len == 1 ? " byte" : " bytes") << "): A "
          << hex_bytes(m.a) << ", B " << hex_bytes(m.b) << "\n";
      }
    }
    if (r.first && open_hint) t << "Debug it from there: the same command with --open A or --open B.\n";
  }
  out.text = t.str();
  out.data = j;
  return out;
}

// A recording re-executed from its host operations under the observer. timeline: keep the
// recording's own timeline in run.timeline (the replay is the recorded run: the same points).
Result<ObservedRun> observe_recording(const std::string& dir, std::optional<engine::Symbols>* symbols,
                                      replay::RecordingInfo* info_out, const replay::ObservationLog* reference,
                                      bool timeline = false) {
  auto info = replay::inspect_recording(dir);
  if (!info) return info.error();
  ObservedRun o;
  o.label = dir;
  o.seed = info->options.seed;
  o.config = info->config;
  if (info->image && !symbols->has_value()) {
    // From memory, as replay reads them.
    if (auto sy = engine::Symbols::load_bytes(info->image_bytes, *info->image_name))
      symbols->emplace(std::move(sy).value());
  }
  const engine::Symbols* sym = symbols->has_value() ? &**symbols : nullptr;
  o.log = std::make_unique<replay::ObservationLog>(
      info->config, info->image ? startup_range(sym, info->image->start_pc) : std::pair<uint32_t, uint32_t>{0, 0},
      info->image ? code_reader(*info->image) : replay::CodeReader{});
  o.log->compare_with(reference);
  auto opened = open_model_device(info->config, info->options);
  if (!opened) return make_error("the recording's device: " + opened.error().message);
  Driver& dev = **opened;
  dev.set_observer(o.log.get());
  // Replayed as `vxreplay replay` opens it, writing nothing and taking no automatic checkpoints.
  engine::SessionOptions so = replay_session_options(info->header, dir, "");
  so.read_only = true;
  so.checkpoint_interval = 0;
  auto session = engine::Session::create(dev, so);
  if (!session) return make_error("cannot open the recording: " + session.error().message);
  engine::Session& s = **session;
  if (auto r = s.load_recording(); !r) return make_error("the recording " + dir + ": " + r.error().message);
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    auto ev = s.resume();
    for (const ConsoleChunk& c : s.take_console()) o.run.console[c.slot] += c.bytes;
    if (!ev) return make_error("the recording " + dir + ": " + ev.error().message);
    if (ev->reason == engine::StopReason::Exited) {
      o.run.end = EventKind::Completed;
      o.run.exit_code = ev->exit_code;
      o.run.status = ev->exit_code == 0 ? kExitOk : int(std::min<uint32_t>(ev->exit_code, 63));
      break;
    }
    if (ev->reason == engine::StopReason::EndOfRecording || ev->reason == engine::StopReason::Killed) {
      o.run.end = EventKind::Completed;
      o.run.error = engine::stop_reason_name(ev->reason);
      break;
    }
    if (ev->reason == engine::StopReason::Exception || ev->reason == engine::StopReason::Assertion ||
        ev->reason == engine::StopReason::Watchdog) {
      o.run.end = EventKind::Exception;
      o.run.exception = ev->exception;
      o.run.error = "device exception: " + ev->exception.to_string();
      o.run.status = kExitDeviceStop;
      break;
    }
  }
  o.run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  dev.set_observer(nullptr);
  if (checkpoint::Store* store = s.store(); timeline && store) {
    auto t = replay::read_warp_timeline(*store);
    if (!t) return with_context("the recording " + dir + "'s timeline: ", t.error());
    o.run.timeline = std::move(t).value();
  }
  if (info->image)
    for (const ImageSegment& seg : info->image->segments) {
      std::vector<uint8_t> bytes(seg.mem_size);
      if (dev.copy_from_device(seg.vaddr, bytes)) o.run.memory.emplace_back(seg.vaddr, std::move(bytes));
    }
  *info_out = std::move(info).value();
  return o;
}

// The header's workload without the device and seed: what must match for two recordings to be
// two runs of one workload.
std::string workload_shape(const std::string& w) {
  size_t on = w.rfind(" on ");
  std::string s = on == std::string::npos ? w : w.substr(0, on);
  size_t grid = s.find(" grid ");
  return grid == std::string::npos ? s : s.substr(grid);
}

std::string thread_text(const LaunchState& l, uint32_t unit, uint32_t thread, json* data) {
  if (l.kind != LaunchKind::Grid) {
    (*data)["instance"] = thread;
    return "instance " + std::to_string(thread);
  }
  (*data)["cta"] = split3(unit, l.grid);
  (*data)["thread"] = split3(thread, l.block);
  return replay::thread_text(l, unit, thread);
}

std::pair<std::string, json> race_access(const replay::Race& r, const replay::RaceAccess& a,
                                         const engine::Symbols* sym) {
  json j;
  std::string who = thread_text(r.shape, a.unit, a.thread, &j);
  Where w = where_is(sym, a.pc);
  j.update(w.data);
  j["write"] = a.write;
  j["atomic"] = a.atomic;
  // When and where it ran: a point on the warps' timeline.
  j["instret"] = a.launch_instret;
  j["core"] = a.core;
  j["warp"] = a.slot;
  j["lane"] = a.lane;
  std::string t = std::string(a.atomic ? "atomic " : "") + (a.write ? "write" : "read") + " by " + who + " at " +
                  hex32(a.pc) + (w.text.empty() ? "" : " " + w.text);
  if (!w.source.empty()) t += "\n      " + w.source;
  return {t, j};
}

// One race per pair of source lines (the detector keeps one per pair of PCs: an unrolled loop has
// many PCs for one line).
std::vector<replay::Race> merge_by_source(const std::vector<replay::Race>& races, const engine::Symbols* sym) {
  auto loc = [&](uint32_t pc) {
    if (sym)
      if (auto l = sym->locate(pc); l && l->line) return l->file + ":" + std::to_string(l->line);
    return hex32(pc);
  };
  std::map<std::tuple<int, std::string, std::string>, size_t> index;
  std::vector<replay::Race> out;
  for (const replay::Race& r : races) {
    std::string a = loc(r.first.pc), b = loc(r.second.pc);
    if (b < a) std::swap(a, b);
    auto [it, fresh] = index.try_emplace({int(r.kind), a, b}, out.size());
    if (fresh)
      out.push_back(r);
    else
      out[it->second].count += r.count;
  }
  return out;
}

}  // namespace

std::string format_races(const std::vector<replay::Race>& found, const engine::Symbols* sym) {
  std::string out;
  for (const replay::Race& r : merge_by_source(found, sym)) {
    out += "Race (" + std::string(replay::race_kind_name(r.kind)) + ") on " + (r.local ? "local " : "") + hex32(r.addr);
    if (sym && !r.local)
      if (auto d = sym->describe(r.addr)) out += " <" + *d + ">";
    if (r.local) out += " of core " + std::to_string(r.core);
    out += " in launch " + std::to_string(r.launch) + (r.count > 1 ? " (" + std::to_string(r.count) + " times)" : "") +
           ":\n";
    out += "  " + race_access(r, r.first, sym).first + "\n";
    out += "  " + race_access(r, r.second, sym).first + "\n";
  }
  return out;
}

nlohmann::json races_json(const std::vector<replay::Race>& found, const engine::Symbols* sym) {
  json list = json::array();
  for (const replay::Race& r : merge_by_source(found, sym))
    list.push_back({{"kind", replay::race_kind_name(r.kind)},
                    {"launch", r.launch},
                    {"address", r.addr},
                    {"local", r.local},
                    {"core", r.core},
                    {"count", r.count},
                    {"first", race_access(r, r.first, sym).second},
                    {"second", race_access(r, r.second, sym).second}});
  return list;
}

std::pair<std::string, nlohmann::json> diff_report(const ObservedRun& a, const ObservedRun& b,
                                                   const replay::DiffReport& r, const engine::Symbols* symbols) {
  Report rep = make_report(a, b, r, symbols, false);
  return {rep.text, rep.data};
}

std::optional<engine::Symbols> workload_symbols(const RunArgs& run) {
  auto image = load_kernel_image(run.kernel);
  if (!image) return std::nullopt;
  auto found = find_kernel_symbols(*image, run.symbols);
  if (!found || !found->symbols) return std::nullopt;
  return std::move(*found->symbols);
}

replay::RunEnd run_end(const WorkloadRun& w) {
  replay::RunEnd e;
  e.outcome = w.end == EventKind::Completed && w.error.empty() ? "exit " + std::to_string(w.exit_code) : w.error;
  e.console = w.console;
  e.memory = w.memory;
  return e;
}

Result<std::vector<uint64_t>> parse_seed_list(const std::string& text) {
  std::vector<uint64_t> out;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    std::optional<uint64_t> v = parse_u64(part);
    if (!v) return make_error("'" + part + "' in '" + text + "' is not a seed (a non-negative integer)");
    out.push_back(*v);
  }
  if (out.empty() || text.back() == ',') return make_error("'" + text + "' is not a list of seeds like 3,7");
  return out;
}

ObservedRun observe_kernel(const RunArgs& run, const engine::Symbols* symbols, const std::string& label,
                           const replay::ObservationLog* reference, uint64_t timeline_interval) {
  ObservedRun o;
  o.label = label;
  o.seed = run.options.seed;
  o.config = run.config;
  std::pair<uint32_t, uint32_t> skip{0, 0};
  replay::CodeReader code;
  if (auto image = load_kernel_image(run.kernel)) {
    skip = startup_range(symbols, image->start_pc);
    code = code_reader(*image);
  }
  o.log = std::make_unique<replay::ObservationLog>(run.config, skip, std::move(code));
  o.log->compare_with(reference);
  o.run = run_workload(run, o.log.get(), nullptr, timeline_interval);
  return o;
}

nlohmann::json diff_page(const std::string& kernel, const ObservedRun& a, const ObservedRun& b,
                         const std::pair<std::string, nlohmann::json>& report, const engine::Symbols* symbols) {
  return diff_page_data(kernel, a.config, PageRun{a.label, "A", &a.run.timeline},
                        PageRun{b.label, "B", &b.run.timeline}, report.second, report.first, symbols);
}

int diff_command(const DiffArgs& a) {
  auto fail = [&](int status, const std::string& m) {
    std::fprintf(stderr, "vxreplay: diff: %s\n", m.c_str());
    return status;
  };
  if (!a.open.empty() && a.open != "A" && a.open != "B") return fail(kExitUsage, "--open takes A or B");
  std::optional<engine::Symbols> symbols;
  ObservedRun ra, rb;
  std::string kernel = std::filesystem::path(a.run.kernel).filename().string();
  RunArgs run_a = a.run, run_b = a.run;
  const bool recordings = a.inputs.size() == 2;
  if (recordings) {
    if (!a.seeds.empty() || !a.configs.empty())
      return fail(kExitUsage, "two recordings are compared as they were recorded: no --seeds or --configs");
    replay::RecordingInfo ia, ib;
    const bool timeline = !a.html.empty();
    auto oa = observe_recording(a.inputs[0], &symbols, &ia, nullptr, timeline);
    if (!oa) return fail(kExitBadInput, a.inputs[0] + ": " + oa.error().message);
    auto ob = observe_recording(a.inputs[1], &symbols, &ib, oa->log.get(), timeline);
    if (!ob) return fail(kExitBadInput, a.inputs[1] + ": " + ob.error().message);
    if (ia.header.kernel_hash != ib.header.kernel_hash ||
        workload_shape(ia.header.workload) != workload_shape(ib.header.workload))
      return fail(kExitBadInput, "the recordings are of different workloads: '" + ia.header.workload + "' and '" +
                                     ib.header.workload + "'");
    ra = std::move(oa).value();
    rb = std::move(ob).value();
    kernel = ia.image_name ? *ia.image_name : ia.header.workload;
  } else {
    if (a.inputs.size() != 1) return fail(kExitUsage, "expected a kernel, or two recordings");
    if (a.seeds.size() > 2) return fail(kExitUsage, "--seeds: two seeds at most (A,B)");
    if (a.configs.size() > 2) return fail(kExitUsage, "--configs: two configurations at most (A,B)");
    if (a.seeds.size() < 2 && a.configs.size() < 2)
      return fail(kExitUsage, "two runs to compare: --seeds A,B or --configs A,B (or two recordings)");
    if (!a.seeds.empty()) {
      run_a.options.seed = a.seeds.front();
      run_b.options.seed = a.seeds.back();
    }
    if (!a.configs.empty()) {
      run_a.config = a.configs.front();
      run_b.config = a.configs.back();
    }
    if (auto image = load_kernel_image(a.run.kernel); !image) return fail(kExitBadInput, image.error().message);
    symbols = workload_symbols(a.run);
    const engine::Symbols* sym = symbols ? &*symbols : nullptr;
    auto label = [&](const RunArgs& r) {
      return "seed " + std::to_string(r.options.seed) + " on " + r.config.to_string();
    };
    const uint64_t timeline = a.html.empty() ? 0 : engine::SessionOptions{}.timeline_interval;
    ra = observe_kernel(run_a, sym, label(run_a), nullptr, timeline);
    if (!ra.run.error.empty() && ra.run.status == kExitBadInput) return fail(kExitBadInput, ra.run.error);
    rb = observe_kernel(run_b, sym, label(run_b), ra.log.get(), timeline);
    if (!rb.run.error.empty() && rb.run.status == kExitBadInput) return fail(kExitBadInput, rb.run.error);
  }
  const engine::Symbols* sym = symbols ? &*symbols : nullptr;
  replay::DiffReport r = diff_runs(*ra.log, run_end(ra.run), *rb.log, run_end(rb.run));
  Report rep = make_report(ra, rb, r, sym, true);
  if (a.json) {
    std::cout << rep.data.dump() << "\n";
  } else {
    std::cout << rep.text;
  }
  std::cout.flush();
  if (!a.html.empty() && !write_nondet_page(a.html, kernel, diff_page(kernel, ra, rb, {rep.text, rep.data}, sym)))
    return fail(kExitCantWrite, "cannot write the page " + a.html);
  if (a.open.empty()) return r.same() ? kExitOk : 1;

  // A session on the chosen run, stopped right before the diverging instruction.
  if (!r.first) {
    std::fprintf(stderr, "vxreplay: diff: nothing to open: no thread diverged\n");
    return r.same() ? kExitOk : 1;
  }
  const bool open_a = a.open == "A";
  const std::optional<ThreadObs>& o = open_a ? r.first->a : r.first->b;
  if (!o) return fail(1, "run " + a.open + " made no observation at the divergence: open the other run");
  if (recordings) {
    ReplayArgs rp;
    rp.dir = a.inputs[open_a ? 0 : 1];
    rp.commands = a.commands;
    rp.batch = a.batch;
    ReplayArgs::OpenAt at{r.first->thread.launch,
                          o->launch_instret - 1,
                          o->core,
                          o->slot,
                          o->lane,
                          "Divergence in run " + a.open + " (" + rp.dir + ")"};
    rp.open_at = at;
    return replay_command(rp);
  }
  DebugArgs dbg;
  dbg.run = open_a ? run_a : run_b;
  dbg.commands = a.commands;
  dbg.batch = a.batch;
  dbg.db = a.db;
  DebugArgs::OpenAt at;
  at.launch = r.first->thread.launch;
  at.instret = o->launch_instret - 1;
  at.core = o->core;
  at.slot = o->slot;
  at.lane = o->lane;
  at.title = "Divergence in run " + a.open + " (" + (open_a ? ra.label : rb.label) + ")";
  dbg.open_at = at;
  return debug_command(dbg);
}

}  // namespace vx::cli
