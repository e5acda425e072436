// The block translator (jit.hpp). Host code is emitted with Xbyak; register use inside a block:
//   rbx  the ExecCtx          r12  ExecCtx::x (integer registers, one lane: x[reg])
//   r13  ExecCtx::f           r14  the Machine's windows flag     r15  the read translation entries
// Guest registers stay in memory: nothing is cached in a host register across instructions, so an
// executor called in the middle of a block sees every register the instructions before it wrote.
#include "device/jit.hpp"

#include <cstddef>
#include <cstring>
#include <string_view>
#include <vector>

#if defined(__x86_64__) && __has_include(<xbyak/xbyak.h>)
#define VX_JIT 1
#include <xbyak/xbyak.h>
#endif

namespace vx {

#if VX_JIT

namespace {

// ExecCtx holds references, so it is not standard-layout; its layout is still the plain one GCC
// and Clang give a struct without virtuals, which is what the translated code addresses.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
constexpr size_t kCtxX = offsetof(ExecCtx, x);
constexpr size_t kCtxF = offsetof(ExecCtx, f);
constexpr size_t kCtxPc = offsetof(ExecCtx, pc);
constexpr size_t kCtxNextPc = offsetof(ExecCtx, next_pc);
#pragma GCC diagnostic pop
static_assert(offsetof(Memory::Tlb, page) == 0 && offsetof(Memory::Tlb, base) == 8 && sizeof(Memory::Tlb) == 16);
static_assert(Memory::kTlbSize == 64 && Memory::kPageBits == 12);

constexpr size_t kBufferBytes = size_t(4) << 20;
// The most one block's code can take: 31 instructions of at most about 120 bytes each (a load's
// fast path and its out-of-line call), the prologue and the epilogue.
constexpr size_t kBlockBytesMax = 8192;

// What the translator does with one instruction.
enum class Kind : uint8_t {
  Call,  // its executor
  AddI,
  SltI,
  SltuI,
  XorI,
  OrI,
  AndI,
  SllI,
  SrlI,
  SraI,
  Add,
  Sub,
  Sll,
  Slt,
  Sltu,
  Xor,
  Srl,
  Sra,
  Or,
  And,
  Mul,
  Lui,
  Auipc,
  Jal,
  Jalr,
  Beq,
  Bne,
  Blt,
  Bge,
  Bltu,
  Bgeu,
  Lw,
  Flw,
};

Kind kind_of(const Decoded& d) {
  if (!d.row) return Kind::Call;
  static constexpr std::pair<std::string_view, Kind> kNames[] = {
      {"addi", Kind::AddI}, {"slti", Kind::SltI},   {"sltiu", Kind::SltuI}, {"xori", Kind::XorI}, {"ori", Kind::OrI},
      {"andi", Kind::AndI}, {"slli", Kind::SllI},   {"srli", Kind::SrlI},   {"srai", Kind::SraI}, {"add", Kind::Add},
      {"sub", Kind::Sub},   {"sll", Kind::Sll},     {"slt", Kind::Slt},     {"sltu", Kind::Sltu}, {"xor", Kind::Xor},
      {"srl", Kind::Srl},   {"sra", Kind::Sra},     {"or", Kind::Or},       {"and", Kind::And},   {"mul", Kind::Mul},
      {"lui", Kind::Lui},   {"auipc", Kind::Auipc}, {"jal", Kind::Jal},     {"jalr", Kind::Jalr}, {"beq", Kind::Beq},
      {"bne", Kind::Bne},   {"blt", Kind::Blt},     {"bge", Kind::Bge},     {"bltu", Kind::Bltu}, {"bgeu", Kind::Bgeu},
      {"lw", Kind::Lw},     {"flw", Kind::Flw},
  };
  const std::string_view name = d.row->mnemonic;
  for (const auto& [n, k] : kNames)
    if (n == name) return k;
  return Kind::Call;
}

class Emitter : public Xbyak::CodeGenerator {
 public:
  explicit Emitter(const JitEnv& env) : Xbyak::CodeGenerator(kBufferBytes), env_(env) {}

  bool full() const { return getSize() + kBlockBytesMax > kBufferBytes; }

  JitFn block(const Decoded* first, uint32_t len, uint32_t pc) {
    const uint8_t* const entry = getCurr();
    Xbyak::Label exit;
    fails_.clear();
    slow_.clear();
    push(rbx);
    push(r12);
    push(r13);
    push(r14);
    push(r15);
    push(rbp);
    sub(rsp, 8);  // six pushes and this: rsp is 16-byte aligned again for the calls
    mov(rbx, rdi);
    mov(ebp, esi);  // how many of the block's instructions to run
    mov(r12, qword[rbx + kCtxX]);
    mov(r13, qword[rbx + kCtxF]);
    mov(r14, reinterpret_cast<uintptr_t>(env_.windows_active));
    mov(r15, reinterpret_cast<uintptr_t>(env_.read_tlb));
    Xbyak::Label early;
    for (uint32_t i = 0; i < len; ++i) {
      instruction(first[i], i, pc + 4 * i);
      if (i + 1 < len) {  // the quantum or the limit may end the block here
        cmp(ebp, i + 1);
        je(early, T_NEAR);
      }
    }
    L(early);
    xor_(eax, eax);  // Outcome::retire() is eight zero bytes
    mov(edx, ebp);
    L(exit);
    add(rsp, 8);
    pop(rbp);
    pop(r15);
    pop(r14);
    pop(r13);
    pop(r12);
    pop(rbx);
    ret();
    // Out of line: the loads' executor calls, then the stops (rax holds the executor's outcome).
    for (Slow& s : slow_) {
      L(*s.from);
      call_executor(*s.d, s.index, s.pc);
      jmp(*s.back, T_NEAR);
    }
    for (Fail& f : fails_) {
      L(*f.label);
      mov(edx, f.index);
      jmp(exit, T_NEAR);
    }
    fails_.clear();
    slow_.clear();
    return reinterpret_cast<JitFn>(const_cast<uint8_t*>(entry));
  }

 private:
  struct Fail {
    std::unique_ptr<Xbyak::Label> label;
    uint32_t index;
  };
  struct Slow {
    std::unique_ptr<Xbyak::Label> from, back;
    const Decoded* d;
    uint32_t index, pc;
  };

  Xbyak::Address X(unsigned r) { return dword[r12 + 4 * r]; }
  Xbyak::Address F(unsigned r) { return dword[r13 + 4 * r]; }

  // The executor, as the block loop calls it, and a stop when it does not retire.
  void call_executor(const Decoded& d, uint32_t index, uint32_t at) {
    mov(dword[rbx + kCtxPc], at);
    mov(rdi, rbx);
    mov(rsi, reinterpret_cast<uintptr_t>(&d));
    mov(rax, reinterpret_cast<uintptr_t>(d.exec));
    call(rax);
    test(al, al);  // Outcome::step is its first byte; Step::Retire is 0
    fails_.push_back({std::make_unique<Xbyak::Label>(), index});
    jnz(*fails_.back().label, T_NEAR);
  }

  // eax = x[rs1] op x[rs2] (or the immediate), then x[rd] = eax.
  template <class Op>
  void alu(const Decoded& d, Op op) {
    if (d.rd == 0) return;  // x0 stays zero; these instructions do nothing else
    mov(eax, X(d.rs1));
    op();
    mov(X(d.rd), eax);
  }
  void set_if(const Decoded& d, bool imm, bool is_unsigned) {
    if (d.rd == 0) return;
    mov(ecx, X(d.rs1));
    xor_(eax, eax);
    if (imm)
      cmp(ecx, d.imm);
    else
      cmp(ecx, X(d.rs2));
    if (is_unsigned)
      setb(al);
    else
      setl(al);
    mov(X(d.rd), eax);
  }

  void instruction(const Decoded& d, uint32_t index, uint32_t at) {
    const uint32_t shamt = uint32_t(d.imm) & 31;
    switch (kind_of(d)) {
      case Kind::Call: return call_executor(d, index, at);
      case Kind::AddI: return alu(d, [&] { add(eax, d.imm); });
      case Kind::SltI: return set_if(d, true, false);
      case Kind::SltuI: return set_if(d, true, true);
      case Kind::XorI: return alu(d, [&] { xor_(eax, d.imm); });
      case Kind::OrI: return alu(d, [&] { or_(eax, d.imm); });
      case Kind::AndI: return alu(d, [&] { and_(eax, d.imm); });
      case Kind::SllI: return alu(d, [&] { shl(eax, uint8_t(shamt)); });
      case Kind::SrlI: return alu(d, [&] { shr(eax, uint8_t(shamt)); });
      case Kind::SraI: return alu(d, [&] { sar(eax, uint8_t(shamt)); });
      case Kind::Add: return alu(d, [&] { add(eax, X(d.rs2)); });
      case Kind::Sub: return alu(d, [&] { sub(eax, X(d.rs2)); });
      case Kind::Xor: return alu(d, [&] { xor_(eax, X(d.rs2)); });
      case Kind::Or: return alu(d, [&] { or_(eax, X(d.rs2)); });
      case Kind::And: return alu(d, [&] { and_(eax, X(d.rs2)); });
      case Kind::Mul: return alu(d, [&] { imul(eax, X(d.rs2)); });
      // x86 shifts of a 32-bit register use the count's low five bits, as RV32 does.
      case Kind::Sll:
        return alu(d, [&] {
          mov(ecx, X(d.rs2));
          shl(eax, cl);
        });
      case Kind::Srl:
        return alu(d, [&] {
          mov(ecx, X(d.rs2));
          shr(eax, cl);
        });
      case Kind::Sra:
        return alu(d, [&] {
          mov(ecx, X(d.rs2));
          sar(eax, cl);
        });
      case Kind::Slt: return set_if(d, false, false);
      case Kind::Sltu: return set_if(d, false, true);
      case Kind::Lui:
        if (d.rd != 0) mov(X(d.rd), uint32_t(d.imm));
        return;
      case Kind::Auipc:
        if (d.rd != 0) mov(X(d.rd), at + uint32_t(d.imm));
        return;
      case Kind::Jal:
        if (d.rd != 0) mov(X(d.rd), at + 4);
        mov(dword[rbx + kCtxNextPc], at + uint32_t(d.imm));
        return;
      case Kind::Jalr:  // the target is read before the link is written: rd may be rs1
        mov(eax, X(d.rs1));
        add(eax, d.imm);
        and_(eax, ~1u);
        mov(dword[rbx + kCtxNextPc], eax);
        if (d.rd != 0) mov(X(d.rd), at + 4);
        return;
      case Kind::Beq: return branch(d, at, Kind::Beq);
      case Kind::Bne: return branch(d, at, Kind::Bne);
      case Kind::Blt: return branch(d, at, Kind::Blt);
      case Kind::Bge: return branch(d, at, Kind::Bge);
      case Kind::Bltu: return branch(d, at, Kind::Bltu);
      case Kind::Bgeu: return branch(d, at, Kind::Bgeu);
      case Kind::Lw: return load(d, index, at, false);
      case Kind::Flw: return load(d, index, at, true);
    }
  }

  // One lane: it decides. The loop set next_pc to the fall-through before the block ran.
  void branch(const Decoded& d, uint32_t at, Kind k) {
    Xbyak::Label not_taken;
    mov(eax, X(d.rs1));
    cmp(eax, X(d.rs2));
    switch (k) {
      case Kind::Beq: jne(not_taken); break;
      case Kind::Bne: je(not_taken); break;
      case Kind::Blt: jge(not_taken); break;
      case Kind::Bge: jl(not_taken); break;
      case Kind::Bltu: jae(not_taken); break;
      default: jb(not_taken); break;  // Bgeu
    }
    mov(dword[rbx + kCtxNextPc], at + uint32_t(d.imm));
    L(not_taken);
  }

  // A word load through the read translation entries, as Machine::data_direct and
  // Memory::readable() find it; anything else takes the executor, out of line.
  void load(const Decoded& d, uint32_t index, uint32_t at, bool fp) {
    Slow s{std::make_unique<Xbyak::Label>(), std::make_unique<Xbyak::Label>(), &d, index, at};
    Xbyak::Label& slow = *s.from;
    mov(eax, X(d.rs1));
    if (d.imm != 0) add(eax, d.imm);
    test(al, 3);
    jnz(slow, T_NEAR);
    cmp(eax, env_.local_mem_base);
    jae(slow, T_NEAR);
    cmp(byte[r14], 0);
    jne(slow, T_NEAR);
    mov(ecx, eax);
    shr(ecx, Memory::kPageBits);
    mov(edx, ecx);
    and_(edx, Memory::kTlbSize - 1);
    shl(edx, 4);
    cmp(dword[r15 + rdx], ecx);
    jne(slow, T_NEAR);
    mov(rcx, qword[r15 + rdx + 8]);
    and_(eax, Memory::kPageSize - 1);
    mov(eax, dword[rcx + rax]);
    if (fp)
      mov(F(d.rd), eax);
    else if (d.rd != 0)
      mov(X(d.rd), eax);
    L(*s.back);
    slow_.push_back(std::move(s));
  }

  JitEnv env_;
  std::vector<Fail> fails_;
  std::vector<Slow> slow_;
};

}  // namespace

struct BlockJit::Impl {
  explicit Impl(const JitEnv& env) : gen(env) {}
  Emitter gen;
};

std::unique_ptr<BlockJit> BlockJit::create(const JitEnv& env) {
  try {
    return std::unique_ptr<BlockJit>(new BlockJit(std::make_unique<Impl>(env)));
  } catch (const std::exception&) {  // Xbyak::Error (no executable mapping) or bad_alloc
    return nullptr;
  }
}

JitFn BlockJit::compile(const Decoded* first, uint32_t len, uint32_t pc, unsigned nt) {
  if (nt != 1 || len == 0 || impl_->gen.full()) return nullptr;
  try {
    return impl_->gen.block(first, len, pc);
  } catch (const std::exception&) {  // the size bound above keeps Xbyak from running out of room
    return nullptr;
  }
}

bool BlockJit::full() const { return impl_->gen.full(); }
void BlockJit::reset() { impl_->gen.reset(); }
size_t BlockJit::code_bytes() const { return impl_->gen.getSize(); }

#else  // no translator on this host: the executors run every block

struct BlockJit::Impl {};
std::unique_ptr<BlockJit> BlockJit::create(const JitEnv&) { return nullptr; }
JitFn BlockJit::compile(const Decoded*, uint32_t, uint32_t, unsigned) { return nullptr; }
bool BlockJit::full() const { return false; }
void BlockJit::reset() {}
size_t BlockJit::code_bytes() const { return 0; }

#endif

BlockJit::BlockJit(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BlockJit::~BlockJit() = default;

}  // namespace vx
