// The fast path against the reference interpreter (RunOptions::reference): every example kernel
// runs on two devices, one per mode, stopped at the same random instruction counts (fixed seeds);
// at every stop the whole device state must be equal: the event, the device context (registers,
// CSRs, masks, IPDOM stacks, barriers, local memory, the KMU, the scheduler), the counters and
// every mapped page of memory.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>

#include "device/host_runtime.hpp"
#include "device/image.hpp"
#include "device/model_view.hpp"

namespace vx {
namespace {

// examples/meson.build's example_names.
const char* const kExamples[] = {"vecadd", "sgemm", "reduce", "diverge",   "histogram", "racy",     "fault", "assert",
                                 "hang",   "hello", "saxpy",  "lmem_race", "cycles",    "cta_race", "rare"};

// A digest of every observation (driver.hpp), so both loops can be shown to report the same ones.
class DigestObserver : public DeviceObserver {
 public:
  void launch_started(const LaunchState&) override { mix(0xfeed); }
  void retired(const Observation& o) override {
    ++count;
    for (uint64_t v : {uint64_t(o.cls), uint64_t(o.core), uint64_t(o.slot), uint64_t(o.pc), uint64_t(o.word),
                       uint64_t(o.tmask), o.launch_instret, uint64_t(o.csr), uint64_t(o.cta_linear)})
      mix(v);
    for (uint32_t v : o.values) mix(v);
    for (const ObservedAccess& a : o.accesses) mix(uint64_t(a.lane) << 40 ^ uint64_t(a.addr) << 8 ^ a.size ^ a.kind);
  }
  uint64_t digest = 1469598103934665603ull;
  uint64_t count = 0;

 private:
  void mix(uint64_t v) { digest = (digest ^ v) * 1099511628211ull; }
};

struct Device {
  std::unique_ptr<DigestObserver> obs;
  std::unique_ptr<Driver> d;
  std::unique_ptr<HostRuntime> rt;
  const Machine* m = nullptr;
};

Device open(const DeviceConfig& cfg, uint64_t seed, bool reference, bool observe, const KernelImage& img) {
  RunOptions o;
  o.seed = seed;
  o.watchdog_instructions = 300'000;  // hang.c ends on the watchdog
  o.reference = reference;
  auto d = open_model_device(cfg, o);
  REQUIRE(d.ok());
  Device dev;
  dev.d = std::move(*d);
  dev.rt = std::make_unique<HostRuntime>(*dev.d);
  dev.m = model_machine_for_tests(*dev.d);
  REQUIRE(dev.m);
  if (observe) {
    dev.obs = std::make_unique<DigestObserver>();
    dev.d->set_observer(dev.obs.get());
  }
  REQUIRE(dev.rt->load_image(img).ok());
  // The image's copy commands complete before the launch is submitted.
  while (dev.d->wait().kind == EventKind::Completed) {
  }
  return dev;
}

// Everything the two modes must agree on; the first difference, or "" when none.
std::string difference(const Machine& a, const Machine& b) {
  if (a.launch() != b.launch()) return "launch state";
  if (a.scheduler() != b.scheduler()) return "scheduler state";
  const MachineStats &sa = a.stats(), &sb = b.stats();
  if (sa.instructions != sb.instructions || sa.lane_instructions != sb.lane_instructions ||
      sa.warps_dispatched != sb.warps_dispatched || sa.units_dispatched != sb.units_dispatched ||
      sa.divergent_branches != sb.divergent_branches || sa.restore_instructions != sb.restore_instructions)
    return "counters (" + std::to_string(sa.instructions) + " vs " + std::to_string(sb.instructions) + " instructions)";
  for (uint32_t c = 0; c < a.num_cores(); ++c) {
    const CoreState &ca = a.core(c), &cb = b.core(c);
    for (uint32_t w = 0; w < ca.warps.size(); ++w)
      if (ca.warps[w] != cb.warps[w])
        return "core " + std::to_string(c) + " warp " + std::to_string(w) + " (pc " + std::to_string(ca.warps[w].pc) +
               " vs " + std::to_string(cb.warps[w].pc) + ")";
    if (ca != cb) return "core " + std::to_string(c) + " (barriers, local memory or slots)";
  }
  const auto pa = a.memory().mapped_pages(), pb = b.memory().mapped_pages();
  if (pa != pb) return "mapped pages";
  for (uint32_t p : pa) {
    const uint8_t *x = a.memory().page_data(p), *y = b.memory().page_data(p);
    static const uint8_t zero[Memory::kPageSize] = {};
    if (std::memcmp(x ? x : zero, y ? y : zero, Memory::kPageSize) != 0) return "memory page " + std::to_string(p);
  }
  return "";
}

// The number of stops compared; 0 when the kernel's default launch does not fit the configuration.
uint32_t compare_kernel(const std::string& name, const DeviceConfig& cfg, uint64_t seed, bool observe) {
  auto img = load_kernel_image(std::string(VX_EXAMPLES_DIR) + "/" + name + ".elf");
  REQUIRE(img.ok());
  auto launch = resolve_grid_launch(*img, cfg, LaunchOverrides{});
  if (!launch.ok()) return 0;
  Device fast = open(cfg, seed, false, observe, *img), ref = open(cfg, seed, true, observe, *img);
  REQUIRE(fast.rt->launch_grid(*launch).ok());
  REQUIRE(ref.rt->launch_grid(*launch).ok());
  std::mt19937_64 rng(seed * 7919 + name.size());
  uint32_t stops = 0;
  for (;;) {
    // Mostly short runs (stops inside blocks, quanta and barriers), sometimes long ones.
    const uint64_t n = rng() % 4 == 0 ? 1 + rng() % 5000 : 1 + rng() % 40;
    DeviceEvent ef = fast.d->wait(n), er = ref.d->wait(n);
    INFO(name << " on " << cfg.to_string() << " seed " << seed << ", stop " << stops << " after " << n);
    REQUIRE(ef.kind == er.kind);
    REQUIRE(ef.exception == er.exception);
    REQUIRE(difference(*fast.m, *ref.m) == "");
    if (observe) {
      REQUIRE(fast.obs->count == ref.obs->count);
      REQUIRE(fast.obs->digest == ref.obs->digest);
    }
    if (ef.kind == EventKind::Budget) {
      auto cf = fast.d->save_context(), cr = ref.d->save_context();
      REQUIRE(cf.ok() == cr.ok());
      if (cf.ok()) REQUIRE(*cf == *cr);
    }
    REQUIRE(fast.d->read_console().size() == ref.d->read_console().size());
    ++stops;
    if (ef.kind != EventKind::Budget) break;
  }
  return stops;
}

TEST_CASE("reference mode: every example kernel leaves the same state on the fast path", "[reference]") {
  for (const char* name : kExamples) {
    uint32_t configs = 0, stops = 0;
    for (auto [cfg, seed] : {std::pair{DeviceConfig{1, 1, 4, 4}, 1},
                             {DeviceConfig{1, 1, 1, 1}, 2},
                             {DeviceConfig{1, 2, 4, 8}, 3},
                             {DeviceConfig{1, 1, 4, 32}, 4}}) {
      // Every other shape with an observer: its reports must not depend on the loop either.
      const uint32_t n = compare_kernel(name, cfg, uint64_t(seed), seed % 2 == 1);
      configs += n > 0;
      stops += n;
    }
    // Each kernel ran on at least two shapes and was stopped in the middle somewhere.
    INFO(name);
    CHECK(configs >= 2);
    CHECK(stops > configs);
  }
}

}  // namespace
}  // namespace vx
