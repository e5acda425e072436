#include "debug/breakpoints.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <set>

#include "base/hex.hpp"
#include "device/config.hpp"
#include "device/isa.hpp"

namespace vx::debug {

using engine::StopEvent;
using engine::StopReason;

namespace {

std::vector<uint32_t> lanes_of(uint32_t mask) {
  std::vector<uint32_t> out;
  for (uint32_t l = 0; l < 32; ++l)
    if (mask >> l & 1) out.push_back(l);
  return out;
}

Result<std::optional<Expr>> parse_condition(const std::string& text) {
  if (text.empty()) return std::optional<Expr>();
  auto e = Expr::parse(text);
  if (!e) return make_error("bad condition: " + e.error().message);
  return std::optional<Expr>(std::move(e).value());
}

}  // namespace

Breakpoints::Breakpoints(engine::Session& session, Inspector& inspector) : s_(session), insp_(inspector) {
  // Conditions (and whether a watched value changed) are decided where the hit happens.
  s_.set_breakpoint_filter([this](const StopEvent& hit) {
    Inspector::HitScope at_hit(insp_);
    if (hit.reason == StopReason::Watchpoint) {
      pending_watch_ = watch_hit(hit, true);
      return !pending_watch_->empty();
    }
    pending_break_ = breakpoint_hit(hit, true);
    if (pending_break_->ids.empty()) return false;
    // The stop's mark records the lane it is about (goto N comes back to it).
    if (auto l = stop_lane(hit, s_.context(), insp_.threads(), std::nullopt, pending_break_->lane))
      s_.set_stop_lane(l->warp(), l->lane);
    return true;
  });
}

Breakpoints::~Breakpoints() { s_.set_breakpoint_filter(nullptr); }

void Breakpoints::clear_pending() {
  pending_break_.reset();
  pending_watch_.reset();
}

Breakpoint* Breakpoints::find(int id) {
  auto it = bps_.find(id);
  return it == bps_.end() ? nullptr : &it->second;
}

Result<void> Breakpoints::resolve(Breakpoint& b, const std::string& location) const {
  const Images* images = insp_.images();
  if (!images || images->size() == 0) {
    const engine::Symbols* sym = insp_.symbols();
    if (!sym) return make_error("no symbols in the kernel image: only *ADDRESS locations work");
    auto r = sym->resolve(location);
    if (!r) return r.error();
    b.addresses = r->addresses;
    b.address_images.assign(b.addresses.size(), -1);
    b.where = sym->locate(b.addresses[0]);
    return {};
  }
  std::optional<Error> first_error;
  b.addresses.clear();
  b.address_images.clear();
  for (size_t i = 0; i < images->size(); ++i) {
    const auto& img = images->at(i);
    if (!img.symbols) continue;
    auto r = img.symbols->resolve(location);
    if (!r) {
      if (!first_error) first_error = r.error();
      continue;
    }
    if (b.addresses.empty()) b.where = img.symbols->locate(r->addresses[0]);
    for (uint32_t a : r->addresses) {
      b.addresses.push_back(a);
      b.address_images.push_back(int(i));
    }
  }
  if (!b.addresses.empty()) return {};
  if (first_error) return *first_error;
  return make_error("no symbols in the kernel images: only *ADDRESS locations work");
}

bool Breakpoints::address_matches(const Breakpoint& b, uint32_t pc, std::optional<size_t> image) const {
  for (size_t i = 0; i < b.addresses.size(); ++i)
    if (b.addresses[i] == pc && (b.address_images[i] < 0 || !image || size_t(b.address_images[i]) == *image))
      return true;
  return false;
}

std::vector<int> Breakpoints::refresh() {
  std::vector<int> changed;
  for (auto& [id, b] : bps_) {
    if (b.is_watchpoint() || b.location.empty() || b.location[0] == '*') continue;
    Breakpoint again = b;
    if (!resolve(again, b.location)) continue;
    if (again.addresses == b.addresses && again.address_images == b.address_images) continue;
    b.addresses = again.addresses;
    b.address_images = again.address_images;
    b.where = again.where;
    b.pending = false;
    changed.push_back(id);
  }
  if (!changed.empty()) (void)sync_breakpoints();
  return changed;
}

Result<void> Breakpoints::check_ids(const std::vector<int>& ids) const {
  for (int id : ids)
    if (!bps_.count(id)) return make_error("No breakpoint number " + std::to_string(id) + ".");
  return {};
}

// --- The table, and the engine's breakpoints and watchpoints in step with it -------------------------

Result<void> Breakpoints::sync_breakpoints() {
  std::set<uint32_t> want;
  for (const auto& [id, b] : bps_)
    if (b.enabled && !b.is_watchpoint()) want.insert(b.addresses.begin(), b.addresses.end());
  for (auto it = engine_bps_.begin(); it != engine_bps_.end();) {
    if (want.count(it->first)) {
      ++it;
      continue;
    }
    if (auto r = s_.remove_breakpoint(it->second); !r) return r;
    it = engine_bps_.erase(it);
  }
  for (uint32_t a : want) {
    if (engine_bps_.count(a)) continue;
    auto id = s_.add_breakpoint(a);
    if (!id) return id.error();
    engine_bps_[a] = *id;
  }
  return {};
}

Result<void> Breakpoints::sync_watchpoints() {
  for (auto& [id, b] : bps_) {
    if (!b.is_watchpoint()) continue;
    if (!b.engine_watch) {
      auto w = s_.add_watchpoint(b.watch);
      if (!w) return w.error();
      b.engine_watch = *w;
    }
    if (auto r = s_.enable_watchpoint(b.engine_watch, b.enabled); !r) return r;
  }
  // Engine watchpoints whose user watchpoint was deleted.
  std::set<int> live;
  for (const auto& [id, b] : bps_)
    if (b.is_watchpoint()) live.insert(b.engine_watch);
  for (int id : engine_watches_)
    if (!live.count(id)) (void)s_.remove_watchpoint(id);
  engine_watches_ = std::vector<int>(live.begin(), live.end());
  return {};
}

Result<int> Breakpoints::insert(Breakpoint b) {
  b.id = next_id_;
  bps_[b.id] = b;
  // The engine takes it, or the table stays as it was (the number is not used up).
  auto r = b.is_watchpoint() ? sync_watchpoints() : sync_breakpoints();
  if (!r) {
    bps_.erase(b.id);
    (void)(b.is_watchpoint() ? sync_watchpoints() : sync_breakpoints());
    return r.error();
  }
  return next_id_++;
}

Result<int> Breakpoints::add_breakpoint(const std::string& location, const std::string& condition, bool temporary,
                                        const std::optional<Lane>& focus) {
  Breakpoint b;
  b.temporary = temporary;
  auto cond = parse_condition(condition);
  if (!cond) return cond.error();
  b.condition = std::move(cond).value();
  const engine::Symbols* sym = insp_.symbols();
  if (location.empty()) {
    const WarpState* w = focus ? insp_.warp(*focus) : nullptr;
    if (!w || !w->active) return make_error("no default breakpoint location: the kernel is not stopped in a warp");
    b.location = "*" + hex32(w->pc);
    b.addresses = {w->pc};
  } else if (location[0] == '*') {
    // *ADDRESS, or *EXPR computed in the focus lane (e.g. *$ra).
    auto e = Expr::parse(std::string_view(location).substr(1));
    if (!e) return make_error("bad address: " + e.error().message);
    auto v = insp_.evaluate(*e, focus);
    if (!v) return make_error("bad address: " + v.error().message);
    if (*v < 0 || *v > int64_t(UINT32_MAX)) return make_error("address " + std::to_string(*v) + " is not 32-bit");
    if (sym) {
      auto r = sym->resolve("*" + hex32(uint32_t(*v)));
      if (!r) return r.error();
      b.addresses = r->addresses;
    } else {
      b.addresses = {uint32_t(*v)};
    }
    b.location = location;
  } else {
    if (auto r = resolve(b, location); !r) {
      if (!pending_allowed_) return r.error();
      b.pending = true;  // a later image may have it
    }
    b.location = location;
  }
  if (b.addresses.empty() && !b.pending) return make_error("\"" + location + "\" has no code");
  b.address_images.resize(b.addresses.size(), -1);
  if (sym && !b.addresses.empty() && b.address_images[0] < 0) b.where = sym->locate(b.addresses[0]);
  return insert(std::move(b));
}

Result<int> Breakpoints::add_watchpoint(const WatchRequest& request, const std::optional<Lane>& focus, unsigned level) {
  const std::string& name = request.command;
  Breakpoint b;
  b.watch_command = name;
  b.watch_kind = name == "watch" ? kWatchWrite : name == "rwatch" ? kWatchRead : (kWatchRead | kWatchWrite);
  auto place = lvalue_place(name, request.expression, focus, level);
  if (!place) return place.error();
  auto cond = parse_condition(request.condition);
  if (!cond) return cond.error();
  b.condition = std::move(cond).value();
  b.watch = place->spec;
  b.watch.kind = b.watch_kind;
  b.watch_ctype = place->type;
  b.location = place->text;
  return insert(std::move(b));
}

Result<Breakpoints::Place> Breakpoints::lvalue_place(const std::string& name, const std::string& expression,
                                                     const std::optional<Lane>& focus, unsigned level) {
  auto e = Expr::parse(expression);
  if (!e) return make_error(name + ": " + e.error().message);
  // The lvalue, as gdb takes it: the address and the type's size of what EXPR designates.
  std::optional<Lane> at;
  if (focus && insp_.readable())
    if (const WarpState* w = insp_.warp(*focus); w && w->active) at = focus;
  Result<CValue> v = make_error("");
  if (e->root()->op == ExprOp::Deref) {
    // *POINTER: the pointer designates the memory, which need not be readable yet (local memory
    // before the kernel starts): no read.
    auto p = insp_.evaluate_c(*e->root()->a, at, level);
    if (!p) return make_error(name + ": " + p.error().message);
    auto a = c_to_int(*p);
    if (!a) return make_error(name + ": " + a.error().message);
    const engine::CType& pt = engine::strip_typedefs(*p->type);
    CValue lv;
    lv.type = pt.kind == engine::CType::Kind::Pointer ? pt.target : insp_.arena().builtin("unsigned int");
    if (!lv.type) return make_error(name + ": " + e->text() + " has type void: there is no size to watch");
    if (*a < 0 || *a > int64_t(UINT32_MAX))
      return make_error(name + ": address " + std::to_string(*a) + " is not 32-bit");
    lv.address = uint32_t(*a);
    v = lv;
  } else {
    v = insp_.evaluate_c(*e->root(), at, level);
  }
  if (!v) return make_error(name + ": " + v.error().message);
  const bool watching = name.find("watch") != std::string::npos;
  if (!v->missing.empty())
    return make_error(name + ": " + e->text() + " is " + v->missing + ": there is no memory to " +
                      (watching ? "watch" : "ask about"));
  if (v->reg && !v->address)
    return make_error(name + ": " + e->text() + " lives in register $" + std::string(xreg_name(*v->reg % 32)) +
                      ", not in memory: " +
                      (watching ? "watchpoints watch memory (watch its address where it has one)"
                                : "the history follows memory (a register's history is not supported yet)"));
  if (!v->address)
    return make_error(watching ? "Cannot watch constant value `" + e->text() + "'."
                               : name + ": " + e->text() + " is a value, not a place in memory");
  const uint32_t len = v->type ? v->type->size : 4;
  if (len == 0 || len > 4096)
    return make_error(name + ": " + e->text() + " is " + std::to_string(len) +
                      " bytes: " + (watching ? "a watchpoint covers" : "it takes places of") + " 1 to 4096");
  const uint32_t addr = *v->address;
  if (uint64_t(addr) + len > (1ull << 32))
    return make_error(name + ": the range runs past the end of the address space");
  Place out;
  out.spec.addr = addr;
  out.spec.len = len;
  out.type = v->type;
  out.text = e->text();
  if (addr >= memmap::kLocalMemBase) {
    // The focus core's local memory, as `x` reads it (core 0 before there is a focus).
    out.spec.local = true;
    out.spec.core = at ? int32_t(at->core) : 0;
  } else if (uint64_t(addr) + len > memmap::kLocalMemBase) {
    return make_error(name + ": the range crosses the start of local memory at " + hex32(memmap::kLocalMemBase));
  } else if (auto r = s_.read_memory(addr, len); !r) {
    return make_error(name + ": cannot " + (watching ? "watch " : "read ") + e->text() + " at " + hex32(addr) + ": " +
                      r.error().message);
  }
  return out;
}

Result<void> Breakpoints::remove(const std::vector<int>& ids) {
  if (auto r = check_ids(ids); !r) return r;
  if (ids.empty()) bps_.clear();
  for (int id : ids) bps_.erase(id);
  if (auto r = sync_breakpoints(); !r) return r;
  return sync_watchpoints();
}

Result<void> Breakpoints::set_enabled(const std::vector<int>& ids, bool enabled) {
  if (auto r = check_ids(ids); !r) return r;
  for (auto& [id, b] : bps_)
    if (ids.empty() || std::find(ids.begin(), ids.end(), id) != ids.end()) b.enabled = enabled;
  if (auto r = sync_breakpoints(); !r) return r;
  return sync_watchpoints();
}

Result<void> Breakpoints::set_condition(int id, const std::string& condition) {
  if (auto r = check_ids({id}); !r) return r;
  auto cond = parse_condition(condition);
  if (!cond) return cond.error();
  bps_.at(id).condition = std::move(cond).value();
  return {};
}

Result<void> Breakpoints::stopped_at(const std::vector<int>& ids) {
  bool removed = false;
  for (int id : ids)
    if (auto it = bps_.find(id); it != bps_.end() && it->second.temporary) {
      bps_.erase(it);
      removed = true;
    }
  if (!removed) return {};
  return sync_breakpoints();
}

// --- Deciding a hit -------------------------------------------------------------------------------------

BreakDecision Breakpoints::breakpoint_hit(const StopEvent& ev, bool count) {
  BreakDecision d;
  if (!insp_.readable()) return d;
  const DeviceContext& ctx = s_.context();
  // The launch's image: an address counts in the launches of the image it came from.
  const std::optional<size_t> image = insp_.images() ? insp_.images()->image_of(ev.launch) : std::nullopt;
  insp_.select_launch(ev.launch);
  for (auto& [id, b] : bps_) {
    if (!b.enabled || b.is_watchpoint()) continue;
    // The first lane of the hit's warps (in their order) in which the condition holds.
    std::optional<Lane> lane_ok;
    for (const engine::WarpHit& h : ev.hits) {
      if (lane_ok) break;
      if (h.warp.core >= ctx.cores.size() || h.warp.slot >= ctx.cores[h.warp.core].warps.size()) continue;
      if (!address_matches(b, h.pc, image)) continue;
      if (!b.condition) {
        if (h.lanes) lane_ok = Lane{h.warp.core, h.warp.slot, uint32_t(std::countr_zero(h.lanes))};
        continue;
      }
      for (uint32_t lane : lanes_of(h.lanes)) {
        const Lane l{h.warp.core, h.warp.slot, lane};
        auto v = insp_.evaluate(*b.condition, l);
        if (!v) {
          // As gdb does: a condition that cannot be evaluated stops.
          d.errors.push_back("Error in breakpoint " + std::to_string(id) + "'s condition \"" + b.condition->text() +
                             "\": " + v.error().message);
          lane_ok = l;
          break;
        }
        if (*v) {
          lane_ok = l;
          break;
        }
      }
    }
    if (!lane_ok) continue;
    // As gdb counts: one hit per stop however many warps reached it; a hit whose condition is false
    // is no hit; an ignored one is.
    if (count) {
      ++b.hits;
      if (b.ignore) {
        --b.ignore;
        continue;
      }
    }
    d.ids.push_back(id);
    if (b.condition && !d.lane) d.lane = *lane_ok;
  }
  return d;
}

std::vector<WatchReport> Breakpoints::watch_hit(const StopEvent& ev, bool count) {
  std::vector<WatchReport> out;
  insp_.select_launch(ev.launch);
  for (const engine::WatchEvent& w : ev.watches) {
    Breakpoint* ub = nullptr;
    for (auto& [id, b] : bps_)
      if (b.is_watchpoint() && b.engine_watch == w.watchpoint) ub = &b;
    if (!ub || !ub->enabled) continue;
    // The value now (after the access), in the accessing warp's view (its core's local memory).
    const Lane accessor{w.warp.core, w.warp.slot, w.lanes ? uint32_t(std::countr_zero(w.lanes)) : 0u};
    auto now = insp_.read(accessor, ub->watch.addr, ub->watch.len);
    if (!now) continue;
    const bool wrote = (w.kind & kWatchWrite) != 0;
    const bool changed = wrote && w.old_bytes != *now;
    // gdb's rules: watch stops when the value changed; rwatch on reads; awatch on any access.
    if (ub->watch_command == "watch" && !changed) continue;
    if (ub->watch_command == "rwatch" && !(w.kind & kWatchRead)) continue;
    if (ub->condition) {
      bool any = false;
      for (uint32_t lane : lanes_of(w.lanes)) {
        auto v = insp_.evaluate(*ub->condition, Lane{w.warp.core, w.warp.slot, lane});
        if (!v || *v) {
          any = true;
          break;
        }
      }
      if (!any) continue;
    }
    if (count) ++ub->hits;
    WatchReport r;
    r.number = ub->id;
    r.kind = ub->watch_command;
    r.expression = ub->location;
    r.address = w.addr;
    r.core = w.warp.core;
    r.warp = w.warp.slot;
    r.pc = w.pc;
    r.lanes = lanes_of(w.lanes);
    if (wrote && w.old_bytes.size() == now->size()) r.old_value = format_value(*ub, w.old_bytes);
    r.new_value = format_value(*ub, *now);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<int> Breakpoints::placed_at(const StopEvent& hit) const {
  std::vector<int> ids;
  for (const auto& [id, b] : bps_)
    for (const engine::WarpHit& h : hit.hits)
      if (b.enabled && !b.is_watchpoint() &&
          address_matches(b, h.pc, insp_.images() ? insp_.images()->image_of(hit.launch) : std::nullopt) &&
          std::find(ids.begin(), ids.end(), id) == ids.end())
        ids.push_back(id);
  return ids;
}

bool Breakpoints::accept(const StopEvent& hit) {
  Inspector::HitScope at_hit(insp_);
  if (hit.reason == StopReason::Breakpoint) return !breakpoint_hit(hit, false).ids.empty();
  if (hit.reason == StopReason::Watchpoint) return !watch_hit(hit, false).empty();
  return false;
}

std::string Breakpoints::format_value(const Breakpoint& b, const std::vector<uint8_t>& bytes) const {
  CValue v;
  v.type = b.watch_ctype;
  v.bytes = bytes;
  if (v.type && v.type->size == bytes.size()) return format_c(v, 0);
  std::string s = "{";
  for (size_t i = 0; i < bytes.size(); ++i) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%s0x%02x", i ? ", " : "", bytes[i]);
    s += buf;
  }
  return s + "}";
}

}  // namespace vx::debug
