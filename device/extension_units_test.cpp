// Upstream Vortex extension units the model does not have: their instructions stay illegal, and
// the device exception names the unit (device/extension_units.hpp, docs/device.md).
#include <catch2/catch.hpp>
#include <string>
#include <string_view>

#include "device/extension_units.hpp"
#include "device/isa.hpp"
#include "device/test_support.hpp"

using namespace vx;
using namespace vx::test;

namespace {

constexpr uint32_t kCustom0 = 0x0b, kCustom1 = 0x2b, kCustom2 = 0x5b;

struct Sample {
  uint32_t word;
  std::string_view unit;         // a substring of the row's unit
  std::string_view instruction;  // a substring of the row's instruction ("" for none expected)
};

// Representative encodings, assembled the way upstream's kernel headers emit them
// (.insn r opcode, funct3, funct7, rd, rs1, rs2 / .insn r4 opcode, funct3, funct2, rd, rs1, rs2, rs3).
const Sample kSamples[] = {
    // Tensor core: rd = output format id, rs1 = input format id, rs2 = flags; fp registers implied.
    {r_type(2, 0, 1, 0, 2, kCustom0), "TCU", "wmma"},
    {r_type(2, 1, 1, 0, 2, kCustom0), "TCU", "wmma"},
    {r_type(2, 6, 3, 1, 2, kCustom0), "TCU", "wgmma"},
    {r_type(2, 3, a0, 2, 0, kCustom0), "TCU", "tcu_ld"},
    {r_type(2, 3, a0, 2, 16, kCustom0), "TCU", "tcu_ld"},
    {r_type(2, 0, 0, 7, 0, kCustom0), "TCU", ""},
    // DXA: issue with rs2 = x0 (1D/2D) and with coordinates in rs2, retile, older setup/launch forms.
    {r_type(3, 0, a0, 0, 0, kCustom0), "DXA", "vx_dxa_issue"},
    {r_type(3, a1, a0, 0, 0, kCustom0), "DXA", "vx_dxa_issue"},
    {r_type(3, 0, a0, 6, 0, kCustom0), "DXA", "vx_dxa_retile"},
    {r_type(3, a1, a0, 1, 0, kCustom0), "DXA", "setup1"},
    {r_type(3, a1, a0, 5, 0, kCustom0), "DXA", "launch"},
    {r_type(3, 0, 0, 7, 0, kCustom0), "DXA", ""},
    // Byte-packing loads into an fp register.
    {r_type(4, a1, a0, 1, 10, kCustom0), "PACKLB", "vx_packlb_f"},
    {r_type(4, a1, a0, 2, 10, kCustom0), "PACKLH", "vx_packlh_f"},
    // CUSTOM1: WGATHER (R4, funct2 = source lane), TEX (funct2 = stage), OM, RASTER.
    {r4_type(a3, 0, a2, a1, 0, a0, kCustom1), "WGATHER", "vx_wgather"},
    {r4_type(a3, 3, a2, a1, 0, a0, kCustom1), "WGATHER", "vx_wgather"},
    {r4_type(a3, 1, a2, a1, 1, a0, kCustom1), "TEX", "vx_tex"},
    {r4_type(a2, 0, a1, a0, 2, 0, kCustom1), "OM", "vx_om"},
    {r_type(0, 0, 0, 3, a0, kCustom1), "RASTER", "vx_rast"},
    {r_type(0, 0, 0, 4, 0, kCustom1), "graphics", "vx_rast_begin"},
    // Ray tracing (funct3 5, sub-op in funct7[1:0], slot in funct7[6:2]) and the register window.
    {r_type((3 << 2) | 0, 0, a0, 5, 0, kCustom1), "RTU", "vx_rt_set"},
    {r_type((3 << 2) | 1, 0, 0, 5, a0, kCustom1), "RTU", "vx_rt_get"},
    {r_type(2, 0, a1, 5, a0, kCustom1), "RTU", "vx_rt_trace"},
    {r_type(3, 0, a1, 5, a0, kCustom1), "RTU", "vx_rt_wait"},
    {r_type(0, 0, a0, 6, 0, kCustom1), "RTU", "vx_rt_cb_ret"},
    {r_type((19 << 2) | 1, 0, a0, 6, 0, kCustom1), "register-window", "SETW"},
    {r_type((19 << 2) | 3, 1, 0, 6, a0, kCustom1), "register-window", "GETW"},
    {r_type(2, 0, 0, 6, a0, kCustom1), "register-window", ""},
    {r_type(0, 0, 0, 7, 0, kCustom1), "graphics", ""},
    // CUSTOM2: the disaggregated tensor core.
    {r_type(0, 0, a0, 1, a1, kCustom2), "DTCU", "dtensor_start"},
    {r_type(0, 0, 0, 2, a0, kCustom2), "DTCU", "dtensor_poll"},
};

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// A row of the model's ISA table shape, to reuse its exact overlap check.
InsnRow as_insn_row(const ExtensionRow& r) {
  return InsnRow{"ext", r.mask, r.match, ImmKind::None, "", nullptr, Ext::Vortex};
}

}  // namespace

TEST_CASE("each extension unit's representative encodings classify to the unit") {
  for (const Sample& s : kSamples) {
    INFO("word 0x" << std::hex << s.word);
    const ExtensionRow* row = classify_extension(s.word);
    REQUIRE(row != nullptr);
    CHECK(contains(row->unit, s.unit));
    if (s.instruction.empty())
      CHECK(std::string_view(row->instruction).empty());
    else
      CHECK(contains(row->instruction, s.instruction));
    // The model decodes none of them: they are illegal instructions.
    CHECK(find_row(s.word) == nullptr);
  }
}

TEST_CASE("every extension row is well formed and reachable") {
  const auto rows = extension_rows();
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO("row " << i << ": " << rows[i].unit << " / " << rows[i].instruction);
    CHECK((rows[i].match & ~rows[i].mask) == 0);
    CHECK(*rows[i].unit != '\0');
    // Some word classifies to the row: earlier rows do not hide it entirely. The rows only look at
    // opcode, funct3 and funct7, so trying every funct3 and funct7 value is exhaustive.
    bool reached = false;
    for (uint32_t f3 = 0; f3 < 8 && !reached; ++f3)
      for (uint32_t f7 = 0; f7 < 128 && !reached; ++f7) {
        const uint32_t fields = (f7 << 25) | (f3 << 12);
        const uint32_t word = rows[i].match | (fields & ~rows[i].mask);
        reached = classify_extension(word) == &rows[i];
      }
    CHECK(reached);
    CHECK((rows[i].mask & ~0xfe00707fu) == 0);
  }
}

TEST_CASE("no instruction the model implements is classified as an extension") {
  // Exact check over the whole ISA table: no encoding matches both a model row and an extension row.
  for (const InsnRow* insn : all_rows())
    for (const ExtensionRow& ext : extension_rows()) {
      INFO(insn->mnemonic << " / " << ext.unit << " " << ext.instruction);
      CHECK_FALSE(rows_overlap(*insn, as_insn_row(ext)));
    }
  // And representative core words, the Vortex ones in particular.
  const uint32_t core[] = {
      vxi::tmc(a0),
      vxi::wspawn(a0, a1),
      vxi::split(a0, a1),
      vxi::split_n(a0, a1),
      vxi::join(a0),
      vxi::bar(a0, a1),
      vxi::pred(a0, a1),
      vxi::pred_n(a0, a1),
      vxi::bar_arrive(a2, a0, a1),
      vxi::bar_wait(a0, a1),
      vxi::wsync(),
      vxi::vote(0, a0, a1),
      vxi::vote(3, a0, a1),
      vxi::shfl(0, a0, a1, a2),
      vxi::shfl(3, a0, a1, a2),
      0x0000007bu,  // VXR.RESUME (CUSTOM3)
      rv::addi(a0, a0, 1),
      rv::lw(a0, sp, 4),
      rv::sw(a0, sp, 4),
      rv::csrr(a0, 0xCC0),
      rv::ecall(),
      rv::ebreak(),
      rv::jal(ra, 8),
      0x0000000fu,  // fence
  };
  for (uint32_t w : core) {
    INFO("word 0x" << std::hex << w);
    CHECK(find_row(w) != nullptr);
    CHECK(classify_extension(w) == nullptr);
  }
  // Unknown words outside the extension opcodes are plain illegal instructions.
  CHECK(classify_extension(0xffffffff) == nullptr);
  CHECK(classify_extension(0x00000000) == nullptr);
  CHECK(classify_extension(r_type(5, 0, 0, 0, 0, kCustom0)) == nullptr);  // CUSTOM0 funct7 5: nothing upstream
}

TEST_CASE("the exception message appends the unit and keeps its prefix") {
  DeviceException e{Cause::IllegalInstruction, 0x80000120, 0, 1, 3, r_type(2, 0, 0, 0, 0, kCustom0)};
  CHECK(e.to_string() ==
        "illegal instruction at pc 0x80000120 (core 0, warp 1, lane 3, instruction 0x0400000b): a Vortex "
        "tensor-core (TCU) instruction (wmma); the model has no such unit");
  e.addr = r_type(2, 0, 0, 7, 0, kCustom0);
  CHECK(e.to_string() ==
        "illegal instruction at pc 0x80000120 (core 0, warp 1, lane 3, instruction 0x0400700b): a Vortex "
        "tensor-core (TCU) instruction; the model has no such unit");
  // Plain illegal words, and other causes whose address happens to look like one, are unchanged.
  e.addr = 0xffffffff;
  CHECK(e.to_string() == "illegal instruction at pc 0x80000120 (core 0, warp 1, lane 3, instruction 0xffffffff)");
  DeviceException load{Cause::LoadFault, 0x80000120, 0, 1, 3, r_type(2, 0, 0, 0, 0, kCustom0)};
  CHECK(load.to_string() == "load from unmapped memory at pc 0x80000120 (core 0, warp 1, lane 3, address 0x0400000b)");
}

TEST_CASE("a kernel that executes an extension instruction stops with an exception naming the unit") {
  struct Case {
    uint32_t word;
    const char* expect;
  };
  const Case cases[] = {
      {r_type(2, 0, 1, 0, 2, kCustom0), "a Vortex tensor-core (TCU) instruction (wmma); the model has no such unit"},
      {r_type(3, 0, a0, 0, 0, kCustom0), "a Vortex DXA copy-engine instruction (vx_dxa_issue"},
      {r4_type(a3, 1, a2, a1, 1, a0, kCustom1), "a Vortex texture-unit (TEX) instruction (vx_tex)"},
      {r4_type(a3, 0, a2, a1, 0, a0, kCustom1), "a Vortex warp lane-gather (WGATHER) instruction (vx_wgather)"},
      {r_type(4, a1, a0, 1, 10, kCustom0), "(vx_packlb_f); the model has no such unit"},
  };
  for (const Case& c : cases) {
    INFO("word 0x" << std::hex << c.word);
    Bench b;
    b.load({rv::li(a0, 7), c.word, rv::li(a0, 9)});
    DeviceException e = b.run_warp(0xF);
    CHECK(e.cause == Cause::IllegalInstruction);
    CHECK(e.pc == Bench::kCode + 4);
    CHECK(e.addr == c.word);
    CHECK(b.x(a0, 3) == 7);  // precise: the instruction after it never ran
    const std::string msg = e.to_string();
    CHECK(msg.starts_with("illegal instruction at pc 0x80000004 (core 0, warp 0, lane 3, instruction 0x"));
    CHECK(contains(msg, c.expect));
  }
}
