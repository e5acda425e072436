// The expression language of conditions and print (debug/expr.hpp).
#include "debug/expr.hpp"

#include <catch2/catch.hpp>
#include <map>

using vx::debug::Expr;
using vx::debug::ExprEnv;
using vx::debug::Variable;

namespace {

// A lane with fixed values: threadIdx (3,1,0), blockIdx (2,0,0), blockDim 16x2x1, a0 = 7,
// sp = 0xfffefff0, pc = 0x80000100, memory word at 0x1000 = 42.
class FakeEnv : public ExprEnv {
 public:
  mutable int lookups = 0;
  vx::Result<int64_t> value(const Variable& v) const override {
    ++lookups;
    using K = Variable::Kind;
    switch (v.kind) {
      case K::ThreadIdx: return int64_t(std::array<uint32_t, 3>{3, 1, 0}[v.index]);
      case K::BlockIdx: return int64_t(std::array<uint32_t, 3>{2, 0, 0}[v.index]);
      case K::BlockDim: return int64_t(std::array<uint32_t, 3>{16, 2, 1}[v.index]);
      case K::GridDim: return int64_t(std::array<uint32_t, 3>{8, 1, 1}[v.index]);
      case K::XReg:
        if (v.index == 10) return int64_t(7);
        if (v.index == 2) return int64_t(0xfffefff0u);
        return int64_t(0);
      case K::Pc: return int64_t(0x80000100u);
      case K::Lane: return int64_t(3);
      case K::Symbol:
        if (v.name == "total") return int64_t(0x1000);
        return vx::make_error("no symbol \"" + v.name + "\"");
      default: return vx::make_error("unsupported");
    }
  }
  vx::Result<int64_t> load_word(uint32_t addr) const override {
    if (addr == 0x1000) return int64_t(42);
    return vx::make_error("cannot read");
  }
};

int64_t eval(const std::string& text) {
  auto e = Expr::parse(text);
  INFO(text << ": " << (e ? "" : e.error().message));
  REQUIRE(e.ok());
  FakeEnv env;
  auto v = e->eval(env);
  INFO(text << ": " << (v ? "" : v.error().message));
  REQUIRE(v.ok());
  return *v;
}

std::string parse_error(const std::string& text) {
  auto e = Expr::parse(text);
  REQUIRE_FALSE(e.ok());
  return e.error().message;
}

}  // namespace

TEST_CASE("expressions: literals and arithmetic follow C precedence", "[expr]") {
  CHECK(eval("42") == 42);
  CHECK(eval("0x2a") == 42);
  CHECK(eval("1 + 2 * 3") == 7);
  CHECK(eval("(1 + 2) * 3") == 9);
  CHECK(eval("10 - 4 - 3") == 3);  // left-associative
  CHECK(eval("17 / 5") == 3);
  CHECK(eval("17 % 5") == 2);
  CHECK(eval("-5 + 2") == -3);
  CHECK(eval("1 << 4 | 1") == 17);
  CHECK(eval("0xf0 & 0x3c ^ 0x01") == 0x31);
  CHECK(eval("~0 & 0xff") == 0xff);
}

TEST_CASE("expressions: comparisons and logic give 0 or 1", "[expr]") {
  CHECK(eval("3 == 3") == 1);
  CHECK(eval("3 != 3") == 0);
  CHECK(eval("2 < 3 && 3 <= 3 && 4 > 3 && 4 >= 4") == 1);
  CHECK(eval("0 || 5") == 1);
  CHECK(eval("!0") == 1);
  CHECK(eval("!7") == 0);
  CHECK(eval("1 + 1 == 2") == 1);                  // == binds looser than +
  CHECK(eval("1 == 1 && 2 == 3 || 4 == 4") == 1);  // && binds tighter than ||
}

TEST_CASE("expressions: CUDA built-ins, registers and symbols", "[expr]") {
  CHECK(eval("threadIdx.x") == 3);
  CHECK(eval("threadIdx.y") == 1);
  CHECK(eval("blockIdx.x == 2 && threadIdx.x == 3") == 1);
  CHECK(eval("blockIdx.x * blockDim.x + threadIdx.x") == 35);
  CHECK(eval("gridDim.x") == 8);
  CHECK(eval("$a0") == 7);
  CHECK(eval("$x10") == 7);
  CHECK(eval("$a0 == 7") == 1);
  CHECK(eval("$sp") == 0xfffefff0);  // registers are unsigned 32-bit values
  CHECK(eval("$pc") == 0x80000100);
  CHECK(eval("$lane") == 3);
  CHECK(eval("&total") == 0x1000);
  CHECK(eval("*&total") == 42);
  CHECK(eval("*0x1000 + 1") == 43);
}

TEST_CASE("expressions: && and || short-circuit", "[expr]") {
  auto e = Expr::parse("0 && *0x5");  // the load would fail
  REQUIRE(e.ok());
  FakeEnv env;
  auto v = e->eval(env);
  REQUIRE(v.ok());
  CHECK(*v == 0);
  auto f = Expr::parse("1 || *0x5");
  REQUIRE(f.ok());
  CHECK(f->eval(env).value() == 1);
}

TEST_CASE("expressions: canonical form shows the parse", "[expr]") {
  auto e = Expr::parse("threadIdx.x == 3 || !($a0 < 2) && blockIdx.y");
  REQUIRE(e.ok());
  CHECK(e->to_string() == "((threadIdx.x == 3) || ((!($a0 < 2)) && blockIdx.y))");
  CHECK(e->text() == "threadIdx.x == 3 || !($a0 < 2) && blockIdx.y");
  auto r = Expr::parse("$fp");
  REQUIRE(r.ok());
  REQUIRE(r->as_variable());
  CHECK(r->as_variable()->kind == Variable::Kind::XReg);
  CHECK(r->as_variable()->index == 8);
  CHECK(r->to_string() == "$s0");
}

TEST_CASE("expressions: parse errors say what and where", "[expr]") {
  CHECK_THAT(parse_error(""), Catch::Contains("expected a value"));
  CHECK_THAT(parse_error("(1 + 2"), Catch::Contains("missing ')'"));
  CHECK_THAT(parse_error("1 +"), Catch::Contains("expected a value"));
  CHECK_THAT(parse_error("1 2"), Catch::Contains("unexpected '2'"));
  CHECK_THAT(parse_error("threadIdx.w"), Catch::Contains("fields x, y and z"));
  CHECK_THAT(parse_error("threadIdx"), Catch::Contains("fields x, y and z"));
  CHECK_THAT(parse_error("$q7"), Catch::Contains("unknown register '$q7'"));
  CHECK_THAT(parse_error("s."), Catch::Contains("expected a field name after '.'"));
  CHECK_THAT(parse_error("a[1"), Catch::Contains("expected ']'"));
  CHECK_THAT(parse_error("1 = 2"), Catch::Contains("unexpected character '='"));
  CHECK_THAT(parse_error("0x"), Catch::Contains("bad number"));
  CHECK_THAT(parse_error("99999999999999999999"), Catch::Contains("too large"));
  CHECK_THAT(parse_error("&$a0"), Catch::Contains("'&' takes a symbol name"));
  CHECK_THAT(parse_error("1 + 2)"), Catch::Contains("column 6"));
}

TEST_CASE("expressions: C names, members, indexing, casts and @ parse into C nodes", "[expr]") {
  auto canon = [](const std::string& text) {
    auto e = Expr::parse(text);
    INFO(text << ": " << (e ? "" : e.error().message));
    REQUIRE(e.ok());
    return e->to_string();
  };
  CHECK(canon("lm->partial[rank]") == "lm->partial[rank]");
  CHECK(canon("s.a.b + 1") == "(s.a.b + 1)");
  CHECK(canon("*p") == "(*p)");
  CHECK(canon("&arr[2]") == "(&arr[2])");
  CHECK(canon("(uint32_t)x") == "((uint32_t)x)");
  CHECK(canon("(struct foo *)p") == "((struct foo *)p)");
  CHECK(canon("(unsigned int)-1") == "((unsigned int)(-1))");
  CHECK(canon("(n) - 1") == "(n - 1)");  // a lone name before '-' is a value, not a cast
  CHECK(canon("arr[i]@4") == "(arr[i]@4)");
  CHECK(canon("$blockIdx.x") == "blockIdx.x");
  CHECK(canon("threadIdx.x") == "threadIdx.x");
  CHECK(canon("&total") == "&total");
  auto e = Expr::parse("a0 == 1");
  REQUIRE(e.ok());
  CHECK(e->uses_source());  // a C name (registers take a '$')
  CHECK_FALSE(Expr::parse("$a0 == 1")->uses_source());
  CHECK_FALSE(Expr::parse("&total + 4")->uses_source());
  // Without an environment that knows C, a C name is an error at evaluation, not a crash.
  FakeEnv env;
  auto v = Expr::parse("foo + 1")->eval(env);
  REQUIRE_FALSE(v.ok());
  CHECK_THAT(v.error().message, Catch::Contains("debug information"));
}

TEST_CASE("expressions: sizeof of a type or of an expression", "[expr]") {
  auto canon = [](const std::string& text) {
    auto e = Expr::parse(text);
    INFO(text << ": " << (e ? "" : e.error().message));
    REQUIRE(e.ok());
    CHECK(e->uses_source());
    return e->to_string();
  };
  CHECK(canon("sizeof(int)") == "sizeof(int)");
  CHECK(canon("sizeof (struct node)") == "sizeof(struct node)");
  CHECK(canon("sizeof(uint32_t *)") == "sizeof(uint32_t *)");
  CHECK(canon("sizeof(x)") == "sizeof(x)");  // a variable or a typedef: the evaluator decides
  CHECK(canon("sizeof x") == "sizeof(x)");
  CHECK(canon("sizeof n->val") == "sizeof(n->val)");
  CHECK(canon("sizeof a / sizeof a[0]") == "(sizeof(a) / sizeof(a[0]))");
  CHECK(canon("sizeof(int) * 2") == "(sizeof(int) * 2)");
  CHECK(canon("-sizeof(int)") == "(-sizeof(int))");
  FakeEnv env;
  auto v = Expr::parse("sizeof(int)")->eval(env);
  REQUIRE_FALSE(v.ok());
  CHECK_THAT(v.error().message, Catch::Contains("debug information"));
  CHECK_THAT(parse_error("sizeof"), Catch::Contains("expected a value"));
}

TEST_CASE("expressions: evaluation errors", "[expr]") {
  FakeEnv env;
  auto div = Expr::parse("1 / (threadIdx.x - 3)");
  REQUIRE(div.ok());
  auto v = div->eval(env);
  REQUIRE_FALSE(v.ok());
  CHECK_THAT(v.error().message, Catch::Contains("division by zero"));
  auto sym = Expr::parse("&nosuch");
  REQUIRE(sym.ok());
  CHECK_FALSE(sym->eval(env).ok());
  auto shift = Expr::parse("1 << 64");
  REQUIRE(shift.ok());
  CHECK_FALSE(shift->eval(env).ok());
}

TEST_CASE("register names", "[expr]") {
  using vx::debug::parse_register;
  CHECK(parse_register("a0")->index == 10);
  CHECK(parse_register("$a0")->index == 10);
  CHECK(parse_register("zero")->index == 0);
  CHECK(parse_register("x31")->index == 31);
  CHECK(parse_register("s11")->index == 27);
  CHECK(parse_register("t6")->index == 31);
  CHECK(parse_register("fa0")->kind == Variable::Kind::FReg);
  CHECK(parse_register("fa0")->index == 10);
  CHECK(parse_register("f31")->index == 31);
  CHECK(parse_register("pc")->kind == Variable::Kind::Pc);
  CHECK_FALSE(parse_register("x32"));
  CHECK_FALSE(parse_register("x01"));
  CHECK_FALSE(parse_register("a8"));
  CHECK_FALSE(parse_register(""));
}

TEST_CASE("deeply nested expressions are an error, not a stack overflow", "[expr]") {
  auto deep = [](const std::string& open, const std::string& mid, const std::string& close, size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += open;
    s += mid;
    for (size_t i = 0; i < n; ++i) s += close;
    return s;
  };
  for (const std::string& text : {deep("(", "1", ")", 5000), deep("-", "1", "", 50000), deep("!", "1", "", 50000),
                                  deep("", "1", "+1", 60000), deep("(1+", "1", ")", 3000), deep("*", "0", "", 40000)}) {
    INFO(text.substr(0, 40));
    auto e = vx::debug::Expr::parse(text);
    REQUIRE_FALSE(e);
    CHECK_THAT(e.error().message, Catch::Contains("too deeply nested"));
    CHECK(e.error().message.size() < 300);
  }
  // 200 levels still work, and evaluate.
  auto ok = vx::debug::Expr::parse(deep("(", "7", ")", 200));
  REQUIRE(ok);
  auto sum = vx::debug::Expr::parse(deep("", "1", "+1", 200));
  REQUIRE(sum);
}

TEST_CASE("expressions: character literals, escapes included", "[expr]") {
  CHECK(eval("'G'") == 71);
  CHECK(eval("'G' + 1") == 72);
  CHECK(eval("'\\n'") == 10);
  CHECK(eval("'\\0'") == 0);
  CHECK(eval("'\\x41'") == 0x41);
  CHECK(eval("'\\101'") == 65);
  CHECK(eval("'\\''") == 39);
  CHECK(eval("'\\\\'") == 92);
  CHECK(eval("'\\377'") == 255);  // RISC-V's char is unsigned
  CHECK(parse_error("'ab'").find("unterminated character literal") != std::string::npos);
  CHECK(parse_error("'\\q'").find("bad escape") != std::string::npos);
  CHECK(parse_error("'").find("unterminated") != std::string::npos);
}
