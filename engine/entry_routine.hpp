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
constexpr uint32_t kFlags = 0;           // bit 0: copy the core's local memory; bit 1: restore the warp
constexpr uint32_t kLmemSrc = 4;         // global address of the saved local memory image
constexpr uint32_t kLmemBlocks = 8;      // blocks of kLmemBlockWords words each lane copies
constexpr uint32_t kCsrs = 12;           // fcsr, mstatus, mtvec, mepc, mcause, mtval, mscratch
constexpr uint32_t kLmemTail = 40;       // words each lane copies one by one after its blocks
constexpr uint32_t kLmemLaneBytes = 44;  // bytes of local memory per lane: lane L copies [L x this, (L+1) x this)
constexpr uint32_t kLanes = 64;          // lane L's block at kLanes + L * kLaneBytes
constexpr uint32_t kLaneBytes = 256;     // x0..x31 (x0 unused) then f0..f31
constexpr uint32_t kFlagLmem = 1, kFlagWarp = 2;
constexpr uint32_t kLmemBlockWords = 16;  // the copy loop's body: 16 loads and 16 stores
constexpr uint32_t record_bytes(uint32_t threads) { return kLanes + threads * kLaneBytes; }
}  // namespace routine

// The routine's instruction words (position-independent).
std::vector<uint32_t> entry_routine_code();

// The record for one placement. `warp` is the saved warp (nullptr for a local-memory helper).
std::vector<uint8_t> entry_routine_record(const WarpState* warp, uint32_t threads, bool copy_lmem, uint32_t lmem_src,
                                          uint32_t lmem_bytes);

}  // namespace vx::engine
