#!/usr/bin/env python3
"""Questions over the history through the real binary (docs/time-travel.md, "Questions over the
history"), with answers known from the kernels' sources:

    origin       `origin counter` in racy names the racing store (racy.c's `counter = v + 1u`) and
                 the value it wrote is the value counter holds; `origin -goto` goes to that write
                 with the writing lane in focus; variables in registers (`order`, `threads`) name
                 the instruction that computed them and its inputs
    writes       `info writes bins[3]` in histogram lists exactly one atomic add per CTA, each
                 adding to what the one before left, ending at the value bins[3] holds
    executions   `info executions` of a line inside a divergent branch of diverge lists only the
                 threads that take it (odd ones inside `if (x & 1)`, even ones in its else)
    depth        `origin -depth 3` of an sgemm output element: the loads of the A and B tile elements
                 it was computed from, written by its row's and column's threads; those from CSRs
    walkthrough  docs/time-travel.md's walkthrough on examples/offbyone.c: `origin table[4]` names
                 thread 0's store one entry past its row
    replay       the same answers from `vxreplay replay` of the recording, the kernel file deleted
    gdb          the same answers through gdb-multiarch's `monitor`
    errors       clear errors: no recording, a value that is not a place, -depth past 1, bad options
    live         a live session's interval run by Debug Module steps is named as not re-executed, and
                 the history goes on past it; origin warns of it when it lies after the write

Usage: e2e_history.py VXREPLAY EXAMPLES_DIR SOURCE_DIR CHECK
"""
import json
import os
import re
import shutil
import subprocess
import sys

from e2e_common import check, run_check
from e2e_debug import Session, source_line
from e2e_gdb import gdb_batch, served


def check_origin(vx, ex, src, tmp):
    store = source_line(src, "racy", "counter = v + 1u;")
    stop = source_line(src, "racy", "VX_IF(order == threads - 1)")
    s = Session(vx, os.path.join(ex, "racy.elf"),
                [f"break racy.c:{stop}", "continue", "origin counter", "print counter", "info writes counter",
                 "origin -depth 2 order", "origin -depth 2 threads", "origin -goto counter", "when", "origin sgemm_unknown",
                 "origin 42", "origin *(unsigned *)$pc"],
                db=os.path.join(tmp, "racy"))
    t = s.tag()
    o = s.output("origin counter")
    parts = o.get("origin", [])
    if check(len(parts) == 1 and "write" in parts[0], f"{t}: origin counter: {o}"):
        w = parts[0]["write"]
        check(w.get("line") == store and w.get("file") == "racy.c",
              f"{t}: origin names {w.get('file')}:{w.get('line')}, not the store at racy.c:{store}")
        value = s.output("print counter").get("value")
        check(str(w.get("after")) == str(value) or f"{w.get('after')}" == re.sub(r"\D", "", str(value)),
              f"{t}: the origin wrote {w.get('after')}, counter is {value}")
        writes = s.output("info writes counter").get("writes", [])
        # The origin is the last write before now: here, the last of the history's.
        check(writes and writes[-1]["instret"] == w["instret"] and writes[-1]["lane"] == w["lane"],
              f"{t}: origin {w} is not the last write {writes[-1:]}")
        # Every write to counter is the racy store (the lanes of a warp write the same value).
        check(all(x.get("line") == store for x in writes), f"{t}: writes from elsewhere: {writes}")
        stops = s.stops()
        when = s.output("when")
        check(stops and stops[-1]["instructions"] == w["instret"] and
              stops[-1].get("focus", {}).get("lane", w["lane"]) == w["lane"],
              f"{t}: origin -goto went to {stops[-1:]} (the write: {w['instret']}, lane {w['lane']}); when {when}")
    # Variables the frame keeps in registers: `order` is vx_atomic_add's result (one input: the
    # read of `finished`); `threads` is computed from the grid's and block's dimensions (CSRs only).
    order = s.output("origin -depth 2 order")
    inputs = (order.get("depth") or [{}])[0].get("inputs", [])
    check(order.get("register") and order.get("write", {}).get("file") == "vx_runtime.h" and len(inputs) == 1 and
          inputs[0]["kind"] == "load", f"{t}: origin -depth 2 order: {order}")
    threads = s.output("origin -depth 2 threads")
    inputs = (threads.get("depth") or [{}])[0].get("inputs", [])
    check(threads.get("register") and len(inputs) == 6 and all(i["kind"] == "csr" for i in inputs),
          f"{t}: origin -depth 2 threads: {threads}")
    errs = s.errors()
    check(any("not a place in memory" in e for e in errs), f"{t}: origin 42: {errs}")
    check(any("sgemm_unknown" in e for e in errs), f"{t}: origin of an unknown name: {errs}")
    # Code nobody wrote: the host's upload of the kernel image, named so.
    code = (s.output("origin *(unsigned *)$pc").get("origin") or [{}])[0].get("host_copy", {})
    check(code.get("image") is True and code.get("before_launch") == 1, f"{t}: origin of the code at pc: {code}")


def histogram_answers(s):
    """The writes of bins[3] and the value it holds, from a session stopped at the report."""
    return s.output("info writes bins[3]"), s.output("print bins[3]").get("value")


def check_bins(t, writes_out, value, ctas):
    writes = writes_out.get("writes", [])
    check(writes_out.get("count") == ctas and len(writes) == ctas,
          f"{t}: {writes_out.get('count')} writes to bins[3], the grid has {ctas} CTAs (one atomic add each)")
    check(all(w["atomic"] for w in writes), f"{t}: not every write is an atomic: {writes}")
    threads = [w["thread"] for w in writes]
    check(len(set(re.sub(r" thread.*", "", x) for x in threads)) == len(threads), f"{t}: a CTA wrote twice: {threads}")
    chain = all(a["after"] == b["before"] for a, b in zip(writes, writes[1:]))
    check(writes and writes[0]["before"] == 0 and chain, f"{t}: the adds do not chain from 0: {writes}")
    check(writes and str(writes[-1]["after"]) == re.sub(r"\D", "", str(value)),
          f"{t}: the last add left {writes[-1]['after'] if writes else None}, bins[3] is {value}")


def check_walkthrough(vx, ex, src, tmp):
    """docs/time-travel.md's walkthrough: the off-by-one store found by one origin command."""
    report = source_line(src, "offbyone", 'vx_printf("offbyone:')
    loop = source_line(src, "offbyone", "for (uint32_t j = 0; j <= ROW; j++)")
    s = Session(vx, os.path.join(ex, "offbyone.elf"),
                [f"break offbyone.c:{report}", "continue", "print table[4]", "origin table[4]", "info writes table[4]"],
                db=os.path.join(tmp, "obo"))
    t = s.tag()
    parts = s.output("origin table[4]").get("origin", [])
    w = parts[0].get("write", {}) if len(parts) == 1 else {}
    # Thread 0's loop ran to j == ROW (4): 0 * 100 + 4 over thread 1's own 100.
    check(w.get("thread") == "CTA (0,0,0) thread (0,0,0)" and w.get("line") == loop and w.get("after") == 4 and
          w.get("before") == 100, f"{t}: origin table[4]: {parts}")
    writes = s.output("info writes table[4]").get("writes", [])
    check([(x["thread"], x["after"]) for x in writes] == [("CTA (0,0,0) thread (1,0,0)", 100),
                                                           ("CTA (0,0,0) thread (0,0,0)", 4)],
          f"{t}: info writes table[4]: {writes}")


def check_depth(vx, ex, src, tmp):
    """origin -depth 2 of an sgemm output element: the loads of the A and B tile elements it was
    computed from (sgemm.c's inner loop, N of each), written by the threads of its row and its
    column of the CTA; depth 3: those were computed from CSRs only (gen_a, gen_b)."""
    inner = source_line(src, "sgemm", "for (uint32_t k = 0; k < T; k++) acc +=")
    a_store = source_line(src, "sgemm", "As[ty * T + tx] = gen_a(row, k0 + tx);")
    b_store = source_line(src, "sgemm", "Bs[ty * T + tx] = gen_b(k0 + ty, col);")
    s = Session(vx, os.path.join(ex, "sgemm.elf"),
                ["continue", "goto end", "origin -depth 3 sgemm_C[37]"], db=os.path.join(tmp, "sg"))
    t = s.tag()
    o = s.output("origin -depth 3 sgemm_C[37]")
    levels = o.get("depth", [])
    if not check(len(levels) == 2, f"{t}: {len(levels)} depth levels: {o}"):
        return
    n = 32  # the default launch: grid 8x8, block 4x4
    row, col = 37 // n, 37 % n
    inputs = levels[0]["inputs"]
    loads = [i for i in inputs if i["kind"] == "load"]
    check(len(inputs) == 2 * n and len(loads) == 2 * n, f"{t}: depth 2 has {len(inputs)} inputs, want {2 * n} loads")
    a = [i for i in loads if i.get("write", {}).get("line") == a_store]
    b = [i for i in loads if i.get("write", {}).get("line") == b_store]
    check(len(a) == n and len(b) == n, f"{t}: {len(a)} loads of A tiles, {len(b)} of B tiles, want {n} each")
    check(all(i["local"] for i in loads), f"{t}: a tile load outside local memory: {loads[:2]}")
    # Each load is on the inner loop's line; the A elements come from the threads of the element's row
    # of the CTA (ty = row % 4), the B elements from its column (tx = col % 4).
    lines = {(i.get("write", {}).get("line")) for i in loads}
    check(lines == {a_store, b_store}, f"{t}: writers at lines {lines}")
    ty, tx = row % 4, col % 4
    check(all(re.search(rf"thread \(\d,{ty},0\)$", i["write"]["thread"]) for i in a) and
          all(re.search(rf"thread \({tx},\d,0\)$", i["write"]["thread"]) for i in b),
          f"{t}: A writers {sorted({i['write']['thread'] for i in a})}, B writers {sorted({i['write']['thread'] for i in b})}")
    check(f"sgemm.c:{inner})" in s.output("origin -depth 3 sgemm_C[37]").get("text", ""),
          f"{t}: the loads are not shown at sgemm.c:{inner}")
    # gen_a and gen_b compute from the thread's coordinates: CSR reads only.
    check(levels[1]["inputs"] and all(i["kind"] == "csr" for i in levels[1]["inputs"]),
          f"{t}: depth 3 inputs {[i['kind'] for i in levels[1]['inputs']][:8]}")


def check_writes(vx, ex, src, tmp):
    report = source_line(src, "histogram", 'vx_printf("histogram:')
    s = Session(vx, os.path.join(ex, "histogram.elf"),
                [f"break histogram.c:{report}", "continue", "info writes bins[3]", "print bins[3]",
                 "info writes bins[3] -range 1:0,1:1000"], db=os.path.join(tmp, "hist"))
    out, value = histogram_answers(s)
    check_bins(s.tag(), out, value, 8)
    part = s.output("info writes bins[3] -range 1:0,1:1000")
    check(0 < part.get("count", 0) < 8 and all(w["instret"] <= 1000 for w in part.get("writes", [])),
          f"{s.tag()}: -range 1:0,1:1000 gave {part.get('count')} writes")


def check_executions(vx, ex, src, tmp):
    odd = source_line(src, "diverge", "VX_IF(x % 3u == 0)")
    even = source_line(src, "diverge", "VX_IF((float)x * 0.75f > 6.0f)")
    stop = source_line(src, "diverge", "vx_fail(got != job.result);")
    s = Session(vx, os.path.join(ex, "diverge.elf"),
                [f"break diverge.c:{stop}", "continue", f"info executions diverge.c:{odd}",
                 f"info executions diverge.c:{even}"], db=os.path.join(tmp, "div"))
    for line, parity in ((odd, 1), (even, 0)):
        o = s.output(f"info executions diverge.c:{line}")
        names = [n for w in o.get("warps", []) for n in w["threads"]]
        xs = [int(m[1]) for m in (re.match(r"CTA \(0,0,0\) thread \((\d+),0,0\)", n) for n in names) if m]
        check(xs and len(xs) == len(names) and all(x % 2 == parity for x in xs),
              f"{s.tag()}: diverge.c:{line} ran in threads {names}, expected only {'odd' if parity else 'even'} ones")
        # Each execution's lane mask has no lane of the other parity either.
        check(all(bin(e["tmask"]).count("1") <= 2 for e in o.get("executions", [])),
              f"{s.tag()}: diverge.c:{line}: masks {[e['tmask'] for e in o.get('executions', [])]}")


def check_replay(vx, ex, src, tmp):
    report = source_line(src, "histogram", 'vx_printf("histogram:')
    kernel = os.path.join(tmp, "histogram.elf")
    shutil.copy(os.path.join(ex, "histogram.elf"), kernel)
    db = os.path.join(tmp, "rep")
    first = Session(vx, kernel, [f"break histogram.c:{report}", "continue", "info writes bins[3]", "print bins[3]"],
                    db=db)
    os.remove(kernel)
    rec = os.path.join(db, sorted(os.listdir(db))[0])
    p = subprocess.run([vx, "replay", rec, "--batch", "--json", "-ex", "info writes bins[3]", "-ex", "print bins[3]",
                        "-ex", "origin bins[3]"], capture_output=True, text=True, timeout=120)
    events = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    out = next((e for e in events if e.get("command") == "info writes bins[3]"), {})
    value = next((e for e in events if e.get("command") == "print bins[3]"), {}).get("value")
    t = f"replay {rec}"
    check(p.returncode == 0, f"{t}: exit {p.returncode}: {p.stderr}")
    check_bins(t, out, value, 8)
    check(out.get("writes") == first.output("info writes bins[3]").get("writes"),
          f"{t}: the replay's writes differ from the recording session's")
    origin = next((e for e in events if e.get("command") == "origin bins[3]"), {}).get("origin", [{}])
    check(origin and origin[0].get("write", {}).get("instret") == (out.get("writes") or [{}])[-1].get("instret"),
          f"{t}: origin {origin} is not the last write")
    # The recording session kept the writes it gathered (docs/store.md "History"): the replay read
    # them instead of re-executing the launch.
    first_hist = first.output("info writes bins[3]").get("history", {})
    hist = out.get("history", {})
    check(first_hist.get("launches_gathered") == 1 and first_hist.get("launches_read") == 0,
          f"{t}: the recording session's question: {first_hist}")
    check(hist.get("launches_read") == 1 and hist.get("launches_gathered") == 0,
          f"{t}: the replay did not read the stored history: {hist}")
    # A damaged stored history is gathered again, with a note, and the answers stay the same.
    data = os.path.join(rec, "data.mdb")
    blob = bytearray(open(data, "rb").read())
    # Every copy LMDB's pages hold (a freed page may keep an older one).
    at = [i for i in range(len(blob) - 3) if blob[i:i + 4] == b"VXI1"]
    if check(at, f"{t}: no stored history value (magic VXI1) in {data}"):
        for i in at:
            blob[i + 40] ^= 0x10
        open(data, "wb").write(bytes(blob))
        p = subprocess.run([vx, "replay", rec, "--batch", "--json", "-ex", "info writes bins[3]"],
                           capture_output=True, text=True, timeout=120)
        events = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
        again = next((e for e in events if e.get("command") == "info writes bins[3]"), {})
        check(p.returncode == 0 and again.get("writes") == out.get("writes"),
              f"{t}: after damaging the stored history: exit {p.returncode}, {again.get('count')} writes: {p.stderr}")
        check(again.get("history", {}).get("launches_gathered") == 1 and
              "stored history of launch 1 could not be read" in again.get("text", "") + p.stdout,
              f"{t}: the damaged stored history was not reported and gathered again: {again.get('history')}")
        # Gathered again and kept: the next replay reads it.
        p = subprocess.run([vx, "replay", rec, "--batch", "--json", "-ex", "info writes bins[3]"],
                           capture_output=True, text=True, timeout=120)
        events = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
        third = next((e for e in events if e.get("command") == "info writes bins[3]"), {})
        check(third.get("history", {}).get("launches_read") == 1, f"{t}: not kept again: {third.get('history')}")


def check_gdb(vx, ex, src, tmp):
    if not shutil.which("gdb-multiarch"):
        check(False, "gdb-multiarch is not installed (the README's test command installs it)")
        return
    report = source_line(src, "histogram", 'vx_printf("histogram:')
    elf = os.path.join(ex, "histogram.elf")
    # Lane 0 of each CTA asks whether it is the last one: once per CTA.
    last = source_line(src, "histogram", "if (vx_atomic_add(&done, 1) == nblocks - 1)")
    out = gdb_batch(served(vx, elf, "--db", os.path.join(tmp, "gdb")), elf,
                    [f"break histogram.c:{report}", "continue", "monitor info writes bins[3]", "monitor origin bins[3]",
                     f"monitor info executions histogram.c:{last}"])
    check(re.search(r"^8 writes to bins\[3\] \(4 bytes at 0x[0-9a-f]+\) in the history:", out, re.M),
          f"gdb: monitor info writes:\n{out}")
    check(re.search(r"written by CTA \(\d,0,0\) thread \(3,0,0\)", out) and "(an atomic)" in out,
          f"gdb: monitor origin:\n{out}")
    check(re.search(r"histogram\.c:\d+ \(0x[0-9a-f]+\) ran 8 times in the history", out) and
          all(f"CTA ({c},0,0) thread (0,0,0)" in out for c in range(8)),
          f"gdb: monitor info executions:\n{out}")
    check("the kernel moved" not in out, f"gdb: a question moved the kernel:\n{out}")


def check_errors(vx, ex, src, tmp):
    report = source_line(src, "histogram", 'vx_printf("histogram:')
    elf = os.path.join(ex, "histogram.elf")
    s = Session(vx, elf, [f"break histogram.c:{report}", "continue", "origin bins[3]"])  # --no-db
    check(any("--no-db" in e for e in s.errors()), f"{s.tag()}: origin without a recording: {s.errors()}")
    s = Session(vx, elf, ["origin bins[3]", f"break histogram.c:{report}", "continue", "origin -depth 9 bins[3]",
                          "origin -bogus bins[3]", "origin", "info writes bins[3] -range 5", "info executions",
                          "info executions nowhere_at_all"], db=os.path.join(tmp, "err"))
    errs = s.errors()
    for want in ("not running", "-depth takes a number from 1 to 4", "unknown option -bogus", "expected an expression",
                 "-range takes A,B", "expected a location", "nowhere_at_all"):
        check(any(want in e for e in errs), f"{s.tag()}: no error saying '{want}': {errs}")
    # After the errors the session still answers.
    check(s.rc == 0 or s.rc == 64, f"{s.tag()}: exit {s.rc}")
    # A question at a fault's stop leaves it a stop that cannot be continued.
    s = Session(vx, os.path.join(ex, "fault.elf"), ["continue", "info writes even_results[2]", "continue"],
                db=os.path.join(tmp, "fault"))
    check(any("cannot go on" in e for e in s.errors()) and len(s.stops()) == 1,
          f"{s.tag()}: continue after a question at a fault: {s.errors()}, {len(s.stops())} stops")


def check_live(vx, ex, src, tmp):
    store = source_line(src, "racy", "counter = v + 1u;")
    stop = source_line(src, "racy", "VX_IF(order == threads - 1)")
    s = Session(vx, os.path.join(ex, "racy.elf"),
                [f"break racy.c:{store}", "continue", "stepi 4", "origin counter", "origin -depth 2 $a5", "delete",
                 f"break racy.c:{stop}",
                 "continue", "info writes counter", "origin counter", "print counter"],
                extra=["--mode", "live"], db=os.path.join(tmp, "live"))
    t = s.tag()
    stops = s.stops()
    if not check(len(stops) == 3, f"{t}: {len(stops)} stops: {s.errors()}"):
        return
    a, b = stops[0]["instructions"], stops[1]["instructions"]
    # At the end of the stepped interval: the interval is named, after whatever wrote counter.
    early = s.outputs("origin counter")[0] if s.outputs("origin counter") else {}
    parts = early.get("origin", [])
    check(parts and parts[0].get("not_reexecuted") == [{"launch": 1, "from": a, "to": b}] and
          f"unless it was written from launch 1 instruction {a} to {b}" in early.get("text", ""),
          f"{t}: origin at the stepped interval's end: {early}")
    # A register of the stepped warp's thread: whatever the pass saw write it, the interval may have.
    reg = s.output("origin -depth 2 $a5")
    check(reg.get("not_reexecuted") == {"launch": 1, "from": a, "to": b} and
          f"from launch 1 instruction {a} to {b}" in reg.get("text", ""),
          f"{t}: origin of a register at the stepped interval's end: {reg}")
    writes = s.output("info writes counter")
    check(writes.get("history", {}).get("not_reexecuted") == [{"launch": 1, "from": a, "to": b}] and
          f"(not re-executed: launch 1 from instruction {a} to {b}" in writes.get("text", ""),
          f"{t}: info writes does not name the stepped interval {a}..{b}: {writes.get('history')}")
    listed = writes.get("writes", [])
    # The history goes on past the interval (it used to end there), and nothing inside it is listed.
    check(any(w["instret"] > b for w in listed) and not any(a < w["instret"] <= b for w in listed),
          f"{t}: writes around the stepped interval {a}..{b}: {[w['instret'] for w in listed]}")
    last = s.outputs("origin counter")[-1]
    value = s.output("print counter").get("value")
    w = (last.get("origin") or [{}])[0].get("write", {})
    check(w.get("line") == store and str(w.get("after")) == re.sub(r"\D", "", str(value)) and
          "not_reexecuted" not in last["origin"][0],
          f"{t}: origin after the interval: {last.get('origin')} (counter = {value})")


CHECKS = {"origin": check_origin, "walkthrough": check_walkthrough, "depth": check_depth, "writes": check_writes, "executions": check_executions, "replay": check_replay,
          "gdb": check_gdb, "errors": check_errors, "live": check_live}


def main():
    vx, ex, src, which = sys.argv[1:5]
    return run_check(CHECKS, which, vx, ex, src)


if __name__ == "__main__":
    sys.exit(main())
