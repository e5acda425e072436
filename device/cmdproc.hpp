// The command processor (CMP): decodes, validates and executes command buffers
// in the packet format of the RefSi command-processor reference (seed 004),
// extended with LAUNCH_GRID for Vortex KMU launches. docs/command-buffer.md is
// the reference for every field, decision and error message.
//
// Three stages, so the driver can reject a bad buffer before anything runs:
//   decode_command_buffer   the format alone (packets, opcodes, counts, field encodings)
//   validate_command_list   the meaning against one device (addresses mapped, shapes that fit)
//   CommandProcessor        execution, one command at a time, stopping at each launch
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "device/config.hpp"
#include "device/memory.hpp"

namespace vx {

class Machine;

enum class CmdOp : uint8_t {
  Finish = 1,
  WriteReg64,
  LoadReg64,
  StoreReg64,
  StoreImm64,
  CopyMem64,
  RunKernelSlice,
  RunInstances,
  SyncCache,
  LaunchGrid = 10,  // vxreplay extension: one Vortex KMU launch
};
// "RUN_INSTANCES", or "opcode 12" for a value that is not a command.
std::string cmd_op_name(CmdOp op);

// CMP register indices. 7 does not exist.
enum CmpReg : uint32_t {
  kCmpScratch = 0,
  kCmpEntryPtFn = 1,
  kCmpKubDesc = 2,
  kCmpKargsInfo = 3,
  kCmpTsdInfo = 4,
  kCmpStackTop = 5,
  kCmpReturnAddr = 6,
  kCmpWindowBase0 = 8,
  kCmpWindowTarget0 = 16,
  kCmpWindowMode0 = 24,
  kCmpWindowScale0 = 32,
  kCmpNumRegs = 40,
};
constexpr uint32_t kCmpNumWindows = 8;
// "CMP_KUB_DESC", "CMP_REG_WINDOW_MODE3", or "register 7" for an index that does not exist.
std::string cmp_reg_name(uint32_t reg);
constexpr bool cmp_reg_exists(uint32_t reg) { return reg < kCmpNumRegs && reg != 7; }

// SYNC_CACHE flags.
constexpr uint32_t kCmpSyncDCache = 1;
constexpr uint32_t kCmpSyncICache = 2;

constexpr uint32_t kCmpPacketId = 3;
constexpr uint32_t kCmpMaxExtraArgs = 7;
constexpr uint32_t kCmpLaunchGridPayload = 6;

struct Command {
  CmdOp op = CmdOp::Finish;
  uint32_t offset = 0;        // byte offset of the header chunk in the buffer
  uint32_t inline_value = 0;  // header bits 63..32
  std::vector<uint64_t> payload;
  bool operator==(const Command&) const = default;
};

struct CommandList {
  std::vector<Command> commands;  // the last one is FINISH
  bool operator==(const CommandList&) const = default;
};

// Structural decoding; needs no device. Errors name the chunk, e.g.
// "chunk 3 (byte offset 24): unknown opcode 12".
Result<CommandList> decode_command_buffer(std::span<const uint8_t> bytes);

// Checks a decoded list against a device: static addresses fit 32 bits and are
// mapped for the bytes they touch, LAUNCH_GRID shapes fit the configuration,
// MAX_HARTS and UNIT ids exist. Same error format as decoding.
Result<void> validate_command_list(const CommandList& list, const Memory& mem, const DeviceConfig& cfg);

// Why a value cannot go into a CMP register (reserved bits set, an address
// beyond 32 bits, an unmodelled window feature); empty when it can.
std::string check_cmp_register_value(uint32_t reg, uint64_t value);

class CommandProcessor {
 public:
  // Starts with the registers cleared except the windows, which are read back
  // from the machine so that both agree.
  explicit CommandProcessor(Machine& m);

  enum class Status { LaunchStarted, Finished, Error };

  // Executes commands of `list` from index *next onward until a launch starts
  // (the caller runs the Machine until RunStop::LaunchDone, then calls advance
  // again), FINISH, or an execution-time error (message in *error, naming the
  // chunk). *next moves past every executed command, the launching one and
  // FINISH included; on an error it stays on the failing command, which had no
  // effect.
  Status advance(const CommandList& list, size_t* next, std::string* error);

  // Plain state, checkpointed with the machine. Index 7 is always zero.
  const std::array<uint64_t, kCmpNumRegs>& registers() const { return regs_; }
  // Restores the registers and re-derives the machine's windows from them.
  void set_registers(const std::array<uint64_t, kCmpNumRegs>& regs);

 private:
  // Empty on success, else the message without the chunk prefix.
  std::string execute(const Command& c, bool* launched);
  void write_register(uint32_t reg, uint64_t value);
  std::string copy_mem64(const Command& c);
  // Where element k at addr comes from when hart `hart` reads it: a pointer into
  // its core's local memory (*local) or a physical address (*phys).
  std::string resolve_hart_read(uint32_t hart, uint32_t addr, uint32_t k, const uint8_t** local, uint32_t* phys);
  std::string run_kernel_slice(const Command& c);
  std::string run_instances(const Command& c);
  std::string launch_grid(const Command& c);

  Machine& m_;
  std::array<uint64_t, kCmpNumRegs> regs_{};
};

}  // namespace vx

// For libFuzzer/AFL: decodes arbitrary bytes, validates them against a fresh
// default device and, when valid, executes them there (launches are started
// and aborted, never run). Never crashes; always returns 0.
extern "C" int vx_fuzz_command_buffer(const uint8_t* data, size_t size);
