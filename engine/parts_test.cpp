// The session's parts with their own state: the trap table, the recorder and the workload plan,
// each through its interface alone (engine/traps.hpp, engine/recorder.hpp, engine/plan.hpp).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include "checkpoint/test_records.hpp"
#include "checkpoint/timeline.hpp"
#include "device/cmdbuf_builder.hpp"
#include "engine/plan.hpp"
#include "engine/recorder.hpp"
#include "engine/traps.hpp"

using namespace vx;
using namespace vx::engine;

namespace {

std::unique_ptr<Driver> model() {
  DeviceConfig cfg;
  auto d = open_model_device(cfg, RunOptions{});
  REQUIRE(d);
  return std::move(d).value();
}

uint32_t word_at(Driver& d, uint32_t addr) {
  uint32_t w = 0;
  REQUIRE(d.copy_from_device(addr, {reinterpret_cast<uint8_t*>(&w), 4}));
  return w;
}

void put_word(Driver& d, uint32_t addr, uint32_t w) {
  REQUIRE(d.copy_to_device(addr, {reinterpret_cast<const uint8_t*>(&w), 4}));
}

// A fresh directory, removed at the end.
struct TempDir {
  std::string path;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "vxparts-XXXXXX").string();
    REQUIRE(mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

checkpoint::StoreHeader header_of(const checkpoint::ConfigRecord& cfg) {
  checkpoint::StoreHeader h;
  h.config = cfg;
  h.kernel_hash = 1;
  h.workload = "parts_test";
  return h;
}

checkpoint::OpenOptions scratch() {
  checkpoint::OpenOptions o;
  o.sync = false;
  return o;
}

const checkpoint::ConfigRecord kShape{1, 1, 4, 4, 4096};

// A new scratch store in dir.
checkpoint::Store new_store(const TempDir& dir, checkpoint::OpenMode mode = checkpoint::OpenMode::Create) {
  auto store = checkpoint::Store::open(dir.path, header_of(kShape), mode, scratch());
  REQUIRE(store);
  return std::move(store).value();
}

std::vector<uint8_t> page_of(uint8_t fill) { return std::vector<uint8_t>(checkpoint::kPageSize, fill); }

}  // namespace

TEST_CASE("The trap table plants EBREAKs, shows the original words, and takes them out when no breakpoint wants them") {
  auto d = model();
  auto base = d->mem_alloc(4096);
  REQUIRE(base);
  const uint32_t a = *base + 16;
  put_word(*d, a, 0x00a00513);  // li a0, 10
  TrapTable t(*d);

  auto b1 = t.add_breakpoint(a, false);
  REQUIRE(b1);
  auto b2 = t.add_breakpoint(a, false);
  REQUIRE(b2);
  CHECK(*b1 != *b2);
  CHECK(word_at(*d, a) == kEbreak);
  CHECK(t.planted_at(a));
  CHECK(t.original(a) == 0x00a00513u);
  std::vector<uint8_t> view(8);
  REQUIRE(d->copy_from_device(a - 2, view));
  t.unplant_view(a - 2, view);
  CHECK(view[2] == 0x13);
  CHECK(view[5] == 0x00);
  CHECK(t.overlaps_planted(a + 3, a + 4));
  CHECK_FALSE(t.overlaps_planted(a + 4, a + 8));

  REQUIRE(t.remove_breakpoint(*b1));
  CHECK(word_at(*d, a) == kEbreak);  // b2 still wants it
  REQUIRE(t.enable_breakpoint(*b2, false));
  CHECK(word_at(*d, a) == 0x00a00513u);
  CHECK_FALSE(t.wanted(a));
  REQUIRE(t.enable_breakpoint(*b2, true));
  CHECK(word_at(*d, a) == kEbreak);
  CHECK(t.wanted_addresses() == std::set<uint32_t>{a});

  CHECK(t.hit_at({a}, true) == std::vector<int>{*b2});
  CHECK(t.breakpoints().at(0).hits == 1);
  CHECK(t.hit_at({a + 4}, true).empty());

  CHECK_FALSE(t.remove_breakpoint(99));
  CHECK(t.remove_breakpoint(99).error().message == "no breakpoint number 99");
  CHECK_FALSE(t.add_breakpoint(a + 2, false));
}

TEST_CASE("The trap table keeps the host's new words under a breakpoint, and suspends and restores its EBREAKs") {
  auto d = model();
  auto base = d->mem_alloc(4096);
  REQUIRE(base);
  const uint32_t a = *base;
  put_word(*d, a, 0x11111111);
  TrapTable t(*d);
  REQUIRE(t.add_breakpoint(a, false));
  put_word(*d, a, 0x22222222);  // the host copies new code there
  t.replant(a, 4);
  CHECK(word_at(*d, a) == kEbreak);
  CHECK(t.original(a) == 0x22222222u);

  auto s = t.suspend();
  CHECK(word_at(*d, a) == 0x22222222u);
  CHECK_FALSE(t.planted_at(a));
  t.restore(s);
  CHECK(word_at(*d, a) == kEbreak);
  CHECK(t.original(a) == 0x22222222u);
}

TEST_CASE("A breakpoint on memory not mapped yet is refused, or kept and planted once the memory is there") {
  auto d = model();
  TrapTable t(*d);
  const uint32_t a = 0x90000000;
  CHECK_FALSE(t.add_breakpoint(a, false));
  CHECK(t.breakpoints().empty());
  auto id = t.add_breakpoint(a, true);
  REQUIRE(id);
  CHECK_FALSE(t.planted_at(a));
  REQUIRE(d->mem_reserve(a, 4096));
  t.plant_pending();
  CHECK(t.planted_at(a));
  CHECK(word_at(*d, a) == kEbreak);
}

TEST_CASE("A runner that plants by itself leaves device memory alone") {
  auto d = model();
  auto base = d->mem_alloc(4096);
  REQUIRE(base);
  put_word(*d, *base, 0x33333333);
  TrapTable t(*d);
  t.set_plants_in_memory(false);
  REQUIRE(t.add_breakpoint(*base, false));
  CHECK(word_at(*d, *base) == 0x33333333u);
  CHECK(t.wanted(*base));
  t.set_planted({{*base, 0x33333333u}});
  CHECK(t.planted_at(*base));
}

TEST_CASE("The trap table's watchpoints: bad specs refused, enabling, and the device's ranges") {
  auto d = model();
  TrapTable t(*d);
  CHECK(t.add_watchpoint(WatchSpec{0x1000, 0, kWatchWrite}).error().message == "a watchpoint covers 1 to 4096 bytes");
  CHECK_FALSE(t.add_watchpoint(WatchSpec{0x1000, 4, 0}));
  auto w = t.add_watchpoint(WatchSpec{0x1000, 4, kWatchWrite});
  REQUIRE(w);
  CHECK(t.watching());
  REQUIRE(t.enable_watchpoint(*w, false));
  CHECK_FALSE(t.watching());
  CHECK(t.remove_watchpoint(*w + 1).error().message == "no watchpoint number " + std::to_string(*w + 1));
  REQUIRE(t.remove_watchpoint(*w));
  CHECK(t.take_watch_events().empty());
}

TEST_CASE("The recorder without a store writes nothing and fails nothing") {
  Recorder r;
  CHECK_FALSE(r.writes_ops());
  CHECK_FALSE(r.writes_checkpoints());
  CHECK(r.flush());
  CHECK(r.error().empty());
  r.schedule_from(0, 0);
  CHECK_FALSE(r.auto_due(UINT64_MAX - 1));
  r.schedule_from(1500, 1000);
  CHECK(r.next_auto() == 2000);
  CHECK_FALSE(r.auto_due(1999));
  CHECK(r.auto_due(2000));
}

TEST_CASE("The recorder writes a launch's start once the work since the last checkpoint reaches the interval") {
  Recorder r;
  CHECK(r.start_due(1000));  // nothing written yet: the first launch's start
  CHECK_FALSE(r.start_due(0));
  r.schedule_from(0, 1000);
  CHECK(r.next_auto() == 1000);
  r.checkpoint_at(0);
  CHECK_FALSE(r.start_due(1000));
  r.launch_ended(300);  // a launch of 300 instructions after its start
  CHECK(r.unsaved() == 300);
  CHECK_FALSE(r.start_due(1000));
  // The next launch's first automatic checkpoint comes when the work since the start reaches the
  // interval, and a re-launch inside it (a stop whose save failed) keeps that point.
  r.schedule_from(0, 1000);
  CHECK(r.next_auto() == 700);
  r.schedule_from(650, 1000);
  CHECK(r.next_auto() == 700);
  r.host_copied(1600);  // the host's copies count: 16 bytes an instruction
  CHECK(r.unsaved() == 400);
  r.launch_ended(500);
  CHECK(r.unsaved() == 900);
  r.schedule_from(0, 1000);
  CHECK(r.next_auto() == 100);
  // Overdue (the checkpoint there failed): the next multiple, not every event.
  r.schedule_from(150, 1000);
  CHECK(r.next_auto() == 1000);
  // A checkpoint inside the launch: only what ran after it counts at the launch's end, and the
  // launch's own multiples apply.
  r.checkpoint_at(200);
  r.schedule_from(200, 1000);
  CHECK(r.next_auto() == 1000);
  r.launch_ended(1150);
  CHECK(r.unsaved() == 950);
  r.launch_ended(50);
  CHECK(r.start_due(1000));
  r.schedule_from(0, 1000);
  CHECK(r.next_auto() == 1000);  // the start is due: begin_piece writes it
  r.host_copied(UINT64_MAX);     // saturates
  r.launch_ended(UINT64_MAX);
  CHECK(r.unsaved() == UINT64_MAX);
  r.schedule_from(0, 0);
  CHECK(r.next_auto() == UINT64_MAX);
}

TEST_CASE("The recorder writes a stop's checkpoint once a sixteenth of the interval ran since the last one") {
  Recorder r;
  CHECK(r.since_checkpoint(5) == UINT64_MAX);  // none yet
  CHECK(r.stop_checkpoint_due(5, 1600));
  r.checkpoint_at(0);
  CHECK(r.since_checkpoint(99) == 99);
  CHECK_FALSE(r.stop_checkpoint_due(99, 1600));  // 100 is the sixteenth
  CHECK(r.stop_checkpoint_due(100, 1600));
  CHECK(r.stop_checkpoint_due(1, 0));   // automatic checkpoints off: every stop writes one
  CHECK(r.stop_checkpoint_due(1, 15));  // an interval too small to split
  r.checkpoint_at(300);
  CHECK(r.since_checkpoint(350) == 50);
  // The work of earlier launches counts, the host's copies too.
  r.launch_ended(360);
  r.host_copied(16 * 30);
  CHECK(r.since_checkpoint(20) == 60 + 30 + 20);
  CHECK_FALSE(r.stop_checkpoint_due(9, 1600));
  CHECK(r.stop_checkpoint_due(10, 1600));
  r.launch_ended(UINT64_MAX);  // saturates
  CHECK(r.since_checkpoint(UINT64_MAX) == UINT64_MAX);
}

TEST_CASE("The recorder queues host operations until a flush, and a replay or a read-only store records none") {
  TempDir dir;
  auto store = new_store(dir);
  Recorder r;
  r.attach(&store, true, false);
  CHECK_FALSE(r.writes_ops());
  CHECK(r.writes_checkpoints());
  CHECK_FALSE(r.in_memory_only());
  r.attach(&store, false, true);
  CHECK_FALSE(r.writes_ops());
  CHECK(r.writes_checkpoints());  // into the store's memory only
  CHECK(r.in_memory_only());
  r.attach(&store, false, false);
  REQUIRE(r.writes_ops());

  const std::vector<uint8_t> bytes{1, 2, 3, 4, 5};
  const checkpoint::PageHash h = r.add_blob_op(checkpoint::HostOpKind::Copy, 0x1000, bytes);
  checkpoint::HostOpRecord free_op;
  free_op.kind = checkpoint::HostOpKind::Free;
  free_op.addr = 0x1000;
  r.add_op(free_op);
  CHECK(r.queued_ops() == 2);
  REQUIRE(r.queued_blob(h));
  CHECK(r.queued_blob(h)->bytes == bytes);
  REQUIRE(r.flush());
  CHECK(r.queued_ops() == 0);
  CHECK(r.queued_blob(h) == nullptr);
  auto ops = store.ops();
  REQUIRE(ops);
  REQUIRE(ops->size() == 2);
  CHECK((*ops)[0].data.hash == h);
  CHECK((*ops)[1].kind == checkpoint::HostOpKind::Free);
  CHECK(store.read_page(h).value() == bytes);
}

TEST_CASE("Timeline samples past the pending limit: a recording queues them as an operation, a replay stops sampling") {
  TempDir dir;
  auto store = new_store(dir);
  // Samples of many short launches with no checkpoint between them: 8, 16, 32, 64 and the end each.
  auto sample_launches = [](Recorder& r, uint32_t launches) {
    for (uint32_t l = 1; l <= launches; ++l) {
      for (uint64_t at = 0; at < 100;) {
        if (r.sample_due(l, at)) r.add_sample(checkpoint::TimelineSample{l, at, {checkpoint::WarpSample{}}, {}});
        const uint64_t step = r.until_sample(l, at);
        // A run stops for a sample only where one is taken: never one instruction at a time.
        REQUIRE((step == UINT64_MAX || at + step == r.next_sample(l)));
        at = step == UINT64_MAX ? 100 : at + step;
      }
      r.add_sample(checkpoint::TimelineSample{l, 100, {}, {}});
    }
  };
  Recorder rec;
  rec.attach(&store, false, false);
  rec.set_sample_interval(16384);
  sample_launches(rec, 1000);      // 6000 samples
  REQUIRE(rec.queued_ops() == 1);  // the first 4096, queued
  REQUIRE(rec.queue_timeline_op());
  REQUIRE(rec.flush());
  auto ops = store.ops();
  REQUIRE(ops);
  REQUIRE(ops->size() == 2);
  size_t total = 0;
  for (const auto& op : *ops) {
    REQUIRE(op.kind == checkpoint::HostOpKind::Timeline);
    auto samples = checkpoint::decode_timeline(store.read_page(op.data.hash).value());
    REQUIRE(samples);
    total += samples->size();
  }
  CHECK(total == 5000);

  Recorder replay;
  replay.attach(&store, true, false);
  replay.set_sample_interval(16384);
  sample_launches(replay, 1000);
  CHECK(replay.queued_ops() == 0);
  CHECK_FALSE(replay.sample_due(1001, 8));
  CHECK(replay.until_sample(1001, 0) == UINT64_MAX);
}

TEST_CASE(
    "A checkpoint the store refused gives its pages again with the next one, and a stored page is not given twice") {
  TempDir ro_dir, dir;
  (void)new_store(ro_dir);
  checkpoint::Store ro = new_store(ro_dir, checkpoint::OpenMode::ReadOnly);
  checkpoint::Store store = new_store(dir);
  const checkpoint::ConfigRecord& cfg = kShape;

  Recorder r;
  r.attach(&ro, false, false);
  auto p = r.note_page(7, page_of(0xab));
  REQUIRE(p);
  auto s1 = checkpoint::testing::make_sample(cfg, {1, 100}, 5, 0);
  std::vector<checkpoint::PageData> pages1 = s1.pages;
  pages1.push_back(*p);
  checkpoint::StopRecord stop;  // a stop the user saw: durable, which a read-only store refuses
  auto refused = r.put({1, 100}, s1.rec, pages1, &stop);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.rfind("could not save the checkpoint (launch 1, instret 100): ", 0) == 0);
  r.failed(refused.error());
  CHECK(r.error() == refused.error().message);

  // The next checkpoint names page 7 unchanged (not written since, so not handed over): the store
  // never got it, so the recorder gives it again.
  r.attach(&store, false, false);
  auto s2 = checkpoint::testing::make_sample(cfg, {1, 200}, 5, 0);
  REQUIRE(r.put({1, 200}, s2.rec, s2.pages, nullptr));
  CHECK(store.read_page(p->hash).value() == page_of(0xab));
  auto back = store.get({1, 200});
  REQUIRE(back);
  REQUIRE(back->memory.size() == 1);
  CHECK(back->memory[0].number == 7);
  // Stored now: the same content is not handed over again.
  CHECK_FALSE(r.note_page(8, page_of(0xab)));
  r.forget_page(7);
  CHECK(r.pages().size() == 1);
  CHECK(r.pages().count(8));
}

namespace {

std::vector<uint8_t> launch_buffer(uint32_t reg, uint64_t value, uint32_t pc) {
  CommandBufferBuilder b;
  b.write_reg64(reg, value);
  LaunchGridArgs g;
  g.entry_pc = pc;
  g.start_pc = pc;
  g.grid = {2, 1, 1};
  g.block = {4, 1, 1};
  b.launch_grid(g);
  b.write_reg64(reg, value + 1);
  b.finish();
  return b.bytes();
}

}  // namespace

TEST_CASE("The workload plan cuts buffers into launches, keeps each launch's registers and rewinds to them") {
  auto pieces = WorkloadPlan::split(launch_buffer(5, 40, 0x80000000));
  REQUIRE(pieces);
  REQUIRE(pieces->size() == 2);
  CHECK((*pieces)[0].launches);
  CHECK_FALSE((*pieces)[1].launches);
  CHECK(WorkloadPlan::grid_args((*pieces)[0]).grid[0] == 2);
  CHECK(WorkloadPlan::grid_args((*pieces)[0]).block[0] == 4);

  WorkloadPlan plan;
  plan.insert_applied(PlanEntry{checkpoint::HostOpKind::Alloc, 0x10000, 4096, {}, {}});
  plan.add_region(0x10000, 4096);
  CHECK(plan.queue(std::move(*pieces)) == 1);
  CHECK(plan.size() == 3);
  uint32_t launch = 0;
  while (PlanEntry* e = plan.next()) {
    CHECK(plan.first_time());
    plan.note_registers(e->seg);
    const size_t index = plan.advance();
    if (e->seg.launches) plan.note_launch(++launch, index, WorkloadPlan::grid_args(e->seg));
  }
  REQUIRE(plan.launches() == 1);
  CHECK(plan.launch(1).entry == 1);
  CHECK(plan.launch(1).registers.at(5) == 40);
  CHECK(plan.registers().at(5) == 41);
  CHECK(plan.grids().size() == 1);
  CHECK(plan.images().empty());  // not a recording's plan
  CHECK(plan.at_frontier("submit"));

  plan.rewind_to(1);
  CHECK(plan.cursor() == 2);
  CHECK(plan.registers().at(5) == 40);
  CHECK_FALSE(plan.first_time());
  auto back = plan.at_frontier("mem_alloc");
  REQUIRE_FALSE(back);
  CHECK(back.error().message.rfind("mem_alloc: the session is back in time", 0) == 0);

  const DeviceConfig cfg;
  CHECK(plan.in_regions(0x10000 / checkpoint::kPageSize, cfg));
  CHECK_FALSE(plan.in_regions(0x20000 / checkpoint::kPageSize, cfg));
  plan.remove_region(0x10000);
  CHECK_FALSE(plan.in_regions(0x10000 / checkpoint::kPageSize, cfg));
}

TEST_CASE("The workload plan drops recorded data once, and again after a move back read it") {
  WorkloadPlan plan;
  const checkpoint::PageHash h = checkpoint::hash_page(std::vector<uint8_t>{1});
  for (int i = 0; i < 3; ++i) {
    PlanEntry e{checkpoint::HostOpKind::Copy, uint32_t(0x10000 + 64 * i), 64, std::vector<uint8_t>(64, 7), {}, {h}};
    plan.insert_applied(std::move(e));
  }
  CHECK(plan.entry(1).resident);
  plan.drop_recorded();
  for (size_t i = 0; i < 3; ++i) {
    CHECK_FALSE(plan.entry(i).resident);
    CHECK(plan.entry(i).data.empty());
  }
  // A move back brings entry 1's data back (make_resident); the next drop takes it again.
  auto& again = const_cast<PlanEntry&>(plan.entry(1));
  again.data.assign(64, 7);
  again.resident = true;
  plan.made_resident(again);
  plan.drop_recorded();
  CHECK_FALSE(plan.entry(1).resident);
  CHECK(plan.entry(1).data.empty());
  // An entry without recorded data keeps it.
  plan.insert_applied(PlanEntry{checkpoint::HostOpKind::Copy, 0x20000, 64, std::vector<uint8_t>(64, 1), {}, {}});
  plan.drop_recorded();
  CHECK(plan.entry(3).resident);
}

TEST_CASE("The workload plan drops queued pieces the host gave up, and refuses launches it cannot debug") {
  WorkloadPlan plan;
  auto pieces = WorkloadPlan::split(launch_buffer(1, 1, 0x80000000));
  REQUIRE(pieces);
  plan.queue(std::move(*pieces));
  plan.drop_pending();
  CHECK(plan.size() == 0);

  CommandBufferBuilder b;
  b.run_instances(0, 4, {0x80000000});
  b.finish();
  auto refused = WorkloadPlan::split(b.bytes());
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("is not supported under the debugger yet") != std::string::npos);
}

TEST_CASE("A recording's plan: its launches, their registers and the images recorded before each") {
  TempDir dir;
  auto store = new_store(dir);
  Recorder r;
  r.attach(&store, false, false);
  r.add_blob_op(checkpoint::HostOpKind::Symbols, 0, std::vector<uint8_t>{0x7f, 'E', 'L', 'F'}, "k.elf");
  const auto buf = launch_buffer(5, 7, 0x80000000);
  auto pieces = WorkloadPlan::split(buf);
  INFO((pieces ? std::string() : pieces.error().message));
  REQUIRE(pieces);
  for (const Segment& s : *pieces) r.add_blob_op(checkpoint::HostOpKind::Submit, 0, encode(s.commands));
  checkpoint::HostOpRecord end;
  end.kind = checkpoint::HostOpKind::HostEnd;
  r.add_op(end);
  REQUIRE(r.flush());

  WorkloadPlan plan;
  auto ops = store.ops();
  REQUIRE(ops);
  REQUIRE(plan.load(*ops, [&](const checkpoint::PageHash& h) { return store.read_page(h); }));
  CHECK(plan.host_done());
  CHECK(plan.size() == 2);
  REQUIRE(plan.launches() == 1);
  CHECK(plan.launch(1).registers.at(5) == 7);
  CHECK(plan.images() == std::vector<size_t>{1});
  CHECK(plan.unapplied_before(1).empty());
  CHECK(plan.next() != nullptr);
  CHECK_FALSE(plan.next()->resident);  // read from the store when it is applied
}
