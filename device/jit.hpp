// Basic blocks of the fast loop translated to x86-64 host code (Machine::run_fast, docs/architecture.md
// "Two loops run a quantum").
//
// A translated block does exactly what the block loop does with the block's decoded instructions:
// the integer ALU instructions, LUI, AUIPC, JAL, JALR, the conditional branches and the word loads LW
// and FLW of a one-lane warp run as host instructions on the warp's registers in memory (ExecCtx::x,
// ::f); every other instruction, and a load that is misaligned, in local memory, through a memory
// window or on a page the read translation cache does not hold, calls its executor with ExecCtx::pc
// set, as the loop does. The executors stay the reference: an instruction the translator does not
// know runs through the same function it runs through in the loop.
//
// The code lives in one buffer per Machine, built with Xbyak (libxbyak-dev). It holds the addresses
// of the Machine's block pool and of its memory's read translation entries, so it is dropped with the
// blocks whenever they are (Machine::build_block, Machine::empty_icache).
#pragma once

#include <cstdint>
#include <memory>

#include "device/isa.hpp"
#include "device/memory.hpp"

namespace vx {

// What a translated block returns (in rax and rdx): the outcome of the instruction it stopped at,
// Retire when it ran the `n` it was asked to (1..len, the first n of the block: the quantum or the
// limit may end it early), and how many instructions before that one retired (n when all did).
// ExecCtx::pc is the stopping instruction's pc; next_pc is set by a taken branch or a jump, as
// their executors set it.
struct JitResult {
  Outcome o;
  uint64_t done;
};
using JitFn = JitResult (*)(ExecCtx&, uint32_t n);

// What the translated code reads besides the context: fixed for a Machine's life.
struct JitEnv {
  const bool* windows_active;   // Machine::windows_active_: loads take their executors while set
  const Memory::Tlb* read_tlb;  // Memory::read_tlb_entries()
  uint32_t local_mem_base;      // memmap::kLocalMemBase: loads at or above it take their executors
};

class BlockJit {
 public:
  // nullptr when this host cannot run translated code (not x86-64, or no executable mapping).
  static std::unique_ptr<BlockJit> create(const JitEnv& env);
  ~BlockJit();
  BlockJit(const BlockJit&) = delete;
  BlockJit& operator=(const BlockJit&) = delete;

  // The host code for the `len` decoded instructions at `first` (pcs pc, pc + 4, ...; they must stay
  // where they are while the code is used), for warps of `nt` lanes; nullptr when the translator
  // does not take blocks of that width or the buffer has no room (full() then says so).
  JitFn compile(const Decoded* first, uint32_t len, uint32_t pc, unsigned nt);
  // The buffer cannot take another block: every JitFn must be dropped and reset() called.
  bool full() const;
  void reset();
  // Bytes of host code in the buffer.
  size_t code_bytes() const;

 private:
  struct Impl;
  explicit BlockJit(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vx
