#include "cli/sweep_command.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli/diff_command.hpp"
#include "cli/nondet_page.hpp"
#include "cli/output.hpp"
#include "cli/text.hpp"
#include "cli/view_command.hpp"
#include "device/image.hpp"
#include "device/input_file.hpp"
#include "engine/session.hpp"
#include "replay/races.hpp"

namespace vx::cli {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kResultFormat = "vxreplay-sweep-result";
constexpr int kResultVersion = 1;

uint64_t fnv(uint64_t h, const void* data, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

std::string hex64(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

// One run's outcome: what groups it into a class.
struct SeedResult {
  uint64_t seed = 0;
  int status = 0;
  std::string outcome;  // "exit 0" or how it stopped
  uint64_t console_hash = 0, memory_hash = 0;
  std::vector<std::string> console_lines;  // sorted: the harts' lines without their interleaving
  uint64_t races = 0;
  std::tuple<std::string, uint64_t, uint64_t> key() const { return {outcome, console_hash, memory_hash}; }
};

json to_json(const SeedResult& r, const std::string& workload) {
  return {{"format", kResultFormat},
          {"version", kResultVersion},
          {"workload", workload},
          {"seed", r.seed},
          {"status", r.status},
          {"outcome", r.outcome},
          {"console_hash", hex64(r.console_hash)},
          {"memory_hash", hex64(r.memory_hash)},
          {"console_lines", r.console_lines},
          {"races", r.races}};
}

Result<SeedResult> from_json(const json& j, const std::string& workload, const std::string& where) {
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string() ||
      j["format"].get<std::string>() != kResultFormat)
    return make_error(where + ": not a vxreplay sweep result");
  // One field by its key: missing, or of another type, is an error naming the key (docs/cli.md).
  std::string bad;
  auto field = [&]<class T>(const char* key, const char* type, T* out) {
    if (!bad.empty()) return;
    if (!j.contains(key)) {
      bad = where + ": " + key + ": missing";
      return;
    }
    try {
      *out = j[key].get<T>();
    } catch (const json::exception&) {
      bad = where + ": " + key + ": expected " + type + ", not " + j[key].type_name();
    }
  };
  int version = 0;
  std::string got_workload, console_hash, memory_hash;
  SeedResult r;
  field("version", "an integer", &version);
  if (bad.empty() && version != kResultVersion)
    return make_error(where + ": a sweep result of version " + std::to_string(version) + ", this build reads version " +
                      std::to_string(kResultVersion));
  field("workload", "a string", &got_workload);
  if (bad.empty() && got_workload != workload)
    return make_error(where + ": the result of another workload ('" + got_workload + "')");
  field("seed", "an unsigned integer", &r.seed);
  field("status", "an integer", &r.status);
  field("outcome", "a string", &r.outcome);
  field("console_hash", "a string", &console_hash);
  field("memory_hash", "a string", &memory_hash);
  field("console_lines", "an array of strings", &r.console_lines);
  field("races", "an unsigned integer", &r.races);
  if (!bad.empty()) return make_error(bad);
  auto parse_hex = [&](const std::string& s, uint64_t* out) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
    return ec == std::errc() && end == s.data() + s.size() && !s.empty();
  };
  if (!parse_hex(console_hash, &r.console_hash)) return make_error(where + ": console_hash: not hexadecimal");
  if (!parse_hex(memory_hash, &r.memory_hash)) return make_error(where + ": memory_hash: not hexadecimal");
  return r;
}

SeedResult run_seed(const RunArgs& base, uint64_t seed) {
  RunArgs run = base;
  run.options.seed = seed;
  std::unique_ptr<replay::RaceDetector> races;
  if (run.races) races = std::make_unique<replay::RaceDetector>(run.config);
  WorkloadRun w = run_workload(run, races.get(), nullptr);
  SeedResult r;
  r.seed = seed;
  r.status = w.status;
  r.outcome = run_end(w).outcome;
  uint64_t h = 0xcbf29ce484222325ull;
  std::set<std::string> lines;
  for (const auto& [slot, text] : w.console) {
    h = fnv(h, &slot, sizeof slot);
    h = fnv(h, text.data(), text.size());
    h = fnv(h, "\0", 1);
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) lines.insert(line);
  }
  r.console_hash = h;
  r.console_lines.assign(lines.begin(), lines.end());
  h = 0xcbf29ce484222325ull;
  for (const auto& [addr, bytes] : w.memory) {
    h = fnv(h, &addr, sizeof addr);
    h = fnv(h, bytes.data(), bytes.size());
  }
  r.memory_hash = h;
  if (races) r.races = races->races().size();
  return r;
}

// What must match for two results to be runs of one workload.
Result<std::string> workload_id(const RunArgs& run) {
  auto image = load_kernel_image(run.kernel);
  if (!image) return image.error();
  auto dims = [](const std::optional<std::array<uint32_t, 3>>& d) {
    return d ? std::to_string((*d)[0]) + "," + std::to_string((*d)[1]) + "," + std::to_string((*d)[2]) : "image";
  };
  std::string launch_hash = "none";
  if (!run.launch_file.empty()) {
    auto bytes = read_input_file(run.launch_file, kMaxTextInputBytes);
    if (!bytes) return bytes.error();
    launch_hash = hex64(fnv(0xcbf29ce484222325ull, bytes->data(), bytes->size()));
  }
  return "kernel " + hex64(image->hash) + " config " + run.config.to_string() + " schedule " +
         schedule_name(run.options.schedule) + " grid " + dims(run.grid) + " block " + dims(run.block) + " lmem " +
         (run.lmem ? std::to_string(*run.lmem) : "image") + " launch " + launch_hash + " watchdog " +
         std::to_string(run.options.watchdog_instructions) + (run.races ? " races" : "");
}

// Runs every seed in `jobs` worker processes; results in seed order of `seeds`.
Result<std::vector<SeedResult>> run_all(const SweepArgs& a, const std::string& workload) {
  const size_t n = a.seeds.size();
  const unsigned jobs = std::max(1u, std::min<unsigned>(a.jobs, unsigned(n)));
  const bool progress = isatty(STDERR_FILENO) && !a.json;
  std::vector<SeedResult> results(n);
  size_t done = 0;
  auto show = [&] {
    if (progress) std::fprintf(stderr, "\rsweep: %zu/%zu runs", done, n);
  };
  if (jobs == 1) {
    for (size_t i = 0; i < n; ++i) {
      results[i] = run_seed(a.run, a.seeds[i]);
      ++done;
      show();
    }
  } else {
    std::vector<int> fds;
    std::vector<pid_t> pids;
    for (unsigned k = 0; k < jobs; ++k) {
      int p[2];
      if (pipe(p) != 0) return make_error("cannot create a pipe for a sweep worker");
      std::fflush(nullptr);
      pid_t pid = fork();
      if (pid < 0) return make_error("cannot start a sweep worker process");
      if (pid == 0) {
        close(p[0]);
        for (size_t i = k; i < n; i += jobs) {
          std::string line = std::to_string(i) + " " + to_json(run_seed(a.run, a.seeds[i]), workload).dump() + "\n";
          size_t off = 0;
          while (off < line.size()) {
            ssize_t w = write(p[1], line.data() + off, line.size() - off);
            if (w <= 0) _exit(1);
            off += size_t(w);
          }
        }
        close(p[1]);
        _exit(0);
      }
      close(p[1]);
      fds.push_back(p[0]);
      pids.push_back(pid);
    }
    std::vector<std::string> buffers(jobs);
    size_t open = jobs;
    std::string error;
    while (open > 0) {
      std::vector<pollfd> pfds;
      for (int fd : fds)
        if (fd >= 0) pfds.push_back({fd, POLLIN, 0});
      if (poll(pfds.data(), pfds.size(), -1) < 0) continue;
      for (const pollfd& pf : pfds) {
        if (!(pf.revents & (POLLIN | POLLHUP))) continue;
        const size_t k = size_t(std::find(fds.begin(), fds.end(), pf.fd) - fds.begin());
        char buf[65536];
        ssize_t r = read(pf.fd, buf, sizeof buf);
        if (r <= 0) {
          close(pf.fd);
          fds[k] = -1;
          --open;
          continue;
        }
        buffers[k].append(buf, size_t(r));
        size_t nl;
        while ((nl = buffers[k].find('\n')) != std::string::npos) {
          std::string line = buffers[k].substr(0, nl);
          buffers[k].erase(0, nl + 1);
          size_t sp = line.find(' ');
          const size_t i = std::stoul(line.substr(0, sp));
          auto parsed = from_json(json::parse(line.substr(sp + 1)), workload, "a worker");
          if (!parsed || i >= n) {
            error = parsed ? "a worker reported an unknown run" : parsed.error().message;
            continue;
          }
          results[i] = *parsed;
          ++done;
          show();
        }
      }
    }
    for (pid_t pid : pids) {
      int st = 0;
      waitpid(pid, &st, 0);
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) error = "a sweep worker process failed";
    }
    if (done != n && error.empty())
      error = "the workers reported " + std::to_string(done) + " of " + std::to_string(n) + " runs";
    if (!error.empty()) return make_error(error);
  }
  if (progress) std::fprintf(stderr, "\r\033[K");
  return results;
}

int report(const SweepArgs& a, const std::vector<SeedResult>& results) {
  // Classes by outcome, largest first (ties: the smallest representative seed first).
  std::map<std::tuple<std::string, uint64_t, uint64_t>, std::vector<const SeedResult*>> groups;
  for (const SeedResult& r : results) groups[r.key()].push_back(&r);
  std::vector<std::vector<const SeedResult*>> classes;
  for (auto& [k, v] : groups) classes.push_back(v);
  std::sort(classes.begin(), classes.end(), [](const auto& x, const auto& y) {
    if (x.size() != y.size()) return x.size() > y.size();
    return x.front()->seed < y.front()->seed;
  });
  std::vector<uint64_t> racy_seeds;
  for (const SeedResult& r : results)
    if (r.races) racy_seeds.push_back(r.seed);

  json j;
  j["runs"] = results.size();
  j["schedule"] = schedule_name(a.run.options.schedule);
  j["config"] = a.run.config.to_string();
  json cj = json::array();
  std::ostringstream t;
  t << "Sweep of " << a.run.kernel << " over " << results.size() << " seeds (" << schedule_name(a.run.options.schedule)
    << " schedule) on " << a.run.config.to_string() << ": " << classes.size()
    << (classes.size() == 1 ? " outcome class.\n" : " outcome classes.\n");
  for (size_t c = 0; c < classes.size(); ++c) {
    const SeedResult& rep = *classes[c].front();
    std::vector<uint64_t> seeds;
    for (const SeedResult* r : classes[c]) seeds.push_back(r->seed);
    cj.push_back({{"count", seeds.size()},
                  {"seed", rep.seed},
                  {"seeds", seeds},
                  {"outcome", rep.outcome},
                  {"status", rep.status},
                  {"console_hash", hex64(rep.console_hash)},
                  {"memory_hash", hex64(rep.memory_hash)},
                  {"console_lines", rep.console_lines}});
    t << "  class " << c + 1 << ": " << seeds.size() << (seeds.size() == 1 ? " run" : " runs") << ", e.g. seed "
      << rep.seed << ": " << rep.outcome << ", memory " << hex64(rep.memory_hash);
    if (!rep.console_lines.empty())
      t << ", console \"" << rep.console_lines.front() << "\""
        << (rep.console_lines.size() > 1 ? " and " + std::to_string(rep.console_lines.size() - 1) + " more lines" : "");
    t << "\n";
  }
  j["classes"] = cj;
  j["racy_seeds"] = racy_seeds;
  if (a.run.races) {
    t << (racy_seeds.empty() ? "No race reported in any run.\n"
                             : "Races reported in " + std::to_string(racy_seeds.size()) + " runs (first: seed " +
                                   std::to_string(racy_seeds.front()) + "; vxreplay run --races --seed " +
                                   std::to_string(racy_seeds.front()) + " shows them).\n");
  }
  j["divergence"] = nullptr;
  const std::string kernel = std::filesystem::path(a.run.kernel).filename().string();
  json page;  // --html
  if (classes.size() > 1) {
    // Where the two largest classes' representatives first differ.
    std::optional<engine::Symbols> symbols = workload_symbols(a.run);
    const engine::Symbols* sym = symbols ? &*symbols : nullptr;
    RunArgs ra = a.run, rb = a.run;
    ra.options.seed = classes[0].front()->seed;
    rb.options.seed = classes[1].front()->seed;
    const uint64_t timeline = a.html.empty() ? 0 : engine::SessionOptions{}.timeline_interval;
    ObservedRun oa = observe_kernel(ra, sym, "seed " + std::to_string(ra.options.seed), nullptr, timeline);
    ObservedRun ob = observe_kernel(rb, sym, "seed " + std::to_string(rb.options.seed), oa.log.get(), timeline);
    replay::DiffReport d = diff_runs(*oa.log, run_end(oa.run), *ob.log, run_end(ob.run));
    auto report = diff_report(oa, ob, d, sym);
    t << "Between class 1 (seed " << ra.options.seed << ") and class 2 (seed " << rb.options.seed << "):\n"
      << report.first;
    j["divergence"] = report.second;
    if (!a.html.empty()) page = diff_page(kernel, oa, ob, report, sym);
  } else if (!a.html.empty()) {
    // One class: its first seed's warps, and nothing to compare.
    std::optional<engine::Symbols> symbols = workload_symbols(a.run);
    RunArgs ra = a.run;
    ra.options.seed = classes[0].front()->seed;
    const ObservedRun o = observe_kernel(ra, symbols ? &*symbols : nullptr, "seed " + std::to_string(ra.options.seed),
                                         nullptr, engine::SessionOptions{}.timeline_interval);
    page = view_data(kernel, o.label, a.run.config);
    page["launches"] = launches_json(o.run.timeline, [](uint32_t l) { return "launch " + std::to_string(l); });
  }
  if (a.json)
    std::cout << j.dump() << "\n";
  else
    std::cout << t.str();
  std::cout.flush();
  if (!a.html.empty()) {
    page["classes"] = cj;
    page["report"] = t.str();
    if (!write_nondet_page(a.html, kernel, page)) {
      std::fprintf(stderr, "vxreplay: sweep: cannot write the page %s\n", a.html.c_str());
      return kExitCantWrite;
    }
  }
  if (!racy_seeds.empty()) return kExitRace;
  return classes.size() <= 1 ? kExitOk : 1;
}

}  // namespace

Result<std::vector<uint64_t>> parse_seed_ranges(const std::string& text) {
  std::vector<uint64_t> out;
  std::set<uint64_t> seen;
  std::stringstream ss(text);
  std::string part;
  auto number = [&](std::string_view s, uint64_t* v) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v, 10);
    return !s.empty() && ec == std::errc() && end == s.data() + s.size();
  };
  while (std::getline(ss, part, ',')) {
    uint64_t lo = 0, hi = 0;
    const size_t dash = part.find('-');
    if (dash == std::string::npos) {
      if (!number(part, &lo)) return make_error("'" + part + "' in '" + text + "' is not a seed or a range A-B");
      hi = lo;
    } else if (!number(std::string_view(part).substr(0, dash), &lo) ||
               !number(std::string_view(part).substr(dash + 1), &hi) || hi < lo) {
      return make_error("'" + part + "' in '" + text + "' is not a range A-B with A <= B");
    }
    if (hi - lo >= 1'000'000 || out.size() + (hi - lo) >= 1'000'000)
      return make_error("'" + text + "' names more than a million seeds");
    for (uint64_t s = lo;; ++s) {
      if (seen.insert(s).second) out.push_back(s);
      if (s == hi) break;
    }
  }
  if (out.empty() || text.back() == ',') return make_error("'" + text + "' is not a list of seeds like 1-256 or 3,7");
  return out;
}

int sweep_command(const SweepArgs& a) {
  auto fail = [](int status, const std::string& m) {
    std::fprintf(stderr, "vxreplay: sweep: %s\n", m.c_str());
    return status;
  };
  auto workload = workload_id(a.run);
  if (!workload) return fail(kExitBadInput, workload.error().message);

  if (a.emit_jobs) {
    if (a.out_dir.empty()) return fail(kExitUsage, "--emit-jobs needs --out DIR: where each job writes its result");
    for (uint64_t seed : a.seeds) {
      std::string cmd = text::shell_quote(a.self) + " sweep " + text::shell_quote(a.run.kernel);
      for (const std::string& f : a.run_flags) cmd += " " + text::shell_quote(f);
      cmd += " --seeds " + std::to_string(seed) + " --out " + text::shell_quote(a.out_dir);
      std::cout << cmd << "\n";
    }
    return kExitOk;
  }

  std::vector<SeedResult> results;
  if (!a.merge_dir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(a.merge_dir, ec)) return fail(kExitBadInput, "--merge " + a.merge_dir + ": not a directory");
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(a.merge_dir, ec))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    if (files.empty()) return fail(kExitBadInput, "--merge " + a.merge_dir + ": no results (*.json) in it");
    std::set<uint64_t> seen;
    for (const fs::path& f : files) {
      auto bytes = read_input_file(f.string(), kMaxTextInputBytes);
      if (!bytes) return fail(kExitBadInput, bytes.error().message);
      json j = json::parse(bytes->begin(), bytes->end(), nullptr, false);
      if (j.is_discarded()) return fail(kExitBadInput, f.string() + ": not JSON (a truncated result?)");
      auto r = from_json(j, *workload, f.string());
      if (!r) return fail(kExitBadInput, r.error().message);
      if (!seen.insert(r->seed).second)
        return fail(kExitBadInput, f.string() + ": seed " + std::to_string(r->seed) + " twice");
      results.push_back(*r);
    }
    std::sort(results.begin(), results.end(), [](const SeedResult& x, const SeedResult& y) { return x.seed < y.seed; });
  } else {
    auto all = run_all(a, *workload);
    if (!all) return fail(kExitInternal, all.error().message);
    results = std::move(all).value();
    if (!a.out_dir.empty()) {
      std::error_code ec;
      fs::create_directories(a.out_dir, ec);
      for (const SeedResult& r : results) {
        const fs::path final_path = fs::path(a.out_dir) / ("seed-" + std::to_string(r.seed) + ".json");
        const fs::path tmp = final_path.string() + ".tmp";
        std::ofstream out(tmp);
        out << to_json(r, *workload).dump() << "\n";
        out.close();
        if (!out || (fs::rename(tmp, final_path, ec), ec))
          return fail(kExitCantWrite, "cannot write " + final_path.string());
      }
      // A job's own output is its result file; the grouping is --merge's.
      return kExitOk;
    }
  }
  return report(a, results);
}

}  // namespace vx::cli
