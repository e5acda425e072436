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
//   unary   := ("!" | "~" | "-" | "*" | "&") unary | "(" TYPE ")" unary | "sizeof" "(" TYPE ")"
//            | "sizeof" unary | postfix
//   postfix := primary ( "[" expr "]" | "." NAME | "->" NAME )*
//   primary := INTEGER | "(" expr ")" | VARIABLE | NAME
//   print's argument may also be `expr "@" expr` (gdb's artificial array: N objects from the left side on).
//
// NAME is a C name of the kernel (a local, parameter or global through DWARF); the environment
// decides what it is (uses_source() says whether an expression names any). TYPE is a C type name
// with optional '*'s: a keyword type ("unsigned int"), "struct TAG", or a single name followed by
// '*' or by something that starts a value (a typedef such as "(uint32_t)x"). `*` of a plain
// integer loads a 32-bit word; `&NAME` of a name that is not a C variable is the ELF symbol's address.
//
// INTEGER is decimal or 0x-hex, with C's suffixes (u, l); a floating literal (1.5, 2e3, 0.5f) is
// typed by print and truncated by the integer language. VARIABLE is blockIdx.x|y|z, threadIdx.x|y|z, blockDim.x|y|z,
// gridDim.x|y|z (also with a '$': $blockIdx.x), a register ($x0..$x31, ABI names such as $a0,
// $sp, $fp, $pc; $f0..$f31 and $ft0.. give a float register's bits), $lane, $warp, $core, $lmem
// (the focus CTA's local-memory base), a CSR by name ($mcause, $tmask, $cta_rank, $vx_thread_id: device/registers.hpp),
// or (after &) a symbol name.
// Values are 64-bit signed integers; registers and memory words are 32-bit unsigned values,
// zero-extended. Comparisons and logical operators give 0 or 1.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace vx::debug {

// A name an expression refers to; the environment supplies its value.
struct Variable {
  enum class Kind : uint8_t {
    XReg,  // index 0..31
    FReg,  // index 0..31: the raw bits
    Pc,
    BlockIdx,   // index: axis 0..2
    ThreadIdx,  // index: axis 0..2
    BlockDim,   // index: axis 0..2
    GridDim,    // index: axis 0..2
    Lane,       // hardware lane of the focus
    Warp,       // warp slot of the focus
    Core,       // core of the focus
    Symbol,     // name: an ELF symbol's address (&name)
    LocalMem,   // the focus CTA's local-memory base ($lmem)
    Source,     // name: a C name of the kernel (resolved by the environment)
    Csr,        // index: the CSR number; name: its name ($mcause, $tmask, $cta_rank, ...)
  };
  Kind kind = Kind::XReg;
  unsigned index = 0;
  std::string name;               // Symbol
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
  // C operators over source names (member, index, cast, @, & of an expression), as an integer; the
  // command language alone does not know C types.
  virtual Result<int64_t> c_value(const void* node) const;
};

// The expression tree (read by evaluators that know C types, debug/values.hpp).
enum class ExprOp : uint8_t {
  Literal,
  Var,
  Not,
  BitNot,
  Neg,
  Deref,
  Mul,
  Div,
  Mod,
  Add,
  Sub,
  Shl,
  Shr,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  BitAnd,
  BitXor,
  BitOr,
  And,
  Or,
  // C over source names: name is the member or the cast's type text.
  Member,
  Arrow,
  Index,
  Cast,
  AddrOf,
  At,
  SizeOf,  // of the operand a, or (no a) of the type named by name; sizeof (NAME) may be either

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
  // The expression names a C variable, uses C operators or a C-typed literal (1.5, 2u): it is
  // evaluated with C types (debug/values.hpp).
  bool uses_source() const { return uses_source_; }

  struct Node {
    ExprOp op = ExprOp::Literal;
    int64_t value = 0;
    Variable var;
    std::string name;   // Member/Arrow: the field; Cast, SizeOf: the type
    char suffix = 0;    // Literal: 'u' (unsigned), 'f' (float), 'd' (double); 0 a plain integer
    double fvalue = 0;  // Literal 'f'/'d': the value
    std::shared_ptr<const Node> a, b;
    uint32_t depth = 1;  // of the tree below it: evaluation, printing and destruction recurse this deep
  };
  const Node* root() const { return root_.get(); }

 private:
  std::shared_ptr<const Node> root_;
  std::string text_;
  bool uses_source_ = false;  // decided once at parse: conditions are evaluated at every hit
};

}  // namespace vx::debug
