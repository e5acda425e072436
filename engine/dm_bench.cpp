// DM access counts and timings of the Debug Module client on config 1x1x4x32:
// accesses per register read, per memory word (1 word, and averaged over 64),
// per single step, and the wall time of read_warp for one warp of 32 threads.
//   ninja -C build-eng engine/dm_bench && build-eng/engine/dm_bench [repetitions]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "device/driver.hpp"
#include "device/encode.hpp"
#include "device/host_runtime.hpp"
#include "device/image.hpp"
#include "engine/dm_client.hpp"

using namespace vx;
using namespace vx::test;

namespace {

constexpr uint32_t kCode = 0x80000000;
constexpr uint32_t kEntry = kCode + 0x100;

constexpr uint32_t mul(uint32_t rd, uint32_t rs1, uint32_t rs2) { return r_type(1, rs2, rs1, 0, rd, 0x33); }
constexpr uint32_t fcvt_s_w(uint32_t fd, uint32_t rs1) { return r_type(0x68, 0, rs1, 0, fd, 0x53); }
constexpr uint32_t fadd_s(uint32_t fd, uint32_t fs1, uint32_t fs2) { return r_type(0, fs2, fs1, 0, fd, 0x53); }

int fail(const std::string& what) {
  std::fprintf(stderr, "dm_bench: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
  const DeviceConfig cfg{1, 1, 4, 32};
  auto opened = open_model_device(cfg, RunOptions{1});
  if (!opened) return fail(opened.error().message);
  Driver& dev = **opened;
  HostRuntime rt(dev);

  // A long loop: acc += i * tid, facc += tid, 1000 iterations.
  const std::vector<uint32_t> kernel = {rv::csrr(s1, 0xCD3),  fcvt_s_w(1, s1),  rv::li(s2, 0),
                                        rv::li(s3, 0),        rv::li(s4, 1000), mul(t3, s3, s1),
                                        rv::add(s2, s2, t3),  fadd_s(2, 2, 1),  rv::addi(s3, s3, 1),
                                        rv::bne(s3, s4, -16), rv::ret()};
  auto bin = make_vxbin_image(kCode, kCode + 0x1000, windowed_image(kernel, kEntry - kCode));
  auto img = parse_kernel_image(bin, "bench.vxbin");
  if (!img) return fail(img.error().message);
  if (auto r = rt.load_image(*img); !r) return fail(r.error().message);
  auto buf = dev.mem_alloc(64 * 4);
  if (!buf) return fail(buf.error().message);
  GridLaunch l;
  l.start_pc = kCode;
  l.entry_pc = kEntry;
  l.arg_ptr = *buf;
  l.block = {32, 1, 1};
  if (auto r = rt.launch_grid(l); !r) return fail(r.error().message);
  if (DeviceEvent ev = dev.wait(40); ev.kind != EventKind::Budget) return fail("the kernel did not reach its loop");

  engine::DmClient dm(dev);
  if (auto r = dm.connect(); !r) return fail(r.error().message);
  if (auto r = dm.halt_all(); !r) return fail(r.error().message);
  if (auto r = dm.read_gpr(0, 0, 1); !r) return fail(r.error().message);  // the first select

  auto measure = [&](auto&& op) -> double {
    const uint64_t before = dm.accesses();
    op();
    return double(dm.accesses() - before);
  };
  bool ok = true;
  auto check = [&](const auto& r) {
    if (!r) {
      std::fprintf(stderr, "dm_bench: %s\n", r.error().message.c_str());
      ok = false;
    }
  };
  const double per_gpr = measure([&] {
                           for (uint32_t r = 1; r < 32; ++r) check(dm.read_gpr(0, 0, r));
                         }) /
                         31;
  const double per_fpr = measure([&] {
                           for (uint32_t r = 0; r < 32; ++r) check(dm.read_fpr(0, 0, r));
                         }) /
                         32;
  const double mem1 = measure([&] { check(dm.read_memory(0, 0, *buf, 1)); });
  const double mem64 = measure([&] { check(dm.read_memory(0, 0, *buf, 64)); }) / 64;
  const double step = measure([&] {
                        for (int i = 0; i < 100; ++i) check(dm.step(0));
                      }) /
                      100;
  const double step_pc = measure([&] {
                           for (int i = 0; i < 100; ++i) {
                             check(dm.step(0));
                             check(dm.read_pc(0));
                           }
                         }) /
                         100;
  const double warp = measure([&] { check(dm.read_warp(0)); });

  std::vector<double> us(reps);
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    check(dm.read_warp(0));
    us[i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double v : us) sum += v;
  if (!ok) return 1;

  std::printf("DM client on %s (one warp of 32 threads halted in a loop)\n", cfg.to_string().c_str());
  std::printf("  accesses per GPR read              %6.2f\n", per_gpr);
  std::printf("  accesses per FPR read              %6.2f\n", per_fpr);
  std::printf("  accesses per memory word (1 word)  %6.2f\n", mem1);
  std::printf("  accesses per memory word (64 words)%6.2f\n", mem64);
  std::printf("  accesses per single step           %6.2f\n", step);
  std::printf("  accesses per step + DPC read       %6.2f\n", step_pc);
  std::printf("  accesses per read_warp (32 threads)%6.0f\n", warp);
  std::printf("  read_warp wall time over %d runs: median %.1f us, min %.1f us, mean %.1f us (%.1f ns/access)\n", reps,
              us[us.size() / 2], us.front(), sum / reps, 1000.0 * us[us.size() / 2] / warp);
  return 0;
}
