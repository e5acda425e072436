// Live against re-launch on sgemm, 1x1x4x4, measured in the same run (BENCHMARKS.md, "Live and
// re-launch"): the time of a stepi, of a continue between two hits of one breakpoint, of reading
// every register of a warp, of writing a checkpoint at a stop, and the DM accesses per stop.
//   ninja -C build engine/live_bench && build/engine/live_bench build/examples [reps]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "device/host_runtime.hpp"
#include "engine/dm_client.hpp"
#include "engine/session.hpp"

using namespace vx;
using namespace vx::engine;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "live_bench: %s\n", what.c_str());
  std::exit(1);
}
template <class T>
T must(Result<T> r, const char* what) {
  if (!r) die(std::string(what) + ": " + r.error().message);
  return std::move(r).value();
}
void load(Driver& d, const std::string& elf) {
  auto image = must(load_kernel_image(elf), "load");
  HostRuntime rt(d);
  auto launch = must(resolve_grid_launch(image, d.config(), {}), "launch");
  if (!rt.load_image(image)) die("load_image");
  if (!rt.launch_grid(launch)) die("launch_grid");
}

struct Setup {
  std::unique_ptr<Driver> dev;
  std::unique_ptr<Session> s;
};
Setup session(const DeviceConfig& cfg, const std::string& elf, SessionMode mode, const std::string& store) {
  Setup st;
  st.dev = must(open_model_device(cfg, RunOptions{1}), "open");
  SessionOptions so;
  so.mode = mode;
  so.store_dir = store;
  so.store_sync = true;
  st.s = must(Session::create(*st.dev, so), "session");
  load(st.s->host(), elf);
  return st;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "build/examples";
  const int reps = argc > 2 ? std::max(3, std::atoi(argv[2])) : 30;
  const std::string elf = dir + "/sgemm.elf";
  const DeviceConfig cfg{1, 1, 4, 4, 16 * 1024};
  const auto tmp = std::filesystem::temp_directory_path() / ("vx-live-bench-" + std::to_string(::getpid()));
  auto base = must(open_model_device(cfg, RunOptions{1}), "open");
  load(*base, elf);
  if (base->wait().kind != EventKind::Completed) die("sgemm did not complete");
  const uint64_t total = base->stats().instructions;
  std::printf("sgemm on %s: %llu warp instructions; medians of %d\n", cfg.to_string().c_str(),
              static_cast<unsigned long long>(total), reps);
  std::printf("%-44s %14s %14s\n", "measure", "re-launch", "live");

  struct Row {
    double stepi = 0, cont = 0, stop_nostore = 0, stop_store = 0;
    double dm_stop = 0, dm_stop_store = 0, dm_stepi = 0, dm_cont = 0;
  } row[2];
  for (int m = 0; m < 2; ++m) {
    const SessionMode mode = m ? SessionMode::Live : SessionMode::Relaunch;
    for (bool with_store : {false, true}) {
      std::filesystem::remove_all(tmp);
      Setup st = session(cfg, elf, mode, with_store ? tmp.string() : "");
      uint64_t at = total / 3;
      must(st.s->run_to(at), "first stop");
      // A stop: run 100 instructions and stop (with the store: and write its checkpoint).
      std::vector<double> stop;
      uint64_t dm0 = st.s->info().dm_accesses;
      for (int i = 0; i < reps; ++i) {
        at += 100;
        auto t = Clock::now();
        must(st.s->run_to(at), "run_to");
        stop.push_back(ms_since(t));
      }
      const double dm_stop = double(st.s->info().dm_accesses - dm0) / reps;
      (with_store ? row[m].stop_store : row[m].stop_nostore) = median(stop);
      (with_store ? row[m].dm_stop_store : row[m].dm_stop) = dm_stop;
      if (with_store) continue;
      WarpId focus{};
      for (uint32_t w = 0; w < cfg.warps; ++w)
        if (st.s->context().cores[0].warps[w].active) focus = WarpId{0, w};
      std::vector<double> stepi;
      dm0 = st.s->info().dm_accesses;
      int n = 0;
      for (int i = 0; i < reps; ++i, ++n) {
        auto t = Clock::now();
        StopEvent ev = must(st.s->step(focus, 0), "stepi");
        stepi.push_back(ms_since(t));
        if (ev.reason != StopReason::Step || !st.s->context().cores[0].warps[focus.slot].active) break;
      }
      row[m].dm_stepi = double(st.s->info().dm_accesses - dm0) / std::max(1, n);
      row[m].stepi = median(stepi);
      // continue between two hits of a breakpoint at the focus warp's PC (a loop of sgemm).
      must(st.s->add_breakpoint(st.s->context().cores[0].warps[focus.slot].pc), "break");
      must(st.s->resume(), "first hit");
      std::vector<double> cont;
      dm0 = st.s->info().dm_accesses;
      n = 0;
      for (int i = 0; i < reps; ++i, ++n) {
        auto t = Clock::now();
        StopEvent ev = must(st.s->resume(), "continue");
        cont.push_back(ms_since(t));
        if (ev.reason != StopReason::Breakpoint) break;
      }
      row[m].dm_cont = double(st.s->info().dm_accesses - dm0) / std::max(1, n);
      row[m].cont = median(cont);
    }
  }
  // Every register of one warp (4 threads x (31 GPRs + 32 FPRs), the PC and the mask): live reads
  // them through the DM (DmClient::read_warp); re-launch has them in the stop's saved context,
  // read by one save_context() of the whole device.
  std::vector<double> rd_live, rd_save;
  {
    auto d = must(open_model_device(cfg, RunOptions{1}), "open");
    load(*d, elf);
    d->wait(total / 3);
    DmClient dm(*d);
    must(dm.connect(), "connect");
    if (!dm.halt_all()) die("halt");
    for (int i = 0; i < reps; ++i) {
      auto t = Clock::now();
      must(dm.read_warp(0), "read_warp");
      rd_live.push_back(ms_since(t));
    }
    auto d2 = must(open_model_device(cfg, RunOptions{1}), "open");
    load(*d2, elf);
    d2->wait(total / 3);
    for (int i = 0; i < reps; ++i) {
      auto t = Clock::now();
      must(d2->save_context(), "save_context");
      rd_save.push_back(ms_since(t));
    }
  }
  auto line = [](const char* what, double a, double b, const char* unit) {
    std::printf("%-44s %11.3f %s %11.3f %s\n", what, a, unit, b, unit);
  };
  line("stepi", row[0].stepi, row[1].stepi, "ms");
  line("continue between two hits", row[0].cont, row[1].cont, "ms");
  line("read every register of a warp", median(rd_save), median(rd_live), "ms");
  line("stop (run 100, stop), no store", row[0].stop_nostore, row[1].stop_nostore, "ms");
  line("stop with its checkpoint (store, fsync)", row[0].stop_store, row[1].stop_store, "ms");
  line("  of which writing the checkpoint", row[0].stop_store - row[0].stop_nostore,
       row[1].stop_store - row[1].stop_nostore, "ms");
  std::printf("%-44s %14.0f %14.0f\n", "DM accesses per stop, no store", row[0].dm_stop, row[1].dm_stop);
  std::printf("%-44s %14.0f %14.0f\n", "DM accesses per stop with its checkpoint", row[0].dm_stop_store,
              row[1].dm_stop_store);
  std::printf("%-44s %14.0f %14.0f\n", "DM accesses per stepi", row[0].dm_stepi, row[1].dm_stepi);
  std::printf("%-44s %14.0f %14.0f\n", "DM accesses per continue between hits", row[0].dm_cont, row[1].dm_cont);
  std::filesystem::remove_all(tmp);
  return 0;
}
