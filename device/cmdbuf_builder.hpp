// Appends well-formed command-buffer packets (docs/command-buffer.md) for the
// host runtime and for tests. Header-only; needs no device.
//
//   CommandBufferBuilder b;
//   b.write_reg64(kCmpEntryPtFn, entry).run_instances(0, 64, {arg}).finish();
//   driver.submit(b.bytes());
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "device/cmdproc.hpp"

namespace vx {

// --- Register values, packed field by field ----------------------------------------

// CMP_KUB_DESC: KUB_SIZE counts 256-byte units.
constexpr uint64_t cmp_kub_desc(uint32_t addr, uint16_t size_256b) { return (uint64_t(size_256b) << 48) | addr; }
// CMP_KARGS_INFO / CMP_TSD_INFO: 24-bit offset into the KUB, 24-bit size.
constexpr uint64_t cmp_kub_range(uint32_t offset, uint32_t size) {
  return (uint64_t(size & 0xffffff) << 40) | (uint64_t(offset & 0xffffff) << 16);
}

enum class WindowMode : uint32_t { Shared = 0, PerHart = 1, PerCore = 2 };
constexpr uint32_t kWindowRead = 1, kWindowWrite = 2, kWindowExecute = 4;

// CMP_REG_WINDOW_MODEn. size is 1..2^32 bytes; 2^32 is encoded as 0.
constexpr uint64_t cmp_window_mode(bool active, WindowMode mode, uint32_t perms, uint64_t size) {
  return (uint64_t(uint32_t(size)) << 32) | ((perms & 7u) << 4) | (uint32_t(mode) << 1) | (active ? 1u : 0u);
}
// CMP_REG_WINDOW_SCALEn: the scale is (scale_a_log2 == 0 ? 0 : 2^scale_a_log2) * scale_b, scale_b in 1..2^32
// (2^32 is encoded as 0).
constexpr uint64_t cmp_window_scale(uint32_t scale_a_log2, uint64_t scale_b) {
  return (uint64_t(uint32_t(scale_b)) << 32) | (scale_a_log2 & 31u);
}

// The fields of a LAUNCH_GRID packet.
struct LaunchGridArgs {
  uint32_t start_pc = 0;  // image base: the startup code
  uint32_t entry_pc = 0;  // CTA_ENTRY: the kernel
  uint32_t arg_ptr = 0;   // mscratch of every warp
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t lmem_bytes = 0;  // local memory per CTA
  std::array<uint32_t, 3> cluster{1, 1, 1};
};

class CommandBufferBuilder {
 public:
  // Any packet: header (reserved 0, opcode, COUNT = 2 x payload, packet id 3, inline) then the payload.
  CommandBufferBuilder& packet(CmdOp op, uint32_t inline_value, std::span<const uint64_t> payload) {
    const uint64_t count = (uint64_t(payload.size()) * 2) & 0x3fff;
    chunk((uint64_t(inline_value) << 32) | (uint64_t(kCmpPacketId) << 30) | (count << 16) | (uint64_t(op) << 8));
    for (uint64_t p : payload) chunk(p);
    return *this;
  }
  CommandBufferBuilder& packet(CmdOp op, uint32_t inline_value, std::initializer_list<uint64_t> payload) {
    return packet(op, inline_value, std::span<const uint64_t>(payload.begin(), payload.size()));
  }
  // One raw 64-bit chunk, little-endian; tests use it to build malformed buffers.
  CommandBufferBuilder& chunk(uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes_.push_back(uint8_t(v >> (8 * i)));
    return *this;
  }

  CommandBufferBuilder& finish() { return packet(CmdOp::Finish, 0, {}); }
  CommandBufferBuilder& write_reg64(uint32_t reg, uint64_t value) { return packet(CmdOp::WriteReg64, reg, {value}); }
  CommandBufferBuilder& load_reg64(uint32_t reg, uint64_t src) { return packet(CmdOp::LoadReg64, reg, {src}); }
  CommandBufferBuilder& store_reg64(uint32_t reg, uint64_t dst) { return packet(CmdOp::StoreReg64, reg, {dst}); }
  CommandBufferBuilder& store_imm64(uint32_t dst, uint64_t value) { return packet(CmdOp::StoreImm64, dst, {value}); }
  // unit 0: the CMP's physical view; unit n + 1: the source as hart n sees it.
  CommandBufferBuilder& copy_mem64(uint32_t count, uint64_t src, uint64_t dst, uint64_t unit = 0) {
    return packet(CmdOp::CopyMem64, count, {src, dst, unit});
  }
  // max_harts 0: every hart.
  CommandBufferBuilder& run_kernel_slice(uint8_t max_harts, uint64_t num_instances, uint64_t slice_id) {
    return packet(CmdOp::RunKernelSlice, max_harts, {num_instances, slice_id});
  }
  // More than 7 args cannot be encoded: the packet then carries them all and
  // NUM_ARGS 7, which the decoder rejects ("more than 7 arguments").
  CommandBufferBuilder& run_instances(uint8_t max_harts, uint64_t num_instances, std::span<const uint64_t> args) {
    std::vector<uint64_t> payload{num_instances};
    payload.insert(payload.end(), args.begin(), args.end());
    uint32_t num_args = args.size() > kCmpMaxExtraArgs ? kCmpMaxExtraArgs : uint32_t(args.size());
    return packet(CmdOp::RunInstances, (num_args << 8) | max_harts, payload);
  }
  CommandBufferBuilder& run_instances(uint8_t max_harts, uint64_t num_instances, std::initializer_list<uint64_t> args) {
    return run_instances(max_harts, num_instances, std::span<const uint64_t>(args.begin(), args.size()));
  }
  CommandBufferBuilder& sync_cache(uint32_t flags = kCmpSyncDCache | kCmpSyncICache) {
    return packet(CmdOp::SyncCache, flags, {});
  }
  CommandBufferBuilder& launch_grid(const LaunchGridArgs& a) {
    auto pair = [](uint32_t lo, uint32_t hi) { return (uint64_t(hi) << 32) | lo; };
    return packet(CmdOp::LaunchGrid, a.entry_pc,
                  {pair(a.start_pc, a.arg_ptr), pair(a.grid[0], a.grid[1]), pair(a.grid[2], a.block[0]),
                   pair(a.block[1], a.block[2]), pair(a.lmem_bytes, a.cluster[0]), pair(a.cluster[1], a.cluster[2])});
  }

  // Byte offset the next packet will start at.
  uint32_t offset() const { return uint32_t(bytes_.size()); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace vx
