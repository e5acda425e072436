// C values for `print` and friends: the expression tree (debug/expr.hpp) evaluated with C types from
// the kernel's DWARF (engine/variables.hpp), in one lane's context, and printed as gdb prints them.
//
// Plain values of the command language get C types too: registers, threadIdx.x and the like are
// `unsigned int`, float registers `float`, integer literals `int` (or `long long` when they do not
// fit), $blockIdx and $threadIdx a struct {x, y, z}. Arithmetic follows C's usual conversions on a
// 32-bit target; `*` of a plain integer loads an `unsigned int` word (the command language's rule).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "debug/expr.hpp"
#include "engine/variables.hpp"

namespace vx::debug {

// What a char pointer points to, as gdb reads it: up to 200 chars and the NUL.
struct CString {
  std::vector<uint8_t> bytes;
  bool more = false;   // no NUL within the limit: "..." follows
  bool error = false;  // reading stopped at an unreadable byte: <error: ...> follows
  std::string symbol;  // the symbol the address falls in ("nodes+8"), "" none: shown as <nodes+8>
};

struct CValue {
  const engine::CType* type = nullptr;
  std::vector<uint8_t> bytes;       // type->size bytes, little-endian; empty when `missing`
  std::optional<uint32_t> address;  // where it lives in memory (an lvalue)
  std::optional<unsigned> reg;      // the DWARF register that holds it (an lvalue)
  std::string missing;              // "optimized out" (also a location list not covering the pc): no value
  // Parts with no value (a variable in DWARF pieces, one of them empty or in a register the frame
  // does not have): a member or element there prints <optimized out> (or <not available>), as gdb.
  std::vector<engine::MissingBytes> missing_parts;
  // What its pointers point to, by address: the symbol, and a char pointer's string (read by
  // evaluate_c and annotate; print shows them).
  std::map<uint32_t, CString> strings;
};

// Derived and built-in types made while evaluating (they live as long as the arena).
class TypeArena {
 public:
  TypeArena();
  const engine::CType* builtin(const std::string& name) const;  // "int", "unsigned int", "float", ...
  const engine::CType* pointer_to(const engine::CType* t);
  const engine::CType* array_of(const engine::CType* t, uint32_t n);
  const engine::CType* dim3();

 private:
  std::deque<engine::CType> owned_;
  std::vector<std::pair<std::string, const engine::CType*>> builtins_;
  const engine::CType* dim3_ = nullptr;
};

// What one lane's C expressions see.
class ValueEnv {
 public:
  virtual ~ValueEnv() = default;
  // Registers, software coordinates, symbols ($a0, threadIdx.x, &sym): the command language's values.
  virtual const ExprEnv& plain() const = 0;
  // A C name: nullopt when the kernel has no such variable in this context.
  virtual Result<std::optional<CValue>> variable(const std::string& name) const = 0;
  virtual Result<std::vector<uint8_t>> read(uint32_t addr, uint32_t size) const = 0;
  // A type by C name from the kernel's DWARF (nullptr if none).
  virtual const engine::CType* type_named(const std::string& name) const = 0;
  // The ELF symbol an address falls in, as "name" or "name+off" (a pointer prints it, as gdb's
  // `print symbol`); nullopt when none.
  virtual std::optional<std::string> symbol_at(uint32_t) const { return std::nullopt; }
};

// Reads what v's pointers point to (their symbols, char pointers' strings), for format_c: evaluate_c
// does it; a value made otherwise (a variable's value for info locals) calls this.
void annotate(CValue& v, const ValueEnv& env);

Result<CValue> evaluate_c(const Expr::Node& n, const ValueEnv& env, TypeArena& arena);
// A type from its C spelling ("uint32_t *", "struct reduce_lmem", "unsigned int").
Result<const engine::CType*> parse_type(const std::string& text, const ValueEnv& env, TypeArena& arena);
// A scalar as an integer (floats truncated); an error for aggregates and missing values.
Result<int64_t> c_to_int(const CValue& v);
// gdb's way: 5, 0x10 (/x), {x = 1, y = {2, 3}}, (float *) 0x80001000, 65 'A', 171 '\253', "ab\000",
// 0x80001000 "text" (a char * with its string in v.strings), <optimized out>.
// fmt is 0 or one of x d u t c f.
std::string format_c(const CValue& v, char fmt, bool top = true);

}  // namespace vx::debug
