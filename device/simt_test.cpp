// SIMT semantics: the IPDOM stack, PRED, TMC, VOTE, SHFL and WSPAWN
// (shared/spec/vortex-v3.md, "Vortex instructions").
#include <catch2/catch.hpp>

#include "device/test_support.hpp"

using namespace vx;
using namespace vx::test;

namespace {

constexpr uint32_t slt(uint32_t rd, uint32_t rs1, uint32_t rs2) { return r_type(0, rs2, rs1, 2, rd, 0x33); }

// Steps warp 0 of core 0 once; fails the test on an exception.
void step(Bench& b) {
  DeviceException exc;
  Outcome o = b.m.step(0, 0, &exc);
  INFO(exc.to_string());
  REQUIRE(o.step != Step::Exception);
}

void set_lanes(Bench& b, uint32_t reg, std::initializer_list<uint32_t> values) {
  uint32_t lane = 0;
  for (uint32_t v : values) b.x(reg, lane++) = v;
}

}  // namespace

TEST_CASE("SPLIT runs the smaller side first and JOIN re-runs the code after the split for the other side") {
  Bench b;
  b.load({vxi::split(a1, a0), vxi::vote(3, t0, a3), vxi::join(a1), vxi::vote(3, t1, a3), vxi::tmc(zero)});
  set_lanes(b, a0, {1, 0, 0, 0});
  set_lanes(b, a3, {1, 1, 1, 1});
  set_lanes(b, a1, {9, 9, 9, 9});
  b.m.activate_warp(0, 0, Bench::kCode, 0xF);
  step(b);  // split
  CHECK(b.warp().tmask == 0b0001);
  CHECK(b.warp().ipdom.size() == 1);
  for (uint32_t l = 0; l < 4; ++l) CHECK(b.x(a1, l) == 0);  // the token is the depth before the push
  step(b);                                                  // ballot on the then side
  step(b);                                                  // join: switch sides
  CHECK(b.warp().tmask == 0b1110);
  CHECK(b.warp().pc == Bench::kCode + 4);
  step(b);  // ballot on the else side
  step(b);  // join: pop
  CHECK(b.warp().tmask == 0b1111);
  CHECK(b.warp().ipdom.empty());
  CHECK(b.warp().pc == Bench::kCode + 12);
  CHECK(b.x(t0, 0) == 0b0001);
  for (uint32_t l = 1; l < 4; ++l) CHECK(b.x(t0, l) == 0b1110);
  step(b);
  for (uint32_t l = 0; l < 4; ++l) CHECK(b.x(t1, l) == 0b1111);
}

TEST_CASE("SPLIT continues with the else side when it is the smaller one, and with the then side on a tie") {
  Bench b;
  b.load({vxi::split(a1, a0), vxi::tmc(zero)});
  SECTION("else smaller") {
    set_lanes(b, a0, {1, 1, 1, 0});
    b.m.activate_warp(0, 0, Bench::kCode, 0xF);
    step(b);
    CHECK(b.warp().tmask == 0b1000);
  }
  SECTION("tie") {
    set_lanes(b, a0, {1, 1, 0, 0});
    b.m.activate_warp(0, 0, Bench::kCode, 0xF);
    step(b);
    CHECK(b.warp().tmask == 0b0011);
  }
  SECTION("SPLIT.N negates the predicate, so its tie runs the lanes whose predicate is false") {
    b.load({vxi::split_n(a1, a0), vxi::tmc(zero)});
    set_lanes(b, a0, {1, 1, 0, 0});
    b.m.activate_warp(0, 0, Bench::kCode, 0xF);
    step(b);
    CHECK(b.warp().tmask == 0b1100);
  }
  SECTION("only bit 0 of the predicate counts") {
    set_lanes(b, a0, {2, 3, 4, 6});  // bit 0 set in lane 1 only
    b.m.activate_warp(0, 0, Bench::kCode, 0xF);
    step(b);
    CHECK(b.warp().tmask == 0b0010);
  }
}

TEST_CASE("a uniform SPLIT pushes nothing and its JOIN has no effect") {
  Bench b;
  b.load({vxi::split(a1, a0), vxi::join(a1), vxi::tmc(zero)});
  set_lanes(b, a0, {1, 1, 1, 1});
  set_lanes(b, a1, {7, 7, 7, 7});
  b.m.activate_warp(0, 0, Bench::kCode, 0xF);
  step(b);
  CHECK(b.warp().tmask == 0xF);
  CHECK(b.warp().ipdom.empty());
  CHECK(b.x(a1, 3) == 0);
  step(b);
  CHECK(b.warp().tmask == 0xF);
  CHECK(b.warp().pc == Bench::kCode + 8);
}

TEST_CASE("SPLIT onto a full IPDOM stack is a device exception that changes nothing") {
  Bench b;  // NT = 4: the stack holds NT - 1 = 3 entries
  b.load({vxi::split(a1, a0), vxi::tmc(a5), vxi::split(a1, a0), vxi::tmc(a5), vxi::split(a1, a0), vxi::tmc(a5),
          vxi::split(a1, a0), vxi::tmc(zero)});
  set_lanes(b, a0, {1, 0, 0, 0});
  set_lanes(b, a5, {0xF, 0xF, 0xF, 0xF});
  DeviceException e = b.run_warp(0xF);
  CHECK(e.cause == Cause::IpdomOverflow);
  CHECK(e.pc == Bench::kCode + 24);
  CHECK(b.warp().ipdom.size() == 3);
  CHECK(b.warp().tmask == 0xF);
  CHECK(b.x(a1, 0) == 2);  // the faulting split did not write its token
}

TEST_CASE("JOIN with a token that does not match the IPDOM stack is a device exception") {
  Bench b;
  b.load({vxi::join(a1), vxi::tmc(zero)});
  set_lanes(b, a1, {5, 5, 5, 5});
  DeviceException e = b.run_warp(0xF);
  CHECK(e.cause == Cause::IpdomUnderflow);
  CHECK(e.pc == Bench::kCode);
}

TEST_CASE("PRED keeps the lanes whose condition holds and falls back to the last lane's mask when none does") {
  Bench b;
  b.load({vxi::pred(a0, a5), vxi::tmc(zero)});
  SECTION("some lanes true") {
    set_lanes(b, a0, {1, 0, 1, 0});
    b.m.activate_warp(0, 0, Bench::kCode, 0xF);
    step(b);
    CHECK(b.warp().tmask == 0b0101);
  }
  SECTION("no lane true") {
    set_lanes(b, a0, {0, 0, 0, 0});
    set_lanes(b, a5, {0x1, 0x2, 0x3, 0x6});
    b.m.activate_warp(0, 0, Bench::kCode, 0xF);
    step(b);
    CHECK(b.warp().tmask == 0x6);
  }
  SECTION("PRED.N negates the condition") {
    b.load({vxi::pred_n(a0, a5), vxi::tmc(zero)});
    set_lanes(b, a0, {1, 0, 1, 0});
    b.m.activate_warp(0, 0, Bench::kCode, 0xF);
    step(b);
    CHECK(b.warp().tmask == 0b1010);
  }
}

TEST_CASE("a PRED loop runs each lane its own number of times and restores the mask at the exit") {
  Bench b;
  b.load({
      slt(t0, zero, a0),      // 0: t0 = a0 > 0
      vxi::pred(t0, a5),      // 4: keep the lanes still looping
      rv::beq(t0, zero, 16),  // 8: uniform: all active lanes agree after PRED
      rv::addi(a0, a0, -1),   // 12
      rv::addi(a1, a1, 1),    // 16
      rv::jal(zero, -20),     // 20: back to 0
      vxi::vote(3, t2, a3),   // 24: ballot of the lanes alive after the loop
      vxi::tmc(zero),         // 28
  });
  set_lanes(b, a0, {1, 3, 0, 2});
  set_lanes(b, a3, {1, 1, 1, 1});
  set_lanes(b, a5, {0xF, 0xF, 0xF, 0xF});
  DeviceException e = b.run_warp(0xF);
  REQUIRE(e.cause == Cause::None);
  CHECK(b.x(a1, 0) == 1);
  CHECK(b.x(a1, 1) == 3);
  CHECK(b.x(a1, 2) == 0);
  CHECK(b.x(a1, 3) == 2);
  for (uint32_t l = 0; l < 4; ++l) CHECK(b.x(t2, l) == 0xF);
  CHECK(b.m.stats().divergent_branches == 0);
}

TEST_CASE("TMC takes its mask from the highest active lane and a zero mask retires the warp") {
  Bench b;
  b.load({vxi::tmc(a0), vxi::tmc(zero)});
  set_lanes(b, a0, {0xF, 0xF, 0x3, 0xF});
  b.m.activate_warp(0, 0, Bench::kCode, 0b0111);
  step(b);
  CHECK(b.warp().tmask == 0x3);
  step(b);
  CHECK_FALSE(b.warp().active);
  CHECK(b.warp().restart_pc == Bench::kCode + 8 - 20);
}

TEST_CASE("TMC masks off lanes that do not exist") {
  Bench b;
  b.load({vxi::tmc(a0), vxi::tmc(zero)});
  set_lanes(b, a0, {0xFF1, 0xFF1, 0xFF1, 0xFF1});
  b.m.activate_warp(0, 0, Bench::kCode, 0xF);
  step(b);
  CHECK(b.warp().tmask == 0x1);
}

TEST_CASE("VOTE looks only at active lanes and writes only active lanes") {
  Bench b;
  b.load({vxi::vote(0, t0, a0), vxi::vote(1, t1, a0), vxi::vote(2, t2, a0), vxi::vote(3, t3, a0), vxi::tmc(zero)});
  auto run = [&](std::initializer_list<uint32_t> pred) {
    set_lanes(b, a0, pred);
    for (uint32_t r : {t0, t1, t2, t3}) b.x(r, 3) = 0xdead;
    REQUIRE(b.run_warp(0b0111).cause == Cause::None);
    CHECK(b.x(t0, 3) == 0xdead);  // lane 3 is inactive
  };
  SECTION("all set among the active lanes") {
    run({1, 1, 1, 0});
    CHECK(b.x(t0, 0) == 1);
    CHECK(b.x(t1, 0) == 1);
    CHECK(b.x(t2, 0) == 1);
    CHECK(b.x(t3, 2) == 0b0111);
  }
  SECTION("mixed") {
    run({1, 0, 1, 1});
    CHECK(b.x(t0, 1) == 0);
    CHECK(b.x(t1, 1) == 1);
    CHECK(b.x(t2, 1) == 0);
    CHECK(b.x(t3, 1) == 0b0101);
  }
  SECTION("none set is uniform") {
    run({0, 0, 0, 1});
    CHECK(b.x(t0, 0) == 0);
    CHECK(b.x(t1, 0) == 0);
    CHECK(b.x(t2, 0) == 1);
    CHECK(b.x(t3, 0) == 0);
  }
}

TEST_CASE("SHFL variants pick their source lane by the spec's lo/hi rule") {
  Bench b;
  b.load({vxi::shfl(0, a1, a0, a2), vxi::tmc(zero)});
  set_lanes(b, a0, {10, 11, 12, 13});
  auto shfl = [&](uint32_t kind, uint32_t b_, uint32_t c, uint32_t mask, uint32_t tmask = 0xF) {
    b.load({vxi::shfl(kind, a1, a0, a2), vxi::tmc(zero)});
    set_lanes(b, a1, {0, 0, 0, 0});
    uint32_t ctl = (mask << 12) | (c << 6) | b_;
    set_lanes(b, a2, {ctl, ctl, ctl, ctl});
    REQUIRE(b.run_warp(tmask).cause == Cause::None);
    return std::vector<uint32_t>{b.x(a1, 0), b.x(a1, 1), b.x(a1, 2), b.x(a1, 3)};
  };
  CHECK(shfl(0, 1, 3, 0) == std::vector<uint32_t>{10, 10, 11, 12});  // UP: lane 0 keeps its own
  CHECK(shfl(1, 1, 3, 0) == std::vector<uint32_t>{11, 12, 13, 13});  // DOWN: the last lane keeps its own
  CHECK(shfl(1, 1, 1, 0) == std::vector<uint32_t>{11, 11, 12, 13});  // DOWN clamped at hi = 1
  CHECK(shfl(2, 1, 3, 0) == std::vector<uint32_t>{11, 10, 13, 12});  // BFLY
  CHECK(shfl(2, 2, 3, 0) == std::vector<uint32_t>{12, 13, 10, 11});
  CHECK(shfl(3, 2, 3, 0) == std::vector<uint32_t>{12, 12, 12, 12});   // IDX broadcast
  CHECK(shfl(3, 1, 1, 62) == std::vector<uint32_t>{11, 11, 13, 13});  // IDX within segments of 2
  CHECK(shfl(1, 5, 63, 0) == std::vector<uint32_t>{10, 11, 12, 13});  // source beyond NT: keep own
  SECTION("the source lane may be inactive") { CHECK(shfl(2, 2, 3, 0, 0b0011) == std::vector<uint32_t>{12, 13, 0, 0}); }
}

TEST_CASE("WSPAWN starts warps 1..count-1 with lane 0 active and the caller's mscratch") {
  Bench b;
  b.load({vxi::wspawn(a0, a1), vxi::tmc(zero), vxi::tmc(zero)});
  set_lanes(b, a0, {3, 3, 3, 3});
  set_lanes(b, a1, {0, 0, 0, Bench::kCode + 8});  // the pc comes from the highest active lane
  b.warp(0).mscratch = 0x1234;
  b.m.activate_warp(0, 0, Bench::kCode, 0xF);
  step(b);
  for (uint32_t w : {1u, 2u}) {
    CHECK(b.warp(w).active);
    CHECK(b.warp(w).pc == Bench::kCode + 8);
    CHECK(b.warp(w).tmask == 1);
    CHECK(b.warp(w).mscratch == 0x1234);
  }
  CHECK_FALSE(b.warp(3).active);
}

TEST_CASE("WSPAWN clamps the count to the warps of a core and waits while another warp is active") {
  Bench b;
  b.load({vxi::wspawn(a0, a1), vxi::tmc(zero)});
  set_lanes(b, a0, {100, 100, 100, 100});
  set_lanes(b, a1, {Bench::kCode + 4, Bench::kCode + 4, Bench::kCode + 4, Bench::kCode + 4});
  b.m.activate_warp(0, 3, Bench::kCode + 4, 1);  // another warp is running
  b.m.activate_warp(0, 0, Bench::kCode, 0xF);
  DeviceException exc;
  CHECK(b.m.step(0, 0, &exc).step == Step::Stall);
  CHECK(b.warp(0).wait == WarpWait::Spawn);
  CHECK(b.warp(0).pc == Bench::kCode);
  CHECK(b.m.step(0, 3, &exc).step == Step::Retire);  // warp 3 retires: warp 0 may go on
  CHECK(b.warp(0).wait == WarpWait::None);
  CHECK(b.m.step(0, 0, &exc).step == Step::Retire);
  for (uint32_t w = 1; w < 4; ++w) CHECK(b.warp(w).active);
}
