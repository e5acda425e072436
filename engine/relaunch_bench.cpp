// Re-launch costs on sgemm, default configuration 1x1x4x4: the time of one stop-to-stop re-launch,
// of a stepi, of going back to a checkpoint, the bytes a checkpoint writes against the bytes the
// kernel dirtied, and a whole session of 50 stops against the undisturbed run measured in the same
// process (the baseline), with and without the checkpoint store.
//   ninja -C build engine/relaunch_bench && build/engine/relaunch_bench build/examples [reps]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint/store.hpp"
#include "device/host_runtime.hpp"
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
  std::fprintf(stderr, "relaunch_bench: %s\n", what.c_str());
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

Setup session(const DeviceConfig& cfg, const std::string& elf, const std::string& store_dir, bool sync) {
  Setup st;
  st.dev = must(open_model_device(cfg, RunOptions{1}), "open");
  SessionOptions so;
  so.store_dir = store_dir;
  so.store_sync = sync;
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
  const auto tmp = std::filesystem::temp_directory_path() / ("vx-relaunch-bench-" + std::to_string(::getpid()));

  // Baseline: the undisturbed run.
  auto base_dev = must(open_model_device(cfg, RunOptions{1}), "open");
  load(*base_dev, elf);
  auto t0 = Clock::now();
  if (base_dev->wait().kind != EventKind::Completed) die("sgemm did not complete");
  const double base_ms = ms_since(t0);
  const uint64_t total = base_dev->stats().instructions;
  std::printf("sgemm on %s: %llu warp instructions, undisturbed run %.2f ms\n", cfg.to_string().c_str(),
              static_cast<unsigned long long>(total), base_ms);
  std::printf("%-58s %10s\n", "measure", "median");

  for (bool with_store : {false, true}) {
    const char* tag = with_store ? "store, fsync" : "no store";
    std::filesystem::remove_all(tmp);
    Setup st = session(cfg, elf, with_store ? tmp.string() : "", true);
    if (must(st.s->run_to(total / 3), "first stop").reason != StopReason::InstructionCount) die("first stop");
    // Stop to next stop: re-launch, 100 instructions, save, (checkpoint,) kill.
    std::vector<double> relaunch, stepi;
    uint64_t at = total / 3;
    for (int i = 0; i < reps; ++i) {
      at += 100;
      auto t = Clock::now();
      must(st.s->run_to(at), "run_to");
      relaunch.push_back(ms_since(t));
    }
    WarpId focus{};
    for (uint32_t w = 0; w < cfg.warps; ++w)
      if (st.s->context().cores[0].warps[w].active) focus = WarpId{0, w};
    for (int i = 0; i < reps; ++i) {
      auto t = Clock::now();
      StopEvent ev = must(st.s->step(focus, 0), "stepi");
      stepi.push_back(ms_since(t));
      if (ev.reason != StopReason::Step || !st.s->context().cores[0].warps[focus.slot].active) break;
    }
    std::printf("%-58s %8.3f ms\n", (std::string("re-launch, stop to next stop (") + tag + ")").c_str(),
                median(relaunch));
    std::printf("%-58s %8.3f ms\n", (std::string("stepi (") + tag + ")").c_str(), median(stepi));
    if (with_store) {
      checkpoint::StoreStats ss = st.s->store()->stats();
      std::printf("%-58s %10llu\n", "checkpoints written", static_cast<unsigned long long>(ss.puts));
      std::printf("%-58s %8.1f KiB\n", "dirty page bytes handed to the store per checkpoint",
                  double(ss.raw_page_bytes) / double(ss.puts) / 1024);
      std::printf("%-58s %8.1f KiB\n", "bytes written per checkpoint (pages + record, zstd)",
                  double(ss.stored_page_bytes + ss.record_bytes) / double(ss.puts) / 1024);
      std::printf("%-58s %8.1f%%\n", "pages shared with earlier checkpoints (not written again)",
                  ss.pages_given ? 100.0 * double(ss.pages_shared) / double(ss.pages_given) : 0.0);
      std::printf("%-58s %8.2fx\n", "zstd ratio on the pages written",
                  ss.stored_page_bytes ? double(ss.new_page_raw_bytes) / double(ss.stored_page_bytes) : 0.0);
      auto keys = must(st.s->store()->list(), "list");
      std::vector<double> back;
      for (int i = 0; i < reps && i < int(keys.size()); ++i) {
        auto t = Clock::now();
        must(st.s->goto_checkpoint(keys[size_t(i) % keys.size()]), "goto");
        back.push_back(ms_since(t));
      }
      std::printf("%-58s %8.3f ms\n", "restore: go to a checkpoint (read, decode, write memory)", median(back));
    }
  }

  // A whole session of 50 evenly spaced stops against the baseline.
  for (bool with_store : {false, true}) {
    std::filesystem::remove_all(tmp);
    Setup st = session(cfg, elf, with_store ? tmp.string() : "", true);
    auto t = Clock::now();
    for (int i = 1; i <= 50; ++i) must(st.s->run_to(total * uint64_t(i) / 51), "run_to");
    if (must(st.s->resume(), "resume").reason != StopReason::Exited) die("did not exit");
    double ms = ms_since(t);
    SessionStats ss = st.s->stats();
    std::printf("%-58s %8.2f ms (%.2fx the undisturbed run; re-execution ratio %.3f, routine %llu instr)\n",
                with_store ? "session of 50 stops (store, fsync)" : "session of 50 stops (no store)", ms, ms / base_ms,
                ss.reexecution_ratio(), static_cast<unsigned long long>(ss.restore_instructions));
  }
  std::filesystem::remove_all(tmp);
  return 0;
}
