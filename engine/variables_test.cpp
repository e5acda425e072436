// Source variables through DWARF on the example kernels: scopes at a pc (inlined calls included),
// C types, and locations evaluated against a fake lane. Expected names and types are the kernels'
// own declarations (examples/reduce.c, examples/saxpy.c).
#include "engine/variables.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "engine/symbols.hpp"

using namespace vx::engine;

namespace {

const std::string kExamplesDir = VX_EXAMPLES_DIR;

struct Kernel {
  Symbols sym;
  Variables vars;
};

// An image's symbols and variables, loaded once.
Kernel& load(const std::string& path) {
  static std::map<std::string, Kernel> loaded;
  auto it = loaded.find(path);
  if (it == loaded.end()) {
    auto s = Symbols::load(path);
    REQUIRE(s.ok());
    auto v = Variables::load(path);
    INFO((v ? "" : v.error().message));
    REQUIRE(v.ok());
    it = loaded.emplace(path, Kernel{std::move(s).value(), std::move(v).value()}).first;
  }
  return it->second;
}

Kernel& kernel(const std::string& name) { return load(kExamplesDir + "/" + name + ".elf"); }

std::set<std::string> names(const std::vector<SourceVariable>& vs) {
  std::set<std::string> out;
  for (const auto& v : vs) out.insert(v.name);
  return out;
}

uint32_t address_of(const Kernel& k, const std::string& loc) {
  auto r = k.sym.resolve(loc);
  REQUIRE(r.ok());
  return r->addresses.front();
}

}  // namespace

TEST_CASE("types come from DWARF: typedefs, structs with their members, pointers, arrays", "[variables]") {
  Kernel& k = kernel("reduce");
  const CType* u32 = k.vars.find_type("uint32_t");
  REQUIRE(u32);
  CHECK(u32->kind == CType::Kind::Typedef);
  CHECK(type_name(*u32) == "uint32_t");
  const CType& base = strip_typedefs(*u32);
  CHECK(base.kind == CType::Kind::Int);
  CHECK(base.size == 4);
  CHECK_FALSE(base.is_signed);
  const CType* lm = k.vars.find_type("struct reduce_lmem");
  REQUIRE(lm);
  REQUIRE(lm->fields.size() == 2);
  CHECK(lm->fields[0].name == "partial");
  CHECK(lm->fields[0].offset == 0);
  CHECK(type_name(*lm->fields[0].type) == "uint32_t [64]");
  CHECK(lm->fields[1].name == "odd");
  CHECK(lm->fields[1].offset == 64 * 4);
  CHECK(lm->size == (64 + 256) * 4);
  CHECK(type_definition(*lm) == "struct reduce_lmem {\n    uint32_t partial[64];\n    uint32_t odd[256];\n}");
  CHECK(k.vars.find_type("no_such_type") == nullptr);
}

TEST_CASE("scopes at a pc inside an inlined call: the inlined function first, then its caller", "[variables]") {
  Kernel& k = kernel("reduce");
  const uint32_t pc = address_of(k, "warp_sum");
  auto frames = k.vars.frames(pc);
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].function == "warp_sum");
  CHECK(frames[0].inlined);
  CHECK(frames[1].function == "reduce");
  CHECK_FALSE(frames[1].inlined);
  CHECK(names(k.vars.parameters(pc, 0)) == std::set<std::string>{"v", "lane", "tid", "nthreads"});
  CHECK(names(k.vars.locals(pc, 0)).count("off"));
  CHECK(names(k.vars.parameters(pc, 1)) == std::set<std::string>{"arg"});
  auto tid = k.vars.find(pc, "tid", 1);
  REQUIRE(tid);
  CHECK(tid->kind == SourceVariable::Kind::Local);
  REQUIRE(tid->type);
  CHECK(type_name(*tid->type) == "const uint32_t");
  // A global, from any pc.
  auto total = k.vars.find(pc, "total");
  REQUIRE(total);
  CHECK(total->kind == SourceVariable::Kind::Global);
  CHECK_FALSE(k.vars.find(pc, "no_such_name"));
}

TEST_CASE("locations: registers, memory, optimized out, not available at this pc", "[variables]") {
  Kernel& k = kernel("reduce");
  std::map<unsigned, uint32_t> regs;
  for (unsigned r = 0; r < 64; ++r) regs[r] = 0x1000 + r;
  LaneView lane;
  lane.reg = [&](unsigned r) -> std::optional<uint32_t> {
    return regs.count(r) ? std::optional<uint32_t>(regs[r]) : std::nullopt;
  };
  lane.read = [](uint32_t, uint32_t size) -> vx::Result<std::vector<uint8_t>> { return std::vector<uint8_t>(size, 0); };
  lane.cfa = 0xffff0000u;
  const uint32_t pc = address_of(k, "warp_sum");
  // Every variable visible here locates without an error, as one of the five kinds.
  for (unsigned level : {0u, 1u})
    for (const auto& list : {k.vars.locals(pc, level), k.vars.parameters(pc, level)})
      for (const SourceVariable& v : list) {
        INFO(v.name);
        auto loc = k.vars.locate(v, pc, lane);
        REQUIRE(loc.ok());
        if (loc->kind == VarLocation::Kind::Register) CHECK(loc->reg < 64);
      }
  auto arg = k.vars.find(pc, "arg", 1);
  REQUIRE(arg);
  CHECK(k.vars.locate(*arg, pc, lane)->kind == VarLocation::Kind::OptimizedOut);
  auto total = k.vars.find(pc, "total");
  auto loc = k.vars.locate(*total, pc, lane);
  REQUIRE(loc.ok());
  CHECK(loc->kind == VarLocation::Kind::Memory);
  CHECK(loc->address == *k.sym.symbol_address("total"));
  // `s` (the warp sum) is assigned after the inlined call: its location list does not cover it.
  auto s = k.vars.find(pc, "s", 1);
  REQUIRE(s);
  CHECK(k.vars.locate(*s, pc, lane)->kind == VarLocation::Kind::Unavailable);
}

namespace {

// A kernel built at test time with the examples' flags (no runtime: only its DWARF is read), for
// what the examples lack: enum types and -O0 code. nullopt (and a warning) without clang.
std::optional<std::string> build_kernel(const std::string& name, const std::string& source, const std::string& opt) {
  static std::map<std::string, std::optional<std::string>> built;
  if (auto it = built.find(name); it != built.end()) return it->second;
  const std::string dir = kExamplesDir + "/../variables_test_kernels";
  const std::string src = dir + "/" + name + ".c", elf = dir + "/" + name + ".elf";
  std::system(("mkdir -p '" + dir + "'").c_str());
  if (FILE* f = std::fopen(src.c_str(), "w")) {
    std::fputs(source.c_str(), f);
    std::fclose(f);
  }
  const std::string cmd =
      "clang --target=riscv32 -march=rv32imaf -mabi=ilp32f -mcmodel=medany -mno-relax "
      "-ffreestanding -nostdlib -fno-builtin -g -gdwarf-4 -fuse-ld=lld -static -Wl,-e,kernel " +
      opt + " '" + src + "' -o '" + elf + "' 2>/dev/null";
  // clang is a build dependency of the project (scripts/install-deps.sh): not building is a failure.
  if (std::system(cmd.c_str()) != 0) return built[name] = std::nullopt;
  return built[name] = elf;
}

// The test kernel built from source (clang is a build dependency: not building it fails).
Kernel& built_kernel(const std::string& name, const std::string& source, const std::string& opt) {
  auto elf = build_kernel(name, source, opt);
  if (!elf) FAIL("clang --target=riscv32 cannot build the test kernel " << name);
  return load(*elf);
}

const char* kListSource = R"(
struct node { int val; struct node* next; };
enum color { RED, GREEN, BLUE = 5 };
enum { ANON = -3 };
enum color col = GREEN;
int get(struct node* n) { return n->val; }
struct node nodes[2] = {{1, &nodes[1]}, {2, 0}};
void kernel(void) { col = (enum color)get(&nodes[0]) + ANON; }
)";

}  // namespace

TEST_CASE("enumerators are found by name as constants of their enum type", "[variables]") {
  Kernel& k = built_kernel("list_o0", kListSource, "-O0");
  const Symbols* s = &k.sym;
  const Variables* v = &k.vars;
  const uint32_t pc = *s->symbol_address("kernel");
  LaneView lane;
  auto blue = v->find(pc, "BLUE");
  REQUIRE(blue);
  CHECK(blue->kind == SourceVariable::Kind::Global);
  REQUIRE(blue->type);
  CHECK(type_name(*blue->type) == "enum color");
  auto loc = v->locate(*blue, pc, lane);
  REQUIRE(loc.ok());
  REQUIRE(loc->kind == VarLocation::Kind::Value);
  REQUIRE(loc->bytes.size() >= 4);
  CHECK(loc->bytes[0] == 5);
  // An anonymous enum's enumerator, negative.
  auto anon = v->find(pc, "ANON");
  REQUIRE(anon);
  auto aloc = v->locate(*anon, pc, lane);
  REQUIRE(aloc.ok());
  REQUIRE(aloc->bytes.size() >= 4);
  CHECK(aloc->bytes[0] == 0xfd);
  CHECK(aloc->bytes[3] == 0xff);
  // A variable still wins over nothing: col is the global.
  auto col = v->find(pc, "col");
  REQUIRE(col);
  CHECK(v->locate(*col, pc, lane)->kind == VarLocation::Kind::Memory);
  CHECK_FALSE(v->find(pc, "PURPLE"));
}

TEST_CASE("-O0: a parameter named n of a struct pointer is found in its function", "[variables]") {
  Kernel& k = built_kernel("list_o0", kListSource, "-O0");
  const Symbols* s = &k.sym;
  const Variables* v = &k.vars;
  auto r = s->resolve("get");
  REQUIRE(r.ok());
  const uint32_t start = *s->symbol_address("get");
  for (uint32_t pc : {start, r->addresses.front()}) {
    INFO("pc " << pc);
    CHECK(names(v->parameters(pc)) == std::set<std::string>{"n"});
    auto n = v->find(pc, "n");
    REQUIRE(n);
    CHECK(n->kind == SourceVariable::Kind::Parameter);
    REQUIRE(n->type);
    CHECK(type_name(*n->type) == "struct node *");
    LaneView lane;
    lane.reg = [](unsigned r) -> std::optional<uint32_t> {
      return r == 8 ? std::optional<uint32_t>(0x2000) : std::nullopt;
    };
    auto loc = v->locate(*n, pc, lane);
    REQUIRE(loc.ok());
    CHECK(loc->kind == VarLocation::Kind::Memory);
    CHECK(loc->address == 0x2000 - 12);  // DW_OP_fbreg -12 from s0
  }
}
