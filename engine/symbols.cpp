// Symbol services through elfutils: see symbols.hpp.
//
// load() reads the whole image into memory (libelf then checks every offset
// against its size, so a truncated file is an error, not a crash), reads the
// ELF symbol table and executable segments, and with DWARF, every unit's line
// table (as spans of code [lo, hi)) and scopes with code (subprograms,
// inlined calls, lexical blocks). Queries after load use these tables; only
// backtrace() goes back to libdw, for the call-frame information.
#include "engine/symbols.hpp"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "base/hex.hpp"
#include "device/input_file.hpp"
#include "engine/dwarf_expr.hpp"

namespace vx::engine {

namespace {

using Range = std::pair<uint32_t, uint32_t>;  // [lo, hi)
using RegReader = std::function<std::optional<uint32_t>(unsigned reg)>;
using WordReader = std::function<std::optional<uint32_t>(uint32_t addr)>;

constexpr unsigned kRegSp = 2;
constexpr uint32_t kRiscvRvcFlag = 0x1;  // EF_RISCV_RVC

std::string base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::optional<uint32_t> parse_u32(std::string_view s, int base) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v > std::numeric_limits<uint32_t>::max()) {
    return std::nullopt;
  }
  return uint32_t(v);
}

std::string machine_name(unsigned machine) {
  switch (machine) {
    case EM_386: return "x86";
    case EM_X86_64: return "x86-64";
    case EM_ARM: return "ARM";
    case EM_AARCH64: return "AArch64";
    case EM_RISCV: return "RISC-V";
    default: return "machine " + std::to_string(machine);
  }
}

const char* elf_error() { return elf_errmsg(-1); }
const char* dwarf_error() { return dwarf_errmsg(-1); }

// A line-table row that covers code, up to the next row: [lo, hi).
struct Span {
  uint32_t lo = 0, hi = 0;
  uint32_t file = 0;  // index into Impl::files
  uint32_t line = 0;
  bool is_stmt = false;
};

// A line-table row that begins a statement (is_stmt, line != 0), even one
// that covers no code because the next row starts at the same address.
struct StmtRow {
  uint32_t addr = 0;
  uint32_t line = 0;
};

// A DWARF scope with code.
struct Scope {
  enum Kind { kSubprogram, kInlined, kBlock } kind = kBlock;
  std::string name;           // functions; "" for lexical blocks
  std::vector<Range> ranges;  // in DWARF's order: the first holds the entry
  uint32_t entry = 0;
  unsigned depth = 0;  // nesting among scopes with code; 0 for a unit's subprograms
  bool is_function() const { return kind != kBlock; }
  const Range* range_of(uint32_t pc) const {
    for (const Range& r : ranges) {
      if (pc >= r.first && pc < r.second) return &r;
    }
    return nullptr;
  }
};

struct Unit {
  std::vector<Range> ranges;
  bool assembly = false;
};

struct ElfSymbol {
  std::string name;
  uint32_t value = 0, size = 0;
  unsigned char type = STT_NOTYPE, bind = STB_LOCAL;
  uint16_t section = 0;
};

struct FreeFrame {
  void operator()(Dwarf_Frame* f) const { std::free(f); }
};
using FramePtr = std::unique_ptr<Dwarf_Frame, FreeFrame>;

// Evaluates one of the DWARF expressions libdw derives from CFI rules (dwarf_expr.hpp): the
// value it computes and whether that is a value (DW_OP_stack_value, or a
// register named by DW_OP_regN) rather than the address of one.
struct Evaluated {
  uint32_t v = 0;
  bool is_value = false;
};
std::optional<Evaluated> evaluate(const Dwarf_Op* ops, size_t n, const RegReader& reg, std::optional<uint32_t> cfa,
                                  const WordReader& read_word) {
  dwarf::Env env;
  env.reg = reg;
  env.cfa = cfa;
  env.read = [&](uint32_t addr, uint32_t size) -> Result<std::vector<uint8_t>> {
    const auto w = size <= 4 ? read_word(addr) : std::nullopt;
    if (!w) return make_error("cannot read memory at " + hex_short(addr));
    std::vector<uint8_t> b;
    for (uint32_t i = 0; i < size; ++i) b.push_back(uint8_t(*w >> (8 * i)));
    return b;
  };
  const auto l = dwarf::evaluate(ops, n, env);
  if (!l) return std::nullopt;
  switch (l->kind) {
    case dwarf::Kind::Memory: return Evaluated{l->address, false};
    case dwarf::Kind::Value: return Evaluated{uint32_t(l->value), true};
    case dwarf::Kind::Register:
      if (const auto v = reg(l->reg)) return Evaluated{*v, true};
      return std::nullopt;
    default: return std::nullopt;
  }
}

const char* die_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  return dwarf_attr_integrate(die, DW_AT_name, &attr) ? dwarf_formstring(&attr) : nullptr;
}

}  // namespace

struct Symbols::Impl {
  std::string path;
  std::string name;            // the file's base name, for messages
  std::vector<uint8_t> image;  // the whole file (libelf reads it in place)
  Elf* elf = nullptr;
  Dwarf* dwarf = nullptr;
  Dwarf_CFI* debug_cfi = nullptr;  // .debug_frame, owned by `dwarf`
  Dwarf_CFI* eh_cfi = nullptr;     // .eh_frame, owned here
  uint32_t insn_align = 4;
  std::vector<Range> code;         // executable segments
  std::vector<ElfSymbol> symbols;  // named and defined, sorted by value
  std::vector<std::string> files;  // line-table file names
  std::vector<Span> spans;         // sorted by lo, disjoint
  std::vector<StmtRow> stmt_rows;  // sorted by address, in table order at one address
  std::vector<Scope> scopes;
  std::vector<Unit> units;
  std::set<std::string, std::less<>> abstract_functions;  // DWARF subprograms without code of their own
  mutable std::mutex cfi_mutex;                           // libdw's CFI caches are not thread-safe
  mutable std::mutex source_mutex;
  mutable std::map<std::string, std::optional<std::vector<std::string>>, std::less<>> sources;

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    if (dwarf) dwarf_end(dwarf);
    if (eh_cfi) dwarf_cfi_end(eh_cfi);
    if (elf) elf_end(elf);
  }

  Error error(const std::string& what) const { return make_error(path + ": " + what); }

  Result<void> read_file();
  Result<void> read_elf(bool* has_debug_sections);
  Result<void> read_dwarf();
  Result<void> read_unit(Dwarf_Die* cudie);
  void walk(Dwarf_Die* parent, unsigned depth);
  std::vector<Range> code_ranges(Dwarf_Die* die) const;

  bool in_code(uint32_t addr) const {
    return std::any_of(code.begin(), code.end(), [&](const Range& r) { return addr >= r.first && addr < r.second; });
  }
  const Span* span_at(uint32_t pc) const;
  const Scope* innermost(uint32_t pc, bool functions_only) const;
  const ElfSymbol* elf_function_at(uint32_t pc) const;
  std::string function_name(uint32_t pc) const;
  bool in_assembly(uint32_t pc) const;
  uint32_t after_prologue(const Range& body) const;
  std::optional<SourceLocation> locate(uint32_t pc) const;

  Result<Resolved> resolve_address(std::string_view text) const;
  Result<Resolved> resolve_function(std::string_view fn) const;
  uint32_t own_line(uint32_t addr, std::string_view fn, const std::vector<Range>& ranges) const;
  Result<Resolved> resolve_line(std::string_view spec, std::string_view file, std::string_view line_text) const;

  FramePtr frame_at(uint32_t pc) const;
  std::optional<uint32_t> unwind_register(Dwarf_Frame* callee, std::optional<uint32_t> callee_cfa, unsigned reg,
                                          const RegReader& callee_reg, const WordReader& read_word) const;
};

// --- Loading -------------------------------------------------------------------------------

Result<void> Symbols::Impl::read_file() {
  // The helper refuses a directory, a device or a FIFO and caps the size before reading.
  auto bytes = read_input_file(path, kMaxKernelImageBytes);
  if (!bytes) return bytes.error();
  image = std::move(bytes).value();
  if (image.empty()) return error("empty file, not an ELF file");
  return {};
}

Result<void> Symbols::Impl::read_elf(bool* has_debug_sections) {
  elf = elf_memory(reinterpret_cast<char*>(image.data()), image.size());
  if (!elf || elf_kind(elf) != ELF_K_ELF) return error("not an ELF file");
  GElf_Ehdr eh;
  if (!gelf_getehdr(elf, &eh)) return error(std::string("not a valid ELF file (") + elf_error() + ")");
  const int cls = gelf_getclass(elf);
  if (eh.e_machine != EM_RISCV || cls != ELFCLASS32) {
    return error("not a RISC-V 32-bit ELF file (it is " + machine_name(eh.e_machine) + ", " +
                 (cls == ELFCLASS64 ? "64" : "32") + "-bit)");
  }
  if (eh.e_flags & kRiscvRvcFlag) insn_align = 2;

  size_t nphdr = 0;
  if (elf_getphdrnum(elf, &nphdr) != 0) return error(std::string("corrupt program headers (") + elf_error() + ")");
  for (size_t i = 0; i < nphdr; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, int(i), &ph)) return error(std::string("corrupt program header (") + elf_error() + ")");
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && ph.p_memsz > 0) {
      code.emplace_back(uint32_t(ph.p_vaddr), uint32_t(ph.p_vaddr + ph.p_memsz));
    }
  }
  if (code.empty()) return error("no executable segment (not a kernel image)");
  std::sort(code.begin(), code.end());

  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0)
    return error(std::string("corrupt section headers (") + elf_error() + ")");
  bool have_symtab = false;
  *has_debug_sections = false;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) return error(std::string("corrupt section header (") + elf_error() + ")");
    const char* sname = elf_strptr(elf, shstrndx, sh.sh_name);
    if (!sname) return error(std::string("corrupt section names (") + elf_error() + ")");
    if (std::strcmp(sname, ".debug_info") == 0 || std::strcmp(sname, ".zdebug_info") == 0) {
      *has_debug_sections = true;
    }
    if (sh.sh_type != SHT_SYMTAB) continue;
    have_symtab = true;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) return error(std::string("the symbol table is truncated or corrupt (") + elf_error() + ")");
    const size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
    for (size_t i = 0; entsize && i < data->d_size / entsize; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, int(i), &sym)) return error(std::string("corrupt symbol (") + elf_error() + ")");
      const unsigned char type = GELF_ST_TYPE(sym.st_info);
      if ((type != STT_FUNC && type != STT_OBJECT && type != STT_NOTYPE) || sym.st_shndx == SHN_UNDEF ||
          sym.st_shndx == SHN_ABS || sym.st_name == 0) {
        continue;
      }
      const char* sym_name = elf_strptr(elf, sh.sh_link, sym.st_name);
      if (!sym_name) return error(std::string("corrupt symbol names (") + elf_error() + ")");
      // Mapping symbols ($x, $d) and assembler-local labels name no code.
      if (!*sym_name || sym_name[0] == '$' || std::strncmp(sym_name, ".L", 2) == 0) continue;
      symbols.push_back(ElfSymbol{sym_name, uint32_t(sym.st_value), uint32_t(sym.st_size), type,
                                  uint8_t(GELF_ST_BIND(sym.st_info)), uint16_t(sym.st_shndx)});
    }
  }
  if (!have_symtab) return error("no symbol table (the file was stripped)");
  std::stable_sort(symbols.begin(), symbols.end(),
                   [](const ElfSymbol& a, const ElfSymbol& b) { return a.value < b.value; });
  return {};
}

std::vector<Range> Symbols::Impl::code_ranges(Dwarf_Die* die) const {
  std::vector<Range> out;
  Dwarf_Addr base, start, end;
  ptrdiff_t off = 0;
  while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0) {
    // Code the linker discarded keeps its ranges at a tombstone address.
    if (end > start && end < (uint64_t(1) << 32) && in_code(uint32_t(start))) {
      out.emplace_back(uint32_t(start), uint32_t(end));
    }
  }
  return out;
}

void Symbols::Impl::walk(Dwarf_Die* parent, unsigned depth) {
  Dwarf_Die die;
  if (dwarf_child(parent, &die) != 0) return;
  do {
    const int tag = dwarf_tag(&die);
    if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block) {
      std::vector<Range> ranges = code_ranges(&die);
      const char* fn = tag == DW_TAG_lexical_block ? nullptr : die_name(&die);
      unsigned inner = depth;
      if (!ranges.empty()) {
        Scope s;
        s.kind = tag == DW_TAG_subprogram           ? Scope::kSubprogram
                 : tag == DW_TAG_inlined_subroutine ? Scope::kInlined
                                                    : Scope::kBlock;
        s.name = fn ? fn : "";
        s.ranges = std::move(ranges);
        Dwarf_Addr entry;
        const bool has_entry = dwarf_entrypc(&die, &entry) == 0 && entry < (uint64_t(1) << 32);
        s.entry = has_entry && s.range_of(uint32_t(entry)) ? uint32_t(entry) : s.ranges.front().first;
        s.depth = depth;
        scopes.push_back(std::move(s));
        inner = depth + 1;
      } else if (tag == DW_TAG_subprogram && fn) {
        abstract_functions.insert(fn);
      }
      walk(&die, inner);
    } else if (tag == DW_TAG_namespace || tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
               tag == DW_TAG_union_type) {
      walk(&die, depth);
    }
  } while (dwarf_siblingof(&die, &die) == 0);
}

Result<void> Symbols::Impl::read_unit(Dwarf_Die* cudie) {
  Unit unit;
  unit.ranges = code_ranges(cudie);
  unit.assembly = dwarf_srclang(cudie) == DW_LANG_Mips_Assembler;
  units.push_back(std::move(unit));

  Dwarf_Attribute attr;
  const char* comp_dir_c = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
  const std::string comp_dir = comp_dir_c ? comp_dir_c : "";

  if (dwarf_hasattr(cudie, DW_AT_stmt_list)) {
    Dwarf_Lines* lines = nullptr;
    size_t n = 0;
    if (dwarf_getsrclines(cudie, &lines, &n) != 0) {
      return error(std::string("corrupt DWARF line table (") + dwarf_error() + ")");
    }
    std::unordered_map<std::string, uint32_t> file_index;
    for (size_t i = 0; i < files.size(); ++i) file_index.emplace(files[i], uint32_t(i));
    for (size_t i = 0; i + 1 < n; ++i) {
      Dwarf_Line* row = dwarf_onesrcline(lines, i);
      Dwarf_Line* next = dwarf_onesrcline(lines, i + 1);
      Dwarf_Addr lo = 0, hi = 0;
      bool end_sequence = false, is_stmt = false;
      int line = 0;
      if (!row || !next || dwarf_lineaddr(row, &lo) != 0 || dwarf_lineaddr(next, &hi) != 0 ||
          dwarf_lineendsequence(row, &end_sequence) != 0 || dwarf_linebeginstatement(row, &is_stmt) != 0 ||
          dwarf_lineno(row, &line) != 0) {
        return error(std::string("corrupt DWARF line table (") + dwarf_error() + ")");
      }
      if (end_sequence || hi < lo || hi >= (uint64_t(1) << 32) || line < 0 || !in_code(uint32_t(lo))) continue;
      if (is_stmt && line > 0) stmt_rows.push_back(StmtRow{uint32_t(lo), uint32_t(line)});
      if (hi == lo) continue;
      // As gdb reads line tables: a line-0 row (compiler-generated code) inside a sequence does
      // not end the row before it, whose line goes on over it.
      if (line == 0 && !spans.empty() && spans.back().hi == uint32_t(lo) && spans.back().line != 0) {
        spans.back().hi = uint32_t(hi);
        continue;
      }
      const char* src = dwarf_linesrc(row, nullptr, nullptr);
      std::string file = src ? src : "";
      if (!file.empty() && file[0] != '/' && !comp_dir.empty()) {
        file = (std::filesystem::path(comp_dir) / file).lexically_normal().string();
      }
      auto [it, added] = file_index.emplace(file, uint32_t(files.size()));
      if (added) files.push_back(file);
      spans.push_back(Span{uint32_t(lo), uint32_t(hi), it->second, uint32_t(line), is_stmt});
    }
  }
  walk(cudie, 0);
  return {};
}

Result<void> Symbols::Impl::read_dwarf() {
  dwarf = dwarf_begin_elf(elf, DWARF_C_READ, nullptr);
  if (!dwarf) return error(std::string("corrupt DWARF debug information (") + dwarf_error() + ")");
  Dwarf_CU* cu = nullptr;
  for (;;) {
    Dwarf_CU* next = nullptr;
    Dwarf_Half version = 0;
    uint8_t unit_type = 0;
    Dwarf_Die cudie;
    const int r = dwarf_get_units(dwarf, cu, &next, &version, &unit_type, &cudie, nullptr);
    if (r > 0) break;
    if (r < 0) return error(std::string("corrupt DWARF debug information (") + dwarf_error() + ")");
    cu = next;
    if (unit_type != DW_UT_compile && unit_type != DW_UT_partial) continue;
    if (auto ok = read_unit(&cudie); !ok) return ok.error();
  }
  std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
  std::stable_sort(stmt_rows.begin(), stmt_rows.end(),
                   [](const StmtRow& a, const StmtRow& b) { return a.addr < b.addr; });
  // Overlapping rows (e.g. the same code claimed by two units) keep the first.
  std::vector<Span> disjoint;
  for (const Span& s : spans) {
    if (!disjoint.empty() && s.lo < disjoint.back().hi) continue;
    disjoint.push_back(s);
  }
  spans = std::move(disjoint);
  return {};
}

Result<Symbols> Symbols::load(const std::string& path) { return load_impl(path, nullptr); }

Result<Symbols> Symbols::load_bytes(std::vector<uint8_t> bytes, const std::string& name) {
  return load_impl(name, &bytes);
}

Result<Symbols> Symbols::load_impl(const std::string& path, std::vector<uint8_t>* bytes) {
  static const bool libelf_ok = elf_version(EV_CURRENT) != EV_NONE;
  if (!libelf_ok) return make_error("libelf does not support this ELF version");
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->name = base_name(path);
  if (bytes) {
    impl->image = std::move(*bytes);
    if (impl->image.empty()) return impl->error("empty file, not an ELF file");
  } else if (auto ok = impl->read_file(); !ok) {
    return ok.error();
  }
  bool has_debug_sections = false;
  if (auto ok = impl->read_elf(&has_debug_sections); !ok) return ok.error();
  if (has_debug_sections) {
    if (auto ok = impl->read_dwarf(); !ok) return ok.error();
    impl->debug_cfi = dwarf_getcfi(impl->dwarf);
  }
  impl->eh_cfi = dwarf_getcfi_elf(impl->elf);
  return Symbols(std::move(impl));
}

Symbols::Symbols(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Symbols::Symbols(Symbols&&) noexcept = default;
Symbols& Symbols::operator=(Symbols&&) noexcept = default;
Symbols::~Symbols() = default;

bool Symbols::has_debug_info() const { return !impl_->units.empty(); }

// --- Lookups -------------------------------------------------------------------------------

const Span* Symbols::Impl::span_at(uint32_t pc) const {
  auto it = std::upper_bound(spans.begin(), spans.end(), pc, [](uint32_t a, const Span& s) { return a < s.lo; });
  if (it == spans.begin()) return nullptr;
  --it;
  return pc < it->hi ? &*it : nullptr;
}

const Scope* Symbols::Impl::innermost(uint32_t pc, bool functions_only) const {
  const Scope* best = nullptr;
  for (const Scope& s : scopes) {
    if ((functions_only && !s.is_function()) || (best && s.depth <= best->depth) || !s.range_of(pc)) continue;
    best = &s;
  }
  return best;
}

const ElfSymbol* Symbols::Impl::elf_function_at(uint32_t pc) const {
  const ElfSymbol* best = nullptr;
  for (const ElfSymbol& s : symbols) {
    if (s.value > pc) break;
    if (s.type == STT_FUNC && pc - s.value < s.size && (!best || s.value > best->value || s.size < best->size)) {
      best = &s;
    }
  }
  return best;
}

std::string Symbols::Impl::function_name(uint32_t pc) const {
  if (const Scope* s = innermost(pc, true)) return s->name;
  if (const ElfSymbol* f = elf_function_at(pc)) return f->name;
  return "";
}

bool Symbols::Impl::in_assembly(uint32_t pc) const {
  for (const Unit& u : units) {
    for (const Range& r : u.ranges) {
      if (pc >= r.first && pc < r.second) return u.assembly;
    }
  }
  return false;
}

// As gdb does for clang's code: the address of the function's second is_stmt
// line-table row, which is the entry itself when two rows start there (no
// prologue). Assembly has no compiler prologue to skip.
uint32_t Symbols::Impl::after_prologue(const Range& body) const {
  if (in_assembly(body.first)) return body.first;
  auto it = std::lower_bound(stmt_rows.begin(), stmt_rows.end(), body.first,
                             [](const StmtRow& r, uint32_t a) { return r.addr < a; });
  if (it == stmt_rows.end() || it->addr >= body.second || ++it == stmt_rows.end() || it->addr >= body.second) {
    return body.first;
  }
  return it->addr;
}

std::optional<SourceLocation> Symbols::Impl::locate(uint32_t pc) const {
  const Span* s = span_at(pc);
  if (!s) return std::nullopt;
  return SourceLocation{files[s->file], s->line, function_name(pc)};
}

std::optional<SourceLocation> Symbols::locate(uint32_t pc) const { return impl_->locate(pc); }

std::optional<bool> Symbols::row_start(uint32_t pc) const {
  const auto& rows = impl_->stmt_rows;
  auto it = std::lower_bound(rows.begin(), rows.end(), pc, [](const StmtRow& r, uint32_t a) { return r.addr < a; });
  if (it != rows.end() && it->addr == pc) return true;
  const Span* s = impl_->span_at(pc);
  if (s && s->lo == pc) return false;
  return std::nullopt;
}

std::optional<std::pair<uint32_t, uint32_t>> Symbols::line_range(uint32_t pc) const {
  const auto& spans = impl_->spans;
  const Span* s = impl_->span_at(pc);
  if (!s) return std::nullopt;
  const auto same = [&](size_t a, size_t b) {
    return spans[a].hi == spans[b].lo && spans[a].file == spans[b].file && spans[a].line == spans[b].line;
  };
  size_t first = size_t(s - spans.data()), last = first;
  while (first > 0 && same(first - 1, first)) --first;
  while (last + 1 < spans.size() && same(last, last + 1)) ++last;
  return std::make_pair(spans[first].lo, spans[last].hi);
}

std::optional<Symbols::Function> Symbols::function_at(uint32_t pc) const {
  if (const ElfSymbol* f = impl_->elf_function_at(pc)) return Function{f->name, f->value, f->value + f->size};
  for (const Scope& s : impl_->scopes) {
    if (s.kind != Scope::kSubprogram) continue;
    if (const Range* r = s.range_of(pc)) return Function{s.name, r->first, r->second};
  }
  return std::nullopt;
}

std::optional<uint32_t> Symbols::symbol_address(std::string_view name) const {
  const ElfSymbol* best = nullptr;
  const auto rank = [](const ElfSymbol& s) {
    return (s.type == STT_FUNC || s.type == STT_OBJECT ? 0 : 2) + (s.bind == STB_GLOBAL ? 0 : 1);
  };
  for (const ElfSymbol& s : impl_->symbols) {
    if (s.name == name && (!best || rank(s) < rank(*best))) best = &s;
  }
  if (!best) return std::nullopt;
  return best->value;
}

std::optional<std::string> Symbols::describe(uint32_t addr) const {
  const ElfSymbol* cover = nullptr;  // the innermost sized symbol holding addr
  for (const ElfSymbol& s : impl_->symbols) {
    if (s.value > addr) break;
    if (s.size > 0 && addr - s.value < s.size && (!cover || s.value > cover->value || s.size < cover->size)) {
      cover = &s;
    }
  }
  if (!cover) return std::nullopt;
  // A label inside it, closer to addr (vx_dispatch inside _start), names addr better.
  const ElfSymbol* best = cover;
  for (const ElfSymbol& s : impl_->symbols) {
    if (s.value > addr) break;
    if (s.size == 0 && s.section == cover->section && s.value > best->value) best = &s;
  }
  return best->name + "+" + std::to_string(addr - best->value);
}

std::optional<std::string> Symbols::source_line(const std::string& file, uint32_t line) const {
  if (line == 0) return std::nullopt;
  std::lock_guard lock(impl_->source_mutex);
  auto [it, added] = impl_->sources.try_emplace(file);
  if (added) {
    // The debug information names the file: it may be anything (/dev/zero, a FIFO, a huge file), so
    // it is read through the input-file helper, which refuses those before reading. Unreadable
    // sources just have no text.
    if (auto bytes = read_input_file(file, kMaxTextInputBytes)) {
      std::vector<std::string> text;
      std::string_view rest(reinterpret_cast<const char*>(bytes->data()), bytes->size());
      while (!rest.empty()) {
        const size_t nl = rest.find('\n');
        std::string_view l = rest.substr(0, nl);
        rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
        if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
        text.emplace_back(l);
      }
      it->second = std::move(text);
    }
  }
  if (!it->second || line > it->second->size()) return std::nullopt;
  return (*it->second)[line - 1];
}

// --- Breakpoint locations ----------------------------------------------------------------------

Result<Symbols::Resolved> Symbols::Impl::resolve_address(std::string_view text) const {
  const std::string_view digits = trim(text);
  const bool is_hex = digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
  const auto addr = parse_u32(is_hex ? digits.substr(2) : digits, is_hex ? 16 : 10);
  if (!addr) {
    return make_error("invalid address \"*" + std::string(text) + "\": expected *0xHEX or *DECIMAL (32 bits)");
  }
  if (!in_code(*addr)) {
    std::string ranges;
    for (const Range& r : code)
      ranges += (ranges.empty() ? "" : ", ") + hex_short(r.first) + ".." + hex_short(r.second);
    return make_error("address " + hex_short(*addr) + " is not in the kernel's code (" + ranges + ")");
  }
  if (*addr % insn_align) {
    return make_error("address " + hex_short(*addr) + " is not aligned to an instruction (" +
                      std::to_string(insn_align) + " bytes)");
  }
  return Resolved{{*addr}, locate(*addr)};
}

// A function breakpoint stops on the function's own source, as gdb shows it: when the address
// after the prologue lies in code inlined from another function (a runtime header's helper such as
// vx_block_idx_x), the first statement row within `ranges` whose innermost function is fn itself.
uint32_t Symbols::Impl::own_line(uint32_t addr, std::string_view fn, const std::vector<Range>& ranges) const {
  auto here = locate(addr);
  if (!here || here->function == fn) return addr;
  auto it = std::lower_bound(stmt_rows.begin(), stmt_rows.end(), addr,
                             [](const StmtRow& r, uint32_t a) { return r.addr < a; });
  for (; it != stmt_rows.end(); ++it) {
    if (std::none_of(ranges.begin(), ranges.end(),
                     [&](const Range& r) { return it->addr >= r.first && it->addr < r.second; })) {
      if (std::all_of(ranges.begin(), ranges.end(), [&](const Range& r) { return it->addr >= r.second; })) break;
      continue;
    }
    auto loc = locate(it->addr);
    if (loc && loc->function == fn && loc->line) return it->addr;
  }
  return addr;
}

Result<Symbols::Resolved> Symbols::Impl::resolve_function(std::string_view fn) const {
  // Out-of-line copies: ELF functions, then DWARF subprograms the symbol table lacks.
  std::vector<Range> bodies;
  for (const ElfSymbol& s : symbols) {
    if (s.type != STT_FUNC || s.name != fn) continue;
    Range body{s.value, s.value + s.size};
    if (s.size == 0) {
      for (const Scope& sc : scopes) {
        const Range* r = sc.kind == Scope::kSubprogram ? sc.range_of(s.value) : nullptr;
        if (r && r->first == s.value) body = *r;
      }
    }
    bodies.push_back(body);
  }
  for (const Scope& sc : scopes) {
    if (sc.kind != Scope::kSubprogram || sc.name != fn) continue;
    const Range* r = sc.range_of(sc.entry);
    if (std::none_of(bodies.begin(), bodies.end(), [&](const Range& b) { return b.first == sc.entry; })) {
      bodies.push_back(*r);
    }
  }
  std::vector<uint32_t> addrs;
  for (const Range& b : bodies) addrs.push_back(own_line(after_prologue(b), fn, {b}));
  for (const Scope& sc : scopes) {
    if (sc.kind == Scope::kInlined && sc.name == fn) addrs.push_back(own_line(sc.entry, fn, sc.ranges));
  }
  if (addrs.empty()) {
    if (abstract_functions.count(fn)) {
      return make_error("function \"" + std::string(fn) + "\" has no code in " + name +
                        " (it was inlined away or removed)");
    }
    return make_error("no function named \"" + std::string(fn) + "\" in " + name);
  }
  std::sort(addrs.begin(), addrs.end());
  addrs.erase(std::unique(addrs.begin(), addrs.end()), addrs.end());
  auto where = locate(addrs.front());
  return Resolved{std::move(addrs), std::move(where)};
}

Result<Symbols::Resolved> Symbols::Impl::resolve_line(std::string_view spec, std::string_view file,
                                                      std::string_view line_text) const {
  const auto line = parse_u32(trim(line_text), 10);
  if (!line)
    return make_error("invalid line number \"" + std::string(line_text) + "\" in \"" + std::string(spec) + "\"");
  if (*line == 0) return make_error("line numbers start at 1 (\"" + std::string(spec) + "\")");
  if (file.empty()) return make_error("no file name in \"" + std::string(spec) + "\"");
  if (spans.empty()) return make_error(name + " has no line-number information (no DWARF debug info)");

  std::vector<bool> match(files.size());
  bool any = false;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& f = files[i];
    match[i] = f == file || (f.size() > file.size() && f.ends_with(file) && f[f.size() - file.size() - 1] == '/');
    any = any || match[i];
  }
  if (!any) return make_error("no source file named \"" + std::string(file) + "\" in " + name);

  std::set<uint32_t> lines;  // lines of the matching files where a statement starts
  for (const Span& s : spans) {
    if (match[s.file] && s.is_stmt && s.line != 0) lines.insert(s.line);
  }
  if (lines.empty()) return make_error(std::string(file) + " has no code in " + name);
  const auto it = lines.lower_bound(*line);
  if (it == lines.end()) {
    return make_error("line " + std::to_string(*line) + " is past the end of " + std::string(file) +
                      " (it has code up to line " + std::to_string(*lines.rbegin()) + ")");
  }
  const uint32_t used = *it;

  // The lowest address per block: a line split over several rows of one
  // function stops once, each inlined copy of it stops on its own.
  std::map<int64_t, uint32_t> lowest;
  for (const Span& s : spans) {
    if (!match[s.file] || !s.is_stmt || s.line != used) continue;
    int64_t block;
    if (const Scope* sc = innermost(s.lo, false)) {
      block = sc - scopes.data();
    } else if (const ElfSymbol* f = elf_function_at(s.lo)) {
      block = -1 - int64_t(f->value);
    } else {
      block = (int64_t(1) << 40) + s.lo;
    }
    auto [pos, added] = lowest.emplace(block, s.lo);
    if (!added) pos->second = std::min(pos->second, s.lo);
  }
  std::vector<uint32_t> addrs;
  for (const auto& [block, addr] : lowest) addrs.push_back(addr);
  std::sort(addrs.begin(), addrs.end());
  addrs.erase(std::unique(addrs.begin(), addrs.end()), addrs.end());
  SourceLocation where{files[span_at(addrs.front())->file], used, function_name(addrs.front())};
  return Resolved{std::move(addrs), std::move(where)};
}

Result<Symbols::Resolved> Symbols::resolve(std::string_view loc) const {
  const std::string_view s = trim(loc);
  if (s.empty()) return make_error("empty location: expected FUNCTION, FILE:LINE or *ADDRESS");
  if (s.front() == '*') return impl_->resolve_address(s.substr(1));
  const size_t colon = s.rfind(':');
  if (colon != std::string_view::npos) return impl_->resolve_line(s, trim(s.substr(0, colon)), s.substr(colon + 1));
  return impl_->resolve_function(s);
}

// --- Backtrace ---------------------------------------------------------------------------------

FramePtr Symbols::Impl::frame_at(uint32_t pc) const {
  std::lock_guard lock(cfi_mutex);
  for (Dwarf_CFI* cfi : {debug_cfi, eh_cfi}) {
    Dwarf_Frame* frame = nullptr;
    if (cfi && dwarf_cfi_addrframe(cfi, pc, &frame) == 0 && frame) return FramePtr(frame);
  }
  return nullptr;
}

// The caller's value of `reg`, by the callee frame's CFI rule for it.
std::optional<uint32_t> Symbols::Impl::unwind_register(Dwarf_Frame* callee, std::optional<uint32_t> callee_cfa,
                                                       unsigned reg, const RegReader& callee_reg,
                                                       const WordReader& read_word) const {
  Dwarf_Op mem[3];
  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  if (dwarf_frame_register(callee, int(reg), mem, &ops, &nops) != 0) return std::nullopt;
  if (nops == 0) {
    if (ops == nullptr) return callee_reg(reg);  // same value
    // Undefined. The caller's sp is the callee's CFA by definition, whether or
    // not the CFI (or libdw's ABI defaults) says so.
    return reg == kRegSp ? callee_cfa : std::nullopt;
  }
  const auto e = evaluate(ops, nops, callee_reg, callee_cfa, read_word);
  if (!e) return std::nullopt;
  return e->is_value ? std::optional(e->v) : read_word(e->v);
}

std::vector<Frame> Symbols::backtrace(uint32_t pc, const RegReader& read_reg, const WordReader& read_word,
                                      unsigned max_frames) const {
  struct Level {
    FramePtr cfi;
    std::optional<uint32_t> cfa;
    std::map<unsigned, std::optional<uint32_t>> regs;
  };
  std::vector<Level> levels;
  // Register r of frame k: frame 0 reads the machine, a caller applies its
  // callee's rules to the callee's registers.
  std::function<std::optional<uint32_t>(size_t, unsigned)> reg = [&](size_t k, unsigned r) -> std::optional<uint32_t> {
    if (r == 0) return 0u;
    if (auto it = levels[k].regs.find(r); it != levels[k].regs.end()) return it->second;
    std::optional<uint32_t> v;
    if (k == 0) {
      v = read_reg(r);
    } else {
      const Level& callee = levels[k - 1];
      const RegReader callee_reg = [&](unsigned rr) { return reg(k - 1, rr); };
      v = impl_->unwind_register(callee.cfi.get(), callee.cfa, r, callee_reg, read_word);
    }
    levels[k].regs[r] = v;
    return v;
  };

  std::vector<Frame> frames;
  uint32_t cur = pc;
  for (size_t k = 0; k < max_frames; ++k) {
    if (levels.size() == k) levels.emplace_back();
    // A caller's pc is a return address: the call is the instruction before it.
    const uint32_t lookup = k == 0 ? cur : cur - 1;
    Frame frame{cur, 0, locate(lookup)};
    levels[k].cfi = impl_->frame_at(lookup);
    if (levels[k].cfi) {
      Dwarf_Op* ops = nullptr;
      size_t nops = 0;
      if (dwarf_frame_cfa(levels[k].cfi.get(), &ops, &nops) == 0 && nops > 0) {
        const auto e = evaluate(
            ops, nops, [&](unsigned r) { return reg(k, r); }, std::nullopt, read_word);
        if (e) levels[k].cfa = e->v;
      }
    }
    // The stack grows down: a caller's CFA below its callee's is garbage.
    if (k > 0 && levels[k].cfa && levels[k - 1].cfa && *levels[k].cfa < *levels[k - 1].cfa) levels[k].cfa.reset();
    const auto sp = reg(k, kRegSp);
    frame.sp = levels[k].cfa ? *levels[k].cfa : sp.value_or(0);
    frame.cfa = levels[k].cfa;
    for (unsigned r = 0; r < 32; ++r)
      if (k == 0 || callee_saved(r)) frame.regs[r] = reg(k, r);
    frames.push_back(std::move(frame));
    if (!levels[k].cfa || k + 1 == max_frames) break;  // no CFI: the outermost frame we can know

    const int ra_column = dwarf_frame_info(levels[k].cfi.get(), nullptr, nullptr, nullptr);
    if (ra_column < 0) break;
    levels.emplace_back();
    const auto ret = reg(k + 1, unsigned(ra_column));
    if (!ret || *ret == 0 || !impl_->in_code(*ret)) break;
    if (*ret == cur && reg(k + 1, kRegSp) == sp) break;  // no progress
    cur = *ret;
  }
  return frames;
}

}  // namespace vx::engine
