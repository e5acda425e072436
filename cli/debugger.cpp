#include "cli/debugger.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>

#include <unistd.h>

#include "checkpoint/store.hpp"
#include "cli/command_table.hpp"
#include "cli/kernel_symbols.hpp"
#include "device/isa.hpp"
#include "device/registers.hpp"

namespace vx::cli {

namespace {

using engine::StopEvent;
using engine::StopReason;

constexpr uint32_t kMaxDisassembly = 4096;  // instructions

// --- SIGINT while a resume runs -------------------------------------------------------------------

std::atomic<engine::Session*> g_running{nullptr};

extern "C" void on_sigint(int) {
  if (engine::Session* s = g_running.load()) s->interrupt();
}

// Installs the handler for the lifetime of a resume or step.
class InterruptGuard {
 public:
  explicit InterruptGuard(engine::Session& s) {
    g_running.store(&s);
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    installed_ = sigaction(SIGINT, &sa, &old_) == 0;
  }
  ~InterruptGuard() {
    if (installed_) sigaction(SIGINT, &old_, nullptr);
    g_running.store(nullptr);
  }

 private:
  struct sigaction old_;
  bool installed_ = false;
};

// While a resume runs: the kernel's console output as it comes, and on a terminal, after a second,
// a progress line on stderr (erased when the run stops).
class ProgressLine {
 public:
  ProgressLine(engine::Session& s, std::function<void()> console) : s_(s), start_(Clock::now()) {
    const bool tty = isatty(STDERR_FILENO);
    s_.set_progress([this, tty, console = std::move(console)](uint32_t pass, uint64_t instructions) {
      console();
      if (!tty || Clock::now() - start_ < std::chrono::seconds(1)) return;
      std::fprintf(stderr, "\r[running: pass %u, %llu instructions; Ctrl-C stops]", pass,
                   static_cast<unsigned long long>(instructions));
      std::fflush(stderr);
      shown_ = true;
    });
  }
  ~ProgressLine() {
    s_.set_progress(nullptr);
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  using Clock = std::chrono::steady_clock;
  engine::Session& s_;
  Clock::time_point start_;
  bool shown_ = false;
};

// --- Small helpers ---------------------------------------------------------------------------------

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string coords(const std::array<uint32_t, 3>& c) {
  return std::to_string(c[0]) + "," + std::to_string(c[1]) + "," + std::to_string(c[2]);
}

std::vector<uint32_t> lanes_of(uint32_t mask) {
  std::vector<uint32_t> out;
  for (uint32_t l = 0; l < 32; ++l)
    if (mask >> l & 1) out.push_back(l);
  return out;
}

std::string pad(std::string s, size_t n) {
  if (s.size() < n) s.append(n - s.size(), ' ');
  return s;
}

const char* wait_name(WarpWait w) {
  switch (w) {
    case WarpWait::None: return "-";
    case WarpWait::Barrier: return "barrier";
    case WarpWait::BarrierWait: return "barrier-wait";
    case WarpWait::Spawn: return "spawn";
  }
  return "?";
}

}  // namespace

// --- Construction and dispatch ----------------------------------------------------------------------

Debugger::Debugger(engine::Session& session, const engine::Symbols* symbols, const GridLaunch& launch, Sink& sink)
    : s_(session),
      sym_(symbols),
      insp_(session, symbols, nullptr, launch),
      bps_(session, insp_),
      timeline_(session, symbols),
      launch_(launch),
      sink_(sink) {
  // The runtime is not the user's code: step goes through its inline helpers (barrier, split/join,
  // CTA ids) and its functions (vx_serial, vx_printf: trampolines into the user's callees, which
  // step does enter) unless `skip delete` says otherwise.
  for (const char* file : {"vx_intrinsics.h", "vx_runtime.h", "vx_print.h", "start.S", "vx_runtime.c", "vx_print.c"})
    skips_.push_back(SkipRule{next_skip_++, true, file, true});
}

Debugger::~Debugger() = default;

void Debugger::out(const std::string& text, const nlohmann::json& data) { sink_.output(command_, text, data); }
void Debugger::err(const std::string& message) {
  ++errors_;
  sink_.error(command_, message);
}
void Debugger::err(const Error& e) {
  if (e.code == ErrorCode::Internal) internal_error_ = true;
  err(e.message);
}
void Debugger::usage(const std::string& message) { err(message + " (try \"help\")"); }

const std::vector<CommandEntry<Debugger::Handler>>& Debugger::commands() {
  static const std::vector<CommandEntry<Handler>> t = CommandTables::commands<Handler>();
  return t;
}

const std::vector<CommandEntry<Debugger::InfoHandler>>& Debugger::info_commands() {
  static const std::vector<CommandEntry<InfoHandler>> t = CommandTables::info<InfoHandler>();
  return t;
}

bool Debugger::no_args(const std::string& what, const std::string& args) {
  if (args.empty()) return true;
  usage("\"" + what + "\" takes no arguments");
  return false;
}

bool Debugger::execute(const std::string& line) {
  if (collecting_.active) {
    const std::string t(trim(line));
    if (t != "end") {
      if (!t.empty()) collecting_.lines.push_back(t);
      return true;
    }
    collecting_.active = false;
    if (!collecting_.define.empty()) user_commands_[collecting_.define] = collecting_.lines;
    for (int id : collecting_.bps)
      if (UserBreakpoint* b = bps_.find(id)) b->commands = collecting_.lines;
    return true;
  }
  return run_command([&] { return execute_one(line); });
}

bool Debugger::as_command(const std::string& text, const std::function<void()>& work) {
  if (in_command_) {
    work();
    return !quit_;
  }
  return run_command([&] {
    command_ = std::string(trim(text));
    command_start_ = std::chrono::steady_clock::now();
    work();
    return !quit_;
  });
}

bool Debugger::run_command(const std::function<bool()>& first) {
  struct InCommand {
    bool& flag;
    bool was = flag;
    explicit InCommand(bool& f) : flag(f) { flag = true; }
    ~InCommand() { flag = was; }
  } in(in_command_);
  bool go_on = first() && !refuse_damage();
  // Breakpoint commands run after the command that stopped there (their own stops queue more).
  while (go_on && !pending_.empty() && nesting_ == 0) {
    const auto [id, next] = pending_.front();
    pending_.erase(pending_.begin());
    const int before = errors_;
    go_on = execute_one(next);
    if (errors_ != before) {
      // As gdb: a breakpoint command that fails ends its list (a dprintf whose argument cannot be
      // evaluated stays stopped there instead of going on); say whose it was and where it stopped.
      pending_.clear();
      std::string where;
      if (const WarpState* w = focus_warp(); w && state_ == State::Stopped)
        where = ": stopped at " + location_text(w->pc);
      const UserBreakpoint* b = bps_.find(id);
      const bool dprintf = b && b->silent() && b->commands.size() == 3 && b->commands[2] == "continue";
      err(std::string(dprintf ? "dprintf " : "the commands of breakpoint ") + std::to_string(id) + " failed at \"" +
          next + "\"" + where);
    }
  }
  if (!go_on) pending_.clear();
  return go_on;
}

bool Debugger::execute_one(const std::string& line) {
  command_ = std::string(trim(line));
  // User commands (define) by their exact name.
  if (auto words = split_words(command_); !words.empty())
    if (auto it = user_commands_.find(words[0]); it != user_commands_.end()) {
      if (nesting_ > 16) {
        err("\"" + words[0] + "\": user commands nest more than 16 deep");
        return true;
      }
      ++nesting_;
      bool go_on = true;
      for (const std::string& l : std::vector<std::string>(it->second))
        if (go_on) go_on = execute_one(l);
      --nesting_;
      return go_on;
    }
  command_start_ = std::chrono::steady_clock::now();
  auto cl = parse_command_line(line);
  if (!cl) {
    usage(cl.error().message);
    return true;
  }
  if (cl->name.empty()) return true;
  // The entry the name resolved to (the Debugger's table has command_table()'s entries, in order).
  commands()[cl->entry].run(*this, *cl);
  return !quit_;
}

// --- State at the stop ---------------------------------------------------------------------------------

uint32_t Debugger::nt() const { return s_.config().threads; }

const WarpState* Debugger::focus_warp() const {
  if (!focus_.valid || !s_.stopped()) return nullptr;
  const DeviceContext& ctx = s_.context();
  if (focus_.core >= ctx.cores.size() || focus_.slot >= ctx.cores[focus_.core].warps.size()) return nullptr;
  const WarpState& w = ctx.cores[focus_.core].warps[focus_.slot];
  return w.active ? &w : nullptr;
}

std::string Debugger::describe_pc(uint32_t pc, const engine::Symbols* in) const {
  const engine::Symbols* sym = in ? in : sym_;
  std::string s = hex32(pc);
  if (sym)
    if (auto d = sym->describe(pc)) s += " <" + *d + ">";
  return s;
}

const engine::Symbols* Debugger::address_symbols(const UserBreakpoint& b, size_t i) const {
  const debug::Images* images = insp_.images();
  if (images && i < b.address_images.size() && b.address_images[i] >= 0) {
    const auto& img = images->at(size_t(b.address_images[i]));
    return img.symbols ? &*img.symbols : nullptr;
  }
  return sym_;
}

void Debugger::select_launch(uint32_t launch) {
  insp_.select_launch(launch);
  sym_ = insp_.symbols();
  vars_ = insp_.variables();
  timeline_.set_symbols(sym_);
}

const engine::Symbols* Debugger::launch_symbols(uint32_t launch) const {
  const debug::Images* images = insp_.images();
  if (!images) return sym_;
  const debug::Images::Image* img = images->for_launch(launch);
  return img && img->symbols ? &*img->symbols : nullptr;
}

void Debugger::images_changed() { (void)bps_.refresh(); }

void Debugger::set_images(const debug::Images* images) {
  insp_.set_images(images);
  bps_.set_pending_allowed(images != nullptr);
}

std::string Debugger::location_text(uint32_t pc, const engine::Symbols* in) const {
  const engine::Symbols* sym = in ? in : sym_;
  if (!sym) return describe_pc(pc);
  auto loc = sym->locate(pc);
  std::string fn;
  if (auto f = sym->function_at(pc)) fn = f->name;
  if (loc && !loc->function.empty()) {
    if (fn.empty())
      fn = loc->function;
    else if (loc->function != fn)
      fn += ", inlined " + loc->function;
  }
  std::string s = fn.empty() ? describe_pc(pc, sym) : fn;
  if (loc && loc->line) s += " (" + base_name(loc->file) + ":" + std::to_string(loc->line) + ")";
  return s;
}

bool Debugger::refuse_damage() {
  const checkpoint::Store* store = s_.store();
  const auto damage = store ? store->damage() : std::nullopt;
  if (!damage || damage_reported_) return damage_reported_;
  damage_reported_ = true;
  err("the recording is damaged: " + *damage + "; it cannot be trusted, the session ends (exit 65)");
  quit_ = true;
  return true;
}

void Debugger::drain_console() {
  std::ostringstream os;
  console_.feed(s_.take_console(), os);
  std::string text = os.str();
  size_t i = 0;
  while (i < text.size()) {
    size_t nl = text.find('\n', i);
    if (nl == std::string::npos) nl = text.size();
    sink_.console(text.substr(i, nl - i));
    i = nl + 1;
  }
}

bool Debugger::ensure_can_run() {
  if (state_ == State::Exited) {
    err("The kernel has exited; there is nothing to run.");
    return false;
  }
  if (state_ == State::Killed) {
    err("The kernel cannot go on: " + killed_message_);
    return false;
  }
  return true;
}

bool Debugger::ensure_stopped() {
  if (s_.stopped()) return true;
  switch (state_) {
    case State::NotStarted: err("The kernel is not running: \"continue\" starts it."); break;
    case State::Exited: err("The kernel has exited."); break;
    case State::Killed: err("The kernel cannot go on: " + killed_message_); break;
    case State::Stopped: err("The kernel is not stopped."); break;
  }
  return false;
}

bool Debugger::ensure_focus() {
  if (!ensure_stopped()) return false;
  if (!focus_warp()) {
    err("No focus: no warp is selected (\"info warps\" lists them; \"core C warp W\" selects one).");
    return false;
  }
  return true;
}

// --- Stops --------------------------------------------------------------------------------------------

void Debugger::set_default_focus(const StopEvent& ev, std::optional<Lane> hit_lane) {
  if (!insp_.readable()) {
    focus_.valid = false;
    return;
  }
  // The one rule (debug/lane.hpp), the GDB server's too. The lane the move was for: a step's; a
  // `continue` is for every lane, so a breakpoint stop is about the lane that hit.
  std::optional<Lane> preferred;
  if (focus_.valid && ev.reason != StopReason::Breakpoint) preferred = focus_;
  if (goto_lane_ && debug::is_resident(s_.context(), nt(), *goto_lane_) &&
      (s_.context().cores[goto_lane_->core].warps[goto_lane_->slot].tmask >> goto_lane_->lane & 1)) {
    set_focus(*goto_lane_);  // goto N: the lane the mark was about
    return;
  }
  auto l = debug::stop_lane(ev, s_.context(), nt(), preferred, hit_lane);
  if (l)
    set_focus(*l);
  else
    focus_.valid = false;
  // At a hit, the stop's mark records the lane (goto N comes back to it).
  if (focus_.valid && s_.evaluating_hit()) s_.set_stop_lane(focus_.warp(), focus_.lane);
}

std::vector<int> Debugger::breakpoint_stop(const StopEvent& ev, bool count,
                                           const std::optional<debug::BreakDecision>& decided) {
  const debug::BreakDecision d = decided ? *decided : bps_.breakpoint_hit(ev, count);
  for (const std::string& e : d.errors) err(e);
  if (!d.ids.empty()) set_default_focus(ev, d.lane);
  return d.ids;
}

StopView Debugger::make_stop_view(const StopEvent& ev, const std::vector<int>& bps, bool show_disasm) {
  StopView v;
  v.elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - command_start_).count();
  v.reason = engine::stop_reason_name(ev.reason);
  v.launch = ev.launch;
  v.pass = ev.pass;
  v.instructions = ev.instructions;
  v.recorded = ev.recorded;
  v.breakpoints = bps;
  if (host_workload_ || s_.launch_args().size() > 1) v.launch_label = launch_label(ev.launch);
  switch (ev.reason) {
    case StopReason::Breakpoint: {
      const UserBreakpoint* only = bps.size() == 1 ? bps_.find(bps[0]) : nullptr;
      const bool temp = only && only->temporary;
      std::string ids;
      for (int id : bps) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
      v.title = std::string(temp ? "Temporary breakpoint " : bps.size() > 1 ? "Breakpoints " : "Breakpoint ") + ids;
      break;
    }
    case StopReason::Step: v.title = "Step"; break;
    case StopReason::Exception: {
      const DeviceException& x = ev.exception;
      v.title = std::string("Device exception: ") + cause_name(x.cause);
      if (x.cause == Cause::IllegalInstruction)
        v.title += " (instruction " + hex32(x.addr) + ")";
      else if (x.cause == Cause::LoadFault || x.cause == Cause::StoreFault || x.cause == Cause::MisalignedLoad ||
               x.cause == Cause::MisalignedStore || x.cause == Cause::FetchFault || x.cause == Cause::MisalignedFetch)
        v.title += " at address " + hex32(x.addr);
      break;
    }
    case StopReason::Assertion: v.title = "Assertion failed"; break;
    case StopReason::Watchdog: v.title = "Watchdog: the launch exceeded its instruction budget"; break;
    case StopReason::Interrupt: v.title = "Interrupted"; break;
    case StopReason::InstructionCount: v.title = "Stopped"; break;
    case StopReason::Exited:
      v.exit_code = ev.exit_code;
      if (v.instructions == 0) v.instructions = s_.stats().launch_instructions;
      break;
    case StopReason::Killed: v.message = ev.message; break;
    case StopReason::Watchpoint: {
      std::string ids;
      for (const auto& w : last_watches_) ids += (ids.empty() ? "" : ", ") + std::to_string(w.number);
      v.title = "Watchpoint " + ids;
      break;
    }
    case StopReason::HistoryStart: v.title = "No more reverse-execution history"; break;
    case StopReason::EndOfRecording: v.message = ev.message; break;
  }
  if (ev.reason == StopReason::Exception || ev.reason == StopReason::Assertion || ev.reason == StopReason::Watchdog) {
    v.has_exception = true;
    v.cause = cause_name(ev.exception.cause);
    v.exception_pc = ev.exception.pc;
    v.exception_address = ev.exception.addr;
    v.exception_core = ev.exception.core;
    v.exception_warp = ev.exception.warp;
    v.exception_lane = ev.exception.lane;
  }
  if (ev.reason == StopReason::Step && !ev.hits.empty()) {
    const auto& h = ev.hits[0].warp;
    const DeviceContext& ctx = s_.context();
    if (s_.stopped() && h.core < ctx.cores.size() && h.slot < ctx.cores[h.core].warps.size() &&
        !ctx.cores[h.core].warps[h.slot].active)
      v.message = "core " + std::to_string(h.core) + " warp " + std::to_string(h.slot) +
                  " finished: the stepped thread is done (the focus moved to another warp)";
  }
  const WarpState* fw = focus_warp();
  for (const engine::WarpHit& h : ev.hits)
    v.hits.push_back(StopView::Hit{h.warp.core, h.warp.slot, h.pc, lanes_of(h.lanes),
                                   fw && fw->pc != h.pc ? location_text(h.pc) : std::string()});
  const WarpState* w = focus_warp();
  if (w && ev.reason != StopReason::Exited && ev.reason != StopReason::Killed) {
    v.has_focus = true;
    v.core = focus_.core;
    v.warp = focus_.slot;
    v.lane = focus_.lane;
    v.lanes = lanes_of(w->tmask);
    v.cta = w->block_id;
    v.thread = insp_.thread_idx(focus_);
    v.pc = w->pc;
    // A watchpoint stop stands right after the access: its source position is the accessing
    // instruction's (the watch line's pc), not the next one's.
    const uint32_t at =
        ev.reason == StopReason::Watchpoint && !last_watches_.empty() ? last_watches_.front().pc : w->pc;
    if (sym_) {
      if (auto f = sym_->function_at(at)) v.function = f->name;
      if (auto loc = sym_->locate(at)) {
        if (v.function.empty())
          v.function = loc->function;
        else if (!loc->function.empty() && loc->function != v.function)
          v.inlined = loc->function;
        v.file = loc->file;
        v.line = loc->line;
        if (loc->line)
          if (auto text = sym_->source_line(loc->file, loc->line)) v.source = *text;
      }
    }
    if (auto word = read_word(w->pc)) v.disassembly = disassemble(*word, w->pc);
    v.show_disassembly = show_disasm;
  }
  return v;
}

void Debugger::run_and_report(const std::function<Result<RunFn>()>& make, uint32_t count, bool show_disasm) {
  if (!ensure_can_run()) return;
  for (uint32_t i = 0; i < count; ++i) {
    // What the focus warp holds before the request: a step that ends with other work in the slot
    // means the stepped thread finished (the slot took the next CTA).
    std::optional<std::pair<uint32_t, uint32_t>> held;
    const Focus stepped = focus_;
    if (const WarpState* w = focus_warp()) held = std::make_pair(w->cta_linear, w->cta_rank);
    // A step's stop is about the stepped lane: its mark records it.
    if (focus_.valid) s_.set_stop_lane(focus_.warp(), focus_.lane);
    auto request = make();
    if (!request) {
      err(request.error());
      return;
    }
    Result<StopEvent> ev = make_error("");
    std::vector<int> bps;
    for (;;) {
      {
        InterruptGuard guard(s_);
        ProgressLine progress(s_, [this] { drain_console(); });
        bps_.clear_pending();
        ev = (*request)();
      }
      drain_console();
      if (!ev) break;
      select_launch(ev->launch);
      if (ev->reason == StopReason::Watchpoint) {
        // The engine asked the filter at the hit (a live session stops at every hit and asks here).
        last_watches_ = bps_.pending_watch() ? *bps_.pending_watch() : bps_.watch_hit(*ev, true);
        if (!last_watches_.empty()) break;
        continue;  // no watched value changed, or every condition is false: go on
      }
      if (ev->reason != StopReason::Breakpoint) break;
      // The engine asked the breakpoint filter at the hit (the constructor's): its answer stands.
      // (A live session decides at its own stops.)
      bps = breakpoint_stop(*ev, true, bps_.pending_break());
      if (!bps.empty()) break;
    }
    if (!ev) {
      err(ev.error());
      if (s_.last_stop().reason == StopReason::Killed && !s_.stopped()) {
        state_ = State::Killed;
        killed_message_ = s_.last_stop().message;
        killed_code_ = s_.last_stop().error;
        focus_.valid = false;
      }
      return;
    }
    // The state the stop leaves (the same as a time move's): focus, frame 0, list and x afresh.
    settle(*ev, bps);
    bool plain_step = ev->reason == StopReason::Step && focus_warp() && !ev->hits.empty() &&
                      ev->hits[0].warp == engine::WarpId{focus_.core, focus_.slot};
    std::string note;
    if (plain_step && held) {
      const WarpState* w = focus_warp();
      if (std::make_pair(w->cta_linear, w->cta_rank) != *held) {
        note = "the stepped thread finished; core " + std::to_string(stepped.core) + " warp " +
               std::to_string(stepped.slot) + " now runs cta " + coords(w->block_id);
        plain_step = false;
      }
    }
    if (i + 1 < count && plain_step) continue;
    StopView view = make_stop_view(*ev, bps, show_disasm);
    if (!note.empty()) view.message = note;
    if (ev->reason == StopReason::Watchpoint) view.watches = last_watches_;
    // Breakpoint commands that start with `silent` (dprintf's do) replace the stop's report.
    const bool silent = !bps.empty() && std::all_of(bps.begin(), bps.end(), [&](int id) {
      const UserBreakpoint* b = bps_.find(id);
      return b && b->silent();
    });
    if (!silent) {
      sink_.stop(view);
      show_displays();
    }
    report_divergence();
    note_store();
    last_bps_ = bps;
    queue_breakpoint_commands(bps);
    // Temporary breakpoints go once they stopped.
    if (auto r = bps_.stopped_at(bps); !r) err(r.error());
    list_next_ = 0;
    x_next_.reset();
    return;
  }
}

// --- Run control -----------------------------------------------------------------------------------------

void Debugger::cmd_continue(Args a) {
  if (!a.args.empty()) {
    // continue N: the breakpoint that stopped here lets its next N - 1 hits pass, as in gdb.
    auto n = parse_count(a.args);
    if (!n) return usage("continue: " + n.error().message);
    if (state_ != State::Stopped || s_.last_stop().reason != StopReason::Breakpoint || last_bps_.empty())
      return err("continue N: not stopped at a breakpoint");
    bool any = false;
    for (int id : last_bps_)
      if (UserBreakpoint* b = bps_.find(id)) {
        b->ignore = *n - 1;
        any = true;
        out("Will ignore next " + std::to_string(*n - 1) + " crossings of breakpoint " + std::to_string(id) +
            ".  Continuing.");
      }
    // The breakpoint is gone (a temporary one, or deleted since): gdb says so and goes on.
    if (!any) out("Not stopped at any breakpoint; argument ignored.");
  }
  resume();
}

void Debugger::resume() {
  as_command("continue", [this] {
    run_and_report([this]() -> Result<RunFn> { return RunFn([this]() { return s_.resume(); }); }, 1, false);
  });
}

Result<Debugger::RunFn> Debugger::make_move(Result<engine::StepPolicy> policy) {
  if (!policy) return policy.error();
  if (!focus_warp()) return make_error("No focus warp to step.");
  const engine::WarpId id = focus_.warp();
  const uint32_t lanes = 1u << focus_.lane;
  return RunFn([this, id, lanes, p = std::move(policy).value()]() { return s_.step(id, lanes, p); });
}

// stepi N / nexti N: one run to the count (one stop, one checkpoint), interruptible like continue.
void Debugger::cmd_stepi(Args a, bool over_calls) {
  auto n = parse_count(a.args);
  if (!n) return usage(std::string(over_calls ? "nexti" : "stepi") + ": " + n.error().message);
  if (!ensure_can_run() || !ensure_focus()) return;
  const uint32_t count = *n;
  run_and_report([this, over_calls, count]() { return make_move(debug::plan_stepi(insp_, focus_, count, over_calls)); },
                 1, true);
}

void Debugger::cmd_step(Args a, bool over_calls) {
  auto n = parse_count(a.args);
  if (!n) return usage(std::string(over_calls ? "next" : "step") + ": " + n.error().message);
  if (!ensure_can_run() || !ensure_focus()) return;
  run_and_report([this, over_calls]() { return make_move(debug::plan_line(insp_, focus_, over_calls, false, skips_)); },
                 *n, false);
}

void Debugger::cmd_finish(Args) {
  if (!ensure_can_run() || !ensure_focus()) return;
  const Lane l = focus_;
  auto plan = debug::plan_finish(insp_, l, frame_level_);
  if (!plan) return err(plan.error());
  const FrameLevel& sel = plan->frame;
  out("Run till exit from #" + std::to_string(frame_level_) + "  " +
      (sel.function.empty() ? location_text(sel.pc) : sel.function) +
      (sel.line ? " (" + base_name(sel.file) + ":" + std::to_string(sel.line) + ")" : ""));
  run_and_report([this, &plan]() { return make_move(plan->policy); }, 1, false);
  if (sel.inlined || state_ != State::Stopped || s_.last_stop().reason != StopReason::Step || focus_.warp() != l.warp())
    return;
  const Lane at{l.core, l.slot, l.lane};
  auto a0 = insp_.reg(at, 10);
  if (!a0) return;
  if (!plan->known_type) {
    // No debug information: the integer register the calling convention returns in.
    return out("Value returned in $a0: " + std::to_string(int32_t(*a0)) + " (" + hex32(*a0) + ")", {{"returned", *a0}});
  }
  const engine::CType* rtype = plan->return_type;
  if (!rtype) return;  // void
  auto v = insp_.return_value(at, *rtype);
  if (!v)
    return out("Value returned has type: " + engine::type_name(*rtype) + ". " + v.error().message,
               {{"returned_type", engine::type_name(*rtype)}});
  nlohmann::json j = {{"returned", *a0}, {"text", format_c(*v, 0)}, {"type", engine::type_name(*rtype)}};
  if (auto i = c_to_int(*v)) j["returned"] = uint32_t(*i);
  out("Value returned is " + format_c(*v, 0), j);
}

// --- Breakpoints -----------------------------------------------------------------------------------------

Result<int> Debugger::place_breakpoint(const std::string& location, const std::string& condition, bool temporary) {
  return bps_.add_breakpoint(location, condition, temporary, focus_warp() ? std::optional<Lane>(focus_) : std::nullopt);
}

void Debugger::cmd_break(Args a, bool temporary) { add_breakpoint(a.args, temporary); }

bool Debugger::add_breakpoint(const std::string& spec_text, bool temporary) {
  const int before = errors_;
  as_command(std::string(temporary ? "tbreak " : "break ") + spec_text, [&] {
    auto spec = parse_break_spec(spec_text);
    if (!spec) return usage(spec.error().message);
    // After the end, breakpoints still serve reverse moves when the session records.
    if ((state_ == State::Exited || state_ == State::Killed) && !s_.store())
      return err("The kernel has ended; breakpoints have no effect (no recording to go back in).");
    auto id = place_breakpoint(spec->location, spec->condition, temporary);
    if (!id) return err(id.error());
    const UserBreakpoint& b = *bps_.find(*id);
    if (b.pending) {
      // gdb's `set breakpoint pending on`: a kernel image the program uploads later may have it.
      return out(std::string(temporary ? "Temporary breakpoint " : "Breakpoint ") + std::to_string(*id) + " (" +
                     b.location + ") pending: no kernel image loaded so far has it.",
                 {{"breakpoint", *id}, {"addresses", b.addresses}, {"pending", true}});
    }
    std::string text = std::string(temporary ? "Temporary breakpoint " : "Breakpoint ") + std::to_string(*id) + " at " +
                       hex32(b.addresses[0]);
    if (const engine::Symbols* sym = address_symbols(b, 0)) text += ": " + location_text(b.addresses[0], sym);
    text += ".";
    if (b.addresses.size() > 1) text += " (" + std::to_string(b.addresses.size()) + " locations)";
    if (b.condition) text += " Condition: " + b.condition->text();
    out(text, {{"breakpoint", *id}, {"addresses", b.addresses}});
  });
  return errors_ == before;
}

void Debugger::cmd_delete(Args a) {
  auto ids = parse_id_list(a.args);
  if (!ids) return usage(ids.error().message);
  if (auto r = bps_.remove(*ids); !r) err(r.error());
}

void Debugger::cmd_enable(Args a, bool enable) {
  auto ids = parse_id_list(a.args);
  if (!ids) return usage(ids.error().message);
  if (auto r = bps_.set_enabled(*ids, enable); !r) err(r.error());
}

void Debugger::cmd_condition(Args a) {
  std::string_view args = a.args;
  size_t sp = args.find_first_of(" \t");
  auto id = parse_u32(args.substr(0, sp));
  if (!id) return usage("condition: expected a breakpoint number: " + id.error().message);
  if (!bps_.find(int(*id))) return err("No breakpoint number " + std::to_string(*id) + ".");
  const std::string cond(sp == std::string_view::npos ? std::string_view() : trim(args.substr(sp)));
  if (auto r = bps_.set_condition(int(*id), cond); !r) return usage(r.error().message);
  if (cond.empty()) out("Breakpoint " + std::to_string(*id) + " now unconditional.");
}

// --- info ---------------------------------------------------------------------------------------------------

void Debugger::cmd_info(Args a) {
  std::string_view args = a.args;
  size_t sp = args.find_first_of(" \t");
  auto sub = resolve_info_subcommand(args.substr(0, sp));
  if (!sub) return usage(sub.error().message);
  const std::string rest = sp == std::string_view::npos ? "" : std::string(trim(args.substr(sp)));
  info_commands()[*sub].run(*this, rest);
}

void Debugger::show_warps() {
  as_command("info warps", [this] { info_warps(); });
}

std::string Debugger::launch_label(uint32_t launch) const {
  if (launch == 0) return "";
  std::string label = "launch " + std::to_string(launch);
  const std::vector<LaunchGridArgs> all = s_.launch_args();
  if (const engine::Symbols* sym = launch_symbols(launch); sym && launch <= all.size())
    if (auto f = sym->function_at(all[launch - 1].entry_pc)) label += " (" + f->name + ")";
  return label;
}

void Debugger::info_launches() {
  const std::vector<LaunchGridArgs> all = s_.launch_args();
  if (all.empty()) return out("No launches yet.", {{"launches", nlohmann::json::array()}});
  const uint32_t current = s_.last_stop().launch;
  auto dims3 = [](const std::array<uint32_t, 3>& d) {
    return std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]);
  };
  std::string text = "  Launch  Kernel              Entry       Grid        Block       LMem    Argument\n";
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < all.size(); ++i) {
    const LaunchGridArgs& l = all[i];
    std::string kernel = "??";
    const uint32_t n = uint32_t(i + 1);
    if (const engine::Symbols* sym = launch_symbols(n))
      if (auto f = sym->function_at(l.entry_pc)) kernel = f->name;
    text += std::string(n == current ? "* " : "  ") + pad(std::to_string(n), 8) + pad(kernel, 20) +
            pad(hex32(l.entry_pc), 12) + pad(dims3(l.grid), 12) + pad(dims3(l.block), 12) +
            pad(std::to_string(l.lmem_bytes), 8) + hex32(l.arg_ptr) + "\n";
    list.push_back({{"launch", n},
                    {"kernel", kernel},
                    {"entry", l.entry_pc},
                    {"grid", l.grid},
                    {"block", l.block},
                    {"lmem", l.lmem_bytes},
                    {"argument", l.arg_ptr},
                    {"current", n == current}});
  }
  out(text, {{"launches", list}});
}

void Debugger::info_breakpoints() {
  if (bps_.all().empty()) return out("No breakpoints.", {{"breakpoints", nlohmann::json::array()}});
  std::string text = "Num  Type             Enb  Address     What\n";
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [id, b] : bps_.all()) {
    if (b.is_watchpoint()) {
      describe_watchpoint(b, &text, &list);
      continue;
    }
    std::string what = b.location;
    if (b.addresses.size() == 1 && address_symbols(b, 0))
      what = "in " + location_text(b.addresses[0], address_symbols(b, 0));
    else if (b.addresses.size() > 1)
      what = b.location + " (" + std::to_string(b.addresses.size()) + " locations)";
    text += pad(std::to_string(id), 5) + pad(b.temporary ? "tbreakpoint" : "breakpoint", 17) +
            pad(b.enabled ? "y" : "n", 5) +
            pad(b.addresses.size() == 1 ? hex32(b.addresses[0])
                : b.addresses.empty()   ? "<PENDING>"
                                        : "<MULTIPLE>",
                12) +
            what + "\n";
    if (b.addresses.size() > 1)
      for (size_t i = 0; i < b.addresses.size(); ++i)
        text += pad(std::to_string(id) + "." + std::to_string(i + 1), 27) + pad(hex32(b.addresses[i]), 12) +
                location_text(b.addresses[i], address_symbols(b, i)) + "\n";
    if (b.condition) text += "\tstop only if " + b.condition->text() + "\n";
    if (b.hits) text += "\tbreakpoint already hit " + std::to_string(b.hits) + (b.hits == 1 ? " time\n" : " times\n");
    nlohmann::json j = {{"id", id},
                        {"location", b.location},
                        {"addresses", b.addresses},
                        {"enabled", b.enabled},
                        {"temporary", b.temporary},
                        {"hits", b.hits},
                        {"condition", b.condition ? nlohmann::json(b.condition->text()) : nlohmann::json(nullptr)}};
    if (b.where) {
      j["function"] = b.where->function;
      j["file"] = b.where->file;
      j["line"] = b.where->line;
    }
    list.push_back(j);
  }
  out(text, {{"breakpoints", list}});
}

void Debugger::info_ctas() {
  if (!ensure_stopped()) return;
  engine::ThreadLists l = s_.lists();
  const auto& grid = s_.context().launch.grid;
  auto cta_coords = [&](uint64_t u) {
    uint64_t gx = std::max(1u, grid[0]), gy = std::max(1u, grid[1]);
    return std::to_string(u % gx) + "," + std::to_string((u / gx) % gy) + "," + std::to_string(u / (gx * gy));
  };
  std::string text;
  nlohmann::json data;
  auto one = [&](const char* name, const char* key, const std::vector<engine::UnitRange>& v, bool show_coords) {
    uint64_t n = 0;
    std::string ranges;
    nlohmann::json jr = nlohmann::json::array();
    for (const auto& r : v) {
      n += r.count;
      ranges += (ranges.empty() ? "" : ", ") + std::to_string(r.first);
      if (r.count > 1)
        ranges += "-" + std::to_string(r.first + r.count - 1);
      else if (show_coords)
        ranges += " (" + cta_coords(r.first) + ")";
      jr.push_back({r.first, r.count});
    }
    text += pad(std::string(name) + ":", 14) + std::to_string(n) + (n == 1 ? " CTA" : " CTAs") +
            (ranges.empty() ? "" : ": " + ranges) + "\n";
    data[key] = {{"count", n}, {"ranges", jr}};
  };
  one("complete", "complete", l.complete, false);
  one("in progress", "in_progress", l.in_progress, true);
  one("not launched", "not_launched", l.not_launched, false);
  text += "grid " + coords(grid) + " = " + std::to_string(s_.context().launch.total_units) + " CTAs";
  data["total"] = s_.context().launch.total_units;
  out(text, data);
}

void Debugger::info_warps() {
  if (!ensure_stopped()) return;
  const DeviceContext& ctx = s_.context();
  std::string text = "  core warp  cta        rank  pc          function              mask        depth  wait\n";
  nlohmann::json list = nlohmann::json::array();
  for (uint32_t c = 0; c < ctx.cores.size(); ++c)
    for (uint32_t s = 0; s < ctx.cores[c].warps.size(); ++s) {
      const WarpState& w = ctx.cores[c].warps[s];
      if (!w.active) continue;
      bool focused = focus_.valid && focus_.core == c && focus_.slot == s;
      std::string fn;
      if (sym_)
        if (auto f = sym_->function_at(w.pc)) fn = f->name;
      std::string wait = wait_name(w.wait);
      if (w.wait == WarpWait::Barrier || w.wait == WarpWait::BarrierWait)
        wait += " " + std::to_string(w.wait_barrier & 0x7fffffffu) + ((w.wait_barrier >> 31) ? " (global)" : "");
      text += std::string(focused ? "* " : "  ") + pad(std::to_string(c), 5) + pad(std::to_string(s), 6) +
              pad(coords(w.block_id), 11) + pad(std::to_string(w.cta_rank), 6) + pad(hex32(w.pc), 12) +
              pad(fn.empty() ? "??" : fn, 22) + pad(hex32(w.tmask), 12) + pad(std::to_string(w.ipdom.size()), 7) +
              wait + "\n";
      list.push_back({{"core", c},
                      {"warp", s},
                      {"cta", w.block_id},
                      {"cta_linear", w.cta_linear},
                      {"rank", w.cta_rank},
                      {"pc", w.pc},
                      {"function", fn.empty() ? nlohmann::json(nullptr) : nlohmann::json(fn)},
                      {"mask", w.tmask},
                      {"lanes", lanes_of(w.tmask)},
                      {"depth", w.ipdom.size()},
                      {"wait", wait_name(w.wait)},
                      {"focus", focused}});
    }
  if (list.empty()) text = "No warp is in progress.";
  out(text, {{"warps", list}});
}

void Debugger::info_lanes() {
  if (!ensure_focus()) return;
  const WarpState& w = *focus_warp();
  const auto& b = s_.context().launch.block;
  const uint64_t threads = uint64_t(b[0]) * b[1] * b[2];
  std::string text = "Core " + std::to_string(focus_.core) + " warp " + std::to_string(focus_.slot) + " (cta " +
                     coords(w.block_id) + ", rank " + std::to_string(w.cta_rank) + "):\n";
  nlohmann::json list = nlohmann::json::array();
  for (uint32_t l = 0; l < nt(); ++l) {
    bool active = w.tmask >> l & 1;
    uint64_t t = uint64_t(w.cta_rank) * nt() + l;
    bool exists = t < threads;
    auto ti = insp_.thread_idx(Lane{focus_.core, focus_.slot, l});
    std::string line = std::string(focus_.lane == l ? "* " : "  ") + "lane " + pad(std::to_string(l), 3) +
                       pad(active ? "active" : "inactive", 10);
    line += exists ? "thread " + pad(coords(ti), 10) : pad("(no thread)", 17);
    if (active) line += "pc " + hex32(w.pc);
    text += line + "\n";
    nlohmann::json j = {{"lane", l}, {"active", active}, {"focus", focus_.lane == l}};
    j["thread"] = exists ? nlohmann::json(ti) : nlohmann::json(nullptr);
    j["pc"] = active ? nlohmann::json(w.pc) : nlohmann::json(nullptr);
    list.push_back(j);
  }
  out(text, {{"lanes", list}});
}

void Debugger::info_registers(const std::string& args) {
  if (!ensure_focus()) return;
  const WarpState& w = *focus_warp();
  const uint32_t lane = focus_.lane;
  std::string text;
  nlohmann::json regs = nlohmann::json::object();
  auto xline = [&](unsigned r) {
    uint32_t v = r == 0 ? 0 : w.x[r * nt() + lane];
    // Pointers (ra, sp, gp, tp) as addresses, the rest as signed integers, as gdb shows them.
    std::string shown = std::to_string(int32_t(v));
    if (r >= 1 && r <= 4) {
      shown = hex(v);
      if (r == 1)
        if (sym_)
          if (auto d = sym_->describe(v)) shown += " <" + *d + ">";
    }
    text += pad(xreg_name(r), 15) + pad(hex(v), 19) + shown + "\n";
    regs[xreg_name(r)] = v;
  };
  auto fline = [&](unsigned r) {
    uint32_t bits = w.f[r * nt() + lane];
    float f;
    std::memcpy(&f, &bits, 4);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", double(f));
    text += pad(freg_name(r), 15) + pad(hex(bits), 19) + buf + "\n";
    regs[freg_name(r)] = bits;
  };
  auto pcline = [&]() {
    std::string d = describe_pc(w.pc);
    text += pad("pc", 15) + pad(hex(w.pc), 19) + (d.size() > 11 ? d.substr(11) : "") + "\n";
    regs["pc"] = w.pc;
  };
  std::vector<std::string> words = split_words(args);
  if (words.empty()) {
    for (unsigned r = 0; r < 32; ++r) xline(r);
    pcline();
  } else if (words.size() == 1 && (words[0] == "f" || words[0] == "float")) {
    for (unsigned r = 0; r < 32; ++r) fline(r);
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%x", w.fcsr);
    text += pad("fcsr", 15) + buf + "\n";
    regs["fcsr"] = w.fcsr;
  } else {
    for (const std::string& name : words) {
      auto v = parse_register(name);
      if (!v) return usage("info registers: unknown register \"" + name + "\"");
      if (v->kind == Variable::Kind::XReg)
        xline(v->index);
      else if (v->kind == Variable::Kind::FReg)
        fline(v->index);
      else
        pcline();
    }
  }
  out(text, {{"registers", regs}, {"core", focus_.core}, {"warp", focus_.slot}, {"lane", lane}});
}

// --- Data ----------------------------------------------------------------------------------------------------

void Debugger::cmd_print(Args a) {
  auto fmt = parse_print_format(a.format);
  if (!fmt) return usage(fmt.error().message);
  if (a.args.empty()) return usage("print: expected an expression");
  std::string text_arg = a.args;
  bool all_lanes = false;
  if (text_arg.rfind("-lanes", 0) == 0 && (text_arg.size() == 6 || text_arg[6] == ' ')) {
    all_lanes = true;
    text_arg = std::string(trim(text_arg.substr(6)));
    if (text_arg.empty()) return usage("print -lanes: expected an expression");
  }
  auto e = Expr::parse(text_arg);
  if (!e) return usage(e.error().message);
  // C types print it as gdb does (a character literal as a char).
  if (all_lanes || e->uses_source() || *fmt == 't' || *fmt == 'f' || text_arg.find('\'') != std::string::npos)
    return cmd_print_c(*e, *fmt, all_lanes);
  auto v = evaluate(*e, Lane{focus_.core, focus_.slot, focus_.lane});
  if (!v) return err(v.error());
  int64_t x = *v;
  std::string text = e->text() + " = ";
  auto var = e->as_variable();
  switch (*fmt) {
    case 'x': text += hex(x >= INT32_MIN && x <= int64_t(UINT32_MAX) ? uint64_t(uint32_t(x)) : uint64_t(x)); break;
    case 'd': text += std::to_string(x); break;
    // The target is 32-bit: /u and /x show the value's low 32 bits when it fits them as a signed or
    // unsigned 32-bit number (p/u -1 is 4294967295), all 64 bits otherwise.
    case 'u':
      text += std::to_string(x >= INT32_MIN && x <= int64_t(UINT32_MAX) ? uint64_t(uint32_t(x)) : uint64_t(x));
      break;
    case 'c': {
      char c = char(x & 0xff);
      text += std::to_string(x & 0xff) + " '" + (c >= 32 && c < 127 ? std::string(1, c) : std::string("?")) + "'";
      break;
    }
    default:
      if (var && var->kind == Variable::Kind::FReg) {
        float f;
        uint32_t bits = uint32_t(x);
        std::memcpy(&f, &bits, 4);
        char buf[64];
        std::snprintf(buf, sizeof buf, "%g", double(f));
        text += std::string(buf) + " (bits " + hex(bits) + ")";
      } else if (var && (var->kind == Variable::Kind::Pc || (var->kind == Variable::Kind::XReg && var->index == 1))) {
        // As gdb prints the target description's code pointers (pc, ra).
        text += "(void (*)()) " + hex(uint32_t(x));
        if (sym_)
          if (auto d = sym_->describe(uint32_t(x))) text += " <" + *d + ">";
      } else if (var && var->kind == Variable::Kind::XReg && (var->index == 2 || var->index == 8)) {
        text += "(void *) " + hex(uint32_t(x));  // data pointers (sp, fp)
      } else if (var && var->kind == Variable::Kind::XReg) {
        text += std::to_string(int32_t(uint32_t(x)));  // an int register, as gdb shows it
      } else {
        text += std::to_string(x);
      }
  }
  out(text, {{"expression", e->text()}, {"value", x}});
}

void Debugger::cmd_x(Args a) {
  MemoryFormat f = x_format_;
  if (!a.format.empty()) {
    auto pf = parse_memory_format(a.format);
    if (!pf) return usage(pf.error().message);
    f = *pf;
  }
  uint32_t addr = 0;
  if (a.args.empty()) {
    if (!x_next_) return usage("x: expected an address");
    addr = *x_next_;
  } else {
    auto e = Expr::parse(a.args);
    if (!e) return usage(e.error().message);
    auto v = evaluate(*e, Lane{focus_.core, focus_.slot, focus_.lane});
    if (!v) return err(v.error());
    if (*v < 0 || *v > int64_t(UINT32_MAX)) return err("address " + std::to_string(*v) + " is not 32-bit");
    addr = uint32_t(*v);
  }
  const uint32_t unit = f.unit_bytes();
  if (f.format == 's') {
    // N strings, each up to its NUL (at most 200 bytes shown, as gdb limits its print).
    std::string text;
    nlohmann::json values = nlohmann::json::array();
    uint32_t at = addr;
    for (uint32_t i = 0; i < f.count; ++i) {
      std::string str;
      uint32_t len = 0;
      for (; len < 200; ++len) {
        auto b = read_bytes(at + len, 1);
        if (!b) return err(b.error());
        if ((*b)[0] == 0) break;
        str += char((*b)[0]);
      }
      std::string shown;
      for (char c : str)
        shown += c == '\n' ? "\\n" : c == '"' ? "\\\"" : (c >= 32 && c < 127) ? std::string(1, c) : "?";
      text += (i ? "\n" : "") + describe_pc(at) + ":\t\"" + shown + "\"" + (len == 200 ? "..." : "");
      values.push_back(str);
      at += len + 1;
    }
    x_next_ = at;
    x_format_ = f;
    return out(text, {{"address", addr}, {"format", "s"}, {"values", values}});
  }
  if (addr % unit)
    return err("address " + hex32(addr) + " is not aligned to the unit size (" + std::to_string(unit) + ")");
  auto bytes = read_bytes(addr, f.count * unit);
  if (!bytes) return err(bytes.error());
  const uint32_t per_line = f.format == 'c' ? 8 : unit == 4 ? 4 : 8;
  std::string text;
  nlohmann::json values = nlohmann::json::array();
  for (uint32_t i = 0; i < f.count; ++i) {
    uint32_t at = addr + i * unit;
    if (i % per_line == 0) {
      if (i) text += "\n";
      text += describe_pc(at) + ":";
    }
    uint32_t u = 0;
    for (uint32_t k = 0; k < unit; ++k) u |= uint32_t((*bytes)[i * unit + k]) << (8 * k);
    int64_t s = unit == 1 ? int64_t(int8_t(u)) : unit == 2 ? int64_t(int16_t(u)) : int64_t(int32_t(u));
    char buf[48];
    switch (f.format) {
      case 'x':
        std::snprintf(buf, sizeof buf, "0x%0*x", int(unit * 2), u);
        values.push_back(u);
        break;
      case 'd':
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(s));
        values.push_back(s);
        break;
      case 'u':
        std::snprintf(buf, sizeof buf, "%u", u);
        values.push_back(u);
        break;
      case 'f': {
        float fl;
        std::memcpy(&fl, &u, 4);
        std::snprintf(buf, sizeof buf, "%.9g", double(fl));
        values.push_back(double(fl));
        break;
      }
      default: {
        char c = char(u & 0xff);
        if (c >= 32 && c < 127 && c != '\'' && c != '\\')
          std::snprintf(buf, sizeof buf, "%u '%c'", u, c);
        else
          std::snprintf(buf, sizeof buf, "%u '\\%03o'", u, u & 0xff);
        values.push_back(u);
      }
    }
    text += "\t";
    text += buf;
  }
  x_next_ = addr + f.count * unit;
  x_format_ = f;
  out(text, {{"address", addr}, {"unit", unit}, {"format", std::string(1, f.format)}, {"values", values}});
}

void Debugger::cmd_disassemble(Args in) {
  // /s (and gdb's older /m): source lines before the instructions of each line; gdb writes it
  // after a space too ("disassemble /s").
  CommandLine a = in;
  if (a.format.empty() && a.args.size() >= 2 && a.args[0] == '/' && (a.args.size() == 2 || a.args[2] == ' ')) {
    a.format = a.args.substr(1, 1);
    a.args = std::string(trim(a.args.substr(2)));
  }
  if (!a.format.empty() && a.format != "s" && a.format != "m")
    return usage("disassemble/" + a.format + ": the modifier is s (source lines with the code)");
  const bool with_source = !a.format.empty();
  uint32_t lo = 0, hi = 0, mark = 0;
  bool have_mark = false, in_function = false;
  std::string title;
  auto eval_addr = [&](const std::string& text) -> Result<uint32_t> {
    // A function name stands for its address, as in gdb's `disassemble FUNC`.
    if (sym_ && !text.empty() && (std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_'))
      if (auto a = sym_->symbol_address(text)) return *a;
    auto e = Expr::parse(text);
    if (!e) return e.error();
    auto v = evaluate(*e, Lane{focus_.core, focus_.slot, focus_.lane});
    if (!v) return v.error();
    if (*v < 0 || *v > int64_t(UINT32_MAX)) return make_error("address " + std::to_string(*v) + " is not 32-bit");
    return uint32_t(*v);
  };
  if (const WarpState* w = focus_warp()) {
    mark = w->pc;
    have_mark = true;
  }
  auto function_range = [&](uint32_t addr) {
    if (sym_)
      if (auto f = sym_->function_at(addr)) {
        lo = f->lo;
        hi = f->hi;
        title = "Dump of assembler code for function " + f->name + ":";
        in_function = true;
        return;
      }
    lo = addr & ~3u;
    hi = lo + 40;
    title = "Dump of assembler code from " + hex32(lo) + " to " + hex32(hi) + ":";
  };
  if (a.args.empty()) {
    if (!have_mark) {
      if (!ensure_focus()) return;
    }
    function_range(mark);
  } else {
    auto [first, second] = split_range(a.args);
    auto start = eval_addr(first);
    if (!start) return usage("disassemble: " + start.error().message);
    if (second.empty()) {
      function_range(*start);
    } else {
      bool plus = second[0] == '+';
      auto end = eval_addr(plus ? second.substr(1) : second);
      if (!end) return usage("disassemble: " + end.error().message);
      lo = *start & ~3u;
      hi = plus ? *start + *end : *end;
      if (hi <= lo) return usage("disassemble: the end " + hex32(hi) + " is not above the start " + hex32(lo));
      title = "Dump of assembler code from " + hex32(lo) + " to " + hex32(hi) + ":";
    }
  }
  if ((hi - lo) / 4 > kMaxDisassembly)
    return err("disassemble: " + std::to_string((hi - lo) / 4) + " instructions is too many (at most " +
               std::to_string(kMaxDisassembly) + ")");
  auto bytes = read_bytes(lo, ((hi - lo) + 3) & ~3u);
  if (!bytes) return err(bytes.error());
  std::string text = title + "\n";
  nlohmann::json list = nlohmann::json::array();
  std::string fn_name;
  for (uint32_t at = lo; at < hi; at += 4) {
    size_t i = at - lo;
    uint32_t word = uint32_t((*bytes)[i]) | uint32_t((*bytes)[i + 1]) << 8 | uint32_t((*bytes)[i + 2]) << 16 |
                    uint32_t((*bytes)[i + 3]) << 24;
    std::string d = disassemble(word, at);
    if (with_source && sym_) {
      // A new source line starts here: show it (file:line and its text), as gdb's /s does.
      auto loc = sym_->locate(at);
      std::optional<engine::SourceLocation> prev = at > lo ? sym_->locate(at - 4) : std::nullopt;
      if (loc && loc->line &&
          (!prev || prev->line != loc->line || prev->file != loc->file || prev->function != loc->function)) {
        text += base_name(loc->file) + ":" + std::to_string(loc->line) + "\n";
        if (auto src = sym_->source_line(loc->file, loc->line)) text += std::to_string(loc->line) + "\t" + *src + "\n";
      }
    }
    std::string label;
    if (in_function)
      label = " <+" + std::to_string(at - lo) + ">";
    else if (sym_)
      if (auto desc = sym_->describe(at)) label = " <" + *desc + ">";
    text += std::string(have_mark && at == mark ? "=> " : "   ") + hex32(at) + label + ":\t" + d + "\n";
    list.push_back({{"address", at}, {"word", word}, {"text", d}});
  }
  text += "End of assembler dump.";
  out(text, {{"instructions", list}});
}

std::optional<engine::SourceLocation> Debugger::entry_location() const {
  if (!sym_ || !launch_.entry_pc) return std::nullopt;
  // The kernel function's own first line, not code inlined into it.
  auto f = sym_->function_at(launch_.entry_pc);
  if (f)
    for (uint32_t pc = f->lo; pc < f->hi && pc - f->lo < 4096; pc += 4)
      if (auto loc = sym_->locate(pc); loc && loc->line && loc->function == f->name) return loc;
  return sym_->locate(launch_.entry_pc);
}

void Debugger::cmd_list(Args a) {
  if (!sym_ || !sym_->has_debug_info()) return err("The kernel has no line information.");
  std::string file;
  uint32_t center = 0, first = 0;
  if (a.args.empty()) {
    if (list_next_ && !list_file_.empty()) {
      file = list_file_;
      first = list_next_;
    } else {
      std::optional<engine::SourceLocation> loc;
      if (const WarpState* w = focus_warp())
        loc = sym_->locate(w->pc);
      else
        loc = entry_location();
      if (!loc || !loc->line) return err("No source here; give a location: list FUNC | FILE:LINE | LINE.");
      file = loc->file;
      center = loc->line;
    }
  } else if (auto n = parse_u32(a.args)) {
    file = list_file_;
    if (file.empty()) {
      std::optional<engine::SourceLocation> loc;
      if (const WarpState* w = focus_warp())
        loc = sym_->locate(w->pc);
      else
        loc = entry_location();
      if (loc) file = loc->file;
    }
    if (file.empty()) return err("No current source file; give FILE:LINE.");
    center = *n;
  } else {
    auto r = sym_->resolve(a.args);
    if (!r) return err(r.error());
    if (!r->where || !r->where->line) return err("\"" + a.args + "\" has no line information.");
    file = r->where->file;
    center = r->where->line;
  }
  if (!first) first = center > 5 ? center - 5 : 1;
  std::string text;
  uint32_t line = first;
  for (; line < first + 10; ++line) {
    auto t = sym_->source_line(file, line);
    if (!t) break;
    text += std::to_string(line) + "\t" + *t + "\n";
  }
  if (line == first)
    return err("Line " + std::to_string(first) + " is out of range for \"" + base_name(file) +
               "\" (or it cannot be read).");
  list_file_ = file;
  list_next_ = line;
  out(text, {{"file", file}, {"first", first}, {"last", line - 1}});
}

void Debugger::cmd_backtrace(Args a) {
  uint32_t max = 32;
  if (!a.args.empty()) {
    auto n = parse_count(a.args);
    if (!n) return usage("backtrace: " + n.error().message);
    max = *n;
  }
  if (!ensure_focus()) return;
  const WarpState& w = *focus_warp();
  const uint32_t c = focus_.core, s = focus_.slot, lane = focus_.lane;
  std::vector<engine::Frame> frames = insp_.unwind(Lane{c, s, lane}, max);
  (void)w;
  // One line per frame as frame N selects them: inlined function levels, then physical callers,
  // each with its arguments in the focus lane, evaluated with that frame's registers.
  std::vector<FrameLevel> levels = insp_.frame_levels(frames);
  if (levels.size() > max) levels.resize(max);
  std::string text;
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < levels.size(); ++i) {
    const FrameLevel& f = levels[i];
    std::string args_text;
    nlohmann::json args = nlohmann::json::array();
    if (vars_) {
      auto frame = insp_.frame_view(Lane{c, s, lane}, unsigned(i));
      if (frame)
        for (const engine::SourceVariable& p : vars_->parameters(f.scope_pc, f.inline_level)) {
          auto value = insp_.variable_value(Lane{c, s, lane}, p, *frame);
          if (value) insp_.annotate(*value, Lane{c, s, lane});
          const std::string shown = value ? format_c(*value, 0, false) : "<error>";
          args_text += (args_text.empty() ? "" : ", ") + p.name + "=" + shown;
          args.push_back({{"name", p.name}, {"text", shown}});
        }
    }
    // gdb's form: an inlined level has no pc of its own to show.
    text += "#" + pad(std::to_string(i), 3) + (f.inlined ? std::string(11, ' ') : hex32(f.pc) + " in ") +
            (f.function.empty() ? "??" : f.function) + (vars_ ? " (" + args_text + ")" : "");
    if (f.line) text += " (" + base_name(f.file) + ":" + std::to_string(f.line) + ")";
    text += "\n";
    nlohmann::json j = {{"pc", f.pc},
                        {"sp", frames[f.phys].sp},
                        {"function", f.function.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.function)},
                        {"inlined", f.inlined},
                        {"physical", f.phys}};
    if (vars_) j["args"] = args;
    if (f.line) {
      j["file"] = f.file;
      j["line"] = f.line;
    }
    list.push_back(j);
  }
  out(text, {{"frames", list}});
}

// --- Focus -------------------------------------------------------------------------------------------------

void Debugger::cmd_focus(const std::string& first, Args a) {
  auto spec = parse_focus(first, a.args);
  if (!spec) return usage(spec.error().message);
  if (!ensure_stopped()) return;
  const DeviceContext& ctx = s_.context();
  const WarpState* cur = focus_warp();
  auto describe = [&]() {
    const WarpState* w = focus_warp();
    if (!w) return out("No focus.");
    auto t = insp_.thread_idx(focus_);
    std::string text = "Focus: core " + std::to_string(focus_.core) + " warp " + std::to_string(focus_.slot) +
                       " lane " + std::to_string(focus_.lane) + " = cta " + coords(w->block_id) + " thread " +
                       coords(t) + (w->tmask >> focus_.lane & 1 ? "" : " (inactive lane)") + "; " +
                       location_text(w->pc) + " at " + hex32(w->pc);
    if (sym_)
      if (auto loc = sym_->locate(w->pc); loc && loc->line)
        if (auto src = sym_->source_line(loc->file, loc->line)) text += "\n" + std::to_string(loc->line) + "\t" + *src;
    out(text, {{"core", focus_.core},
               {"warp", focus_.slot},
               {"lane", focus_.lane},
               {"cta", w->block_id},
               {"thread", t},
               {"pc", w->pc}});
  };
  if (spec->empty()) return describe();
  if (spec->software()) {
    std::array<uint32_t, 3> cta{}, thread{};
    if (!spec->cta || !spec->thread) {
      if (!cur) return err("No focus to take the missing coordinates from: give both cta X,Y,Z and thread X,Y,Z.");
      cta = cur->block_id;
      thread = insp_.thread_idx(focus_);
    }
    if (spec->cta) cta = *spec->cta;
    if (spec->thread) thread = *spec->thread;
    const auto& g = ctx.launch.grid;
    const auto& b = ctx.launch.block;
    for (int i = 0; i < 3; ++i) {
      if (cta[i] >= g[i]) return err("cta " + coords(cta) + " is outside the grid " + coords(g));
      if (thread[i] >= b[i]) return err("thread " + coords(thread) + " is outside the block " + coords(b));
    }
    uint32_t t = thread[0] + thread[1] * b[0] + thread[2] * b[0] * b[1];
    uint32_t rank = t / nt(), lane = t % nt();
    for (uint32_t c = 0; c < ctx.cores.size(); ++c)
      for (uint32_t s = 0; s < ctx.cores[c].warps.size(); ++s) {
        const WarpState& w = ctx.cores[c].warps[s];
        if (w.active && w.block_id == cta && w.cta_rank == rank) {
          set_focus(Lane{c, s, lane});
          list_next_ = 0;
          return describe();
        }
      }
    uint64_t linear = cta[0] + uint64_t(cta[1]) * g[0] + uint64_t(cta[2]) * g[0] * g[1];
    engine::ThreadLists l = s_.lists();
    auto in = [&](const std::vector<engine::UnitRange>& v) {
      for (const auto& r : v)
        if (linear >= r.first && linear < r.first + r.count) return true;
      return false;
    };
    std::string why = in(l.complete)       ? "it has completed"
                      : in(l.not_launched) ? "it has not been launched yet"
                                           : "its warp " + std::to_string(rank) + " has finished";
    return err("cta " + coords(cta) + " thread " + coords(thread) + " is not in progress: " + why + ".");
  }
  uint32_t core = spec->core.value_or(focus_.valid ? focus_.core : 0);
  uint32_t slot = spec->warp.value_or(focus_.valid ? focus_.slot : 0);
  if (core >= ctx.cores.size())
    return err("core " + std::to_string(core) + " does not exist (the device has " + std::to_string(ctx.cores.size()) +
               ")");
  if (slot >= ctx.cores[core].warps.size())
    return err("warp " + std::to_string(slot) + " does not exist (a core has " +
               std::to_string(ctx.cores[core].warps.size()) + " warps)");
  const WarpState& w = ctx.cores[core].warps[slot];
  if (!w.active)
    return err("core " + std::to_string(core) + " warp " + std::to_string(slot) + " has no work in progress");
  uint32_t lane;
  if (spec->lane)
    lane = *spec->lane;
  else if (focus_.valid && core == focus_.core && slot == focus_.slot)
    lane = focus_.lane;
  else
    lane = w.tmask ? uint32_t(std::countr_zero(w.tmask)) : 0;
  if (lane >= nt())
    return err("lane " + std::to_string(lane) + " does not exist (a warp has " + std::to_string(nt()) + ")");
  set_focus(Lane{core, slot, lane});
  frame_level_ = 0;
  list_next_ = 0;
  describe();
}

// --- help ----------------------------------------------------------------------------------------------------

void Debugger::cmd_help(Args a) {
  std::string text;
  if (a.args.empty()) {
    text = "Commands (abbreviations: any unique prefix, or the aliases in parentheses):\n";
    for (const CommandInfo& c : command_table()) {
      std::string name = c.name;
      if (!c.aliases.empty()) {
        name += " (";
        for (size_t i = 0; i < c.aliases.size(); ++i) name += std::string(i ? ", " : "") + c.aliases[i];
        name += ")";
      }
      std::string head = name + " " + c.synopsis;
      text += "  " + (head.size() < 46 ? pad(head, 46) : head + "\n" + std::string(48, ' ')) + c.summary + "\n";
    }
    text +=
        "Locations: FUNCTION, FILE:LINE, *ADDRESS.\n"
        "Expressions (conditions, print, x): integers, blockIdx/threadIdx/blockDim/gridDim.x|y|z, $registers\n"
        "  ($a0, $sp, $x5, $pc, $fa0), $lane, $warp, $core, &symbol, *address, C operators (== != < <= > >= && || !\n"
        "  + - * / % & | ^ ~ << >>) and parentheses.";
    return out(text);
  }
  auto cl = parse_command_line(a.args);
  if (!cl || cl->name.empty()) return usage("help: " + (cl ? std::string("expected a command") : cl.error().message));
  for (const CommandInfo& c : command_table())
    if (cl->name == c.name) {
      text = std::string(c.name) + " " + c.synopsis + "\n  " + c.summary;
      if (!c.aliases.empty()) {
        text += "\n  aliases:";
        for (const char* al : c.aliases) text += std::string(" ") + al;
      }
      if (cl->name == "info") {
        text += "\n  info subcommands:";
        for (const CommandInfo& i : info_table())
          text += "\n    info " + pad(std::string(i.name) + " " + i.synopsis, 26) + i.summary;
      }
    }
  out(text);
}

// --- End ----------------------------------------------------------------------------------------------------

void Debugger::report_divergence() {
  for (const DivergentBranch& d : s_.divergent_branches()) {
    if (!divergence_reported_.insert(d.pc).second) continue;
    nlohmann::json data = {
        {"divergent_branch",
         {{"pc", d.pc}, {"taken", d.taken}, {"not_taken", d.not_taken}, {"core", d.core}, {"warp", d.warp}}}};
    if (sym_)
      if (auto loc = sym_->locate(d.pc); loc && loc->line != 0) {
        data["divergent_branch"]["file"] = loc->file;
        data["divergent_branch"]["line"] = loc->line;
        data["divergent_branch"]["function"] = loc->function;
      }
    // Time travel and re-launches run code again, so the count would not be the kernel's: no count.
    sink_.output(command_, describe_divergent_branch(d, sym_, false), data);
  }
}

int Debugger::finish_session(const std::string& store_dir, std::optional<int> status_override) {
  command_.clear();
  drain_console();
  {
    std::ostringstream os;
    console_.flush(os);
    std::string text = os.str();
    size_t i = 0;
    while (i < text.size()) {
      size_t nl = text.find('\n', i);
      if (nl == std::string::npos) nl = text.size();
      sink_.console(text.substr(i, nl - i));
      i = nl + 1;
    }
  }
  int status = 0;
  std::string state;
  switch (state_) {
    case State::Exited:
      status = exit_code_.value_or(0) == 0 ? 0 : int(std::min<uint32_t>(*exit_code_, 63));
      state = "exited";
      break;
    case State::Killed: {
      // The workload's own commands failing is bad input (65); anything else that killed it is ours (70).
      status = device_stop_ ? 66 : killed_code_ == ErrorCode::Input ? 65 : 70;
      state = "killed";
      break;
    }
    case State::Stopped:
      status = device_stop_ ? 66 : 0;
      state = "stopped";
      break;
    case State::NotStarted:
      status = 0;
      state = "not started";
      break;
  }
  // The automatic checkpoints staged since the last durable write are committed now, not when the
  // session closes, so that a failure is counted below.
  (void)s_.flush();
  engine::SessionStats st = s_.stats();
  if ((st.store_failures > 0 || st.unrecorded_ops > 0) && !status_override) {
    // Nothing recorded was lost, but the recording is incomplete (stops the user saw, or only the
    // automatic checkpoints that bound the cost of going back): say so and exit 74.
    const uint64_t automatic = st.store_failures - st.unsaved_stops;
    auto count = [](uint64_t n, const char* one, const char* many) {
      return std::to_string(n) + (n == 1 ? one : many);
    };
    std::string what;
    if (st.unsaved_stops > 0) what = count(st.unsaved_stops, " stop was", " stops were") + " not recorded";
    if (automatic > 0)
      what += (what.empty() ? "" : " and ") +
              count(automatic, " automatic checkpoint was", " automatic checkpoints were") + " not written";
    if (st.unrecorded_ops > 0)
      what += (what.empty() ? "" : " and ") + count(st.unrecorded_ops, " host operation was", " host operations were") +
              " not recorded";
    err(what + ": " + s_.store_error());
    status = 74;  // docs/cli.md: the recording could not be written
  }
  if (status_override) status = *status_override;
  report_divergence();
  if (refuse_damage() || damage_reported_) status = 65;  // docs/cli.md: a damaged recording is unusable input
  if (internal_error_) status = 70;                      // docs/cli.md: an internal error, whatever else happened
  ExitView v;
  v.status = status;
  if (state_ == State::Exited) v.exit_code = exit_code_;
  v.state = state;
  v.instructions = st.instructions;
  v.lane_instructions = st.lane_instructions;
  v.restore_instructions = st.restore_instructions;
  v.passes = st.passes;
  v.checkpoints = st.checkpoints;
  v.bytes_stored = st.bytes_stored;
  v.reexecution_ratio = st.reexecution_ratio();
  v.store = store_dir;
  sink_.exit(v);
  return status;
}

}  // namespace vx::cli
