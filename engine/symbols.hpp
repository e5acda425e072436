// Symbol services for a kernel image: ELF symbols, DWARF line tables and
// scopes, and call-frame information, read through elfutils (libelf/libdw).
//
// Kernels are riscv32 ELF executables built by clang with -gdwarf-4. A file
// without DWARF still loads (has_debug_info() is false): function names and
// addresses then come from the ELF symbol table alone, and the queries that
// need line numbers return an error or nullopt.
//
// Inlined code: locate() names the innermost function, inlined or not, whose
// code holds the pc; function_at() names the out-of-line function; a function
// breakpoint on a function that was inlined also stops at the entry of every
// inlined copy. backtrace() does not add frames for inlined calls.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace vx::engine {

struct SourceLocation {
  std::string file;      // path as DWARF names it (the compilation directory joined if relative)
  uint32_t line = 0;     // 0: code the compiler made up (no source line)
  std::string function;  // innermost function containing pc (inlined or not), "" if unknown
};

struct Frame {
  uint32_t pc = 0;                      // frame 0: the pc; callers: the return address
  uint32_t sp = 0;                      // the frame's CFA; the sp register's value when the frame has no CFI
  std::optional<SourceLocation> where;  // callers: the location of the call (return address - 1)
  std::optional<uint32_t> cfa;          // the CFA when the frame has CFI
  // The frame's x registers (RISC-V DWARF numbers 0..31). Frame 0 has the machine's; a caller has
  // those its callees' CFI rules recover, and only the callee-saved ones (ra, sp, s0..s11): the
  // others were free for the callees to change, so their values at the call are unknown.
  std::array<std::optional<uint32_t>, 32> regs{};
};

// Registers a call preserves in the RISC-V calling convention (ra as the return address, sp, s0..s11).
constexpr bool callee_saved(unsigned reg) {
  return reg == 1 || reg == 2 || reg == 8 || reg == 9 || (reg >= 18 && reg <= 27);
}

class Symbols {
 public:
  // Opens the ELF at path. Errors name the file and what is wrong with it:
  // missing or unreadable, not an ELF, not RISC-V 32, no symbol table, no
  // executable segment, corrupt debug information.
  static Result<Symbols> load(const std::string& path);
  // The same from an image already in memory (the fuzz target's entry point); name stands for the
  // path in errors and in source file lookups.
  static Result<Symbols> load_bytes(std::vector<uint8_t> bytes, const std::string& name);

  Symbols(Symbols&&) noexcept;
  Symbols& operator=(Symbols&&) noexcept;
  ~Symbols();

  bool has_debug_info() const;

  // Breakpoint locations as gdb takes them:
  //  "func"       the address after the prologue (the second is_stmt row of
  //               the function's line table, its entry if it has one row or
  //               is assembly) of every out-of-line copy, and the entry of
  //               every inlined copy;
  //  "file.c:N"   file matched by basename or path suffix; every address
  //               where an is_stmt row for line N starts, the lowest one per
  //               block (function, inlined call or lexical block); a line
  //               without code moves to the next line of that file with code,
  //               and `where` says which line was used;
  //  "*0xADDR", "*DECIMAL"  that address, which must lie in an executable
  //               segment and be aligned to an instruction.
  // Addresses are sorted and unique; `where` describes the first of them.
  // Errors are one line, e.g. `no function named "foo" in vecadd.elf`.
  struct Resolved {
    std::vector<uint32_t> addresses;
    std::optional<SourceLocation> where;
  };
  Result<Resolved> resolve(std::string_view loc) const;

  std::optional<SourceLocation> locate(uint32_t pc) const;

  // The contiguous address range [lo, hi) of line-table rows for the same
  // (file, line) around pc.
  std::optional<std::pair<uint32_t, uint32_t>> line_range(uint32_t pc) const;

  // Whether a line-table row starts at pc, and whether it begins a statement (is_stmt, a line
  // other than 0): gdb's step stops only at such a row of another line (nullopt: no row starts
  // at pc, the middle of a line).
  std::optional<bool> row_start(uint32_t pc) const;

  // The function (ELF symbol of type FUNC, else DWARF subprogram) containing
  // pc: its name and [lo, hi) (for a DWARF subprogram in several pieces, the
  // piece that holds pc).
  struct Function {
    std::string name;
    uint32_t lo = 0, hi = 0;
  };
  std::optional<Function> function_at(uint32_t pc) const;

  // The address of the ELF symbol `name` (functions and objects before
  // labels, global before local).
  std::optional<uint32_t> symbol_address(std::string_view name) const;

  // "name+off" (decimal offset, as gdb prints it) for disassembly: the
  // closest symbol at or below addr inside a sized symbol that covers addr;
  // nullopt if no symbol covers addr.
  std::optional<std::string> describe(uint32_t addr) const;

  // The text of a source line, without its line break (reads the file once
  // and keeps it; nullopt if unreadable or the line does not exist).
  std::optional<std::string> source_line(const std::string& file, uint32_t line) const;

  // Backtrace through the DWARF call-frame information (.debug_frame, else
  // .eh_frame). Starts at pc with the given register reader (RISC-V DWARF
  // numbers: x0..x31 = 0..31) and memory reader; innermost frame first,
  // frame 0 is pc itself. Stops at max_frames, at a frame without CFI (it is
  // the last frame, e.g. the assembly startup code), at a return address of
  // zero or outside the code, at a read failure, or when unwinding makes no
  // progress.
  std::vector<Frame> backtrace(uint32_t pc, const std::function<std::optional<uint32_t>(unsigned reg)>& read_reg,
                               const std::function<std::optional<uint32_t>(uint32_t addr)>& read_word,
                               unsigned max_frames = 32) const;

 private:
  struct Impl;
  explicit Symbols(std::unique_ptr<Impl> impl);
  static Result<Symbols> load_impl(const std::string& path, std::vector<uint8_t>* bytes);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vx::engine
