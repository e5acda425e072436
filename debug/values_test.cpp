// C values printed as gdb 13 prints them (debug/values.hpp), with hand-made types and a fake lane:
// chars, char arrays as strings, char pointers with their string, repeats and the 200-element
// limit, enumerators in expressions and sizeof. Expected texts are gdb's on the same values.
#include "debug/values.hpp"

#include <catch2/catch.hpp>
#include <map>

using vx::debug::CValue;
using vx::debug::Expr;
using vx::debug::ExprEnv;
using vx::debug::TypeArena;
using vx::debug::ValueEnv;
using vx::debug::Variable;
using vx::engine::CType;
using K = CType::Kind;

namespace {

class PlainEnv : public ExprEnv {
 public:
  vx::Result<int64_t> value(const Variable&) const override { return int64_t(0); }
  vx::Result<int64_t> load_word(uint32_t) const override { return vx::make_error("cannot read"); }
};

// Variables by name and memory by byte; anything else is unreadable.
class FakeEnv : public ValueEnv {
 public:
  std::map<std::string, CValue> vars;
  std::map<uint32_t, uint8_t> mem;
  std::map<std::string, const CType*> types;
  PlainEnv plain_;

  const ExprEnv& plain() const override { return plain_; }
  vx::Result<std::optional<CValue>> variable(const std::string& name) const override {
    auto it = vars.find(name);
    if (it == vars.end()) return std::optional<CValue>();
    return std::optional<CValue>(it->second);
  }
  vx::Result<std::vector<uint8_t>> read(uint32_t addr, uint32_t size) const override {
    std::vector<uint8_t> out;
    for (uint32_t i = 0; i < size; ++i) {
      auto it = mem.find(addr + i);
      if (it == mem.end()) return vx::make_error("cannot read memory at " + std::to_string(addr + i));
      out.push_back(it->second);
    }
    return out;
  }
  const CType* type_named(const std::string& name) const override {
    auto it = types.find(name);
    return it == types.end() ? nullptr : it->second;
  }
  void put(uint32_t addr, const std::string& bytes) {
    for (size_t i = 0; i < bytes.size(); ++i) mem[addr + uint32_t(i)] = uint8_t(bytes[i]);
  }
};

CValue make(const CType* t, std::vector<uint8_t> bytes) {
  CValue v;
  v.type = t;
  v.bytes = std::move(bytes);
  return v;
}

CValue word(const CType* t, uint32_t x) {
  return make(t, {uint8_t(x), uint8_t(x >> 8), uint8_t(x >> 16), uint8_t(x >> 24)});
}

std::string chars(const CType* t, const std::string& s) { return format_c(make(t, {s.begin(), s.end()}), 0); }

// print EXPR as the prompt does: evaluated, then formatted.
std::string print(const std::string& text, const FakeEnv& env, TypeArena& arena) {
  auto e = Expr::parse(text);
  INFO(text << ": " << (e ? "" : e.error().message));
  REQUIRE(e.ok());
  auto v = vx::debug::evaluate_c(*e->root(), env, arena);
  INFO(text << ": " << (v ? "" : v.error().message));
  REQUIRE(v.ok());
  return format_c(*v, 0);
}

}  // namespace

TEST_CASE("values: chars print with gdb's escapes, non-printable ones in octal", "[values]") {
  TypeArena arena;
  const CType* uc = arena.builtin("unsigned char");
  const CType* sc = arena.builtin("signed char");
  CHECK(format_c(make(uc, {171}), 0) == "171 '\\253'");
  CHECK(format_c(make(sc, {171}), 0) == "-85 '\\253'");
  CHECK(format_c(make(uc, {0}), 0) == "0 '\\000'");
  CHECK(format_c(make(uc, {'A'}), 0) == "65 'A'");
  CHECK(format_c(make(uc, {'\\'}), 0) == "92 '\\\\'");
  CHECK(format_c(make(uc, {'\''}), 0) == "39 '\\''");
  CHECK(format_c(make(uc, {'"'}), 0) == "34 '\"'");
  CHECK(format_c(make(uc, {'\n'}), 0) == "10 '\\n'");
  CHECK(format_c(make(uc, {27}), 0) == "27 '\\033'");
  CHECK(format_c(make(uc, {127}), 0) == "127 '\\177'");
  const char* named[] = {"\\a", "\\b", "\\t", "\\n", "\\v", "\\f", "\\r"};
  for (uint8_t c = 7; c <= 13; ++c) CHECK(format_c(make(uc, {c}), 0) == std::to_string(c) + " '" + named[c - 7] + "'");
  // /c of an int: its low byte as a char of the int's signedness.
  CHECK(format_c(word(arena.builtin("int"), 200), 'c') == "-56 '\\310'");
  // char is unsigned on RISC-V.
  CHECK(format_c(make(arena.builtin("char"), {255}), 0) == "255 '\\377'");
}

TEST_CASE("values: char arrays print as strings, as gdb does", "[values]") {
  TypeArena arena;
  const CType* ch = arena.builtin("char");
  auto arr = [&](uint32_t n) { return arena.array_of(ch, n); };
  CHECK(chars(arr(8), std::string("vortex\0\0", 8)) == "\"vortex\\000\"");
  CHECK(chars(arr(10), std::string("ab\0\0\0\0\0\0\0\0", 10)) == "\"ab\\000\\000\\000\\000\\000\\000\\000\"");
  CHECK(chars(arr(3), "abc") == "\"abc\"");
  CHECK(chars(arr(1), std::string(1, '\0')) == "\"\"");
  CHECK(chars(arr(4), std::string(4, '\0')) == "\"\\000\\000\\000\"");
  CHECK(chars(arr(30), std::string(15, 'x') + "yz" + std::string(13, '\0')) ==
        "'x' <repeats 15 times>, \"yz\", '\\000' <repeats 12 times>");
  // Runs of more than 10 repeat; 10 do not.
  CHECK(chars(arr(40), "ab" + std::string(11, 'c') + std::string(10, 'd') + "e" + std::string(16, '\0')) ==
        "\"ab\", 'c' <repeats 11 times>, \"dddddddddde\", '\\000' <repeats 15 times>");
  CHECK(chars(arr(6), std::string("ab\"c'\0", 6)) == "\"ab\\\"c'\"");
  const CType* uc = arena.array_of(arena.builtin("unsigned char"), 6);
  CHECK(chars(uc, std::string("\1\2a\310\0\0", 6)) == "\"\\001\\002a\\310\\000\"");
  // print elements: 200 chars, then "..."; a run is taken whole.
  std::string abc;
  for (int i = 0; i < 299; ++i) abc += char('a' + i % 26);
  CHECK(chars(arr(300), abc + '\0') == "\"" + abc.substr(0, 200) + "\"...");
  CHECK(chars(arr(201), abc.substr(0, 200) + '\0') == "\"" + abc.substr(0, 200) + "\"");
  CHECK(chars(arr(250), std::string(250, 'z')) == "'z' <repeats 250 times>");
  CHECK(chars(arr(230), abc.substr(0, 195) + std::string(20, 'q') + "abc" + std::string(12, '\0')) ==
        "\"" + abc.substr(0, 195) + "\", 'q' <repeats 20 times>...");
  // With a format, the elements one by one.
  CHECK(format_c(make(arr(3), {'a', 'b', 0}), 'x') == "{0x61, 0x62, 0x0}");
}

TEST_CASE("values: arrays repeat runs of more than 10 and stop after 200 elements", "[values]") {
  TypeArena arena;
  const CType* i32 = arena.builtin("int");
  auto ints = [&](const std::vector<uint32_t>& xs) {
    CValue v;
    v.type = arena.array_of(i32, uint32_t(xs.size()));
    for (uint32_t x : xs)
      for (int b = 0; b < 4; ++b) v.bytes.push_back(uint8_t(x >> (8 * b)));
    return format_c(v, 0);
  };
  CHECK(ints(std::vector<uint32_t>(10, 1)) == "{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}");
  CHECK(ints(std::vector<uint32_t>(11, 1)) == "{1 <repeats 11 times>}");
  std::vector<uint32_t> many;
  std::string shown;
  for (uint32_t i = 0; i < 300; ++i) {
    many.push_back(i);
    if (i < 200) shown += (i ? ", " : "") + std::to_string(i);
  }
  CHECK(ints(many) == "{" + shown + "...}");
  // A run counts as 10 elements toward the limit.
  std::vector<uint32_t> rep(many.begin(), many.begin() + 195);
  rep.insert(rep.end(), 20, 7);
  rep.insert(rep.end(), {1, 2, 3});
  CHECK(ints(rep) == "{" + shown.substr(0, shown.find(", 195")) + ", 7 <repeats 20 times>...}");
}

TEST_CASE("values: a char pointer shows its string; only a plain char * leaves out its type", "[values]") {
  TypeArena arena;
  FakeEnv env;
  const CType* cp = arena.pointer_to(arena.builtin("char"));
  env.put(0x1000, std::string("text\0", 5));
  env.put(0x2000, std::string("x'y\0", 4));
  env.put(0x3000, std::string(250, 'z') + '\0');
  env.put(0x4000, "ab");  // then unreadable
  env.vars["str"] = word(cp, 0x1000);
  env.vars["nul"] = word(cp, 0);
  env.vars["bad"] = word(cp, 4);
  env.vars["half"] = word(cp, 0x4000);
  env.vars["u"] = word(arena.pointer_to(arena.builtin("unsigned char")), 0x2000);
  env.vars["zs"] = word(cp, 0x3000);
  env.vars["ip"] = word(arena.pointer_to(arena.builtin("int")), 0x1000);
  CHECK(print("str", env, arena) == "0x1000 \"text\"");
  CHECK(print("str + 1", env, arena) == "0x1001 \"ext\"");
  CHECK(print("nul", env, arena) == "0x0");
  CHECK(print("bad", env, arena) == "0x4 <error: Cannot access memory at address 0x4>");
  CHECK(print("half", env, arena) == "0x4000 \"ab\" <error: Cannot access memory at address 0x4002>");
  CHECK(print("u", env, arena) == "(unsigned char *) 0x2000 \"x'y\"");
  CHECK(print("zs", env, arena) == "0x3000 'z' <repeats 200 times>...");
  CHECK(print("ip", env, arena) == "(int *) 0x1000");
  // In a struct: no type, the string after the address.
  CType rec;
  rec.kind = K::Struct;
  rec.name = "rec";
  rec.size = 12;
  rec.fields = {{"name", 0, arena.array_of(arena.builtin("char"), 6)}, {"p", 8, cp}};
  CValue r = make(&rec, {'a', 'b', '"', 'c', 0, 0, 0, 0, 0x00, 0x20, 0, 0});
  r.address = 0x5000;
  env.vars["r"] = r;
  CHECK(print("r", env, arena) == "{name = \"ab\\\"c\\000\", p = 0x2000 \"x'y\"}");
  CHECK(format_c(word(cp, 0x1000), 'x') == "0x1000");
}

TEST_CASE("values: enumerators in expressions and sizeof", "[values]") {
  TypeArena arena;
  FakeEnv env;
  CType color;
  color.kind = K::Enum;
  color.name = "color";
  color.size = 4;
  color.enumerators = {{"RED", 0}, {"GREEN", 1}, {"BLUE", 5}};
  env.vars["col"] = word(&color, 5);
  env.vars["BLUE"] = word(&color, 5);  // as Variables::find gives an enumerator
  CHECK(print("BLUE", env, arena) == "BLUE");
  CHECK(print("col == BLUE", env, arena) == "1");
  CHECK(print("(int)BLUE", env, arena) == "5");
  CHECK(print("BLUE + 1", env, arena) == "6");
  CType u32;
  u32.kind = K::Typedef;
  u32.name = "uint32_t";
  u32.target = arena.builtin("unsigned int");
  u32.size = 4;
  env.types["uint32_t"] = &u32;
  env.types["enum color"] = &color;
  CValue nodes;
  nodes.type = arena.array_of(arena.builtin("long long"), 2);
  nodes.bytes.assign(16, 0);
  nodes.address = 0x6000;
  env.vars["nodes"] = nodes;
  env.put(0x6000, std::string(16, '\0'));
  CHECK(print("sizeof(int)", env, arena) == "4");
  CHECK(print("sizeof (long long)", env, arena) == "8");
  CHECK(print("sizeof(char *)", env, arena) == "4");
  CHECK(print("sizeof(enum color)", env, arena) == "4");
  CHECK(print("sizeof(uint32_t)", env, arena) == "4");  // a lone name: not a variable, so a type
  CHECK(print("sizeof(nodes)", env, arena) == "16");
  CHECK(print("sizeof nodes / sizeof nodes[0]", env, arena) == "2");
  CHECK(print("sizeof(int) * 2", env, arena) == "8");
  CHECK(print("-sizeof(int)", env, arena) == "-4");  // gdb types sizeof as int
  auto e = Expr::parse("sizeof(nosuch)");
  REQUIRE(e.ok());
  auto v = vx::debug::evaluate_c(*e->root(), env, arena);
  REQUIRE_FALSE(v.ok());
  CHECK_THAT(v.error().message, Catch::Contains("no symbol \"nosuch\""));
}

TEST_CASE("values: a struct with parts missing prints each member's, as gdb", "[values]") {
  TypeArena arena;
  const CType* i = arena.builtin("int");
  CType s;
  s.kind = K::Struct;
  s.name = "range";
  s.size = 8;
  s.fields.push_back(CType::Field{"start", 0, i});
  s.fields.push_back(CType::Field{"len", 4, i});
  CValue v = make(&s, {0, 0, 0, 0, 5, 0, 0, 0});
  v.missing_parts.push_back(vx::engine::MissingBytes{0, 4, false});
  CHECK(format_c(v, 0) == "{start = <optimized out>, len = 5}");
  v.missing_parts.push_back(vx::engine::MissingBytes{4, 8, true});
  CHECK(format_c(v, 0) == "{start = <optimized out>, len = <not available>}");
  v.missing_parts = {vx::engine::MissingBytes{0, 4, false}, vx::engine::MissingBytes{4, 8, false}};
  CHECK(format_c(v, 0) == "<optimized out>");
  // An array's elements too.
  const CType* arr = arena.array_of(i, 2);
  CValue a = make(arr, {7, 0, 0, 0, 0, 0, 0, 0});
  a.missing_parts.push_back(vx::engine::MissingBytes{4, 8, false});
  CHECK(format_c(a, 0) == "{7, <optimized out>}");
}
