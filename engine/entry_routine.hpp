// The thread-entry routine of a re-launch (docs/relaunch.md): RISC-V code the
// engine installs in device memory. The device runs it in each placement's warp
// slot, with every lane active and mscratch pointing at the placement's record;
// it restores local memory (when asked), the warp's CSRs and every lane's float
// and integer registers with ordinary instructions, and ends in VXR.RESUME.
#pragma once

#include <cstdint>
#include <vector>

#include "device/state.hpp"

namespace vx::engine {

// The record the routine reads, per placement (little-endian words).
namespace routine {
constexpr uint32_t kFlags = 0;             // bit 0: copy the core's local memory; bit 1: restore the warp
constexpr uint32_t kLmemSrc = 4;           // global address of the saved local memory image
constexpr uint32_t kLmemBlocks = 8;        // blocks of kLmemBlockWords words each lane copies
constexpr uint32_t kCsrs = 12;             // fcsr, mstatus, mtvec, mepc, mcause, mtval, mscratch
constexpr uint32_t kLmemTail = 40;         // words each lane copies one by one after its blocks
constexpr uint32_t kLmemLaneBytes = 44;    // where lane L starts: L x this bytes into the image (4: the next word)
constexpr uint32_t kLmemBlockStride = 48;  // bytes a block advances every lane by: kLmemBlockWords x 4 x NT
constexpr uint32_t kLmemWordStride = 52;   // bytes a tail word advances every lane by: 4 x NT
constexpr uint32_t kLanes = 64;            // lane L's block at kLanes + L * kLaneBytes
constexpr uint32_t kLaneBytes = 256;       // x0..x31 (x0 unused) then f0..f31
constexpr uint32_t kFlagLmem = 1, kFlagWarp = 2;
constexpr uint32_t kLmemBlockWords = 16;  // the copy loop's body: 16 loads and 16 stores
constexpr uint32_t record_bytes(uint32_t threads) { return kLanes + threads * kLaneBytes; }
}  // namespace routine

// The routine's instruction words (position-independent) for warps of `threads` lanes: lane L copies
// the local-memory words L, L + NT, L + 2 NT, ..., so each warp-wide load and store touches NT
// consecutive words.
std::vector<uint32_t> entry_routine_code(uint32_t threads);

// The record for one placement. `warp` is the saved warp (nullptr for a local-memory helper).
std::vector<uint8_t> entry_routine_record(const WarpState* warp, uint32_t threads, bool copy_lmem, uint32_t lmem_src,
                                          uint32_t lmem_bytes);

}  // namespace vx::engine
