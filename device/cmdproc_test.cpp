#include "device/cmdproc.hpp"

#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "device/cmdbuf_builder.hpp"
#include "device/machine.hpp"
#include "device/test_support.hpp"

using namespace vx;
using Status = CommandProcessor::Status;

namespace {

constexpr uint32_t kData = 0x20000;  // 64 KiB mapped by every fixture
constexpr uint32_t kDataSize = 0x10000;
constexpr uint32_t kCode = 0x80000000;
constexpr uint32_t kUnmapped = 0x50000000;

DeviceConfig two_cores() {
  DeviceConfig cfg;
  cfg.cores_per_cluster = 2;
  return cfg;
}

// A machine with data and code memory, and the command processor on it.
struct Fixture {
  Machine m;
  CommandProcessor cp;
  CommandList list;
  size_t next = 0;

  explicit Fixture(const DeviceConfig& cfg = {}) : m(cfg, RunOptions{}), cp(m) {
    m.memory().map(kData, kDataSize);
    m.memory().map(kCode, 0x1000);
  }

  // What the driver does on submit: decode and validate the whole buffer, then
  // execute until a launch starts, FINISH, or an error.
  Status submit(const CommandBufferBuilder& b, std::string* error) {
    Result<CommandList> decoded = decode_command_buffer(b.bytes());
    if (!decoded) {
      *error = decoded.error().message;
      return Status::Error;
    }
    Result<void> valid = validate_command_list(*decoded, m.memory(), m.config());
    if (!valid) {
      *error = valid.error().message;
      return Status::Error;
    }
    list = std::move(*decoded);
    next = 0;
    return cp.advance(list, &next, error);
  }
  Status resume(std::string* error) { return cp.advance(list, &next, error); }
  // Submits a buffer that must run to FINISH without a launch.
  void run_to_finish(const CommandBufferBuilder& b) {
    std::string error;
    Status s = submit(b, &error);
    INFO(error);
    REQUIRE(s == Status::Finished);
  }

  uint64_t read64(uint32_t addr) {
    uint64_t v = 0;
    REQUIRE(m.memory().read(addr, &v, 8));
    return v;
  }
  void write64(uint32_t addr, uint64_t v) { REQUIRE(m.memory().write(addr, &v, 8)); }
  std::vector<uint8_t> data_snapshot() {
    std::vector<uint8_t> bytes(kDataSize);
    REQUIRE(m.memory().read(kData, bytes.data(), bytes.size()));
    return bytes;
  }
};

// A valid prefix that changes memory, a register and a window if it ever runs:
// rejected buffers start with it to show that nothing executed. It ends at byte 48.
CommandBufferBuilder with_prefix() {
  CommandBufferBuilder b;
  b.store_imm64(kData, 0x1111222233334444ull)
      .write_reg64(kCmpScratch, 5)
      .write_reg64(kCmpWindowMode0, cmp_window_mode(true, WindowMode::Shared, kWindowRead, 0x1000));
  return b;
}
constexpr const char* kAfterPrefix = "chunk 6 (byte offset 48): ";

// Submits a buffer that decoding or validation must reject; checks that the
// device is unchanged and returns the message.
std::string rejected(Fixture& f, const CommandBufferBuilder& b) {
  const std::vector<uint8_t> mem_before = f.data_snapshot();
  const auto regs_before = f.cp.registers();
  const auto windows_before = f.m.windows();
  std::string error;
  CHECK(f.submit(b, &error) == Status::Error);
  CHECK(f.data_snapshot() == mem_before);
  CHECK(f.cp.registers() == regs_before);
  CHECK(f.m.windows() == windows_before);
  CHECK_FALSE(f.m.launch_active());
  return error;
}

std::string rejected(const CommandBufferBuilder& b, const DeviceConfig& cfg = {}) {
  Fixture f(cfg);
  return rejected(f, b);
}

uint64_t header(uint32_t opcode, uint32_t count, uint32_t inline_value, uint32_t id = 3, uint32_t reserved = 0) {
  return (uint64_t(inline_value) << 32) | (uint64_t(id) << 30) | (uint64_t(count) << 16) | (opcode << 8) | reserved;
}

// A valid value for every register, different for each.
uint64_t sample_value(uint32_t reg) {
  switch (reg) {
    case kCmpScratch: return 0xdeadbeefcafef00dull;
    case kCmpEntryPtFn: return kCode + 0x40;
    case kCmpKubDesc: return cmp_kub_desc(kData, 4);
    case kCmpKargsInfo: return cmp_kub_range(0x10, 0x20);
    case kCmpTsdInfo: return cmp_kub_range(0x40, 0x18);
    case kCmpStackTop: return 0xfffe0000;
    case kCmpReturnAddr: return kCode + 0x100;
    default: break;
  }
  const uint32_t n = reg % kCmpNumWindows;
  if (reg < kCmpWindowTarget0) return 0x40000000 + n * 0x10000;
  if (reg < kCmpWindowMode0) return kData + n * 0x100;
  // STRIDE (bits 12..8) is accepted and ignored without INTERLEAVE.
  if (reg < kCmpWindowScale0) return cmp_window_mode(n % 2 == 0, WindowMode(n % 3), n % 8, 0x100 + n) | (5u << 8);
  return cmp_window_scale(n, n + 1);
}

}  // namespace

// --- Decoding --------------------------------------------------------------------

TEST_CASE("the builder's packets decode to the commands, offsets, inline values and payloads they encode") {
  CommandBufferBuilder b;
  LaunchGridArgs g{kCode, kCode + 0x80, kData, {4, 2, 1}, {8, 1, 1}, 256, {2, 1, 1}};
  b.write_reg64(kCmpStackTop, 0xfffe0000)
      .load_reg64(kCmpScratch, kData)
      .store_reg64(kCmpReturnAddr, kData + 8)
      .store_imm64(kData + 16, 42)
      .copy_mem64(3, kData, kData + 64, 2)
      .run_kernel_slice(7, 100, 9)
      .run_instances(5, 12, {10, 20, 30})
      .sync_cache(kCmpSyncICache)
      .launch_grid(g)
      .finish();
  Result<CommandList> r = decode_command_buffer(b.bytes());
  INFO((r ? "" : r.error().message));
  REQUIRE(r.ok());
  const std::vector<Command> want = {
      {CmdOp::WriteReg64, 0, kCmpStackTop, {0xfffe0000}},
      {CmdOp::LoadReg64, 16, kCmpScratch, {kData}},
      {CmdOp::StoreReg64, 32, kCmpReturnAddr, {kData + 8}},
      {CmdOp::StoreImm64, 48, kData + 16, {42}},
      {CmdOp::CopyMem64, 64, 3, {kData, kData + 64, 2}},
      {CmdOp::RunKernelSlice, 96, 7, {100, 9}},
      {CmdOp::RunInstances, 120, (3u << 8) | 5, {12, 10, 20, 30}},
      {CmdOp::SyncCache, 160, kCmpSyncICache, {}},
      {CmdOp::LaunchGrid,
       168,
       kCode + 0x80,
       {(uint64_t(kData) << 32) | kCode, (2ull << 32) | 4, (8ull << 32) | 1, 1ull | (1ull << 32), (2ull << 32) | 256,
        1ull | (1ull << 32)}},
      {CmdOp::Finish, 224, 0, {}},
  };
  CHECK(r->commands == want);
  CHECK(b.bytes().size() == 232);
}

TEST_CASE("packet headers are little-endian with packet id 3, the opcode in bits 15..8 and COUNT = 2 x payload") {
  CommandBufferBuilder b;
  b.copy_mem64(0x01020304, 0, 0);
  const std::vector<uint8_t> head(b.bytes().begin(), b.bytes().begin() + 8);
  // COUNT 6 in bits 29..16, id 3 in bits 31..30: 0xc0060600; inline 0x01020304 above it.
  CHECK(head == std::vector<uint8_t>{0x00, 0x06, 0x06, 0xc0, 0x04, 0x03, 0x02, 0x01});
}

// --- Registers -------------------------------------------------------------------

TEST_CASE("WRITE_REG64 sets every CMP register and STORE_REG64 writes it back little-endian") {
  Fixture f;
  CommandBufferBuilder b;
  for (uint32_t reg = 0; reg < kCmpNumRegs; ++reg)
    if (cmp_reg_exists(reg)) b.write_reg64(reg, sample_value(reg));
  for (uint32_t reg = 0; reg < kCmpNumRegs; ++reg)
    if (cmp_reg_exists(reg)) b.store_reg64(reg, kData + 8 * reg);
  b.finish();
  f.run_to_finish(b);
  for (uint32_t reg = 0; reg < kCmpNumRegs; ++reg) {
    if (!cmp_reg_exists(reg)) continue;
    INFO(cmp_reg_name(reg));
    CHECK(f.cp.registers()[reg] == sample_value(reg));
    CHECK(f.read64(kData + 8 * reg) == sample_value(reg));
  }
  CHECK(f.cp.registers()[7] == 0);
  uint8_t first[8];
  REQUIRE(f.m.memory().read(kData, first, 8));
  CHECK(first[0] == 0x0d);
  CHECK(first[7] == 0xde);
}

TEST_CASE("window register writes reach the machine's windows field by field") {
  Fixture f;
  CommandBufferBuilder b;
  for (uint32_t reg = kCmpWindowBase0; reg < kCmpNumRegs; ++reg) b.write_reg64(reg, sample_value(reg));
  b.finish();
  f.run_to_finish(b);
  for (uint32_t n = 0; n < kCmpNumWindows; ++n) {
    INFO("window " << n);
    const MemWindow& w = f.m.windows()[n];
    CHECK(w.base == sample_value(kCmpWindowBase0 + n));
    CHECK(w.target == sample_value(kCmpWindowTarget0 + n));
    CHECK(w.mode_reg == sample_value(kCmpWindowMode0 + n));
    CHECK(w.scale_reg == sample_value(kCmpWindowScale0 + n));
  }
}

TEST_CASE("LOAD_REG64 loads a register from memory") {
  Fixture f;
  f.write64(kData + 0x100, 0x0123456789abcdefull);
  f.write64(kData + 0x108, kCode + 0x20);
  CommandBufferBuilder b;
  b.load_reg64(kCmpScratch, kData + 0x100).load_reg64(kCmpEntryPtFn, kData + 0x108).finish();
  f.run_to_finish(b);
  CHECK(f.cp.registers()[kCmpScratch] == 0x0123456789abcdefull);
  CHECK(f.cp.registers()[kCmpEntryPtFn] == kCode + 0x20);
}

TEST_CASE("LOAD_REG64 of a value with reserved bits is an execution error that leaves the register unchanged") {
  Fixture f;
  f.write64(kData, 0x180000000ull);
  CommandBufferBuilder b;
  b.write_reg64(kCmpEntryPtFn, kCode).load_reg64(kCmpEntryPtFn, kData).finish();
  std::string error;
  CHECK(f.submit(b, &error) == Status::Error);
  CHECK(error ==
        "chunk 2 (byte offset 16): LOAD_REG64 from 0x20000 loads CMP_ENTRY_PT_FN value 0x180000000: "
        "bits 63..32 are reserved");
  CHECK(f.next == 1);
  CHECK(f.cp.registers()[kCmpEntryPtFn] == kCode);
}

TEST_CASE("set_registers restores every register and re-derives the machine's windows") {
  Fixture f;
  std::array<uint64_t, kCmpNumRegs> regs{};
  for (uint32_t reg = 0; reg < kCmpNumRegs; ++reg)
    if (cmp_reg_exists(reg)) regs[reg] = sample_value(reg);
  f.cp.set_registers(regs);
  CHECK(f.cp.registers() == regs);
  for (uint32_t n = 0; n < kCmpNumWindows; ++n) {
    CHECK(f.m.windows()[n].base == regs[kCmpWindowBase0 + n]);
    CHECK(f.m.windows()[n].mode_reg == regs[kCmpWindowMode0 + n]);
  }
  // A processor built later on the same machine reads the windows back.
  CommandProcessor again(f.m);
  for (uint32_t reg = kCmpWindowBase0; reg < kCmpNumRegs; ++reg) CHECK(again.registers()[reg] == regs[reg]);
  CHECK(again.registers()[kCmpScratch] == 0);
}

// --- Data movement ---------------------------------------------------------------

TEST_CASE("STORE_IMM64 writes 8 bytes at its 32-bit inline address") {
  Fixture f;
  CommandBufferBuilder b;
  b.store_imm64(kData + 0x24, 0xa1a2a3a4a5a6a7a8ull).finish();
  f.run_to_finish(b);
  CHECK(f.read64(kData + 0x24) == 0xa1a2a3a4a5a6a7a8ull);
  CHECK(f.read64(kData + 0x1c) == 0);
}

TEST_CASE("COPY_MEM64 copies COUNT elements") {
  Fixture f;
  for (uint32_t i = 0; i < 4; ++i) f.write64(kData + 8 * i, 100 + i);
  CommandBufferBuilder b;
  b.copy_mem64(3, kData, kData + 0x1000).finish();
  f.run_to_finish(b);
  CHECK(f.read64(kData + 0x1000) == 100);
  CHECK(f.read64(kData + 0x1008) == 101);
  CHECK(f.read64(kData + 0x1010) == 102);
  CHECK(f.read64(kData + 0x1018) == 0);
}

TEST_CASE("COPY_MEM64 copies one element at a time in ascending order, so an overlapping copy repeats the first") {
  Fixture f;
  for (uint32_t i = 0; i < 4; ++i) f.write64(kData + 8 * i, 7 + i);
  CommandBufferBuilder b;
  b.copy_mem64(3, kData, kData + 8).finish();
  f.run_to_finish(b);
  for (uint32_t i = 0; i < 4; ++i) CHECK(f.read64(kData + 8 * i) == 7);
}

TEST_CASE("COPY_MEM64 with COUNT 0 copies nothing and needs no mapped memory") {
  Fixture f;
  const auto before = f.data_snapshot();
  CommandBufferBuilder b;
  b.copy_mem64(0, kUnmapped, kUnmapped).finish();
  f.run_to_finish(b);
  CHECK(f.data_snapshot() == before);
}

TEST_CASE("the command processor's own accesses are physical even where an active window covers the address") {
  Fixture f;
  CommandBufferBuilder b;
  b.write_reg64(kCmpWindowBase0, kData)
      .write_reg64(kCmpWindowTarget0, kData + 0x8000)
      .write_reg64(kCmpWindowMode0, cmp_window_mode(true, WindowMode::Shared, kWindowRead | kWindowWrite, 0x100))
      .store_imm64(kData, 77)
      .load_reg64(kCmpScratch, kData)
      .finish();
  f.run_to_finish(b);
  CHECK(f.read64(kData) == 77);
  CHECK(f.read64(kData + 0x8000) == 0);
  CHECK(f.cp.registers()[kCmpScratch] == 77);
  uint32_t a = kData;
  REQUIRE(f.m.translate_for_hart(0, &a, 8, 1));
  CHECK(a == kData + 0x8000);
}

// --- Windows ---------------------------------------------------------------------

namespace {

constexpr uint32_t kWinBase = 0x40000000;

CommandBufferBuilder window(uint32_t n, uint64_t target, WindowMode mode, uint32_t perms, uint64_t size,
                            uint64_t scale) {
  CommandBufferBuilder b;
  b.write_reg64(kCmpWindowBase0 + n, kWinBase)
      .write_reg64(kCmpWindowTarget0 + n, target)
      .write_reg64(kCmpWindowScale0 + n, scale)
      .write_reg64(kCmpWindowMode0 + n, cmp_window_mode(true, mode, perms, size))
      .finish();
  return b;
}

uint32_t seen_by(const Machine& m, uint32_t hart, uint32_t addr) {
  uint32_t a = addr;
  REQUIRE(m.translate_for_hart(hart, &a, 8, 1));
  return a;
}

}  // namespace

TEST_CASE("a SHARED window maps base + offset to target + offset for every hart") {
  Fixture f;
  f.run_to_finish(window(1, kData + 0x400, WindowMode::Shared, kWindowRead, 0x1000, cmp_window_scale(4, 3)));
  for (uint32_t hart : {0u, 7u, 15u}) CHECK(seen_by(f.m, hart, kWinBase + 0x10) == kData + 0x410);
  // Outside the window an address is untranslated.
  CHECK(seen_by(f.m, 3, kWinBase + 0x1000) == kWinBase + 0x1000);
  f.write64(kData + 0x410, 0x5151);
  CommandBufferBuilder b;
  b.copy_mem64(1, kWinBase + 0x10, kData + 0x2000, 16).finish();  // UNIT 16: hart 15
  f.run_to_finish(b);
  CHECK(f.read64(kData + 0x2000) == 0x5151);
}

TEST_CASE("a PER_HART window adds SCALE_A x SCALE_B x hart id; COPY_MEM64 with a UNIT reads through it") {
  Fixture f;
  // SCALE_A 4 means 2^4, SCALE_B 3: scale 48.
  f.run_to_finish(window(2, kData, WindowMode::PerHart, kWindowRead | kWindowWrite, 0x1000, cmp_window_scale(4, 3)));
  CHECK(seen_by(f.m, 0, kWinBase + 0x10) == kData + 0x10);
  CHECK(seen_by(f.m, 5, kWinBase + 0x10) == kData + 5 * 48 + 0x10);
  f.write64(kData + 5 * 48 + 0x10, 0xabc);
  f.write64(kData + 0x10, 0xdef);
  CommandBufferBuilder b;
  b.copy_mem64(1, kWinBase + 0x10, kData + 0x3000, 6)     // hart 5
      .copy_mem64(1, kWinBase + 0x10, kData + 0x3008, 1)  // hart 0
      .finish();
  f.run_to_finish(b);
  CHECK(f.read64(kData + 0x3000) == 0xabc);
  CHECK(f.read64(kData + 0x3008) == 0xdef);
}

TEST_CASE("a PER_CORE window adds SCALE_A x SCALE_B x core id") {
  Fixture f(two_cores());
  // SCALE_A 8 (256) x SCALE_B 2: 512 bytes per core; harts 16..31 are core 1.
  f.run_to_finish(window(0, kData, WindowMode::PerCore, kWindowRead, 0x200, cmp_window_scale(8, 2)));
  CHECK(seen_by(f.m, 3, kWinBase + 8) == kData + 8);
  CHECK(seen_by(f.m, 15, kWinBase + 8) == kData + 8);
  CHECK(seen_by(f.m, 16, kWinBase + 8) == kData + 512 + 8);
  CHECK(seen_by(f.m, 31, kWinBase + 8) == kData + 512 + 8);
  f.write64(kData + 512 + 8, 0x77);
  CommandBufferBuilder b;
  b.copy_mem64(1, kWinBase + 8, kData + 0x4000, 18).finish();  // hart 17, core 1
  f.run_to_finish(b);
  CHECK(f.read64(kData + 0x4000) == 0x77);
}

TEST_CASE("SCALE_A 0 makes the scale 0, and SCALE_B 0 stands for 2^32") {
  Fixture f;
  f.run_to_finish(window(3, kData, WindowMode::PerHart, kWindowRead, 0x100, cmp_window_scale(0, 5)));
  CHECK(seen_by(f.m, 9, kWinBase) == kData);
  // 2^1 x 2^32: hart 1 lands beyond 32 bits and is denied; hart 0 is not.
  f.run_to_finish(window(3, kData, WindowMode::PerHart, kWindowRead, 0x100, cmp_window_scale(1, 0)));
  CHECK(seen_by(f.m, 0, kWinBase) == kData);
  uint32_t a = kWinBase;
  CHECK_FALSE(f.m.translate_for_hart(1, &a, 8, 1));
}

TEST_CASE("a window without read permission denies hart reads, and COPY_MEM64 through it copies nothing") {
  Fixture f;
  f.run_to_finish(window(4, kData, WindowMode::Shared, kWindowWrite, 0x100, 0));
  uint32_t a = kWinBase + 8;
  CHECK_FALSE(f.m.translate_for_hart(0, &a, 8, 1));
  a = kWinBase + 8;
  CHECK(f.m.translate_for_hart(0, &a, 8, 2));
  CHECK(a == kData + 8);
  // Element 0 reads through a readable window just below; element 1 hits the write-only one.
  f.write64(kData + 0x5000, 1);
  f.run_to_finish(window(5, kData + 0x5000, WindowMode::Shared, kWindowRead, 0x8, 0));
  CommandBufferBuilder b;
  b.write_reg64(kCmpWindowBase0 + 5, kWinBase - 8).copy_mem64(2, kWinBase - 8, kData + 0x6000, 1).finish();
  std::string error;
  CHECK(f.submit(b, &error) == Status::Error);
  CHECK(error ==
        "chunk 2 (byte offset 16): COPY_MEM64 element 1: hart 0 cannot read 0x40000000 (a window denies "
        "reading or maps it past 32 bits)");
  CHECK(f.next == 1);
  CHECK(f.read64(kData + 0x6000) == 0);
}

TEST_CASE("a hart view through an inactive window is the physical address") {
  Fixture f;
  CommandBufferBuilder b;
  b.write_reg64(kCmpWindowBase0, kWinBase)
      .write_reg64(kCmpWindowTarget0, kData)
      .write_reg64(kCmpWindowMode0, cmp_window_mode(false, WindowMode::Shared, kWindowRead, 0x100))
      .finish();
  f.run_to_finish(b);
  CHECK(seen_by(f.m, 0, kWinBase) == kWinBase);
}

TEST_CASE("COPY_MEM64 with a UNIT reads that hart's core local memory at 0xFFFF0000") {
  Fixture f(two_cores());
  const uint64_t v = 0x1122334455667788ull;
  std::memcpy(f.m.core(1).local_mem.data() + 16, &v, 8);
  CommandBufferBuilder b;
  b.copy_mem64(1, memmap::kLocalMemBase + 16, kData, 17)        // hart 16: core 1
      .copy_mem64(1, memmap::kLocalMemBase + 16, kData + 8, 1)  // hart 0: core 0
      .finish();
  f.run_to_finish(b);
  CHECK(f.read64(kData) == v);
  CHECK(f.read64(kData + 8) == 0);
}

// --- Launches --------------------------------------------------------------------

TEST_CASE("RUN_INSTANCES starts an instances launch carrying the registers, MAX_HARTS and the arguments") {
  Fixture f;
  CommandBufferBuilder b;
  b.write_reg64(kCmpEntryPtFn, kCode)
      .write_reg64(kCmpStackTop, 0xfffe0000)
      .write_reg64(kCmpReturnAddr, kCode + 0x40)
      .run_instances(6, 11, {0x100, 0x200, 0x300})
      .finish();
  std::string error;
  REQUIRE(f.submit(b, &error) == Status::LaunchStarted);
  CHECK(f.next == 4);
  const LaunchState& l = f.m.launch();
  CHECK(l.kind == LaunchKind::Instances);
  CHECK(l.start_pc == kCode);
  CHECK(l.stack_top == 0xfffe0000);
  CHECK(l.return_addr == kCode + 0x40);
  CHECK(l.max_harts == 6);
  CHECK(l.num_args == 3);
  CHECK(l.args == std::array<uint32_t, 7>{0x100, 0x200, 0x300, 0, 0, 0, 0});
  CHECK(l.total_units == 11);
}

TEST_CASE("a buffer runs its launch to the end and then executes the commands after it") {
  Fixture f;
  const uint32_t tmc_zero = test::vxi::tmc(test::zero);
  REQUIRE(f.m.memory().write(kCode, &tmc_zero, 4));
  CommandBufferBuilder b;
  b.write_reg64(kCmpEntryPtFn, kCode)
      .write_reg64(kCmpStackTop, 0xfffe0000)
      .write_reg64(kCmpReturnAddr, kCode + 0x40)
      .run_instances(0, 6, {0x1000, 0x2000})
      .store_imm64(kData, 99)
      .finish();
  std::string error;
  REQUIRE(f.submit(b, &error) == Status::LaunchStarted);
  // A zero budget dispatches without executing: the lanes show what the launch passed.
  REQUIRE(f.m.run(0).stop == RunStop::Budget);
  const uint32_t nt = f.m.config().threads;
  const WarpState& w0 = f.m.core(0).warps[0];
  const WarpState& w1 = f.m.core(0).warps[1];
  CHECK(w0.tmask == 0xf);
  CHECK(w1.tmask == 0x3);
  for (uint32_t lane = 0; lane < 4; ++lane) {
    CHECK(w0.x[test::a0 * nt + lane] == lane);
    CHECK(w0.x[test::a1 * nt + lane] == 0x1000);
    CHECK(w0.x[test::a2 * nt + lane] == 0x2000);
    CHECK(w0.x[test::sp * nt + lane] == 0xfffe0000);
    CHECK(w0.x[test::ra * nt + lane] == kCode + 0x40);
  }
  CHECK(w1.x[test::a0 * nt + 1] == 5);
  CHECK(f.read64(kData) == 0);  // the command after the launch waits for it
  REQUIRE(f.m.run(1000).stop == RunStop::LaunchDone);
  CHECK(f.m.stats().units_dispatched == 6);
  REQUIRE(f.resume(&error) == Status::Finished);
  CHECK(f.read64(kData) == 99);
}

TEST_CASE("RUN_KERNEL_SLICE passes packed_args = KUB_ADDR + KARGS_OFFSET and copies the TSD into each hart's KTB") {
  Fixture f;
  const uint32_t kub = kData + 0x1000;
  f.write64(kub + 0x40, 0x0807060504030201ull);
  f.write64(kub + 0x48, 0x1817161514131211ull);
  CommandBufferBuilder b;
  b.write_reg64(kCmpEntryPtFn, kCode)
      .write_reg64(kCmpKubDesc, cmp_kub_desc(kub, 1))  // 256 bytes
      .write_reg64(kCmpKargsInfo, cmp_kub_range(0x20, 0x10))
      .write_reg64(kCmpTsdInfo, cmp_kub_range(0x40, 0x10))
      .run_kernel_slice(0, 5, 3)
      .finish();
  std::string error;
  const Status s = f.submit(b, &error);
  INFO(error);
  REQUIRE(s == Status::LaunchStarted);
  const LaunchState& l = f.m.launch();
  CHECK(l.kind == LaunchKind::Slice);
  CHECK(l.start_pc == kCode);
  CHECK(l.slice_id == 3);
  CHECK(l.total_units == 5);
  CHECK(l.packed_args == kub + 0x20);
  CHECK(l.tsd_src == kub + 0x40);
  CHECK(l.tsd_size == 0x10);
  REQUIRE(f.m.run(0).stop == RunStop::Budget);
  const uint32_t nt = f.m.config().threads;
  const WarpState& w0 = f.m.core(0).warps[0];
  CHECK(w0.x[test::a1 * nt + 2] == 3);
  CHECK(w0.x[test::a2 * nt + 2] == kub + 0x20);
  const uint32_t ktb2 = w0.x[test::a3 * nt + 2];
  CHECK(ktb2 >= memmap::kKtbBase);
  CHECK(f.read64(ktb2) == 0x0807060504030201ull);
  CHECK(f.read64(ktb2 + 8) == 0x1817161514131211ull);
}

TEST_CASE("RUN_KERNEL_SLICE passes the invalid address 0 when KUB_SIZE, KARGS_SIZE or TSD_SIZE is 0") {
  struct Case {
    uint64_t kub, kargs, tsd;
    uint32_t packed_args, tsd_size;
  };
  const uint32_t kub = kData + 0x1000;
  const Case cases[] = {
      {cmp_kub_desc(kub, 0), cmp_kub_range(0, 8), cmp_kub_range(8, 8), 0, 0},
      {cmp_kub_desc(kub, 1), cmp_kub_range(0, 0), cmp_kub_range(8, 8), 0, 8},
      {cmp_kub_desc(kub, 1), cmp_kub_range(0, 8), cmp_kub_range(8, 0), kub, 0},
  };
  for (const Case& c : cases) {
    Fixture f;
    CommandBufferBuilder b;
    b.write_reg64(kCmpEntryPtFn, kCode)
        .write_reg64(kCmpKubDesc, c.kub)
        .write_reg64(kCmpKargsInfo, c.kargs)
        .write_reg64(kCmpTsdInfo, c.tsd)
        .run_kernel_slice(0, 1, 0)
        .finish();
    std::string error;
    REQUIRE(f.submit(b, &error) == Status::LaunchStarted);
    CHECK(f.m.launch().packed_args == c.packed_args);
    CHECK(f.m.launch().tsd_size == c.tsd_size);
  }
}

TEST_CASE("RUN_KERNEL_SLICE fails at execution when its arguments or TSD run past the KUB or are unmapped") {
  const uint32_t kub = kData + kDataSize - 0x100;  // the KUB's last byte is the last mapped byte
  struct Case {
    uint64_t kub, kargs, tsd;
    const char* error;
  };
  const Case cases[] = {
      {cmp_kub_desc(kub, 1), cmp_kub_range(0xf8, 0x10), 0,
       "chunk 8 (byte offset 64): RUN_KERNEL_SLICE: packed arguments at KUB offset 248 (16 bytes, CMP_KARGS_INFO) "
       "run past the KUB's 256 bytes (KUB_SIZE 1 x 256)"},
      {cmp_kub_desc(kub, 1), 0, cmp_kub_range(0x80, 0x81),
       "chunk 8 (byte offset 64): RUN_KERNEL_SLICE: thread-specific data at KUB offset 128 (129 bytes, CMP_TSD_INFO) "
       "run past the KUB's 256 bytes (KUB_SIZE 1 x 256)"},
      {cmp_kub_desc(kub, 2), cmp_kub_range(0x100, 8), 0,
       "chunk 8 (byte offset 64): RUN_KERNEL_SLICE: packed arguments at 0x30000 (8 bytes) are not all mapped"},
  };
  for (const Case& c : cases) {
    Fixture f;
    CommandBufferBuilder b;
    b.write_reg64(kCmpEntryPtFn, kCode)
        .write_reg64(kCmpKubDesc, c.kub)
        .write_reg64(kCmpKargsInfo, c.kargs)
        .write_reg64(kCmpTsdInfo, c.tsd)
        .run_kernel_slice(0, 1, 0)
        .finish();
    std::string error;
    CHECK(f.submit(b, &error) == Status::Error);
    CHECK(error == c.error);
    CHECK(f.next == 4);
    CHECK_FALSE(f.m.launch_active());
  }
}

TEST_CASE("a kernel command without an entry point is an execution error") {
  Fixture f;
  CommandBufferBuilder b;
  b.run_instances(0, 4, {}).finish();
  std::string error;
  CHECK(f.submit(b, &error) == Status::Error);
  CHECK(error == "chunk 0 (byte offset 0): RUN_INSTANCES with CMP_ENTRY_PT_FN 0: set the kernel entry point first");
  CommandBufferBuilder s;
  s.run_kernel_slice(0, 4, 0).finish();
  CHECK(f.submit(s, &error) == Status::Error);
  CHECK(error == "chunk 0 (byte offset 0): RUN_KERNEL_SLICE with CMP_ENTRY_PT_FN 0: set the kernel entry point first");
  CHECK_FALSE(f.m.launch_active());
}

TEST_CASE("LAUNCH_GRID starts a grid launch with every field of its inline chunk and six payload chunks") {
  Fixture f;
  CommandBufferBuilder b;
  b.launch_grid({kCode, kCode + 0x200, kData + 0x40, {4, 2, 6}, {2, 3, 2}, 1000, {2, 1, 3}}).finish();
  std::string error;
  const Status s = f.submit(b, &error);
  INFO(error);
  REQUIRE(s == Status::LaunchStarted);
  const LaunchState& l = f.m.launch();
  CHECK(l.kind == LaunchKind::Grid);
  CHECK(l.start_pc == kCode);
  CHECK(l.entry_pc == kCode + 0x200);
  CHECK(l.arg_ptr == kData + 0x40);
  CHECK(l.grid == std::array<uint32_t, 3>{4, 2, 6});
  CHECK(l.block == std::array<uint32_t, 3>{2, 3, 2});
  CHECK(l.cluster == std::array<uint32_t, 3>{2, 1, 3});
  CHECK(l.lmem_bytes == 1000);
  CHECK(l.total_units == 48);
  CHECK(l.warps_per_cta == 3);
}

TEST_CASE("a launch command while another launch is in flight fails and stays next until the device is free") {
  Fixture f;
  CommandBufferBuilder b;
  b.write_reg64(kCmpEntryPtFn, kCode).run_instances(0, 2, {}).run_instances(0, 3, {}).finish();
  std::string error;
  REQUIRE(f.submit(b, &error) == Status::LaunchStarted);
  CHECK(f.resume(&error) == Status::Error);
  CHECK(error == "chunk 4 (byte offset 32): RUN_INSTANCES cannot start: a launch is already in flight");
  CHECK(f.next == 2);
  f.m.abort_launch();
  REQUIRE(f.resume(&error) == Status::LaunchStarted);
  CHECK(f.m.launch().total_units == 3);
}

TEST_CASE("SYNC_CACHE with DCACHE, ICACHE or both changes nothing") {
  Fixture f;
  const auto before = f.data_snapshot();
  CommandBufferBuilder b;
  b.sync_cache(0).sync_cache(kCmpSyncDCache).sync_cache(kCmpSyncICache).sync_cache().finish();
  f.run_to_finish(b);
  CHECK(f.next == 5);
  CHECK(f.data_snapshot() == before);
  CHECK(f.cp.registers() == std::array<uint64_t, kCmpNumRegs>{});
}

// --- Malformed buffers: decoding ----------------------------------------------------

TEST_CASE("a buffer whose length is not a multiple of 8 is rejected at the incomplete chunk") {
  CommandBufferBuilder b = with_prefix();
  b.finish();
  std::vector<uint8_t> bytes = b.bytes();
  bytes.resize(bytes.size() + 5);
  Fixture f;
  CHECK_FALSE(decode_command_buffer(bytes).ok());
  CHECK(decode_command_buffer(bytes).error().message ==
        "chunk 7 (byte offset 56): incomplete chunk: the buffer is 61 bytes long, not a multiple of 8");
}

TEST_CASE("a header whose packet identifier is not 3 is rejected") {
  CommandBufferBuilder b = with_prefix();
  b.chunk(header(1, 0, 0, 2));
  CHECK(rejected(b) == std::string(kAfterPrefix) + "packet identifier is 2, expected 3 (header 0x80000100)");
}

TEST_CASE("a header with reserved bits 7..0 set is rejected") {
  CommandBufferBuilder b = with_prefix();
  b.chunk(header(1, 0, 0, 3, 0x20));
  CHECK(rejected(b) == std::string(kAfterPrefix) + "reserved header bits 7..0 are 0x20, expected 0");
}

TEST_CASE("opcodes 0 and 11..255 are unknown") {
  for (uint32_t op : {0u, 11u, 12u, 255u}) {
    CommandBufferBuilder b = with_prefix();
    b.chunk(header(op, 0, 0)).finish();
    CHECK(rejected(b) == std::string(kAfterPrefix) + "unknown opcode " + std::to_string(op));
  }
}

TEST_CASE("an odd COUNT is rejected") {
  CommandBufferBuilder b = with_prefix();
  b.chunk(header(2, 3, 0)).chunk(0).chunk(0).finish();
  CHECK(rejected(b) ==
        std::string(kAfterPrefix) + "WRITE_REG64 COUNT 3 is odd: it must be the number of payload chunks times two");
}

TEST_CASE("a COUNT other than the one the opcode requires is rejected") {
  struct Case {
    uint32_t op, count;
    const char* error;
  };
  const Case cases[] = {
      {1, 2, "FINISH takes 0 chunks of payload (COUNT 0) but COUNT is 2"},
      {2, 4, "WRITE_REG64 takes 1 chunk of payload (COUNT 2) but COUNT is 4"},
      {6, 4, "COPY_MEM64 takes 3 chunks of payload (COUNT 6) but COUNT is 4"},
      {7, 2, "RUN_KERNEL_SLICE takes 2 chunks of payload (COUNT 4) but COUNT is 2"},
      {9, 2, "SYNC_CACHE takes 0 chunks of payload (COUNT 0) but COUNT is 2"},
      {10, 10, "LAUNCH_GRID takes 6 chunks of payload (COUNT 12) but COUNT is 10"},
  };
  for (const Case& c : cases) {
    CommandBufferBuilder b = with_prefix();
    b.chunk(header(c.op, c.count, 0));
    for (uint32_t i = 0; i < c.count / 2; ++i) b.chunk(0);
    b.finish();
    CHECK(rejected(b) == std::string(kAfterPrefix) + c.error);
  }
}

TEST_CASE("a payload running past the end of the buffer is rejected") {
  CommandBufferBuilder b = with_prefix();
  b.chunk(header(6, 6, 1)).chunk(kData);
  CHECK(rejected(b) == std::string(kAfterPrefix) +
                           "COPY_MEM64 payload of 3 chunks runs past the end of the buffer (1 of them present)");
}

TEST_CASE("a buffer without FINISH is rejected at its end") {
  CommandBufferBuilder b = with_prefix();
  CHECK(rejected(b) == std::string(kAfterPrefix) + "the buffer ends without FINISH");
  CHECK(rejected(CommandBufferBuilder{}) == "chunk 0 (byte offset 0): the buffer ends without FINISH");
}

TEST_CASE("anything after FINISH is rejected, zero padding included") {
  CommandBufferBuilder b = with_prefix();
  b.finish().chunk(0);
  CHECK(rejected(b) == "chunk 7 (byte offset 56): data after FINISH (the FINISH at byte offset 48 ends the buffer)");
}

TEST_CASE("register indices 7 and 40 and above do not exist") {
  for (CmdOp op : {CmdOp::WriteReg64, CmdOp::LoadReg64, CmdOp::StoreReg64})
    for (uint32_t reg : {7u, 40u, 0xffffffffu}) {
      CommandBufferBuilder b = with_prefix();
      b.packet(op, reg, {kData}).finish();
      CHECK(rejected(b) == std::string(kAfterPrefix) + cmd_op_name(op) + " names register " + std::to_string(reg) +
                               ", which does not exist (valid: 0..6 and 8..39)");
    }
}

TEST_CASE("register values with reserved bits set or addresses beyond 32 bits are rejected") {
  struct Case {
    uint32_t reg;
    uint64_t value;
    const char* why;
  };
  const Case cases[] = {
      {kCmpEntryPtFn, 0x100000000ull, "CMP_ENTRY_PT_FN value 0x100000000: bits 63..32 are reserved"},
      {kCmpKubDesc, cmp_kub_desc(0, 1) | (1ull << 40),
       "CMP_KUB_DESC value 0x1010000000000: KUB_ADDR does not fit the 32-bit device address space"},
      {kCmpKargsInfo, cmp_kub_range(0, 8) | 1, "CMP_KARGS_INFO value 0x80000000001: bits 15..0 are reserved"},
      {kCmpTsdInfo, 0x8000, "CMP_TSD_INFO value 0x8000: bits 15..0 are reserved"},
      {kCmpStackTop, 0x100000000ull, "CMP_STACK_TOP value 0x100000000: does not fit the 32-bit device address space"},
      {kCmpReturnAddr, ~0ull, "CMP_RETURN_ADDR value 0xffffffffffffffff: does not fit the 32-bit device address space"},
      {kCmpWindowBase0 + 2, 1ull << 33,
       "CMP_REG_WINDOW_BASE2 value 0x200000000: does not fit the 32-bit device address space"},
      {kCmpWindowTarget0 + 7, 1ull << 32,
       "CMP_REG_WINDOW_TARGET7 value 0x100000000: does not fit the 32-bit device address space"},
      {kCmpWindowMode0 + 1, 7, "CMP_REG_WINDOW_MODE1 value 0x7: MODE 3 is reserved (0 SHARED, 1 PER_HART, 2 PER_CORE)"},
      {kCmpWindowMode0, 0x81, "CMP_REG_WINDOW_MODE0 value 0x81: bits 7 and 31..13 are reserved"},
      {kCmpWindowMode0, 0x2001, "CMP_REG_WINDOW_MODE0 value 0x2001: bits 7 and 31..13 are reserved"},
      {kCmpWindowMode0 + 3, 0x19,
       "CMP_REG_WINDOW_MODE3 value 0x19: INTERLEAVE is not modelled: windows map their target linearly"},
      {kCmpWindowScale0 + 4, 0x20, "CMP_REG_WINDOW_SCALE4 value 0x20: bits 31..5 are reserved"},
  };
  for (const Case& c : cases) {
    CommandBufferBuilder b = with_prefix();
    b.write_reg64(c.reg, c.value).finish();
    CHECK(rejected(b) == std::string(kAfterPrefix) + "WRITE_REG64 " + c.why);
  }
}

TEST_CASE("RUN_INSTANCES with more than 7 arguments is rejected") {
  CommandBufferBuilder b = with_prefix();
  b.run_instances(0, 4, {1, 2, 3, 4, 5, 6, 7, 8}).finish();
  CHECK(rejected(b) ==
        std::string(kAfterPrefix) + "RUN_INSTANCES passes more than 7 arguments: COUNT 18 gives 8 extra arguments");
}

TEST_CASE("RUN_INSTANCES with inline bits above 10 set is rejected") {
  CommandBufferBuilder b = with_prefix();
  b.packet(CmdOp::RunInstances, 0x800, {4}).finish();
  CHECK(rejected(b) == std::string(kAfterPrefix) +
                           "RUN_INSTANCES inline bits 31..11 are reserved (inline 0x800; MAX_HARTS is bits 7..0, "
                           "NUM_ARGS bits 10..8)");
}

TEST_CASE("RUN_INSTANCES whose COUNT disagrees with NUM_ARGS, or without NUM_INSTANCES, is rejected") {
  CommandBufferBuilder b = with_prefix();
  b.packet(CmdOp::RunInstances, 2u << 8, {4, 1}).finish();
  CHECK(rejected(b) == std::string(kAfterPrefix) +
                           "RUN_INSTANCES COUNT 4 gives 1 extra arguments but NUM_ARGS is 2 (expected COUNT 6)");
  CommandBufferBuilder e = with_prefix();
  e.packet(CmdOp::RunInstances, 0, {}).finish();
  CHECK(rejected(e) == std::string(kAfterPrefix) + "RUN_INSTANCES needs a NUM_INSTANCES payload chunk but COUNT is 0");
}

TEST_CASE("kernel commands with inline reserved bits, oversized ids or 64-bit arguments are rejected") {
  struct Case {
    CommandBufferBuilder b;
    const char* why;
  };
  Case cases[] = {
      {with_prefix().packet(CmdOp::RunKernelSlice, 0x100, {1, 0}),
       "RUN_KERNEL_SLICE inline bits 31..8 are reserved (inline 0x100; MAX_HARTS is bits 7..0)"},
      {with_prefix().run_kernel_slice(0, 1, 1ull << 32),
       "RUN_KERNEL_SLICE SLICE_ID 0x100000000 does not fit 32 bits (arguments are 32-bit registers)"},
      {with_prefix().run_kernel_slice(0, (1ull << 32) + 1, 0),
       "RUN_KERNEL_SLICE NUM_INSTANCES 4294967297 is more than 2^32: instance ids must fit 32 bits"},
      {with_prefix().run_instances(0, 1, {1, 1ull << 40}),
       "RUN_INSTANCES EXTRA_ARG_1 0x10000000000 does not fit 32 bits (arguments are 32-bit registers)"},
  };
  for (Case& c : cases) {
    c.b.finish();
    CHECK(rejected(c.b) == std::string(kAfterPrefix) + c.why);
  }
}

TEST_CASE("SYNC_CACHE flags other than DCACHE and ICACHE are rejected") {
  CommandBufferBuilder b = with_prefix();
  b.sync_cache(4).finish();
  CHECK(rejected(b) ==
        std::string(kAfterPrefix) + "SYNC_CACHE FLAGS 0x4 has unknown bits (bit 0: DCACHE, bit 1: ICACHE)");
}

// --- Malformed buffers: validation against the device ------------------------------

TEST_CASE("memory commands on unmapped or beyond-32-bit addresses are rejected before anything runs") {
  struct Case {
    CommandBufferBuilder b;
    const char* why;
  };
  Case cases[] = {
      {with_prefix().load_reg64(kCmpScratch, kUnmapped),
       "LOAD_REG64 reads 8 bytes at 0x50000000, which are not all mapped"},
      {with_prefix().load_reg64(kCmpScratch, 1ull << 32),
       "LOAD_REG64 SRC_ADDR 0x100000000 does not fit the 32-bit device address space"},
      {with_prefix().store_reg64(kCmpScratch, kData + kDataSize - 4),
       "STORE_REG64 writes 8 bytes at 0x2fffc, which are not all mapped"},
      {with_prefix().store_imm64(0x20, 1), "STORE_IMM64 writes 8 bytes at 0x20, which are not all mapped"},
      {with_prefix().store_imm64(0xfffffffc, 1),
       "STORE_IMM64 writes 8 bytes at 0xfffffffc, which run past the 32-bit "
       "address space"},
      {with_prefix().copy_mem64(2, kData, kUnmapped),
       "COPY_MEM64 writes 16 bytes at 0x50000000, which are not all "
       "mapped"},
      {with_prefix().copy_mem64(2, kUnmapped, kData),
       "COPY_MEM64 reads 16 bytes at 0x50000000, which are not all "
       "mapped"},
      {with_prefix().copy_mem64(1, 1ull << 32, kData, 1),
       "COPY_MEM64 SRC_ADDR 0x100000000 does not fit the 32-bit device address space"},
      {with_prefix().copy_mem64(1, kData, kData + 8, 17),
       "COPY_MEM64 UNIT 17 names hart 16 but the device has 16 harts (UNIT 0 is the CMP's physical view, UNIT n+1 "
       "hart n)"},
  };
  for (Case& c : cases) {
    c.b.finish();
    CHECK(rejected(c.b) == std::string(kAfterPrefix) + c.why);
  }
}

TEST_CASE("MAX_HARTS beyond the device's harts is rejected") {
  CommandBufferBuilder b = with_prefix();
  b.run_instances(17, 1, {}).finish();
  CHECK(rejected(b) == std::string(kAfterPrefix) +
                           "RUN_INSTANCES MAX_HARTS 17 exceeds the 16 harts of the device (0 means every hart)");
  CommandBufferBuilder s = with_prefix();
  s.run_kernel_slice(16, 1, 0).finish();
  Result<CommandList> list = decode_command_buffer(s.bytes());
  REQUIRE(list.ok());
  Fixture f;
  CHECK(validate_command_list(*list, f.m.memory(), f.m.config()).ok());
}

TEST_CASE("LAUNCH_GRID shapes that do not fit the configuration are rejected") {
  struct Case {
    LaunchGridArgs g;
    const char* why;
  };
  const Case cases[] = {
      {{kCode, kCode, 0, {2, 1, 1}, {17, 1, 1}, 0, {1, 1, 1}},
       "LAUNCH_GRID block 17x1x1 has more threads than a core's 16 (4 warps x 4 threads)"},
      {{kCode, kCode, 0, {2, 1, 1}, {4, 1, 1}, 16385, {1, 1, 1}},
       "LAUNCH_GRID asks for 16385 bytes of local memory per CTA but a core has 16384"},
      {{kCode, kCode, 0, {2, 0, 1}, {4, 1, 1}, 0, {1, 1, 1}},
       "LAUNCH_GRID grid y is 0: every grid, block and cluster dimension must be at least 1"},
      {{kCode, kCode, 0, {2, 1, 1}, {4, 1, 0}, 0, {1, 1, 1}},
       "LAUNCH_GRID block z is 0: every grid, block and cluster dimension must be at least 1"},
      {{kCode, kCode, 0, {2, 1, 1}, {4, 1, 1}, 0, {0, 1, 1}},
       "LAUNCH_GRID cluster x is 0: every grid, block and cluster dimension must be at least 1"},
      {{kCode, kCode, 0, {6, 1, 1}, {4, 1, 1}, 0, {4, 1, 1}},
       "LAUNCH_GRID grid x (6) is not a multiple of cluster x (4)"},
      {{kCode, kCode, 0, {65536, 65536, 2}, {4, 1, 1}, 0, {1, 1, 1}},
       "LAUNCH_GRID grid 65536x65536x2 has more than 2^32 CTAs"},
  };
  for (const Case& c : cases) {
    CommandBufferBuilder b = with_prefix();
    b.launch_grid(c.g).finish();
    CHECK(rejected(b) == std::string(kAfterPrefix) + c.why);
  }
}

// --- Execution-time re-checks ---------------------------------------------------------

TEST_CASE("memory unmapped after validation makes the command an execution error that changes nothing") {
  Fixture f;
  CommandBufferBuilder b;
  b.write_reg64(kCmpScratch, 1).store_imm64(kData + 0x8000, 2).finish();
  Result<CommandList> list = decode_command_buffer(b.bytes());
  REQUIRE(list.ok());
  REQUIRE(validate_command_list(*list, f.m.memory(), f.m.config()).ok());
  f.m.memory().unmap(kData + 0x8000, 8);
  size_t next = 0;
  std::string error;
  CHECK(f.cp.advance(*list, &next, &error) == Status::Error);
  CHECK(error == "chunk 2 (byte offset 16): STORE_IMM64 writes 8 bytes at 0x28000, which are not all mapped");
  CHECK(next == 1);
  CHECK(f.cp.registers()[kCmpScratch] == 1);
}

TEST_CASE("hand-built command lists with a bad payload size or no FINISH are errors, not crashes") {
  Fixture f;
  std::string error;
  size_t next = 0;
  CommandList short_payload{{Command{CmdOp::CopyMem64, 8, 1, {kData}}}};
  CHECK(f.cp.advance(short_payload, &next, &error) == Status::Error);
  CHECK(error == "chunk 1 (byte offset 8): COPY_MEM64 takes 3 chunks of payload (COUNT 6) but COUNT is 2");
  CommandList bad_op{{Command{CmdOp(42), 0, 0, {}}}};
  CHECK(f.cp.advance(bad_op, &next, &error) == Status::Error);
  CHECK(error == "chunk 0 (byte offset 0): unknown opcode 42");
  CommandList no_finish{{Command{CmdOp::SyncCache, 0, 0, {}}}};
  CHECK(f.cp.advance(no_finish, &next, &error) == Status::Error);
  CHECK(error == "the command list ends without FINISH");
  CHECK(next == 1);
}

// --- Fuzzing -------------------------------------------------------------------------

TEST_CASE("2000 mutated buffers never crash; those that decode re-encode to the same bytes") {
  std::vector<std::vector<uint8_t>> bases;
  {
    CommandBufferBuilder b;
    b.write_reg64(kCmpEntryPtFn, kCode)
        .write_reg64(kCmpWindowMode0, cmp_window_mode(true, WindowMode::PerHart, kWindowRead, 0x100))
        .write_reg64(kCmpWindowScale0, cmp_window_scale(3, 1))
        .store_imm64(0x1000, 5)
        .copy_mem64(4, 0x1000, 0x2000, 3)
        .load_reg64(kCmpScratch, 0x2000)
        .store_reg64(kCmpScratch, 0x3000)
        .run_instances(0, 8, {1, 2})
        .sync_cache()
        .finish();
    bases.push_back(b.bytes());
  }
  {
    CommandBufferBuilder b;
    b.write_reg64(kCmpEntryPtFn, kCode)
        .write_reg64(kCmpKubDesc, cmp_kub_desc(0x4000, 2))
        .write_reg64(kCmpKargsInfo, cmp_kub_range(0, 16))
        .write_reg64(kCmpTsdInfo, cmp_kub_range(64, 32))
        .run_kernel_slice(4, 9, 1)
        .launch_grid({kCode, kCode + 4, 0x1000, {2, 2, 1}, {4, 2, 1}, 512, {2, 1, 1}})
        .finish();
    bases.push_back(b.bytes());
  }
  std::mt19937_64 rng(0x5eed0004);
  auto pick = [&](size_t n) { return n == 0 ? size_t(0) : size_t(rng() % n); };
  size_t decoded = 0, rejected_count = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    std::vector<uint8_t> buf = bases[pick(bases.size())];
    const int mutations = 1 + int(rng() % 3);
    for (int k = 0; k < mutations; ++k) {
      const size_t chunks = buf.size() / 8;
      switch (rng() % 7) {
        case 0:
          if (!buf.empty()) buf[pick(buf.size())] ^= uint8_t(1u << (rng() % 8));
          break;
        case 1:
          if (!buf.empty()) buf[pick(buf.size())] = uint8_t(rng());
          break;
        case 2: buf.resize(pick(buf.size() + 1)); break;
        case 3: {  // a random chunk at a chunk boundary
          size_t at = 8 * pick(chunks + 1);
          uint64_t v = rng();
          uint8_t raw[8];
          std::memcpy(raw, &v, 8);
          buf.insert(buf.begin() + long(at), raw, raw + 8);
          break;
        }
        case 4:
          if (chunks >= 2) {
            size_t a = pick(chunks), c = pick(chunks);
            for (int i = 0; i < 8; ++i) std::swap(buf[8 * a + i], buf[8 * c + i]);
          }
          break;
        case 5:
          if (chunks > 0) buf[8 * pick(chunks) + 1] = uint8_t(rng() % 12);  // opcode byte
          break;
        case 6:
          if (chunks > 0) buf[8 * pick(chunks) + 2] = uint8_t(rng() % 20);  // COUNT, low byte
          break;
      }
    }
    INFO("iteration " << iter);
    CHECK(vx_fuzz_command_buffer(buf.data(), buf.size()) == 0);
    Result<CommandList> r = decode_command_buffer(buf);
    if (r.ok()) {
      ++decoded;
      CommandBufferBuilder again;
      for (const Command& c : r->commands) again.packet(c.op, c.inline_value, c.payload);
      CHECK(again.bytes() == buf);
      CHECK(r->commands.back().op == CmdOp::Finish);
    } else {
      ++rejected_count;
      const std::string& msg = r.error().message;
      CHECK(msg.rfind("chunk ", 0) == 0);
      const size_t at = msg.find("(byte offset ");
      REQUIRE(at != std::string::npos);
      CHECK(std::stoul(msg.substr(at + 13)) <= buf.size());
    }
  }
  // The mutations must exercise both sides of the decoder.
  CHECK(decoded > 100);
  CHECK(rejected_count > 1000);
}
