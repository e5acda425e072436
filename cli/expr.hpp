// Expressions of the debugger's command language: breakpoint conditions and `print`.
//
//   expr    := or
//   or      := and ( "||" and )*
//   and     := bitor ( "&&" bitor )*
//   bitor   := bitxor ( "|" bitxor )*      bitxor := bitand ( "^" bitand )*
//   bitand  := eq ( "&" eq )*              eq     := rel ( ("==" | "!=") rel )*
//   rel     := shift ( ("<" | "<=" | ">" | ">=") shift )*
//   shift   := add ( ("<<" | ">>") add )*  add    := mul ( ("+" | "-") mul )*
//   mul     := unary ( ("*" | "/" | "%") unary )*
//   unary   := ("!" | "~" | "-" | "*" | "&") unary | primary      (* loads a word, & a symbol's address)
//   primary := INTEGER | "(" expr ")" | VARIABLE
//
// INTEGER is decimal or 0x-hex. VARIABLE is blockIdx.x|y|z, threadIdx.x|y|z, blockDim.x|y|z,
// gridDim.x|y|z, a register ($x0..$x31, ABI names such as $a0, $sp, $fp, $pc; $f0..$f31 and
// $ft0.. give a float register's bits), $lane, $warp, $core, or (after &) a symbol name.
// Values are 64-bit signed integers; registers and memory words are 32-bit unsigned values,
// zero-extended. Comparisons and logical operators give 0 or 1.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "device/result.hpp"

namespace vx::cli {

// A name an expression refers to; the environment supplies its value.
struct Variable {
  enum class Kind : uint8_t {
    XReg,       // index 0..31
    FReg,       // index 0..31: the raw bits
    Pc,
    BlockIdx,   // index: axis 0..2
    ThreadIdx,  // index: axis 0..2
    BlockDim,   // index: axis 0..2
    GridDim,    // index: axis 0..2
    Lane,       // hardware lane of the focus
    Warp,       // warp slot of the focus
    Core,       // core of the focus
    Symbol,     // name: an ELF symbol's address (&name)
  };
  Kind kind = Kind::XReg;
  unsigned index = 0;
  std::string name;  // Symbol
  std::string to_string() const;  // as written in canonical form: "$a0", "threadIdx.x", "&total"
};

// Parses a register name with or without the leading '$': "a0", "$x5", "fp", "pc", "ft3", "f10".
std::optional<Variable> parse_register(std::string_view name);

// What an expression is evaluated against (one lane at a stop).
class ExprEnv {
 public:
  virtual ~ExprEnv() = default;
  virtual Result<int64_t> value(const Variable& v) const = 0;
  // A 32-bit word of device memory (unary *).
  virtual Result<int64_t> load_word(uint32_t addr) const = 0;
};

class Expr {
 public:
  // Errors are one line and point at the problem: "expected ')' at column 9 in '(a0 == 1'".
  static Result<Expr> parse(std::string_view text);

  Result<int64_t> eval(const ExprEnv& env) const;
  const std::string& text() const { return text_; }
  // Canonical fully parenthesized form (for tests and messages).
  std::string to_string() const;
  // The expression is a lone register (print shows it with its name, floats as floats).
  std::optional<Variable> as_variable() const;

  struct Node;

 private:
  std::shared_ptr<const Node> root_;
  std::string text_;
};

}  // namespace vx::cli
