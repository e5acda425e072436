// Source variables through libdw: see variables.hpp.
//
// Scopes are found by walking the unit's tree from its root into the entries whose code holds pc
// (subprograms, inlined calls, lexical blocks): the path is the scope chain, innermost last. An
// inlined call's variables are concrete entries whose name and type come from their abstract
// origin (dwarf_attr_integrate follows it).
#include "engine/variables.hpp"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <libelf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>

#include "base/hex.hpp"
#include "engine/dwarf_expr.hpp"

namespace vx::engine {

namespace {

constexpr unsigned kMaxTypeDepth = 64;   // typedef/pointer chains deeper than this are cut (hostile DWARF)
constexpr unsigned kMaxScopeDepth = 64;  // nested scopes followed

const char* die_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  return dwarf_attr_integrate(die, DW_AT_name, &attr) ? dwarf_formstring(&attr) : nullptr;
}

bool is_function(int tag) { return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine; }
bool is_scope(int tag) { return is_function(tag) || tag == DW_TAG_lexical_block; }

using dwarf::reg_name;

}  // namespace

std::string VarLocation::describe() const {
  switch (kind) {
    case Kind::Memory: return "memory at " + hex_short(address);
    case Kind::Register: return "register " + reg_name(reg);
    case Kind::Value: return "a value computed by the compiler";
    case Kind::OptimizedOut: return "optimized out";
    case Kind::Unavailable: return "optimized out";  // gdb's word for a location list that does not cover the pc
  }
  return "?";
}

const CType& strip_typedefs(const CType& t) {
  const CType* p = &t;
  for (unsigned i = 0; i < kMaxTypeDepth && p->kind == CType::Kind::Typedef && p->target; ++i) p = p->target;
  return *p;
}

namespace {

std::string qualifiers(const CType& t) {
  return std::string(t.is_const ? "const " : "") + (t.is_volatile ? "volatile " : "");
}

// Declarator parts of a derived type around a name: prefix ("*"), suffix ("[64]").
void declarator(const CType& t, std::string& base, std::string& inner, unsigned depth) {
  if (depth > kMaxTypeDepth) {
    base = "...";
    return;
  }
  switch (t.kind) {
    case CType::Kind::Pointer:
      inner = "*" + std::string(t.is_const ? " const" : "") + inner;
      if (!t.target) {
        base = "void";
        return;
      }
      if (t.target->kind == CType::Kind::Array || t.target->kind == CType::Kind::Function) inner = "(" + inner + ")";
      declarator(*t.target, base, inner, depth + 1);
      return;
    case CType::Kind::Array:
      inner += "[" + (t.count ? std::to_string(*t.count) : std::string()) + "]";
      if (t.target)
        declarator(*t.target, base, inner, depth + 1);
      else
        base = "?";
      return;
    case CType::Kind::Function:
      inner += "(...)";
      if (t.target)
        declarator(*t.target, base, inner, depth + 1);
      else
        base = "void";
      return;
    case CType::Kind::Struct: base = qualifiers(t) + "struct " + (t.name.empty() ? "{...}" : t.name); return;
    case CType::Kind::Union: base = qualifiers(t) + "union " + (t.name.empty() ? "{...}" : t.name); return;
    case CType::Kind::Enum: base = qualifiers(t) + "enum " + (t.name.empty() ? "{...}" : t.name); return;
    default: base = qualifiers(t) + (t.name.empty() ? "void" : t.name); return;
  }
}

}  // namespace

std::string type_name(const CType& t) {
  std::string base, inner;
  declarator(t, base, inner, 0);
  return inner.empty() ? base : base + " " + inner;
}

std::string type_definition(const CType& t) {
  const CType& s = t.kind == CType::Kind::Typedef && t.target ? *t.target : t;
  // A pointer to a struct shows the struct's body, as gdb does: "struct s {...} *".
  if (s.kind == CType::Kind::Pointer && s.target) {
    const CType& to = strip_typedefs(*s.target);
    if ((to.kind == CType::Kind::Struct || to.kind == CType::Kind::Union) && !to.fields.empty())
      return type_definition(to) + " *";
  }
  if ((s.kind == CType::Kind::Struct || s.kind == CType::Kind::Union) && !s.fields.empty()) {
    std::string out = type_name(s) + " {\n";
    for (const CType::Field& f : s.fields) {
      std::string base, inner = f.name;
      if (f.type) declarator(*f.type, base, inner, 0);
      out += "    " + base + " " + inner + (f.bit_size ? " : " + std::to_string(f.bit_size) : "") + ";\n";
    }
    return out + "}";
  }
  if (s.kind == CType::Kind::Enum && !s.enumerators.empty()) {
    std::string out = type_name(s) + " {";
    // As gdb writes it: a value only where it is not the previous one plus one (the first: 0).
    int64_t next = 0;
    for (size_t i = 0; i < s.enumerators.size(); ++i) {
      out += (i ? ", " : "") + s.enumerators[i].first +
             (s.enumerators[i].second == next ? "" : " = " + std::to_string(s.enumerators[i].second));
      next = s.enumerators[i].second + 1;
    }
    return out + "}";
  }
  return type_name(s);
}

struct Variables::Impl {
  std::vector<char> image;
  Elf* elf = nullptr;
  Dwarf* dwarf = nullptr;
  struct Global {
    std::string name;
    Dwarf_Off die = 0, cu = 0;
  };
  std::vector<Global> globals;
  struct Enumerator {
    std::string name;
    Dwarf_Off die = 0, type = 0, cu = 0;
  };
  std::vector<Enumerator> enumerators;  // of the units' enum types
  std::vector<std::string> function_names;
  mutable std::mutex mutex;  // the type cache
  mutable std::map<Dwarf_Off, std::unique_ptr<CType>> types;
  mutable std::map<std::string, const CType*, std::less<>> named_types;
  mutable std::vector<std::unique_ptr<CType>> made;  // types made here (void, qualified copies, pointers)

  ~Impl() {
    if (dwarf) dwarf_end(dwarf);
    if (elf) elf_end(elf);
  }

  const CType* type_of(Dwarf_Die* die, unsigned depth) const;
  const CType* make_type(Dwarf_Die td, unsigned depth) const;
  static void read_base(Dwarf_Die* td, CType* t);
  void read_array(Dwarf_Die* td, CType* t, unsigned depth) const;
  void read_fields(Dwarf_Die* td, CType* t, unsigned depth) const;
  void read_enum(Dwarf_Die* td, CType* t, unsigned depth) const;
  bool unit_at(uint32_t pc, Dwarf_Die* out) const;
  // The scope chain at pc, outermost (the unit) first.
  std::vector<Dwarf_Die> path(uint32_t pc) const;
  // The chain cut into function levels: level 0 is the innermost function's scopes.
  std::vector<std::vector<Dwarf_Die>> levels(uint32_t pc) const;
  std::vector<SourceVariable> vars(uint32_t pc, unsigned level, bool params) const;
  SourceVariable make_var(Dwarf_Die* die, SourceVariable::Kind kind, Dwarf_Off frame) const;
  Result<dwarf::Location> eval(Dwarf_Attribute* attr, uint32_t pc, const LaneView& lane, Dwarf_Off frame,
                               unsigned depth) const;
};

// The type an entry's DW_AT_type names (nullptr: void).
const CType* Variables::Impl::type_of(Dwarf_Die* die, unsigned depth) const {
  Dwarf_Attribute attr;
  Dwarf_Die td;
  if (depth > kMaxTypeDepth || !dwarf_attr_integrate(die, DW_AT_type, &attr) || !dwarf_formref_die(&attr, &td))
    return nullptr;
  return make_type(td, depth);
}

// The type of a type entry, made once.
const CType* Variables::Impl::make_type(Dwarf_Die td, unsigned depth) const {
  if (depth > kMaxTypeDepth) return nullptr;
  const Dwarf_Off off = dwarf_dieoffset(&td);
  if (auto it = types.find(off); it != types.end()) return it->second.get();
  const int tag = dwarf_tag(&td);
  if (tag == DW_TAG_const_type || tag == DW_TAG_volatile_type || tag == DW_TAG_restrict_type ||
      tag == DW_TAG_atomic_type) {
    const CType* inner = type_of(&td, depth + 1);
    auto q = std::make_unique<CType>(inner ? *inner : CType{});
    if (!inner) q->name = "void";
    if (tag == DW_TAG_const_type) q->is_const = true;
    if (tag == DW_TAG_volatile_type) q->is_volatile = true;
    return (types[off] = std::move(q)).get();
  }
  // Registered before its parts are read: a struct that points to itself finds itself here.
  auto owned = std::make_unique<CType>();
  CType* t = owned.get();
  types[off] = std::move(owned);
  if (const char* n = die_name(&td)) t->name = n;
  Dwarf_Word size = 0;
  if (dwarf_aggregate_size(&td, &size) == 0) t->size = uint32_t(size);
  switch (tag) {
    case DW_TAG_base_type: read_base(&td, t); break;
    case DW_TAG_pointer_type:
    case DW_TAG_reference_type:
      t->kind = CType::Kind::Pointer;
      t->size = 4;
      t->target = type_of(&td, depth + 1);
      break;
    case DW_TAG_typedef:
      t->kind = CType::Kind::Typedef;
      t->target = type_of(&td, depth + 1);
      if (t->target) t->size = t->target->size;
      break;
    case DW_TAG_array_type: read_array(&td, t, depth); break;
    case DW_TAG_structure_type:
    case DW_TAG_union_type:
    case DW_TAG_class_type:
      t->kind = tag == DW_TAG_union_type ? CType::Kind::Union : CType::Kind::Struct;
      read_fields(&td, t, depth);
      break;
    case DW_TAG_enumeration_type: read_enum(&td, t, depth); break;
    case DW_TAG_subroutine_type:
      t->kind = CType::Kind::Function;
      t->target = type_of(&td, depth + 1);
      break;
    default: t->kind = CType::Kind::Void; break;
  }
  return t;
}

// A base type's kind from its DW_AT_encoding.
void Variables::Impl::read_base(Dwarf_Die* td, CType* t) {
  Dwarf_Attribute attr;
  Dwarf_Word enc = 0;
  if (dwarf_attr(td, DW_AT_encoding, &attr)) dwarf_formudata(&attr, &enc);
  switch (enc) {
    case DW_ATE_float: t->kind = CType::Kind::Float; break;
    case DW_ATE_boolean: t->kind = CType::Kind::Bool; break;
    case DW_ATE_signed_char: t->is_char = true; [[fallthrough]];
    case DW_ATE_signed:
      t->kind = CType::Kind::Int;
      t->is_signed = true;
      break;
    case DW_ATE_unsigned_char: t->is_char = true; [[fallthrough]];
    default: t->kind = CType::Kind::Int; break;
  }
}

// An array: dimensions outermost first (int a[2][3] is an array of 2 arrays of 3).
void Variables::Impl::read_array(Dwarf_Die* td, CType* t, unsigned depth) const {
  Dwarf_Attribute attr;
  t->kind = CType::Kind::Array;
  const CType* elem = type_of(td, depth + 1);
  std::vector<std::optional<uint32_t>> dims;
  Dwarf_Die child;
  if (dwarf_child(td, &child) == 0) do {
      if (dwarf_tag(&child) != DW_TAG_subrange_type) continue;
      Dwarf_Word n = 0;
      if (dwarf_attr(&child, DW_AT_count, &attr) && dwarf_formudata(&attr, &n) == 0)
        dims.push_back(uint32_t(n));
      else if (dwarf_attr(&child, DW_AT_upper_bound, &attr) && dwarf_formudata(&attr, &n) == 0)
        dims.push_back(uint32_t(n + 1));
      else
        dims.push_back(std::nullopt);
    } while (dims.size() < 8 && dwarf_siblingof(&child, &child) == 0);
  if (dims.empty()) dims.push_back(std::nullopt);
  const CType* cur = elem;
  for (size_t i = dims.size(); i-- > 1;) {
    auto inner = std::make_unique<CType>();
    inner->kind = CType::Kind::Array;
    inner->target = cur;
    inner->count = dims[i];
    inner->size = cur && dims[i] ? cur->size * *dims[i] : 0;
    cur = inner.get();
    made.push_back(std::move(inner));
  }
  t->target = cur;
  t->count = dims[0];
  t->size = cur && dims[0] ? cur->size * *dims[0] : 0;
}

// A struct's or union's members, bit fields in either DWARF form.
void Variables::Impl::read_fields(Dwarf_Die* td, CType* t, unsigned depth) const {
  Dwarf_Attribute attr;
  Dwarf_Die child;
  if (dwarf_child(td, &child) == 0) do {
      if (dwarf_tag(&child) != DW_TAG_member) continue;
      CType::Field f;
      if (const char* n = die_name(&child)) f.name = n;
      f.type = type_of(&child, depth + 1);
      Dwarf_Word v = 0;
      if (dwarf_attr(&child, DW_AT_data_member_location, &attr) && dwarf_formudata(&attr, &v) == 0)
        f.offset = uint32_t(v);
      if (dwarf_attr(&child, DW_AT_bit_size, &attr) && dwarf_formudata(&attr, &v) == 0) f.bit_size = uint32_t(v);
      if (dwarf_attr(&child, DW_AT_data_bit_offset, &attr) && dwarf_formudata(&attr, &v) == 0) {
        f.offset = uint32_t(v / 8);
        f.bit_offset = uint32_t(v % 8);
      } else if (f.bit_size && dwarf_attr(&child, DW_AT_bit_offset, &attr) && dwarf_formudata(&attr, &v) == 0) {
        // DWARF 2-4's form: bits from the most significant bit of a storage unit of
        // DW_AT_byte_size bytes at the member location to the field's most significant bit.
        Dwarf_Word unit = 0;
        if (!dwarf_attr(&child, DW_AT_byte_size, &attr) || dwarf_formudata(&attr, &unit) != 0) {
          const CType* ft = f.type ? &strip_typedefs(*f.type) : nullptr;
          unit = ft ? ft->size : 4;
        }
        const int64_t lsb = int64_t(unit) * 8 - int64_t(v) - int64_t(f.bit_size);  // little-endian
        if (lsb >= 0) {
          const uint64_t bits = uint64_t(f.offset) * 8 + uint64_t(lsb);
          f.offset = uint32_t(bits / 8);
          f.bit_offset = uint32_t(bits % 8);
        }
      }
      t->fields.push_back(f);
    } while (t->fields.size() < 4096 && dwarf_siblingof(&child, &child) == 0);
}

// An enumeration: its signedness from its underlying type, and its enumerators.
void Variables::Impl::read_enum(Dwarf_Die* td, CType* t, unsigned depth) const {
  Dwarf_Attribute attr;
  t->kind = CType::Kind::Enum;
  if (const CType* u = type_of(td, depth + 1)) t->is_signed = strip_typedefs(*u).is_signed;
  Dwarf_Die child;
  if (dwarf_child(td, &child) == 0) do {
      if (dwarf_tag(&child) != DW_TAG_enumerator) continue;
      Dwarf_Sword sv = 0;
      const char* n = die_name(&child);
      if (dwarf_attr(&child, DW_AT_const_value, &attr) && dwarf_formsdata(&attr, &sv) == 0)
        t->enumerators.emplace_back(n ? n : "?", int64_t(sv));
    } while (t->enumerators.size() < 4096 && dwarf_siblingof(&child, &child) == 0);
}

// The unit whose code holds pc. Not dwarf_addrdie: clang writes no .debug_aranges, so the units'
// own ranges are asked.
bool Variables::Impl::unit_at(uint32_t pc, Dwarf_Die* out) const {
  if (!dwarf) return false;
  Dwarf_CU* cu = nullptr;
  for (;;) {
    Dwarf_CU* next = nullptr;
    Dwarf_Half version = 0;
    uint8_t unit_type = 0;
    Dwarf_Die cudie;
    if (dwarf_get_units(dwarf, cu, &next, &version, &unit_type, &cudie, nullptr) != 0) return false;
    cu = next;
    if (dwarf_haspc(&cudie, pc) == 1) {
      *out = cudie;
      return true;
    }
  }
}

std::vector<Dwarf_Die> Variables::Impl::path(uint32_t pc) const {
  std::vector<Dwarf_Die> chain;
  Dwarf_Die cu;
  if (!unit_at(pc, &cu)) return chain;
  chain.push_back(cu);
  Dwarf_Die parent = cu;
  for (unsigned depth = 0; depth < kMaxScopeDepth; ++depth) {
    Dwarf_Die child;
    bool found = false;
    if (dwarf_child(&parent, &child) == 0) do {
        if (is_scope(dwarf_tag(&child)) && dwarf_haspc(&child, pc) == 1) {
          found = true;
          break;
        }
      } while (dwarf_siblingof(&child, &child) == 0);
    if (!found) break;
    chain.push_back(child);
    parent = child;
  }
  return chain;
}

std::vector<std::vector<Dwarf_Die>> Variables::Impl::levels(uint32_t pc) const {
  std::vector<Dwarf_Die> chain = path(pc);
  std::vector<std::vector<Dwarf_Die>> out;
  // Innermost first: each level ends (outwards) at its function entry.
  std::vector<Dwarf_Die> cur;
  for (size_t i = chain.size(); i-- > 1;) {
    cur.push_back(chain[i]);
    if (is_function(dwarf_tag(&chain[i]))) {
      out.push_back(cur);
      cur.clear();
    }
  }
  return out;
}

SourceVariable Variables::Impl::make_var(Dwarf_Die* die, SourceVariable::Kind kind, Dwarf_Off frame) const {
  SourceVariable v;
  if (const char* n = die_name(die)) v.name = n;
  v.kind = kind;
  v.die = dwarf_dieoffset(die);
  v.frame_die = frame;
  {
    std::lock_guard<std::mutex> lock(mutex);
    v.type = type_of(die, 0);
  }
  if (const char* f = dwarf_decl_file(die)) v.decl_file = f;
  int line = 0;
  if (dwarf_decl_line(die, &line) == 0 && line > 0) v.decl_line = uint32_t(line);
  return v;
}

std::vector<SourceVariable> Variables::Impl::vars(uint32_t pc, unsigned level, bool params) const {
  std::vector<SourceVariable> out;
  std::vector<Dwarf_Die> chain = path(pc);
  auto lv = levels(pc);
  if (level >= lv.size()) return out;
  // The frame base is the out-of-line subprogram's (the chain's first scope under the unit).
  Dwarf_Off frame = chain.size() > 1 ? dwarf_dieoffset(&chain[1]) : 0;
  const SourceVariable::Kind kind = params ? SourceVariable::Kind::Parameter : SourceVariable::Kind::Local;
  for (Dwarf_Die& scope : lv[level]) {
    Dwarf_Die child;
    std::vector<Dwarf_Off> concrete_origins;
    if (dwarf_child(&scope, &child) == 0) do {
        const int tag = dwarf_tag(&child);
        if (params ? tag != DW_TAG_formal_parameter : tag != DW_TAG_variable) continue;
        Dwarf_Attribute attr;
        Dwarf_Die origin;
        if (dwarf_attr(&child, DW_AT_abstract_origin, &attr) && dwarf_formref_die(&attr, &origin))
          concrete_origins.push_back(dwarf_dieoffset(&origin));
        if (!die_name(&child)) continue;
        out.push_back(make_var(&child, kind, frame));
      } while (out.size() < 4096 && dwarf_siblingof(&child, &child) == 0);
    // An inlined copy leaves out the variables it optimized away entirely: the abstract function
    // still declares them, and they are shown as optimized out (as gdb does).
    Dwarf_Attribute attr;
    Dwarf_Die abstract;
    if (!dwarf_attr(&scope, DW_AT_abstract_origin, &attr) || !dwarf_formref_die(&attr, &abstract)) continue;
    if (dwarf_child(&abstract, &child) != 0) continue;
    do {
      const int tag = dwarf_tag(&child);
      if (params ? tag != DW_TAG_formal_parameter : tag != DW_TAG_variable) continue;
      if (!die_name(&child)) continue;
      const Dwarf_Off off = dwarf_dieoffset(&child);
      if (std::find(concrete_origins.begin(), concrete_origins.end(), off) != concrete_origins.end()) continue;
      out.push_back(make_var(&child, kind, frame));
    } while (out.size() < 4096 && dwarf_siblingof(&child, &child) == 0);
  }
  return out;
}

namespace {

void put_le(std::vector<uint8_t>& out, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

}  // namespace

// A location description (an expression, or the entry of a location list for pc) through the
// evaluator of dwarf_expr.hpp; DW_OP_fbreg takes `frame`'s DW_AT_frame_base.
Result<dwarf::Location> Variables::Impl::eval(Dwarf_Attribute* attr, uint32_t pc, const LaneView& lane, Dwarf_Off frame,
                                              unsigned depth) const {
  Dwarf_Op* ops = nullptr;
  size_t len = 0;
  dwarf::Location loc;
  const int n = dwarf_getlocation_addr(attr, pc, &ops, &len, 1);
  if (n < 0) return make_error(std::string("cannot read the variable's DWARF location (") + dwarf_errmsg(-1) + ")");
  if (n == 0) {
    loc.kind = dwarf::Kind::Unavailable;
    return loc;
  }
  if (len == 0) return loc;  // optimized out
  dwarf::Env env;
  env.reg = lane.reg;
  env.read = lane.read;
  env.cfa = lane.cfa;
  env.frame_base = [&]() -> Result<dwarf::Location> {
    Dwarf_Die fd;
    Dwarf_Attribute fb;
    if (depth > 2 || !frame || !dwarf_offdie(dwarf, frame, &fd) || !dwarf_attr(&fd, DW_AT_frame_base, &fb))
      return make_error("DW_OP_fbreg: the variable's function has no frame base");
    return eval(&fb, pc, lane, 0, depth + 1);
  };
  env.implicit_value = [attr](const Dwarf_Op& op) -> Result<std::vector<uint8_t>> {
    Dwarf_Block block;
    if (dwarf_getlocation_implicit_value(attr, &op, &block) != 0) return make_error("corrupt block");
    return std::vector<uint8_t>(block.data, block.data + block.length);
  };
  return dwarf::evaluate(ops, len, env);
}

Variables::Variables(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Variables::Variables(Variables&&) noexcept = default;
Variables& Variables::operator=(Variables&&) noexcept = default;
Variables::~Variables() = default;

Result<Variables> Variables::load(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot open " + path);
  impl->image.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  elf_version(EV_CURRENT);
  impl->elf = elf_memory(impl->image.data(), impl->image.size());
  if (!impl->elf) return make_error(path + ": not an ELF file");
  impl->dwarf = dwarf_begin_elf(impl->elf, DWARF_C_READ, nullptr);
  if (!impl->dwarf) return Variables(std::move(impl));  // no DWARF: no variables
  Dwarf_CU* cu = nullptr;
  for (;;) {
    Dwarf_CU* next = nullptr;
    Dwarf_Half version = 0;
    uint8_t unit_type = 0;
    Dwarf_Die cudie;
    const int r = dwarf_get_units(impl->dwarf, cu, &next, &version, &unit_type, &cudie, nullptr);
    if (r != 0) break;
    cu = next;
    Dwarf_Die child;
    if (dwarf_child(&cudie, &child) != 0) continue;
    do {
      const int tag = dwarf_tag(&child);
      Dwarf_Die e;
      if (tag == DW_TAG_enumeration_type && dwarf_child(&child, &e) == 0) do {
          const char* en = die_name(&e);
          if (dwarf_tag(&e) == DW_TAG_enumerator && en)
            impl->enumerators.push_back(
                Impl::Enumerator{en, dwarf_dieoffset(&e), dwarf_dieoffset(&child), dwarf_dieoffset(&cudie)});
        } while (dwarf_siblingof(&e, &e) == 0);
      const char* n = die_name(&child);
      if (!n) continue;
      Dwarf_Attribute attr;
      if (tag == DW_TAG_variable && dwarf_attr(&child, DW_AT_location, &attr))
        impl->globals.push_back(Impl::Global{n, dwarf_dieoffset(&child), dwarf_dieoffset(&cudie)});
      else if (tag == DW_TAG_subprogram)
        impl->function_names.push_back(n);
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  return Variables(std::move(impl));
}

std::vector<ScopeFrame> Variables::frames(uint32_t pc) const {
  std::vector<ScopeFrame> out;
  auto lv = impl_->levels(pc);
  for (auto& level : lv) {
    Dwarf_Die& f = level.back();
    ScopeFrame sf;
    if (const char* n = die_name(&f)) sf.function = n;
    sf.inlined = dwarf_tag(&f) == DW_TAG_inlined_subroutine;
    // DW_AT_type of the function (through its abstract origin): absent for a void function.
    sf.return_type = impl_->type_of(&f, 0);
    if (sf.inlined) {
      Dwarf_Attribute attr;
      Dwarf_Word v = 0;
      if (dwarf_attr(&f, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &v) == 0) sf.call_line = uint32_t(v);
      Dwarf_Files* files = nullptr;
      Dwarf_Die cu;
      if (dwarf_attr(&f, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &v) == 0 &&
          dwarf_diecu(&f, &cu, nullptr, nullptr) && dwarf_getsrcfiles(&cu, &files, nullptr) == 0)
        if (const char* name = dwarf_filesrc(files, v, nullptr, nullptr)) sf.call_file = name;
    }
    out.push_back(sf);
  }
  return out;
}

std::vector<SourceVariable> Variables::locals(uint32_t pc, unsigned level) const {
  return impl_->vars(pc, level, false);
}
std::vector<SourceVariable> Variables::parameters(uint32_t pc, unsigned level) const {
  return impl_->vars(pc, level, true);
}

std::optional<SourceVariable> Variables::find(uint32_t pc, std::string_view name, unsigned level) const {
  for (const SourceVariable& v : locals(pc, level))
    if (v.name == name) return v;
  for (const SourceVariable& v : parameters(pc, level))
    if (v.name == name) return v;
  Dwarf_Die cu;
  const Dwarf_Off here = impl_->unit_at(pc, &cu) ? dwarf_dieoffset(&cu) : 0;
  const Impl::Global* pick = nullptr;
  for (const Impl::Global& g : impl_->globals)
    if (g.name == name && (!pick || (g.cu == here && pick->cu != here))) pick = &g;
  Dwarf_Die die;
  if (pick) {
    if (!dwarf_offdie(impl_->dwarf, pick->die, &die)) return std::nullopt;
    return impl_->make_var(&die, SourceVariable::Kind::Global, 0);
  }
  // An enumerator: a global of its enum type whose value is its DW_AT_const_value.
  const Impl::Enumerator* e = nullptr;
  for (const Impl::Enumerator& x : impl_->enumerators)
    if (x.name == name && (!e || (x.cu == here && e->cu != here))) e = &x;
  Dwarf_Die td;
  if (!e || !dwarf_offdie(impl_->dwarf, e->die, &die) || !dwarf_offdie(impl_->dwarf, e->type, &td)) return std::nullopt;
  SourceVariable v;
  v.name = e->name;
  v.kind = SourceVariable::Kind::Global;
  v.die = e->die;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    v.type = impl_->make_type(td, 0);
  }
  if (const char* f = dwarf_decl_file(&td)) v.decl_file = f;
  return v;
}

const CType* Variables::find_type(std::string_view name) const {
  if (!impl_->dwarf) return nullptr;
  std::string want(name);
  int want_tag = 0;
  for (auto [prefix, tag] : {std::pair<const char*, int>{"struct ", DW_TAG_structure_type},
                             {"union ", DW_TAG_union_type},
                             {"enum ", DW_TAG_enumeration_type}})
    if (want.rfind(prefix, 0) == 0) {
      want = want.substr(std::strlen(prefix));
      want_tag = tag;
    }
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (auto it = impl_->named_types.find(name); it != impl_->named_types.end()) return it->second;
  }
  Dwarf_CU* cu = nullptr;
  for (;;) {
    Dwarf_CU* next = nullptr;
    Dwarf_Half version = 0;
    uint8_t unit_type = 0;
    Dwarf_Die cudie;
    if (dwarf_get_units(impl_->dwarf, cu, &next, &version, &unit_type, &cudie, nullptr) != 0) break;
    cu = next;
    Dwarf_Die child;
    if (dwarf_child(&cudie, &child) != 0) continue;
    do {
      const int tag = dwarf_tag(&child);
      const bool ok = want_tag ? tag == want_tag : (tag == DW_TAG_typedef || tag == DW_TAG_base_type);
      if (!ok || dwarf_hasattr(&child, DW_AT_declaration)) continue;
      const char* n = die_name(&child);
      if (!n || want != n) continue;
      std::lock_guard<std::mutex> lock(impl_->mutex);
      const CType* t = impl_->make_type(child, 0);
      if (t) impl_->named_types[std::string(name)] = t;
      return t;
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  return nullptr;
}

std::vector<std::string> Variables::global_names() const {
  std::vector<std::string> out = impl_->function_names;
  for (const Impl::Global& g : impl_->globals) out.push_back(g.name);
  return out;
}

Result<VarLocation> Variables::locate(const SourceVariable& v, uint32_t pc, const LaneView& lane) const {
  Dwarf_Die die;
  if (!impl_->dwarf || !dwarf_offdie(impl_->dwarf, v.die, &die)) return make_error("no DWARF entry for " + v.name);
  Dwarf_Attribute attr;
  if (dwarf_attr(&die, DW_AT_const_value, &attr)) {
    VarLocation loc;
    loc.kind = VarLocation::Kind::Value;
    Dwarf_Block block;
    Dwarf_Sword sv = 0;
    if (dwarf_formblock(&attr, &block) == 0)
      loc.bytes.assign(block.data, block.data + block.length);
    else if (dwarf_formsdata(&attr, &sv) == 0)
      put_le(loc.bytes, uint64_t(sv), 8);
    return loc;
  }
  if (!dwarf_attr(&die, DW_AT_location, &attr)) return VarLocation{};  // optimized out
  auto l = impl_->eval(&attr, pc, lane, v.frame_die, 0);
  if (!l) return l.error();
  VarLocation loc;
  switch (l->kind) {
    case dwarf::Kind::Memory:
      loc.kind = VarLocation::Kind::Memory;
      loc.address = l->address;
      break;
    case dwarf::Kind::Register:
      loc.kind = VarLocation::Kind::Register;
      loc.reg = l->reg;
      break;
    case dwarf::Kind::Value:
      loc.kind = VarLocation::Kind::Value;
      put_le(loc.bytes, l->value, 8);
      break;
    case dwarf::Kind::Implicit:
      loc.kind = VarLocation::Kind::Value;
      loc.bytes = std::move(l->bytes);
      break;
    case dwarf::Kind::Pieces:
      loc.kind = VarLocation::Kind::Value;
      for (const dwarf::Piece& p : l->pieces) {
        if (p.kind == dwarf::Kind::OptimizedOut || p.kind == dwarf::Kind::Unavailable)
          loc.missing_parts.push_back(MissingBytes{uint32_t(loc.bytes.size()),
                                                   uint32_t(loc.bytes.size() + p.bytes.size()),
                                                   p.kind == dwarf::Kind::Unavailable});
        loc.bytes.insert(loc.bytes.end(), p.bytes.begin(), p.bytes.end());
      }
      break;
    case dwarf::Kind::OptimizedOut: break;
    case dwarf::Kind::Unavailable: loc.kind = VarLocation::Kind::Unavailable; break;
  }
  return loc;
}

}  // namespace vx::engine
