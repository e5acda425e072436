#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "device/isa.hpp"

using namespace vx;

TEST_CASE("no two rows of the instruction table match the same encoding") {
  const auto& rows = all_rows();
  std::vector<std::string> overlaps;
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = i + 1; j < rows.size(); ++j)
      if (rows_overlap(*rows[i], *rows[j]))
        overlaps.push_back(std::string(rows[i]->mnemonic) + " / " + rows[j]->mnemonic);
  INFO("overlapping rows: " << overlaps.size());
  for (auto& o : overlaps) UNSCOPED_INFO(o);
  CHECK(overlaps.empty());
}

TEST_CASE("the overlap check sees overlaps, and exclusions that remove them") {
  InsnRow a{"a", 0x7f, 0x0b, ImmKind::None, "", nullptr, Ext::Vortex};
  InsnRow b{"b", 0xfe00707f, 0x0b, ImmKind::None, "", nullptr, Ext::Vortex};
  CHECK(rows_overlap(a, b));
  InsnRow wait{"w", 0xfe007fff, 0x600b, ImmKind::None, "", nullptr, Ext::Vortex};
  InsnRow arrive{"r", 0xfe00707f, 0x600b, ImmKind::None, "", nullptr, Ext::Vortex, 0xf80, 0};
  CHECK_FALSE(rows_overlap(wait, arrive));
  InsnRow arrive_bad{"r", 0xfe00707f, 0x600b, ImmKind::None, "", nullptr, Ext::Vortex, 0xf80, 0x80};
  CHECK(rows_overlap(wait, arrive_bad));
}

TEST_CASE("every row's mnemonic is unique and its match lies inside its mask") {
  std::set<std::string> names;
  for (const InsnRow* r : all_rows()) {
    INFO(r->mnemonic);
    CHECK(names.insert(r->mnemonic).second);
    CHECK((r->match & ~r->mask) == 0);
    CHECK(r->exec != nullptr);
  }
}

TEST_CASE("unknown encodings decode as illegal and disassemble as unknown") {
  CHECK(find_row(0xffffffff) == nullptr);
  CHECK(disassemble(0xffffffff, 0) == "unknown 0xffffffff");
  CHECK(find_row(0x00000000) == nullptr);  // the all-zero word is illegal in RISC-V
}

TEST_CASE("the disassembler prints Vortex instructions from the table") {
  CHECK(disassemble(0x0005000b, 0) == "vx_tmc a0");        // tmc a0
  CHECK(disassemble(0x0005a58b, 0) == "vx_split a1, a1");  // split a1, a1
  CHECK(disassemble(0x0015a58b, 0) == "vx_split.n a1, a1");
}
