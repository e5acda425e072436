#include "device/cmdproc.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "device/machine.hpp"

namespace vx {

namespace {

constexpr uint64_t k4GiB = 1ull << 32;

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

std::string where(uint64_t offset) {
  return "chunk " + std::to_string(offset / 8) + " (byte offset " + std::to_string(offset) + "): ";
}

uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

bool known_op(CmdOp op) { return uint8_t(op) >= uint8_t(CmdOp::Finish) && uint8_t(op) <= uint8_t(CmdOp::LaunchGrid); }

// Payload chunks every opcode but RUN_INSTANCES requires.
size_t fixed_payload(CmdOp op) {
  switch (op) {
    case CmdOp::WriteReg64:
    case CmdOp::LoadReg64:
    case CmdOp::StoreReg64:
    case CmdOp::StoreImm64: return 1;
    case CmdOp::CopyMem64: return 3;
    case CmdOp::RunKernelSlice: return 2;
    case CmdOp::LaunchGrid: return kCmpLaunchGridPayload;
    default: return 0;
  }
}

std::string chunks(uint64_t n) { return std::to_string(n) + (n == 1 ? " chunk" : " chunks"); }

// Opcode-specific checks that need only the header: inline-chunk fields and
// the payload size. The header's generic fields were checked by the caller.
std::string check_inline_and_count(CmdOp op, uint32_t inl, size_t payload) {
  const std::string name = cmd_op_name(op);
  if (!known_op(op)) return "unknown opcode " + std::to_string(unsigned(op));
  switch (op) {
    case CmdOp::WriteReg64:
    case CmdOp::LoadReg64:
    case CmdOp::StoreReg64:
      if (!cmp_reg_exists(inl))
        return name + " names register " + std::to_string(inl) + ", which does not exist (valid: 0..6 and 8..39)";
      break;
    case CmdOp::RunKernelSlice:
      if (inl >> 8) return name + " inline bits 31..8 are reserved (inline " + hex(inl) + "; MAX_HARTS is bits 7..0)";
      break;
    case CmdOp::RunInstances: {
      if (inl >> 11)
        return name + " inline bits 31..11 are reserved (inline " + hex(inl) +
               "; MAX_HARTS is bits 7..0, NUM_ARGS bits 10..8)";
      if (payload == 0) return name + " needs a NUM_INSTANCES payload chunk but COUNT is 0";
      size_t extra = payload - 1;
      if (extra > kCmpMaxExtraArgs)
        return name + " passes more than 7 arguments: COUNT " + std::to_string(payload * 2) + " gives " +
               std::to_string(extra) + " extra arguments";
      uint32_t num_args = (inl >> 8) & 7;
      if (extra != num_args)
        return name + " COUNT " + std::to_string(payload * 2) + " gives " + std::to_string(extra) +
               " extra arguments but NUM_ARGS is " + std::to_string(num_args) + " (expected COUNT " +
               std::to_string(2 * (num_args + 1)) + ")";
      return {};
    }
    case CmdOp::SyncCache:
      if (inl & ~(kCmpSyncDCache | kCmpSyncICache))
        return name + " FLAGS " + hex(inl) + " has unknown bits (bit 0: DCACHE, bit 1: ICACHE)";
      break;
    default: break;
  }
  size_t want = fixed_payload(op);
  if (payload != want)
    return name + " takes " + chunks(want) + " of payload (COUNT " + std::to_string(want * 2) + ") but COUNT is " +
           std::to_string(payload * 2);
  return {};
}

// Checks of payload values that need no device.
std::string check_payload(const Command& c) {
  const std::string name = cmd_op_name(c.op);
  switch (c.op) {
    case CmdOp::WriteReg64: {
      std::string why = check_cmp_register_value(c.inline_value, c.payload[0]);
      if (!why.empty()) return name + " " + why;
      break;
    }
    case CmdOp::RunKernelSlice:
    case CmdOp::RunInstances: {
      // Instance ids 0..NUM_INSTANCES-1 travel in a 32-bit register (XLEN=32).
      if (c.payload[0] > k4GiB)
        return name + " NUM_INSTANCES " + std::to_string(c.payload[0]) +
               " is more than 2^32: instance ids must fit 32 bits";
      // "Zero-extension must be used when storing an unsigned field in a chunk that is larger than the field":
      // SLICE_ID and the extra arguments are 32-bit register values on this device.
      for (size_t i = 1; i < c.payload.size(); ++i)
        if (c.payload[i] >> 32)
          return name + (c.op == CmdOp::RunKernelSlice ? " SLICE_ID " : " EXTRA_ARG_" + std::to_string(i - 1) + " ") +
                 hex(c.payload[i]) + " does not fit 32 bits (arguments are 32-bit registers)";
      break;
    }
    default: break;
  }
  return {};
}

std::string check_address(const char* field, uint64_t addr) {
  if (addr >> 32) return std::string(field) + " " + hex(addr) + " does not fit the 32-bit device address space";
  return {};
}

std::string check_mapped(const std::string& what, uint64_t addr, uint64_t bytes, const Memory& mem) {
  if (addr + bytes > k4GiB)
    return what + " " + std::to_string(bytes) + " bytes at " + hex(addr) + ", which run past the 32-bit address space";
  if (bytes > 0 && !mem.is_mapped(uint32_t(addr), bytes))
    return what + " " + std::to_string(bytes) + " bytes at " + hex(addr) + ", which are not all mapped";
  return {};
}

std::string check_max_harts(const std::string& name, uint32_t max_harts, const DeviceConfig& cfg) {
  if (max_harts > cfg.total_harts())
    return name + " MAX_HARTS " + std::to_string(max_harts) + " exceeds the " + std::to_string(cfg.total_harts()) +
           " harts of the device (0 means every hart)";
  return {};
}

std::array<uint32_t, 3> dims(uint64_t lo_hi, uint64_t next_lo) {
  return {uint32_t(lo_hi), uint32_t(lo_hi >> 32), uint32_t(next_lo)};
}

LaunchState grid_launch(const Command& c) {
  const auto& p = c.payload;
  LaunchState l;
  l.kind = LaunchKind::Grid;
  l.entry_pc = c.inline_value;
  l.start_pc = uint32_t(p[0]);
  l.arg_ptr = uint32_t(p[0] >> 32);
  l.grid = dims(p[1], p[2]);
  l.block = {uint32_t(p[2] >> 32), uint32_t(p[3]), uint32_t(p[3] >> 32)};
  l.lmem_bytes = uint32_t(p[4]);
  l.cluster = {uint32_t(p[4] >> 32), uint32_t(p[5]), uint32_t(p[5] >> 32)};
  return l;
}

std::string check_grid_shape(const LaunchState& l, const DeviceConfig& cfg) {
  static const char* kAxis[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    if (l.grid[i] == 0 || l.block[i] == 0 || l.cluster[i] == 0)
      return std::string("LAUNCH_GRID ") +
             (l.grid[i] == 0    ? "grid "
              : l.block[i] == 0 ? "block "
                                : "cluster ") +
             kAxis[i] + " is 0: every grid, block and cluster dimension must be at least 1";
    if (l.grid[i] % l.cluster[i] != 0)
      return std::string("LAUNCH_GRID grid ") + kAxis[i] + " (" + std::to_string(l.grid[i]) +
             ") is not a multiple of cluster " + kAxis[i] + " (" + std::to_string(l.cluster[i]) + ")";
  }
  uint64_t ctas = uint64_t(l.grid[0]) * l.grid[1];
  if (ctas * l.grid[2] > k4GiB || ctas * l.grid[2] / l.grid[2] != ctas)
    return "LAUNCH_GRID grid " + std::to_string(l.grid[0]) + "x" + std::to_string(l.grid[1]) + "x" +
           std::to_string(l.grid[2]) + " has more than 2^32 CTAs";
  uint64_t threads = uint64_t(l.block[0]) * l.block[1];
  uint64_t per_core = uint64_t(cfg.warps) * cfg.threads;
  if (threads > per_core || threads * l.block[2] > per_core)
    return "LAUNCH_GRID block " + std::to_string(l.block[0]) + "x" + std::to_string(l.block[1]) + "x" +
           std::to_string(l.block[2]) + " has more threads than a core's " + std::to_string(per_core) + " (" +
           std::to_string(cfg.warps) + " warps x " + std::to_string(cfg.threads) + " threads)";
  if (l.lmem_bytes > cfg.local_mem_bytes)
    return "LAUNCH_GRID asks for " + std::to_string(l.lmem_bytes) + " bytes of local memory per CTA but a core has " +
           std::to_string(cfg.local_mem_bytes);
  return {};
}

// What validation checks for one command against a device; also re-checked
// right before the command executes, since memory may change after submission.
std::string check_against_device(const Command& c, const Memory& mem, const DeviceConfig& cfg) {
  const std::string name = cmd_op_name(c.op);
  std::string e;
  switch (c.op) {
    case CmdOp::LoadReg64:
      if (!(e = check_address("LOAD_REG64 SRC_ADDR", c.payload[0])).empty()) return e;
      return check_mapped("LOAD_REG64 reads", c.payload[0], 8, mem);
    case CmdOp::StoreReg64:
      if (!(e = check_address("STORE_REG64 DST_ADDR", c.payload[0])).empty()) return e;
      return check_mapped("STORE_REG64 writes", c.payload[0], 8, mem);
    case CmdOp::StoreImm64: return check_mapped("STORE_IMM64 writes", c.inline_value, 8, mem);
    case CmdOp::CopyMem64: {
      const uint64_t bytes = uint64_t(c.inline_value) * 8, unit = c.payload[2];
      if (!(e = check_address("COPY_MEM64 SRC_ADDR", c.payload[0])).empty()) return e;
      if (!(e = check_address("COPY_MEM64 DST_ADDR", c.payload[1])).empty()) return e;
      if (unit > cfg.total_harts())
        return "COPY_MEM64 UNIT " + std::to_string(unit) + " names hart " + std::to_string(unit - 1) +
               " but the device has " + std::to_string(cfg.total_harts()) +
               " harts (UNIT 0 is the CMP's physical view, UNIT n+1 hart n)";
      if (unit == 0) {
        if (!(e = check_mapped("COPY_MEM64 reads", c.payload[0], bytes, mem)).empty()) return e;
      } else if (c.payload[0] + bytes > k4GiB) {
        return "COPY_MEM64 reads " + std::to_string(bytes) + " bytes at " + hex(c.payload[0]) +
               ", which run past the 32-bit address space";
      }
      return check_mapped("COPY_MEM64 writes", c.payload[1], bytes, mem);
    }
    case CmdOp::RunKernelSlice:
    case CmdOp::RunInstances: return check_max_harts(name, c.inline_value & 0xff, cfg);
    case CmdOp::LaunchGrid: return check_grid_shape(grid_launch(c), cfg);
    default: return {};
  }
}

}  // namespace

std::string cmd_op_name(CmdOp op) {
  switch (op) {
    case CmdOp::Finish: return "FINISH";
    case CmdOp::WriteReg64: return "WRITE_REG64";
    case CmdOp::LoadReg64: return "LOAD_REG64";
    case CmdOp::StoreReg64: return "STORE_REG64";
    case CmdOp::StoreImm64: return "STORE_IMM64";
    case CmdOp::CopyMem64: return "COPY_MEM64";
    case CmdOp::RunKernelSlice: return "RUN_KERNEL_SLICE";
    case CmdOp::RunInstances: return "RUN_INSTANCES";
    case CmdOp::SyncCache: return "SYNC_CACHE";
    case CmdOp::LaunchGrid: return "LAUNCH_GRID";
  }
  return "opcode " + std::to_string(unsigned(op));
}

std::string cmp_reg_name(uint32_t reg) {
  static const char* kFixed[7] = {"CMP_SCRATCH",  "CMP_ENTRY_PT_FN", "CMP_KUB_DESC",   "CMP_KARGS_INFO",
                                  "CMP_TSD_INFO", "CMP_STACK_TOP",   "CMP_RETURN_ADDR"};
  static const char* kWindow[4] = {"CMP_REG_WINDOW_BASE", "CMP_REG_WINDOW_TARGET", "CMP_REG_WINDOW_MODE",
                                   "CMP_REG_WINDOW_SCALE"};
  if (reg < 7) return kFixed[reg];
  if (reg >= kCmpWindowBase0 && reg < kCmpNumRegs)
    return std::string(kWindow[(reg - kCmpWindowBase0) / kCmpNumWindows]) + std::to_string(reg % kCmpNumWindows);
  return "register " + std::to_string(reg);
}

std::string check_cmp_register_value(uint32_t reg, uint64_t v) {
  if (!cmp_reg_exists(reg)) return cmp_reg_name(reg) + " does not exist (valid: 0..6 and 8..39)";
  const std::string what = cmp_reg_name(reg) + " value " + hex(v) + ": ";
  switch (reg) {
    case kCmpEntryPtFn:
      if (v >> 32) return what + "bits 63..32 are reserved";
      return {};
    case kCmpKubDesc:
      if ((v & 0xffffffffffffull) >> 32) return what + "KUB_ADDR does not fit the 32-bit device address space";
      return {};
    case kCmpKargsInfo:
    case kCmpTsdInfo:
      if (v & 0xffff) return what + "bits 15..0 are reserved";
      return {};
    case kCmpStackTop:
    case kCmpReturnAddr:
      if (v >> 32) return what + "does not fit the 32-bit device address space";
      return {};
    default: break;
  }
  if (reg < kCmpWindowTarget0 + kCmpNumWindows) {
    if (reg >= kCmpWindowBase0 && (v >> 32)) return what + "does not fit the 32-bit device address space";
    return {};
  }
  if (reg < kCmpWindowScale0) {
    // Bits 0 ACTIVE, 2..1 MODE, 3 INTERLEAVE, 6..4 PERMS, 12..8 STRIDE, 63..32 SIZE; the rest is undefined.
    if (v & 0xffffe080ull) return what + "bits 7 and 31..13 are reserved";
    if (((v >> 1) & 3) == 3) return what + "MODE 3 is reserved (0 SHARED, 1 PER_HART, 2 PER_CORE)";
    if (v & 8) return what + "INTERLEAVE is not modelled: windows map their target linearly";
    return {};
  }
  // Bits 4..0 SCALE_A, 63..32 SCALE_B.
  if (v & 0xffffffe0ull) return what + "bits 31..5 are reserved";
  return {};
}

Result<CommandList> decode_command_buffer(std::span<const uint8_t> bytes) {
  if (bytes.size() > UINT32_MAX) return make_error("the command buffer is larger than 4 GiB");
  const size_t n = bytes.size() / 8;
  if (bytes.size() % 8 != 0)
    return make_error(where(n * 8) + "incomplete chunk: the buffer is " + std::to_string(bytes.size()) +
                      " bytes long, not a multiple of 8");
  CommandList list;
  size_t i = 0;
  while (i < n) {
    const uint32_t off = uint32_t(i * 8);
    if (!list.commands.empty() && list.commands.back().op == CmdOp::Finish)
      return make_error(where(off) + "data after FINISH (the FINISH at byte offset " +
                        std::to_string(list.commands.back().offset) + " ends the buffer)");
    const uint64_t h = load_le64(bytes.data() + off);
    const uint32_t reserved = uint32_t(h & 0xff), opcode = uint32_t(h >> 8) & 0xff;
    const uint32_t count = uint32_t(h >> 16) & 0x3fff, id = uint32_t(h >> 30) & 3;
    if (id != kCmpPacketId)
      return make_error(where(off) + "packet identifier is " + std::to_string(id) + ", expected 3 (header " + hex(h) +
                        ")");
    if (reserved != 0)
      return make_error(where(off) + "reserved header bits 7..0 are " + hex(reserved) + ", expected 0");
    const CmdOp op = CmdOp(opcode);
    if (!known_op(op)) return make_error(where(off) + "unknown opcode " + std::to_string(opcode));
    if (count & 1)
      return make_error(where(off) + cmd_op_name(op) + " COUNT " + std::to_string(count) +
                        " is odd: it must be the number of payload chunks times two");
    Command c;
    c.op = op;
    c.offset = off;
    c.inline_value = uint32_t(h >> 32);
    const size_t payload = count / 2;
    std::string e = check_inline_and_count(op, c.inline_value, payload);
    if (!e.empty()) return make_error(where(off) + e);
    if (payload > n - i - 1)
      return make_error(where(off) + cmd_op_name(op) + " payload of " + chunks(payload) +
                        " runs past the end of the buffer (" + std::to_string(n - i - 1) + " of them present)");
    for (size_t k = 0; k < payload; ++k) c.payload.push_back(load_le64(bytes.data() + off + 8 * (k + 1)));
    if (!(e = check_payload(c)).empty()) return make_error(where(off) + e);
    list.commands.push_back(std::move(c));
    i += 1 + payload;
  }
  if (list.commands.empty() || list.commands.back().op != CmdOp::Finish)
    return make_error(where(n * 8) + "the buffer ends without FINISH");
  return list;
}

Result<void> validate_command_list(const CommandList& list, const Memory& mem, const DeviceConfig& cfg) {
  for (const Command& c : list.commands) {
    std::string e = check_against_device(c, mem, cfg);
    if (!e.empty()) return make_error(where(c.offset) + e);
  }
  return {};
}

// --- Execution -------------------------------------------------------------------

CommandProcessor::CommandProcessor(Machine& m) : m_(m) {
  for (uint32_t n = 0; n < kCmpNumWindows; ++n) {
    const MemWindow& w = m_.windows()[n];
    regs_[kCmpWindowBase0 + n] = w.base;
    regs_[kCmpWindowTarget0 + n] = w.target;
    regs_[kCmpWindowMode0 + n] = w.mode_reg;
    regs_[kCmpWindowScale0 + n] = w.scale_reg;
  }
}

void CommandProcessor::set_registers(const std::array<uint64_t, kCmpNumRegs>& regs) {
  regs_ = regs;
  regs_[7] = 0;
  for (uint32_t n = 0; n < kCmpNumWindows; ++n)
    m_.windows()[n] = MemWindow{regs_[kCmpWindowBase0 + n], regs_[kCmpWindowTarget0 + n], regs_[kCmpWindowMode0 + n],
                                regs_[kCmpWindowScale0 + n]};
  m_.windows_changed();
}

void CommandProcessor::write_register(uint32_t reg, uint64_t value) {
  regs_[reg] = value;
  if (reg < kCmpWindowBase0) return;
  MemWindow& w = m_.windows()[reg % kCmpNumWindows];
  switch ((reg - kCmpWindowBase0) / kCmpNumWindows) {
    case 0: w.base = value; break;
    case 1: w.target = value; break;
    case 2: w.mode_reg = value; break;
    default: w.scale_reg = value; break;
  }
  m_.windows_changed();
}

CommandProcessor::Status CommandProcessor::advance(const CommandList& list, size_t* next, std::string* error) {
  while (*next < list.commands.size()) {
    const Command& c = list.commands[*next];
    // Lists normally come from decode_command_buffer; the format is re-checked so
    // that a hand-built one is an error, never an out-of-range access.
    std::string e = check_inline_and_count(c.op, c.inline_value, c.payload.size());
    if (e.empty()) e = check_payload(c);
    if (e.empty()) e = check_against_device(c, m_.memory(), m_.config());
    bool launched = false;
    if (e.empty()) e = execute(c, &launched);
    if (!e.empty()) {
      *error = where(c.offset) + e;
      return Status::Error;
    }
    ++*next;
    if (c.op == CmdOp::Finish) return Status::Finished;
    if (launched) return Status::LaunchStarted;
  }
  *error = "the command list ends without FINISH";
  return Status::Error;
}

std::string CommandProcessor::execute(const Command& c, bool* launched) {
  Memory& mem = m_.memory();
  switch (c.op) {
    case CmdOp::Finish:
    case CmdOp::SyncCache:
      // The model has no caches: every access is coherent, so synchronizing is a no-op.
      return {};
    case CmdOp::WriteReg64: write_register(c.inline_value, c.payload[0]); return {};
    case CmdOp::LoadReg64: {
      uint64_t v = 0;
      if (!mem.read(uint32_t(c.payload[0]), &v, 8)) return "LOAD_REG64 cannot read 8 bytes at " + hex(c.payload[0]);
      std::string why = check_cmp_register_value(c.inline_value, v);
      if (!why.empty()) return "LOAD_REG64 from " + hex(c.payload[0]) + " loads " + why;
      write_register(c.inline_value, v);
      return {};
    }
    case CmdOp::StoreReg64: {
      uint64_t v = regs_[c.inline_value];
      if (!mem.write(uint32_t(c.payload[0]), &v, 8)) return "STORE_REG64 cannot write 8 bytes at " + hex(c.payload[0]);
      return {};
    }
    case CmdOp::StoreImm64: {
      uint64_t v = c.payload[0];
      if (!mem.write(c.inline_value, &v, 8)) return "STORE_IMM64 cannot write 8 bytes at " + hex(c.inline_value);
      return {};
    }
    case CmdOp::CopyMem64: return copy_mem64(c);
    case CmdOp::RunKernelSlice:
    case CmdOp::RunInstances:
    case CmdOp::LaunchGrid: {
      std::string e = c.op == CmdOp::RunKernelSlice ? run_kernel_slice(c)
                      : c.op == CmdOp::RunInstances ? run_instances(c)
                                                    : launch_grid(c);
      *launched = e.empty();
      return e;
    }
  }
  return "unknown opcode " + std::to_string(unsigned(c.op));
}

std::string CommandProcessor::copy_mem64(const Command& c) {
  Memory& mem = m_.memory();
  const uint32_t count = c.inline_value, src = uint32_t(c.payload[0]), dst = uint32_t(c.payload[1]);
  const uint64_t unit = c.payload[2];
  const uint8_t* local = nullptr;
  uint32_t phys = 0;
  // The destination (and for UNIT 0 the source) was checked before execution; a
  // hart's view is resolved for every element first, so that a failure copies nothing.
  if (unit != 0)
    for (uint32_t k = 0; k < count; ++k) {
      std::string e = resolve_hart_read(uint32_t(unit - 1), src + 8 * k, k, &local, &phys);
      if (!e.empty()) return e;
    }
  // Element by element, ascending: an overlapping copy sees the elements it already wrote.
  for (uint32_t k = 0; k < count; ++k) {
    uint64_t v = 0;
    bool ok = true;
    if (unit == 0) {
      ok = mem.read(src + 8 * k, &v, 8);
    } else {
      ok = resolve_hart_read(uint32_t(unit - 1), src + 8 * k, k, &local, &phys).empty();
      if (ok && local)
        std::memcpy(&v, local, 8);
      else if (ok)
        ok = mem.read(phys, &v, 8);
    }
    if (!ok || !mem.write(dst + 8 * k, &v, 8)) return "COPY_MEM64 element " + std::to_string(k) + " failed to copy";
  }
  return {};
}

std::string CommandProcessor::resolve_hart_read(uint32_t hart, uint32_t addr, uint32_t k, const uint8_t** local,
                                                uint32_t* phys) {
  *local = nullptr;
  // Exactly the data path of a core load: the hart's own local memory first, then the windows.
  if (addr >= memmap::kLocalMemBase) {
    const uint32_t core = hart / (m_.config().warps * m_.config().threads);
    const std::vector<uint8_t>& lm = m_.core(core).local_mem;
    const uint32_t lo = addr - memmap::kLocalMemBase;
    if (uint64_t(lo) + 8 <= lm.size()) {
      *local = lm.data() + lo;
      return {};
    }
  }
  uint32_t t = addr;
  if (!m_.translate_for_hart(hart, &t, 8, 1))
    return "COPY_MEM64 element " + std::to_string(k) + ": hart " + std::to_string(hart) + " cannot read " + hex(addr) +
           " (a window denies reading or maps it past 32 bits)";
  if (!m_.memory().is_mapped(t, 8))
    return "COPY_MEM64 element " + std::to_string(k) + ": " + hex(addr) + " as hart " + std::to_string(hart) +
           " sees it (" + hex(t) + ") is not mapped";
  *phys = t;
  return {};
}

std::string CommandProcessor::run_kernel_slice(const Command& c) {
  const uint64_t entry = regs_[kCmpEntryPtFn];
  if (entry == 0) return "RUN_KERNEL_SLICE with CMP_ENTRY_PT_FN 0: set the kernel entry point first";
  const uint64_t kub = regs_[kCmpKubDesc];
  const uint64_t kub_addr = kub & 0xffffffffffffull, kub_bytes = (kub >> 48) * 256;
  LaunchState l;
  l.kind = LaunchKind::Slice;
  l.start_pc = uint32_t(entry);
  l.stack_top = uint32_t(regs_[kCmpStackTop]);
  l.return_addr = uint32_t(regs_[kCmpReturnAddr]);
  l.max_harts = c.inline_value & 0xff;
  l.total_units = c.payload[0];
  l.slice_id = uint32_t(c.payload[1]);
  // "When KUB_SIZE is set to zero, the KUB is not used ... packed_args and ktd parameters are set to an invalid
  // address": 0 here, which no kernel can dereference (addresses below 0x40 are never mapped).
  if (kub_bytes != 0) {
    if (kub_addr + kub_bytes > k4GiB)
      return "RUN_KERNEL_SLICE: the KUB at " + hex(kub_addr) + " (" + std::to_string(kub_bytes) +
             " bytes) runs past the 32-bit address space";
    struct Part {
      uint32_t reg;
      const char* name;
      uint64_t offset, size;
    };
    const Part parts[2] = {
        {kCmpKargsInfo, "packed arguments", (regs_[kCmpKargsInfo] >> 16) & 0xffffff, regs_[kCmpKargsInfo] >> 40},
        {kCmpTsdInfo, "thread-specific data", (regs_[kCmpTsdInfo] >> 16) & 0xffffff, regs_[kCmpTsdInfo] >> 40}};
    for (const Part& p : parts) {
      if (p.size == 0) continue;
      if (p.offset + p.size > kub_bytes)
        return std::string("RUN_KERNEL_SLICE: ") + p.name + " at KUB offset " + std::to_string(p.offset) + " (" +
               std::to_string(p.size) + " bytes, " + cmp_reg_name(p.reg) + ") run past the KUB's " +
               std::to_string(kub_bytes) + " bytes (KUB_SIZE " + std::to_string(kub >> 48) + " x 256)";
      if (!m_.memory().is_mapped(uint32_t(kub_addr + p.offset), p.size))
        return std::string("RUN_KERNEL_SLICE: ") + p.name + " at " + hex(kub_addr + p.offset) + " (" +
               std::to_string(p.size) + " bytes) are not all mapped";
    }
    if (parts[0].size != 0) l.packed_args = uint32_t(kub_addr + parts[0].offset);
    if (parts[1].size != 0) {
      l.tsd_src = uint32_t(kub_addr + parts[1].offset);
      l.tsd_size = uint32_t(parts[1].size);
    }
  }
  Result<void> r = m_.start_launch(l);
  if (!r) return "RUN_KERNEL_SLICE cannot start: " + r.error().message;
  return {};
}

std::string CommandProcessor::run_instances(const Command& c) {
  const uint64_t entry = regs_[kCmpEntryPtFn];
  if (entry == 0) return "RUN_INSTANCES with CMP_ENTRY_PT_FN 0: set the kernel entry point first";
  LaunchState l;
  l.kind = LaunchKind::Instances;
  l.start_pc = uint32_t(entry);
  l.stack_top = uint32_t(regs_[kCmpStackTop]);
  l.return_addr = uint32_t(regs_[kCmpReturnAddr]);
  l.max_harts = c.inline_value & 0xff;
  l.num_args = (c.inline_value >> 8) & 7;
  for (uint32_t i = 0; i < l.num_args; ++i) l.args[i] = uint32_t(c.payload[1 + i]);
  l.total_units = c.payload[0];
  Result<void> r = m_.start_launch(l);
  if (!r) return "RUN_INSTANCES cannot start: " + r.error().message;
  return {};
}

std::string CommandProcessor::launch_grid(const Command& c) {
  Result<void> r = m_.start_launch(grid_launch(c));
  if (!r) return "LAUNCH_GRID cannot start: " + r.error().message;
  return {};
}

}  // namespace vx

extern "C" int vx_fuzz_command_buffer(const uint8_t* data, size_t size) {
  using namespace vx;
  Result<CommandList> list = decode_command_buffer(std::span<const uint8_t>(data, size));
  if (!list) return 0;
  Machine m(DeviceConfig{}, RunOptions{});
  if (!validate_command_list(*list, m.memory(), m.config())) return 0;
  CommandProcessor cp(m);
  size_t next = 0;
  std::string error;
  while (cp.advance(*list, &next, &error) == CommandProcessor::Status::LaunchStarted) m.abort_launch();
  return 0;
}
