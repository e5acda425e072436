// The DWARF expression evaluator on hand-built operations: a fake machine with registers that
// read as 0x100 * their number and 256 bytes of memory at 0x1000 that read as their offset.
#include "engine/dwarf_expr.hpp"

#include <dwarf.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <vector>

using namespace vx;
using namespace vx::engine::dwarf;

namespace {

constexpr uint32_t kMem = 0x1000, kMemSize = 0x100;

Dwarf_Op op(uint8_t atom, uint64_t number = 0, uint64_t number2 = 0) {
  Dwarf_Op o{};
  o.atom = atom;
  o.number = number;
  o.number2 = number2;
  return o;
}

uint64_t sleb(int64_t v) { return uint64_t(v); }

struct Machine {
  std::vector<unsigned> reg_reads;
  std::vector<std::pair<uint32_t, uint32_t>> mem_reads;
  uint32_t reg_scale = 0x100;
  Env env() {
    Env e;
    e.reg = [this](unsigned r) -> std::optional<uint32_t> {
      reg_reads.push_back(r);
      if (r == 5) return std::nullopt;  // $t0: not available
      return r * reg_scale;
    };
    e.read = [this](uint32_t addr, uint32_t size) -> Result<std::vector<uint8_t>> {
      mem_reads.emplace_back(addr, size);
      if (addr < kMem || addr + size > kMem + kMemSize) {
        char b[64];
        std::snprintf(b, sizeof b, "Cannot access memory at address 0x%x", addr);
        return make_error(b);
      }
      std::vector<uint8_t> out;
      for (uint32_t i = 0; i < size; ++i) out.push_back(uint8_t(addr - kMem + i));
      return out;
    };
    return e;
  }
};

Result<Location> eval(const std::vector<Dwarf_Op>& ops, const Env& env) {
  return evaluate(ops.data(), ops.size(), env);
}

// The value a DW_OP_stack_value expression computes.
uint64_t value_of(const std::vector<Dwarf_Op>& ops) {
  Machine m;
  std::vector<Dwarf_Op> all = ops;
  all.push_back(op(DW_OP_stack_value));
  auto l = eval(all, m.env());
  REQUIRE(l);
  REQUIRE(l->kind == Kind::Value);
  return l->value;
}

std::string error_of(const std::vector<Dwarf_Op>& ops, const Env& env) {
  auto l = eval(ops, env);
  REQUIRE_FALSE(l);
  return l.error().message;
}

}  // namespace

TEST_CASE("dwarf_expr: literals and constants push their value", "[dwarf_expr]") {
  CHECK(value_of({op(DW_OP_lit0)}) == 0);
  CHECK(value_of({op(DW_OP_lit31)}) == 31);
  CHECK(value_of({op(DW_OP_const1u, 200)}) == 200);
  CHECK(value_of({op(DW_OP_const4u, 0xdeadbeef)}) == 0xdeadbeef);
  CHECK(value_of({op(DW_OP_consts, sleb(-4))}) == sleb(-4));
  CHECK(value_of({op(DW_OP_constu, 1234567)}) == 1234567);
  Machine m;
  auto l = eval({op(DW_OP_addr, 0x80001234)}, m.env());
  REQUIRE(l);
  CHECK(l->kind == Kind::Memory);
  CHECK(l->address == 0x80001234);
}

TEST_CASE("dwarf_expr: registers name a location, base registers are read", "[dwarf_expr]") {
  Machine m;
  auto l = eval({op(DW_OP_reg10)}, m.env());
  REQUIRE(l);
  CHECK(l->kind == Kind::Register);
  CHECK(l->reg == 10);
  CHECK(m.reg_reads.empty());  // a register location is not read

  l = eval({op(DW_OP_regx, 40)}, m.env());
  REQUIRE(l);
  CHECK(l->kind == Kind::Register);
  CHECK(l->reg == 40);

  l = eval({op(DW_OP_breg2, sleb(-16))}, m.env());
  REQUIRE(l);
  CHECK(l->kind == Kind::Memory);
  CHECK(l->address == 0x200 - 16);

  l = eval({op(DW_OP_bregx, 8, 12)}, m.env());
  REQUIRE(l);
  CHECK(l->address == 0x800 + 12);
  CHECK(m.reg_reads == std::vector<unsigned>{2, 8});

  CHECK(error_of({op(DW_OP_breg5, 4)}, m.env()) == "DW_OP_breg5: $t0 is not available in this frame");
  CHECK(error_of({op(DW_OP_bregx, 5, 0)}, m.env()) == "DW_OP_bregx: $t0 is not available in this frame");
  CHECK(error_of({op(DW_OP_breg1, 0)}, Env{}) == "DW_OP_breg1: $ra is not available in this frame");
}

TEST_CASE("dwarf_expr: arithmetic", "[dwarf_expr]") {
  CHECK(value_of({op(DW_OP_lit7), op(DW_OP_lit3), op(DW_OP_plus)}) == 10);
  CHECK(value_of({op(DW_OP_lit7), op(DW_OP_lit3), op(DW_OP_minus)}) == 4);
  CHECK(value_of({op(DW_OP_lit3), op(DW_OP_lit7), op(DW_OP_minus)}) == sleb(-4));
  CHECK(value_of({op(DW_OP_lit7), op(DW_OP_lit3), op(DW_OP_mul)}) == 21);
  CHECK(value_of({op(DW_OP_lit7), op(DW_OP_lit2), op(DW_OP_div)}) == 3);
  CHECK(value_of({op(DW_OP_consts, uint64_t(-7)), op(DW_OP_lit2), op(DW_OP_div)}) == uint64_t(-3));  // signed
  CHECK(value_of({op(DW_OP_lit7), op(DW_OP_lit3), op(DW_OP_mod)}) == 1);
  CHECK(value_of({op(DW_OP_lit6), op(DW_OP_lit3), op(DW_OP_and)}) == 2);
  CHECK(value_of({op(DW_OP_lit6), op(DW_OP_lit3), op(DW_OP_or)}) == 7);
  CHECK(value_of({op(DW_OP_lit6), op(DW_OP_lit3), op(DW_OP_xor)}) == 5);
  CHECK(value_of({op(DW_OP_lit6), op(DW_OP_neg)}) == sleb(-6));
  CHECK(value_of({op(DW_OP_lit0), op(DW_OP_not)}) == ~uint64_t(0));
  CHECK(value_of({op(DW_OP_lit6), op(DW_OP_plus_uconst, 100)}) == 106);
  CHECK(value_of({op(DW_OP_lit1), op(DW_OP_lit4), op(DW_OP_shl)}) == 16);
  CHECK(value_of({op(DW_OP_lit1), op(DW_OP_const1u, 64), op(DW_OP_shl)}) == 0);
  CHECK(value_of({op(DW_OP_lit16), op(DW_OP_lit2), op(DW_OP_shr)}) == 4);
  CHECK(value_of({op(DW_OP_consts, sleb(-16)), op(DW_OP_lit2), op(DW_OP_shr)}) == (sleb(-16) >> 2));
  CHECK(value_of({op(DW_OP_consts, sleb(-16)), op(DW_OP_lit2), op(DW_OP_shra)}) == sleb(-4));
  CHECK(value_of({op(DW_OP_consts, sleb(-16)), op(DW_OP_const1u, 200), op(DW_OP_shra)}) == sleb(-1));
}

TEST_CASE("dwarf_expr: stack operations", "[dwarf_expr]") {
  CHECK(value_of({op(DW_OP_lit5), op(DW_OP_dup), op(DW_OP_plus)}) == 10);
  CHECK(value_of({op(DW_OP_lit5), op(DW_OP_lit9), op(DW_OP_drop)}) == 5);
  CHECK(value_of({op(DW_OP_lit5), op(DW_OP_lit9), op(DW_OP_over)}) == 5);
  CHECK(value_of({op(DW_OP_lit5), op(DW_OP_lit9), op(DW_OP_swap)}) == 5);
  CHECK(value_of({op(DW_OP_lit5), op(DW_OP_lit9), op(DW_OP_swap), op(DW_OP_minus)}) == 4);
  CHECK(value_of({op(DW_OP_lit5), op(DW_OP_nop)}) == 5);
}

TEST_CASE("dwarf_expr: stack underflow names the operation", "[dwarf_expr]") {
  Machine m;
  for (uint8_t a : {DW_OP_dup, DW_OP_drop, DW_OP_neg, DW_OP_not, DW_OP_plus_uconst, DW_OP_deref, DW_OP_deref_size}) {
    INFO(op_name(a));
    CHECK(error_of({op(a, 1)}, m.env()) == op_name(a) + ": stack underflow (corrupt DWARF expression)");
  }
  for (uint8_t a : {DW_OP_over, DW_OP_swap, DW_OP_plus, DW_OP_minus, DW_OP_mul, DW_OP_div, DW_OP_mod, DW_OP_and,
                    DW_OP_or, DW_OP_xor, DW_OP_shl, DW_OP_shr, DW_OP_shra}) {
    INFO(op_name(a));
    CHECK(error_of({op(DW_OP_lit1), op(a)}, m.env()) == op_name(a) + ": stack underflow (corrupt DWARF expression)");
  }
  // Nothing left: no address and no value.
  CHECK_THAT(error_of({op(DW_OP_nop)}, m.env()), Catch::Contains("empty stack"));
  CHECK_THAT(error_of({op(DW_OP_lit1), op(DW_OP_drop), op(DW_OP_stack_value)}, m.env()),
             Catch::Contains("empty stack"));
  CHECK_THAT(error_of({}, m.env()), Catch::Contains("empty stack"));
  // Too deep.
  std::vector<Dwarf_Op> deep(100, op(DW_OP_lit1));
  CHECK(error_of(deep, m.env()) == "DW_OP_lit1: DWARF expression too deep");
}

TEST_CASE("dwarf_expr: memory reads", "[dwarf_expr]") {
  Machine m;
  auto l = eval({op(DW_OP_const2u, kMem + 4), op(DW_OP_deref), op(DW_OP_stack_value)}, m.env());
  REQUIRE(l);
  CHECK(l->value == 0x07060504);
  CHECK(m.mem_reads == std::vector<std::pair<uint32_t, uint32_t>>{{kMem + 4, 4}});

  l = eval({op(DW_OP_const2u, kMem + 4), op(DW_OP_deref_size, 2), op(DW_OP_stack_value)}, m.env());
  REQUIRE(l);
  CHECK(l->value == 0x0504);
  l = eval({op(DW_OP_const2u, kMem + 8), op(DW_OP_deref_size, 100), op(DW_OP_stack_value)}, m.env());
  REQUIRE(l);
  CHECK(l->value == 0x0f0e0d0c0b0a0908);  // at most 8 bytes

  // Deref of an address: the result is the address of the variable.
  l = eval({op(DW_OP_const2u, kMem), op(DW_OP_deref)}, m.env());
  REQUIRE(l);
  CHECK(l->kind == Kind::Memory);
  CHECK(l->address == 0x03020100);

  CHECK(error_of({op(DW_OP_const2u, 0x9000), op(DW_OP_deref)}, m.env()) ==
        "DW_OP_deref: Cannot access memory at address 0x9000");
  CHECK(error_of({op(DW_OP_lit4), op(DW_OP_deref_size, 1)}, m.env()) ==
        "DW_OP_deref_size: Cannot access memory at address 0x4");
  CHECK(error_of({op(DW_OP_lit4), op(DW_OP_deref)}, Env{}) == "DW_OP_deref: no memory to read");
}

TEST_CASE("dwarf_expr: stack_value and implicit_value", "[dwarf_expr]") {
  Machine m;
  auto l = eval({op(DW_OP_breg10, 3), op(DW_OP_stack_value)}, m.env());
  REQUIRE(l);
  CHECK(l->kind == Kind::Value);
  CHECK(l->value == 0xa03);

  Env e = m.env();
  std::vector<const Dwarf_Op*> asked;
  e.implicit_value = [&](const Dwarf_Op& o) -> Result<std::vector<uint8_t>> {
    asked.push_back(&o);
    return std::vector<uint8_t>(o.number, 0xab);
  };
  const std::vector<Dwarf_Op> ops = {op(DW_OP_implicit_value, 3)};
  l = evaluate(ops.data(), ops.size(), e);
  REQUIRE(l);
  CHECK(l->kind == Kind::Implicit);
  CHECK(l->bytes == std::vector<uint8_t>{0xab, 0xab, 0xab});
  CHECK(asked == std::vector<const Dwarf_Op*>{&ops[0]});  // libdw finds the block by the operation's address

  e.implicit_value = [](const Dwarf_Op&) -> Result<std::vector<uint8_t>> { return make_error("corrupt block"); };
  CHECK(error_of(ops, e) == "DW_OP_implicit_value: corrupt block");
  CHECK(error_of(ops, m.env()) == "DW_OP_implicit_value: its block is unknown");
}

TEST_CASE("dwarf_expr: pieces", "[dwarf_expr]") {
  Machine m;
  Env e = m.env();
  e.implicit_value = [](const Dwarf_Op&) -> Result<std::vector<uint8_t>> { return std::vector<uint8_t>{1, 2, 3, 4}; };
  auto l = eval({op(DW_OP_reg10), op(DW_OP_piece, 4),                        // a register
                 op(DW_OP_const2u, kMem + 0x10), op(DW_OP_piece, 2),         // memory
                 op(DW_OP_lit7), op(DW_OP_stack_value), op(DW_OP_piece, 2),  // a value
                 op(DW_OP_implicit_value, 4), op(DW_OP_piece, 2),            // cut to its size
                 op(DW_OP_reg11), op(DW_OP_piece, 1)},
                e);
  REQUIRE(l);
  REQUIRE(l->kind == Kind::Pieces);
  REQUIRE(l->pieces.size() == 5);
  CHECK(l->pieces[0].kind == Kind::Register);
  CHECK(l->pieces[0].reg == 10);
  CHECK(l->pieces[0].size == 4);
  CHECK(l->pieces[0].bytes == std::vector<uint8_t>{0x00, 0x0a, 0, 0});
  CHECK(l->pieces[1].kind == Kind::Memory);
  CHECK(l->pieces[1].address == kMem + 0x10);
  CHECK(l->pieces[1].bytes == std::vector<uint8_t>{0x10, 0x11});
  CHECK(l->pieces[2].kind == Kind::Value);
  CHECK(l->pieces[2].bytes == std::vector<uint8_t>{7, 0});
  CHECK(l->pieces[3].kind == Kind::Implicit);
  CHECK(l->pieces[3].bytes == std::vector<uint8_t>{1, 2});
  CHECK(l->pieces[4].bytes == std::vector<uint8_t>{0x00});
  CHECK(m.reg_reads == std::vector<unsigned>{10, 11});  // pieces read their registers

  // A piece wider than 8 bytes of a value: zeros above.
  l = eval({op(DW_OP_lit1), op(DW_OP_stack_value), op(DW_OP_piece, 10)}, m.env());
  REQUIRE(l);
  CHECK(l->pieces[0].bytes == std::vector<uint8_t>{1, 0, 0, 0, 0, 0, 0, 0, 0, 0});

  // An empty piece: that part is optimized out, the others are there (gdb prints them).
  l = eval({op(DW_OP_reg10), op(DW_OP_piece, 4), op(DW_OP_piece, 4)}, m.env());
  REQUIRE(l);
  CHECK(l->kind == Kind::Pieces);
  REQUIRE(l->pieces.size() == 2);
  CHECK(l->pieces[0].kind == Kind::Register);
  CHECK(l->pieces[1].kind == Kind::OptimizedOut);
  CHECK(l->pieces[1].bytes == std::vector<uint8_t>(4, 0));
  // Every piece empty: the whole value is optimized out.
  l = eval({op(DW_OP_piece, 4), op(DW_OP_piece, 4)}, m.env());
  REQUIRE(l);
  CHECK(l->kind == Kind::OptimizedOut);
  CHECK(l->pieces.empty());
  // A piece in a register the frame does not have: that part is not available.
  l = eval({op(DW_OP_reg5), op(DW_OP_piece, 4), op(DW_OP_reg10), op(DW_OP_piece, 4)}, m.env());
  REQUIRE(l);
  REQUIRE(l->pieces.size() == 2);
  CHECK(l->pieces[0].kind == Kind::Unavailable);
  CHECK(l->pieces[1].kind == Kind::Register);

  CHECK(error_of({op(DW_OP_lit8), op(DW_OP_piece, 4)}, m.env()) == "DW_OP_piece: Cannot access memory at address 0x8");
}

TEST_CASE("dwarf_expr: fbreg adds to the frame base", "[dwarf_expr]") {
  Machine m;
  Env e = m.env();
  Location base;
  base.kind = Kind::Register;
  base.reg = 8;
  e.frame_base = [&]() -> Result<Location> { return base; };
  auto l = eval({op(DW_OP_fbreg, sleb(-20))}, e);
  REQUIRE(l);
  CHECK(l->kind == Kind::Memory);
  CHECK(l->address == 0x800 - 20);

  base = Location{};
  base.kind = Kind::Memory;  // DW_OP_call_frame_cfa
  base.address = 0x7000;
  l = eval({op(DW_OP_fbreg, 8)}, e);
  REQUIRE(l);
  CHECK(l->address == 0x7008);

  base.kind = Kind::Unavailable;
  l = eval({op(DW_OP_fbreg, 8)}, e);
  REQUIRE(l);
  CHECK(l->kind == Kind::Unavailable);
  for (Kind k : {Kind::Value, Kind::Implicit, Kind::Pieces, Kind::OptimizedOut}) {
    base.kind = k;
    l = eval({op(DW_OP_fbreg, 8)}, e);
    REQUIRE(l);
    CHECK(l->kind == Kind::OptimizedOut);
  }

  base.kind = Kind::Register;
  base.reg = 5;
  CHECK(error_of({op(DW_OP_fbreg, 8)}, e) == "DW_OP_fbreg: $t0 is not available in this frame");
  e.frame_base = []() -> Result<Location> { return make_error("DW_OP_call_frame_cfa: the frame's CFA is unknown"); };
  CHECK(error_of({op(DW_OP_fbreg, 8)}, e) == "DW_OP_call_frame_cfa: the frame's CFA is unknown");
  CHECK(error_of({op(DW_OP_fbreg, 8)}, m.env()) == "DW_OP_fbreg: the function has no frame base");
}

TEST_CASE("dwarf_expr: call_frame_cfa", "[dwarf_expr]") {
  Machine m;
  Env e = m.env();
  CHECK(error_of({op(DW_OP_call_frame_cfa)}, e) == "DW_OP_call_frame_cfa: the frame's CFA is unknown");
  e.cfa = 0x7ff0;
  auto l = eval({op(DW_OP_call_frame_cfa), op(DW_OP_consts, sleb(-8)), op(DW_OP_plus)}, e);
  REQUIRE(l);
  CHECK(l->kind == Kind::Memory);
  CHECK(l->address == 0x7fe8);
  CHECK(m.reg_reads.empty());
  CHECK(m.mem_reads.empty());
}

TEST_CASE("dwarf_expr: entry values are optimized out, other operations unsupported", "[dwarf_expr]") {
  Machine m;
  CHECK(error_of({op(DW_OP_lit1), op(DW_OP_lit0), op(DW_OP_div)}, m.env()) == "DW_OP_div: division by zero");
  CHECK(error_of({op(DW_OP_lit1), op(DW_OP_lit0), op(DW_OP_mod)}, m.env()) == "DW_OP_mod: division by zero");
  for (uint8_t a : {DW_OP_entry_value, DW_OP_GNU_entry_value}) {
    auto l = eval({op(a, 1), op(DW_OP_reg10), op(DW_OP_stack_value)}, m.env());
    REQUIRE(l);
    CHECK(l->kind == Kind::OptimizedOut);
  }
  CHECK(error_of({op(DW_OP_lit1), op(DW_OP_skip, 0)}, m.env()) == "DW_OP_skip: unsupported DWARF operation");
  CHECK(error_of({op(0xe5)}, m.env()) == "DW_OP_0xe5: unsupported DWARF operation");
}

TEST_CASE("dwarf_expr: the reads do not depend on the values read", "[dwarf_expr]") {
  // debug/inspect.cpp probes locations with registers and memory that read as zeros.
  const std::vector<Dwarf_Op> ops = {op(DW_OP_breg2, 0x10), op(DW_OP_lit0),      op(DW_OP_plus),       op(DW_OP_deref),
                                     op(DW_OP_lit3),        op(DW_OP_shl),       op(DW_OP_piece, 4),   op(DW_OP_reg9),
                                     op(DW_OP_piece, 4),    op(DW_OP_breg10, 0), op(DW_OP_stack_value)};
  auto reads = [&](uint32_t fill) {
    std::vector<std::string> seen;
    Env e;
    e.reg = [&](unsigned r) -> std::optional<uint32_t> {
      seen.push_back("r" + std::to_string(r));
      return fill;
    };
    e.read = [&](uint32_t, uint32_t size) -> Result<std::vector<uint8_t>> {
      seen.push_back("m" + std::to_string(size));
      return std::vector<uint8_t>(size, uint8_t(fill));
    };
    REQUIRE(eval(ops, e));
    return seen;
  };
  CHECK(reads(0) == reads(0x12345678));
  CHECK(reads(0) == std::vector<std::string>{"r2", "m4", "m4", "r9", "r10"});
}

TEST_CASE("dwarf_expr: names", "[dwarf_expr]") {
  CHECK(op_name(DW_OP_breg8) == "DW_OP_breg8");
  CHECK(op_name(DW_OP_reg31) == "DW_OP_reg31");
  CHECK(op_name(DW_OP_lit3) == "DW_OP_lit3");
  CHECK(op_name(DW_OP_call_frame_cfa) == "DW_OP_call_frame_cfa");
  CHECK(op_name(DW_OP_GNU_entry_value) == "DW_OP_GNU_entry_value");
  CHECK(reg_name(10) == "$a0");
  CHECK(reg_name(40) == "$fs0");
  CHECK(reg_name(70) == "DWARF register 70");
}
