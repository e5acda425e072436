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
#include "cli/text.hpp"
#include "device/isa.hpp"
#include "device/registers.hpp"

namespace vx::cli {

namespace {

using engine::StopEvent;
using engine::StopReason;
using namespace text;

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
  ProgressLine(engine::Session& s, bool tty, std::function<void()> console) : s_(s), start_(Clock::now()) {
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

}  // namespace

// --- Construction and dispatch ----------------------------------------------------------------------

Debugger::Debugger(engine::Session& session, const engine::Symbols* symbols, const GridLaunch& launch, Sink& sink)
    : s_(session),
      stderr_tty_(isatty(STDERR_FILENO)),
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
  // Called at every progress report of a run: most have nothing (and a stream is not free).
  std::vector<ConsoleChunk> chunks = s_.take_console();
  if (chunks.empty()) return;
  std::ostringstream os;
  console_.feed(chunks, os);
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
        ProgressLine progress(s_, stderr_tty_, [this] { drain_console(); });
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
  // session closes, so that a failure is counted below; then the one sync of the session's end.
  auto ended = s_.end();
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
  } else if (!ended) {
    err(ended.error().message);  // everything was written, but not synced to the disk
    status = 74;
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
  v.marks_only = st.marks_only;
  v.bytes_stored = st.bytes_stored;
  v.reexecution_ratio = st.reexecution_ratio();
  v.store = store_dir;
  sink_.exit(v);
  return status;
}

}  // namespace vx::cli
