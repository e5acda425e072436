// The prompt's command tables: every command (and every `info` subcommand) is one entry with its
// names (canonical name, aliases; any unique prefix of a name also resolves), its help, and its
// handler. The tables are the dispatch: cli/command.cpp makes them without handlers (NoHandler:
// parsing and help need no session), the Debugger (cli/debugger.cpp) with its member functions,
// from the same function, so both have the same entries in the same order. An entry's handler is
// a generic lambda over the Debugger: a handler that names no member of the Debugger fails to
// compile where the Debugger's table is made, and an entry without a handler fails everywhere.
#pragma once

#include <string>
#include <vector>

#include "cli/command.hpp"

namespace vx::cli {

// The Debugger grants it access to its command functions.
struct CommandTables {
  // The prompt's commands, in help's order. Run: what a handler becomes (NoHandler, or a function
  // taking the Debugger and the parsed command line).
  template <class Run>
  static std::vector<CommandEntry<Run>> commands() {
    using A = const CommandLine&;
    // One entry per row, as it reads.
    // clang-format off
    return {
        {"continue", {"c", "cont", "run", "r"}, "[N]",
         "start the kernel, or go on until the next stop (N: let the breakpoint that stopped here pass N - 1 more times)",
         [](auto& d, A a) { d.cmd_continue(a); }},
        {"stepi", {"si"}, "[N]", "execute N instructions of the focus thread (default 1)",
         [](auto& d, A a) { d.cmd_stepi(a, false); }},
        {"nexti", {"ni"}, "[N]", "like stepi, but a call runs until it returns",
         [](auto& d, A a) { d.cmd_stepi(a, true); }},
        {"step", {"s"}, "[N]", "run the focus thread to the next source line, into calls",
         [](auto& d, A a) { d.cmd_step(a, false); }},
        {"next", {"n"}, "[N]", "run the focus thread to the next source line, over calls",
         [](auto& d, A a) { d.cmd_step(a, true); }},
        {"finish", {"fin"}, "", "run until the focus thread's current function returns",
         [](auto& d, A a) { if (d.no_args(a)) d.cmd_finish(a); }},
        {"reverse-stepi", {"rsi"}, "[N]", "go back N instructions of the focus warp (default 1)",
         [](auto& d, A a) { d.cmd_reverse(a.name, a); }},
        {"reverse-nexti", {"rni"}, "[N]", "like reverse-stepi, but back over a call as one instruction",
         [](auto& d, A a) { d.cmd_reverse(a.name, a); }},
        {"reverse-step", {"rs"}, "[N]", "go back to the start of the previous source line, into calls",
         [](auto& d, A a) { d.cmd_reverse(a.name, a); }},
        {"reverse-next", {"rn"}, "[N]", "go back to the start of the previous source line, over calls",
         [](auto& d, A a) { d.cmd_reverse(a.name, a); }},
        {"reverse-finish", {}, "", "go back to the call of the focus thread's current function",
         [](auto& d, A a) { d.cmd_reverse(a.name, a); }},
        {"reverse-continue", {"rc"}, "", "go back to the latest earlier breakpoint or watchpoint hit",
         [](auto& d, A a) { d.cmd_reverse(a.name, a); }},
        {"goto", {}, "N | start | end | L:I",
         "go to checkpoint N (info checkpoints), the launch's first or last point, or instruction I of launch L",
         [](auto& d, A a) { d.cmd_goto(a); }},
        {"checkpoint", {}, "", "mark the current stop as a checkpoint (info checkpoints lists it)",
         [](auto& d, A a) { d.cmd_checkpoint(a); }},
        {"origin", {}, "[-goto] [-depth N] EXPR", "the write each byte of EXPR's memory holds (who, where, when; -goto: go there)",
         [](auto& d, A a) { d.cmd_origin(a); }},
        // "wh" was a unique prefix of when before whatis: it keeps meaning when.
        {"when", {"wh"}, "", "show the current point in time: launch, instruction, the focus warp's count",
         [](auto& d, A a) { d.cmd_when(a); }},
        {"watch", {}, "[-l LEN] ADDR | *(TYPE *)ADDR [if COND]", "stop after a warp writes a changed value there",
         [](auto& d, A a) { d.cmd_watch(a.name, a); }},
        {"rwatch", {}, "[-l LEN] ADDR | *(TYPE *)ADDR [if COND]", "stop after a warp reads there",
         [](auto& d, A a) { d.cmd_watch(a.name, a); }},
        // "a" and "e" were unique prefixes of awatch and enable before advance and echo; "de" of delete before define.
        {"awatch", {"a"}, "[-l LEN] ADDR | *(TYPE *)ADDR [if COND]", "stop after a warp reads or writes there",
         [](auto& d, A a) { d.cmd_watch(a.name, a); }},
        {"break", {"b", "br"}, "[LOC] [if COND]", "set a breakpoint at FUNC, FILE:LINE or *ADDR (default: the focus PC)",
         [](auto& d, A a) { d.cmd_break(a, false); }},
        {"tbreak", {"tb"}, "[LOC] [if COND]", "set a breakpoint that is deleted when it first stops",
         [](auto& d, A a) { d.cmd_break(a, true); }},
        {"delete", {"d", "de"}, "[N...]", "delete breakpoints (all without N)",
         [](auto& d, A a) { d.cmd_delete(a); }},
        {"disable", {}, "[N...]", "disable breakpoints (all without N)",
         [](auto& d, A a) { d.cmd_enable(a, false); }},
        {"enable", {"e"}, "[N...]", "enable breakpoints (all without N)",
         [](auto& d, A a) { d.cmd_enable(a, true); }},
        {"condition", {}, "N [COND]", "set or (without COND) remove breakpoint N's condition",
         [](auto& d, A a) { d.cmd_condition(a); }},
        {"info", {"i"}, "WHAT", "breakpoints, ctas, warps, lanes, launches, registers [REG...|f], checkpoints",
         [](auto& d, A a) { d.cmd_info(a); }},
        // "pr", "pri" and "prin" were unique prefixes of print before printf.
        {"print", {"p", "inspect", "pr", "pri", "prin"}, "[/F] [-lanes] EXPR",
         "evaluate EXPR (C variables too) in the focus lane, or every active lane (F: x d u t c f)",
         [](auto& d, A a) { d.cmd_print(a); }},
        {"ptype", {}, "EXPR | TYPE", "show the C type of EXPR, or a type, with struct members written out",
         [](auto& d, A a) { d.cmd_ptype(a, true); }},
        {"whatis", {}, "EXPR | TYPE", "show the C type name of EXPR",
         [](auto& d, A a) { d.cmd_ptype(a, false); }},
        {"display", {}, "[/F] [EXPR]", "print EXPR at every stop, in format F (without EXPR: show them now)",
         [](auto& d, A a) { d.cmd_display(a); }},
        {"undisplay", {}, "[N...]", "stop showing display N (all: every display)",
         [](auto& d, A a) { d.cmd_undisplay(a); }},
        {"frame", {"f"}, "[N]", "select function level N at the focus pc (inlined calls), and show it",
         [](auto& d, A a) { d.cmd_frame(a.name, a); }},
        {"up", {}, "[N]", "select the function level N outwards (the caller of an inlined call)",
         [](auto& d, A a) { d.cmd_frame(a.name, a); }},
        {"down", {}, "[N]", "select the function level N inwards",
         [](auto& d, A a) { d.cmd_frame(a.name, a); }},
        {"set", {}, "var LVALUE = EXPR", "write a C variable, a member or element, or a register ($a0) in the focus lane",
         [](auto& d, A a) { d.cmd_set(a); }},
        {"until", {"u"}, "[LOC]", "like next, but not back into a loop; with LOC: run until LOC (as advance)",
         [](auto& d, A a) { d.cmd_advance(a.name, a); }},
        {"advance", {"adv"}, "LOC", "run until LOC (a temporary breakpoint), or another stop",
         [](auto& d, A a) { d.cmd_advance(a.name, a); }},
        {"commands", {}, "[N...]", "commands to run when breakpoint N stops (default: the last one set), up to 'end'",
         [](auto& d, A a) { d.cmd_commands(a); }},
        {"dprintf", {}, "LOC,\"FORMAT\",ARGS...", "a breakpoint that prints and goes on",
         [](auto& d, A a) { d.cmd_dprintf(a); }},
        {"printf", {}, "\"FORMAT\",ARGS...", "print C values with a C format (%d %u %x %c %f %s %%)",
         [](auto& d, A a) { d.cmd_printf(a); }},
        {"ignore", {}, "N COUNT", "let breakpoint N's next COUNT hits pass",
         [](auto& d, A a) { d.cmd_ignore(a); }},
        {"source", {}, "FILE", "run the commands of FILE",
         [](auto& d, A a) { d.cmd_source(a); }},
        {"echo", {}, "TEXT", "print TEXT (\\n is a line break)",
         [](auto& d, A a) { d.cmd_echo(a); }},
        {"define", {}, "NAME", "a user command: the following lines up to 'end'",
         [](auto& d, A a) { d.cmd_define(a); }},
        {"skip", {}, "[file FILE | function NAME | delete [N...] | enable [N...] | disable [N...]]",
         "step through a file's or function's code instead of into it (without arguments: the focus function)",
         [](auto& d, A a) { d.cmd_skip(a); }},
        {"x", {}, "/NFU ADDR", "examine memory: N units, F format x d u c f (float) s (string), U unit b h w",
         [](auto& d, A a) { d.cmd_x(a); }},
        {"disassemble", {"disas"}, "[/s] [ADDR | START,END | START,+LEN]",
         "disassemble the function at ADDR (default: the focus PC)",
         [](auto& d, A a) { d.cmd_disassemble(a); }},
        {"list", {"l"}, "[LOC | N]", "show source lines around LOC (again: the next lines)",
         [](auto& d, A a) { d.cmd_list(a); }},
        {"backtrace", {"bt", "where"}, "[N]", "show the focus lane's call stack",
         [](auto& d, A a) { d.cmd_backtrace(a); }},
        {"cta", {"block"}, "X,Y,Z [thread X,Y,Z]", "focus on a thread by software coordinates",
         [](auto& d, A a) { d.cmd_focus(a.name, a); }},
        {"thread", {}, "X,Y,Z", "focus on a thread of the focus CTA",
         [](auto& d, A a) { d.cmd_focus(a.name, a); }},
        {"core", {}, "C [warp W] [lane L]", "focus on a lane by hardware coordinates",
         [](auto& d, A a) { d.cmd_focus(a.name, a); }},
        // "w" and "wa" were unique prefixes of warp before watch and when: they keep meaning warp.
        {"warp", {"w", "wa"}, "W [lane L]", "focus on a warp of the focus core",
         [](auto& d, A a) { d.cmd_focus(a.name, a); }},
        {"lane", {}, "L", "focus on a lane of the focus warp",
         [](auto& d, A a) { d.cmd_focus(a.name, a); }},
        {"focus", {}, "", "show the focus",
         [](auto& d, A a) { d.cmd_focus(a.name, a); }},
        {"help", {"h"}, "[COMMAND]", "list the commands, or describe one",
         [](auto& d, A a) { d.cmd_help(a); }},
        {"quit", {"q", "exit"}, "", "end the session",
         [](auto& d, A a) { if (d.no_args(a)) d.quit(); }},
    };
    // clang-format on
  }

  // `info WHAT`: the handler takes the Debugger and the rest of the line after WHAT, trimmed.
  template <class Run>
  static std::vector<CommandEntry<Run>> info() {
    using R = const std::string&;
    // One entry per row, as it reads.
    // clang-format off
    return {
        {"breakpoints", {"b", "break"}, "", "breakpoints with their conditions and hit counts",
         [](auto& d, R r) { if (d.no_args("info breakpoints", r)) d.info_breakpoints(); }},
        {"checkpoints", {}, "[all]", "the stops of the recording, numbered for goto (all: automatic ones too)",
         [](auto& d, R r) {
           if (r.empty() || r == "all") d.info_checkpoints(r == "all");
           else d.usage("\"info checkpoints\" takes nothing or \"all\"");
         }},
        {"ctas", {}, "", "complete, in-progress and not-launched CTAs",
         [](auto& d, R r) { if (d.no_args("info ctas", r)) d.info_ctas(); }},
        // "l" and "w" keep meaning lanes and warps whatever info subcommands come later.
        {"address", {}, "NAME", "where the focus lane keeps C variable NAME at the focus pc (register, memory, ...)",
         [](auto& d, R r) { d.info_address(r); }},
        {"args", {}, "", "the focus lane's arguments of the selected function level (DWARF)",
         [](auto& d, R r) { if (d.no_args("info args", r)) d.info_variables(true); }},
        {"display", {}, "", "the expressions display shows at every stop",
         [](auto& d, R r) { if (d.no_args("info display", r)) d.info_display(); }},
        {"executions", {}, "LOC", "every time LOC ran in the history, per warp, with the threads that ran it",
         [](auto& d, R r) { d.info_executions(r); }},
        {"frame", {"f"}, "", "the selected function level: pc, CFA, what it is inlined into",
         [](auto& d, R r) { d.cmd_frame("info frame", CommandLine{"frame", "", r}); }},
        // "la" and "lan" were unique prefixes of lanes before launches: they keep meaning lanes.
        {"lanes", {"l", "la"}, "", "lanes of the focus warp",
         [](auto& d, R r) { if (d.no_args("info lanes", r)) d.info_lanes(); }},
        {"launches", {}, "", "the launches of the workload: kernel, entry, grid, block, local memory, argument",
         [](auto& d, R r) { if (d.no_args("info launches", r)) d.info_launches(); }},
        {"line", {}, "LOC", "the addresses of the code of source line LOC",
         [](auto& d, R r) { d.info_line(r); }},
        {"locals", {}, "", "the focus lane's local variables of the selected function level (DWARF)",
         [](auto& d, R r) { if (d.no_args("info locals", r)) d.info_variables(false); }},
        {"registers", {"r", "reg"}, "[REG...|f]", "the focus lane's registers (f: float registers)",
         [](auto& d, R r) { d.info_registers(r); }},
        // "s" was a unique prefix of session before skip.
        {"session", {"s"}, "", "live or re-launch, why, the Debug Module, whether the device is held",
         [](auto& d, R r) { if (d.no_args("info session", r)) d.info_session(); }},
        {"symbol", {}, "ADDR", "the symbol and offset at ADDR",
         [](auto& d, R r) { d.info_symbol(r); }},
        {"skip", {}, "", "what step goes through: the runtime's headers by default (skip)",
         [](auto& d, R r) { if (d.no_args("info skip", r)) d.info_skip(); }},
        {"warps", {"w", "wa"}, "", "every active warp",
         [](auto& d, R r) { if (d.no_args("info warps", r)) d.show_warps(); }},
        {"watchpoints", {}, "", "watchpoints with their conditions and hit counts",
         [](auto& d, R r) { if (d.no_args("info watchpoints", r)) d.info_watchpoints(); }},
        {"writes", {}, "EXPR [-range A,B]", "every write to EXPR's memory in the history, in time order (who, where, old and new)",
         [](auto& d, R r) { d.info_writes(r); }},
    };
    // clang-format on
  }
};

}  // namespace vx::cli
