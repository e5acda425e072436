// The encodings are facts restated from upstream Vortex's kernel headers (docs/device.md lists them
// with the header each comes from). Field names: opcode = bits 6..0, funct3 = bits 14..12,
// funct7 = bits 31..25, funct2 = bits 26..25 (the R4 format's field, the low two bits of funct7).
#include "device/extension_units.hpp"

namespace vx {

namespace {

constexpr uint32_t kOpcode = 0x0000007f;
constexpr uint32_t kFunct3 = 0x00007000;
constexpr uint32_t kFunct7 = 0xfe000000;
constexpr uint32_t kFunct2 = 0x06000000;

constexpr uint32_t kCustom0 = 0x0b;
constexpr uint32_t kCustom1 = 0x2b;
constexpr uint32_t kCustom2 = 0x5b;

constexpr uint32_t r(uint32_t opcode, uint32_t funct7, uint32_t funct3) {
  return (funct7 << 25) | (funct3 << 12) | opcode;
}

// funct7 | funct3 | opcode, funct7 | opcode, funct3 | opcode, funct2 | funct3 | opcode.
constexpr uint32_t kF7F3 = kFunct7 | kFunct3 | kOpcode;
constexpr uint32_t kF7 = kFunct7 | kOpcode;
constexpr uint32_t kF3 = kFunct3 | kOpcode;
constexpr uint32_t kF2F3 = kFunct2 | kFunct3 | kOpcode;

constexpr const char* kTcu = "tensor-core (TCU)";
constexpr const char* kDxa = "DXA copy-engine";
constexpr const char* kPack = "byte-packing load (PACKLB/PACKLH)";
constexpr const char* kWgather = "warp lane-gather (WGATHER)";
constexpr const char* kTex = "texture-unit (TEX)";
constexpr const char* kOm = "output-merger (OM)";
constexpr const char* kRaster = "rasterizer (RASTER)";
constexpr const char* kGfx = "graphics";
constexpr const char* kWindow = "graphics register-window";
constexpr const char* kRtu = "ray-tracing (RTU)";
constexpr const char* kDtcu = "disaggregated tensor-core (DTCU)";

const ExtensionRow kRows[] = {
    // CUSTOM0, next to the core Vortex instructions (funct7 0 and 1), which the model implements.
    {kF7F3, r(kCustom0, 2, 0), kTcu, "wmma"},
    {kF7F3, r(kCustom0, 2, 1), kTcu, "wgmma"},
    {kF7F3, r(kCustom0, 2, 2), kTcu, "tcu_ld, sparse/MX metadata load"},
    {kF7, r(kCustom0, 2, 0), kTcu, ""},
    {kF7F3, r(kCustom0, 3, 0), kDxa, "vx_dxa_issue; vx_dxa_setup0 in older headers"},
    {kF7F3, r(kCustom0, 3, 1), kDxa, "vx_dxa_setup1, older headers"},
    {kF7F3, r(kCustom0, 3, 2), kDxa, "vx_dxa_coords01, older headers"},
    {kF7F3, r(kCustom0, 3, 3), kDxa, "vx_dxa_coords23, older headers"},
    {kF7F3, r(kCustom0, 3, 4), kDxa, "vx_dxa_issue, older headers"},
    {kF7F3, r(kCustom0, 3, 5), kDxa, "vx_dxa_launch, older headers"},
    {kF7F3, r(kCustom0, 3, 6), kDxa, "vx_dxa_retile"},
    {kF7, r(kCustom0, 3, 0), kDxa, ""},
    {kF7F3, r(kCustom0, 4, 1), kPack, "vx_packlb_f"},
    {kF7F3, r(kCustom0, 4, 2), kPack, "vx_packlh_f"},
    {kF7, r(kCustom0, 4, 0), kPack, ""},
    // CUSTOM1: the warp-gather, graphics and ray-tracing units.
    {kF3, r(kCustom1, 0, 0), kWgather, "vx_wgather"},
    {kF3, r(kCustom1, 0, 1), kTex, "vx_tex"},
    {kF3, r(kCustom1, 0, 2), kOm, "vx_om"},
    {kF3, r(kCustom1, 0, 3), kRaster, "vx_rast"},
    {kF3, r(kCustom1, 0, 4), kGfx, "vx_rast_begin, or a register-window read"},
    {kF2F3, r(kCustom1, 0, 5), kRtu, "vx_rt_set"},
    {kF2F3, r(kCustom1, 1, 5), kRtu, "vx_rt_get"},
    {kF2F3, r(kCustom1, 2, 5), kRtu, "vx_rt_trace"},
    {kF2F3, r(kCustom1, 3, 5), kRtu, "vx_rt_wait"},
    {kF2F3, r(kCustom1, 0, 6), kRtu, "vx_rt_cb_ret"},
    {kF2F3, r(kCustom1, 1, 6), kWindow, "window write (SETW)"},
    {kF2F3, r(kCustom1, 3, 6), kWindow, "window read (GETW)"},
    {kF3, r(kCustom1, 0, 6), kWindow, ""},
    {kF3, r(kCustom1, 0, 7), kGfx, ""},
    // CUSTOM2: the cluster-level tensor engine.
    {kF3, r(kCustom2, 0, 1), kDtcu, "dtensor_start"},
    {kF3, r(kCustom2, 0, 2), kDtcu, "dtensor_poll"},
};

}  // namespace

std::span<const ExtensionRow> extension_rows() { return kRows; }

const ExtensionRow* classify_extension(uint32_t raw) {
  for (const ExtensionRow& row : kRows)
    if (row.matches(raw)) return &row;
  return nullptr;
}

}  // namespace vx
