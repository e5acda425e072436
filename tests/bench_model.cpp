// Simulation speed of the model: lane instructions per second for sgemm and
// vecadd at two sizes on three configurations, plus the same kernel with the
// decode cache off as the baseline measured in the same run.
// Run through scripts/bench.sh, which prints the figures and ratios.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

#include "device/host_runtime.hpp"

namespace {

struct Case {
  std::string kernel;
  std::string size;
  vx::DeviceConfig config;
  std::array<uint32_t, 3> grid, block;
  bool decode_cache = true;
  bool reference = false;  // RunOptions::reference: the plain interpreter, the fast path's baseline
};

void run_case(benchmark::State& state, const std::string& dir, const Case& c) {
  auto image = vx::load_kernel_image(dir + "/" + c.kernel + ".elf");
  if (!image) {
    state.SkipWithError(image.error().message.c_str());
    return;
  }
  vx::LaunchOverrides ov;
  ov.grid = c.grid;
  ov.block = c.block;
  auto launch = vx::resolve_grid_launch(*image, c.config, ov);
  if (!launch) {
    state.SkipWithError(launch.error().message.c_str());
    return;
  }
  uint64_t lanes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    vx::RunOptions opts;
    opts.decode_cache = c.decode_cache;
    opts.reference = c.reference;
    auto dev = vx::open_model_device(c.config, opts);
    vx::HostRuntime rt(**dev);
    bool ok = rt.load_image(*image).ok() && rt.launch_grid(*launch).ok();
    state.ResumeTiming();
    vx::DeviceEvent ev = ok ? rt.wait() : vx::DeviceEvent{};
    state.PauseTiming();
    if (ev.kind != vx::EventKind::Completed || (*dev)->exit_code() != 0) {
      state.SkipWithError("the kernel did not complete with exit code 0");
      break;
    }
    lanes += (*dev)->stats().lane_instructions;
    dev->reset();
    state.ResumeTiming();
  }
  state.counters["lane_instructions"] = benchmark::Counter(double(lanes), benchmark::Counter::kAvgIterations);
  state.counters["lane_ips"] = benchmark::Counter(double(lanes), benchmark::Counter::kIsRate);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_model EXAMPLES_DIR [benchmark flags]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const vx::DeviceConfig c4{1, 1, 4, 4}, c8{1, 2, 8, 8}, c32{1, 1, 4, 32};
  std::vector<Case> cases = {
      {"sgemm", "N=32", c4, {8, 8, 1}, {4, 4, 1}},        {"sgemm", "N=64", c4, {16, 16, 1}, {4, 4, 1}},
      {"sgemm", "N=32", c8, {4, 4, 1}, {8, 8, 1}},        {"sgemm", "N=64", c8, {8, 8, 1}, {8, 8, 1}},
      {"sgemm", "N=32", c32, {4, 4, 1}, {8, 8, 1}},       {"sgemm", "N=64", c32, {8, 8, 1}, {8, 8, 1}},
      {"vecadd", "N=4096", c4, {256, 1, 1}, {16, 1, 1}},  {"vecadd", "N=65536", c4, {4096, 1, 1}, {16, 1, 1}},
      {"vecadd", "N=4096", c8, {64, 1, 1}, {64, 1, 1}},   {"vecadd", "N=65536", c8, {1024, 1, 1}, {64, 1, 1}},
      {"vecadd", "N=4096", c32, {32, 1, 1}, {128, 1, 1}}, {"vecadd", "N=65536", c32, {512, 1, 1}, {128, 1, 1}},
  };
  // The baseline: sgemm N=32 on the default configuration without the decode cache.
  Case baseline = cases[0];
  baseline.decode_cache = false;
  cases.push_back(baseline);
  // The fast path's baselines: sgemm N=64 under the reference interpreter.
  for (int i : {1, 5}) {
    Case ref = cases[size_t(i)];
    ref.reference = true;
    cases.push_back(ref);
  }
  for (const Case& c : cases) {
    std::string name = c.kernel + "/" + c.size + "/" + c.config.to_string() +
                       (c.decode_cache ? "" : "/no-decode-cache") + (c.reference ? "/reference" : "");
    benchmark::RegisterBenchmark(name.c_str(), [dir, c](benchmark::State& s) { run_case(s, dir, c); })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.3);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
