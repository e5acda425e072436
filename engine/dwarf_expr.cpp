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

Result<Location> evaluate(const Dwarf_Op* ops, size_t n, const Env& env) {
  Location loc;
  std::vector<uint64_t> st;
  // The location the operations so far describe, until a DW_OP_piece takes it: the last
  // DW_OP_regN, DW_OP_implicit_value or DW_OP_stack_value, else the stack's top is an address.
  bool have_reg = false;
  std::optional<std::vector<uint8_t>> implicit;
  bool stack_value = false;
  bool have_pieces = false;

  auto read_reg = [&](const Dwarf_Op& op, unsigned r) -> Result<uint64_t> {
    auto v = env.reg ? env.reg(r) : std::nullopt;
    if (!v) return fail(op, reg_name(r) + " is not available in this frame");
    return uint64_t(*v);
  };
  auto read = [&](const Dwarf_Op& op, uint64_t addr, uint32_t size) -> Result<std::vector<uint8_t>> {
    if (!env.read) return fail(op, "no memory to read");
    auto b = env.read(uint32_t(addr), size);
    if (!b) return fail(op, b.error().message);
    return b;
  };

  for (size_t i = 0; i < n; ++i) {
    const Dwarf_Op& op = ops[i];
    const uint8_t a = op.atom;
    auto need = [&](size_t k) -> Result<void> {
      if (st.size() < k) return fail(op, "stack underflow (corrupt DWARF expression)");
      return {};
    };
    if (st.size() > kMaxStack) return fail(op, "DWARF expression too deep");
    if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
      st.push_back(a - DW_OP_lit0);
    } else if (a >= DW_OP_reg0 && a <= DW_OP_reg31) {
      loc.reg = a - DW_OP_reg0;
      have_reg = true;
    } else if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
      auto v = read_reg(op, a - DW_OP_breg0);
      if (!v) return v.error();
      st.push_back(*v + op.number);
    } else {
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
        case DW_OP_consts:
          st.push_back(op.number);
          break;
        case DW_OP_regx:
          loc.reg = unsigned(op.number);
          have_reg = true;
          break;
        case DW_OP_bregx: {
          auto v = read_reg(op, unsigned(op.number));
          if (!v) return v.error();
          st.push_back(*v + op.number2);
          break;
        }
        case DW_OP_fbreg: {
          if (!env.frame_base) return fail(op, "the function has no frame base");
          auto base = env.frame_base();
          if (!base) return base.error();
          uint64_t b = 0;
          if (base->kind == Kind::Register) {
            auto v = read_reg(op, base->reg);
            if (!v) return v.error();
            b = *v;
          } else if (base->kind == Kind::Memory) {
            b = base->address;
          } else {
            Location out;
            out.kind = base->kind == Kind::Unavailable ? Kind::Unavailable : Kind::OptimizedOut;
            return out;
          }
          st.push_back(b + op.number);
          break;
        }
        case DW_OP_call_frame_cfa:
          if (!env.cfa) return fail(op, "the frame's CFA is unknown");
          st.push_back(*env.cfa);
          break;
        case DW_OP_dup:
          if (auto r = need(1); !r) return r.error();
          st.push_back(st.back());
          break;
        case DW_OP_drop:
          if (auto r = need(1); !r) return r.error();
          st.pop_back();
          break;
        case DW_OP_over:
          if (auto r = need(2); !r) return r.error();
          st.push_back(st[st.size() - 2]);
          break;
        case DW_OP_swap:
          if (auto r = need(2); !r) return r.error();
          std::swap(st[st.size() - 1], st[st.size() - 2]);
          break;
        case DW_OP_deref:
        case DW_OP_deref_size: {
          if (auto r = need(1); !r) return r.error();
          const uint32_t size = a == DW_OP_deref ? kAddressSize : uint32_t(std::min<uint64_t>(op.number, 8));
          auto b = read(op, st.back(), size);
          if (!b) return b.error();
          uint64_t v = 0;
          for (uint32_t k = 0; k < size && k < b->size(); ++k) v |= uint64_t((*b)[k]) << (8 * k);
          st.back() = v;
          break;
        }
        case DW_OP_plus_uconst:
          if (auto r = need(1); !r) return r.error();
          st.back() += op.number;
          break;
        case DW_OP_neg:
          if (auto r = need(1); !r) return r.error();
          st.back() = 0 - st.back();
          break;
        case DW_OP_not:
          if (auto r = need(1); !r) return r.error();
          st.back() = ~st.back();
          break;
        case DW_OP_plus:
        case DW_OP_minus:
        case DW_OP_mul:
        case DW_OP_and:
        case DW_OP_or:
        case DW_OP_xor:
        case DW_OP_shl:
        case DW_OP_shr:
        case DW_OP_shra: {
          if (auto r = need(2); !r) return r.error();
          const uint64_t y = st.back();
          st.pop_back();
          uint64_t& x = st.back();
          switch (a) {
            case DW_OP_plus:
              x += y;
              break;
            case DW_OP_minus:
              x -= y;
              break;
            case DW_OP_mul:
              x *= y;
              break;
            case DW_OP_and:
              x &= y;
              break;
            case DW_OP_or:
              x |= y;
              break;
            case DW_OP_xor:
              x ^= y;
              break;
            case DW_OP_shl:
              x = y < 64 ? x << y : 0;
              break;
            case DW_OP_shr:
              x = y < 64 ? x >> y : 0;
              break;
            default:
              x = uint64_t(int64_t(x) >> (y < 64 ? y : 63));
              break;
          }
          break;
        }
        case DW_OP_stack_value:
          stack_value = true;
          break;
        case DW_OP_implicit_value: {
          if (!env.implicit_value) return fail(op, "its block is unknown");
          auto b = env.implicit_value(op);
          if (!b) return fail(op, b.error().message);
          implicit = std::move(*b);
          break;
        }
        case DW_OP_piece: {
          Piece p;
          p.size = uint32_t(std::min<uint64_t>(op.number, 64));
          have_pieces = true;
          if (have_reg) {
            // A register the frame does not have (a caller's that its callees did not save):
            // that part is not available, the other parts are.
            auto v = env.reg ? env.reg(loc.reg) : std::nullopt;
            p.kind = v ? Kind::Register : Kind::Unavailable;
            p.reg = loc.reg;
            put_le(p.bytes, v.value_or(0), p.size);
          } else if (implicit) {
            p.kind = Kind::Implicit;
            p.bytes = std::move(*implicit);
            p.bytes.resize(p.size);
          } else if (stack_value && !st.empty()) {
            p.kind = Kind::Value;
            put_le(p.bytes, st.back(), p.size);
          } else if (!st.empty()) {
            auto b = read(op, st.back(), p.size);
            if (!b) return b.error();
            p.address = uint32_t(st.back());
            p.bytes = std::move(*b);
          } else {
            // An empty piece: that part is optimized out (gdb prints the other parts).
            p.kind = Kind::OptimizedOut;
            p.bytes.assign(p.size, 0);
          }
          loc.pieces.push_back(std::move(p));
          loc.reg = 0;
          have_reg = false;
          implicit.reset();
          stack_value = false;
          st.clear();
          break;
        }
        case DW_OP_entry_value:
        case DW_OP_GNU_entry_value:
          // The value the register had when the function was entered: not kept by the device.
          return Location{};
        case DW_OP_nop:
          break;
        default:
          return fail(op, "unsupported DWARF operation");
      }
    }
  }
  if (have_pieces) {
    if (std::all_of(loc.pieces.begin(), loc.pieces.end(), [](const Piece& p) { return p.kind == Kind::OptimizedOut; }))
      return Location{};  // every part optimized out: the whole value is
    loc.kind = Kind::Pieces;
    loc.reg = 0;
  } else if (have_reg) {
    loc.kind = Kind::Register;
  } else if (implicit) {
    loc.kind = Kind::Implicit;
    loc.bytes = std::move(*implicit);
  } else if (stack_value) {
    if (st.empty()) return make_error(kEmpty);
    loc.kind = Kind::Value;
    loc.value = st.back();
  } else {
    if (st.empty()) return make_error(kEmpty);
    loc.kind = Kind::Memory;
    loc.address = uint32_t(st.back());
  }
  return loc;
}

}  // namespace vx::engine::dwarf
