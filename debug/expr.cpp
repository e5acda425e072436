#include "debug/expr.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "device/isa.hpp"
#include "device/registers.hpp"

namespace vx::debug {

namespace {

std::optional<unsigned> small_number(std::string_view s, unsigned limit) {
  if (s.empty() || s.size() > 2) return std::nullopt;
  unsigned v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + unsigned(c - '0');
  }
  if (s.size() == 2 && s[0] == '0') return std::nullopt;
  return v < limit ? std::optional<unsigned>(v) : std::nullopt;
}

}  // namespace

std::optional<Variable> parse_register(std::string_view name) {
  if (!name.empty() && name[0] == '$') name.remove_prefix(1);
  if (name.empty()) return std::nullopt;
  Variable v;
  if (name == "pc") {
    v.kind = Variable::Kind::Pc;
    return v;
  }
  if (name == "fp") {
    v.kind = Variable::Kind::XReg;
    v.index = 8;
    return v;
  }
  for (unsigned i = 0; i < 32; ++i)
    if (name == xreg_name(i)) {
      v.kind = Variable::Kind::XReg;
      v.index = i;
      return v;
    }
  for (unsigned i = 0; i < 32; ++i)
    if (name == freg_name(i)) {
      v.kind = Variable::Kind::FReg;
      v.index = i;
      return v;
    }
  if (name[0] == 'x' || name[0] == 'f') {
    if (auto n = small_number(name.substr(1), 32)) {
      v.kind = name[0] == 'x' ? Variable::Kind::XReg : Variable::Kind::FReg;
      v.index = *n;
      return v;
    }
  }
  return std::nullopt;
}

std::string Variable::to_string() const {
  static const char* axis[3] = {"x", "y", "z"};
  switch (kind) {
    case Kind::XReg: return std::string("$") + xreg_name(index & 31);
    case Kind::FReg: return std::string("$") + freg_name(index & 31);
    case Kind::Pc: return "$pc";
    case Kind::BlockIdx: return std::string("blockIdx.") + axis[index % 3];
    case Kind::ThreadIdx: return std::string("threadIdx.") + axis[index % 3];
    case Kind::BlockDim: return std::string("blockDim.") + axis[index % 3];
    case Kind::GridDim: return std::string("gridDim.") + axis[index % 3];
    case Kind::Lane: return "$lane";
    case Kind::Warp: return "$warp";
    case Kind::Core: return "$core";
    case Kind::Symbol: return "&" + name;
    case Kind::LocalMem: return "$lmem";
    case Kind::Source: return name;
    case Kind::Csr: return "$" + name;
  }
  return "?";
}

using Op = ExprOp;

Result<int64_t> ExprEnv::c_value(const void*) const {
  return make_error("C variables and operators need the kernel's debug information");
}

namespace {

using NodePtr = std::shared_ptr<const Expr::Node>;

// Expressions nest at most this deep (parentheses, unary operators, chains of binary operators):
// parsing, evaluation and printing recurse, and user input must not overflow the stack.
constexpr uint32_t kMaxDepth = 256;

const char* op_text(Op op) {
  switch (op) {
    case Op::Not: return "!";
    case Op::BitNot: return "~";
    case Op::Neg: return "-";
    case Op::Deref: return "*";
    case Op::Mul: return "*";
    case Op::Div: return "/";
    case Op::Mod: return "%";
    case Op::Add: return "+";
    case Op::Sub: return "-";
    case Op::Shl: return "<<";
    case Op::Shr: return ">>";
    case Op::Lt: return "<";
    case Op::Le: return "<=";
    case Op::Gt: return ">";
    case Op::Ge: return ">=";
    case Op::Eq: return "==";
    case Op::Ne: return "!=";
    case Op::BitAnd: return "&";
    case Op::BitXor: return "^";
    case Op::BitOr: return "|";
    case Op::And: return "&&";
    case Op::Or: return "||";
    case Op::At: return "@";
    default: return "?";
  }
}

// --- Lexer -----------------------------------------------------------------------------------

enum class Tok : uint8_t { End, Number, Name, Punct };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  int64_t number = 0;
  double fnumber = 0;
  char suffix = 0;  // 'u' unsigned, 'f' float, 'd' double
  size_t pos = 0;
};

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Result<NodePtr> parse() {
    if (auto r = lex(); !r) return r.error();
    auto e = parse_binary(0);
    if (!e) return e;
    if (peek().kind != Tok::End) return fail("unexpected '" + peek().text + "'", peek().pos);
    return e;
  }

 private:
  Error fail(const std::string& what, size_t pos) const {
    // A long expression is named by its start: an error message stays one readable line.
    std::string shown = s_.size() > 80 ? std::string(s_.substr(0, 80)) + "..." : std::string(s_);
    return make_error(what + " at column " + std::to_string(pos + 1) + " in '" + shown + "'");
  }
  Error too_deep(size_t pos) const {
    return fail("expression too deeply nested (more than " + std::to_string(kMaxDepth) + " levels)", pos);
  }
  // Counts the parser's own recursion (parentheses and unary operators).
  struct Nest {
    Parser& p;
    explicit Nest(Parser& parser) : p(parser) { ++p.nest_; }
    ~Nest() { --p.nest_; }
  };
  uint32_t nest_ = 0;

  Result<void> lex() {
    size_t i = 0;
    static const char* kPuncts[] = {"==", "!=", "<=", ">=", "&&", "||", "<<", ">>", "->", "<", ">", "!", "~", "-",
                                    "+",  "*",  "/",  "%",  "&",  "|",  "^",  "(",  ")",  "[", "]", ".", "@"};
    while (i < s_.size()) {
      char c = s_[i];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
        continue;
      }
      Token t;
      t.pos = i;
      if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t j = i;
        const bool hex_lit = s_.size() > i + 1 && c == '0' && (s_[i + 1] == 'x' || s_[i + 1] == 'X');
        bool is_float = false;
        while (j < s_.size() &&
               (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '_' || (!hex_lit && s_[j] == '.') ||
                (!hex_lit && (s_[j] == '+' || s_[j] == '-') && (s_[j - 1] == 'e' || s_[j - 1] == 'E')))) {
          if (!hex_lit && (s_[j] == '.' || s_[j] == 'e' || s_[j] == 'E')) is_float = true;
          ++j;
        }
        std::string_view lit = s_.substr(i, j - i);
        t.kind = Tok::Number;
        t.text = std::string(lit);
        if (is_float) {
          // A C floating literal: double, or float with an 'f' suffix.
          std::string body(lit);
          if (!body.empty() && (body.back() == 'f' || body.back() == 'F')) {
            body.pop_back();
            t.suffix = 'f';
          } else {
            t.suffix = 'd';
          }
          char* end = nullptr;
          t.fnumber = std::strtod(body.c_str(), &end);
          if (body.empty() || end != body.c_str() + body.size())
            return fail("bad number '" + std::string(lit) + "'", i);
          toks_.push_back(t);
          i = j;
          continue;
        }
        int base = 10;
        std::string_view digits = lit;
        // C's integer suffixes: u makes it unsigned; l and ll change nothing on this 64-bit evaluator.
        while (!digits.empty() && std::strchr("uUlL", digits.back())) {
          if (digits.back() == 'u' || digits.back() == 'U') t.suffix = 'u';
          digits.remove_suffix(1);
        }
        if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
          base = 16;
          digits = digits.substr(2);
        }
        uint64_t v = 0;
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
        if (ec == std::errc::result_out_of_range || (ec == std::errc() && v > uint64_t(INT64_MAX)))
          return fail("number '" + std::string(lit) + "' is too large", i);
        if (ec != std::errc() || end != digits.data() + digits.size())
          return fail("bad number '" + std::string(lit) + "'", i);
        t.number = int64_t(v);
        toks_.push_back(t);
        i = j;
        continue;
      }
      if (c == '\'') {
        // A character literal: 'G', '\n', '\0', '\x41', '\101' (a char, C's value).
        size_t j = i + 1;
        if (j >= s_.size()) return fail("unterminated character literal", i);
        int v = static_cast<unsigned char>(s_[j++]);
        if (v == '\\') {
          if (j >= s_.size()) return fail("unterminated character literal", i);
          const char e = s_[j++];
          static const char kNamed[] = "n\nt\tr\ra\ab\bf\fv\v\\\\\'\'\"\"??";
          const char* named = nullptr;
          for (const char* k = kNamed; *k; k += 2)
            if (*k == e) named = k + 1;
          if (named) {
            v = static_cast<unsigned char>(*named);
          } else if (e == 'x') {
            v = 0;
            size_t n = 0;
            for (; j < s_.size() && std::isxdigit(static_cast<unsigned char>(s_[j])) && n < 2; ++j, ++n)
              v = v * 16 + (std::isdigit(static_cast<unsigned char>(s_[j])) ? s_[j] - '0' : (s_[j] | 0x20) - 'a' + 10);
            if (!n) return fail("bad escape in character literal", i);
          } else if (e >= '0' && e <= '7') {
            v = e - '0';
            for (size_t n = 1; j < s_.size() && s_[j] >= '0' && s_[j] <= '7' && n < 3; ++j, ++n)
              v = v * 8 + (s_[j] - '0');
          } else {
            return fail(std::string("bad escape '\\") + e + "' in character literal", i);
          }
        }
        if (j >= s_.size() || s_[j] != '\'') return fail("unterminated character literal", i);
        t.kind = Tok::Number;
        t.text = std::string(s_.substr(i, j + 1 - i));
        t.number = v;  // RISC-V's char is unsigned: the byte's value
        t.suffix = 'c';
        toks_.push_back(t);
        i = j + 1;
        continue;
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$') {
        size_t j = i + 1;
        while (j < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '_')) ++j;
        t.kind = Tok::Name;
        t.text = std::string(s_.substr(i, j - i));
        toks_.push_back(t);
        i = j;
        continue;
      }
      bool matched = false;
      for (const char* p : kPuncts) {
        std::string_view pv(p);
        if (s_.substr(i, pv.size()) == pv) {
          t.kind = Tok::Punct;
          t.text = std::string(pv);
          toks_.push_back(t);
          i += pv.size();
          matched = true;
          break;
        }
      }
      if (!matched) return fail(std::string("unexpected character '") + c + "'", i);
    }
    Token end;
    end.kind = Tok::End;
    end.pos = s_.size();
    end.text = "end of expression";
    toks_.push_back(end);
    return {};
  }

  const Token& peek() const { return toks_[pos_]; }
  bool is_punct(const char* p) const { return peek().kind == Tok::Punct && peek().text == p; }

  // Binary operator levels, loosest first.
  struct Level {
    std::vector<std::pair<const char*, Op>> ops;
  };
  static const std::vector<Level>& levels() {
    static const std::vector<Level> l = {
        {{{"@", Op::At}}},
        {{{"||", Op::Or}}},
        {{{"&&", Op::And}}},
        {{{"|", Op::BitOr}}},
        {{{"^", Op::BitXor}}},
        {{{"&", Op::BitAnd}}},
        {{{"==", Op::Eq}, {"!=", Op::Ne}}},
        {{{"<", Op::Lt}, {"<=", Op::Le}, {">", Op::Gt}, {">=", Op::Ge}}},
        {{{"<<", Op::Shl}, {">>", Op::Shr}}},
        {{{"+", Op::Add}, {"-", Op::Sub}}},
        {{{"*", Op::Mul}, {"/", Op::Div}, {"%", Op::Mod}}},
    };
    return l;
  }

  Result<NodePtr> parse_binary(size_t level) {
    if (level == levels().size()) return parse_unary();
    auto lhs = parse_binary(level + 1);
    if (!lhs) return lhs;
    NodePtr left = *lhs;
    for (;;) {
      std::optional<Op> op;
      for (const auto& [text, o] : levels()[level].ops)
        if (is_punct(text)) op = o;
      if (!op) return left;
      const size_t at = peek().pos;
      ++pos_;
      auto rhs = parse_binary(level + 1);
      if (!rhs) return rhs;
      auto n = std::make_shared<Expr::Node>();
      n->op = *op;
      n->a = left;
      n->b = *rhs;
      n->depth = 1 + std::max(left->depth, (*rhs)->depth);
      if (n->depth > kMaxDepth) return too_deep(at);
      left = n;
    }
  }

  Result<NodePtr> parse_unary() {
    std::optional<Op> op;
    if (is_punct("!"))
      op = Op::Not;
    else if (is_punct("~"))
      op = Op::BitNot;
    else if (is_punct("-"))
      op = Op::Neg;
    else if (is_punct("*"))
      op = Op::Deref;
    if (op) {
      Nest nest(*this);
      if (nest_ > kMaxDepth) return too_deep(peek().pos);
      ++pos_;
      auto a = parse_unary();
      if (!a) return a;
      auto n = std::make_shared<Expr::Node>();
      n->op = *op;
      n->a = *a;
      n->depth = 1 + (*a)->depth;
      if (n->depth > kMaxDepth) return too_deep(peek().pos);
      return NodePtr(n);
    }
    if (is_punct("&")) {
      size_t at = peek().pos;
      ++pos_;
      if (peek().kind == Tok::Name && peek().text[0] == '$') return fail("'&' takes a symbol name", at);
      // &NAME alone: a C variable's address, else the ELF symbol's (the environment decides).
      if (peek().kind == Tok::Name && !postfix_follows(pos_ + 1)) {
        auto n = std::make_shared<Expr::Node>();
        n->op = Op::Var;
        n->var.kind = Variable::Kind::Symbol;
        n->var.name = peek().text;
        ++pos_;
        return NodePtr(n);
      }
      Nest nest(*this);
      if (nest_ > kMaxDepth) return too_deep(at);
      auto a = parse_unary();
      if (!a) return a;
      return unary_node(Op::AddrOf, *a, at);
    }
    if (peek().kind == Tok::Name && peek().text == "sizeof") {
      const size_t at = peek().pos;
      ++pos_;
      if (auto type = cast_type(true)) {
        pos_ = type->second;
        auto n = std::make_shared<Expr::Node>();
        n->op = Op::SizeOf;
        n->name = type->first;
        return NodePtr(n);
      }
      Nest nest(*this);
      if (nest_ > kMaxDepth) return too_deep(at);
      auto a = parse_unary();
      if (!a) return a;
      return unary_node(Op::SizeOf, *a, at);
    }
    if (auto type = cast_type()) {
      size_t at = peek().pos;
      pos_ = type->second;
      Nest nest(*this);
      if (nest_ > kMaxDepth) return too_deep(at);
      auto a = parse_unary();
      if (!a) return a;
      auto n = unary_node(Op::Cast, *a, at);
      if (!n) return n;
      std::const_pointer_cast<Expr::Node>(*n)->name = type->first;
      return n;
    }
    return parse_postfix();
  }

  Result<NodePtr> unary_node(Op op, const NodePtr& a, size_t at) {
    auto n = std::make_shared<Expr::Node>();
    n->op = op;
    n->a = a;
    n->depth = 1 + a->depth;
    if (n->depth > kMaxDepth) return too_deep(at);
    return NodePtr(n);
  }

  bool postfix_follows(size_t i) const {
    const Token& t = toks_[i];
    return t.kind == Tok::Punct && (t.text == "." || t.text == "->" || t.text == "[");
  }

  // "(" TYPE ")" at the current token: the type's text and the token after ")". After sizeof, a lone
  // name in parentheses is left to the evaluator (a variable, else a type).
  std::optional<std::pair<std::string, size_t>> cast_type(bool after_sizeof = false) const {
    if (!is_punct("(")) return std::nullopt;
    static const char* kKeywords[] = {"unsigned", "signed", "int",    "char",  "short", "long",  "float",   "double",
                                      "void",     "_Bool",  "struct", "union", "enum",  "const", "volatile"};
    size_t i = pos_ + 1;
    std::string text;
    bool keyword = false;
    size_t names = 0;
    while (toks_[i].kind == Tok::Name && toks_[i].text[0] != '$') {
      for (const char* k : kKeywords)
        if (toks_[i].text == k) keyword = true;
      text += (text.empty() ? "" : " ") + toks_[i].text;
      ++names;
      ++i;
    }
    if (names == 0) return std::nullopt;
    size_t stars = 0;
    while (toks_[i].kind == Tok::Punct && toks_[i].text == "*") {
      ++stars;
      ++i;
    }
    if (toks_[i].kind != Tok::Punct || toks_[i].text != ")") return std::nullopt;
    if (stars) text += " " + std::string(stars, '*');
    if (after_sizeof) return keyword || stars ? std::optional(std::make_pair(text, i + 1)) : std::nullopt;
    const Token& next = toks_[i + 1];
    // A lone name in parentheses is a cast only when a value follows: "(n) - 1" stays a subtraction.
    const bool value_follows = next.kind == Tok::Name || next.kind == Tok::Number ||
                               (next.kind == Tok::Punct && (next.text == "(" || next.text == "~" || next.text == "!"));
    if (!keyword && !stars && (names > 1 || !value_follows)) return std::nullopt;
    if (next.kind == Tok::End) return std::nullopt;
    return std::make_pair(text, i + 1);
  }

  Result<NodePtr> parse_postfix() {
    auto p = parse_primary();
    if (!p) return p;
    NodePtr left = *p;
    for (;;) {
      const size_t at = peek().pos;
      if (is_punct(".") || is_punct("->")) {
        const bool arrow = is_punct("->");
        ++pos_;
        if (peek().kind != Tok::Name || peek().text[0] == '$')
          return fail(std::string("expected a field name after '") + (arrow ? "->" : ".") + "'", peek().pos);
        auto n = unary_node(arrow ? Op::Arrow : Op::Member, left, at);
        if (!n) return n;
        std::const_pointer_cast<Expr::Node>(*n)->name = peek().text;
        ++pos_;
        left = *n;
      } else if (is_punct("[")) {
        Nest nest(*this);
        if (nest_ > kMaxDepth) return too_deep(at);
        ++pos_;
        auto idx = parse_binary(1);
        if (!idx) return idx;
        if (!is_punct("]")) return fail("expected ']'", peek().pos);
        ++pos_;
        auto n = std::make_shared<Expr::Node>();
        n->op = Op::Index;
        n->a = left;
        n->b = *idx;
        n->depth = 1 + std::max(left->depth, (*idx)->depth);
        if (n->depth > kMaxDepth) return too_deep(at);
        left = n;
      } else {
        return left;
      }
    }
  }

  Result<NodePtr> parse_primary() {
    const Token& t = peek();
    if (t.kind == Tok::Number) {
      auto n = std::make_shared<Expr::Node>();
      n->op = Op::Literal;
      n->value = t.number;
      n->suffix = t.suffix;
      n->fvalue = t.fnumber;
      if (t.suffix == 'f' || t.suffix == 'd') n->value = int64_t(std::clamp(t.fnumber, -9.2e18, 9.2e18));
      ++pos_;
      return NodePtr(n);
    }
    if (is_punct("(")) {
      size_t open = t.pos;
      Nest nest(*this);
      if (nest_ > kMaxDepth) return too_deep(open);
      ++pos_;
      auto e = parse_binary(0);
      if (!e) return e;
      if (!is_punct(")")) {
        if (peek().kind == Tok::End)
          return fail("missing ')' for the '(' at column " + std::to_string(open + 1), peek().pos);
        return fail("expected ')' before '" + peek().text + "'", peek().pos);
      }
      ++pos_;
      return e;
    }
    if (t.kind == Tok::Name) {
      std::string name = t.text;
      const size_t at = t.pos;
      ++pos_;
      // blockIdx.x and friends are one variable: take the field with the name.
      const std::string base = name[0] == '$' ? name.substr(1) : name;
      if (is_builtin(base) && is_punct(".") && toks_[pos_ + 1].kind == Tok::Name) {
        name += "." + toks_[pos_ + 1].text;
        pos_ += 2;
      }
      auto v = variable(name);
      if (!v) return fail(v.error().message, at);
      auto n = std::make_shared<Expr::Node>();
      n->op = Op::Var;
      n->var = *v;
      return NodePtr(n);
    }
    if (t.kind == Tok::End) return fail("expected a value", t.pos);
    return fail("expected a value before '" + t.text + "'", t.pos);
  }

  static bool is_builtin(const std::string& base) {
    return base == "blockIdx" || base == "threadIdx" || base == "blockDim" || base == "gridDim";
  }

  static Result<Variable> variable(std::string name) {
    Variable v;
    if (name[0] == '$' && name.find('.') != std::string::npos) name = name.substr(1);  // $blockIdx.x
    if (name[0] == '$') {
      if (name == "$lmem")
        v.kind = Variable::Kind::LocalMem;
      else if (name == "$blockIdx" || name == "$threadIdx") {
        // The whole coordinate: shown as {x = .., y = .., z = ..} by print.
        v.kind = Variable::Kind::Source;
        v.name = name;
      } else if (name == "$lane")
        v.kind = Variable::Kind::Lane;
      else if (const DebugCsr* csr = find_debug_csr(name)) {
        v.kind = Variable::Kind::Csr;
        v.index = csr->number;
        v.name = csr->prompt_name;
      } else if (name == "$warp")
        v.kind = Variable::Kind::Warp;
      else if (name == "$core")
        v.kind = Variable::Kind::Core;
      else if (auto r = parse_register(name))
        v = *r;
      else
        return make_error("unknown register '" + name + "'");
      return v;
    }
    static const std::pair<const char*, Variable::Kind> kBuiltins[] = {
        {"blockIdx", Variable::Kind::BlockIdx},
        {"threadIdx", Variable::Kind::ThreadIdx},
        {"blockDim", Variable::Kind::BlockDim},
        {"gridDim", Variable::Kind::GridDim},
    };
    size_t dot = name.find('.');
    std::string base = name.substr(0, dot);
    for (const auto& [b, kind] : kBuiltins) {
      if (base != b) continue;
      std::string field = dot == std::string::npos ? "" : name.substr(dot + 1);
      if (field != "x" && field != "y" && field != "z")
        return make_error("'" + name + "': " + b + " has fields x, y and z");
      v.kind = kind;
      v.index = unsigned(field[0] - 'x');
      return v;
    }
    if (name.find('.') != std::string::npos) return make_error("unknown name '" + name + "'");
    // Any other name is the kernel's (a C variable): the environment resolves it.
    v.kind = Variable::Kind::Source;
    v.name = name;
    return v;
  }

  std::string_view s_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
};

Result<int64_t> eval_node(const Expr::Node& n, const ExprEnv& env) {
  switch (n.op) {
    case Op::Literal: return n.value;
    case Op::Var: return env.value(n.var);
    case Op::SizeOf: return make_error("sizeof needs C types (the kernel's debug information)");
    default: break;
  }
  auto a = eval_node(*n.a, env);
  if (!a) return a;
  int64_t x = *a;
  switch (n.op) {
    case Op::Not: return int64_t(x == 0);
    case Op::BitNot: return ~x;
    case Op::Neg: return int64_t(0 - uint64_t(x));
    case Op::Deref:
      if (x < 0 || x > int64_t(UINT32_MAX)) return make_error("address " + std::to_string(x) + " is not 32-bit");
      return env.load_word(uint32_t(x));
    // Short-circuit: the right side of && and || is evaluated only when needed.
    case Op::And:
      if (x == 0) return int64_t(0);
      break;
    case Op::Or:
      if (x != 0) return int64_t(1);
      break;
    default: break;
  }
  auto b = eval_node(*n.b, env);
  if (!b) return b;
  int64_t y = *b;
  auto wrap = [](uint64_t v) { return int64_t(v); };
  switch (n.op) {
    case Op::Mul: return wrap(uint64_t(x) * uint64_t(y));
    case Op::Div:
    case Op::Mod:
      if (y == 0) return make_error("division by zero");
      if (x == INT64_MIN && y == -1) return n.op == Op::Div ? x : int64_t(0);
      return n.op == Op::Div ? x / y : x % y;
    case Op::Add: return wrap(uint64_t(x) + uint64_t(y));
    case Op::Sub: return wrap(uint64_t(x) - uint64_t(y));
    case Op::Shl:
    case Op::Shr:
      if (y < 0 || y > 63) return make_error("shift by " + std::to_string(y) + " (0..63 allowed)");
      return n.op == Op::Shl ? wrap(uint64_t(x) << y) : (x >> y);
    case Op::Lt: return int64_t(x < y);
    case Op::Le: return int64_t(x <= y);
    case Op::Gt: return int64_t(x > y);
    case Op::Ge: return int64_t(x >= y);
    case Op::Eq: return int64_t(x == y);
    case Op::Ne: return int64_t(x != y);
    case Op::BitAnd: return x & y;
    case Op::BitXor: return x ^ y;
    case Op::BitOr: return x | y;
    case Op::And:
    case Op::Or: return int64_t(y != 0);
    default: return make_error(ErrorCode::Internal, "internal error: bad expression node");
  }
}

std::string node_string(const Expr::Node& n) {
  switch (n.op) {
    case Op::Literal:
      if (n.suffix == 'f' || n.suffix == 'd') {
        char b[40];
        std::snprintf(b, sizeof b, "%.17g%s", n.fvalue, n.suffix == 'f' ? "f" : "");
        return b;
      }
      if (n.suffix == 'c') return std::to_string(n.value);
      return std::to_string(n.value) + (n.suffix == 'u' ? "u" : "");
    case Op::Var: return n.var.to_string();
    case Op::Not:
    case Op::BitNot:
    case Op::Neg:
    case Op::Deref: return std::string("(") + op_text(n.op) + node_string(*n.a) + ")";
    case Op::Member: return node_string(*n.a) + "." + n.name;
    case Op::Arrow: return node_string(*n.a) + "->" + n.name;
    case Op::Index: return node_string(*n.a) + "[" + node_string(*n.b) + "]";
    case Op::Cast: return "((" + n.name + ")" + node_string(*n.a) + ")";
    case Op::AddrOf: return "(&" + node_string(*n.a) + ")";
    case Op::At: return "(" + node_string(*n.a) + "@" + node_string(*n.b) + ")";
    case Op::SizeOf: return "sizeof(" + (n.a ? node_string(*n.a) : n.name) + ")";
    default: return "(" + node_string(*n.a) + " " + op_text(n.op) + " " + node_string(*n.b) + ")";
  }
}

}  // namespace

namespace {

bool node_uses_source(const Expr::Node& n) {
  if (n.op == Op::Var) return n.var.kind == Variable::Kind::Source;
  // A C-typed literal (1.5, 2u); a character literal is an integer to both evaluators.
  if (n.op == Op::Literal) return n.suffix != 0 && n.suffix != 'c';
  if (n.op >= Op::Member) return true;
  return (n.a && node_uses_source(*n.a)) || (n.b && node_uses_source(*n.b));
}

}  // namespace

Result<Expr> Expr::parse(std::string_view text) {
  Parser p(text);
  auto root = p.parse();
  if (!root) return root.error();
  Expr e;
  e.root_ = *root;
  e.uses_source_ = node_uses_source(**root);
  size_t b = text.find_first_not_of(" \t");
  size_t end = text.find_last_not_of(" \t");
  e.text_ = b == std::string_view::npos ? "" : std::string(text.substr(b, end - b + 1));
  return e;
}

Result<int64_t> Expr::eval(const ExprEnv& env) const {
  if (!root_) return make_error("empty expression");
  // C names and operators have C types: the environment's typed evaluator takes the whole tree.
  if (uses_source()) return env.c_value(root_.get());
  return eval_node(*root_, env);
}

std::string Expr::to_string() const { return root_ ? node_string(*root_) : ""; }

std::optional<Variable> Expr::as_variable() const {
  if (root_ && root_->op == Op::Var) return root_->var;
  return std::nullopt;
}

}  // namespace vx::debug
