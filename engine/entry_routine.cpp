#include "engine/entry_routine.hpp"

#include <cassert>
#include <cstring>

#include "device/encode.hpp"

namespace vx::engine {

namespace {

using namespace vx::test;

constexpr uint32_t kCsrFcsr = 0x003, kCsrMstatus = 0x300, kCsrMtvec = 0x305, kCsrMscratch = 0x340, kCsrMepc = 0x341,
                   kCsrMcause = 0x342, kCsrMtval = 0x343;
constexpr uint32_t kCsrThreadId = 0xCC0, kCsrLocalMemBase = 0xFC3;

constexpr uint32_t andi(uint32_t rd, uint32_t rs1, int32_t imm) { return i_type(imm, rs1, 7, rd, 0x13); }
constexpr uint32_t slli(uint32_t rd, uint32_t rs1, uint32_t sh) { return i_type(int32_t(sh), rs1, 1, rd, 0x13); }
constexpr uint32_t flw(uint32_t rd, uint32_t rs1, int32_t imm) { return i_type(imm, rs1, 2, rd, 0x07); }
constexpr uint32_t mul(uint32_t rd, uint32_t rs1, uint32_t rs2) { return r_type(1, rs2, rs1, 0, rd, 0x33); }
constexpr uint32_t kVxrResume = 0x0000007b;  // CUSTOM3, all fields zero (docs/relaunch.md)

}  // namespace

std::vector<uint32_t> entry_routine_code(uint32_t threads) {
  using namespace routine;
  std::vector<uint32_t> c;
  auto at = [&] { return int32_t(c.size() * 4); };
  c.push_back(rv::csrr(t0, kCsrMscratch));  // the record
  c.push_back(rv::lw(t1, t0, kFlags));
  c.push_back(andi(t2, t1, kFlagLmem));
  const size_t skip_lmem = c.size();
  c.push_back(0);  // beq t2, zero, no_lmem
  // Lane L copies the words L, L + NT, L + 2 NT, ... of the image: the same count in every lane, in
  // blocks of kLmemBlockWords words (two instructions a word), then the rest one by one. Interleaved,
  // each warp-wide access is NT consecutive words, as a GPU coalesces them; in the model a full warp's
  // loads then lie in one page and take its one-page path (Machine::words_direct).
  c.push_back(rv::lw(a0, t0, kLmemSrc));
  c.push_back(rv::csrr(a1, kCsrLocalMemBase));
  c.push_back(rv::csrr(a3, kCsrThreadId));
  c.push_back(rv::lw(a4, t0, kLmemLaneBytes));
  c.push_back(mul(a3, a3, a4));
  c.push_back(rv::add(a0, a0, a3));
  c.push_back(rv::add(a1, a1, a3));
  c.push_back(rv::lw(a2, t0, kLmemBlocks));
  c.push_back(rv::lw(a6, t0, kLmemBlockStride));
  c.push_back(rv::lw(a7, t0, kLmemWordStride));
  assert(threads >= 1 && threads <= 32);             // DeviceConfig::validate
  const int32_t word_stride = int32_t(4 * threads);  // at most 128: the block's offsets fit an immediate
  static_assert(int32_t(kLmemBlockWords - 1) * 4 * 32 <= 2047);
  // Each loop tests its count at the bottom (one branch an iteration), after one test on entry.
  const size_t blocks_exit = c.size();
  c.push_back(0);  // beq a2, zero, tail
  const int32_t blocks = at();
  for (int32_t w = 0; w < int32_t(kLmemBlockWords); ++w) {
    c.push_back(rv::lw(a5, a0, w * word_stride));
    c.push_back(rv::sw(a5, a1, w * word_stride));
  }
  c.push_back(rv::add(a0, a0, a6));
  c.push_back(rv::add(a1, a1, a6));
  c.push_back(rv::addi(a2, a2, -1));
  c.push_back(rv::bne(a2, zero, blocks - at()));
  const int32_t tail = at();
  c[blocks_exit] = rv::beq(a2, zero, tail - int32_t(blocks_exit * 4));
  c.push_back(rv::lw(a2, t0, kLmemTail));
  const size_t words_exit = c.size();
  c.push_back(0);  // beq a2, zero, no_lmem
  const int32_t words = at();
  c.push_back(rv::lw(a5, a0, 0));
  c.push_back(rv::sw(a5, a1, 0));
  c.push_back(rv::add(a0, a0, a7));
  c.push_back(rv::add(a1, a1, a7));
  c.push_back(rv::addi(a2, a2, -1));
  c.push_back(rv::bne(a2, zero, words - at()));
  const int32_t no_lmem = at();
  c[skip_lmem] = rv::beq(t2, zero, no_lmem - int32_t(skip_lmem * 4));
  c[words_exit] = rv::beq(a2, zero, no_lmem - int32_t(words_exit * 4));
  c.push_back(andi(t2, t1, kFlagWarp));
  c.push_back(rv::bne(t2, zero, 8));
  c.push_back(vxi::tmc(zero));  // a local-memory helper: done
  // The warp's CSRs (per warp: every lane writes the same value).
  const uint32_t csrs[] = {kCsrFcsr, kCsrMstatus, kCsrMtvec, kCsrMepc, kCsrMcause, kCsrMtval, kCsrMscratch};
  for (uint32_t i = 0; i < 7; ++i) {
    c.push_back(rv::lw(t1, t0, int32_t(kCsrs + 4 * i)));
    c.push_back(rv::csrw(csrs[i], t1));
  }
  // This lane's block.
  c.push_back(rv::csrr(t1, kCsrThreadId));
  c.push_back(slli(t1, t1, 8));  // kLaneBytes == 256
  c.push_back(rv::add(t0, t0, t1));
  c.push_back(rv::addi(t0, t0, int32_t(kLanes)));
  for (uint32_t f = 0; f < 32; ++f) c.push_back(flw(f, t0, int32_t(128 + 4 * f)));
  for (uint32_t x = 1; x < 32; ++x)
    if (x != t0) c.push_back(rv::lw(x, t0, int32_t(4 * x)));
  c.push_back(rv::lw(t0, t0, 4 * t0));  // the base register last
  c.push_back(kVxrResume);
  static_assert(routine::kLaneBytes == 256);
  return c;
}

std::vector<uint8_t> entry_routine_record(const WarpState* warp, uint32_t threads, bool copy_lmem, uint32_t lmem_src,
                                          uint32_t lmem_bytes) {
  using namespace routine;
  std::vector<uint8_t> r(record_bytes(threads), 0);
  auto put = [&](uint32_t off, uint32_t v) { std::memcpy(r.data() + off, &v, 4); };
  put(kFlags, (copy_lmem ? kFlagLmem : 0) | (warp ? kFlagWarp : 0));
  put(kLmemSrc, lmem_src);
  const uint32_t lane_words = copy_lmem ? lmem_bytes / 4 / threads : 0;
  put(kLmemBlocks, lane_words / kLmemBlockWords);
  put(kLmemTail, lane_words % kLmemBlockWords);
  put(kLmemLaneBytes, 4);
  put(kLmemBlockStride, kLmemBlockWords * 4 * threads);
  put(kLmemWordStride, 4 * threads);
  if (!warp) return r;
  const uint32_t csrs[] = {warp->fcsr,   warp->mstatus, warp->mtvec,   warp->mepc,
                           warp->mcause, warp->mtval,   warp->mscratch};
  for (uint32_t i = 0; i < 7; ++i) put(kCsrs + 4 * i, csrs[i]);
  for (uint32_t lane = 0; lane < threads; ++lane) {
    const uint32_t base = kLanes + lane * kLaneBytes;
    for (uint32_t x = 1; x < 32; ++x) put(base + 4 * x, warp->x[x * threads + lane]);
    for (uint32_t f = 0; f < 32; ++f) put(base + 128 + 4 * f, warp->f[f * threads + lane]);
  }
  return r;
}

}  // namespace vx::engine
