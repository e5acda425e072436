// Instructions of upstream Vortex extension units the model does not have (tensor cores, the DXA
// copy engine, graphics, ...). The model decodes none of them: they are illegal instructions. This
// table only names them, so the device exception says which unit a kernel needed instead of a bare
// "illegal instruction". Encodings: docs/device.md, "Extension units the model does not have".
#pragma once

#include <cstdint>
#include <span>

namespace vx {

struct ExtensionRow {
  uint32_t mask;
  uint32_t match;
  const char* unit;         // e.g. "tensor-core (TCU)"
  const char* instruction;  // e.g. "wmma"; "" when only the unit is known
  bool matches(uint32_t raw) const { return (raw & mask) == match; }
};

// Every row, most specific first (a word is classified by the first row it matches).
std::span<const ExtensionRow> extension_rows();

// The row naming the extension unit `raw` belongs to, or nullptr. Never a row for an
// encoding the model implements (device/extension_units_test.cpp checks the ISA table).
const ExtensionRow* classify_extension(uint32_t raw);

}  // namespace vx
