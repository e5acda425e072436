#include "debug/inspect.hpp"

#include <cstdio>

#include "base/hex.hpp"
#include "device/registers.hpp"

namespace vx::debug {

namespace {

constexpr unsigned kRegSp = 2, kRegRa = 1;

}  // namespace

Inspector::Inspector(engine::Session& session, const engine::Symbols* symbols, const engine::Variables* variables,
                     const LaunchGridArgs& launch)
    : s_(session), sym_(symbols), vars_(variables), launch_(launch) {}

const WarpState* Inspector::warp(const Lane& l) const {
  if (!readable()) return nullptr;
  const DeviceContext& ctx = s_.context();
  if (l.core >= ctx.cores.size() || l.slot >= ctx.cores[l.core].warps.size()) return nullptr;
  return &ctx.cores[l.core].warps[l.slot];
}

std::array<uint32_t, 3> Inspector::thread_idx(const Lane& l) const {
  std::array<uint32_t, 3> t{};
  for (unsigned i = 0; i < 3; ++i) t[i] = csr(l, 0xCD3 + i).value_or(0);
  return t;
}

std::optional<uint32_t> Inspector::reg(const Lane& l, unsigned r) const {
  const WarpState* w = warp(l);
  if (!w || r >= 64) return std::nullopt;
  if (r == 0) return 0u;
  const size_t i = size_t(r % 32) * threads() + l.lane;
  const auto& file = r < 32 ? w->x : w->f;
  if (i >= file.size()) return std::nullopt;
  return file[i];
}

std::optional<uint32_t> Inspector::csr(const Lane& l, uint32_t number) const {
  const WarpState* w = warp(l);
  if (!w) return std::nullopt;
  return csr_state_value(s_.config(), s_.context().launch, *w, l.core, l.slot, l.lane, number);
}

Result<std::vector<uint8_t>> Inspector::read(const Lane& l, uint32_t addr, uint32_t size) {
  const uint64_t end = uint64_t(addr) + size;
  if (end > (1ull << 32))
    return make_error("cannot read " + std::to_string(size) + " bytes at " + hex32(addr) +
                      ": past the end of the address space");
  if (end > memmap::kLocalMemBase) {
    if (addr < memmap::kLocalMemBase)
      return make_error("cannot read across the start of local memory at " + hex32(memmap::kLocalMemBase));
    if (!readable()) return make_error("local memory (" + hex32(addr) + ") is readable only at a stop");
    const auto& cores = s_.context().cores;
    if (l.core >= cores.size()) return make_error("core " + std::to_string(l.core) + " does not exist");
    const auto& lm = cores[l.core].local_mem;
    const uint64_t off = addr - memmap::kLocalMemBase;
    if (off + size > lm.size())
      return make_error("cannot read " + hex32(addr) + ": core " + std::to_string(l.core) + "'s local memory is " +
                        std::to_string(lm.size()) + " bytes (" + hex32(memmap::kLocalMemBase) + ".." +
                        hex32(uint32_t(memmap::kLocalMemBase + lm.size() - 1)) + ")");
    // At a hit, the context is the state there (a live session's held warps are read through the DM).
    if (!s_.stopped()) return std::vector<uint8_t>(lm.begin() + off, lm.begin() + off + size);
    auto r = s_.read_local_memory(l.core, addr, size);
    if (!r) return make_error("cannot read memory at " + hex32(addr) + ": " + r.error().message);
    return r;
  }
  auto r = s_.read_memory(addr, size);
  if (!r) return make_error("cannot read memory at " + hex32(addr) + ": " + r.error().message);
  return r;
}

Result<uint32_t> Inspector::read_word(const Lane& l, uint32_t addr) {
  if (addr & 3) return make_error("address " + hex32(addr) + " is not 4-byte aligned");
  auto b = read(l, addr, 4);
  if (!b) return b.error();
  return uint32_t((*b)[0]) | uint32_t((*b)[1]) << 8 | uint32_t((*b)[2]) << 16 | uint32_t((*b)[3]) << 24;
}

// --- Frames ------------------------------------------------------------------------------------------

std::vector<engine::Frame> Inspector::unwind(const Lane& l, unsigned max) {
  std::vector<engine::Frame> frames;
  const WarpState* w = warp(l);
  if (!w) return frames;
  auto rr = [&](unsigned r) { return reg(l, r); };
  auto rw = [&](uint32_t addr) -> std::optional<uint32_t> {
    auto v = read_word(l, addr);
    return v ? std::optional<uint32_t>(*v) : std::nullopt;
  };
  if (sym_) frames = sym_->backtrace(w->pc, rr, rw, max);
  if (frames.empty())
    frames.push_back(engine::Frame{w->pc, reg(l, kRegSp).value_or(0),
                                   sym_ ? sym_->locate(w->pc) : std::optional<engine::SourceLocation>()});
  if (frames.size() == 1 && max > 1 && sym_) {
    auto f = sym_->function_at(w->pc);
    auto ra = reg(l, kRegRa);
    if (f && f->lo == w->pc && ra && *ra >= 4 && *ra != w->pc) {
      auto more = sym_->backtrace(*ra, rr, rw, max - 1);
      if (!more.empty()) more[0].where = sym_->locate(*ra - 4);
      // The caller read the machine's registers as if it were frame 0: keep only what a call preserves.
      if (!more.empty())
        for (unsigned r = 0; r < 32; ++r)
          if (!engine::callee_saved(r)) more[0].regs[r].reset();
      for (auto& fr : more) frames.push_back(fr);
    }
  }
  return frames;
}

std::vector<FrameLevel> Inspector::frame_levels(const std::vector<engine::Frame>& frames) const {
  std::vector<FrameLevel> out;
  for (unsigned k = 0; k < frames.size(); ++k) {
    const engine::Frame& f = frames[k];
    FrameLevel base;
    base.phys = k;
    base.pc = f.pc;
    base.scope_pc = k == 0 ? f.pc : f.pc - 1;
    std::optional<engine::SourceLocation> where = f.where;
    if (!where && sym_) where = sym_->locate(base.scope_pc);
    if (where) {
      base.file = where->file;
      base.line = where->line;
    }
    const std::vector<engine::ScopeFrame> scopes =
        vars_ ? vars_->frames(base.scope_pc) : std::vector<engine::ScopeFrame>{};
    if (scopes.empty()) {
      if (sym_)
        if (auto fn = sym_->function_at(base.scope_pc)) base.function = fn->name;
      if (base.function.empty() && where) base.function = where->function;
      out.push_back(base);
      continue;
    }
    // The line of level i > 0 is the call site of level i - 1.
    for (unsigned i = 0; i < scopes.size(); ++i) {
      FrameLevel lv = base;
      lv.inline_level = i;
      lv.function = scopes[i].function;
      lv.inlined = scopes[i].inlined;
      if (i > 0) {
        lv.file = scopes[i - 1].call_file;
        lv.line = scopes[i - 1].call_line;
      }
      out.push_back(lv);
    }
  }
  return out;
}

engine::LaneView Inspector::lane_view(const Lane& l) {
  engine::LaneView view;
  view.reg = [this, l](unsigned r) { return reg(l, r); };
  view.read = [this, l](uint32_t addr, uint32_t size) { return read(l, addr, size); };
  auto frames = unwind(l, 1);
  if (!frames.empty()) view.cfa = frames[0].sp;
  return view;
}

Result<FrameView> Inspector::frame_view(const Lane& l, unsigned level) {
  if (!warp(l)) return make_error("C variables are readable only at a stop");
  std::vector<engine::Frame> frames = unwind(l, level + 1);
  std::vector<FrameLevel> levels = frame_levels(frames);
  if (level >= levels.size())
    return make_error("lane " + std::to_string(l.lane) + " has no frame " + std::to_string(level) + " (its stack has " +
                      std::to_string(levels.size()) + ")");
  engine::LaneView view;
  view.reg = [this, l](unsigned r) { return reg(l, r); };
  view.read = [this, l](uint32_t addr, uint32_t size) { return read(l, addr, size); };
  view.cfa = frames[0].sp;
  FrameView fv{levels[level], std::move(view)};
  const unsigned k = fv.level.phys;
  if (k > 0) {
    // A caller: the registers its callees' CFI recovers, and its CFA; no float registers.
    const engine::Frame& f = frames[k];
    fv.view.reg = [regs = f.regs](unsigned r) -> std::optional<uint32_t> { return r < 32 ? regs[r] : std::nullopt; };
    fv.view.cfa = f.cfa;
  }
  return fv;
}

Result<CValue> Inspector::variable_value(const Lane& l, const engine::SourceVariable& v, const FrameView& frame) {
  if (!vars_) return make_error("no debug information");
  auto loc = vars_->locate(v, frame.level.scope_pc, frame.view);
  if (!loc) return loc.error();
  return value_at(l, v, *loc, &frame);
}

Result<CValue> Inspector::value_at(const Lane& l, const engine::SourceVariable& v, const engine::VarLocation& loc,
                                   const FrameView* frame) {
  CValue out;
  out.type = v.type ? v.type : arena_.builtin("int");
  const uint32_t size = out.type->size;
  switch (loc.kind) {
    case engine::VarLocation::Kind::Memory: {
      auto b = read(l, loc.address, size);
      if (!b) return b.error();
      out.bytes = std::move(*b);
      out.address = loc.address;
      return out;
    }
    case engine::VarLocation::Kind::Register: {
      auto r = frame ? frame->view.reg(loc.reg) : reg(l, loc.reg);
      if (!r) {
        // A caller's register that its callees did not save: its value at the call is lost.
        out.missing = "not available";
        return out;
      }
      out.bytes.assign(size, 0);
      for (uint32_t i = 0; i < size && i < 4; ++i) out.bytes[i] = uint8_t(*r >> (8 * i));
      out.reg = loc.reg;
      return out;
    }
    case engine::VarLocation::Kind::Value:
      out.bytes = loc.bytes;
      out.bytes.resize(size);
      out.missing_parts = loc.missing_parts;
      return out;
    default: out.missing = loc.describe(); return out;
  }
}

// The location's evaluation (Variables::locate) follows the same operations whatever the lane's
// values: only a failed register or memory read ends it early. A probe with no CFA and with
// registers and memory that read as zeros therefore tells, once per pc, whether the location
// reads nothing of the lane's (it is then the same at every hit), reads its registers or memory
// but not the CFA (the CFA, and the unwinding it costs, is then skipped), or needs the CFA.
const Inspector::NameAtPc& Inspector::name_at(uint32_t pc, const std::string& name) {
  std::deque<NameAtPc>& at = names_[pc];
  for (const NameAtPc& n : at)
    if (n.name == name) return n;
  NameAtPc& n = at.emplace_back();
  n.name = name;
  n.var = vars_->find(pc, name, 0);
  if (!n.var) return n;
  bool reads = false;
  engine::LaneView probe;
  probe.reg = [&reads](unsigned) {
    reads = true;
    return std::optional<uint32_t>(0u);
  };
  probe.read = [&reads](uint32_t, uint32_t size) -> Result<std::vector<uint8_t>> {
    reads = true;
    return std::vector<uint8_t>(size);
  };
  auto loc = vars_->locate(*n.var, pc, probe);
  if (!loc) {
    n.how = NameAtPc::How::LaneCfa;
  } else if (reads) {
    n.how = NameAtPc::How::Lane;
  } else {
    n.how = NameAtPc::How::Fixed;
    n.fixed = std::move(*loc);
  }
  return n;
}

// Frame 0's variable: what frame_view(l, 0) and variable_value would give, without the unwinding
// and the scope lookups unless the location needs them (frame 0's level is the pc's innermost
// function level, its scope pc the pc, its registers the lane's and its CFA unwind(l, 1)[0].sp).
Result<CValue> Inspector::frame0_value(const Lane& l, const NameAtPc& n) {
  if (n.how == NameAtPc::How::Fixed) return value_at(l, *n.var, n.fixed, nullptr);
  const WarpState* w = warp(l);
  engine::LaneView view;
  view.reg = [this, &l](unsigned r) { return reg(l, r); };
  view.read = [this, &l](uint32_t addr, uint32_t size) { return read(l, addr, size); };
  if (n.how == NameAtPc::How::LaneCfa) {
    auto frames = unwind(l, 1);
    view.cfa = frames[0].sp;
  }
  auto loc = vars_->locate(*n.var, w->pc, view);
  if (!loc) return loc.error();
  return value_at(l, *n.var, *loc, nullptr);
}

// --- Expressions -----------------------------------------------------------------------------------

// The command language's values in one lane (or none: literals, symbols, dimensions).
class Inspector::LaneEnv final : public ExprEnv {
 public:
  LaneEnv(Inspector& i, std::optional<Lane> l) : i_(i), l_(l), w_(l ? i.warp(*l) : nullptr) {}

  Result<int64_t> value(const Variable& v) const override {
    using K = Variable::Kind;
    if (v.kind == K::Symbol) {
      if (!i_.sym_) return make_error("no symbols: &" + v.name + " is unknown");
      auto a = i_.sym_->symbol_address(v.name);
      if (!a) return make_error("no symbol \"" + v.name + "\" in the kernel");
      return int64_t(*a);
    }
    if (v.kind == K::BlockDim || v.kind == K::GridDim) {
      if (w_) return int64_t(*i_.csr(*l_, (v.kind == K::BlockDim ? 0xCD9 : 0xCDC) + v.index));
      const auto& dims = v.kind == K::BlockDim ? i_.launch_.block : i_.launch_.grid;
      return int64_t(dims[v.index]);
    }
    if (!w_) return make_error(v.to_string() + " needs a focus lane: the kernel is not stopped in a warp");
    const Lane& l = *l_;
    switch (v.kind) {
      case K::XReg: return int64_t(*i_.reg(l, v.index));
      case K::FReg: return int64_t(*i_.reg(l, 32 + v.index));
      case K::Pc: return int64_t(w_->pc);
      case K::BlockIdx: return int64_t(*i_.csr(l, 0xCD6 + v.index));
      case K::ThreadIdx: return int64_t(*i_.csr(l, 0xCD3 + v.index));
      case K::Lane: return int64_t(l.lane);
      case K::Warp: return int64_t(l.slot);
      case K::Core: return int64_t(l.core);
      case K::LocalMem: return int64_t(memmap::kLocalMemBase + w_->cta_slot * i_.s_.context().launch.lmem_stride);
      case K::Source: return make_error("'" + v.name + "' is a C name: it needs the kernel's debug information");
      case K::Csr: {
        if (auto c = i_.csr(l, v.index)) return int64_t(*c);
        return make_error("$" + v.name + " is not readable at the prompt");
      }
      default: return make_error(ErrorCode::Internal, "internal error: unknown variable");
    }
  }

  Result<int64_t> load_word(uint32_t addr) const override {
    auto w = i_.read_word(l_.value_or(Lane{}), addr);
    if (!w) return w.error();
    return int64_t(*w);
  }

  Result<int64_t> c_value(const void* node) const override {
    auto v = i_.evaluate_c(*static_cast<const Expr::Node*>(node), l_, 0);
    if (!v) return v.error();
    return c_to_int(*v);
  }

 private:
  Inspector& i_;
  std::optional<Lane> l_;
  const WarpState* w_;
};

// One lane's view of C names in one frame of its call stack.
class Inspector::CEnv final : public ValueEnv {
 public:
  CEnv(Inspector& i, std::optional<Lane> l, unsigned level) : i_(i), l_(l), plain_(i, l), level_(level) {}

  const ExprEnv& plain() const override { return plain_; }

  Result<std::optional<CValue>> variable(const std::string& name) const override {
    if (!i_.vars_) return std::optional<CValue>();
    if (!l_ || !i_.warp(*l_)) {
      // No lane: a global is still readable (its location is an address), nothing else.
      auto g = i_.vars_->find(i_.launch_.entry_pc, name, 0);
      if (!g || g->kind != engine::SourceVariable::Kind::Global) {
        if (g) return make_error(name + " is a local: it needs a lane, and the kernel is not stopped in a warp");
        return std::optional<CValue>();
      }
      FrameView none;
      none.level.scope_pc = i_.launch_.entry_pc;
      none.view.reg = [](unsigned) { return std::optional<uint32_t>(); };
      none.view.read = [this](uint32_t addr, uint32_t size) { return i_.read(Lane{}, addr, size); };
      auto value = i_.variable_value(Lane{}, *g, none);
      if (!value) return make_error(name + ": " + value.error().message);
      return std::optional<CValue>(*value);
    }
    if (level_ == 0) {
      const NameAtPc& n = i_.name_at(i_.warp(*l_)->pc, name);
      if (!n.var) return std::optional<CValue>();
      auto value = i_.frame0_value(*l_, n);
      if (!value) return make_error(name + ": " + value.error().message);
      return std::optional<CValue>(std::move(*value));
    }
    if (!frame_) {
      auto f = i_.frame_view(*l_, level_);
      if (!f) return f.error();
      frame_ = std::move(*f);
    }
    auto v = i_.vars_->find(frame_->level.scope_pc, name, frame_->level.inline_level);
    if (!v) return std::optional<CValue>();
    auto value = i_.variable_value(*l_, *v, *frame_);
    if (!value) return make_error(name + ": " + value.error().message);
    return std::optional<CValue>(*value);
  }
  Result<std::vector<uint8_t>> read(uint32_t addr, uint32_t size) const override {
    return i_.read(l_.value_or(Lane{}), addr, size);
  }
  const engine::CType* type_named(const std::string& name) const override {
    return i_.vars_ ? i_.vars_->find_type(name) : nullptr;
  }
  std::optional<std::string> symbol_at(uint32_t addr) const override {
    auto d = i_.sym_ ? i_.sym_->describe(addr) : std::nullopt;
    // gdb's data symbols: <table>, <table+8> (no "+0", which only disassembly shows).
    if (d && d->size() > 2 && d->compare(d->size() - 2, 2, "+0") == 0) d->resize(d->size() - 2);
    return d;
  }

 private:
  Inspector& i_;
  std::optional<Lane> l_;
  LaneEnv plain_;
  unsigned level_;
  mutable std::optional<FrameView> frame_;  // found at the first variable
};

void Inspector::annotate(CValue& v, const Lane& l) {
  CEnv env(*this, l, 0);
  debug::annotate(v, env);
}

bool Inspector::select_launch(uint32_t launch) {
  const Images::Image* img = images_ ? images_->for_launch(launch) : nullptr;
  if (!img) return false;
  const engine::Symbols* sym = img->symbols ? &*img->symbols : nullptr;
  const engine::Variables* vars = img->variables ? &*img->variables : nullptr;
  if (sym == sym_ && vars == vars_) return false;
  sym_ = sym;
  set_variables(vars);
  return true;
}

Result<int64_t> Inspector::evaluate(const Expr& e, const std::optional<Lane>& l) {
  LaneEnv env(*this, l);
  return e.eval(env);
}

Result<CValue> Inspector::evaluate_c(const Expr::Node& e, const std::optional<Lane>& l, unsigned level) {
  CEnv env(*this, l, level);
  return debug::evaluate_c(e, env, arena_);
}

Result<const engine::CType*> Inspector::type(const std::string& text, const std::optional<Lane>& l, unsigned level) {
  CEnv env(*this, l, level);
  return parse_type(text, env, arena_);
}

std::unique_ptr<ValueEnv> Inspector::value_env(const std::optional<Lane>& l, unsigned level) {
  return std::make_unique<CEnv>(*this, l, level);
}

Result<CValue> Inspector::return_value(const Lane& l, const engine::CType& type) {
  const engine::CType& t = engine::strip_typedefs(type);
  CValue v;
  v.type = &type;
  auto put = [&](uint32_t word, uint32_t n) {
    for (uint32_t i = 0; i < n && i < 4; ++i) v.bytes.push_back(uint8_t(word >> (8 * i)));
  };
  auto x = [&](unsigned r) { return reg(l, r).value_or(0); };
  if (t.size > 8) return make_error("Cannot determine contents (the caller's memory holds it)");
  using K = engine::CType::Kind;
  if (t.kind == K::Float && t.size == 4) {
    put(x(32 + 10), 4);
    return v;
  }
  if (t.kind == K::Struct) {
    // The hard-float rule: one or two float members (and at most one integer beside one float).
    std::vector<const engine::CType::Field*> fields;
    for (const auto& f : t.fields) fields.push_back(&f);
    auto is_float = [](const engine::CType::Field* f) {
      const engine::CType& ft = engine::strip_typedefs(*f->type);
      return ft.kind == K::Float && ft.size == 4;
    };
    const size_t floats = std::count_if(fields.begin(), fields.end(), is_float);
    if (fields.size() <= 2 && floats >= 1 &&
        std::all_of(fields.begin(), fields.end(), [](auto* f) { return f->type && f->bit_size == 0; })) {
      v.bytes.assign(t.size, 0);
      unsigned next_f = 32 + 10, next_x = 10;
      for (const auto* f : fields) {
        const engine::CType& ft = engine::strip_typedefs(*f->type);
        if (ft.size > 4) return make_error("Cannot determine contents");
        const uint32_t word = is_float(f) ? x(next_f++) : x(next_x++);
        for (uint32_t i = 0; i < ft.size && f->offset + i < t.size; ++i)
          v.bytes[f->offset + i] = uint8_t(word >> (8 * i));
      }
      return v;
    }
  }
  put(x(10), std::min<uint32_t>(t.size, 4));
  if (t.size > 4) put(x(11), t.size - 4);
  return v;
}

}  // namespace vx::debug
