// The DWARF expression evaluator: see dwarf_expr.hpp.
#include "engine/dwarf_expr.hpp"

#include <dwarf.h>

#include <algorithm>
#include <cstdio>

namespace vx::engine::dwarf {

namespace {

constexpr size_t kMaxStack = 64;  // stack entries (hostile DWARF)
constexpr const char* kEmpty = "corrupt DWARF expression: it ends with an empty stack";

void put_le(std::vector<uint8_t>& out, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) out.push_back(i < 8 ? uint8_t(v >> (8 * i)) : 0);
}

Error fail(const Dwarf_Op& op, const std::string& why) { return make_error(op_name(op.atom) + ": " + why); }

}  // namespace

std::string op_name(unsigned atom) {
  if (atom >= DW_OP_lit0 && atom <= DW_OP_lit31) return "DW_OP_lit" + std::to_string(atom - DW_OP_lit0);
  if (atom >= DW_OP_reg0 && atom <= DW_OP_reg31) return "DW_OP_reg" + std::to_string(atom - DW_OP_reg0);
  if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) return "DW_OP_breg" + std::to_string(atom - DW_OP_breg0);
  // clang-format off
  switch (atom) {
#define VX_OP(name) \
  case DW_OP_##name: \
    return "DW_OP_" #name;
    VX_OP(addr) VX_OP(deref) VX_OP(const1u) VX_OP(const1s) VX_OP(const2u) VX_OP(const2s) VX_OP(const4u)
    VX_OP(const4s) VX_OP(const8u) VX_OP(const8s) VX_OP(constu) VX_OP(consts) VX_OP(dup) VX_OP(drop) VX_OP(over)
    VX_OP(pick) VX_OP(swap) VX_OP(rot) VX_OP(xderef) VX_OP(abs) VX_OP(and) VX_OP(div) VX_OP(minus) VX_OP(mod)
    VX_OP(mul) VX_OP(neg) VX_OP(not) VX_OP(or) VX_OP(plus) VX_OP(plus_uconst) VX_OP(shl) VX_OP(shr) VX_OP(shra)
    VX_OP(xor) VX_OP(bra) VX_OP(eq) VX_OP(ge) VX_OP(gt) VX_OP(le) VX_OP(lt) VX_OP(ne) VX_OP(skip) VX_OP(regx)
    VX_OP(fbreg) VX_OP(bregx) VX_OP(piece) VX_OP(deref_size) VX_OP(xderef_size) VX_OP(nop)
    VX_OP(push_object_address) VX_OP(call2) VX_OP(call4) VX_OP(call_ref) VX_OP(form_tls_address)
    VX_OP(call_frame_cfa) VX_OP(bit_piece) VX_OP(implicit_value) VX_OP(stack_value) VX_OP(implicit_pointer)
    VX_OP(addrx) VX_OP(constx) VX_OP(entry_value) VX_OP(const_type) VX_OP(regval_type) VX_OP(deref_type)
    VX_OP(convert) VX_OP(reinterpret) VX_OP(GNU_push_tls_address) VX_OP(GNU_implicit_pointer)
    VX_OP(GNU_entry_value) VX_OP(GNU_parameter_ref) VX_OP(GNU_variable_value)
#undef VX_OP
  }
  // clang-format on
  char b[24];
  std::snprintf(b, sizeof b, "DW_OP_0x%x", atom);
  return b;
}

std::string reg_name(unsigned r) {
  static const char* x[32] = {"zero", "ra", "sp", "gp", "tp",  "t0",  "t1", "t2", "s0", "s1", "a0",
                              "a1",   "a2", "a3", "a4", "a5",  "a6",  "a7", "s2", "s3", "s4", "s5",
                              "s6",   "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6"};
  static const char* f[32] = {"ft0", "ft1", "ft2", "ft3", "ft4",  "ft5",  "ft6", "ft7", "fs0",  "fs1", "fa0",
                              "fa1", "fa2", "fa3", "fa4", "fa5",  "fa6",  "fa7", "fs2", "fs3",  "fs4", "fs5",
                              "fs6", "fs7", "fs8", "fs9", "fs10", "fs11", "ft8", "ft9", "ft10", "ft11"};
  if (r < 32) return std::string("$") + x[r];
  if (r < 64) return std::string("$") + f[r - 32];
  return "DWARF register " + std::to_string(r);
}

namespace {

// One evaluation: the stack, and the location the operations so far describe until a
// DW_OP_piece takes it (the last DW_OP_regN, DW_OP_implicit_value or DW_OP_stack_value, else the
// stack's top is an address). Each operation is one call; `done` ends the expression early with
// its location (an entry value, a frame base that is not there).
class Evaluator {
 public:
  explicit Evaluator(const Env& env) : env_(env) {}
  Result<void> apply(const Dwarf_Op& op);
  std::optional<Location> done;
  Result<Location> result();

 private:
  Result<uint64_t> read_reg(const Dwarf_Op& op, unsigned r) const {
    auto v = env_.reg ? env_.reg(r) : std::nullopt;
    if (!v) return fail(op, reg_name(r) + " is not available in this frame");
    return uint64_t(*v);
  }
  Result<std::vector<uint8_t>> read(const Dwarf_Op& op, uint64_t addr, uint32_t size) const {
    if (!env_.read) return fail(op, "no memory to read");
    auto b = env_.read(uint32_t(addr), size);
    if (!b) return fail(op, b.error().message);
    return b;
  }
  Result<void> need(const Dwarf_Op& op, size_t k) const {
    if (st_.size() < k) return fail(op, "stack underflow (corrupt DWARF expression)");
    return {};
  }
  Result<void> push_reg(const Dwarf_Op& op, unsigned r, uint64_t offset) {
    auto v = read_reg(op, r);
    if (!v) return v.error();
    st_.push_back(*v + offset);
    return {};
  }
  Result<void> frame_base(const Dwarf_Op& op);
  Result<void> stack_op(const Dwarf_Op& op);
  Result<void> binary(const Dwarf_Op& op);
  Result<void> piece(const Dwarf_Op& op);

  const Env& env_;
  Location loc_;
  std::vector<uint64_t> st_;
  bool have_reg_ = false;
  std::optional<std::vector<uint8_t>> implicit_;
  bool stack_value_ = false;
  bool have_pieces_ = false;
};

Result<void> Evaluator::apply(const Dwarf_Op& op) {
  const uint8_t a = op.atom;
  if (st_.size() > kMaxStack) return fail(op, "DWARF expression too deep");
  if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
    st_.push_back(a - DW_OP_lit0);
    return {};
  }
  if (a >= DW_OP_reg0 && a <= DW_OP_reg31) {
    loc_.reg = a - DW_OP_reg0;
    have_reg_ = true;
    return {};
  }
  if (a >= DW_OP_breg0 && a <= DW_OP_breg31) return push_reg(op, a - DW_OP_breg0, op.number);
  switch (a) {
    case DW_OP_addr:
    case DW_OP_const1u:
    case DW_OP_const2u:
    case DW_OP_const4u:
    case DW_OP_const8u:
    case DW_OP_constu:
    case DW_OP_const1s:
    case DW_OP_const2s:
    case DW_OP_const4s:
    case DW_OP_const8s:
    case DW_OP_consts: st_.push_back(op.number); return {};
    case DW_OP_regx:
      loc_.reg = unsigned(op.number);
      have_reg_ = true;
      return {};
    case DW_OP_bregx: return push_reg(op, unsigned(op.number), op.number2);
    case DW_OP_fbreg: return frame_base(op);
    case DW_OP_call_frame_cfa:
      if (!env_.cfa) return fail(op, "the frame's CFA is unknown");
      st_.push_back(*env_.cfa);
      return {};
    case DW_OP_dup:
    case DW_OP_drop:
    case DW_OP_over:
    case DW_OP_swap:
    case DW_OP_deref:
    case DW_OP_deref_size:
    case DW_OP_plus_uconst:
    case DW_OP_neg:
    case DW_OP_not: return stack_op(op);
    case DW_OP_plus:
    case DW_OP_minus:
    case DW_OP_mul:
    case DW_OP_div:
    case DW_OP_mod:
    case DW_OP_and:
    case DW_OP_or:
    case DW_OP_xor:
    case DW_OP_shl:
    case DW_OP_shr:
    case DW_OP_shra: return binary(op);
    case DW_OP_stack_value: stack_value_ = true; return {};
    case DW_OP_implicit_value: {
      if (!env_.implicit_value) return fail(op, "its block is unknown");
      auto b = env_.implicit_value(op);
      if (!b) return fail(op, b.error().message);
      implicit_ = std::move(*b);
      return {};
    }
    case DW_OP_piece: return piece(op);
    case DW_OP_entry_value:
    case DW_OP_GNU_entry_value:
      // The value the register had when the function was entered: not kept by the device.
      done = Location{};
      return {};
    case DW_OP_nop: return {};
    default: return fail(op, "unsupported DWARF operation");
  }
}

Result<void> Evaluator::frame_base(const Dwarf_Op& op) {
  if (!env_.frame_base) return fail(op, "the function has no frame base");
  auto base = env_.frame_base();
  if (!base) return base.error();
  if (base->kind == Kind::Register) return push_reg(op, base->reg, op.number);
  if (base->kind == Kind::Memory) {
    st_.push_back(base->address + op.number);
    return {};
  }
  Location out;
  out.kind = base->kind == Kind::Unavailable ? Kind::Unavailable : Kind::OptimizedOut;
  done = out;
  return {};
}

// The operations on the stack's top entries (and a load through the top).
Result<void> Evaluator::stack_op(const Dwarf_Op& op) {
  const uint8_t a = op.atom;
  if (auto r = need(op, a == DW_OP_over || a == DW_OP_swap ? 2 : 1); !r) return r;
  switch (a) {
    case DW_OP_dup: st_.push_back(st_.back()); break;
    case DW_OP_drop: st_.pop_back(); break;
    case DW_OP_over: st_.push_back(st_[st_.size() - 2]); break;
    case DW_OP_swap: std::swap(st_[st_.size() - 1], st_[st_.size() - 2]); break;
    case DW_OP_deref:
    case DW_OP_deref_size: {
      const uint32_t size = a == DW_OP_deref ? kAddressSize : uint32_t(std::min<uint64_t>(op.number, 8));
      auto b = read(op, st_.back(), size);
      if (!b) return b.error();
      uint64_t v = 0;
      for (uint32_t k = 0; k < size && k < b->size(); ++k) v |= uint64_t((*b)[k]) << (8 * k);
      st_.back() = v;
      break;
    }
    case DW_OP_plus_uconst: st_.back() += op.number; break;
    case DW_OP_neg: st_.back() = 0 - st_.back(); break;
    default: st_.back() = ~st_.back(); break;  // DW_OP_not
  }
  return {};
}

// The arithmetic of the top two entries: the result replaces them.
Result<void> Evaluator::binary(const Dwarf_Op& op) {
  if (auto r = need(op, 2); !r) return r;
  const uint64_t y = st_.back();
  st_.pop_back();
  uint64_t& x = st_.back();
  switch (op.atom) {
    case DW_OP_plus: x += y; break;
    case DW_OP_minus: x -= y; break;
    case DW_OP_mul: x *= y; break;
    // DW_OP_div divides signed, DW_OP_mod is unsigned (DWARF 5, 2.5.1.4).
    case DW_OP_div:
      if (y == 0) return fail(op, "division by zero");
      x = int64_t(y) == -1 ? 0 - x : uint64_t(int64_t(x) / int64_t(y));
      break;
    case DW_OP_mod:
      if (y == 0) return fail(op, "division by zero");
      x %= y;
      break;
    case DW_OP_and: x &= y; break;
    case DW_OP_or: x |= y; break;
    case DW_OP_xor: x ^= y; break;
    case DW_OP_shl: x = y < 64 ? x << y : 0; break;
    case DW_OP_shr: x = y < 64 ? x >> y : 0; break;
    default: x = uint64_t(int64_t(x) >> (y < 64 ? y : 63)); break;  // DW_OP_shra
  }
  return {};
}

// DW_OP_piece: the location so far becomes one part of the value.
Result<void> Evaluator::piece(const Dwarf_Op& op) {
  Piece p;
  p.size = uint32_t(std::min<uint64_t>(op.number, 64));
  have_pieces_ = true;
  if (have_reg_) {
    // A register the frame does not have (a caller's that its callees did not save):
    // that part is not available, the other parts are.
    auto v = env_.reg ? env_.reg(loc_.reg) : std::nullopt;
    p.kind = v ? Kind::Register : Kind::Unavailable;
    p.reg = loc_.reg;
    put_le(p.bytes, v.value_or(0), p.size);
  } else if (implicit_) {
    p.kind = Kind::Implicit;
    p.bytes = std::move(*implicit_);
    p.bytes.resize(p.size);
  } else if (stack_value_ && !st_.empty()) {
    p.kind = Kind::Value;
    put_le(p.bytes, st_.back(), p.size);
  } else if (!st_.empty()) {
    auto b = read(op, st_.back(), p.size);
    if (!b) return b.error();
    p.address = uint32_t(st_.back());
    p.bytes = std::move(*b);
  } else {
    // An empty piece: that part is optimized out (gdb prints the other parts).
    p.kind = Kind::OptimizedOut;
    p.bytes.assign(p.size, 0);
  }
  loc_.pieces.push_back(std::move(p));
  loc_.reg = 0;
  have_reg_ = false;
  implicit_.reset();
  stack_value_ = false;
  st_.clear();
  return {};
}

Result<Location> Evaluator::result() {
  Location loc = std::move(loc_);
  if (have_pieces_) {
    if (std::all_of(loc.pieces.begin(), loc.pieces.end(), [](const Piece& p) { return p.kind == Kind::OptimizedOut; }))
      return Location{};  // every part optimized out: the whole value is
    loc.kind = Kind::Pieces;
    loc.reg = 0;
  } else if (have_reg_) {
    loc.kind = Kind::Register;
  } else if (implicit_) {
    loc.kind = Kind::Implicit;
    loc.bytes = std::move(*implicit_);
  } else if (stack_value_) {
    if (st_.empty()) return make_error(kEmpty);
    loc.kind = Kind::Value;
    loc.value = st_.back();
  } else {
    if (st_.empty()) return make_error(kEmpty);
    loc.kind = Kind::Memory;
    loc.address = uint32_t(st_.back());
  }
  return loc;
}

}  // namespace

Result<Location> evaluate(const Dwarf_Op* ops, size_t n, const Env& env) {
  Evaluator ev(env);
  for (size_t i = 0; i < n; ++i) {
    if (auto r = ev.apply(ops[i]); !r) return r.error();
    if (ev.done) return *ev.done;
  }
  return ev.result();
}

}  // namespace vx::engine::dwarf
