// Instruction encoders for hand-assembled test programs: RISC-V base formats, a
// few common instructions, the Vortex instructions and the ABI register names.
// Plain constexpr functions with no dependency on the model, so tests outside
// device/ can assemble kernels without seeing its internals.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

namespace vx::test {

// --- Encoders (RISC-V base formats) -------------------------------------------
constexpr uint32_t r_type(uint32_t f7, uint32_t rs2, uint32_t rs1, uint32_t f3, uint32_t rd, uint32_t opc) {
  return (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | opc;
}
constexpr uint32_t r4_type(uint32_t rs3, uint32_t f2, uint32_t rs2, uint32_t rs1, uint32_t rm, uint32_t rd,
                           uint32_t opc) {
  return (rs3 << 27) | (f2 << 25) | (rs2 << 20) | (rs1 << 15) | (rm << 12) | (rd << 7) | opc;
}
constexpr uint32_t i_type(int32_t imm, uint32_t rs1, uint32_t f3, uint32_t rd, uint32_t opc) {
  return (uint32_t(imm & 0xfff) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | opc;
}
constexpr uint32_t s_type(int32_t imm, uint32_t rs2, uint32_t rs1, uint32_t f3, uint32_t opc) {
  uint32_t u = uint32_t(imm);
  return (((u >> 5) & 0x7f) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | ((u & 31) << 7) | opc;
}
constexpr uint32_t b_type(int32_t imm, uint32_t rs2, uint32_t rs1, uint32_t f3, uint32_t opc = 0x63) {
  uint32_t u = uint32_t(imm);
  return (((u >> 12) & 1) << 31) | (((u >> 5) & 0x3f) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) |
         (((u >> 1) & 15) << 8) | (((u >> 11) & 1) << 7) | opc;
}
constexpr uint32_t u_type(uint32_t imm20, uint32_t rd, uint32_t opc) { return (imm20 << 12) | (rd << 7) | opc; }
constexpr uint32_t j_type(int32_t imm, uint32_t rd, uint32_t opc = 0x6f) {
  uint32_t u = uint32_t(imm);
  return (((u >> 20) & 1) << 31) | (((u >> 1) & 0x3ff) << 21) | (((u >> 11) & 1) << 20) | (((u >> 12) & 0xff) << 12) |
         (rd << 7) | opc;
}

// A few common instructions; tests add their own with the encoders above.
namespace rv {
constexpr uint32_t addi(uint32_t rd, uint32_t rs1, int32_t imm) { return i_type(imm, rs1, 0, rd, 0x13); }
constexpr uint32_t li(uint32_t rd, int32_t imm) { return addi(rd, 0, imm); }  // 12-bit immediates only
constexpr uint32_t lui(uint32_t rd, uint32_t imm20) { return u_type(imm20, rd, 0x37); }
constexpr uint32_t add(uint32_t rd, uint32_t rs1, uint32_t rs2) { return r_type(0, rs2, rs1, 0, rd, 0x33); }
constexpr uint32_t lw(uint32_t rd, uint32_t rs1, int32_t imm) { return i_type(imm, rs1, 2, rd, 0x03); }
constexpr uint32_t sw(uint32_t rs2, uint32_t rs1, int32_t imm) { return s_type(imm, rs2, rs1, 2, 0x23); }
constexpr uint32_t csrr(uint32_t rd, uint32_t csr) { return i_type(int32_t(csr), 0, 2, rd, 0x73); }
constexpr uint32_t csrw(uint32_t csr, uint32_t rs1) { return i_type(int32_t(csr), rs1, 1, 0, 0x73); }
constexpr uint32_t beq(uint32_t rs1, uint32_t rs2, int32_t off) { return b_type(off, rs2, rs1, 0); }
constexpr uint32_t bne(uint32_t rs1, uint32_t rs2, int32_t off) { return b_type(off, rs2, rs1, 1); }
constexpr uint32_t jal(uint32_t rd, int32_t off) { return j_type(off, rd); }
constexpr uint32_t jalr(uint32_t rd, uint32_t rs1, int32_t imm) { return i_type(imm, rs1, 0, rd, 0x67); }
constexpr uint32_t ret() { return jalr(0, 1, 0); }
constexpr uint32_t ebreak() { return 0x00100073; }
constexpr uint32_t ecall() { return 0x00000073; }
}  // namespace rv

// Vortex instructions (CUSTOM0).
namespace vxi {
constexpr uint32_t tmc(uint32_t rs1) { return r_type(0, 0, rs1, 0, 0, 0x0b); }
constexpr uint32_t wspawn(uint32_t rs1, uint32_t rs2) { return r_type(0, rs2, rs1, 1, 0, 0x0b); }
constexpr uint32_t split(uint32_t rd, uint32_t rs1) { return r_type(0, 0, rs1, 2, rd, 0x0b); }
constexpr uint32_t split_n(uint32_t rd, uint32_t rs1) { return r_type(0, 1, rs1, 2, rd, 0x0b); }
constexpr uint32_t join(uint32_t rs1) { return r_type(0, 0, rs1, 3, 0, 0x0b); }
constexpr uint32_t bar(uint32_t rs1, uint32_t rs2) { return r_type(0, rs2, rs1, 4, 0, 0x0b); }
constexpr uint32_t pred(uint32_t rs1, uint32_t rs2) { return r_type(0, rs2, rs1, 5, 0, 0x0b); }
constexpr uint32_t pred_n(uint32_t rs1, uint32_t rs2) { return r_type(0, rs2, rs1, 5, 1, 0x0b); }
constexpr uint32_t bar_arrive(uint32_t rd, uint32_t rs1, uint32_t rs2) { return r_type(0, rs2, rs1, 6, rd, 0x0b); }
constexpr uint32_t bar_wait(uint32_t rs1, uint32_t rs2) { return r_type(0, rs2, rs1, 6, 0, 0x0b); }
constexpr uint32_t wsync() { return r_type(0, 0, 0, 7, 0, 0x0b); }
constexpr uint32_t vote(uint32_t kind, uint32_t rd, uint32_t rs1) { return r_type(1, 0, rs1, kind, rd, 0x0b); }
constexpr uint32_t shfl(uint32_t kind, uint32_t rd, uint32_t rs1, uint32_t rs2) {
  return r_type(1, rs2, rs1, 4 + kind, rd, 0x0b);
}
}  // namespace vxi

// ABI register numbers.
enum Reg : uint32_t {
  zero = 0,
  ra,
  sp,
  gp,
  tp,
  t0,
  t1,
  t2,
  s0,
  s1,
  a0,
  a1,
  a2,
  a3,
  a4,
  a5,
  a6,
  a7,
  s2,
  s3,
  s4,
  s5,
  s6,
  s7,
  s8,
  s9,
  s10,
  s11,
  t3,
  t4,
  t5,
  t6
};

// The five-instruction dispatch window of the Vortex 3.0 startup convention
// (read CTA_ENTRY, read mscratch into a0, call the kernel, WSYNC, TMC x0). A
// reused warp slot restarts at its first instruction.
constexpr std::array<uint32_t, 5> dispatch_window() {
  return {rv::csrr(t0, 0xCE1), rv::csrr(a0, 0x340), rv::jalr(ra, t0, 0), vxi::wsync(), vxi::tmc(zero)};
}

// Image words: the dispatch window at offset 0, then `kernel` at `kernel_offset` bytes.
inline std::vector<uint32_t> windowed_image(const std::vector<uint32_t>& kernel, uint32_t kernel_offset = 0x100) {
  auto window = dispatch_window();
  std::vector<uint32_t> words(window.begin(), window.end());
  words.resize(kernel_offset / 4, 0);
  words.insert(words.end(), kernel.begin(), kernel.end());
  return words;
}

// A .vxbin file ([min vma u64 LE][max vma u64 LE][raw image]) holding `words`.
inline std::vector<uint8_t> make_vxbin_image(uint64_t lo, uint64_t hi, const std::vector<uint32_t>& words) {
  std::vector<uint8_t> bin(16 + words.size() * 4);
  std::memcpy(bin.data(), &lo, 8);
  std::memcpy(bin.data() + 8, &hi, 8);
  std::memcpy(bin.data() + 16, words.data(), words.size() * 4);
  return bin;
}

}  // namespace vx::test
