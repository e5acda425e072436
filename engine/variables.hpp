// Source variables of a kernel image through DWARF (elfutils libdw): which variables, parameters
// and globals are visible at a pc, their C types, and where one lane keeps each of them.
//
// Vortex runs the same code in every lane of a warp, each lane with its own registers; memory is
// shared, except local memory, which belongs to the core. A variable's DWARF location (an
// expression, or a location list chosen by pc) is therefore evaluated against one lane's view:
// its registers, the memory as that lane sees it (the caller routes the local-memory window to
// the lane's core) and its frame's CFA. The answer names a register, a memory address or a value
// the compiler computed, or says why there is none: "optimized out" (no location at all) or "not
// available at this PC" (a location list that does not cover pc).
//
// Scopes: at a pc inside inlined code, the innermost function is the inlined one (as gdb's
// frame 0): its locals and parameters are visible, then the globals. Frame N > 0 of
// Variables::frames() is the function the inlined code sits in, and so on outwards.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace vx::engine {

// A C type as DWARF describes it. Types live as long as the Variables that made them.
struct CType {
  enum class Kind : uint8_t { Void, Int, Bool, Float, Pointer, Array, Struct, Union, Enum, Typedef, Function };
  Kind kind = Kind::Void;
  std::string name;  // "unsigned int", "uint32_t" (typedef), "reduce_lmem" (struct tag), "" if derived
  uint32_t size = 0;
  bool is_signed = false;  // Int, Enum
  bool is_char = false;    // Int of a char type
  bool is_const = false, is_volatile = false;
  const CType* target = nullptr;  // Pointer (null: void *), Array element, Typedef, Function return
  std::optional<uint32_t> count;  // Array: elements (nullopt: unknown bound)
  struct Field {
    std::string name;
    uint32_t offset = 0;
    const CType* type = nullptr;
    uint32_t bit_size = 0, bit_offset = 0;  // bit fields: bits from the field's offset (little-endian)
  };
  std::vector<Field> fields;                                 // Struct, Union
  std::vector<std::pair<std::string, int64_t>> enumerators;  // Enum
};

// The type below typedefs (qualifiers kept on the result's own flags are those of the typedef chain's end).
const CType& strip_typedefs(const CType& t);
// C spelling of a type: "unsigned int", "uint32_t *", "struct reduce_lmem", "float [64]".
std::string type_name(const CType& t);
// ptype: typedefs expanded one level, struct, union and enum bodies written out.
std::string type_definition(const CType& t);

// Bytes [lo, hi) of a value that are optimized out (an empty DWARF piece) or not available (a
// piece in a register the frame does not have).
struct MissingBytes {
  uint32_t lo = 0, hi = 0;
  bool unavailable = false;
  bool operator==(const MissingBytes&) const = default;
};

// Where one lane keeps a variable.
struct VarLocation {
  enum class Kind : uint8_t { Memory, Register, Value, OptimizedOut, Unavailable };
  Kind kind = Kind::OptimizedOut;
  uint32_t address = 0;        // Memory
  unsigned reg = 0;            // Register: DWARF number (x0..x31 = 0..31, f0..f31 = 32..63)
  std::vector<uint8_t> bytes;  // Value: the bytes the compiler computed (DW_OP_stack_value, pieces)
  // Value from pieces: the parts that have no value.
  std::vector<MissingBytes> missing_parts;
  std::string describe() const;  // "memory 0x...", "register $a0", "computed value", "optimized out", ...
};

// One lane's view for evaluating locations.
struct LaneView {
  std::function<std::optional<uint32_t>(unsigned dwarf_reg)> reg;  // x0..x31 = 0..31, f0..f31 = 32..63
  std::function<Result<std::vector<uint8_t>>(uint32_t addr, uint32_t size)> read;
  std::optional<uint32_t> cfa;  // the frame's canonical frame address (DW_OP_call_frame_cfa)
};

struct SourceVariable {
  std::string name;
  const CType* type = nullptr;
  enum class Kind : uint8_t { Local, Parameter, Global } kind = Kind::Local;
  std::string decl_file;
  uint32_t decl_line = 0;
  uint64_t die = 0;        // the DWARF entry (concrete instance)
  uint64_t frame_die = 0;  // the out-of-line subprogram whose frame base applies (0: none)
};

// A function level at a pc: the out-of-line function, or a function inlined into it.
struct ScopeFrame {
  std::string function;
  bool inlined = false;
  uint32_t call_line = 0;  // inlined: the line of the call in the next frame out
  std::string call_file;
  const CType* return_type = nullptr;  // nullptr: the function returns void
};

class Variables {
 public:
  // An image without DWARF loads with no variables (every lookup answers "no symbol").
  static Result<Variables> load(const std::string& path);
  Variables(Variables&&) noexcept;
  Variables& operator=(Variables&&) noexcept;
  ~Variables();

  // The function levels at pc, innermost first (inlined calls, then the out-of-line function).
  std::vector<ScopeFrame> frames(uint32_t pc) const;
  // Locals (innermost block first, in declaration order within a block) and parameters of function
  // level `level` (0 = innermost) at pc.
  std::vector<SourceVariable> locals(uint32_t pc, unsigned level = 0) const;
  std::vector<SourceVariable> parameters(uint32_t pc, unsigned level = 0) const;
  // A name as C sees it from function level `level` at pc: locals, parameters, then globals, then
  // enumerators (a Global of the enum type, located as its value), the unit holding pc first.
  std::optional<SourceVariable> find(uint32_t pc, std::string_view name, unsigned level = 0) const;
  // A type by C name: "uint32_t", "struct reduce_lmem", "unsigned int", "float".
  const CType* find_type(std::string_view name) const;
  // Names of variables and functions (tab completion).
  std::vector<std::string> global_names() const;

  // Where the lane keeps v at pc.
  Result<VarLocation> locate(const SourceVariable& v, uint32_t pc, const LaneView& lane) const;

 private:
  struct Impl;
  explicit Variables(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vx::engine
