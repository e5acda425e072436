// Tests of the symbol services on the example kernels. Expected values come
// from what the test can check independently: source lines are found by their
// text in examples/*.c, calls and prologues by decoding the kernel's own code,
// the code range from its program headers. No address or line number is
// copied from a build.
#include "engine/symbols.hpp"

#include <elf.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>
#include "base/hex.hpp"

using namespace vx;
using namespace vx::engine;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {

const std::string kExamplesDir = VX_EXAMPLES_DIR;
const std::string kSourceDir = VX_SOURCE_DIR;
const std::vector<std::string> kKernels = {"vecadd", "sgemm", "reduce", "diverge", "histogram",
                                           "racy",   "fault", "assert", "hang",    "hello"};

std::string elf_path(const std::string& name) { return kExamplesDir + "/" + name + ".elf"; }

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// The number of the one line of the source file (relative to the project)
// that contains `text`.
uint32_t line_of(const std::string& rel, const std::string& text) {
  const auto lines = read_lines(kSourceDir + "/" + rel);
  uint32_t found = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(text) == std::string::npos) continue;
    INFO(rel << " has \"" << text << "\" twice");
    REQUIRE(found == 0);
    found = uint32_t(i + 1);
  }
  INFO(rel << " has no \"" << text << "\"");
  REQUIRE(found != 0);
  return found;
}

// The kernels are loaded once per test binary.
const Symbols& kernel(const std::string& name) {
  static std::map<std::string, Symbols> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) {
    auto s = Symbols::load(elf_path(name));
    INFO((s ? "" : s.error().message));
    REQUIRE(s.ok());
    it = loaded.emplace(name, std::move(s).value()).first;
  }
  return it->second;
}

// The raw image, read with <elf.h> only: code words and program headers.
struct Image {
  std::vector<char> bytes;
  explicit Image(const std::string& path) : bytes(read_bytes(path)) {}
  const Elf32_Ehdr& eh() const { return *reinterpret_cast<const Elf32_Ehdr*>(bytes.data()); }
  const Elf32_Phdr& ph(int i) const {
    return *reinterpret_cast<const Elf32_Phdr*>(bytes.data() + eh().e_phoff + i * eh().e_phentsize);
  }
  Elf32_Shdr& sh(int i) { return *reinterpret_cast<Elf32_Shdr*>(bytes.data() + eh().e_shoff + i * eh().e_shentsize); }
  char* section_name(int i) { return bytes.data() + sh(eh().e_shstrndx).sh_offset + sh(i).sh_name; }
  const Elf32_Phdr& code() const {
    for (int i = 0; i < eh().e_phnum; ++i) {
      if (ph(i).p_type == PT_LOAD && (ph(i).p_flags & PF_X)) return ph(i);
    }
    FAIL("no executable segment");
    return ph(0);
  }
  uint32_t word(uint32_t addr) const {
    const Elf32_Phdr& c = code();
    REQUIRE(addr >= c.p_vaddr);
    REQUIRE(addr + 4 <= c.p_vaddr + c.p_filesz);
    uint32_t w;
    std::memcpy(&w, bytes.data() + c.p_offset + (addr - c.p_vaddr), 4);
    return w;
  }
};

int32_t sext(uint32_t v, int bits) { return int32_t(v << (32 - bits)) >> (32 - bits); }

// Does the function start by allocating a stack frame (addi sp, sp, -N)?
bool has_prologue(const Image& img, uint32_t lo) {
  const uint32_t w = img.word(lo);
  return (w & 0x000fffff) == 0x00010113 && sext(w >> 20, 12) < 0;
}

// The return addresses of the calls in [lo, hi) to `target`: `jal ra` or `auipc ra; jalr ra`.
std::vector<uint32_t> calls_to(const Image& img, uint32_t lo, uint32_t hi, uint32_t target) {
  std::vector<uint32_t> ret;
  for (uint32_t pc = lo; pc + 4 <= hi; pc += 4) {
    const uint32_t w = img.word(pc);
    if ((w & 0xfff) == 0x0ef) {  // jal ra
      const uint32_t imm =
          ((w >> 31) << 20) | (((w >> 12) & 0xff) << 12) | (((w >> 20) & 1) << 11) | (((w >> 21) & 0x3ff) << 1);
      if (pc + uint32_t(sext(imm, 21)) == target) ret.push_back(pc + 4);
    }
    if ((w & 0xfff) == 0x097 && pc + 8 <= hi) {  // auipc ra
      const uint32_t next = img.word(pc + 4);
      if ((next & 0xfffff) == 0x080e7 && pc + (w & 0xfffff000) + uint32_t(sext(next >> 20, 12)) == target) {
        ret.push_back(pc + 8);
      }
    }
  }
  return ret;
}

// The offset from sp where the function's prologue saves ra (`sw ra, N(sp)`).
int32_t ra_slot(const Image& img, uint32_t lo, uint32_t hi) {
  for (uint32_t pc = lo; pc < hi; pc += 4) {
    const uint32_t w = img.word(pc);
    if ((w & 0x01fff07f) == 0x00112023) return sext(((w >> 25) << 5) | ((w >> 7) & 0x1f), 12);
  }
  FAIL("no sw ra in [" << hex_short(lo) << ", " << hex_short(hi) << ")");
  return 0;
}

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& name, const std::vector<char>& bytes)
      : path((std::filesystem::temp_directory_path() / ("vx_symbols_test_" + std::to_string(getpid()) + "_" + name))
                 .string()) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    REQUIRE(out);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() { std::filesystem::remove(path); }
};

std::string load_error(const std::string& path) {
  auto s = Symbols::load(path);
  REQUIRE_FALSE(s.ok());
  return s.error().message;
}

std::string resolve_error(const Symbols& s, const std::string& loc) {
  auto r = s.resolve(loc);
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

}  // namespace

TEST_CASE("every example kernel loads with debug info and its entry function", "[symbols]") {
  for (const std::string& name : kKernels) {
    INFO(name);
    const Symbols& s = kernel(name);
    CHECK(s.has_debug_info());
    const std::string entry = name == "assert" ? "assert_kernel" : name;
    const auto addr = s.symbol_address(entry);
    REQUIRE(addr);
    const auto fn = s.function_at(*addr);
    REQUIRE(fn);
    CHECK(fn->name == entry);
    CHECK(fn->lo == *addr);
    CHECK(fn->hi > fn->lo);
  }
}

TEST_CASE("function breakpoints land after the prologue, inside the function", "[symbols]") {
  for (const std::string& name : kKernels) {
    const Symbols& s = kernel(name);
    const Image img(elf_path(name));
    const std::string entry = name == "assert" ? "assert_kernel" : name;
    for (const std::string& fn : {entry, std::string("vx_printf"), std::string("printf_lane"), std::string("memcpy"),
                                  std::string("memmove"), std::string("vx_assert_fail")}) {
      INFO(name << ": " << fn);
      auto r = s.resolve(fn);
      INFO((r ? "" : r.error().message));
      REQUIRE(r.ok());
      REQUIRE(r->addresses.size() == 1);
      const uint32_t addr = r->addresses[0];
      const auto f = s.function_at(addr);
      REQUIRE(f);
      CHECK(f->name == fn);
      CHECK(addr >= f->lo);
      CHECK(addr < f->hi);
      if (has_prologue(img, f->lo)) CHECK(addr > f->lo);
      const auto loc = s.locate(addr);
      REQUIRE(loc);
      CHECK(loc->line > 0);
      REQUIRE(r->where);
      CHECK(r->where->line == loc->line);
      CHECK(r->where->file == loc->file);
    }
  }
}

TEST_CASE("a kernel function's breakpoint stops on the kernel's own source, not in an inlined runtime helper",
          "[symbols]") {
  for (const std::string& name : kKernels) {
    const Symbols& s = kernel(name);
    const std::string entry = name == "assert" ? "assert_kernel" : name;
    INFO(name);
    auto r = s.resolve(entry);
    REQUIRE(r.ok());
    for (uint32_t addr : r->addresses) {
      const auto loc = s.locate(addr);
      REQUIRE(loc);
      CHECK(loc->function == entry);
      CHECK_THAT(loc->file, EndsWith("/examples/" + name + ".c"));
    }
  }
}

TEST_CASE("function breakpoints: locations, prologues, assembly, inlining", "[symbols]") {
  SECTION("the location names the function and its file") {
    const Symbols& s = kernel("reduce");
    for (const char* fn : {"vx_printf", "printf_lane"}) {
      INFO(fn);
      auto r = s.resolve(fn);
      REQUIRE(r.ok());
      const auto loc = s.locate(r->addresses[0]);
      REQUIRE(loc);
      CHECK(loc->function == fn);
      CHECK_THAT(loc->file, EndsWith("/examples/runtime/vx_print.c"));
      CHECK(s.source_line(loc->file, loc->line));
    }
  }

  SECTION("a function without a prologue stops at its entry") {
    const Symbols& s = kernel("reduce");
    const Image img(elf_path("reduce"));
    const auto memcpy_addr = s.symbol_address("memcpy");
    REQUIRE(memcpy_addr);
    REQUIRE_FALSE(has_prologue(img, *memcpy_addr));
    auto r = s.resolve("memcpy");
    REQUIRE(r.ok());
    CHECK(r->addresses == std::vector<uint32_t>{*memcpy_addr});
  }

  SECTION("assembly functions stop at their first instruction") {
    const Symbols& s = kernel("reduce");
    for (const char* fn : {"_start", "vx_serial"}) {
      INFO(fn);
      auto r = s.resolve(fn);
      REQUIRE(r.ok());
      CHECK(r->addresses == std::vector<uint32_t>{*s.symbol_address(fn)});
      REQUIRE(r->where);
      CHECK_THAT(r->where->file, EndsWith("/examples/runtime/start.S"));
      CHECK(r->where->function == fn);
    }
  }

  SECTION("an inlined function stops at every inlined copy") {
    const Symbols& s = kernel("reduce");
    auto r = s.resolve("warp_sum");  // static inline, called twice by reduce
    REQUIRE(r.ok());
    CHECK(r->addresses.size() == 2);
    for (uint32_t a : r->addresses) {
      const auto f = s.function_at(a);
      REQUIRE(f);
      CHECK(f->name == "reduce");
    }
  }

  SECTION("unknown functions") {
    CHECK(resolve_error(kernel("vecadd"), "foo") == "no function named \"foo\" in vecadd.elf");
    CHECK(resolve_error(kernel("vecadd"), "  ") == "empty location: expected FUNCTION, FILE:LINE or *ADDRESS");
  }
}

TEST_CASE("file:line breakpoints", "[symbols]") {
  const Symbols& s = kernel("reduce");
  const uint32_t line = line_of("examples/reduce.c", "vx_fail(count != popcount32(ballot));");
  const auto reduce_fn = s.function_at(*s.symbol_address("reduce"));
  REQUIRE(reduce_fn);

  SECTION("a line with code, named by basename, path suffix or full path") {
    auto r = s.resolve("reduce.c:" + std::to_string(line));
    REQUIRE(r.ok());
    REQUIRE_FALSE(r->addresses.empty());
    CHECK(std::is_sorted(r->addresses.begin(), r->addresses.end()));
    REQUIRE(r->where);
    CHECK(r->where->line == line);
    CHECK_THAT(r->where->file, EndsWith("/examples/reduce.c"));
    for (uint32_t a : r->addresses) {
      INFO(hex_short(a));
      const auto loc = s.locate(a);
      REQUIRE(loc);
      CHECK(loc->line == line);
      CHECK(loc->file == r->where->file);
      CHECK(a >= reduce_fn->lo);
      CHECK(a < reduce_fn->hi);
    }
    CHECK(s.source_line(r->where->file, line) == read_lines(kSourceDir + "/examples/reduce.c")[line - 1]);

    for (const std::string& spec : {std::string("examples/reduce.c"), kSourceDir + "/examples/reduce.c"}) {
      auto same = s.resolve(spec + ":" + std::to_string(line));
      REQUIRE(same.ok());
      CHECK(same->addresses == r->addresses);
    }
  }

  SECTION("a line without code moves to the next line with code") {
    const uint32_t comment = line_of("examples/reduce.c", "// Lane 0 recounts its warp's odd values");
    const uint32_t next_stmt = line_of("examples/reduce.c", "uint32_t first = rank * nt;");
    auto r = s.resolve("reduce.c:" + std::to_string(comment));
    REQUIRE(r.ok());
    REQUIRE(r->where);
    CHECK(r->where->line > comment);
    CHECK(r->where->line <= next_stmt);
    for (uint32_t a : r->addresses) CHECK(s.locate(a)->line == r->where->line);
  }

  SECTION("a header line stops in every inlined copy") {
    const uint32_t hline = line_of("examples/runtime/vx_intrinsics.h", "VX_INLINE uint32_t vx_shfl_down(");
    auto r = s.resolve("vx_intrinsics.h:" + std::to_string(hline));
    REQUIRE(r.ok());
    CHECK(r->addresses.size() >= 2);  // warp_sum, with its shuffle, is inlined twice
    for (uint32_t a : r->addresses) {
      const auto loc = s.locate(a);
      REQUIRE(loc);
      CHECK(loc->line == hline);
      CHECK_THAT(loc->file, EndsWith("/examples/runtime/vx_intrinsics.h"));
      CHECK(loc->function == "vx_shfl_down");
    }
  }

  SECTION("errors") {
    const std::string past = resolve_error(s, "reduce.c:100000");
    CHECK_THAT(past, StartsWith("line 100000 is past the end of reduce.c (it has code up to line "));
    const uint32_t last = uint32_t(std::stoul(past.substr(past.rfind(' ') + 1)));
    CHECK(last <= read_lines(kSourceDir + "/examples/reduce.c").size());
    CHECK(s.resolve("reduce.c:" + std::to_string(last)).ok());

    CHECK(resolve_error(s, "nosuch.c:3") == "no source file named \"nosuch.c\" in reduce.elf");
    CHECK(resolve_error(s, "educe.c:3") == "no source file named \"educe.c\" in reduce.elf");
    CHECK(resolve_error(s, "reduce.c:abc") == "invalid line number \"abc\" in \"reduce.c:abc\"");
    CHECK_THAT(resolve_error(s, "reduce.c:0"), StartsWith("line numbers start at 1"));
    CHECK_THAT(resolve_error(s, ":3"), StartsWith("no file name"));
  }
}

TEST_CASE("address breakpoints", "[symbols]") {
  const Symbols& s = kernel("reduce");
  const Image img(elf_path("reduce"));
  const uint32_t reduce_lo = *s.symbol_address("reduce");

  auto r = s.resolve("*" + hex_short(reduce_lo + 8));
  REQUIRE(r.ok());
  CHECK(r->addresses == std::vector<uint32_t>{reduce_lo + 8});
  REQUIRE(r->where);
  CHECK(r->where->line == s.locate(reduce_lo + 8)->line);

  auto dec = s.resolve("*" + std::to_string(reduce_lo + 8));
  REQUIRE(dec.ok());
  CHECK(dec->addresses == r->addresses);

  const Elf32_Phdr& code = img.code();
  CHECK(resolve_error(s, "*0x12") == "address 0x12 is not in the kernel's code (" + hex_short(code.p_vaddr) + ".." +
                                         hex_short(code.p_vaddr + code.p_memsz) + ")");
  CHECK_THAT(resolve_error(s, "*" + hex_short(code.p_vaddr + code.p_memsz)), StartsWith("address "));
  CHECK(resolve_error(s, "*" + hex_short(reduce_lo + 2)) ==
        "address " + hex_short(reduce_lo + 2) + " is not aligned to an instruction (4 bytes)");
  CHECK_THAT(resolve_error(s, "*0xzz"), StartsWith("invalid address \"*0xzz\""));
  CHECK_THAT(resolve_error(s, "*99999999999"), StartsWith("invalid address"));
  CHECK_THAT(resolve_error(s, "*"), StartsWith("invalid address"));
}

TEST_CASE("locate, line_range, function_at, describe, symbol_address", "[symbols]") {
  const Symbols& s = kernel("reduce");
  const auto f = s.function_at(*s.symbol_address("reduce"));
  REQUIRE(f);

  SECTION("line ranges hold the pc and one line, and are as long as they can be") {
    for (uint32_t pc = f->lo; pc < f->hi; pc += 4) {
      INFO(hex_short(pc));
      const auto loc = s.locate(pc);
      const auto range = s.line_range(pc);
      REQUIRE(loc);
      REQUIRE(range);
      CHECK(range->first <= pc);
      CHECK(pc < range->second);
      for (uint32_t a = range->first; a < range->second; a += 4) {
        const auto in = s.locate(a);
        REQUIRE(in);
        CHECK(in->line == loc->line);
        CHECK(in->file == loc->file);
      }
      const auto before = s.locate(range->first - 4);
      const auto after = s.locate(range->second);
      CHECK((!before || before->line != loc->line || before->file != loc->file));
      CHECK((!after || after->line != loc->line || after->file != loc->file));
    }
  }

  SECTION("functions, symbols and descriptions") {
    CHECK(s.function_at(f->hi - 4)->name == "reduce");
    CHECK_FALSE(s.function_at(0x10));
    CHECK_FALSE(s.locate(0x10));
    CHECK_FALSE(s.line_range(0x10));
    CHECK(s.describe(f->lo) == "reduce+0");
    CHECK(s.describe(f->lo + 8) == "reduce+8");
    CHECK_FALSE(s.describe(0x10));
    const auto dispatch = s.symbol_address("vx_dispatch");  // a label inside _start
    REQUIRE(dispatch);
    CHECK(s.function_at(*dispatch)->name == "_start");
    CHECK(s.describe(*dispatch + 4) == "vx_dispatch+4");
    const auto launch = s.symbol_address("__vx_launch");  // an object
    REQUIRE(launch);
    CHECK(s.describe(*launch + 4) == "__vx_launch+4");
    CHECK_FALSE(s.symbol_address("no_such_symbol"));
  }

  SECTION("source lines") {
    const auto loc = s.locate(f->lo);
    REQUIRE(loc);
    const auto lines = read_lines(loc->file);
    CHECK(s.source_line(loc->file, 1) == lines[0]);
    CHECK(s.source_line(loc->file, uint32_t(lines.size())) == lines.back());
    CHECK_FALSE(s.source_line(loc->file, uint32_t(lines.size()) + 1));
    CHECK_FALSE(s.source_line(loc->file, 0));
    CHECK_FALSE(s.source_line("/nonexistent/file.c", 1));
  }
}

TEST_CASE("bad files give clear errors", "[symbols]") {
  const std::string reduce = elf_path("reduce");
  const std::vector<char> bytes = read_bytes(reduce);

  CHECK_THAT(load_error("/nonexistent/k.elf"), Contains("/nonexistent/k.elf") && Contains("No such file"));

  const TempFile text("text.elf", std::vector<char>{'h', 'e', 'l', 'l', 'o', '\n'});
  CHECK(load_error(text.path) == text.path + ": not an ELF file");
  const TempFile empty("empty.elf", {});
  CHECK(load_error(empty.path) == empty.path + ": empty file, not an ELF file");
  CHECK_THAT(load_error("/proc/self/exe"), Contains("not a RISC-V 32-bit ELF file"));

  SECTION("truncated anywhere") {
    for (size_t size : {size_t(4), size_t(30), size_t(52), size_t(100), size_t(0x1000), bytes.size() / 2,
                        bytes.size() - 100, bytes.size() - 1}) {
      INFO(size);
      const TempFile cut("cut.elf", std::vector<char>(bytes.begin(), bytes.begin() + std::ptrdiff_t(size)));
      CHECK_THAT(load_error(cut.path), StartsWith(cut.path + ": "));
    }
  }

  SECTION("no symbol table") {
    Image img(reduce);
    for (int i = 0; i < img.eh().e_shnum; ++i) {
      if (img.sh(i).sh_type == SHT_SYMTAB) img.sh(i).sh_type = SHT_PROGBITS;
    }
    const TempFile stripped("stripped.elf", img.bytes);
    CHECK(load_error(stripped.path) == stripped.path + ": no symbol table (the file was stripped)");
  }

  SECTION("corrupt debug information") {
    Image img(reduce);
    for (int i = 0; i < img.eh().e_shnum; ++i) {
      if (std::strcmp(img.section_name(i), ".debug_info") == 0) img.sh(i).sh_size = 0x7fffff00;
    }
    const TempFile corrupt("corrupt.elf", img.bytes);
    CHECK_THAT(load_error(corrupt.path), StartsWith(corrupt.path + ": corrupt DWARF debug information"));
  }

  SECTION("no debug information: symbols only") {
    Image img(reduce);
    for (int i = 0; i < img.eh().e_shnum; ++i) {
      char* n = img.section_name(i);
      if (std::strncmp(n, ".debug_", 7) == 0) std::memcpy(n, ".nodbg_", 7);
    }
    const TempFile nodebug("nodebug.elf", img.bytes);
    auto s = Symbols::load(nodebug.path);
    REQUIRE(s.ok());
    CHECK_FALSE(s->has_debug_info());
    const uint32_t lo = *s->symbol_address("reduce");
    auto r = s->resolve("reduce");
    REQUIRE(r.ok());
    CHECK(r->addresses == std::vector<uint32_t>{lo});
    CHECK_FALSE(r->where);
    CHECK(s->function_at(lo + 8)->name == "reduce");
    CHECK(s->describe(lo + 8) == "reduce+8");
    CHECK_FALSE(s->locate(lo));
    CHECK_FALSE(s->line_range(lo));
    CHECK(resolve_error(*s, "reduce.c:10") == std::filesystem::path(nodebug.path).filename().string() +
                                                  " has no line-number information (no DWARF debug info)");
    CHECK(s->resolve("*" + hex_short(lo)).ok());
    const auto frames = s->backtrace(
        lo, [](unsigned) { return std::optional<uint32_t>(0x1000); },
        [](uint32_t) { return std::optional<uint32_t>(); });
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].pc == lo);
  }
}

TEST_CASE("backtrace through the call-frame information", "[symbols]") {
  // reduce calls vx_printf; _start's dispatch window calls reduce. The test
  // builds the machine state of a call to vx_printf: a register file and a
  // fake stack, with reduce's saved return address where its prologue stores it.
  const Symbols& s = kernel("reduce");
  const Image img(elf_path("reduce"));
  const auto reduce_fn = s.function_at(*s.symbol_address("reduce"));
  const auto printf_fn = s.function_at(*s.symbol_address("vx_printf"));
  REQUIRE(reduce_fn);
  REQUIRE(printf_fn);
  const auto calls = calls_to(img, reduce_fn->lo, reduce_fn->hi, printf_fn->lo);
  REQUIRE(calls.size() == 1);
  const uint32_t ret_in_reduce = calls[0];
  const uint32_t ret_in_start = *s.symbol_address("vx_dispatch") + 12;  // after its jalr ra
  REQUIRE((img.word(ret_in_start - 4) & 0xfff) == 0x0e7);               // jalr ra

  // reduce's prologue, decoded: the size of its frame and where it keeps ra.
  constexpr uint32_t kSp = 0xfffef000;  // sp in reduce
  REQUIRE(has_prologue(img, reduce_fn->lo));
  const uint32_t reduce_frame = uint32_t(-sext(img.word(reduce_fn->lo) >> 20, 12));
  std::map<uint32_t, uint32_t> stack = {{kSp + ra_slot(img, reduce_fn->lo, reduce_fn->hi), ret_in_start}};
  std::map<unsigned, uint32_t> regs = {{1, ret_in_reduce}, {2, kSp}};
  const auto read_reg = [&](unsigned r) -> std::optional<uint32_t> {
    if (auto it = regs.find(r); it != regs.end()) return it->second;
    return 0x11110000 + r;
  };
  const auto read_word = [&](uint32_t a) -> std::optional<uint32_t> {
    if (auto it = stack.find(a); it != stack.end()) return it->second;
    return std::nullopt;
  };

  SECTION("at the callee's entry: ra and sp still hold the call's state") {
    const auto frames = s.backtrace(printf_fn->lo, read_reg, read_word);
    REQUIRE(frames.size() == 3);
    CHECK(frames[0].pc == printf_fn->lo);
    CHECK(frames[0].sp == kSp);
    REQUIRE(frames[0].where);
    CHECK(frames[0].where->function == "vx_printf");

    CHECK(frames[1].pc == ret_in_reduce);
    CHECK(frames[1].sp == kSp + reduce_frame);
    CHECK(s.function_at(frames[1].pc - 1)->name == "reduce");
    REQUIRE(frames[1].where);
    CHECK_THAT(frames[1].where->file, EndsWith("/examples/reduce.c"));
    CHECK(frames[1].where->line == line_of("examples/reduce.c", "vx_printf(\"reduce:"));

    // _start is assembly without CFI: the outermost frame.
    CHECK(frames[2].pc == ret_in_start);
    CHECK(frames[2].sp == kSp + reduce_frame);
    CHECK(s.function_at(frames[2].pc)->name == "_start");
  }

  SECTION("after the callee's prologue: ra comes from its frame") {
    const auto body = s.resolve("vx_printf");
    REQUIRE(body.ok());
    const uint32_t pc = body->addresses[0];
    REQUIRE(has_prologue(img, printf_fn->lo));
    const uint32_t sp = kSp + uint32_t(sext(img.word(printf_fn->lo) >> 20, 12));
    regs = {{1, 0x12345678}, {2, sp}};  // ra already reused: the unwinder must read the stack
    stack[sp + ra_slot(img, printf_fn->lo, printf_fn->hi)] = ret_in_reduce;
    const auto frames = s.backtrace(pc, read_reg, read_word);
    REQUIRE(frames.size() == 3);
    CHECK(frames[0].sp == kSp);
    CHECK(frames[1].pc == ret_in_reduce);
    CHECK(frames[2].pc == ret_in_start);

    // The registers of each frame: the machine's in frame 0; in reduce's frame, sp is vx_printf's
    // CFA, ra the return address read from the stack, and the registers a call may change unknown.
    CHECK(frames[0].cfa == kSp);
    CHECK(frames[0].regs[1] == 0x12345678u);
    CHECK(frames[0].regs[10] == 0x1111000au);
    CHECK(frames[1].cfa == kSp + reduce_frame);
    CHECK(frames[1].regs[2] == kSp);
    CHECK(frames[1].regs[1] == ret_in_reduce);
    CHECK_FALSE(frames[1].regs[10]);
    CHECK_FALSE(frames[1].regs[5]);
    CHECK(frames[2].regs[2] == kSp + reduce_frame);
  }

  SECTION("stops at a zero return address, a read failure or max_frames") {
    regs[1] = 0;
    CHECK(s.backtrace(printf_fn->lo, read_reg, read_word).size() == 1);
    regs[1] = ret_in_reduce;
    stack.clear();
    CHECK(s.backtrace(printf_fn->lo, read_reg, read_word).size() == 2);
    CHECK(s.backtrace(printf_fn->lo, read_reg, read_word, 1).size() == 1);
    CHECK(s.backtrace(printf_fn->lo, read_reg, read_word, 0).empty());
    const auto nowhere = s.backtrace(0x10, read_reg, read_word);
    REQUIRE(nowhere.size() == 1);
    CHECK(nowhere[0].pc == 0x10);
    CHECK_FALSE(nowhere[0].where);
  }
}

// Runs f in a child process with a time limit: a read without bound (a FIFO without a writer,
// /dev/zero) would hang or exhaust memory here; the child's status says whether f held.
static bool holds_within(unsigned seconds, const std::function<bool()>& f) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(seconds);
    _exit(f() ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO("child status " << status);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST_CASE("source files named by the debug information are read with a bound", "[symbols][malformed]") {
  // The kernel's line table names its source file; a forged one names /dev/zero (same length as
  // the real name, so the table stays well formed): its lines are unknown, without reading it.
  const std::string real = "examples/hello.c";
  const std::string forged = "/dev/../dev/zero";
  REQUIRE(real.size() == forged.size());
  std::vector<char> bytes = read_bytes(elf_path("hello"));
  const std::string needle = real + '\0';
  size_t replaced = 0;
  for (auto it = std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end()); it != bytes.end();
       it = std::search(it, bytes.end(), needle.begin(), needle.end())) {
    std::copy(forged.begin(), forged.end(), it);
    ++replaced;
  }
  REQUIRE(replaced > 0);
  const TempFile elf("devzero.elf", bytes);
  auto s = Symbols::load(elf.path);
  REQUIRE(s.ok());
  const auto entry = s->symbol_address("hello");
  REQUIRE(entry);
  std::optional<SourceLocation> where;  // the first instruction of hello() with a line of hello.c
  for (uint32_t pc = *entry; pc < *entry + 0x100 && !(where && where->file == forged); pc += 4) where = s->locate(pc);
  REQUIRE(where);
  REQUIRE(where->file == forged);
  CHECK(holds_within(20, [&] { return !s->source_line(where->file, where->line); }));

  // A FIFO without a writer (opening it for reading would wait forever) and a file above the text cap.
  const std::string fifo = elf.path + ".fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(holds_within(20, [&] { return !s->source_line(fifo, 1); }));
  std::filesystem::remove(fifo);
  const TempFile big("big.c", {'x', '\n'});
  std::filesystem::resize_file(big.path, (16u << 20) + 1);
  CHECK_FALSE(s->source_line(big.path, 1));
  CHECK_FALSE(s->source_line("/", 1));
}

TEST_CASE("symbols load from bytes as from a file", "[symbols]") {
  const std::vector<char> bytes = read_bytes(elf_path("reduce"));
  auto s = Symbols::load_bytes(std::vector<uint8_t>(bytes.begin(), bytes.end()), "reduce.elf");
  REQUIRE(s.ok());
  CHECK(s->has_debug_info());
  CHECK(s->symbol_address("reduce") == kernel("reduce").symbol_address("reduce"));
  auto error_of = [](Result<Symbols> r) { return r ? std::string() : r.error().message; };
  CHECK(error_of(Symbols::load_bytes({}, "empty.elf")) == "empty.elf: empty file, not an ELF file");
  CHECK(error_of(Symbols::load_bytes({'h', 'i'}, "hi.elf")) == "hi.elf: not an ELF file");
}

TEST_CASE("line tables are read as gdb reads them: line-0 rows continue the line before, statements start rows",
          "[symbols]") {
  // Every example kernel has compiler-generated (line 0) rows inside its functions (-O2): gdb
  // ignores them, so the row before goes on over them, and a stop there shows that line.
  for (const std::string& name : kKernels) {
    INFO(name);
    const Symbols& s = kernel(name);
    const std::string entry = name == "assert" ? "assert_kernel" : name;
    const auto fn = s.function_at(*s.symbol_address(entry));
    REQUIRE(fn);
    unsigned statements = 0;
    for (uint32_t pc = fn->lo; pc < fn->hi; pc += 4) {
      INFO("pc " << pc);
      const auto loc = s.locate(pc);
      REQUIRE(loc);
      CHECK(loc->line != 0);
      const auto row = s.row_start(pc);
      if (row && *row) ++statements;
      // The line around pc is one range that holds it.
      const auto r = s.line_range(pc);
      REQUIRE(r);
      CHECK((r->first <= pc && pc < r->second));
    }
    CHECK(statements > 1);
    // The function's breakpoint address (after the prologue) begins a statement.
    const auto bp = s.resolve(entry);
    REQUIRE(bp);
    CHECK(s.row_start(bp->addresses[0]) == std::optional<bool>(true));
  }
  // In the middle of a row no row starts.
  const Symbols& r = kernel("reduce");
  const auto f = r.function_at(*r.symbol_address("reduce"));
  REQUIRE(f);
  bool middle = false;
  for (uint32_t pc = f->lo; pc < f->hi && !middle; pc += 4) middle = !r.row_start(pc).has_value();
  CHECK(middle);
}
