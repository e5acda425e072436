// Tests of the public device API: open_model_device, the Driver (memory,
// submission, wait/abort, console, exit code), the HostRuntime launches and
// kernel-image parsing. Kernels are hand-assembled RV32 words; nothing here
// touches the Machine directly.
#include "device/driver.hpp"

#include <elf.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device/cmdbuf_builder.hpp"
#include "device/host_runtime.hpp"
#include "device/image.hpp"
#include "device/test_support.hpp"

using namespace vx;
using namespace vx::test;
using Catch::Matchers::Contains;

namespace {

constexpr uint32_t kCode = 0x80000000;
constexpr uint32_t kUnmapped = 0x70000000;  // never allocated or reserved by these tests
constexpr uint32_t kSentinel = 0xdeadbeef;

// Encoders the shared header does not provide.
constexpr uint32_t mul(uint32_t rd, uint32_t rs1, uint32_t rs2) { return r_type(1, rs2, rs1, 0, rd, 0x33); }
constexpr uint32_t slli(uint32_t rd, uint32_t rs1, uint32_t sh) { return i_type(int32_t(sh), rs1, 1, rd, 0x13); }
constexpr uint32_t sb(uint32_t rs2, uint32_t rs1, int32_t imm) { return s_type(imm, rs2, rs1, 0, 0x23); }

std::unique_ptr<Driver> open_device(const DeviceConfig& cfg = {}) {
  auto d = open_model_device(cfg, RunOptions{});
  REQUIRE(d.ok());
  return std::move(d).value();
}

std::span<const uint8_t> byte_view(const std::vector<uint32_t>& words) {
  return {reinterpret_cast<const uint8_t*>(words.data()), words.size() * 4};
}

void put_words(Driver& d, uint32_t addr, const std::vector<uint32_t>& words) {
  auto r = d.copy_to_device(addr, byte_view(words));
  INFO((r ? std::string() : r.error().message));
  REQUIRE(r.ok());
}

std::vector<uint32_t> get_words(Driver& d, uint32_t addr, size_t n) {
  std::vector<uint32_t> out(n);
  auto r = d.copy_from_device(addr, {reinterpret_cast<uint8_t*>(out.data()), n * 4});
  INFO((r ? std::string() : r.error().message));
  REQUIRE(r.ok());
  return out;
}

// Maps a page at `addr` and copies the code there.
uint32_t place_code(Driver& d, const std::vector<uint32_t>& code, uint32_t addr = kCode) {
  REQUIRE(d.mem_reserve(addr, 0x1000).ok());
  put_words(d, addr, code);
  return addr;
}

// An array of n words, all kSentinel, plus one guard word after it.
uint32_t alloc_array(Driver& d, size_t n) {
  auto a = d.mem_alloc((n + 1) * 4);
  REQUIRE(a.ok());
  put_words(d, *a, std::vector<uint32_t>(n + 1, kSentinel));
  return *a;
}

std::string describe(const DeviceEvent& ev) {
  return std::string(event_kind_name(ev.kind)) + " submission " + std::to_string(ev.submission) + " " + ev.message +
         (ev.kind == EventKind::Exception ? " " + ev.exception.to_string() : std::string());
}

// Waits and requires the given submission to complete.
void require_completed(Driver& d, uint64_t submission) {
  DeviceEvent ev = d.wait();
  INFO(describe(ev));
  REQUIRE(ev.kind == EventKind::Completed);
  REQUIRE(ev.submission == submission);
}

// void k(uint32_t id, uint32_t out, uint32_t mul): goes through its stack, then out[id] = id * mul.
std::vector<uint32_t> scaled_id_kernel() {
  return {
      rv::addi(sp, sp, -16), rv::sw(a0, sp, 12), rv::lw(t0, sp, 12),
      rv::addi(sp, sp, 16),  mul(t1, t0, a2),    slli(t2, t0, 2),
      rv::add(t2, t2, a1),   rv::sw(t1, t2, 0),  rv::ret(),
  };
}

void check_scaled_ids(Driver& d, uint32_t out, uint32_t count, uint32_t factor) {
  auto got = get_words(d, out, count + 1);
  for (uint32_t i = 0; i < count; ++i) {
    INFO("instance " << i);
    CHECK(got[i] == i * factor);
  }
  CHECK(got[count] == kSentinel);
}

// Runs scaled_id_kernel over `count` instances on a fresh device and checks every word.
void run_scaled_ids(const DeviceConfig& cfg, uint32_t count, uint32_t max_harts) {
  auto d = open_device(cfg);
  HostRuntime rt(*d);
  uint32_t code = place_code(*d, scaled_id_kernel());
  uint32_t out = alloc_array(*d, count);
  auto id = rt.launch_instances(InstancesLaunch{code, count, {out, 3}, max_harts});
  INFO((id ? std::string() : id.error().message));
  REQUIRE(id.ok());
  require_completed(*d, *id);
  check_scaled_ids(*d, out, count, 3);
  CHECK(d->stats().units_dispatched == count);
  if (max_harts == 1) CHECK(d->stats().warps_dispatched == count);  // one single-lane warp per instance
  CHECK(rt.wait().kind == EventKind::Idle);
}

// Grid kernel: out[blockIdx.x * blockDim.x + threadIdx.x] = that index; a0 = out.
std::vector<uint32_t> global_index_kernel() {
  return {
      rv::csrr(t0, 0xCD6), rv::csrr(t1, 0xCD9), rv::csrr(t2, 0xCD3), mul(t0, t0, t1), rv::add(t0, t0, t2),
      slli(t1, t0, 2),     rv::add(t1, t1, a0), rv::sw(t0, t1, 0),   rv::ret(),
  };
}

constexpr uint32_t kKernelOffset = 0x100;  // the grid kernel follows the window at image base + 0x100

// Image words: the window at 0, the kernel at kKernelOffset.
std::vector<uint32_t> grid_image_words() { return windowed_image(global_index_kernel(), kKernelOffset); }

std::vector<uint8_t> make_vxbin(uint64_t lo, uint64_t hi, const std::vector<uint8_t>& raw) {
  std::vector<uint8_t> b(16 + raw.size());
  std::memcpy(b.data(), &lo, 8);
  std::memcpy(b.data() + 8, &hi, 8);
  std::copy(raw.begin(), raw.end(), b.begin() + 16);
  return b;
}

std::vector<uint8_t> to_bytes(const std::vector<uint32_t>& words) {
  auto v = byte_view(words);
  return {v.begin(), v.end()};
}

// A minimal ELF32 RISC-V executable: one PT_LOAD segment at kCode holding `code`
// (then the __vx_launch descriptor words when given) and `bss` zero bytes, and a
// symbol table naming main (at kCode) and __vx_launch when asked.
struct ElfOptions {
  std::vector<uint32_t> code;
  uint32_t bss = 0;
  std::vector<uint32_t> descriptor;  // empty, or 11 words: magic, version, entry, arg, grid, block, lmem
  bool main_symbol = false;
};

constexpr size_t kSegOffset = 0x60;

template <class T>
void put_struct(std::vector<uint8_t>& b, size_t off, const T& v) {
  if (b.size() < off + sizeof v) b.resize(off + sizeof v);
  std::memcpy(b.data() + off, &v, sizeof v);
}

size_t align4(size_t v) { return (v + 3) & ~size_t(3); }

std::vector<uint8_t> make_elf(const ElfOptions& o) {
  std::vector<uint32_t> seg = o.code;
  const uint32_t desc_addr = kCode + uint32_t(seg.size() * 4);
  seg.insert(seg.end(), o.descriptor.begin(), o.descriptor.end());
  const uint32_t filesz = uint32_t(seg.size() * 4);

  std::vector<uint8_t> b(kSegOffset, 0);
  auto segbytes = to_bytes(seg);
  b.insert(b.end(), segbytes.begin(), segbytes.end());

  // .strtab: "\0main\0__vx_launch\0"
  const size_t strtab_off = align4(b.size());
  const char strtab[] = "\0main\0__vx_launch";
  b.resize(strtab_off);
  b.insert(b.end(), strtab, strtab + sizeof strtab);
  const uint32_t main_name = 1, launch_name = 6;

  std::vector<Elf32_Sym> syms(1);  // the null symbol
  if (o.main_symbol) {
    Elf32_Sym s{};
    s.st_name = main_name;
    s.st_value = kCode;
    s.st_size = 4;
    s.st_info = ELF32_ST_INFO(STB_GLOBAL, STT_FUNC);
    s.st_shndx = 1;
    syms.push_back(s);
  }
  if (!o.descriptor.empty()) {
    Elf32_Sym s{};
    s.st_name = launch_name;
    s.st_value = desc_addr;
    s.st_size = 44;
    s.st_info = ELF32_ST_INFO(STB_GLOBAL, STT_OBJECT);
    s.st_shndx = 1;
    syms.push_back(s);
  }
  const size_t symtab_off = align4(b.size());
  for (size_t i = 0; i < syms.size(); ++i) put_struct(b, symtab_off + i * sizeof(Elf32_Sym), syms[i]);

  // Sections: null, .symtab (links to 2), .strtab.
  const size_t shoff = align4(b.size());
  Elf32_Shdr sh[3]{};
  sh[1].sh_type = SHT_SYMTAB;
  sh[1].sh_offset = uint32_t(symtab_off);
  sh[1].sh_size = uint32_t(syms.size() * sizeof(Elf32_Sym));
  sh[1].sh_link = 2;
  sh[1].sh_info = 1;
  sh[1].sh_addralign = 4;
  sh[1].sh_entsize = sizeof(Elf32_Sym);
  sh[2].sh_type = SHT_STRTAB;
  sh[2].sh_offset = uint32_t(strtab_off);
  sh[2].sh_size = sizeof strtab;
  sh[2].sh_addralign = 1;
  for (int i = 0; i < 3; ++i) put_struct(b, shoff + i * sizeof(Elf32_Shdr), sh[i]);

  Elf32_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS32;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = EM_RISCV;
  eh.e_version = EV_CURRENT;
  eh.e_entry = kCode;
  eh.e_phoff = sizeof(Elf32_Ehdr);
  eh.e_shoff = uint32_t(shoff);
  eh.e_ehsize = sizeof(Elf32_Ehdr);
  eh.e_phentsize = sizeof(Elf32_Phdr);
  eh.e_phnum = 1;
  eh.e_shentsize = sizeof(Elf32_Shdr);
  eh.e_shnum = 3;
  eh.e_shstrndx = SHN_UNDEF;
  put_struct(b, 0, eh);

  Elf32_Phdr ph{};
  ph.p_type = PT_LOAD;
  ph.p_offset = kSegOffset;
  ph.p_vaddr = kCode;
  ph.p_paddr = kCode;
  ph.p_filesz = filesz;
  ph.p_memsz = filesz + o.bss;
  ph.p_flags = PF_R | PF_X;
  ph.p_align = 4;
  put_struct(b, sizeof(Elf32_Ehdr), ph);
  return b;
}

std::vector<uint32_t> descriptor_words(uint32_t entry, uint32_t arg, std::array<uint32_t, 3> grid,
                                       std::array<uint32_t, 3> block, uint32_t lmem) {
  return {LaunchDescriptor::kMagic, 1, entry, arg, grid[0], grid[1], grid[2], block[0], block[1], block[2], lmem};
}

template <class T>
std::string error_of(const Result<T>& r) {
  return r ? std::string("(no error)") : r.error().message;
}

}  // namespace

// --- 1. Opening a device -----------------------------------------------------------

TEST_CASE("open_model_device rejects an invalid configuration with a message naming the problem", "[driver]") {
  DeviceConfig threads3;
  threads3.threads = 3;
  auto r = open_model_device(threads3, RunOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Contains("invalid device configuration") && Contains("threads per warp") &&
                                    Contains("power of two") && Contains("got 3"));

  DeviceConfig no_warps;
  no_warps.warps = 0;
  auto r2 = open_model_device(no_warps, RunOptions{});
  REQUIRE_FALSE(r2.ok());
  CHECK_THAT(r2.error().message, Contains("warps per core") && Contains("got 0"));

  DeviceConfig no_clusters;
  no_clusters.clusters = 0;
  auto r3 = open_model_device(no_clusters, RunOptions{});
  REQUIRE_FALSE(r3.ok());
  CHECK_THAT(r3.error().message, Contains("clusters"));
}

TEST_CASE("open_model_device with a valid configuration reports that configuration", "[driver]") {
  DeviceConfig cfg{2, 3, 8, 8};
  auto d = open_device(cfg);
  CHECK(d->config() == cfg);
  CHECK(d->config().to_string() == "2x3x8x8");
  CHECK(d->config().total_harts() == 384);
  CHECK(open_device()->config() == DeviceConfig{});
}

// --- 2. Memory ----------------------------------------------------------------------

TEST_CASE("mem_alloc returns page-aligned, non-overlapping addresses from 0x10000", "[driver]") {
  auto d = open_device();
  const std::vector<uint64_t> sizes{1, 5000, 4096, 3, 12288};
  std::vector<std::pair<uint32_t, uint64_t>> got;
  for (uint64_t s : sizes) {
    auto a = d->mem_alloc(s);
    REQUIRE(a.ok());
    CHECK(*a >= 0x10000u);
    CHECK(*a % 4096 == 0);
    got.emplace_back(*a, s);
  }
  for (size_t i = 0; i < got.size(); ++i)
    for (size_t j = i + 1; j < got.size(); ++j) {
      INFO("allocations " << i << " and " << j);
      uint64_t ai = got[i].first, aj = got[j].first;
      CHECK((ai + got[i].second <= aj || aj + got[j].second <= ai));
    }
  // Every byte of an allocation is usable.
  std::vector<uint8_t> full(5000, 0x5a);
  CHECK(d->copy_to_device(got[1].first, full).ok());
  CHECK_THAT(error_of(d->mem_alloc(0)), Contains("at least 1 byte"));
}

TEST_CASE("mem_free accepts only the start of a live allocation or reserved range", "[driver]") {
  auto d = open_device();
  auto a = d->mem_alloc(8192);
  REQUIRE(a.ok());
  CHECK_THAT(error_of(d->mem_free(*a + 4096)), Contains("not the start of an allocation"));
  CHECK_THAT(error_of(d->mem_free(0x12345)), Contains("0x12345"));
  REQUIRE(d->mem_reserve(kCode, 0x1000).ok());
  CHECK_THAT(error_of(d->mem_free(kCode + 4)), Contains("not the start of an allocation"));
  // A reserved range is released by its start (vx_mem_free of a vx_mem_reserve buffer), and can be reserved again.
  REQUIRE(d->mem_free(kCode).ok());
  CHECK_FALSE(d->copy_to_device(kCode, std::vector<uint8_t>(4, 0)).ok());
  CHECK(d->mem_reserve(kCode, 0x1000).ok());
  REQUIRE(d->mem_free(*a).ok());
  CHECK_THAT(error_of(d->mem_free(*a)), Contains("not the start of an allocation"));
  // Freed memory is unmapped, and its range can be allocated again.
  uint32_t word = 1;
  CHECK_FALSE(d->copy_to_device(*a, {reinterpret_cast<const uint8_t*>(&word), 4}).ok());
  auto again = d->mem_alloc(8192);
  REQUIRE(again.ok());
  CHECK(*again == *a);
}

TEST_CASE("copies to or from unmapped memory fail naming the address and change nothing", "[driver]") {
  auto d = open_device();
  std::vector<uint8_t> buf(16, 0xab);
  CHECK_THAT(error_of(d->copy_to_device(kUnmapped, buf)), Contains("0x70000000") && Contains("not mapped"));
  CHECK_THAT(error_of(d->copy_from_device(kUnmapped, buf)), Contains("0x70000000") && Contains("not mapped"));
  // Addresses below 0x40 are never mapped, although the rest of the I/O region is.
  CHECK_THAT(error_of(d->copy_to_device(0x20, buf)), Contains("0x20"));
  CHECK(d->copy_to_device(0x8000, buf).ok());
  // A copy that runs off the end of an allocation writes nothing at all.
  auto a = d->mem_alloc(4096);
  REQUIRE(a.ok());
  CHECK_FALSE(d->copy_to_device(*a + 4088, buf).ok());
  CHECK(get_words(*d, *a + 4088, 2) == std::vector<uint32_t>{0, 0});
}

TEST_CASE("mem_reserve refuses the I/O region and overlapping ranges", "[driver]") {
  auto d = open_device();
  CHECK_THAT(error_of(d->mem_reserve(0x1000, 16)), Contains("I/O region"));
  CHECK_THAT(error_of(d->mem_reserve(0xfff0, 0x100)), Contains("I/O region"));
  CHECK_THAT(error_of(d->mem_reserve(kCode, 0)), Contains("at least 1 byte"));
  REQUIRE(d->mem_reserve(kCode, 0x2000).ok());
  CHECK_THAT(error_of(d->mem_reserve(kCode + 0x1000, 16)), Contains("overlaps the region at 0x80000000"));
  CHECK_THAT(error_of(d->mem_reserve(kCode - 0x10, 0x20)), Contains("overlaps"));
  auto a = d->mem_alloc(100);
  REQUIRE(a.ok());
  CHECK_THAT(error_of(d->mem_reserve(*a + 8, 8)), Contains("overlaps"));
  // The stacks at the top of memory are the device's.
  CHECK_THAT(error_of(d->mem_reserve(0xFFFE0000, 16)), Contains("stacks"));
  // An adjacent range is fine, and an allocation avoids reserved ranges.
  CHECK(d->mem_reserve(kCode + 0x2000, 0x1000).ok());
  REQUIRE(d->mem_reserve(0x30000, 0x1000).ok());
  for (int i = 0; i < 40; ++i) {
    auto b = d->mem_alloc(4096);
    REQUIRE(b.ok());
    CHECK(*b != 0x30000u);
  }
}

TEST_CASE("data round-trips through copy_to_device and copy_from_device", "[driver]") {
  auto d = open_device();
  auto a = d->mem_alloc(10000);
  REQUIRE(a.ok());
  std::vector<uint8_t> data(10000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 7 + 3);
  REQUIRE(d->copy_to_device(*a, data).ok());
  std::vector<uint8_t> back(10000);
  REQUIRE(d->copy_from_device(*a, back).ok());
  CHECK(back == data);
  // An unaligned sub-range, and reserved memory as well as allocated.
  std::vector<uint8_t> mid(33);
  REQUIRE(d->copy_from_device(*a + 4093, mid).ok());
  CHECK(std::equal(mid.begin(), mid.end(), data.begin() + 4093));
  REQUIRE(d->mem_reserve(kCode, 64).ok());
  REQUIRE(d->copy_to_device(kCode + 5, mid).ok());
  std::vector<uint8_t> back2(33);
  REQUIRE(d->copy_from_device(kCode + 5, back2).ok());
  CHECK(back2 == mid);
}

// --- 3. Malformed submissions ------------------------------------------------------

TEST_CASE("submit rejects malformed buffers naming the chunk, queues nothing and changes no memory", "[driver]") {
  auto d = open_device();
  auto a = d->mem_alloc(64);
  REQUIRE(a.ok());
  const std::vector<uint32_t> before{0x11111111, 0x22222222};
  put_words(*d, *a, before);

  // Each buffer starts with a valid STORE_IMM64 (chunks 0-1) that must not take effect.
  CommandBufferBuilder b;
  b.store_imm64(*a, 0xaaaaaaaaaaaaaaaaull);
  std::string expect;
  SECTION("wrong packet id") {
    b.chunk((uint64_t(2) << 30) | (uint64_t(CmdOp::Finish) << 8));
    expect = "packet identifier is 2";
  }
  SECTION("unknown opcode") {
    b.packet(CmdOp(11), 0, {}).finish();
    expect = "unknown opcode 11";
  }
  SECTION("missing FINISH") { expect = "the buffer ends without FINISH"; }
  SECTION("an address that is not mapped") {
    b.store_imm64(kUnmapped, 1).finish();
    expect = "STORE_IMM64 writes 8 bytes at 0x70000000, which are not all mapped";
  }
  SECTION("a launch that does not fit the device") {
    LaunchGridArgs g;
    g.start_pc = kCode;
    g.entry_pc = kCode;
    g.block = {17, 1, 1};
    b.launch_grid(g).finish();
    expect = "LAUNCH_GRID block 17x1x1";
  }
  auto r = d->submit(b.bytes());
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Contains("chunk 2 (byte offset 16): " + expect));
  DeviceEvent ev = d->wait();
  INFO(describe(ev));
  CHECK(ev.kind == EventKind::Idle);
  CHECK(get_words(*d, *a, 2) == before);
}

TEST_CASE("a valid submission after rejected ones executes", "[driver]") {
  auto d = open_device();
  auto a = d->mem_alloc(64);
  REQUIRE(a.ok());
  CommandBufferBuilder bad;
  bad.store_imm64(*a, 1);
  REQUIRE_FALSE(d->submit(bad.bytes()).ok());
  CommandBufferBuilder good;
  good.store_imm64(*a, 0x0123456789abcdefull).finish();
  auto id = d->submit(good.bytes());
  REQUIRE(id.ok());
  require_completed(*d, *id);
  CHECK(get_words(*d, *a, 2) == std::vector<uint32_t>{0x89abcdef, 0x01234567});
  CHECK(d->wait().kind == EventKind::Idle);
}

// --- 4. RUN_INSTANCES ---------------------------------------------------------------

TEST_CASE("launch_instances runs every instance with its own stack on the default device", "[driver]") {
  run_scaled_ids(DeviceConfig{}, 37, 0);
}

TEST_CASE("launch_instances runs every instance with its own stack on a 1x2x8x8 device", "[driver]") {
  run_scaled_ids(DeviceConfig{1, 2, 8, 8}, 37, 0);
  run_scaled_ids(DeviceConfig{1, 2, 8, 8}, 300, 0);  // more instances than harts: warps are reused
}

TEST_CASE("launch_instances with MAX_HARTS 1 runs all instances serially on one hart", "[driver]") {
  run_scaled_ids(DeviceConfig{}, 37, 1);
}

TEST_CASE("launch_instances rejects more than 7 extra arguments", "[driver]") {
  auto d = open_device();
  HostRuntime rt(*d);
  auto r = rt.launch_instances(InstancesLaunch{kCode, 1, {1, 2, 3, 4, 5, 6, 7, 8}, 0});
  CHECK_THAT(error_of(r), Contains("at most 7 extra arguments"));
  CHECK(d->wait().kind == EventKind::Idle);
}

// --- 5. RUN_KERNEL_SLICE -----------------------------------------------------------

TEST_CASE("RUN_KERNEL_SLICE passes instance id, slice id, packed args and a fresh KTB copy", "[driver]") {
  auto d = open_device();
  constexpr uint32_t kCount = 40;  // more than the 16 harts: harts run several instances
  // k(id a0, slice a1, packed a2, ktb a3): packed = {arg, out, ktb_out};
  //   w = ktb[0]; ktb[0] = w + 1 (the next instance must see a fresh copy);
  //   out[id] = arg + w + slice * 1000 + id; ktb_out[id] = ktb.
  std::vector<uint32_t> code{
      rv::lw(t0, a2, 0),   rv::lw(t1, a2, 4),   rv::lw(t2, a3, 0), rv::addi(t6, t2, 1), rv::sw(t6, a3, 0),
      rv::add(t0, t0, t2), rv::li(t3, 1000),    mul(t3, t3, a1),   rv::add(t0, t0, t3), rv::add(t0, t0, a0),
      slli(t4, a0, 2),     rv::add(t5, t4, t1), rv::sw(t0, t5, 0), rv::lw(t6, a2, 8),   rv::add(t5, t4, t6),
      rv::sw(a3, t5, 0),   rv::ret(),
  };
  const uint32_t tmc_index = uint32_t(code.size());
  code.push_back(vxi::tmc(zero));
  uint32_t entry = place_code(*d, code);
  uint32_t tmc_addr = entry + 4 * tmc_index;

  uint32_t out1 = alloc_array(*d, kCount), out2 = alloc_array(*d, kCount), ktb_out = alloc_array(*d, kCount);
  auto kub = d->mem_alloc(256);
  REQUIRE(kub.ok());
  const uint32_t arg1 = 100000, arg2 = 300000, tsd_word = 20000000;
  std::vector<uint32_t> kub_words(64, 0);
  kub_words[0] = arg1;
  kub_words[1] = out1;
  kub_words[2] = ktb_out;
  kub_words[16] = tsd_word;  // TSD at KUB offset 64
  put_words(*d, *kub, kub_words);

  CommandBufferBuilder b;
  b.write_reg64(kCmpEntryPtFn, entry)
      .write_reg64(kCmpKubDesc, cmp_kub_desc(*kub, 1))
      .write_reg64(kCmpKargsInfo, cmp_kub_range(0, 12))
      .write_reg64(kCmpTsdInfo, cmp_kub_range(64, 4))
      .write_reg64(kCmpStackTop, 0xFFFF0000)
      .write_reg64(kCmpReturnAddr, tmc_addr)
      .run_kernel_slice(0, kCount, 2)
      // The second slice sees the packed args this store leaves: arg2 and out2.
      .store_imm64(*kub, (uint64_t(out2) << 32) | arg2)
      .run_kernel_slice(0, kCount, 3)
      .finish();
  auto id = d->submit(b.bytes());
  INFO(error_of(id));
  REQUIRE(id.ok());
  require_completed(*d, *id);

  auto got1 = get_words(*d, out1, kCount + 1), got2 = get_words(*d, out2, kCount + 1);
  auto ktbs = get_words(*d, ktb_out, kCount + 1);
  for (uint32_t i = 0; i < kCount; ++i) {
    INFO("instance " << i);
    CHECK(got1[i] == arg1 + tsd_word + 2 * 1000 + i);
    CHECK(got2[i] == arg2 + tsd_word + 3 * 1000 + i);
    // Each hart's KTB is its own 64-byte-strided block in the TCDM area.
    CHECK(ktbs[i] >= memmap::kKtbBase);
    CHECK((ktbs[i] - memmap::kKtbBase) % 64 == 0);
    CHECK((ktbs[i] - memmap::kKtbBase) / 64 < d->config().total_harts());
  }
  CHECK(got1[kCount] == kSentinel);
  CHECK(got2[kCount] == kSentinel);
  // The KUB's TSD itself is untouched: instances wrote their copies.
  CHECK(get_words(*d, *kub + 64, 1)[0] == tsd_word);
}

// --- 6. LAUNCH_GRID -----------------------------------------------------------------

TEST_CASE("launch_grid of a .vxbin image writes every global thread index", "[driver]") {
  for (DeviceConfig cfg : {DeviceConfig{}, DeviceConfig{1, 2, 4, 4}}) {
    INFO("config " << cfg.to_string());
    auto d = open_device(cfg);
    HostRuntime rt(*d);
    auto img = parse_kernel_image(make_vxbin(kCode, kCode + 0x1000, to_bytes(grid_image_words())), "grid.vxbin");
    INFO(error_of(img));
    REQUIRE(img.ok());
    REQUIRE(rt.load_image(*img).ok());
    constexpr uint32_t kCtas = 7, kBlock = 6;  // 2 warps per CTA, the second half full; slots are reused
    uint32_t out = alloc_array(*d, kCtas * kBlock);
    LaunchOverrides o;
    o.entry = kCode + kKernelOffset;
    o.arg = out;
    o.grid = std::array<uint32_t, 3>{kCtas, 1, 1};
    o.block = std::array<uint32_t, 3>{kBlock, 1, 1};
    auto l = resolve_grid_launch(*img, cfg, o);
    INFO(error_of(l));
    REQUIRE(l.ok());
    auto id = rt.launch_grid(*l);
    INFO(error_of(id));
    REQUIRE(id.ok());
    require_completed(*d, *id);
    auto got = get_words(*d, out, kCtas * kBlock + 1);
    for (uint32_t i = 0; i < kCtas * kBlock; ++i) {
      INFO("thread " << i);
      CHECK(got[i] == i);
    }
    CHECK(got[kCtas * kBlock] == kSentinel);
    CHECK(d->stats().units_dispatched == kCtas);
  }
}

TEST_CASE("launch_grid of an ELF image takes its shape from the __vx_launch descriptor", "[driver]") {
  auto d = open_device();
  HostRuntime rt(*d);
  uint32_t out = alloc_array(*d, 5 * 16);
  ElfOptions eo;
  eo.code = grid_image_words();
  eo.bss = 64;
  eo.descriptor = descriptor_words(kCode + kKernelOffset, out, {5, 1, 1}, {16, 1, 1}, 0);
  auto img = parse_kernel_image(make_elf(eo), "grid.elf");
  INFO(error_of(img));
  REQUIRE(img.ok());
  REQUIRE(rt.load_image(*img).ok());
  auto l = resolve_grid_launch(*img, d->config(), {});
  INFO(error_of(l));
  REQUIRE(l.ok());
  auto id = rt.launch_grid(*l);
  REQUIRE(id.ok());
  require_completed(*d, *id);
  auto got = get_words(*d, out, 5 * 16 + 1);
  for (uint32_t i = 0; i < 5 * 16; ++i) {
    INFO("thread " << i);
    CHECK(got[i] == i);
  }
  CHECK(got[5 * 16] == kSentinel);
}

// --- 7. Workloads one after another -------------------------------------------------

TEST_CASE("after a budget stop and abort the device is idle and runs the next workload", "[driver]") {
  auto d = open_device();
  HostRuntime rt(*d);
  uint32_t spin = place_code(*d, {rv::jal(zero, 0)});
  auto a = rt.launch_instances(InstancesLaunch{spin, 4, {}, 0});
  REQUIRE(a.ok());
  DeviceEvent ev = d->wait(1000);
  INFO(describe(ev));
  REQUIRE(ev.kind == EventKind::Budget);
  CHECK(ev.submission == *a);
  CHECK(d->wait(500).kind == EventKind::Budget);  // still spinning
  CHECK(d->wait(0).kind == EventKind::Budget);
  d->abort();
  CHECK(d->wait().kind == EventKind::Idle);

  uint32_t code = place_code(*d, scaled_id_kernel(), kCode + 0x1000);
  uint32_t out = alloc_array(*d, 37);
  auto b = rt.launch_instances(InstancesLaunch{code, 37, {out, 5}, 0});
  REQUIRE(b.ok());
  CHECK(*b > *a);
  require_completed(*d, *b);
  check_scaled_ids(*d, out, 37, 5);
  CHECK(d->wait().kind == EventKind::Idle);
}

TEST_CASE("two queued submissions complete in order with increasing submission ids", "[driver]") {
  auto d = open_device();
  HostRuntime rt(*d);
  uint32_t code = place_code(*d, scaled_id_kernel());
  uint32_t out1 = alloc_array(*d, 20), out2 = alloc_array(*d, 50);
  auto a = rt.launch_instances(InstancesLaunch{code, 20, {out1, 3}, 0});
  auto b = rt.launch_instances(InstancesLaunch{code, 50, {out2, 11}, 0});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a < *b);
  require_completed(*d, *a);
  require_completed(*d, *b);
  DeviceEvent idle = d->wait();
  CHECK(idle.kind == EventKind::Idle);
  check_scaled_ids(*d, out1, 20, 3);
  check_scaled_ids(*d, out2, 50, 11);
}

// --- 8. Exceptions ------------------------------------------------------------------

TEST_CASE("a store to unmapped memory stops with StoreFault, repeated until abort", "[driver]") {
  auto d = open_device();
  HostRuntime rt(*d);
  uint32_t code = place_code(*d, {rv::lui(t0, kUnmapped >> 12), rv::sw(zero, t0, 4), rv::ret()});
  auto id = rt.launch_instances(InstancesLaunch{code, 1, {}, 0});
  REQUIRE(id.ok());
  DeviceEvent ev = d->wait();
  INFO(describe(ev));
  REQUIRE(ev.kind == EventKind::Exception);
  CHECK(ev.submission == *id);
  CHECK(ev.exception.cause == Cause::StoreFault);
  CHECK(ev.exception.pc == code + 4);
  CHECK(ev.exception.addr == kUnmapped + 4);
  CHECK(ev.exception.core == 0);
  CHECK(ev.exception.warp == 0);
  CHECK(ev.exception.lane == 0);

  for (int i = 0; i < 2; ++i) {
    DeviceEvent again = d->wait(i == 0 ? UINT64_MAX : 10);
    CHECK(again.kind == EventKind::Exception);
    CHECK(again.submission == *id);
    CHECK(again.exception == ev.exception);
  }
  d->abort();
  CHECK(d->wait().kind == EventKind::Idle);

  // The next workload runs normally.
  uint32_t good = place_code(*d, scaled_id_kernel(), kCode + 0x1000);
  uint32_t out = alloc_array(*d, 9);
  auto next = rt.launch_instances(InstancesLaunch{good, 9, {out, 2}, 0});
  REQUIRE(next.ok());
  require_completed(*d, *next);
  check_scaled_ids(*d, out, 9, 2);
}

TEST_CASE("a command that cannot execute gives CommandError naming the chunk and drops the buffer", "[driver]") {
  auto d = open_device();
  auto a = d->mem_alloc(64);
  REQUIRE(a.ok());
  SECTION("no entry point set") {
    CommandBufferBuilder b;
    b.store_imm64(*a, 5).run_instances(0, 4, {}).store_imm64(*a + 8, 6).finish();
    auto id = d->submit(b.bytes());
    REQUIRE(id.ok());
    DeviceEvent ev = d->wait();
    INFO(describe(ev));
    REQUIRE(ev.kind == EventKind::CommandError);
    CHECK(ev.submission == *id);
    CHECK_THAT(ev.message, Contains("chunk 2 (byte offset 16): RUN_INSTANCES with CMP_ENTRY_PT_FN 0"));
    // Commands before the failing one keep their effect; those after it never run.
    CHECK(get_words(*d, *a, 4) == std::vector<uint32_t>{5, 0, 0, 0});
  }
  SECTION("memory unmapped after submission") {
    CommandBufferBuilder b;
    b.store_imm64(*a, 5).finish();
    auto id = d->submit(b.bytes());
    REQUIRE(id.ok());
    REQUIRE(d->mem_free(*a).ok());
    DeviceEvent ev = d->wait();
    INFO(describe(ev));
    REQUIRE(ev.kind == EventKind::CommandError);
    CHECK(ev.submission == *id);
    CHECK_THAT(ev.message, Contains("chunk 0 (byte offset 0)") && Contains("not all mapped"));
  }
  CHECK(d->wait().kind == EventKind::Idle);
}

TEST_CASE("code the host rewrites between launches runs in its new form", "[driver]") {
  auto d = open_device();
  HostRuntime rt(*d);
  uint32_t out = alloc_array(*d, 4);
  // k(id, out, value): out[id] = value, then k'(id, out, value): out[id] = value + id.
  std::vector<uint32_t> first{slli(t0, a0, 2), rv::add(t0, t0, a1), rv::sw(a2, t0, 0), rv::ret()};
  std::vector<uint32_t> second{slli(t0, a0, 2), rv::add(t0, t0, a1), rv::add(t1, a2, a0), rv::sw(t1, t0, 0), rv::ret()};
  uint32_t code = place_code(*d, first);
  auto a = rt.launch_instances(InstancesLaunch{code, 4, {out, 50}, 0});
  REQUIRE(a.ok());
  require_completed(*d, *a);
  CHECK(get_words(*d, out, 4) == std::vector<uint32_t>{50, 50, 50, 50});
  put_words(*d, code, second);
  auto b = rt.launch_instances(InstancesLaunch{code, 4, {out, 70}, 0});
  REQUIRE(b.ok());
  require_completed(*d, *b);
  CHECK(get_words(*d, out, 4) == std::vector<uint32_t>{70, 71, 72, 73});
}

// --- 9. Exit code and console -------------------------------------------------------

TEST_CASE("a kernel storing to the exit-code word sets exit_code()", "[driver]") {
  auto d = open_device();
  HostRuntime rt(*d);
  CHECK(d->exit_code() == 0);
  uint32_t code = place_code(*d, {rv::li(t0, 7), rv::lui(t1, 0x8), rv::sw(t0, t1, 0x348), rv::ret()});
  auto id = rt.launch_instances(InstancesLaunch{code, 1, {}, 1});
  REQUIRE(id.ok());
  require_completed(*d, *id);
  CHECK(d->exit_code() == 7);
}

TEST_CASE("bytes written into hart 0's console ring come back from read_console", "[driver]") {
  auto d = open_device();
  HostRuntime rt(*d);
  // data[0][0..2] = "ok\n" at 0x240, then write index[0] = 3 at 0x40.
  uint32_t code =
      place_code(*d, {rv::li(t0, 'o'), sb(t0, zero, 0x240), rv::li(t0, 'k'), sb(t0, zero, 0x241), rv::li(t0, '\n'),
                      sb(t0, zero, 0x242), rv::li(t0, 3), rv::sw(t0, zero, 0x40), rv::ret()});
  auto id = rt.launch_instances(InstancesLaunch{code, 1, {}, 1});
  REQUIRE(id.ok());
  require_completed(*d, *id);
  auto chunks = d->read_console();
  REQUIRE(chunks.size() == 1);
  CHECK(chunks[0].slot == 0);
  CHECK(chunks[0].bytes == "ok\n");
  CHECK(chunks[0].lost == 0);
  CHECK(d->read_console().empty());  // drained once
}

// --- 10. Kernel images --------------------------------------------------------------

TEST_CASE("a .vxbin parses into one segment at its min vma spanning the whole range", "[driver]") {
  const std::vector<uint8_t> raw{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  auto img = parse_kernel_image(make_vxbin(0x80000000, 0x80000400, raw), "k.vxbin");
  INFO(error_of(img));
  REQUIRE(img.ok());
  CHECK_FALSE(img->is_elf);
  CHECK(img->path == "k.vxbin");
  CHECK(img->start_pc == 0x80000000u);
  CHECK(img->min_vma == 0x80000000u);
  CHECK(img->max_vma == 0x80000400u);
  REQUIRE(img->segments.size() == 1);
  CHECK(img->segments[0].vaddr == 0x80000000u);
  CHECK(img->segments[0].mem_size == 0x400u);
  CHECK(img->segments[0].bytes == raw);
  CHECK_FALSE(img->launch.has_value());
  CHECK_FALSE(img->main_addr.has_value());

  // Loading maps the whole range: the tail past the raw bytes reads as zero.
  auto d = open_device();
  HostRuntime rt(*d);
  REQUIRE(rt.load_image(*img).ok());
  auto words = get_words(*d, 0x80000000, 0x100);
  CHECK(words[0] == 0x04030201u);
  CHECK(words[2] == 0x00000a09u);
  CHECK(words[0xff] == 0u);
  // A second load of the same image overlaps the first.
  CHECK_THAT(error_of(rt.load_image(*img)), Contains("k.vxbin") && Contains("overlaps"));
}

TEST_CASE("malformed .vxbin images are rejected with a message naming the problem", "[driver]") {
  std::vector<uint8_t> short_file(10, 0);
  CHECK_THAT(error_of(parse_kernel_image(short_file, "a.vxbin")),
             Contains("a.vxbin") && Contains("16-byte header") && Contains("10 bytes"));
  CHECK_THAT(error_of(parse_kernel_image(make_vxbin(0x80001000, 0x80000000, {}), "b.vxbin")),
             Contains("b.vxbin") && Contains("is not above min vma"));
  CHECK_THAT(error_of(parse_kernel_image(make_vxbin(0x80000000, 0x80000000, {}), "c.vxbin")),
             Contains("is not above min vma"));
  CHECK_THAT(error_of(parse_kernel_image(make_vxbin(0x80000000, 0x80000004, std::vector<uint8_t>(8)), "d.vxbin")),
             Contains("holds 8 bytes") && Contains("has room for 4"));
  CHECK_THAT(error_of(parse_kernel_image(make_vxbin(0x1000, 0x2000, {}), "e.vxbin")), Contains("I/O region"));
  CHECK_THAT(error_of(parse_kernel_image(make_vxbin(0xFFFF0000, 0x100000010ull, {}), "f.vxbin")),
             Contains("32-bit address space"));
}

namespace {

// A VXSYMTAB footer (Vortex 3.0): string blob (NUL-separated names), 16-byte entries {u32 name offset, u16 length, u16
// pad, u64 pc}, u32 count, "VXSYMTAB".
std::vector<uint8_t> symtab_footer(const std::vector<std::pair<std::string, uint64_t>>& entries) {
  std::vector<uint8_t> blob, table;
  for (const auto& [name, pc] : entries) {
    uint16_t len = uint16_t(name.size()), pad = 0;
    if (!blob.empty()) blob.push_back(0);  // NUL-separated: the blob ends with the last name's bytes
    uint32_t off = uint32_t(blob.size());
    blob.insert(blob.end(), name.begin(), name.end());
    put_struct(table, table.size(), off);
    put_struct(table, table.size(), len);
    put_struct(table, table.size(), pad);
    put_struct(table, table.size(), pc);
  }
  std::vector<uint8_t> f = blob;
  f.insert(f.end(), table.begin(), table.end());
  put_struct(f, f.size(), uint32_t(entries.size()));
  for (char c : std::string("VXSYMTAB")) f.push_back(uint8_t(c));
  return f;
}

std::vector<uint8_t> with_footer(std::vector<uint8_t> vxbin, const std::vector<uint8_t>& footer) {
  vxbin.insert(vxbin.end(), footer.begin(), footer.end());
  return vxbin;
}

}  // namespace

TEST_CASE("a .vxbin's VXSYMTAB footer names kernel entries and is not part of the loaded bytes", "[driver]") {
  const auto raw = to_bytes(grid_image_words());
  auto bytes = with_footer(make_vxbin(kCode, kCode + 0x1000, raw),
                           symtab_footer({{"sum", kCode + kKernelOffset}, {"main", kCode + 8}}));
  auto img = parse_kernel_image(bytes, "k.vxbin");
  INFO(error_of(img));
  REQUIRE(img.ok());
  CHECK(img->has_symtab);
  REQUIRE(img->entries.size() == 2);
  CHECK(img->entries[0] == KernelEntry{"sum", kCode + kKernelOffset});
  CHECK(img->entries[1] == KernelEntry{"main", kCode + 8});
  CHECK(img->segments[0].bytes == raw);
  CHECK(vxbin_entry(*img, "sum").value() == kCode + kKernelOffset);
  CHECK_THAT(error_of(vxbin_entry(*img, "nope")), Contains("no kernel \"nope\"") && Contains("sum, main"));
  // Two entries: the launch takes "main".
  auto l = resolve_grid_launch(*img, DeviceConfig{}, {});
  REQUIRE(l.ok());
  CHECK(l->start_pc == kCode);
  CHECK(l->entry_pc == kCode + 8);
}

TEST_CASE("a .vxbin launches at its min vma, with the entry its footer names", "[driver]") {
  DeviceConfig cfg{1, 2, 4, 4};
  {
    // No footer: the CTA entry is the min vma ("main"), in the legacy shape.
    auto img = parse_kernel_image(make_vxbin(kCode, kCode + 0x1000, to_bytes(grid_image_words())), "a.vxbin");
    REQUIRE(img.ok());
    CHECK_FALSE(img->has_symtab);
    auto l = resolve_grid_launch(*img, cfg, {});
    INFO(error_of(l));
    REQUIRE(l.ok());
    CHECK(l->start_pc == kCode);
    CHECK(l->entry_pc == kCode);
    CHECK(l->grid == std::array<uint32_t, 3>{2, 1, 1});
    CHECK(l->block == std::array<uint32_t, 3>{4, 1, 1});
    CHECK(vxbin_entry(*img, "main").value() == kCode);
    CHECK_THAT(error_of(vxbin_entry(*img, "sum")), Contains("no VXSYMTAB footer"));
  }
  // One footer entry: the launch runs it.
  auto d = open_device(cfg);
  HostRuntime rt(*d);
  auto img = parse_kernel_image(with_footer(make_vxbin(kCode, kCode + 0x1000, to_bytes(grid_image_words())),
                                            symtab_footer({{"global_index", kCode + kKernelOffset}})),
                                "b.vxbin");
  INFO(error_of(img));
  REQUIRE(img.ok());
  REQUIRE(rt.load_image(*img).ok());
  uint32_t out = alloc_array(*d, 3 * 8);
  LaunchOverrides o;
  o.arg = out;
  o.grid = std::array<uint32_t, 3>{3, 1, 1};
  o.block = std::array<uint32_t, 3>{8, 1, 1};
  auto l = resolve_grid_launch(*img, cfg, o);
  INFO(error_of(l));
  REQUIRE(l.ok());
  CHECK(l->entry_pc == kCode + kKernelOffset);
  auto id = rt.launch_grid(*l);
  REQUIRE(id.ok());
  require_completed(*d, *id);
  auto got = get_words(*d, out, 3 * 8);
  for (uint32_t i = 0; i < 3 * 8; ++i) CHECK(got[i] == i);
  // Several entries and none is "main": the launch needs a choice.
  auto two = parse_kernel_image(
      with_footer(make_vxbin(kCode, kCode + 0x1000, {}), symtab_footer({{"a", kCode}, {"b", kCode + 4}})), "c.vxbin");
  REQUIRE(two.ok());
  CHECK_THAT(error_of(resolve_grid_launch(*two, cfg, {})), Contains("a, b") && Contains("--entry"));
}

TEST_CASE("malformed VXSYMTAB footers are rejected with a message naming the problem", "[driver]") {
  auto base = make_vxbin(kCode, kCode + 0x100, {1, 2, 3, 4});
  auto count_too_big = with_footer(base, symtab_footer({{"k", kCode}}));
  count_too_big[count_too_big.size() - 12] = 200;
  CHECK_THAT(error_of(parse_kernel_image(count_too_big, "a.vxbin")),
             Contains("a.vxbin: VXSYMTAB footer") && Contains("200 entries"));
  CHECK_THAT(error_of(parse_kernel_image(with_footer(base, symtab_footer({{"k", kCode + 0x100}})), "b.vxbin")),
             Contains("entry 0 (\"k\")") && Contains("outside the image"));
  CHECK_THAT(error_of(parse_kernel_image(with_footer(base, symtab_footer({{"k", kCode + 2}})), "c.vxbin")),
             Contains("not word aligned"));
  CHECK_THAT(error_of(parse_kernel_image(with_footer(base, symtab_footer({{"", kCode}})), "d.vxbin")),
             Contains("the name is empty"));
  auto blob_too_big = with_footer(base, symtab_footer({{"k", kCode}}));
  blob_too_big[blob_too_big.size() - 12 - 16] = 0xf0;  // the name offset
  CHECK_THAT(error_of(parse_kernel_image(blob_too_big, "e.vxbin")), Contains("string blob"));
}

TEST_CASE("legacy thread-local storage past the image is mapped for every hart", "[driver]") {
  KernelImage img;
  img.path = "tls.elf";
  img.is_elf = true;
  img.min_vma = kCode;
  img.max_vma = kCode + 0x1000;
  img.segments.push_back(ImageSegment{kCode, 0x1000, {}});
  CHECK_FALSE(tls_area(img, 128).has_value());  // no TLS
  img.tls_bytes = 200;
  img.tls_stride = 200;
  img.end_symbol = kCode + 0xff0;
  auto area = tls_area(img, 128);
  REQUIRE(area.has_value());
  CHECK(area->first == kCode + 0x1000);
  CHECK(area->second == uint64_t(kCode) + 0xff0 + 63 + 127 * 200 + 200);
  DeviceConfig cfg{1, 2, 8, 8};
  auto d = open_device(cfg);
  HostRuntime rt(*d);
  REQUIRE(rt.load_image(img).ok());
  // The last hart's block is writable (it would fault past the image's own page without the area).
  const uint32_t last = kCode + 0xff0 + 63 + 127 * 200;
  std::vector<uint8_t> block(200, 0xab);
  CHECK(d->copy_to_device(last, block).ok());
  CHECK_FALSE(d->copy_to_device(uint32_t(area->second + 0x1000), block).ok());
}

TEST_CASE("a minimal ELF32 RISC-V executable parses into its segment", "[driver]") {
  ElfOptions eo;
  eo.code = {rv::li(a0, 1), rv::ret()};
  eo.bss = 24;
  auto bytes = make_elf(eo);
  auto img = parse_kernel_image(bytes, "min.elf");
  INFO(error_of(img));
  REQUIRE(img.ok());
  CHECK(img->is_elf);
  CHECK(img->start_pc == kCode);
  CHECK(img->min_vma == kCode);
  CHECK(img->max_vma == kCode + 8 + 24);
  REQUIRE(img->segments.size() == 1);
  CHECK(img->segments[0].vaddr == kCode);
  CHECK(img->segments[0].mem_size == 32u);
  CHECK(img->segments[0].bytes == to_bytes(eo.code));
  CHECK_FALSE(img->launch.has_value());
  CHECK_FALSE(img->main_addr.has_value());
  // The content hash follows the bytes.
  auto changed = bytes;
  changed[kSegOffset] ^= 1;
  auto img2 = parse_kernel_image(changed, "min.elf");
  REQUIRE(img2.ok());
  CHECK(img2->hash != img->hash);
}

TEST_CASE("an ELF's main symbol and __vx_launch descriptor are read", "[driver]") {
  ElfOptions eo;
  eo.code = {rv::ret()};
  eo.main_symbol = true;
  eo.descriptor = descriptor_words(0x80000100, 0x20000, {3, 2, 1}, {8, 1, 1}, 128);
  auto img = parse_kernel_image(make_elf(eo), "sym.elf");
  INFO(error_of(img));
  REQUIRE(img.ok());
  REQUIRE(img->main_addr.has_value());
  CHECK(*img->main_addr == kCode);
  REQUIRE(img->launch.has_value());
  CHECK(img->launch->entry == 0x80000100u);
  CHECK(img->launch->arg == 0x20000u);
  CHECK(img->launch->grid == std::array<uint32_t, 3>{3, 2, 1});
  CHECK(img->launch->block == std::array<uint32_t, 3>{8, 1, 1});
  CHECK(img->launch->lmem == 128u);

  auto bad_magic = eo;
  bad_magic.descriptor[0] = 0x12345678;
  CHECK_THAT(error_of(parse_kernel_image(make_elf(bad_magic), "m.elf")), Contains("bad magic number 0x12345678"));
  auto bad_version = eo;
  bad_version.descriptor[1] = 2;
  CHECK_THAT(error_of(parse_kernel_image(make_elf(bad_version), "v.elf")), Contains("version 2 is not supported"));
}

TEST_CASE("ELF images that are not RV32 executables or are truncated are rejected clearly", "[driver]") {
  ElfOptions eo;
  eo.code = {rv::ret()};
  const auto good = make_elf(eo);

  auto x86 = good;
  Elf32_Ehdr eh;
  std::memcpy(&eh, x86.data(), sizeof eh);
  eh.e_machine = EM_386;
  std::memcpy(x86.data(), &eh, sizeof eh);
  CHECK_THAT(error_of(parse_kernel_image(x86, "x86.elf")), Contains("x86.elf") && Contains("not RISC-V"));

  auto past_end = good;
  Elf32_Phdr ph;
  std::memcpy(&ph, past_end.data() + sizeof(Elf32_Ehdr), sizeof ph);
  ph.p_filesz = ph.p_memsz = 0x10000;
  std::memcpy(past_end.data() + sizeof(Elf32_Ehdr), &ph, sizeof ph);
  CHECK_THAT(error_of(parse_kernel_image(past_end, "long.elf")),
             Contains("program header 0") && Contains("runs past the end of the file"));

  auto relocatable = good;
  std::memcpy(&eh, relocatable.data(), sizeof eh);
  eh.e_type = ET_REL;
  std::memcpy(relocatable.data(), &eh, sizeof eh);
  CHECK_THAT(error_of(parse_kernel_image(relocatable, "rel.elf")), Contains("not an executable"));

  Elf64_Ehdr e64{};
  std::memcpy(e64.e_ident, ELFMAG, SELFMAG);
  e64.e_ident[EI_CLASS] = ELFCLASS64;
  e64.e_ident[EI_DATA] = ELFDATA2LSB;
  e64.e_ident[EI_VERSION] = EV_CURRENT;
  e64.e_type = ET_EXEC;
  e64.e_machine = EM_RISCV;
  e64.e_version = EV_CURRENT;
  e64.e_ehsize = sizeof e64;
  std::vector<uint8_t> elf64(sizeof e64);
  std::memcpy(elf64.data(), &e64, sizeof e64);
  CHECK_THAT(error_of(parse_kernel_image(elf64, "k64.elf")), Contains("not 32-bit"));

  std::vector<uint8_t> bad_class(good.begin(), good.begin() + 64);
  bad_class[EI_CLASS] = 0x7f;
  CHECK_THAT(error_of(parse_kernel_image(bad_class, "junk.elf")), Contains("not a valid ELF file"));

  std::vector<uint8_t> truncated(good.begin(), good.begin() + 40);
  auto t = parse_kernel_image(truncated, "cut.elf");
  REQUIRE_FALSE(t.ok());
  CHECK_THAT(t.error().message, Contains("cut.elf") && Contains("ELF"));
}

// --- resolve_grid_launch -----------------------------------------------------------

TEST_CASE("resolve_grid_launch takes the descriptor's shape, then the overrides", "[driver]") {
  KernelImage img;
  img.path = "k.elf";
  img.start_pc = kCode;
  img.launch = LaunchDescriptor{0x80000100, 0x20000, {3, 2, 1}, {8, 1, 1}, 128};
  DeviceConfig cfg;
  auto l = resolve_grid_launch(img, cfg, {});
  INFO(error_of(l));
  REQUIRE(l.ok());
  CHECK(l->start_pc == kCode);
  CHECK(l->entry_pc == 0x80000100u);
  CHECK(l->arg_ptr == 0x20000u);
  CHECK(l->grid == std::array<uint32_t, 3>{3, 2, 1});
  CHECK(l->block == std::array<uint32_t, 3>{8, 1, 1});
  CHECK(l->lmem_bytes == 128u);
  CHECK(l->cluster == std::array<uint32_t, 3>{1, 1, 1});

  LaunchOverrides o;
  o.grid = std::array<uint32_t, 3>{9, 1, 1};
  o.block = std::array<uint32_t, 3>{4, 2, 1};
  o.entry = 0x80000200;
  o.arg = 0x30000;
  o.lmem = 0;
  auto l2 = resolve_grid_launch(img, cfg, o);
  REQUIRE(l2.ok());
  CHECK(l2->entry_pc == 0x80000200u);
  CHECK(l2->arg_ptr == 0x30000u);
  CHECK(l2->grid == std::array<uint32_t, 3>{9, 1, 1});
  CHECK(l2->block == std::array<uint32_t, 3>{4, 2, 1});
  CHECK(l2->lmem_bytes == 0u);
  CHECK(l2->start_pc == kCode);
}

TEST_CASE("resolve_grid_launch of a legacy main runs one CTA of NT threads per core", "[driver]") {
  KernelImage img;
  img.path = "legacy.elf";
  img.start_pc = kCode;
  img.main_addr = kCode + 0x40;
  DeviceConfig cfg{2, 3, 4, 8};
  auto l = resolve_grid_launch(img, cfg, {});
  INFO(error_of(l));
  REQUIRE(l.ok());
  CHECK(l->entry_pc == kCode + 0x40);
  CHECK(l->grid == std::array<uint32_t, 3>{6, 1, 1});
  CHECK(l->block == std::array<uint32_t, 3>{8, 1, 1});
  CHECK(l->arg_ptr == 0u);
  // A descriptor without an entry still supplies the argument pointer.
  img.launch = LaunchDescriptor{0, 0x40000, {1, 1, 1}, {1, 1, 1}, 0};
  auto l2 = resolve_grid_launch(img, cfg, {});
  REQUIRE(l2.ok());
  CHECK(l2->entry_pc == kCode + 0x40);
  CHECK(l2->arg_ptr == 0x40000u);
  CHECK(l2->grid == std::array<uint32_t, 3>{6, 1, 1});
}

TEST_CASE("resolve_grid_launch fails without a kernel and for blocks that do not fit", "[driver]") {
  KernelImage img;
  img.path = "none.elf";
  img.is_elf = true;
  img.start_pc = kCode;
  DeviceConfig cfg;
  CHECK_THAT(error_of(resolve_grid_launch(img, cfg, {})), Contains("none.elf") && Contains("names no kernel"));
  // An explicit entry is enough.
  LaunchOverrides o;
  o.entry = kCode;
  auto l = resolve_grid_launch(img, cfg, o);
  REQUIRE(l.ok());
  CHECK(l->grid == std::array<uint32_t, 3>{1, 1, 1});
  CHECK(l->block == std::array<uint32_t, 3>{1, 1, 1});

  o.block = std::array<uint32_t, 3>{17, 1, 1};
  CHECK_THAT(error_of(resolve_grid_launch(img, cfg, o)),
             Contains("17 threads") && Contains("needs 5 warps") && Contains("has 4"));
  o.block = std::array<uint32_t, 3>{4, 0, 1};
  CHECK_THAT(error_of(resolve_grid_launch(img, cfg, o)), Contains("0 threads"));
  o.block = std::array<uint32_t, 3>{16, 1, 1};
  CHECK(resolve_grid_launch(img, cfg, o).ok());  // exactly one core's worth
  o.lmem = cfg.local_mem_bytes + 64;
  CHECK_THAT(error_of(resolve_grid_launch(img, cfg, o)), Contains("local memory"));
}

// libelf clamps e_phnum to the headers present: a 60-byte prefix of a
// one-segment ELF (program header table at 52..84 cut after 8 bytes) must name
// the truncated program headers, not claim the image has no loadable segments.
TEST_CASE("an ELF cut inside its program header table is reported as truncated", "[driver]") {
  ElfOptions eo;
  eo.code = {rv::ret()};
  const auto good = make_elf(eo);
  std::vector<uint8_t> cut(good.begin(), good.begin() + 60);
  auto r = parse_kernel_image(cut, "cut.elf");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Contains("program header"));
}

// libelf sees no sections in a file whose section header table is cut off: the
// image would silently lose __vx_launch and main.
TEST_CASE("an ELF cut inside its section header table is rejected, not stripped of its symbols", "[driver]") {
  ElfOptions eo;
  eo.code = {rv::ret()};
  eo.main_symbol = true;
  eo.descriptor = descriptor_words(kCode, 0, {1, 1, 1}, {4, 1, 1}, 0);
  const auto good = make_elf(eo);
  REQUIRE(parse_kernel_image(good, "whole.elf").ok());
  std::vector<uint8_t> cut(good.begin(), good.end() - 1);
  auto r = parse_kernel_image(cut, "cut.elf");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Contains("section header"));
}

TEST_CASE("the KMU's CLUSTER_DIM DCRs give the next launch's clusters", "[driver]") {
  DeviceConfig cfg{1, 2, 4, 4};
  auto img = parse_kernel_image(make_vxbin(kCode, kCode + 0x1000, to_bytes(grid_image_words())), "a.vxbin");
  REQUIRE(img.ok());
  DcrFile dcrs;
  // Unset: one CTA per cluster.
  auto plain = resolve_grid_launch(*img, cfg, dcrs.kmu_overrides());
  REQUIRE(plain.ok());
  CHECK(plain->cluster == std::array<uint32_t, 3>{1, 1, 1});
  REQUIRE(dcrs.write(dcr::kGridDimX, 6).ok());
  REQUIRE(dcrs.write(dcr::kClusterDimX, 3).ok());
  auto l = resolve_grid_launch(*img, cfg, dcrs.kmu_overrides());
  INFO(error_of(l));
  REQUIRE(l.ok());
  CHECK(l->cluster == std::array<uint32_t, 3>{3, 1, 1});
  CHECK(l->grid == std::array<uint32_t, 3>{6, 1, 1});
  // A grid that is not a whole number of clusters is refused before anything is queued.
  REQUIRE(dcrs.write(dcr::kClusterDimX, 4).ok());
  CHECK_THAT(error_of(resolve_grid_launch(*img, cfg, dcrs.kmu_overrides())),
             Contains("cluster 4,1,1") && Contains("grid 6,1,1 is not a whole number of clusters in x"));
  REQUIRE(dcrs.write(dcr::kClusterDimX + 1, 0).ok());
  REQUIRE(dcrs.write(dcr::kClusterDimX, 2).ok());
  CHECK_THAT(error_of(resolve_grid_launch(*img, cfg, dcrs.kmu_overrides())), Contains("in y"));
}
