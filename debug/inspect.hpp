// The debugger core's view of the state (docs/architecture.md, "The debugger core"): one lane's
// registers, CSRs, memory, call stack and C values, read from the session's context, at a stop or
// at a breakpoint or watchpoint hit while a pass runs (the state a condition is evaluated in: no
// stop, no checkpoint). The prompt, the GDB server and conditions all read through it.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "debug/expr.hpp"
#include "debug/images.hpp"
#include "debug/lane.hpp"
#include "debug/values.hpp"
#include "device/cmdbuf_builder.hpp"
#include "engine/session.hpp"
#include "engine/symbols.hpp"
#include "engine/variables.hpp"

namespace vx::debug {

// One frame of a lane's call stack as backtrace numbers them: the function levels (inlined calls,
// innermost first) of each physical frame, then those of its caller.
struct FrameLevel {
  unsigned phys = 0;          // the physical frame (index into unwind())
  unsigned inline_level = 0;  // the function level at scope_pc (Variables::frames)
  uint32_t pc = 0;            // the frame's pc; a caller's is the return address
  uint32_t scope_pc = 0;      // where scopes and location lists are looked up (a caller's: the call)
  std::string function;
  bool inlined = false;
  std::string file;
  uint32_t line = 0;
};

// Frame `level` of one lane: where it is, and its registers and CFA for DWARF locations.
struct FrameView {
  FrameLevel level;
  engine::LaneView view;
};

class Inspector {
 public:
  // symbols and variables may be null (no symbols: addresses only; no DWARF: no C names). launch:
  // the launch's dimensions before anything runs (blockDim, gridDim in a condition typed early).
  Inspector(engine::Session& session, const engine::Symbols* symbols, const engine::Variables* variables,
            const LaunchGridArgs& launch);

  void set_symbols(const engine::Symbols* symbols) { sym_ = symbols; }
  void set_variables(const engine::Variables* variables) {
    vars_ = variables;
    names_.clear();
  }
  // Per-launch symbols (a host program's several kernel images): select_launch makes the launch's
  // image's symbols and variables current; true when they changed.
  void set_images(const Images* images) { images_ = images; }
  const Images* images() const { return images_; }
  bool select_launch(uint32_t launch);
  const engine::Symbols* symbols() const { return sym_; }
  const engine::Variables* variables() const { return vars_; }
  engine::Session& session() const { return s_; }
  TypeArena& arena() { return arena_; }

  // The state is readable: the session is stopped, or a hit is being decided (HitScope).
  bool readable() const { return s_.stopped() || at_hit_ > 0; }
  // While alive, the session's context() is the state at a hit (a filter or a scan's accept).
  class HitScope {
   public:
    explicit HitScope(Inspector& i) : i_(i) { ++i_.at_hit_; }
    ~HitScope() { --i_.at_hit_; }
    HitScope(const HitScope&) = delete;
    HitScope& operator=(const HitScope&) = delete;

   private:
    Inspector& i_;
  };

  uint32_t threads() const { return s_.config().threads; }
  // The warp state of a lane's slot when readable and in range (active or not); nullptr otherwise.
  const WarpState* warp(const Lane& l) const;
  // The lane's software coordinates (the device's threadIdx and blockIdx CSRs).
  std::array<uint32_t, 3> thread_idx(const Lane& l) const;
  // A register by DWARF number (x0..x31 = 0..31, f0..f31 = 32..63) and a CSR by number, as the lane
  // would read them; nullopt when not readable.
  std::optional<uint32_t> reg(const Lane& l, unsigned dwarf_reg) const;
  std::optional<uint32_t> csr(const Lane& l, uint32_t number) const;
  // Memory in the lane's view: local memory (from memmap::kLocalMemBase) is its core's.
  Result<std::vector<uint8_t>> read(const Lane& l, uint32_t addr, uint32_t size);
  Result<uint32_t> read_word(const Lane& l, uint32_t addr);

  // The lane's call stack (Symbols::backtrace, plus the return address in ra for a function without
  // call-frame information stopped at its first instruction).
  std::vector<engine::Frame> unwind(const Lane& l, unsigned max);
  std::vector<FrameLevel> frame_levels(const std::vector<engine::Frame>& frames) const;
  Result<FrameView> frame_view(const Lane& l, unsigned level);
  // A lane view of frame 0 (registers and CFA), for DWARF locations.
  engine::LaneView lane_view(const Lane& l);
  Result<CValue> variable_value(const Lane& l, const engine::SourceVariable& v, const FrameView& frame);
  // A function's result of `type` in lane l right after it returned, by the RV32 hard-float
  // calling convention (a0/a1, fa0/fa1, small structs of floats); larger ones live in the caller.
  Result<CValue> return_value(const Lane& l, const engine::CType& type);
  // Reads what a value's pointers point to (symbols, strings) for printing, in lane l's view.
  void annotate(CValue& v, const Lane& l);

  // The command language's integer value (conditions, x, break *EXPR) in one lane; l null: no lane
  // (literals, symbols and dimensions only).
  Result<int64_t> evaluate(const Expr& e, const std::optional<Lane>& l);
  // A C expression in one lane, in frame `level` of its call stack.
  Result<CValue> evaluate_c(const Expr::Node& e, const std::optional<Lane>& l, unsigned level);
  // A type by its C spelling, with the kernel's DWARF types ("struct s *", "uint32_t").
  Result<const engine::CType*> type(const std::string& text, const std::optional<Lane>& l, unsigned level);
  // A value of the command language (registers, coordinates) as C sees it: the environment the C
  // evaluator runs in. Callers that need more (set var's converted value) wrap it.
  std::unique_ptr<ValueEnv> value_env(const std::optional<Lane>& l, unsigned level);

 private:
  class LaneEnv;
  class CEnv;
  // A C name as frame 0 sees it at a pc: which variable it is and how its location is found. All
  // of it depends only on the pc and the DWARF (conditions evaluate it at every hit, per lane);
  // the lane's registers, memory and CFA are read afresh each time.
  struct NameAtPc {
    std::string name;
    std::optional<engine::SourceVariable> var;  // Variables::find(pc, name, 0)
    enum class How : uint8_t {
      Fixed,    // the location reads nothing of the lane's (a register number, an address, a constant)
      Lane,     // it reads the lane's registers or memory, not the CFA
      LaneCfa,  // it needs the frame's CFA (unwound through the CFI), or its evaluation fails
    } how = How::LaneCfa;
    engine::VarLocation fixed;  // How::Fixed
  };
  const NameAtPc& name_at(uint32_t pc, const std::string& name);
  Result<CValue> frame0_value(const Lane& l, const NameAtPc& n);
  // The value at a location found; frame null: frame 0 (the lane's own registers).
  Result<CValue> value_at(const Lane& l, const engine::SourceVariable& v, const engine::VarLocation& loc,
                          const FrameView* frame);
  engine::Session& s_;
  const engine::Symbols* sym_;
  const engine::Variables* vars_;
  const Images* images_ = nullptr;
  LaunchGridArgs launch_;
  TypeArena arena_;
  int at_hit_ = 0;
  std::unordered_map<uint32_t, std::deque<NameAtPc>> names_;  // by pc; cleared with the variables
};

}  // namespace vx::debug
