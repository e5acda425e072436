#include "debug/values.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace vx::debug {

using engine::CType;
using K = CType::Kind;

namespace {

constexpr uint32_t kMaxArrayShown = 200;   // elements printed before "..."
constexpr uint32_t kRepeatThreshold = 10;  // equal neighbours shown as <repeats N times>
constexpr uint32_t kMaxValueBytes = 1u << 20;

uint64_t raw(const CValue& v) {
  uint64_t x = 0;
  for (size_t i = 0; i < v.bytes.size() && i < 8; ++i) x |= uint64_t(v.bytes[i]) << (8 * i);
  return x;
}

std::vector<uint8_t> le(uint64_t x, uint32_t n) {
  std::vector<uint8_t> b(n);
  for (uint32_t i = 0; i < n; ++i) b[i] = uint8_t(i < 8 ? x >> (8 * i) : 0);
  return b;
}

bool is_scalar(const CType& t) {
  return t.kind == K::Int || t.kind == K::Bool || t.kind == K::Enum || t.kind == K::Float || t.kind == K::Pointer;
}

int64_t int_of(const CValue& v) {
  const CType& t = engine::strip_typedefs(*v.type);
  uint64_t x = raw(v);
  const uint32_t size = std::min<uint32_t>(t.size ? t.size : 4, 8);
  if (size < 8) {
    const uint64_t mask = (uint64_t(1) << (8 * size)) - 1;
    x &= mask;
    if (t.is_signed && (x >> (8 * size - 1)) & 1) x |= ~mask;
  }
  return int64_t(x);
}

double double_of(const CValue& v) {
  const CType& t = engine::strip_typedefs(*v.type);
  if (t.kind == K::Float) {
    uint64_t x = raw(v);
    if (t.size == 4) {
      float f;
      uint32_t b = uint32_t(x);
      std::memcpy(&f, &b, 4);
      return f;
    }
    double d;
    std::memcpy(&d, &x, 8);
    return d;
  }
  const int64_t i = int_of(v);
  return t.is_signed ? double(i) : double(uint64_t(i));
}

// The part [off, off + size) of an aggregate's value (a member, an element), with what of it has
// no value.
CValue part_of(const CValue& v, const engine::CType* type, uint32_t off, uint32_t size) {
  CValue m;
  m.type = type;
  m.bytes.assign(v.bytes.begin() + off, v.bytes.begin() + off + size);
  for (const engine::MissingBytes& b : v.missing_parts)
    if (b.lo < off + size && b.hi > off)
      m.missing_parts.push_back(
          engine::MissingBytes{std::max(b.lo, off) - off, std::min(b.hi, off + size) - off, b.unavailable});
  return m;
}

Result<void> present(const CValue& v) {
  if (!v.missing.empty()) return make_error("value " + v.missing);
  if (!v.missing_parts.empty()) return make_error("value has parts optimized out");
  return {};
}

std::string hexs(uint64_t x) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(x));
  return b;
}

// A char type of one byte (arrays of it print as strings, pointers to it with their string).
bool is_text(const CType* t) {
  if (!t) return false;
  const CType& s = engine::strip_typedefs(*t);
  return s.kind == K::Int && s.size == 1 && s.is_char;
}

// One char as gdb writes it between `quote`s: \n and friends, \\, the quote escaped, else octal.
std::string char_text(uint8_t c, char quote) {
  static const char kNamed[] = {'a', 'b', 't', 'n', 'v', 'f', 'r'};  // chars 7 to 13
  if (c >= 7 && c <= 13) return std::string("\\") + kNamed[c - 7];
  if (c == '\\' || c == uint8_t(quote)) return std::string("\\") + char(c);
  if (c >= 32 && c < 127) return std::string(1, char(c));
  char b[8];
  std::snprintf(b, sizeof b, "\\%03o", c);
  return b;
}

// gdb's generic_printstr: one trailing NUL dropped, runs of more than kRepeatThreshold equal chars as
// 'c' <repeats N times>, the rest in quotes, runs taken whole until kMaxArrayShown chars are shown.
std::string format_string(const std::vector<uint8_t>& s, bool more) {
  size_t len = s.size();
  if (!more && len > 0 && s[len - 1] == 0) --len;
  if (len == 0) return "\"\"";
  std::string out;
  bool quoted = false;
  size_t i = 0;
  for (size_t shown = 0; i < len && shown < kMaxArrayShown;) {
    size_t j = i;
    while (j < len && s[j] == s[i]) ++j;
    if (j - i > kRepeatThreshold) {
      out += std::string(quoted        ? "\", "
                         : out.empty() ? ""
                                       : ", ") +
             "'" + char_text(s[i], '\'') + "' <repeats " + std::to_string(j - i) + " times>";
      quoted = false;
    } else {
      if (!quoted) out += out.empty() ? "\"" : ", \"";
      quoted = true;
      for (size_t k = i; k < j; ++k) out += char_text(s[k], '"');
    }
    shown += j - i;
    i = j;
  }
  if (quoted) out += '"';
  return i < len || more ? out + "..." : out;
}

}  // namespace

TypeArena::TypeArena() {
  auto add = [&](const char* name, K kind, uint32_t size, bool is_signed, bool is_char = false) {
    CType t;
    t.kind = kind;
    t.name = name;
    t.size = size;
    t.is_signed = is_signed;
    t.is_char = is_char;
    owned_.push_back(t);
    builtins_.emplace_back(name, &owned_.back());
  };
  add("int", K::Int, 4, true);
  add("unsigned int", K::Int, 4, false);
  add("long long", K::Int, 8, true);
  add("unsigned long long", K::Int, 8, false);
  add("long", K::Int, 4, true);
  add("unsigned long", K::Int, 4, false);
  add("short", K::Int, 2, true);
  add("unsigned short", K::Int, 2, false);
  add("char", K::Int, 1, false, true);  // unsigned on RISC-V
  add("signed char", K::Int, 1, true, true);
  add("unsigned char", K::Int, 1, false, true);
  add("float", K::Float, 4, false);
  add("double", K::Float, 8, false);
  add("_Bool", K::Bool, 1, false);
  add("void", K::Void, 1, false);
}

const CType* TypeArena::builtin(const std::string& name) const {
  std::string n = name;
  static const std::pair<const char*, const char*> kAliases[] = {{"unsigned", "unsigned int"},
                                                                 {"signed", "int"},
                                                                 {"signed int", "int"},
                                                                 {"long int", "long"},
                                                                 {"unsigned long int", "unsigned long"},
                                                                 {"long long int", "long long"},
                                                                 {"unsigned long long int", "unsigned long long"},
                                                                 {"short int", "short"},
                                                                 {"unsigned short int", "unsigned short"},
                                                                 {"bool", "_Bool"}};
  for (auto [a, b] : kAliases)
    if (n == a) n = b;
  for (const auto& [bn, t] : builtins_)
    if (bn == n) return t;
  return nullptr;
}

const CType* TypeArena::pointer_to(const CType* t) {
  CType p;
  p.kind = K::Pointer;
  p.size = 4;
  p.target = t && t->kind == K::Void ? nullptr : t;
  owned_.push_back(p);
  return &owned_.back();
}

const CType* TypeArena::array_of(const CType* t, uint32_t n) {
  CType a;
  a.kind = K::Array;
  a.target = t;
  a.count = n;
  a.size = t ? t->size * n : 0;
  owned_.push_back(a);
  return &owned_.back();
}

const CType* TypeArena::dim3() {
  if (dim3_) return dim3_;
  CType d;
  d.kind = K::Struct;
  d.name = "dim3";
  d.size = 12;
  for (uint32_t i = 0; i < 3; ++i)
    d.fields.push_back(CType::Field{std::string(1, char('x' + i)), 4 * i, builtin("unsigned int"), 0, 0});
  owned_.push_back(d);
  return dim3_ = &owned_.back();
}

Result<const CType*> parse_type(const std::string& text, const ValueEnv& env, TypeArena& arena) {
  std::string base;
  size_t stars = 0;
  std::string word;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ' ';
    if (c == '*') ++stars;
    if (c == ' ' || c == '*') {
      if (!word.empty() && word != "const" && word != "volatile") base += (base.empty() ? "" : " ") + word;
      word.clear();
    } else {
      word += c;
    }
  }
  const CType* t = env.type_named(base);
  if (!t) t = arena.builtin(base);
  if (!t) return make_error("no type named \"" + base + "\"");
  for (size_t i = 0; i < stars; ++i) t = arena.pointer_to(t);
  return t;
}

Result<int64_t> c_to_int(const CValue& v) {
  if (auto p = present(v); !p) return p.error();
  const CType& t = engine::strip_typedefs(*v.type);
  if (!is_scalar(t)) return make_error("a " + engine::type_name(*v.type) + " is not a number");
  if (t.kind == K::Float) {
    const double d = double_of(v);
    if (!std::isfinite(d) || std::fabs(d) > 9.2e18) return make_error("the float value does not fit an integer");
    return int64_t(d);
  }
  return int_of(v);
}

namespace {

struct Evaluator {
  const ValueEnv& env;
  TypeArena& arena;

  const CType* t(const char* name) { return arena.builtin(name); }

  CValue make_int(int64_t x, const CType* type) {
    CValue v;
    v.type = type;
    v.bytes = le(uint64_t(x), type->size);
    return v;
  }
  CValue make_double(double d, const CType* type) {
    CValue v;
    v.type = type;
    if (type->size == 4) {
      float f = float(d);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      v.bytes = le(b, 4);
    } else {
      uint64_t b;
      std::memcpy(&b, &d, 8);
      v.bytes = le(b, 8);
    }
    return v;
  }

  Result<CValue> load(const CType* type, uint32_t addr) {
    if (!type || type->kind == K::Void) return make_error("attempt to take the contents of a void pointer");
    if (type->kind == K::Function) return make_error("cannot read a function's value");
    if (type->size > kMaxValueBytes)
      return make_error("the value is too large to read (" + std::to_string(type->size) + " bytes)");
    auto b = env.read(addr, type->size);
    if (!b) return b.error();
    CValue v;
    v.type = type;
    v.bytes = std::move(*b);
    v.address = addr;
    return v;
  }

  // Part of a value: a member or an element.
  Result<CValue> part(const CValue& whole, uint32_t offset, const CType* type) {
    if (whole.address) return load(type, *whole.address + offset);
    if (!whole.missing.empty()) return make_error("value " + whole.missing);
    if (uint64_t(offset) + type->size > whole.bytes.size())
      return make_error("index out of the bounds of a value that is not in memory");
    return part_of(whole, type, offset, type->size);  // with what of it is optimized out
  }

  Result<CValue> var(const Variable& var) {
    using VK = Variable::Kind;
    if (var.kind == VK::Source) {
      if (var.name == "$blockIdx" || var.name == "$threadIdx") {
        CValue v;
        v.type = arena.dim3();
        for (unsigned i = 0; i < 3; ++i) {
          Variable c;
          c.kind = var.name == "$blockIdx" ? VK::BlockIdx : VK::ThreadIdx;
          c.index = i;
          auto x = env.plain().value(c);
          if (!x) return x.error();
          auto b = le(uint64_t(*x), 4);
          v.bytes.insert(v.bytes.end(), b.begin(), b.end());
        }
        return v;
      }
      auto found = env.variable(var.name);
      if (!found) return found.error();
      if (!*found) {
        std::string msg = "no symbol \"" + var.name + "\" in the current context";
        if (parse_register(var.name)) msg += " (registers take a '$': $" + var.name + ")";
        return make_error(msg);
      }
      return **found;
    }
    if (var.kind == VK::Symbol) {
      // &name: a C variable's address, else the ELF symbol's.
      auto found = env.variable(var.name);
      if (found && *found && (*found)->address) {
        CValue p = make_int(int64_t(*(*found)->address), t("unsigned int"));
        p.type = arena.pointer_to((*found)->type);
        return p;
      }
      if (found && *found && (*found)->reg)
        return make_error("\"" + var.name + "\" is in a register: it has no address");
    }
    auto x = env.plain().value(var);
    if (!x) return x.error();
    if (var.kind == VK::FReg) {
      CValue v;
      v.type = t("float");
      v.bytes = le(uint64_t(*x), 4);
      return v;
    }
    return make_int(*x, *x >= 0 && *x <= int64_t(UINT32_MAX) ? t("unsigned int") : t("long long"));
  }

  // C's usual arithmetic conversions on ilp32: the common type of two integers.
  const CType* common(const CType& a, const CType& b) {
    const uint32_t sa = std::max<uint32_t>(a.size, 4), sb = std::max<uint32_t>(b.size, 4);
    const bool ua = !a.is_signed && a.size >= 4, ub = !b.is_signed && b.size >= 4;
    if (sa == 8 || sb == 8) {
      const bool u = (sa == 8 && ua) || (sb == 8 && ub);
      return t(u ? "unsigned long long" : "long long");
    }
    return t(ua || ub ? "unsigned int" : "int");
  }

  Result<CValue> binary(ExprOp op, const CValue& x, const CValue& y) {
    if (auto p = present(x); !p) return p.error();
    if (auto p = present(y); !p) return p.error();
    const CType& a = engine::strip_typedefs(*x.type);
    const CType& b = engine::strip_typedefs(*y.type);
    const bool cmp = op == ExprOp::Lt || op == ExprOp::Le || op == ExprOp::Gt || op == ExprOp::Ge || op == ExprOp::Eq ||
                     op == ExprOp::Ne;
    // Arrays decay to pointers in arithmetic.
    auto decay = [&](const CValue& v, const CType& ty) -> std::optional<CValue> {
      if (ty.kind != K::Array || !v.address) return std::nullopt;
      CValue p = make_int(*v.address, t("unsigned int"));
      p.type = arena.pointer_to(ty.target);
      return p;
    };
    if (auto dx = decay(x, a)) return binary(op, *dx, y);
    if (auto dy = decay(y, b)) return binary(op, x, *dy);
    if (!is_scalar(a) || !is_scalar(b))
      return make_error("operator on a " + engine::type_name(is_scalar(a) ? *y.type : *x.type) +
                        ", which is not a number");
    if (op == ExprOp::And || op == ExprOp::Or) {
      const bool l = a.kind == K::Float ? double_of(x) != 0 : int_of(x) != 0;
      const bool r = b.kind == K::Float ? double_of(y) != 0 : int_of(y) != 0;
      return make_int(op == ExprOp::And ? (l && r) : (l || r), t("int"));
    }
    // Pointer arithmetic scales by the target's size.
    if ((a.kind == K::Pointer || b.kind == K::Pointer) && !cmp) {
      const uint32_t sa = a.kind == K::Pointer && a.target ? std::max<uint32_t>(a.target->size, 1) : 1;
      const uint32_t sb = b.kind == K::Pointer && b.target ? std::max<uint32_t>(b.target->size, 1) : 1;
      if (a.kind == K::Pointer && b.kind == K::Pointer) {
        if (op != ExprOp::Sub) return make_error("only subtraction takes two pointers");
        return make_int((int_of(x) - int_of(y)) / int64_t(sa), t("int"));
      }
      if (op == ExprOp::Add || (op == ExprOp::Sub && a.kind == K::Pointer)) {
        const CValue& p = a.kind == K::Pointer ? x : y;
        const int64_t i = a.kind == K::Pointer ? int_of(y) : int_of(x);
        const uint32_t s = a.kind == K::Pointer ? sa : sb;
        CValue r =
            make_int(int64_t(uint32_t(int_of(p) + (op == ExprOp::Add ? i : -i) * int64_t(s))), t("unsigned int"));
        r.type = p.type;
        return r;
      }
    }
    if (a.kind == K::Float || b.kind == K::Float) {
      const double l = double_of(x), r = double_of(y);
      const CType* ft =
          (a.kind == K::Float && a.size == 8) || (b.kind == K::Float && b.size == 8) ? t("double") : t("float");
      switch (op) {
        case ExprOp::Add: return make_double(l + r, ft);
        case ExprOp::Sub: return make_double(l - r, ft);
        case ExprOp::Mul: return make_double(l * r, ft);
        case ExprOp::Div: return make_double(l / r, ft);
        case ExprOp::Lt: return make_int(l < r, t("int"));
        case ExprOp::Le: return make_int(l <= r, t("int"));
        case ExprOp::Gt: return make_int(l > r, t("int"));
        case ExprOp::Ge: return make_int(l >= r, t("int"));
        case ExprOp::Eq: return make_int(l == r, t("int"));
        case ExprOp::Ne: return make_int(l != r, t("int"));
        default: return make_error("integer operator on a floating-point value");
      }
    }
    const CType* ct =
        common(a.kind == K::Pointer ? *t("unsigned int") : a, b.kind == K::Pointer ? *t("unsigned int") : b);
    const bool u = !ct->is_signed;
    const uint64_t mask = ct->size == 8 ? ~uint64_t(0) : 0xffffffffull;
    const uint64_t ux = uint64_t(int_of(x)) & mask, uy = uint64_t(int_of(y)) & mask;
    const int64_t sx = ct->size == 8 ? int64_t(ux) : int64_t(int32_t(uint32_t(ux)));
    const int64_t sy = ct->size == 8 ? int64_t(uy) : int64_t(int32_t(uint32_t(uy)));
    auto res = [&](uint64_t r) { return make_int(int64_t(r & mask), ct); };
    switch (op) {
      case ExprOp::Add: return res(ux + uy);
      case ExprOp::Sub: return res(ux - uy);
      case ExprOp::Mul: return res(ux * uy);
      case ExprOp::Div:
      case ExprOp::Mod:
        if (uy == 0) return make_error("division by zero");
        if (u) return res(op == ExprOp::Div ? ux / uy : ux % uy);
        if (sy == -1) return res(op == ExprOp::Div ? uint64_t(0) - ux : 0);
        return res(uint64_t(op == ExprOp::Div ? sx / sy : sx % sy));
      case ExprOp::Shl:
      case ExprOp::Shr: {
        const CType* lt = common(a, a);
        const uint64_t bits = lt->size * 8;
        if (sy < 0 || uint64_t(sy) >= bits)
          return make_error("shift by " + std::to_string(sy) + " (0.." + std::to_string(bits - 1) + " allowed)");
        const uint64_t lm = lt->size == 8 ? ~uint64_t(0) : 0xffffffffull;
        const uint64_t lx = uint64_t(int_of(x)) & lm;
        if (op == ExprOp::Shl) return make_int(int64_t((lx << sy) & lm), lt);
        if (lt->is_signed) {
          const int64_t sl = lt->size == 8 ? int64_t(lx) : int64_t(int32_t(uint32_t(lx)));
          return make_int(sl >> sy, lt);
        }
        return make_int(int64_t(lx >> sy), lt);
      }
      case ExprOp::Lt: return make_int(u ? ux < uy : sx < sy, t("int"));
      case ExprOp::Le: return make_int(u ? ux <= uy : sx <= sy, t("int"));
      case ExprOp::Gt: return make_int(u ? ux > uy : sx > sy, t("int"));
      case ExprOp::Ge: return make_int(u ? ux >= uy : sx >= sy, t("int"));
      case ExprOp::Eq: return make_int(ux == uy, t("int"));
      case ExprOp::Ne: return make_int(ux != uy, t("int"));
      case ExprOp::BitAnd: return res(ux & uy);
      case ExprOp::BitXor: return res(ux ^ uy);
      case ExprOp::BitOr: return res(ux | uy);
      default: return make_error(ErrorCode::Internal, "internal error: bad operator");
    }
  }

  Result<CValue> index(const CValue& base, int64_t i) {
    const CType& bt = engine::strip_typedefs(*base.type);
    if (bt.kind == K::Array) {
      if (!bt.target) return make_error("array of unknown element type");
      const int64_t off = i * int64_t(bt.target->size);
      if (base.address) return load(bt.target, uint32_t(int64_t(*base.address) + off));
      if (i < 0) return make_error("negative index into a value that is not in memory");
      return part(base, uint32_t(off), bt.target);
    }
    if (bt.kind == K::Pointer) {
      if (auto p = present(base); !p) return p.error();
      if (!bt.target) return make_error("cannot index a void pointer");
      return load(bt.target, uint32_t(int_of(base) + i * int64_t(bt.target->size)));
    }
    return make_error("cannot index a " + engine::type_name(*base.type) + " (not an array or pointer)");
  }

  Result<CValue> member(const CValue& base, const std::string& name) {
    const CType& st = engine::strip_typedefs(*base.type);
    if (st.kind != K::Struct && st.kind != K::Union)
      return make_error("a " + engine::type_name(*base.type) + " has no members (looking for ." + name + ")");
    for (const CType::Field& f : st.fields) {
      if (f.name != name || !f.type) continue;
      auto v = part(base, f.offset, f.type);
      if (!v || !f.bit_size) return v;
      // A bit field: the bits from bit_offset, sign-extended for a signed type.
      uint64_t bits = (raw(*v) >> f.bit_offset) & ((f.bit_size >= 64 ? 0 : uint64_t(1) << f.bit_size) - 1);
      if (engine::strip_typedefs(*f.type).is_signed && f.bit_size < 64 && ((bits >> (f.bit_size - 1)) & 1))
        bits |= ~((uint64_t(1) << f.bit_size) - 1);
      CValue r = make_int(int64_t(bits), f.type);
      return r;
    }
    return make_error("there is no member named " + name + " in " + engine::type_name(*base.type));
  }

  Result<CValue> deref(const CValue& p) {
    if (auto ok = present(p); !ok) return ok.error();
    const CType& pt = engine::strip_typedefs(*p.type);
    if (pt.kind == K::Pointer) return load(pt.target, uint32_t(int_of(p)));
    if (pt.kind == K::Array) return index(p, 0);
    if (pt.kind == K::Int) {
      // The command language's rule: a 32-bit word at that address.
      const int64_t a = int_of(p);
      if (a < 0 || a > int64_t(UINT32_MAX)) return make_error("address " + std::to_string(a) + " is not 32-bit");
      auto w = env.plain().load_word(uint32_t(a));
      if (!w) return w.error();
      CValue v = make_int(*w, t("unsigned int"));
      v.address = uint32_t(a);
      return v;
    }
    return make_error("cannot dereference a " + engine::type_name(*p.type));
  }

  // sizeof: an int, as gdb types it; sizeof (NAME) is the variable's size, else the type's.
  Result<CValue> size_of(const Expr::Node& n) {
    const CType* type = nullptr;
    const Expr::Node* a = n.a.get();
    if (a && a->op == ExprOp::Var && a->var.kind == Variable::Kind::Source && a->var.name[0] != '$') {
      auto found = env.variable(a->var.name);
      if (!found) return found.error();
      if (*found) {
        type = (*found)->type;
      } else if (auto t = parse_type(a->var.name, env, arena)) {
        type = *t;
      }
    }
    if (!type && !a) {
      auto t = parse_type(n.name, env, arena);
      if (!t) return t.error();
      type = *t;
    } else if (!type) {
      auto v = eval(*a);
      if (!v) return v;
      type = v->type;
    }
    const CType& st = engine::strip_typedefs(*type);
    if (st.kind == K::Function) return make_error("sizeof of a function");
    return make_int(st.kind == K::Void ? 1 : st.size, t("int"));
  }

  // gdb's val_print_string: up to kMaxArrayShown chars from addr, to the NUL.
  CString read_string(uint32_t addr) {
    CString s;
    for (uint32_t i = 0; i < kMaxArrayShown; ++i) {
      auto b = env.read(addr + i, 1);
      if (!b || b->empty()) {
        s.error = true;
        return s;
      }
      s.bytes.push_back((*b)[0]);
      if (!(*b)[0]) return s;
    }
    auto next = env.read(addr + kMaxArrayShown, 1);
    s.more = next && !next->empty() && (*next)[0];
    return s;
  }

  // The strings of the char pointers in a value (members and elements too), for format_c.
  void read_strings(const CType* type, const std::vector<uint8_t>& bytes, uint32_t offset,
                    std::map<uint32_t, CString>& out, unsigned depth) {
    if (!type || depth > 8 || out.size() >= 64) return;
    const CType& t = engine::strip_typedefs(*type);
    if (uint64_t(offset) + t.size > bytes.size()) return;
    if (t.kind == K::Pointer) {
      uint32_t p = 0;
      for (uint32_t i = 0; i < 4; ++i) p |= uint32_t(bytes[offset + i]) << (8 * i);
      if (p && !out.count(p)) {
        CString s = is_text(t.target) ? read_string(p) : CString{};
        if (auto sym = env.symbol_at(p)) s.symbol = *sym;
        out[p] = std::move(s);
      }
    } else if (t.kind == K::Struct || t.kind == K::Union) {
      for (const CType::Field& f : t.fields)
        if (!f.bit_size) read_strings(f.type, bytes, offset + f.offset, out, depth + 1);
    } else if (t.kind == K::Array && t.count && t.target && t.target->size) {
      const CType& e = engine::strip_typedefs(*t.target);
      if (e.kind != K::Pointer && e.kind != K::Struct && e.kind != K::Union && e.kind != K::Array) return;
      for (uint32_t i = 0; i < std::min(*t.count, kMaxArrayShown); ++i)
        read_strings(t.target, bytes, offset + i * t.target->size, out, depth + 1);
    }
  }

  Result<CValue> eval(const Expr::Node& n) {
    switch (n.op) {
      case ExprOp::Literal:
        if (n.suffix == 'f' || n.suffix == 'd') return make_double(n.fvalue, t(n.suffix == 'f' ? "float" : "double"));
        if (n.suffix == 'u')
          return make_int(n.value, n.value <= int64_t(UINT32_MAX) ? t("unsigned int") : t("unsigned long long"));
        if (n.suffix == 'c') return make_int(n.value, t("char"));  // gdb types 'G' as char
        return make_int(n.value, n.value <= INT32_MAX ? t("int") : t("long long"));
      case ExprOp::Var: return var(n.var);
      case ExprOp::SizeOf: return size_of(n);
      default: break;
    }
    auto a = eval(*n.a);
    if (!a) return a;
    switch (n.op) {
      case ExprOp::Member: return member(*a, n.name);
      case ExprOp::Arrow: {
        auto d = deref(*a);
        if (!d) return d;
        return member(*d, n.name);
      }
      case ExprOp::Deref: return deref(*a);
      case ExprOp::AddrOf: {
        if (!a->address) return make_error("cannot take the address of a value that is not in memory");
        CValue p = make_int(*a->address, t("unsigned int"));
        p.type = arena.pointer_to(a->type);
        return p;
      }
      case ExprOp::Cast: {
        auto to = parse_type(n.name, env, arena);
        if (!to) return to.error();
        if (auto ok = present(*a); !ok) return ok.error();
        const CType& dt = engine::strip_typedefs(**to);
        const CType& st = engine::strip_typedefs(*a->type);
        if (st.kind == K::Array && dt.kind == K::Pointer && a->address) {
          CValue p = make_int(*a->address, t("unsigned int"));
          p.type = *to;
          return p;
        }
        if (!is_scalar(dt) || !is_scalar(st)) {
          if (dt.size == st.size && a->bytes.size() == st.size) {
            CValue v = *a;
            v.type = *to;
            return v;
          }
          return make_error("cannot cast a " + engine::type_name(*a->type) + " to " + engine::type_name(**to));
        }
        if (dt.kind == K::Float) return make_double(double_of(*a), *to);
        if (st.kind == K::Float) {
          auto i = c_to_int(*a);
          if (!i) return i.error();
          return make_int(*i, *to);
        }
        CValue v = make_int(int_of(*a), *to);
        if (dt.kind == K::Bool) v.bytes = le(int_of(*a) != 0, 1);
        return v;
      }
      case ExprOp::Not:
      case ExprOp::Neg:
      case ExprOp::BitNot: {
        if (auto ok = present(*a); !ok) return ok.error();
        const CType& at = engine::strip_typedefs(*a->type);
        if (!is_scalar(at)) return make_error("a " + engine::type_name(*a->type) + " is not a number");
        if (n.op == ExprOp::Not) return make_int(at.kind == K::Float ? double_of(*a) == 0 : int_of(*a) == 0, t("int"));
        if (at.kind == K::Float) {
          if (n.op == ExprOp::BitNot) return make_error("'~' on a floating-point value");
          return make_double(-double_of(*a), a->type);
        }
        const CType* ct = common(at, at);
        return make_int(n.op == ExprOp::Neg ? int64_t(0 - uint64_t(int_of(*a))) : ~int_of(*a), ct);
      }
      default: break;
    }
    // Short-circuit as C does.
    if (n.op == ExprOp::And || n.op == ExprOp::Or) {
      auto l = c_to_int(*a);
      if (!l) return l.error();
      if (n.op == ExprOp::And && *l == 0) return make_int(0, t("int"));
      if (n.op == ExprOp::Or && *l != 0) return make_int(1, t("int"));
    }
    auto b = eval(*n.b);
    if (!b) return b;
    if (n.op == ExprOp::Index) {
      auto i = c_to_int(*b);
      if (!i) return i.error();
      return index(*a, *i);
    }
    if (n.op == ExprOp::At) {
      auto count = c_to_int(*b);
      if (!count) return count.error();
      if (*count < 1 || *count > 65536) return make_error("'@' takes a count of 1 to 65536");
      if (!a->address) return make_error("only values in memory can be used to the left of '@'");
      return load(arena.array_of(a->type, uint32_t(*count)), *a->address);
    }
    return binary(n.op, *a, *b);
  }
};

std::string format_int(const CValue& v, const CType& t, char fmt) {
  const int64_t s = int_of(v);
  const uint32_t size = std::min<uint32_t>(t.size ? t.size : 4, 8);
  const uint64_t u = size == 8 ? uint64_t(s) : uint64_t(s) & ((uint64_t(1) << (8 * size)) - 1);
  switch (fmt) {
    case 'x': return hexs(u);
    case 'd': {
      const int64_t sd = size == 8 ? s : (int64_t(u << (64 - 8 * size)) >> (64 - 8 * size));
      return std::to_string(sd);
    }
    case 'u': return std::to_string(u);
    case 't': {
      if (u == 0) return "0";
      std::string b;
      for (uint64_t x = u; x; x >>= 1) b.insert(b.begin(), char('0' + (x & 1)));
      return b;
    }
    case 'f': {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%g", t.is_signed ? double(s) : double(u));
      return buf;
    }
    case 'c':
    default: break;
  }
  if (t.is_char || fmt == 'c') {
    const uint8_t c = uint8_t(u);
    return std::to_string(t.is_signed ? int64_t(int8_t(c)) : int64_t(c)) + " '" + char_text(c, '\'') + "'";
  }
  return t.is_signed ? std::to_string(s) : std::to_string(u);
}

}  // namespace

Result<CValue> evaluate_c(const Expr::Node& n, const ValueEnv& env, TypeArena& arena) {
  Evaluator e{env, arena};
  auto v = e.eval(n);
  if (v && v->missing.empty() && v->type) e.read_strings(v->type, v->bytes, 0, v->strings, 0);
  return v;
}

void annotate(CValue& v, const ValueEnv& env) {
  TypeArena arena;
  Evaluator e{env, arena};
  if (v.missing.empty() && v.type) e.read_strings(v.type, v.bytes, 0, v.strings, 0);
}

namespace {
using Strings = std::map<uint32_t, CString>;
std::string format_at(const CValue& v, char fmt, bool top, unsigned depth, const Strings& strings);
}  // namespace

std::string format_c(const CValue& v, char fmt, bool top) { return format_at(v, fmt, top, 0, v.strings); }

namespace {

// depth: aggregates nest at most this deep (a corrupt DWARF type may contain itself).
constexpr unsigned kMaxFormatDepth = 32;

std::string format_at(const CValue& v, char fmt, bool top, unsigned depth, const Strings& strings) {
  if (!v.missing.empty()) return "<" + v.missing + ">";
  if (!v.missing_parts.empty()) {
    // A scalar with any byte missing, or an aggregate with every byte missing, has no value.
    const engine::CType* st = v.type ? &engine::strip_typedefs(*v.type) : nullptr;
    const bool aggregate = st && (st->kind == K::Struct || st->kind == K::Union || st->kind == K::Array);
    uint64_t missing = 0;
    for (const engine::MissingBytes& b : v.missing_parts) missing += b.hi - b.lo;
    const bool unavailable = std::all_of(v.missing_parts.begin(), v.missing_parts.end(),
                                         [](const engine::MissingBytes& b) { return b.unavailable; });
    const bool optimized_out = std::none_of(v.missing_parts.begin(), v.missing_parts.end(),
                                            [](const engine::MissingBytes& b) { return b.unavailable; });
    // An aggregate whose parts are missing for different reasons shows each part's.
    if (!aggregate || (missing >= v.bytes.size() && (unavailable || optimized_out)))
      return unavailable ? "<not available>" : "<optimized out>";
  }
  if (depth > kMaxFormatDepth) return "{...}";
  if (!v.type) return "?";
  const CType& t = engine::strip_typedefs(*v.type);
  switch (t.kind) {
    case K::Int: return format_int(v, t, fmt);
    case K::Bool:
      if (fmt) return format_int(v, t, fmt);
      return raw(v) & 0xff ? "true" : "false";
    case K::Enum: {
      if (!fmt)
        for (const auto& [name, value] : t.enumerators)
          if (value == int_of(v)) return name;
      return format_int(v, t, fmt ? fmt : 'd');
    }
    case K::Float: {
      if (fmt == 'x' || fmt == 't') {
        // gdb 13: /x and /t of a floating value show its bits.
        CValue i = v;
        CType it;
        it.kind = K::Int;
        it.size = t.size;
        i.type = &it;
        return format_int(i, it, fmt);
      }
      if (fmt == 'd' || fmt == 'u' || fmt == 'c') {
        CValue i = v;
        CType it;
        it.kind = K::Int;
        it.size = t.size;
        it.is_signed = true;
        i.type = &it;
        i.bytes = le(uint64_t(int64_t(double_of(v))), t.size);
        return format_int(i, it, fmt);
      }
      char buf[64];
      std::snprintf(buf, sizeof buf, t.size == 4 ? "%.9g" : "%.17g", double_of(v));
      return buf;
    }
    case K::Pointer: {
      const uint32_t p = uint32_t(raw(v));
      const std::string addr = hexs(p);
      if (fmt && fmt != 'x') return format_int(v, *v.type, fmt);
      if (fmt) return addr;
      // A char * shows its string (read at evaluation), and gdb leaves out the type of a plain char *.
      std::string out = addr;
      const bool text = is_text(t.target);
      if (top && !(text && v.type->kind == K::Pointer && t.target->name == "char"))
        out = "(" + engine::type_name(*v.type) + ") " + addr;
      auto it = p ? strings.find(p) : strings.end();
      if (it == strings.end()) return out;
      if (!it->second.symbol.empty()) out += " <" + it->second.symbol + ">";
      if (!text) return out;
      if (!it->second.bytes.empty() || !it->second.error) out += " " + format_string(it->second.bytes, it->second.more);
      if (it->second.error)
        out += " <error: Cannot access memory at address " + hexs(p + uint32_t(it->second.bytes.size())) + ">";
      return out;
    }
    case K::Array: {
      if (!t.target || !t.count || t.target->size == 0) return "{...}";
      if (!fmt && is_text(t.target) && v.bytes.size() >= *t.count)
        return format_string(std::vector<uint8_t>(v.bytes.begin(), v.bytes.begin() + *t.count), false);
      const uint32_t es = t.target->size;
      std::string out = "{";
      std::vector<std::string> items;
      for (uint32_t i = 0; i < *t.count && (uint64_t(i) + 1) * es <= v.bytes.size(); ++i) {
        items.push_back(format_at(part_of(v, t.target, i * es, es), fmt, false, depth + 1, strings));
        if (items.size() > 100000) break;
      }
      // gdb's value_print_array_elements: a run of more than kRepeatThreshold counts as that many.
      size_t i = 0;
      for (uint32_t shown = 0; i < items.size() && shown < kMaxArrayShown;) {
        size_t j = i;
        while (j < items.size() && items[j] == items[i]) ++j;
        if (i) out += ", ";
        if (j - i > kRepeatThreshold) {
          out += items[i] + " <repeats " + std::to_string(j - i) + " times>";
          i = j;
          shown += kRepeatThreshold;
        } else {
          out += items[i++];
          ++shown;
        }
      }
      return out + (i < items.size() ? "...}" : "}");
    }
    case K::Struct:
    case K::Union: {
      std::string out = "{";
      bool first = true;
      for (const CType::Field& f : t.fields) {
        if (!f.type) continue;
        if (uint64_t(f.offset) + f.type->size > v.bytes.size()) continue;
        CValue m = part_of(v, f.type, f.offset, f.type->size);
        if (f.bit_size) {
          uint64_t bits = (raw(m) >> f.bit_offset) & ((uint64_t(1) << f.bit_size) - 1);
          m.bytes = le(bits, f.type->size);
        }
        out += (first ? "" : ", ") + f.name + " = " + format_at(m, fmt, false, depth + 1, strings);
        first = false;
      }
      return out + "}";
    }
    case K::Function: return "{" + engine::type_name(*v.type) + "}";
    default: return "void";
  }
}

}  // namespace

}  // namespace vx::debug
