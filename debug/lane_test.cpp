// Lanes, gdb's thread ids, the lane a stop is about, the register vocabulary and the definition of
// a call and a return (debug/lane.hpp, device/registers.hpp).
#include "debug/lane.hpp"

#include <catch2/catch.hpp>

#include "device/registers.hpp"

using vx::DeviceConfig;
using vx::DeviceContext;
using vx::debug::Lane;
using vx::engine::StopEvent;
using vx::engine::StopReason;

namespace {

// Two cores of four warps of eight lanes; a 16-thread block, so warp rank 1 holds lanes 8..15.
DeviceContext make_ctx() {
  DeviceContext ctx;
  ctx.launch.kind = vx::LaunchKind::Grid;
  ctx.launch.block = {16, 1, 1};
  ctx.cores.resize(2);
  for (auto& c : ctx.cores) c.warps.resize(4);
  auto& w = ctx.cores[1].warps[2];
  w.active = true;
  w.tmask = 0b0110'0000;
  w.cta_rank = 1;
  ctx.cores[0].warps[0].active = true;
  ctx.cores[0].warps[0].tmask = 0xff;
  return ctx;
}

DeviceConfig config() {
  DeviceConfig c;
  c.clusters = 1;
  c.cores_per_cluster = 2;
  c.warps = 4;
  c.threads = 8;
  return c;
}

}  // namespace

TEST_CASE("thread ids number every lane of the device from 1 and back") {
  const DeviceConfig c = config();
  for (uint32_t core = 0; core < 2; ++core)
    for (uint32_t slot = 0; slot < 4; ++slot)
      for (uint32_t lane = 0; lane < 8; ++lane) {
        const Lane l{core, slot, lane};
        const int64_t t = vx::debug::thread_id(c, l);
        CHECK(t >= 1);
        CHECK(vx::debug::lane_of_thread(c, t) == l);
      }
  CHECK_FALSE(vx::debug::lane_of_thread(c, 0));
  CHECK_FALSE(vx::debug::lane_of_thread(c, -1));
  CHECK_FALSE(vx::debug::lane_of_thread(c, 1 + 2 * 4 * 8));
}

TEST_CASE("a stop is about one lane, by one rule") {
  const DeviceContext ctx = make_ctx();
  StopEvent ev;
  SECTION("a breakpoint: the followed lane when its warp hit with it active, else the lowest hit lane") {
    ev.reason = StopReason::Breakpoint;
    ev.hits = {{{1, 2}, 0x100, 0b0110'0000}};
    CHECK(vx::debug::stop_lane(ev, ctx, 8, std::nullopt) == Lane{1, 2, 5});
    CHECK(vx::debug::stop_lane(ev, ctx, 8, Lane{1, 2, 6}) == Lane{1, 2, 6});
    CHECK(vx::debug::stop_lane(ev, ctx, 8, Lane{1, 2, 3}) == Lane{1, 2, 5});  // lane 3 is not active
    CHECK(vx::debug::stop_lane(ev, ctx, 8, Lane{0, 0, 3}) == Lane{1, 2, 5});  // not in the hit
    // A condition that held in one lane decides.
    CHECK(vx::debug::stop_lane(ev, ctx, 8, Lane{1, 2, 5}, Lane{1, 2, 6}) == Lane{1, 2, 6});
  }
  SECTION("a step: the stepped lane's index in the stepped warp, else its lowest active lane") {
    ev.reason = StopReason::Step;
    ev.hits = {{{1, 2}, 0x100, 0b0110'0000}};
    CHECK(vx::debug::stop_lane(ev, ctx, 8, Lane{1, 2, 6}) == Lane{1, 2, 6});
    CHECK(vx::debug::stop_lane(ev, ctx, 8, Lane{1, 2, 0}) == Lane{1, 2, 5});
  }
  SECTION("an exception: the faulting lane") {
    ev.reason = StopReason::Exception;
    ev.exception.core = 0;
    ev.exception.warp = 0;
    ev.exception.lane = 3;
    CHECK(vx::debug::stop_lane(ev, ctx, 8, Lane{1, 2, 6}) == Lane{0, 0, 3});
  }
  SECTION("anything else: the followed lane while resident, else the first resident lane") {
    ev.reason = StopReason::Interrupt;
    CHECK(vx::debug::stop_lane(ev, ctx, 8, Lane{1, 2, 6}) == Lane{1, 2, 6});
    CHECK(vx::debug::stop_lane(ev, ctx, 8, Lane{1, 1, 6}) == Lane{0, 0, 0});
  }
}

TEST_CASE("CSR values come from the state by the device's rules") {
  const DeviceConfig c = config();
  DeviceContext ctx = make_ctx();
  const vx::WarpState& w = ctx.cores[1].warps[2];
  // Lane 5 of warp rank 1 is thread 13 of a 16-wide block.
  CHECK(vx::csr_state_value(c, ctx.launch, w, 1, 2, 5, 0xCD3) == 13u);
  CHECK(vx::csr_state_value(c, ctx.launch, w, 1, 2, 5, 0xCC0) == 5u);
  CHECK(vx::csr_state_value(c, ctx.launch, w, 1, 2, 5, 0xF14) == (1u * 4 + 2) * 8 + 5);
  CHECK_FALSE(vx::csr_state_value(c, ctx.launch, w, 1, 2, 5, 0xB00));  // mcycle is the machine's
  // A launch that is not a grid has no CTA coordinates: the device reads 0 there.
  ctx.launch.kind = vx::LaunchKind::Instances;
  CHECK(vx::csr_state_value(c, ctx.launch, w, 1, 2, 5, 0xCD3) == 0u);
  CHECK(vx::find_debug_csr("$tmask")->number == 0xCC4);
  CHECK(vx::find_debug_csr("vx_tmask")->number == 0xCC4);
  CHECK(vx::find_debug_csr("nosuch") == nullptr);
}

TEST_CASE("calls and returns, millicode's t0 included") {
  CHECK(vx::is_call(0x008000ef));          // jal ra, +8
  CHECK(vx::is_call(0x008002ef));          // jal t0, +8 (millicode)
  CHECK(vx::is_call(0x000300e7));          // jalr ra, 0(t1)
  CHECK_FALSE(vx::is_call(0x0080006f));    // j +8
  CHECK(vx::is_return(0x00008067));        // ret
  CHECK(vx::is_return(0x00028067));        // jr t0 (millicode return)
  CHECK_FALSE(vx::is_return(0x00030067));  // jr t1: a jump through a table, not a return
  CHECK_FALSE(vx::is_return(0x000080e7));  // jalr ra, 0(ra): a call
}
