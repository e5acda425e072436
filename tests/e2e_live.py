#!/usr/bin/env python3
"""End-to-end tests of live sessions (docs/live.md): `vxreplay run KERNEL --mode live`.
Usage: e2e_live.py VXREPLAY EXAMPLES_DIR SOURCE_DIR CHECK
  CHECK is one of:
    compare     the same scripts in live and re-launch mode: same stops, registers, memory, result
    no-dm       a device without a Debug Module: --mode live exits 69 with one line; relaunch and the default work
    attach      --attach-after N halts hang mid-run and shows every warp; --reset-halt starts at the first instruction
    divergent   a breakpoint inside a divergent region stops live with one lane active
    fault       a kernel that faults while live: an exception stop, state readable, continue ends it
    session     info session and the start event's mode
    timetravel  reverse moves over a live history, and forward again: the live session's states
    watchdog    next over hang's spin loop ends at the watchdog live as re-launched (same stop, count, exit 66),
                in seconds; Ctrl-C stops a live next / stepi 100000000 at once
The re-launch scripts of e2e_debug.py run in live mode as the meson tests live-debug-* (VXREPLAY_E2E_MODE).
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_common import EXIT_DEVICE_STOP, check, run, run_checks  # noqa: E402
import e2e_debug  # noqa: E402
from e2e_debug import Session, source_line  # noqa: E402

EXIT_UNAVAILABLE = 69


def strip(stop):
    """A stop without what differs by design between the methods (docs/live.md, "What differs"): the
    pass, and the launch's instruction count, which live can be ahead by the instructions warps
    executed by DM steps out of the schedule (going past a breakpoint, stepping)."""
    return {k: v for k, v in stop.items() if k not in ("pass", "elapsed", "elapsed_ms", "time", "checkpoint", "instructions")}


def check_compare(vx, ex, src):
    line = source_line(src, "reduce", "lm->odd[tid] = odd;")
    bar_line = source_line(src, "reduce", "vx_fail(vx_vote_uni(block) != 1u);")
    scripts = [
        # next over __syncthreads: live, the focus warp waits and the others run until it can step.
        ("reduce.elf", [f"break reduce.c:{bar_line}", "continue", "delete", "next", "next", "next",
                        "info registers", "continue"]),
        ("reduce.elf", [f"break reduce.c:{line}", "continue", "info registers", "stepi", "info registers",
                       "step", "info registers", "x/8x $sp", "continue", "delete", "continue"]),
        ("vecadd.elf", ["break vecadd", "continue", "info registers", "delete", "next", "info registers", "finish",
                       "continue"]),
        ("sgemm.elf", ["break sgemm", "continue", "continue", "info registers", "delete", "stepi 5",
                      "info registers", "continue"]),
        ("diverge.elf", ["break diverge", "continue", "info lanes", "delete", "step", "step", "info registers",
                        "continue"]),
    ]
    for elf, cmds in scripts:
        path = os.path.join(ex, elf)
        rl = Session(vx, path, cmds, extra=["--mode", "relaunch"])
        lv = Session(vx, path, cmds, extra=["--mode", "live"])
        t = f"{elf} live vs relaunch"
        a, b = [strip(s) for s in rl.stops()], [strip(s) for s in lv.stops()]
        check(len(a) == len(b) and len(a) >= 2, f"{t}: {len(a)} vs {len(b)} stops; errors {lv.errors()}")
        for i, (x, y) in enumerate(zip(a, b)):
            check(x == y, f"{t}: stop {i} differs:\n  relaunch {x}\n  live     {y}")
        for c in ("info registers", "x/8x $sp", "info lanes"):
            ra, rb = rl.outputs(c), lv.outputs(c)
            check([o.get("text") for o in ra] == [o.get("text") for o in rb], f"{t}: '{c}' differs")
        check(rl.console() == lv.console(), f"{t}: console differs")
        check(rl.rc == lv.rc == 0, f"{t}: status {rl.rc} / {lv.rc}")
        check(rl.exit().get("exit_code") == lv.exit().get("exit_code"), f"{t}: exit code")
        # Inherent, documented: a live launch is one pass and re-launches nothing.
        check(lv.exit().get("stats", {}).get("passes") == 1, f"{t}: live passes {lv.exit().get('stats')}")

    # Breakpoints on a BAR and right after it: at a stop, warps wait on a planted address; going on
    # steps them past it once released, never reporting the same stop twice.
    bl = source_line(src, "reduce", "vx_fail(vx_vote_uni(block) != 1u);")
    d = Session(vx, os.path.join(ex, "reduce.elf"), [f"break reduce.c:{bl}", "continue", "disassemble"])
    bar = [i["address"] for i in d.output("disassemble").get("instructions", []) if i["text"].startswith("vx_bar")]
    if check(bar, "reduce: no vx_bar in the disassembly"):
        cmds = [f"break *{bar[0]:#x}", f"break *{bar[0] + 4:#x}"] + ["continue"] * 5 + ["delete", "continue"]
        rl = Session(vx, os.path.join(ex, "reduce.elf"), cmds, extra=["--mode", "relaunch"])
        lv = Session(vx, os.path.join(ex, "reduce.elf"), cmds, extra=["--mode", "live"])
        t = "reduce: breakpoints on and after a barrier"
        a, b = rl.stops(), lv.stops()
        check(len(a) == len(b), f"{t}: {len(a)} / {len(b)} stops")
        # A warp that waited on a planted address is stepped past it: it never stops there twice in a row.
        seen = [(x.get("warp"), x.get("pc")) for x in b]
        check(all(seen[i] != seen[i + 1] for i in range(len(seen) - 1)), f"{t}: the same warp stopped twice: {seen}")
        check(lv.rc == 0 and lv.exit().get("exit_code") == 0, f"{t}: status {lv.rc}")
        check(lv.console() == rl.console(), f"{t}: console")

    # Inherent, documented: live steps the focus warp alone. A re-launch step lets the other warps run
    # and ends at a breakpoint another warp reaches; the live step ends as a step of the focus warp.
    cmds = ["break vecadd", "continue", "next"]
    path = os.path.join(ex, "vecadd.elf")
    rl = Session(vx, path, cmds, extra=["--mode", "relaunch"])
    lv = Session(vx, path, cmds, extra=["--mode", "live"])
    t = "vecadd: next with the breakpoint set"
    a, b = rl.stops(), lv.stops()
    if check(len(a) == len(b) == 2, f"{t}: {len(a)} / {len(b)} stops"):
        check(a[1]["reason"] == "breakpoint" and a[1]["warp"] != a[0]["warp"], f"{t}: relaunch {a[1]}")
        check(b[1]["reason"] == "step" and b[1]["warp"] == b[0]["warp"], f"{t}: live {b[1]}")


def check_no_dm(vx, ex, src):
    elf = os.path.join(ex, "vecadd.elf")
    for flag in (["--mode", "live"], ["--live"]):
        rc, out, err = run(vx, ["run", elf, *flag, "--no-debug-module", "--batch", "--no-db", "-ex", "continue"],
                           timeout=60)
        check(rc == EXIT_UNAVAILABLE, f"{flag} without a DM: status {rc}")
        check(err.strip() == "vxreplay: this device has no Debug Module; use --mode relaunch",
              f"{flag} without a DM: stderr {err.strip()[:300]!r}")
    for extra in (["--mode", "relaunch"], ["--mode", "auto"], []):
        s = Session(vx, elf, ["break vecadd", "continue", "info session", "delete", "continue"],
                    extra=["--no-debug-module", *extra])
        t = s.tag()
        check(s.rc == 0 and len(s.stops()) == 2, f"{t}: status {s.rc}, {len(s.stops())} stops {s.errors()}")
        info = s.output("info session")
        check(info.get("mode") == "relaunch" and info.get("debug_module") is False, f"{t}: info session {info}")
        check(s.of("start")[0].get("mode") == "relaunch", f"{t}: start event {s.of('start')}")


def check_attach(vx, ex, src):
    elf = os.path.join(ex, "hang.elf")
    s = Session(vx, elf, ["info session", "stepi", "info registers pc"],
                extra=["--mode", "live", "--attach-after", "5000", "--watchdog", "100000"])
    t = s.tag()
    stops = s.stops()
    if check(len(stops) >= 2, f"{t}: {len(stops)} stops {s.errors()}"):
        check(stops[0]["reason"] == "interrupt" and stops[0]["instructions"] == 5000, f"{t}: attach stop {stops[0]}")
        check(stops[0].get("function") == "hang", f"{t}: attached in {stops[0].get('function')}")
        check(stops[1]["reason"] == "step", f"{t}: stepi {stops[1]}")
    warps = s.output("info warps").get("warps", [])
    check(len(warps) >= 2, f"{t}: info warps {warps}")
    info = s.output("info session")
    check(info.get("mode") == "live" and info.get("held") is True, f"{t}: info session {info}")

    # next in the spin loop: DM steps count against the watchdog, which ends the step (exit 66).
    try:
        s = Session(vx, elf, ["stepi", "next"], extra=["--mode", "live", "--attach-after", "5000", "--watchdog",
                                                       "100000"], timeout=60)
        t = s.tag()
        stops = s.stops()
        check(len(stops) == 3 and stops[2]["reason"] == "watchdog" and stops[2]["instructions"] == 100000,
              f"{t}: stops {stops[1:]}, errors {s.errors()}")
        check(s.rc == EXIT_DEVICE_STOP, f"{t}: status {s.rc}")
    except subprocess.TimeoutExpired:
        check(False, "live next in hang's spin loop did not end at the watchdog within 60 s")

    elf = os.path.join(ex, "vecadd.elf")
    s = Session(vx, elf, ["stepi", "stepi", "info registers pc", "continue"], extra=["--mode", "live", "--reset-halt"])
    t = s.tag()
    stops = s.stops()
    if check(len(stops) == 4, f"{t}: {len(stops)} stops {s.errors()}"):
        check(stops[0]["reason"] == "step" and stops[0]["instructions"] == 0, f"{t}: first stop {stops[0]}")
        check(stops[1]["instructions"] == 1 and stops[2]["instructions"] == 2, f"{t}: stepi {stops[1:3]}")
        check(stops[3]["reason"] == "exited" and stops[3]["exit_code"] == 0, f"{t}: end {stops[3]}")


def check_divergent(vx, ex, src):
    diverge_src = os.path.join(src, "examples", "diverge.c")
    elf = os.path.join(ex, "diverge.elf")
    with open(diverge_src) as f:
        lines = f.read().splitlines()
    line = next(i + 1 for i, l in enumerate(lines) if "x % 3u == 0" in l) + 1
    cmds = [f"break diverge.c:{line}", "continue", "info lanes", "next", "delete", "continue"]
    lv = Session(vx, elf, cmds, extra=["--mode", "live"])
    rl = Session(vx, elf, cmds, extra=["--mode", "relaunch"])
    t = lv.tag()
    stops = lv.stops()
    if check(len(stops) >= 2, f"{t}: {len(stops)} stops {lv.errors()}"):
        check(stops[0]["reason"] == "breakpoint" and stops[0]["line"] == line, f"{t}: {stops[0]}")
        check(len(stops[0]["lanes"]) < 4, f"{t}: lanes {stops[0]['lanes']} (a divergent region)")
    check([strip(x) for x in stops] == [strip(x) for x in rl.stops()], f"{t}: stops differ from relaunch")
    check(lv.rc == 0, f"{t}: status {lv.rc}")


def check_fault(vx, ex, src):
    elf = os.path.join(ex, "fault.elf")
    s = Session(vx, elf, ["continue", "info registers pc", "info session", "continue"], extra=["--mode", "live"])
    t = s.tag()
    stops = s.stops()
    if check(len(stops) == 1, f"{t}: {len(stops)} stops {s.errors()}"):
        check(stops[0]["reason"] == "exception", f"{t}: {stops[0]}")
        # Continuing is refused, as in re-launch mode; the stop stays.
        check(len(s.errors()) == 1 and "cannot go on" in s.errors()[0], f"{t}: errors {s.errors()}")
    check("pc" in s.output("info registers pc").get("text", ""), f"{t}: registers at the fault")
    check(s.rc == EXIT_DEVICE_STOP, f"{t}: status {s.rc}")
    rl = Session(vx, elf, ["continue", "info registers pc", "continue"], extra=["--mode", "relaunch"])
    check(strip(rl.stops()[0]) == strip(stops[0]) if stops and rl.stops() else False, f"{t}: fault stop differs")


def check_timetravel(vx, ex, src):
    """Time travel over a live history (docs/live.md "Time travel while live"): reverse moves and
    the forward moves after them show the states the live session recorded, one state per point."""
    with tempfile.TemporaryDirectory() as tmp:
        # stepi, back and forth over live steps: the same registers at each point, no internal error.
        reduce_elf = os.path.join(ex, "reduce.elf")
        cmds = ["break reduce", "continue", "continue", "stepi", "info registers", "stepi", "info registers",
                "reverse-stepi", "info registers", "reverse-stepi", "info registers", "stepi", "info registers",
                "stepi", "info registers"]
        s = Session(vx, reduce_elf, cmds, extra=["--mode", "live"], db=os.path.join(tmp, "r"))
        t = s.tag()
        regs = [o.get("text") for o in s.outputs("info registers")]
        whens = [st["instructions"] for st in s.stops()]
        check(not s.errors() and s.rc == 0, f"{t}: status {s.rc}, errors {s.errors()}")
        if check(len(regs) == 6 and len(whens) == 8, f"{t}: {len(regs)} register dumps, stops {whens}"):
            k = whens[1]
            check(whens[2:] == [k + 1, k + 2, k + 1, k, k + 1, k + 2], f"{t}: stops {whens}")
            check(regs[2] == regs[0] and regs[4] == regs[0] and regs[5] == regs[1], f"{t}: registers differ")
        # The same recording replayed: a stepi from a live breakpoint stop is the live step past it.
        rec = os.path.join(tmp, "r", "reduce-1")
        p = subprocess.run([vx, "replay", rec, "--at", "2", "--batch", "--json", "-ex", "stepi", "-ex", "reverse-stepi",
                            "-ex", "stepi"], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        events = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
        got = [e.get("instructions") for e in events if e.get("event") == "stop"]
        errs = [e for e in events if e.get("event") == "error"]
        check(p.returncode == 0 and not errs and len(whens) == 8 and got[-3:] == [whens[1] + 1, whens[1], whens[1] + 1],
              f"replay --at 2 of a live recording: stops {got}, errors {errs}, status {p.returncode} {p.stderr[-300:]}")

        # reverse-continue, then continue: the live session's hits, in both directions.
        sgemm = os.path.join(ex, "sgemm.elf")
        loop = source_line(src, "sgemm", "for (uint32_t k = 0; k < T; k++) acc +=")
        cmds = [f"break sgemm.c:{loop}"] + ["continue"] * 4 + ["reverse-continue"] * 3 + ["continue"] * 3
        s = Session(vx, sgemm, cmds, extra=["--mode", "live"], db=os.path.join(tmp, "c"))
        t = s.tag()
        hits = [st["instructions"] for st in s.stops()]
        if check(len(hits) == 10 and not s.errors(), f"{t}: stops {hits}, errors {s.errors()}"):
            fwd = hits[:4]
            check(hits[4:7] == [fwd[2], fwd[1], fwd[0]], f"{t}: reverse-continue {hits[4:7]}, forward {fwd}")
            check(hits[7:9] == fwd[1:3], f"{t}: continue after going back {hits[7:]}, forward {fwd}")
            check(s.rc == 0, f"{t}: status {s.rc}")

        # After stepi and continue live: from the start, continue follows the recording over the steps.
        cmds = [f"break sgemm.c:{loop}", "continue", "stepi", "stepi", "continue", "continue", "goto start",
                "continue", "continue", "continue"]
        s = Session(vx, sgemm, cmds, extra=["--mode", "live"], db=os.path.join(tmp, "g"))
        t = s.tag()
        st = [(x["reason"], x["instructions"]) for x in s.stops()]
        if check(len(st) == 9 and not s.errors(), f"{t}: stops {st}, errors {s.errors()}"):
            live_hits = [st[0], st[3], st[4]]
            check(st[6:] == live_hits, f"{t}: continue from the start {st[6:]}, live {live_hits}")

        # A fault while live, then back and forth: no internal error; the fault again at the end.
        fault = os.path.join(ex, "fault.elf")
        s = Session(vx, fault, ["continue", "reverse-stepi", "stepi", "reverse-continue", "continue"],
                    extra=["--mode", "live"], db=os.path.join(tmp, "f"))
        t = s.tag()
        check(not any("internal error" in e for e in s.errors()), f"{t}: errors {s.errors()}")
        check(s.rc == EXIT_DEVICE_STOP, f"{t}: status {s.rc}")


def check_session(vx, ex, src):
    elf = os.path.join(ex, "vecadd.elf")
    s = Session(vx, elf, ["info session", "break vecadd", "continue", "info session", "delete", "continue",
                          "info session"], extra=["--mode", "live"])
    t = s.tag()
    infos = s.outputs("info session")
    if check(len(infos) == 3, f"{t}: {len(infos)} info session outputs"):
        check(all(i.get("mode") == "live" and i.get("debug_module") for i in infos), f"{t}: {infos}")
        check([i.get("held") for i in infos] == [False, True, False], f"{t}: held {[i.get('held') for i in infos]}")
        check(infos[1]["dm_accesses"] > infos[0]["dm_accesses"], f"{t}: DM accesses {infos}")
    start = s.of("start")[0]
    check(start.get("mode") == "live", f"{t}: start {start}")
    # The start event says what info session says (docs/cli.md).
    check(start.get("requested") == "live" and start.get("why") == infos[0].get("why") and
          start.get("debug_module") is True and start.get("held") is False if infos else False, f"{t}: start {start}")
    # vxreplay replay --mode live replays by re-launching, and says so.
    with tempfile.TemporaryDirectory() as tmp:
        Session(vx, elf, ["break vecadd", "continue"], extra=["--mode", "live"], db=tmp)
        p = subprocess.run([vx, "replay", os.path.join(tmp, "vecadd-1"), "--mode", "live", "--batch", "--json", "-ex",
                            "info session"], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        ev = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
        st = [e for e in ev if e.get("event") == "start"]
        info = [e for e in ev if e.get("command") == "info session"]
        check(st and st[0].get("mode") == "relaunch" and st[0].get("requested") == "live" and
              "re-launching" in st[0].get("why", ""), f"replay --mode live: start {st}")
        check(info and info[0].get("mode") == "relaunch" and not info[0].get("held"), f"replay --mode live: {info}")
    # Reads through the DM (docs/live.md): local memory by injected loads, the per-warp CSRs, and
    # an unmapped address that fails with the same words in both modes.
    reduce_elf = os.path.join(ex, "reduce.elf")
    line = source_line(src, "reduce", "lm->odd[tid] = odd;")
    cmds = [f"break reduce.c:{line}", "continue", "continue", "info session", "x/8x 0xffff0000", "info session",
            "info registers float", "x/4x 0x10"]
    lv = Session(vx, reduce_elf, cmds, extra=["--mode", "live"])
    rl = Session(vx, reduce_elf, cmds, extra=["--mode", "relaunch"])
    t = lv.tag()
    lm = [o.get("text") for o in lv.outputs("x/8x 0xffff0000")]
    check(lm and lm == [o.get("text") for o in rl.outputs("x/8x 0xffff0000")], f"{t}: local memory {lm}")
    acc = [i.get("dm_accesses", 0) for i in lv.outputs("info session")]
    # 8 words by injected loads in a warp of the focus core, already selected: 6n + 7 (engine/dm_client.hpp),
    # one less as INJECT still holds the instruction the read starts with.
    check(len(acc) == 2 and acc[1] - acc[0] == 6 * 8 + 6, f"{t}: DM accesses for 8 words of local memory {acc}")
    check([o.get("text") for o in lv.outputs("info registers float")] ==
          [o.get("text") for o in rl.outputs("info registers float")], f"{t}: info registers float differs")
    check(lv.errors() == rl.errors() and len(lv.errors()) == 1 and "not mapped" in lv.errors()[0],
          f"{t}: errors live {lv.errors()}, relaunch {rl.errors()}")

    d = Session(vx, elf, ["info session"])
    check(d.output("info session").get("mode") == "relaunch", f"default: {d.output('info session')}")


def check_watchdog(vx, ex, src):
    """Issue 32: a live `next` over `while (go == 0) {}` stepped the focus warp one DM step at a time
    (~2 us each), so the default budget (200 M instructions) took minutes to reach. Now it ends at
    the watchdog as the re-launch step does: the same stop, at the budget, exit 66, in seconds."""
    elf = os.path.join(ex, "hang.elf")
    line = source_line(src, "hang", "while (go == 0) {")
    cmds = [f"break hang.c:{line}", "continue", "delete", "next", "info session"]
    for budget, limit in ((2000000, 60), (None, 150)):
        for mode in ("relaunch", "live"):
            extra = ["--mode", mode] + (["--watchdog", str(budget)] if budget else [])
            t = f"hang next --mode {mode} --watchdog {budget or 'default'}"
            start = time.monotonic()
            try:
                s = Session(vx, elf, cmds, extra=extra, timeout=limit)
            except subprocess.TimeoutExpired:
                check(False, f"{t}: did not end at the watchdog within {limit} s")
                continue
            took = time.monotonic() - start
            stops = s.stops()
            want = budget or 200000000
            if check(len(stops) == 2, f"{t}: stops {stops}, errors {s.errors()}"):
                check(stops[1]["reason"] == "watchdog" and stops[1]["instructions"] == want,
                      f"{t}: the next ended with {stops[1]}")
                check(stops[1].get("function") == "hang" and stops[1].get("line") in (None, line),
                      f"{t}: stopped at {stops[1]}")
            check(s.rc == EXIT_DEVICE_STOP, f"{t}: status {s.rc}")
            print(f"{t}: {took:.2f} s")
            if mode == "live" and budget:
                # One DM step per instruction is ~13 DM accesses: 26 M for 2 M instructions.
                acc = s.output("info session").get("dm_accesses", 0)
                check(0 < acc < 500000, f"{t}: {acc} DM accesses")

    # Ctrl-C (SIGINT) stops a long live step at once: a next (range runs: every return from the
    # device) and a stepi 100000000 (DM steps: every step).
    for step in ("next", "stepi 100000000"):
        for mode in ("live", "relaunch"):
            args = [vx, "run", elf, "--batch", "--json", "--no-db", "--mode", mode, "--watchdog", "4000000000"]
            for c in [f"break hang.c:{line}", "continue", "delete", step, "info registers pc"]:
                args += ["-ex", c]
            t = f"hang {step} --mode {mode}, SIGINT"
            p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 stdin=subprocess.DEVNULL)
            time.sleep(2)
            sent = time.monotonic()
            p.send_signal(signal.SIGINT)
            try:
                out, err = p.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                check(False, f"{t}: still running 20 s after SIGINT")
                continue
            took = time.monotonic() - sent
            events = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
            stops = [e for e in events if e.get("event") == "stop"]
            check(len(stops) == 2 and stops[1]["reason"] == "interrupt", f"{t}: stops {stops}, stderr {err[-300:]}")
            check(p.returncode == 0 and took < 10, f"{t}: status {p.returncode} {took:.1f} s after SIGINT")


def main():
    checks = {"compare": check_compare, "no-dm": check_no_dm, "attach": check_attach, "divergent": check_divergent,
              "fault": check_fault, "session": check_session, "timetravel": check_timetravel,
              "watchdog": check_watchdog}
    return run_checks(checks)


if __name__ == "__main__":
    sys.exit(main())
