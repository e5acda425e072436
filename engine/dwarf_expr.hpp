// One DWARF expression evaluator (libdw's Dwarf_Op arrays) for both of its users: the expressions
// libdw derives from CFI rules (symbols.cpp: the CFA and saved registers) and variable locations
// (variables.cpp). Addresses are 4 bytes (riscv32); the stack holds 64-bit entries.
//
// The operations run in order whatever the values they compute (no DW_OP_bra or DW_OP_skip): only
// a failed register or memory read, or a missing CFA or frame base, ends an evaluation early.
// debug/inspect.cpp relies on this when it probes a location with fake registers.
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace vx::engine::dwarf {

constexpr unsigned kAddressSize = 4;  // bytes: DW_OP_deref's size

enum class Kind : uint8_t {
  Memory,        // at `address`
  Register,      // in register `reg` (DW_OP_regN, DW_OP_regx): not read
  Value,         // `value`, computed (DW_OP_stack_value)
  Implicit,      // `bytes` (DW_OP_implicit_value)
  Pieces,        // `pieces` (DW_OP_piece)
  OptimizedOut,  // DW_OP_entry_value, an empty piece, or a frame base that is a value
  Unavailable,   // the frame base is not available at this pc
};

// One DW_OP_piece: where its part was and its bytes, read when the piece was reached.
struct Piece {
  // Memory, Register, Value, Implicit; OptimizedOut (an empty piece); Unavailable (a register the
  // frame does not have).
  Kind kind = Kind::Memory;
  uint32_t size = 0;     // bytes
  uint32_t address = 0;  // Memory
  unsigned reg = 0;      // Register
  std::vector<uint8_t> bytes;
};

struct Location {
  Kind kind = Kind::OptimizedOut;
  uint32_t address = 0;
  unsigned reg = 0;  // DWARF number (x0..x31 = 0..31, f0..f31 = 32..63)
  uint64_t value = 0;
  std::vector<uint8_t> bytes;
  std::vector<Piece> pieces;
};

// What an expression reads. A missing reader fails the operations that need it.
struct Env {
  std::function<std::optional<uint32_t>(unsigned dwarf_reg)> reg;
  std::function<Result<std::vector<uint8_t>>(uint32_t addr, uint32_t size)> read;
  std::optional<uint32_t> cfa;  // DW_OP_call_frame_cfa
  // DW_OP_fbreg: the function's DW_AT_frame_base, evaluated (a Register is then read).
  std::function<Result<Location>()> frame_base;
  // DW_OP_implicit_value: its block (libdw keeps it with the attribute).
  std::function<Result<std::vector<uint8_t>>(const Dwarf_Op& op)> implicit_value;
};

// The location ops[0..n) describe, or an error naming the operation that failed and why.
Result<Location> evaluate(const Dwarf_Op* ops, size_t n, const Env& env);

// "DW_OP_breg8", "DW_OP_plus", "DW_OP_0xe0" for an operation without a name here.
std::string op_name(unsigned atom);
// "$a0", "$fs0", "DWARF register 70".
std::string reg_name(unsigned dwarf_reg);

}  // namespace vx::engine::dwarf
