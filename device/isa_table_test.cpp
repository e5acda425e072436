#include <catch2/catch.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

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

TEST_CASE("find_row and decode give what a scan of the whole table gives") {
  // find_row looks only at the rows its major opcode allows: every row's own encodings, the same
  // with random bits outside its mask, and random words must find the row a scan finds.
  auto scan = [](uint32_t raw) -> const InsnRow* {
    for (const InsnRow* r : all_rows())
      if (r->matches(raw)) return r;
    return nullptr;
  };
  std::mt19937 rng(37);
  std::vector<uint32_t> words;
  for (const InsnRow* r : all_rows()) {
    words.push_back(r->match);
    for (int i = 0; i < 64; ++i) words.push_back(r->match | (uint32_t(rng()) & ~r->mask));
  }
  for (int i = 0; i < 200000; ++i) words.push_back(uint32_t(rng()));
  size_t found = 0;
  for (uint32_t w : words) {
    const InsnRow* want = scan(w);
    INFO("word 0x" << std::hex << w);
    REQUIRE(find_row(w) == want);
    const Decoded d = decode(w);
    REQUIRE(d.row == want);
    REQUIRE(d.cls == insn_class(want));
    found += want != nullptr;
  }
  CHECK(found > all_rows().size());  // the words exercise rows, not only illegal encodings
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
