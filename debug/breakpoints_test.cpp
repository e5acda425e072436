// The breakpoint table and its hit filter (debug/breakpoints.hpp) on a real session of the reduce
// example: conditions on C locals decided per lane at the hit, gdb's hit and ignore counts,
// temporary breakpoints, enabling, and the errors a bad request gets.
#include "debug/breakpoints.hpp"

#include <catch2/catch.hpp>

#include "engine/variables.hpp"
#include "tests/session_support.hpp"

using namespace vx;
using namespace vx::debug;
using engine::StopReason;

namespace {

struct Fixture {
  std::unique_ptr<Driver> dev;
  std::unique_ptr<engine::Session> s;
  std::optional<engine::Symbols> sym;
  std::optional<engine::Variables> vars;
  std::unique_ptr<Inspector> insp;
  std::unique_ptr<Breakpoints> bps;
  Fixture() {
    DeviceConfig cfg;
    dev = test::open(cfg, 7);
    engine::SessionOptions so;  // no store: a hit is decided without a checkpoint
    auto made = engine::Session::create(*dev, so);
    REQUIRE(made);
    s = std::move(made).value();
    test::launch_kernel(s->host(), "reduce");
    auto loaded = engine::Symbols::load(test::kernel_file("reduce"));
    REQUIRE(loaded);
    sym.emplace(std::move(loaded).value());
    auto v = engine::Variables::load(test::kernel_file("reduce"));
    REQUIRE(v);
    vars.emplace(std::move(v).value());
    insp = std::make_unique<Inspector>(*s, &*sym, &*vars, LaunchGridArgs{});
    bps = std::make_unique<Breakpoints>(*s, *insp);
  }
  // The C value of `name` in lane l at the stop.
  int64_t c_value(const Lane& l, const std::string& name) {
    auto e = Expr::parse(name);
    REQUIRE(e);
    auto v = insp->evaluate_c(*e->root(), l, 0);
    REQUIRE(v);
    auto i = c_to_int(*v);
    REQUIRE(i);
    return *i;
  }
};

}  // namespace

TEST_CASE("a condition on a C local stops only where it holds, in the lane it holds in") {
  Fixture f;
  auto id = f.bps->add_breakpoint("reduce.c:81", "v == 3", false, std::nullopt);
  REQUIRE(id);
  unsigned stops = 0;
  for (;;) {
    f.bps->clear_pending();
    auto ev = f.s->resume();
    REQUIRE(ev);
    if (ev->reason == StopReason::Exited) break;
    REQUIRE(ev->reason == StopReason::Breakpoint);
    // The filter decided at the hit; its lane is one where v == 3.
    REQUIRE(f.bps->pending_break());
    const BreakDecision& d = *f.bps->pending_break();
    CHECK(d.ids == std::vector<int>{*id});
    CHECK(d.errors.empty());
    REQUIRE(d.lane);
    CHECK(f.c_value(*d.lane, "v") == 3);
    // A second look at the same hit agrees and counts nothing.
    const BreakDecision again = f.bps->breakpoint_hit(*ev, false);
    CHECK(again.ids == d.ids);
    CHECK(again.lane == d.lane);
    ++stops;
  }
  CHECK(stops > 0);
  CHECK(f.bps->find(*id)->hits == stops);
}

TEST_CASE("a condition false everywhere never stops and counts no hit") {
  Fixture f;
  auto id = f.bps->add_breakpoint("reduce.c:81", "v == 100", false, std::nullopt);
  REQUIRE(id);
  auto ev = f.s->resume();
  REQUIRE(ev);
  CHECK(ev->reason == StopReason::Exited);
  CHECK(f.bps->find(*id)->hits == 0);
}

TEST_CASE("ignore counts pass hits by, temporary breakpoints go, disabled ones do not stop") {
  Fixture f;
  auto id = f.bps->add_breakpoint("reduce.c:81", "", false, std::nullopt);
  REQUIRE(id);
  f.bps->find(*id)->ignore = 2;
  auto ev = f.s->resume();
  REQUIRE(ev);
  REQUIRE(ev->reason == StopReason::Breakpoint);
  // Two hits passed (and counted, as gdb counts ignored hits), the third stops.
  CHECK(f.bps->find(*id)->hits == 3);
  CHECK(f.bps->find(*id)->ignore == 0);
  CHECK(f.bps->placed_at(*ev) == std::vector<int>{*id});

  auto t = f.bps->add_breakpoint("reduce.c:82", "", true, std::nullopt);
  REQUIRE(t);
  REQUIRE(f.bps->set_enabled({*id}, false));
  f.bps->clear_pending();
  ev = f.s->resume();
  REQUIRE(ev);
  REQUIRE(ev->reason == StopReason::Breakpoint);
  REQUIRE(f.bps->pending_break());
  CHECK(f.bps->pending_break()->ids == std::vector<int>{*t});
  REQUIRE(f.bps->stopped_at(f.bps->pending_break()->ids));
  CHECK(f.bps->find(*t) == nullptr);
  ev = f.s->resume();
  REQUIRE(ev);
  CHECK(ev->reason == StopReason::Exited);
}

TEST_CASE("a condition that cannot be evaluated stops and says why, as gdb") {
  Fixture f;
  auto id = f.bps->add_breakpoint("reduce.c:81", "no_such_name == 1", false, std::nullopt);
  REQUIRE(id);
  auto ev = f.s->resume();
  REQUIRE(ev);
  REQUIRE(ev->reason == StopReason::Breakpoint);
  REQUIRE(f.bps->pending_break());
  REQUIRE(f.bps->pending_break()->errors.size() == 1);
  CHECK(f.bps->pending_break()->errors[0].find("Error in breakpoint 1's condition \"no_such_name == 1\"") == 0);
}

TEST_CASE("bad requests are refused with what was wrong, and leave the table as it was") {
  Fixture f;
  CHECK_FALSE(f.bps->add_breakpoint("nowhere.c:1", "", false, std::nullopt));
  CHECK_FALSE(f.bps->add_breakpoint("reduce.c:81", "v ==", false, std::nullopt));
  auto bad = f.bps->add_breakpoint("", "", false, std::nullopt);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("no default breakpoint location") != std::string::npos);
  auto id = f.bps->add_breakpoint("reduce.c:81", "", false, std::nullopt);
  REQUIRE(id);
  CHECK(*id == 1);  // the refused requests took no number
  auto r = f.bps->remove({1, 5});
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "No breakpoint number 5.");
  CHECK(f.bps->find(1));  // nothing removed when one number is wrong
  auto c = f.bps->add_watchpoint(WatchRequest{"watch", "1 + 2", ""}, std::nullopt, 0);
  REQUIRE_FALSE(c);
  CHECK(c.error().message == "Cannot watch constant value `1 + 2'.");
  REQUIRE(f.bps->remove({}));
  CHECK(f.bps->all().empty());
}
