// The history index (replay/history.hpp) on observations made by hand, as the device reports them:
// what it keeps of each write, and its round trip through the store's form, cut at a point.
#include <catch2/catch.hpp>
#include <vector>

#include "replay/history.hpp"

using namespace vx;
using namespace vx::replay;

namespace {

LaunchState grid_launch() {
  LaunchState l;
  l.kind = LaunchKind::Grid;
  l.grid = {2, 1, 1};
  l.block = {8, 1, 1};
  return l;
}

// A store by every lane of warp `slot` at `instret`: lane L writes addr + 4L, the value at + L.
void store(HistoryIndex& h, uint64_t instret, uint32_t slot, uint32_t addr, uint32_t value) {
  std::vector<ObservedAccess> acc;
  for (uint32_t lane = 0; lane < 4; ++lane)
    acc.push_back(ObservedAccess{lane, addr + 4 * lane, 4, kWatchWrite, false, 0, value + lane});
  Observation o;
  o.cls = InsnClass::Store;
  o.slot = slot;
  o.pc = 0x80000100;
  o.tmask = 0xf;
  o.launch_instret = instret;
  o.cta_linear = slot / 2;
  o.cta_rank = slot % 2;
  o.accesses = acc;
  h.retired(o);
}

}  // namespace

TEST_CASE("The history keeps each lane's write with its thread, and reads back from the store's form cut at a point") {
  DeviceConfig cfg;  // 1x1x4x4
  HistoryIndex h(cfg);
  h.begin_launch(1, grid_launch());
  store(h, 10, 1, 0x1000, 7);
  store(h, 20, 2, 0x1000, 70);
  store(h, 30, 3, 0x2000, 700);
  h.end_launch(engine::Session::HistoryPass{1, 40, true, true, {{22, 28}}, UINT64_MAX});
  REQUIRE(h.write_count() == 12);
  const MemoryPlace first{0x1004, 4};
  auto w = h.writes_to(first, engine::TimePoint{1, 100});
  REQUIRE(w.size() == 2);
  CHECK(w[0]->after == 8);
  CHECK(w[1]->after == 71);
  CHECK(w[1]->who.cta == 1);
  CHECK(w[1]->who.thread == 1);  // rank 0 of CTA 1, lane 1
  CHECK(h.thread_name(1, w[1]->who) == "CTA (1,0,0) thread (1,0,0)");
  CHECK(h.last_writers(first, engine::TimePoint{1, 15})[0]->after == 8);

  const checkpoint::HistoryRecord rec = h.record(1);
  CHECK(rec.writes.size() == 12);
  CHECK(rec.ended);
  HistoryIndex whole(cfg);
  REQUIRE(whole.load(rec).ok());
  CHECK(whole.record(1) == rec);
  CHECK(whole.thread_name(1, w[1]->who) == "CTA (1,0,0) thread (1,0,0)");

  // Cut at 25: the writes a pass to 25 gathers, and a pass that did not reach the launch's end.
  HistoryIndex cut(cfg);
  REQUIRE(cut.load(rec, 25).ok());
  CHECK(cut.write_count() == 8);
  const auto& p = cut.passes().at(1);
  CHECK(p.reached == 25);
  CHECK_FALSE(p.ended);
  CHECK(p.complete);
  CHECK(p.stepped == std::vector<std::pair<uint64_t, uint64_t>>{{22, 28}});
  HistoryIndex before(cfg);
  REQUIRE(before.load(rec, 21).ok());
  CHECK(before.passes().at(1).stepped.empty());

  // A record from another device shape is refused.
  checkpoint::HistoryRecord other = rec;
  other.writes[0].slot = 9;
  HistoryIndex refused(cfg);
  auto r = refused.load(other);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("warp 9") != std::string::npos);
}
