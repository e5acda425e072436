#!/usr/bin/env python3
"""End-to-end tests of the debugger session: `vxreplay run KERNEL --batch --json -ex ...`.

Usage: e2e_debug.py VXREPLAY EXAMPLES_DIR SOURCE_DIR CHECK
  CHECK is one of:
    breakpoints   function, file:line, conditional and temporary breakpoints stop where they should
    stepping      stepi/nexti/step/next move the focus warp; finish returns to the caller
    inspect       info ctas/warps/lanes/registers, print, x, disassemble, list, backtrace, focus
    device-stops  fault, assertion and watchdog stops, and what can be done at them
    errors        bad locations, bad commands, bad kernel files, bad flags
    equivalence   a session that continues to the end gives the plain run's exit status and console
    store         --db: one fresh store directory per session, info checkpoints; -x scripts

Expected values come from the kernels' sources and the ELF symbol table (read here), never from a
build's addresses.
"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

from e2e_common import EXIT_BAD_INPUT, EXIT_DEVICE_STOP, EXIT_USAGE, check, run, run_checks





class Session:
    """One batch session in JSON mode: the events it printed, its exit status and stderr."""

    def __init__(self, vx, kernel, commands, extra=(), db=None, timeout=180):
        args = [vx, "run", kernel, "--batch", "--json"]
        args += ["--db", db] if db else ["--no-db"]
        args += list(extra)
        # e2e_live.py reruns these scripts with another debug method (VXREPLAY_E2E_MODE=live).
        if os.environ.get("VXREPLAY_E2E_MODE"):
            args += ["--mode", os.environ["VXREPLAY_E2E_MODE"]]
        for c in commands:
            args += ["-ex", c]
        self.args = args
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        self.rc, self.stdout, self.stderr = p.returncode, p.stdout, p.stderr
        self.events = []
        for line in p.stdout.splitlines():
            try:
                self.events.append(json.loads(line))
            except ValueError:
                check(False, f"{self.tag()}: stdout line is not JSON: {line[:200]!r}")
        check(self.events and self.events[-1].get("event") == "exit", f"{self.tag()}: the last event is not 'exit'")
        check(self.rc >= 0, f"{self.tag()}: killed by signal {-self.rc}")

    def tag(self):
        return " ".join(os.path.basename(a) if a.endswith(".elf") else a for a in self.args[2:])[:300]

    def of(self, kind):
        return [e for e in self.events if e.get("event") == kind]

    def stops(self):
        return self.of("stop")

    def outputs(self, command):
        return [e for e in self.of("output") if e.get("command") == command]

    def output(self, command):
        o = self.outputs(command)
        check(len(o) == 1, f"{self.tag()}: expected one output for '{command}', got {len(o)}; errors: {self.errors()}")
        return o[0] if o else {}

    def errors(self):
        return [e.get("message", "") for e in self.of("error")]

    def console(self):
        return [e["text"] for e in self.of("output") if "command" not in e]

    def exit(self):
        return self.events[-1] if self.events else {}


# --- The ELF symbol table (independent of the debugger) -------------------------------------------

def elf_symbols(path):
    data = open(path, "rb").read()
    e_shoff, = struct.unpack_from("<I", data, 0x20)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 0x2E)
    sections = [struct.unpack_from("<10I", data, e_shoff + i * e_shentsize) for i in range(e_shnum)]
    syms = {}
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], 16):
            name_off, value, size, info, _other, _shndx = struct.unpack_from("<IIIBBH", data, off)
            end = data.index(b"\0", strtab[4] + name_off)
            name = data[strtab[4] + name_off:end].decode()
            if name and name not in syms:
                syms[name] = (value, size, info & 15)
    return syms


def in_function(syms, name, pc):
    v = syms.get(name)
    return v is not None and v[0] <= pc < v[0] + v[1]


def source_line(src, name, text):
    """The line number of the first line of examples/NAME.c containing text."""
    with open(os.path.join(src, "examples", name + ".c")) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                return i
    raise RuntimeError(f"'{text}' not in {name}.c")


def all_lanes(nt):
    return list(range(nt))


# --- Checks ---------------------------------------------------------------------------------------

def check_breakpoints(vx, ex, src):
    reduce_elf = os.path.join(ex, "reduce.elf")
    syms = elf_symbols(reduce_elf)

    # A function breakpoint stops in that function, at the address the break command reported.
    s = Session(vx, reduce_elf, ["break reduce", "continue", "info breakpoints", "continue"])
    t = s.tag()
    brk = s.output("break reduce")
    stops = s.stops()
    if check(len(stops) == 2, f"{t}: expected 2 stops, got {len(stops)}; errors {s.errors()}"):
        st = stops[0]
        check(st["reason"] == "breakpoint" and st["breakpoints"] == [1], f"{t}: first stop {st}")
        check(st["pc"] in brk.get("addresses", []), f"{t}: stop pc {st['pc']:#x} not in {brk.get('addresses')}")
        check(in_function(syms, "reduce", st["pc"]), f"{t}: stop pc {st['pc']:#x} is not inside reduce")
        check(st["function"] == "reduce", f"{t}: function {st['function']}")
        check(st["lanes"] == all_lanes(4), f"{t}: lanes {st['lanes']} (16-thread CTAs fill 4-lane warps)")
        check(st["lane"] in st["lanes"], f"{t}: focus lane {st['lane']} not active")
        check(st["pass"] >= 1 and st["instructions"] > 0, f"{t}: pass/instructions {st['pass']}/{st['instructions']}")
        check(stops[1]["reason"] == "breakpoint", f"{t}: second stop {stops[1]['reason']}")
        info = s.output("info breakpoints").get("breakpoints", [])
        check(len(info) == 1 and info[0]["hits"] >= 1, f"{t}: info breakpoints {info}")
    check(s.rc == 0, f"{t}: status {s.rc}")

    # file:line: the stop is on that line, with its text.
    line = source_line(src, "reduce", "lm->odd[tid] = odd;")
    s = Session(vx, reduce_elf, [f"break reduce.c:{line}", "continue"])
    t = s.tag()
    stops = s.stops()
    if check(len(stops) == 1, f"{t}: {len(stops)} stops; errors {s.errors()}"):
        st = stops[0]
        check(st["line"] == line and st["file"].endswith("reduce.c"), f"{t}: at {st['file']}:{st['line']}")
        check("lm->odd[tid] = odd;" in st["source"], f"{t}: source {st['source']!r}")
        check(st["lanes"] == all_lanes(4), f"{t}: lanes {st['lanes']}")
        check(in_function(syms, "reduce", st["pc"]), f"{t}: pc {st['pc']:#x} not in reduce")

    # A conditional breakpoint stops only where the condition holds (and then never again here).
    cond = "threadIdx.x == 13 && blockIdx.x == 3"
    s = Session(vx, reduce_elf, [f"break reduce.c:{line} if {cond}", "continue", "print threadIdx.x",
                                 "print blockIdx.x", "print blockIdx.x * blockDim.x + threadIdx.x",
                                 "info breakpoints", "continue"])
    t = s.tag()
    stops = s.stops()
    if check(len(stops) == 2, f"{t}: {len(stops)} stops; errors {s.errors()}"):
        st = stops[0]
        check(st["reason"] == "breakpoint", f"{t}: reason {st['reason']}")
        check(st["thread"] == [13, 0, 0] and st["cta"] == [3, 0, 0], f"{t}: stopped at cta {st['cta']} thread {st['thread']}")
        check(s.output("print threadIdx.x").get("value") == 13, f"{t}: print threadIdx.x")
        check(s.output("print blockIdx.x").get("value") == 3, f"{t}: print blockIdx.x")
        check(s.output("print blockIdx.x * blockDim.x + threadIdx.x").get("value") == 61, f"{t}: global index")
        info = s.output("info breakpoints").get("breakpoints", [{}])
        # gdb counts a hit only when its condition holds: the crossings before did not.
        check(info[0].get("hits", 0) == 1, f"{t}: one hit whose condition held: {info}")
        check(info[0].get("condition") == cond, f"{t}: condition {info[0].get('condition')}")
        check(stops[1]["reason"] == "exited" and stops[1]["exit_code"] == 0, f"{t}: then {stops[1]}")
    check(s.rc == 0, f"{t}: status {s.rc}")

    # A condition no lane satisfies never stops; tbreak stops once; disable/enable.
    s = Session(vx, reduce_elf, [f"break reduce.c:{line} if threadIdx.x > 100", f"tbreak reduce.c:{line}",
                                 "continue", "info breakpoints", "disable 1", "continue"])
    t = s.tag()
    stops = s.stops()
    if check(len(stops) == 2, f"{t}: {len(stops)} stops; errors {s.errors()}"):
        check(stops[0]["breakpoints"] == [2], f"{t}: first stop is for {stops[0].get('breakpoints')}")
        ids = [b["id"] for b in s.output("info breakpoints").get("breakpoints", [])]
        check(ids == [1], f"{t}: the temporary breakpoint should be gone: {ids}")
        check(stops[1]["reason"] == "exited", f"{t}: then {stops[1]['reason']}")


def check_stepping(vx, ex, src):
    reduce_elf = os.path.join(ex, "reduce.elf")
    line = source_line(src, "reduce", "const uint32_t odd = v & 1u;")
    # stepi N and nexti N are one run to the count: the same stop as N single steps, in one pass.
    for cmd in ("stepi", "nexti"):
        one = Session(vx, reduce_elf, [f"break reduce.c:{line}", "continue", "delete", f"{cmd} 9"])
        many = Session(vx, reduce_elf, [f"break reduce.c:{line}", "continue", "delete"] + [cmd] * 9)
        a, b = one.stops(), many.stops()
        t = one.tag()
        if check(len(a) == 2 and len(b) == 10, f"{t}: {len(a)} and {len(b)} stops"):
            check((a[1]["pc"], a[1]["instructions"]) == (b[9]["pc"], b[9]["instructions"]),
                  f"{t}: {cmd} 9 ended at {a[1]['pc']:#x}/{a[1]['instructions']}, 9 x {cmd} at "
                  f"{b[9]['pc']:#x}/{b[9]['instructions']}")
            # One run: the first pass and one re-launch (a live session re-launches nothing).
            check(one.exit()["stats"]["passes"] <= 2, f"{t}: {cmd} 9 took {one.exit()['stats']['passes']} passes")
    s = Session(vx, reduce_elf, [f"break reduce.c:{line}", "continue", "delete", "stepi", "stepi 3", "step", "next"])
    t = s.tag()
    stops = s.stops()
    if check(len(stops) == 5, f"{t}: {len(stops)} stops; errors {s.errors()}"):
        first = stops[0]
        for st in stops[1:]:
            check(st["reason"] == "step", f"{t}: reason {st['reason']}")
            check((st["core"], st["warp"], st["lane"]) == (first["core"], first["warp"], first["lane"]),
                  f"{t}: the step moved the focus from {first['core']}/{first['warp']} to {st['core']}/{st['warp']}")
        check(stops[1]["pc"] == first["pc"] + 4, f"{t}: stepi went from {first['pc']:#x} to {stops[1]['pc']:#x}")
        check(stops[2]["instructions"] > stops[1]["instructions"], f"{t}: stepi 3 did not advance")
        check(stops[2]["pc"] != stops[1]["pc"], f"{t}: stepi 3 did not move")
        check(stops[3]["line"] != stops[2]["line"] or stops[3]["file"] != stops[2]["file"],
              f"{t}: step stayed on line {stops[3]['line']}")
        check(stops[4]["line"] != stops[3]["line"] and stops[4]["line"] > line,
              f"{t}: next went from line {stops[3]['line']} to {stops[4]['line']}")
        check(all(st["file"].endswith(("reduce.c", ".h")) for st in stops), f"{t}: files {[st['file'] for st in stops]}")

    # finish returns to the caller, at the return address backtrace showed.
    diverge = os.path.join(ex, "diverge.elf")
    syms = elf_symbols(diverge)
    s = Session(vx, diverge, ["break reference", "continue", "delete", "backtrace", "finish", "backtrace"])
    t = s.tag()
    stops = s.stops()
    bts = s.outputs("backtrace")
    if check(len(stops) == 2 and len(bts) == 2, f"{t}: {len(stops)} stops, {len(bts)} backtraces; errors {s.errors()}"):
        frames = bts[0]["frames"]
        check(frames[0]["function"] == "reference" and frames[1]["function"] == "reference_lane",
              f"{t}: backtrace {[f['function'] for f in frames]}")
        st = stops[1]
        check(st["reason"] == "step" and st["function"] == "reference_lane", f"{t}: finish stopped in {st.get('function')}")
        check(st["pc"] == frames[1]["pc"], f"{t}: finish stopped at {st['pc']:#x}, the return address is {frames[1]['pc']:#x}")
        check(in_function(syms, "reference_lane", st["pc"]), f"{t}: {st['pc']:#x} is not in reference_lane")
        check(bts[1]["frames"][0]["function"] == "reference_lane", f"{t}: backtrace after finish")

    # nexti over a call: the focus comes back right after it, in the same function.
    call_line = source_line(src, "diverge", "vx_serial(reference_lane, &job);")
    s = Session(vx, diverge, [f"break diverge.c:{call_line}", "continue", "delete", "disassemble $pc,+24"])
    t = s.tag()
    insns = s.output("disassemble $pc,+24").get("instructions", [])
    calls = [i for i in insns if i["text"].startswith(("jal ", "jalr ")) and not i["text"].startswith(("jal zero", "jalr zero"))]
    if check(calls, f"{t}: no call in {[i['text'] for i in insns]}"):
        n = (calls[0]["address"] - s.stops()[0]["pc"]) // 4
        s = Session(vx, diverge, [f"break diverge.c:{call_line}", "continue", "delete", f"stepi {n}", "nexti", "step"])
        t = s.tag()
        stops = s.stops()
        if check(len(stops) == 4, f"{t}: {len(stops)} stops; errors {s.errors()}"):
            check(stops[1]["pc"] == calls[0]["address"], f"{t}: stepi {n} is at {stops[1]['pc']:#x}")
            check(stops[2]["pc"] == calls[0]["address"] + 4, f"{t}: nexti went to {stops[2]['pc']:#x}")
            check(stops[2]["instructions"] > stops[1]["instructions"] + 10, f"{t}: nexti did not run the callee")
            check(stops[3]["function"] == "diverge", f"{t}: step from the return address is in {stops[3]['function']}")


def check_inspect(vx, ex, src):
    diverge = os.path.join(ex, "diverge.elf")
    # diverge stores its result for thread x in diverge_out[x]: at a stop in CTA 2, CTAs 0 and 1 are done.
    line = source_line(src, "diverge", "const uint32_t got = r * 1000u + steps;")
    s = Session(vx, diverge, [f"break diverge.c:{line} if blockIdx.x == 2", "continue", "info ctas",
                              "x/32uw &diverge_out", "print *&diverge_out", "print $sp", "info registers sp a0",
                              "info warps", "info lanes", "backtrace", "disassemble", "list", "print &diverge_out",
                              "x/4xb &diverge_out", "x/2dh &diverge_out"])
    t = s.tag()
    stops = s.stops()
    if not check(len(stops) == 1, f"{t}: {len(stops)} stops; errors {s.errors()}"):
        return
    st = stops[0]
    check(st["cta"] == [2, 0, 0], f"{t}: cta {st['cta']}")
    ctas = s.output("info ctas")
    counts = [ctas.get(k, {}).get("count") for k in ("complete", "in_progress", "not_launched")]
    check(sum(c or 0 for c in counts) == 4 and ctas.get("total") == 4, f"{t}: CTA lists {counts} for a grid of 4")
    check((counts[0] or 0) >= 2 and (counts[1] or 0) >= 1, f"{t}: CTAs 0 and 1 should be complete: {counts}")

    def reference(x):
        if x & 1:
            r = x * 5 if x % 3 == 0 else x + 100
        else:
            r = x ^ 0x55 if x * 0.75 > 6.0 else (7 - x) & 0xffffffff
        n, steps = x % 30 + 1, 0
        while n != 1:
            n = 3 * n + 1 if n & 1 else n >> 1
            steps += 1
        return (r * 1000 + steps) & 0xffffffff

    values = s.output("x/32uw &diverge_out").get("values")
    check(values == [reference(x) for x in range(32)], f"{t}: diverge_out[0..31] = {values}")
    check(s.output("print *&diverge_out").get("value") == reference(0), f"{t}: print *&diverge_out")
    check(s.output("x/4xb &diverge_out").get("values") == list(struct.pack("<I", reference(0))), f"{t}: x/4xb")
    check(s.output("x/2dh &diverge_out").get("values") == list(struct.unpack("<hh", struct.pack("<I", reference(0)))),
          f"{t}: x/2dh")
    syms = elf_symbols(diverge)
    check(s.output("print &diverge_out").get("value") == syms["diverge_out"][0], f"{t}: &diverge_out")
    regs = s.output("info registers sp a0").get("registers", {})
    check(regs.get("sp") == s.output("print $sp").get("value"), f"{t}: print $sp and info registers disagree")
    warps = s.output("info warps").get("warps", [])
    check(any(w["focus"] and w["core"] == st["core"] and w["warp"] == st["warp"] and w["pc"] == st["pc"] for w in warps),
          f"{t}: info warps lacks the focus warp")
    check(all(w["cta"][0] >= 2 for w in warps), f"{t}: a warp of a completed CTA is listed: {warps}")
    lanes = s.output("info lanes").get("lanes", [])
    check(len(lanes) == 4 and sum(1 for l in lanes if l["focus"]) == 1, f"{t}: info lanes {lanes}")
    check(lanes[st["lane"]]["thread"] == st["thread"], f"{t}: focus lane thread {lanes[st['lane']]}")
    frames = s.output("backtrace").get("frames", [])
    check(frames and frames[0]["function"] == "diverge" and frames[0]["pc"] == st["pc"], f"{t}: backtrace {frames}")
    dis = s.output("disassemble").get("instructions", [])
    lo, size, _ = syms["diverge"]
    check(dis and dis[0]["address"] == lo and dis[-1]["address"] == lo + size - 4, f"{t}: disassemble range")
    check(any(i["address"] == st["pc"] for i in dis), f"{t}: disassemble lacks the pc")
    lst = s.output("list")
    check(lst.get("first", 0) <= line <= lst.get("last", 0) and "r * 1000u + steps" in lst.get("text", ""),
          f"{t}: list {lst.get('first')}..{lst.get('last')}")

    # Focus by software and hardware coordinates (a configuration with two CTAs in flight).
    reduce_elf = os.path.join(ex, "reduce.elf")
    odd_line = source_line(src, "reduce", "lm->odd[tid] = odd;")
    s = Session(vx, reduce_elf, [f"break reduce.c:{odd_line} if blockIdx.x == 1", "continue", "info ctas",
                                 "cta 1,0,0 thread 6,0,0", "print threadIdx.x", "print blockIdx.x", "print $lane",
                                 "core 0 warp 0 lane 2", "print $lane", "print $warp", "cta 7,0,0 thread 0,0,0",
                                 "thread 99", "core 5", "x/1xw 0xffff0000", "x/1xw 0xffff4000"],
                extra=["--config", "1x1x8x4"])
    t = s.tag()
    if check(len(s.stops()) == 1, f"{t}: {len(s.stops())} stops; errors {s.errors()}"):
        check(s.output("print threadIdx.x").get("value") == 6, f"{t}: focus cta 1 thread 6: threadIdx.x")
        check(s.output("print blockIdx.x").get("value") == 1, f"{t}: focus cta 1 thread 6: blockIdx.x")
        lanes_printed = [o["value"] for o in s.outputs("print $lane")]
        check(lanes_printed == [6 % 4, 2], f"{t}: print $lane gave {lanes_printed}")
        check(s.output("print $warp").get("value") == 0, f"{t}: print $warp")
        errs = s.errors()
        check(any("not in progress" in e and "not been launched" in e for e in errs), f"{t}: cta 7 error: {errs}")
        check(any("outside the block" in e for e in errs), f"{t}: thread 99 error: {errs}")
        check(any("core 5 does not exist" in e for e in errs), f"{t}: core 5 error: {errs}")
        check(len(s.output("x/1xw 0xffff0000").get("values", [])) == 1, f"{t}: local memory read")
        check(any("local memory is 16384 bytes" in e for e in errs), f"{t}: past local memory: {errs}")


def check_device_stops(vx, ex, src):
    fault = os.path.join(ex, "fault.elf")
    line = source_line(src, "fault", "dst[slot] = left + g;")
    s = Session(vx, fault, ["continue", "info registers", "backtrace", "print threadIdx.x", "x/4xw $sp", "continue",
                            "print threadIdx.x + 0"])
    t = s.tag()
    stops = s.stops()
    if check(len(stops) == 1, f"{t}: {len(stops)} stops; errors {s.errors()}"):
        st = stops[0]
        check(st["reason"] == "exception", f"{t}: reason {st['reason']}")
        ex_ = st.get("exception", {})
        check(ex_.get("cause") == "store to unmapped memory" and ex_.get("address") == 0x28, f"{t}: exception {ex_}")
        check(st["line"] == line and st["function"] == "fault", f"{t}: at {st['function']}:{st['line']}")
        # FAULT_THREAD is global thread 21: block 1, thread 5.
        check(st["cta"] == [1, 0, 0] and st["thread"] == [5, 0, 0], f"{t}: cta {st['cta']} thread {st['thread']}")
        check(s.output("print threadIdx.x").get("value") == 5, f"{t}: print at the fault")
        check(len(s.output("info registers").get("registers", {})) == 33, f"{t}: info registers")
        check(s.output("backtrace").get("frames", [{}])[0].get("function") == "fault", f"{t}: backtrace")
        check(len(s.output("x/4xw $sp").get("values", [])) == 4, f"{t}: x at the fault")
        # continue is refused once with one error; the fault stays inspectable.
        errors = s.errors()
        check(len(errors) == 1 and "cannot go on" in errors[0], f"{t}: continue at the fault: {errors}")
        check(s.output("print threadIdx.x + 0").get("value") == 5, f"{t}: print after the refused continue")
    check(s.rc == EXIT_DEVICE_STOP and s.exit()["status"] == EXIT_DEVICE_STOP, f"{t}: status {s.rc}")

    hang = os.path.join(ex, "hang.elf")
    s = Session(vx, hang, ["continue", "info warps"], extra=["--watchdog", "100000"])
    t = s.tag()
    stops = s.stops()
    if check(len(stops) == 1, f"{t}: {len(stops)} stops; errors {s.errors()}"):
        check(stops[0]["reason"] == "watchdog" and stops[0]["function"] == "hang", f"{t}: {stops[0]}")
        check(stops[0]["instructions"] >= 100000, f"{t}: stopped after {stops[0]['instructions']} instructions")
        check("hang: waiting for the go flag" in s.console(), f"{t}: console {s.console()}")
        check(len(s.output("info warps").get("warps", [])) > 0, f"{t}: info warps at the watchdog")
    check(s.rc == EXIT_DEVICE_STOP, f"{t}: status {s.rc}")

    assert_elf = os.path.join(ex, "assert.elf")
    s = Session(vx, assert_elf, ["continue", "backtrace"])
    t = s.tag()
    stops = s.stops()
    if check(len(stops) == 1, f"{t}: {len(stops)} stops; errors {s.errors()}"):
        check(stops[0]["reason"] == "assertion", f"{t}: reason {stops[0]['reason']}")
        check(stops[0]["cta"] == [3, 0, 0] and stops[0]["thread"] == [3, 0, 0], f"{t}: at {stops[0]['cta']}/{stops[0]['thread']}")
        names = [f["function"] for f in s.output("backtrace").get("frames", [])]
        check("assert_kernel" in names, f"{t}: backtrace {names}")
        check(any("ASSERT FAILED" in l for l in s.console()), f"{t}: console lacks the assertion")
    check(s.rc == EXIT_DEVICE_STOP, f"{t}: status {s.rc}")
    # An assertion can be continued: the kernel then completes with the failure counted.
    s = Session(vx, assert_elf, ["continue", "continue"])
    check(s.rc == 1 and s.exit().get("exit_code") == 1, f"{s.tag()}: status {s.rc} after continuing the assertion")


def check_errors(vx, ex, src):
    reduce_elf = os.path.join(ex, "reduce.elf")
    s = Session(vx, reduce_elf, ["break nosuch", "break reduce.c:99999", "break nofile.c:3", "break *0x10",
                                 "frobnicate", "stepi", "info warps", "x/4q 0x80000000", "print $q1", "print 1 +",
                                 "info bogus", "delete 7", "cta 1,2", "stepi 0", "continue", "continue"])
    t = s.tag()
    errs = s.errors()
    want = [("break nosuch", "nosuch"), ("break reduce.c:99999", "99999"), ("break nofile.c:3", "nofile.c"),
            ("break *0x10", "0x10"), ("frobnicate", "try \"help\""), ("stepi", "not running"),
            ("info warps", "not running"), ("x/4q 0x80000000", "unknown letter"), ("print $q1", "$q1"),
            ("print 1 +", "expected a value"), ("info bogus", "try \"help\""), ("delete 7", "No breakpoint number 7"),
            ("stepi 0", "at least 1"), ("continue", "exited")]
    for cmd, text in want:
        got = [e["message"] for e in s.of("error") if e.get("command") == cmd]
        check(any(text in m for m in got), f"{t}: '{cmd}' should fail with '{text}', got {got}")
    check(all("\n" not in e for e in errs), f"{t}: multi-line error")
    check(s.rc == 0 and s.exit().get("exit_code") == 0, f"{t}: the session goes on after errors: status {s.rc}")

    # --break with a bad location is a usage error.
    p = subprocess.run([vx, "run", reduce_elf, "--batch", "--no-db", "--break", "nosuch", "-ex", "continue"],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    check(p.returncode == EXIT_USAGE, f"--break nosuch: status {p.returncode}")
    check("nosuch" in p.stderr and len(p.stderr.strip().splitlines()) == 1, f"--break nosuch: stderr {p.stderr!r}")
    check("exited" not in p.stdout, "--break nosuch: the kernel ran")

    with tempfile.TemporaryDirectory() as tmp:
        good = open(reduce_elf, "rb").read()
        cases = {"trunc.elf": good[:200], "empty.elf": b"", "elf64.elf": b"\x7fELF\x02\x01\x01" + b"\x00" * 57}
        for name, data in cases.items():
            path = os.path.join(tmp, name)
            with open(path, "wb") as f:
                f.write(data)
            s = Session(vx, path, ["break reduce", "continue"])
            check(s.rc == EXIT_BAD_INPUT and s.exit().get("status") == EXIT_BAD_INPUT, f"{s.tag()}: status {s.rc}")
            check(len(s.errors()) == 1 and s.errors()[0], f"{s.tag()}: errors {s.errors()}")
            p = subprocess.run([vx, "run", path, "--batch", "--no-db", "-ex", "continue"], capture_output=True,
                               text=True, timeout=60, stdin=subprocess.DEVNULL)
            check(p.returncode == EXIT_BAD_INPUT and p.stderr.startswith("vxreplay: "), f"{name} (human): {p.returncode} {p.stderr!r}")
        s = Session(vx, os.path.join(tmp, "missing.elf"), ["continue"])
        check(s.rc == EXIT_BAD_INPUT and "cannot open" in " ".join(s.errors()), f"missing file: {s.rc} {s.errors()}")
        p = subprocess.run([vx, "run", reduce_elf, "--batch", "-x", os.path.join(tmp, "nope.gdb")], capture_output=True,
                           text=True, timeout=60, stdin=subprocess.DEVNULL)
        check(p.returncode == EXIT_USAGE and "nope.gdb" in p.stderr, f"missing -x script: {p.returncode} {p.stderr!r}")
        p = subprocess.run([vx, "run", reduce_elf, "--no-db", "--db", tmp], capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
        check(p.returncode == EXIT_USAGE, f"--db with --no-db: status {p.returncode}")


def plain_run(vx, elf, extra):
    p = subprocess.run([vx, "run", elf, "--quiet", *extra], capture_output=True, text=True, timeout=180,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout.splitlines()


def check_equivalence(vx, ex, src):
    kernels = {"vecadd": "vecadd", "sgemm": "sgemm", "reduce": "reduce", "diverge": "diverge",
               "histogram": "histogram", "hello": "hello", "fault": "fault", "assert": "assert_kernel",
               "hang": "hang", "racy": "racy"}
    for name, fn in kernels.items():
        elf = os.path.join(ex, name + ".elf")
        extra = ["--watchdog", "200000"] if name == "hang" else []
        rc, console = plain_run(vx, elf, extra)
        # Stop at the kernel's entry in every warp that gets there (a few), then run to the end.
        commands = [f"break {fn}"] + ["continue"] * 3 + ["delete", "continue"]
        s = Session(vx, elf, commands, extra=extra)
        t = s.tag()
        check(s.rc == rc, f"{t}: status {s.rc}, the plain run's is {rc}")
        check(s.exit().get("status") == rc, f"{t}: exit event status {s.exit().get('status')}")
        got = s.console()
        if name == "racy":
            # The race's outcome depends on the schedule; the lines' shape does not.
            check(len(got) == len(console), f"{t}: {len(got)} console lines, the plain run has {len(console)}")
        else:
            check(sorted(got) == sorted(console), f"{t}: console differs:\n  session {got[:5]}\n  plain   {console[:5]}")
            check(got == console, f"{t}: console lines in a different order")
        stats = s.exit().get("stats", {})
        check(stats.get("reexecution_ratio") == 1.0, f"{t}: re-execution ratio {stats.get('reexecution_ratio')}")
        if os.environ.get("VXREPLAY_E2E_MODE") == "live":
            # Inherent (docs/live.md): a live launch is one pass; nothing is re-launched.
            check(stats.get("passes", 0) == 1, f"{t}: live passes {stats.get('passes')}")
        else:
            check(stats.get("passes", 0) >= 2 or rc == EXIT_DEVICE_STOP, f"{t}: passes {stats.get('passes')}")


def check_store(vx, ex, src):
    reduce_elf = os.path.join(ex, "reduce.elf")
    line = source_line(src, "reduce", "lm->odd[tid] = odd;")
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "db")
        script = os.path.join(tmp, "cmds.gdb")
        with open(script, "w") as f:
            f.write(f"# stop twice, then list the checkpoints\nbreak reduce.c:{line}\n\ncontinue\ncontinue\n")
        for n in (1, 2):
            s = Session(vx, reduce_elf, ["info checkpoints", "delete", "continue"], extra=["-x", script], db=db)
            t = s.tag()
            check(s.rc == 0, f"{t}: status {s.rc}; errors {s.errors()}")
            check(len(s.stops()) == 3, f"{t}: the script and the commands should stop 3 times, got {len(s.stops())}")
            cps = s.output("info checkpoints").get("checkpoints", [])
            check(len(cps) == 2 and all(c["stop"] == "breakpoint" for c in cps), f"{t}: checkpoints {cps}")
            want = os.path.join(db, f"reduce-{n}")
            check(s.exit().get("store") == want and os.path.isdir(want), f"{t}: store {s.exit().get('store')}, want {want}")
            # The automatic checkpoint at the launch's start (docs/time-travel.md), and the two stops
            # by their marks alone, a few thousand instructions after it (docs/store.md, "Stops"); live,
            # each stop writes its checkpoint, and so does the point where the second continue's step
            # past the breakpoint ends (docs/live.md).
            live = os.environ.get("VXREPLAY_E2E_MODE") == "live"
            stats = s.exit().get("stats", {})
            check(stats.get("checkpoints") == (4 if live else 1) and stats.get("marks_only") == (0 if live else 2),
                  f"{t}: stats {stats}")
        # The default store is .vxreplay/ in the working directory.
        p = subprocess.run([vx, "run", reduce_elf, "--batch", "-ex", "continue"], capture_output=True, text=True,
                           timeout=120, cwd=tmp, stdin=subprocess.DEVNULL)
        check(p.returncode == 0 and os.path.isdir(os.path.join(tmp, ".vxreplay", "reduce-1")),
              f"default store: status {p.returncode}, {os.listdir(tmp)}")
        # Human output: no colour in a pipe, the stop header as documented.
        p = subprocess.run([vx, "run", reduce_elf, "--batch", "--no-db", "--break", f"reduce.c:{line}", "-ex", "continue"],
                           capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        check("\033[" not in p.stdout, "human output has colour in a pipe")
        check(re.search(r"^Breakpoint 1, reduce \(reduce\.c:%d\), pass 1, \d+ instructions$" % line, p.stdout, re.M),
              f"human stop header: {p.stdout[:400]!r}")
        check(re.search(r"^  core 0 warp \d lanes 0-3 \(cta 0,0,0\)", p.stdout, re.M), f"human focus line: {p.stdout[:400]!r}")
        check(re.search(r"^%d\t\s*lm->odd\[tid\] = odd;$" % line, p.stdout, re.M), f"human source line: {p.stdout[:400]!r}")


def check_readme_demo(vx, ex, src):
    # The README's first command ends in this scripted session; keep them in step.
    readme = open(os.path.join(src, "README.md")).read()
    first = re.search(r"```sh\n(.*)\n", readme).group(1)
    check("build/vxreplay run build/examples/reduce.elf --batch -x examples/demo.vxr" in first,
          f"README's first command is not the demo session: {first!r}")
    with tempfile.TemporaryDirectory() as tmp:
        s = Session(vx, os.path.join(ex, "reduce.elf"), [], extra=["-x", os.path.join(src, "examples", "demo.vxr")],
                    db=os.path.join(tmp, "db"))
    t = s.tag()
    stops = [e for e in s.stops() if e.get("reason") != "exited"]
    check(len(stops) == 3, f"{t}: {len(stops)} stops, want the breakpoint, the step and the reverse step")
    if len(stops) == 3:
        bp, step, back = stops
        check(bp.get("reason") == "breakpoint" and bp.get("file", "").endswith("reduce.c"), f"{t}: first stop {bp}")
        check(bp.get("lanes") == [0], f"{t}: the breakpoint is inside a one-lane divergent region, lanes {bp.get('lanes')}")
        check(step.get("reason") == "step", f"{t}: second stop {step}")
        # Back to the breakpoint's line, at the breakpoint's point in time (the start of the line).
        check(back.get("reason") == "step" and back.get("line") == bp.get("line") and
              back.get("instructions") == bp.get("instructions") and back.get("pc") == bp.get("pc"),
              f"{t}: reverse-step went to {back}, want the breakpoint's line and point {bp}")
    whens = [o for o in s.events if o.get("event") == "output" and o.get("command") == "when"]
    check(len(whens) == 2 and whens[1].get("instret", -1) < whens[0].get("instret", -1),
          f"{t}: when before and after reverse-step: {whens}")
    warps = s.output("info warps").get("warps", [])
    check(any(w.get("depth", 0) >= 1 for w in warps), f"{t}: no warp inside a split in {warps}")
    check(any("total 507 (expected 507)" in line for line in s.console()), f"{t}: console {s.console()}")
    check(s.rc == 0 and s.exit().get("exit_code") == 0, f"{t}: status {s.rc}, exit {s.exit()}")
    # Going back re-executes by design: the ratio says so (debug-equivalence checks 1.0 without it).
    check(s.exit().get("stats", {}).get("reexecution_ratio", 0) > 1.0, f"{t}: stats {s.exit().get('stats')}")


def main():
    checks = {"breakpoints": check_breakpoints, "stepping": check_stepping, "inspect": check_inspect,
              "device-stops": check_device_stops, "errors": check_errors, "equivalence": check_equivalence,
              "store": check_store, "readme-demo": check_readme_demo}
    return run_checks(checks)


if __name__ == "__main__":
    sys.exit(main())
