"""End-to-end checks of the prompt as a daily debugger (issue 25): C variables per lane, function
levels, display, and the faults found by trying it. Expected values come from the kernels' sources
(the formulas below restate them), not from earlier runs.

usage: e2e_daily.py VXREPLAY EXAMPLES_DIR SOURCE_DIR CHECK
  variables  print/info locals/info args/ptype/whatis/print -lanes over reduce, diverge and saxpy
  frames     frame, up, down, info frame over inlined calls and physical callers; display at every stop
  faults     each fault of the issue, reproduced: plain-run outcome, stdin rule, p/u width, finish,
             '1 pass', Ctrl-C at the prompt, Enter after x
  gdb        where variables live at a few pcs agrees with gdb-multiarch reading the ELF offline
"""
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_common import check, run_checks  # noqa: E402
from e2e_debug import Session, source_line  # noqa: E402

NT = 4  # threads per warp of the default configuration (1x1x4x4)


def text_of(s, command):
    o = s.output(command)
    return o.get("text", "") if o else ""


def lane_values(s, command):
    """print -lanes output: {lane: text}."""
    o = s.output(command)
    return {e["lane"]: e["text"] for e in o.get("lanes", [])} if o else {}


def value_of(s, command):
    o = s.output(command)
    return o.get("value") if o else None


# --- C variables ----------------------------------------------------------------------------------

def check_variables(vx, ex, src):
    # reduce: after the warp partials are stored; every lane's v = g % 7 + 1, g = block * B + tid.
    line = source_line(src, "reduce", "vx_fail(vx_vote_any(odd)")
    cmds = ["continue", "info locals", "info args", "p B", "p nt", "p -lanes v", "p -lanes g",
            "p -lanes (blockIdx.x * 16 + threadIdx.x) % 7 + 1", "p -lanes tid", "p lm->partial[rank]",
            "p -lanes lm->odd[tid]", "p lm->odd[tid - lane]@4", "ptype lm", "whatis B", "p (int)v - 10",
            "p v * 2 + 1 == 2 * v + 1", "p $blockIdx", "p $threadIdx.x", "p/x B", "p/t B", "p arg",
            "p nosuch", "p $tmask", "p $cta_rank == rank", "p $thread_id == lane", "p $num_threads", "lane 2", "p v",
            "p g", "p &total", "info address lm"]
    s = Session(vx, os.path.join(ex, "reduce.elf"), cmds, ["--break", f"reduce.c:{line}"])
    t = s.tag()
    check(not [e for e in s.errors() if "nosuch" not in e], f"{t}: errors {s.errors()}")
    locals_ = {v["name"]: v["text"] for v in s.output("info locals").get("variables", [])}
    for name in ["lm", "B", "lane", "rank", "nwarps", "nt", "tid", "block", "g", "v", "s", "odd", "ballot"]:
        check(name in locals_, f"{t}: info locals lacks {name}: {sorted(locals_)}")
    check(locals_.get("B") == "16" and locals_.get("nt") == str(NT), f"{t}: info locals B/nt {locals_}")
    args = {v["name"]: v["text"] for v in s.output("info args").get("variables", [])}
    check(args == {"arg": "<optimized out>"}, f"{t}: info args {args}")
    check(value_of(s, "p B") == 16 and value_of(s, "p nt") == NT, f"{t}: B, nt")
    v = lane_values(s, "p -lanes v")
    want = lane_values(s, "p -lanes (blockIdx.x * 16 + threadIdx.x) % 7 + 1")
    check(len(v) == NT and v == want, f"{t}: v per lane {v} != (block*16+tid)%7+1 {want}")
    tids = lane_values(s, "p -lanes tid")
    g = lane_values(s, "p -lanes g")
    check(all(int(g[l]) % 7 + 1 == int(v[l]) for l in v), f"{t}: g {g} and v {v}")
    check(int(text_of(s, "p lm->partial[rank]")) == sum(int(x) for x in v.values()),
          f"{t}: lm->partial[rank] is the warp's sum of v {v}")
    odd = lane_values(s, "p -lanes lm->odd[tid]")
    check(all(int(odd[l]) == int(v[l]) & 1 for l in v), f"{t}: lm->odd[tid] {odd} vs v {v}")
    arr = text_of(s, "p lm->odd[tid - lane]@4")
    check(arr == "{" + ", ".join(str(int(v[l]) & 1) for l in sorted(v)) + "}", f"{t}: @4 gives {arr}")
    pt = s.output("ptype lm").get("type", "")
    check(pt.startswith("struct reduce_lmem {") and "uint32_t partial[64];" in pt and pt.endswith("} *"),
          f"{t}: ptype lm {pt!r}")
    check(s.output("whatis B").get("type") == "const uint32_t", f"{t}: whatis B {s.output('whatis B')}")
    check(value_of(s, "p (int)v - 10") == int(v[0]) - 10, f"{t}: (int)v - 10")
    check(value_of(s, "p v * 2 + 1 == 2 * v + 1") == 1, f"{t}: comparison")
    check(text_of(s, "p/x B") == "0x10" and text_of(s, "p/t B") == "10000", f"{t}: p/x, p/t")
    check(text_of(s, "p arg") == "<optimized out>", f"{t}: p arg")
    check(any('no symbol "nosuch"' in e for e in s.errors()), f"{t}: p nosuch {s.errors()}")
    # Another lane: its own values.
    check(value_of(s, "p v") == int(v[2]) and value_of(s, "p g") == int(g[2]), f"{t}: lane 2's v and g")
    bi = s.output("p $blockIdx").get("text", "")
    check(re.fullmatch(r"\{x = \d+, y = 0, z = 0\}", bi) is not None, f"{t}: $blockIdx {bi!r}")
    check(s.output("info address lm").get("kind") == "register", f"{t}: info address lm")
    # CSRs by name, against the C locals the kernel read from them.
    check(value_of(s, "p $tmask") == (1 << NT) - 1 and value_of(s, "p $num_threads") == NT, f"{t}: $tmask, $num_threads")
    check(value_of(s, "p $cta_rank == rank") == 1 and value_of(s, "p $thread_id == lane") == 1, f"{t}: CSRs vs locals")

    # set var changes the final result as the kernel's arithmetic says: total starts at 100 instead of
    # 0, and warp 0's partial sum (1 + 2 + 3 + 4) becomes 5.
    def prefix_sum(n):
        r = n % 7
        return (n // 7) * 28 + r * (r + 1) // 2
    want = prefix_sum(8 * 16)
    s = Session(vx, os.path.join(ex, "reduce.elf"), ["continue", "set var total = 100", "p total", "delete", "continue"],
                ["--break", "reduce"])
    check(value_of(s, "p total") == 100, f"{s.tag()}: p total after set var")
    check(any(f"total {want + 100} (expected {want})" in c for c in s.console()) and s.exit().get("exit_code") == 1,
          f"{s.tag()}: set var total: {s.console()} {s.exit()}")
    # Warp 0 of the CTA, once it stored its partial (a warp reaching the line earlier can find it 0).
    s = Session(vx, os.path.join(ex, "reduce.elf"),
                [f"break reduce.c:{line} if threadIdx.x == 0", "continue", "p lm->partial[0]",
                 "set var lm->partial[0] = lm->partial[0] - 5", "p ballot",
                 "set var ballot = ballot", "set var $t0 = $t0", "delete", "continue"])
    part = value_of(s, "p lm->partial[0]")
    check(part == 10 and any(f"total {want - 5} (expected {want})" in c for c in s.console()),
          f"{s.tag()}: set var lm->partial[0]: {part} {s.console()}")
    check(not s.errors(), f"{s.tag()}: errors {s.errors()}")

    # diverge: every lane's result against the kernel's own reference, on a warp that diverged.
    def reference(x):
        if x & 1:
            r = x * 5 if x % 3 == 0 else x + 100
        else:
            r = x ^ 0x55 if x * 0.75 > 6.0 else 7 - x
        n, steps = x % 30 + 1, 0
        while n != 1:
            n = 3 * n + 1 if n & 1 else n >> 1
            steps += 1
        return r, steps

    line = source_line(src, "diverge", "vx_fail(got != job.result)")
    s = Session(vx, os.path.join(ex, "diverge.elf"),
                ["continue", "p -lanes job.x", "p -lanes job", "p -lanes job.result / 1000", "p x"],
                ["--break", f"diverge.c:{line}"])
    t = s.tag()
    xs = lane_values(s, "p -lanes job.x")
    check(len(xs) == NT, f"{t}: x in {len(xs)} lanes")
    jobs = lane_values(s, "p -lanes job")
    for lane, x in xs.items():
        r, steps = reference(int(x))
        check(jobs.get(lane) == f"{{x = {x}, result = {r * 1000 + steps}}}", f"{t}: lane {lane} job {jobs.get(lane)}")
    # x's location list ends before this line: gdb says <optimized out> there.
    check(s.output("p x").get("text") == "<optimized out>", f"{t}: p x {s.output('p x')}")
    res = lane_values(s, "p -lanes job.result / 1000")
    check(all(int(res[l]) == reference(int(xs[l]))[0] for l in xs), f"{t}: job.result / 1000 {res}")
    out = s.output("p -lanes job")
    check("lanes" in out and len({e["text"] for e in out["lanes"]}) == len(out["lanes"]),
          f"{t}: per-lane values differ")

    # Inside a divergent branch: only the active lanes are shown; equal values are coalesced.
    line = source_line(src, "diverge", "VX_IF(x % 3u == 0) { r = x * 5u; }")
    s = Session(vx, os.path.join(ex, "diverge.elf"), ["continue", "p -lanes x & 1", "info lanes"],
                ["--break", f"diverge.c:{line}"])
    lanes = lane_values(s, "p -lanes x & 1")
    check(lanes and set(lanes.values()) == {"1"} and len(lanes) < NT,
          f"{s.tag()}: the odd branch holds odd lanes only: {lanes}")
    human = subprocess.run([vx, "run", os.path.join(ex, "diverge.elf"), "--batch", "--no-db", "--break",
                            f"diverge.c:{line}", "-ex", "continue", "-ex", "p -lanes x & 1"],
                           capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL).stdout
    check(re.search(r"lanes [0-9,-]+: 1\n", human) is not None, f"diverge: coalesced lanes line missing:\n{human}")

    # saxpy: floats, a struct through a pointer, an inlined function's optimized-out argument.
    line = source_line(src, "saxpy", "VX_IF(i < p->n) { p->out[i]")
    s = Session(vx, os.path.join(ex, "saxpy.elf"),
                ["continue", "info args", "p -lanes i", "up", "p local", "p local.a", "p local.x[i]",
                 "p local.a * local.x[i] + local.y[i]", "p local.x[i - $lane]@4", "whatis local.a", "p *local.out@2",
                 "p (unsigned char)300", "p/f i", "p 7 / 2", "p 7.0 / 2", "p -1 < 0u"],
                ["--break", f"saxpy.c:{line}"])
    t = s.tag()
    check(not s.errors(), f"{t}: errors {s.errors()}")
    args = {v["name"]: v["text"] for v in s.output("info args").get("variables", [])}
    check(args == {"arg": "<optimized out>"}, f"{t}: inlined saxpy's arg {args}")
    i = int(text_of(s, "p local.x[i]") or -1)
    check(text_of(s, "p local.a") == "2", f"{t}: local.a {text_of(s, 'p local.a')}")
    check(text_of(s, "p local.a * local.x[i] + local.y[i]") == str(2 * i + 1), f"{t}: a*x[i]+y[i] for i={i}")
    i0 = i - s.stops()[0].get("lane", 0)
    check(text_of(s, "p local.x[i - $lane]@4") == "{" + ", ".join(str(i0 + k) for k in range(4)) + "}",
          f"{t}: x[i - $lane]@4 {text_of(s, 'p local.x[i - $lane]@4')}")
    check(s.output("whatis local.a").get("type") == "float", f"{t}: whatis local.a")
    # Pointers into data name their symbol, as gdb prints them.
    check(re.fullmatch(r"\{n = 256, a = 2, x = 0x[0-9a-f]+ <x_buf>, y = 0x[0-9a-f]+ <y_buf>, out = 0x[0-9a-f]+ <out_buf>\}",
                       text_of(s, "p local")) is not None, f"{t}: p local {text_of(s, 'p local')!r}")
    check(text_of(s, "p (unsigned char)300") == "44 ','", f"{t}: (unsigned char)300")
    check(value_of(s, "p 7 / 2") == 3 and text_of(s, "p 7.0 / 2") == "3.5", f"{t}: int and float division")
    check(text_of(s, "p -1 < 0u") == "0", f"{t}: -1 < 0u is false in C")


# --- Frames and display -------------------------------------------------------------------------

def check_frames(vx, ex, src):
    s = Session(vx, os.path.join(ex, "reduce.elf"),
                ["continue", "backtrace", "frame", "info locals", "up", "info frame", "p tid", "p block == blockIdx.x", "p g == block * 16 + tid", "down", "down", "frame 7",
                 "display v", "display g", "next"],
                ["--break", "warp_sum"])
    t = s.tag()
    check(s.output("frame").get("function") == "warp_sum" and s.output("frame").get("inlined") is True,
          f"{t}: frame 0 is the inlined warp_sum")
    # Frame 0's arguments in the backtrace: warp_sum(v, lane, tid, nthreads) with the lane's values.
    bt = s.output("backtrace").get("frames", [{}])
    args = {a["name"]: a["text"] for a in bt[0].get("args", [])}
    check(set(args) == {"v", "lane", "tid", "nthreads"} and args.get("nthreads") == "16" and
          int(args.get("v", 0)) == int(args.get("tid", -1)) % 7 + 1, f"{t}: backtrace args {args}")
    names = [v["name"] for v in s.output("info locals").get("variables", [])]
    check("off" in names and "tid" not in names, f"{t}: warp_sum's locals {names}")
    up = s.output("up")
    check(up.get("function") == "reduce" and up.get("level") == 1, f"{t}: up {up}")
    check(up.get("line") == source_line(src, "reduce", "uint32_t s = warp_sum(v, lane, tid, B);"),
          f"{t}: up shows the call's line {up}")
    check("cfa" in s.output("info frame"), f"{t}: info frame")
    check(value_of(s, "p block == blockIdx.x") == 1 and value_of(s, "p g == block * 16 + tid") == 1,
          f"{t}: the caller's block, g and tid")
    downs = s.outputs("down")
    check(len(downs) == 1 and downs[0].get("level") == 0, f"{t}: down once")
    errs = s.errors()
    check(any("cannot go down" in e for e in errs), f"{t}: down past the bottom {errs}")
    check(any("frame 7" in e and "frames (backtrace lists them)" in e for e in errs), f"{t}: frame 7 {errs}")
    disp = [e for e in s.of("output") if "display" in e]
    # display shows at once, then after the stop of `next`, in order of their numbers.
    ids = [e["display"] for e in disp]
    check(ids[:1] == [1] and ids[-2:] == [1, 2] and len(ids) == 4, f"{t}: display order {ids}")

    # Physical callers: diverge's vx_serial calls reference_lane(&job), which calls the noinline
    # reference(job->x) with job.x = x = vx_global_linear(). The second hit is the second lane.
    s = Session(vx, os.path.join(ex, "diverge.elf"),
                ["continue", "continue", "backtrace", "p x", "up", "p job->x", "p job->result", "p job",
                 "info args", "info locals", "info frame", "set var job = 0", "down", "p x", "frame 1", "p job->x + 1", "frame 0",
                 "up 5"],
                ["--break", "reference"])
    t = s.tag()
    stops = s.stops()
    if check(len(stops) == 2, f"{t}: {len(stops)} stops; errors {s.errors()}"):
        st = stops[1]
        x = int(st.get("cta", [0])[0]) * 16 + int(st.get("thread", [0])[0])
        bt = s.output("backtrace").get("frames", [])
        check([f.get("function") for f in bt[:2]] == ["reference", "reference_lane"] and
              not any(f.get("inlined") for f in bt[:2]), f"{t}: backtrace {bt}")
        args = [{a["name"]: a["text"] for a in f.get("args", [])} for f in bt[:2]]
        check(len(args) == 2 and args[0] == {"x": str(x)}, f"{t}: frame 0's args {args} (x = {x})")
        check(len(args) == 2 and re.fullmatch(r"0x[0-9a-f]+", args[1].get("arg", "")) is not None and
              int(args[1]["arg"], 16) == value_of(s, "p job") and args[1].get("lane") == "<not available>",
              f"{t}: frame 1's args {args}; job {text_of(s, 'p job')}")
        check([o.get("value") for o in s.outputs("p x")] == [x, x], f"{t}: reference's x, before and after up/down")
        up = s.output("up")
        check(up.get("level") == 1 and up.get("function") == "reference_lane" and up.get("physical") == 1 and
              up.get("line") == source_line(src, "diverge", "job->result = reference(job->x);"), f"{t}: up {up}")
        check(value_of(s, "p job->x") == x and value_of(s, "p job->result") == 0, f"{t}: the caller's job")
        names = [v["name"] for v in s.output("info locals").get("variables", [])]
        check(names == ["job"], f"{t}: reference_lane's locals {names}")
        info = s.output("info frame")
        check(info.get("cfa") is not None and info.get("caller") == "vx_serial" and
              info.get("registers", {}).get("ra") == up.get("pc") and "a0" not in info.get("registers", {}),
              f"{t}: info frame {info}")
        downs = s.outputs("down")
        check(downs and downs[0].get("level") == 0 and downs[0].get("function") == "reference", f"{t}: down {downs}")
        check(s.outputs("frame 1") and s.outputs("frame 1")[0].get("function") == "reference_lane" and
              value_of(s, "p job->x + 1") == x + 1, f"{t}: frame 1 by number")
        errs = s.errors()
        check(any("cannot go up" in e for e in errs), f"{t}: up past the outermost frame {errs}")
        check(any("register of a caller's frame" in e for e in errs), f"{t}: set var in a caller's register {errs}")
        check(not [e for e in errs if "cannot go up" not in e and "caller's frame" not in e], f"{t}: errors {errs}")

    # A kernel function's breakpoint is on the kernel's own source; step goes through the runtime's
    # inline helpers (skipped by default) until `skip delete`.
    s = Session(vx, os.path.join(ex, "reduce.elf"),
                ["continue", "delete", "info skip", "step", "step", "step", "skip delete", "step", "step",
                 "skip function prefix_sum", "info skip"], ["--break", "reduce"])
    t = s.tag()
    stops = s.stops()
    check(len(stops) == 6, f"{t}: {len(stops)} stops; errors {s.errors()}")
    check(stops and stops[0].get("function") == "reduce" and stops[0].get("file", "").endswith("examples/reduce.c"),
          f"{t}: break reduce stops on reduce.c: {stops[:1]}")
    infos = s.outputs("info skip")
    skips = [r["pattern"] for r in infos[0].get("skips", [])] if infos else []
    check(skips == ["vx_intrinsics.h", "vx_runtime.h", "vx_print.h", "start.S", "vx_runtime.c", "vx_print.c"],
          f"{t}: default skips {skips}")
    check(all(not st.get("file", "").endswith(".h") for st in stops[1:4]),
          f"{t}: step with the headers skipped stays out of them: {[st.get('file') for st in stops[1:4]]}")
    check(any(st.get("file", "").endswith("runtime/vx_intrinsics.h") for st in stops[4:]),
          f"{t}: after skip delete, step enters the helpers: {[st.get('file') for st in stops[4:]]}")
    skips = s.outputs("info skip")
    check(len(skips) == 2 and [r["pattern"] for r in skips[1].get("skips", [])] == ["prefix_sum"],
          f"{t}: skip function {skips[-1:]}")

    # Commands not done are said to be so.
    s = Session(vx, os.path.join(ex, "reduce.elf"), ["set var x = 1", "set x = 1"])
    check(len(s.errors()) == 2, f"{s.tag()}: set var before the kernel starts, set without var: {s.errors()}")


# --- Scripted stops -------------------------------------------------------------------------------

def check_scripts(vx, ex, src, tmpdir):
    reduce_elf = os.path.join(ex, "reduce.elf")
    l81 = source_line(src, "reduce", "vx_fail(vx_vote_any(odd)")
    l74 = source_line(src, "reduce", "uint32_t s = warp_sum(v, lane, tid, B);")
    script = os.path.join(tmpdir, "cmds.vx")
    with open(script, "w") as f:
        f.write(f"break reduce.c:{l81}\ncommands\n  silent\n  printf \"bp v=%u g=%u\\n\", v, g\nend\n"
                "define both\n  echo one\\n\n  echo two\\n\nend\n")
    s = Session(vx, reduce_elf, [f"source {script}", "continue", f'dprintf reduce.c:{l74},"dp v=%u g=%u\\n", v, g',
                                 "continue", "both", "ignore 1 2", "continue 2", "info line reduce.c:81",
                                 "info symbol $pc", "x/2f &total", "disassemble /s", "until", f"advance reduce.c:{l81 + 20}"])
    t = s.tag()
    check(not s.errors(), f"{t}: errors {s.errors()}")
    printed = [e for e in s.of("output") if "printf" in e or "echo" in e]
    texts = [e.get("printf", e.get("echo")) for e in printed]
    # Each printf's values are the kernel's: v = g % 7 + 1.
    pairs = [tuple(int(x) for x in re.findall(r"=(\d+)", t_)) for t_ in texts if t_.startswith(("bp", "dp"))]
    check(pairs and all(v == g % 7 + 1 for v, g in pairs), f"{t}: printf values {texts}")
    # Silent breakpoints: no stop header; the dprintf lines come before the next bp line, in hit order.
    check(not [st for st in s.stops() if 1 in st.get("breakpoints", []) or 2 in st.get("breakpoints", [])]
          and texts[:1] and texts[0].startswith("bp"), f"{t}: silent stops and order {texts}")
    check("one" in texts and "two" in texts and texts.index("one") < texts.index("two"), f"{t}: define {texts}")
    check(any(x.startswith("dp") for x in texts), f"{t}: dprintf printed nothing: {texts}")
    ign = s.output("ignore 1 2")
    check(ign.get("ignore") == 2, f"{t}: ignore {ign}")
    line = s.output("info line reduce.c:81")
    check(line.get("line") == l81 and line.get("start", 0) < line.get("end", 0), f"{t}: info line {line}")
    check(s.output("info symbol $pc").get("symbol") == "reduce", f"{t}: info symbol")
    dis = s.output("disassemble /s").get("text", "")
    check(f"reduce.c:{l81}\n{l81}\t  vx_fail(vx_vote_any(odd)" in dis, f"{t}: disassemble /s lacks line {l81}")
    xf = s.output("x/2f &total")
    check(len(xf.get("values", [])) == 2 and all(isinstance(v, float) for v in xf.get("values", [])), f"{t}: x/2f {xf}")
    stops = s.stops()
    # reduce.c:101 has no code: the location moves to the next line with code, as break does. As gdb's
    # advance, it is the focus lane's: it stops there, or when the lane's frame returns first (line 101
    # is in `if (rank == 0)`, which other warps' lanes never reach); a step stop, no breakpoint number.
    last = stops[-1] if stops else {}
    check(last.get("reason") == "step" and (l81 + 20 <= last.get("line", 0) <= l81 + 22 or
                                             last.get("function") == "_start"),
          f"{t}: advance {stops[-1:] if stops else None}")
    # Output order of a silent breakpoint's commands and dprintf: strictly in the order of the hits.
    human = subprocess.run([vx, "run", reduce_elf, "--batch", "--no-db", "-ex",
                            f'dprintf reduce.c:{l74},"first %u\\n", g', "-ex",
                            f'dprintf reduce.c:{l81},"second %u\\n", g', "-ex", "continue"],
                           capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL).stdout
    seq = re.findall(r"^(first|second) (\d+)$", human, re.M)
    firsts = [int(g) for w, g in seq if w == "first"]
    # printf runs in the focus lane (lane 0) of each warp that hits: g = 0, 4, ..., 124, each once.
    check(sorted(firsts) == list(range(0, 128, 4)), f"dprintf: every warp's g once: {firsts[:8]}...")
    # A warp's "second" comes after its own "first".
    seen = set()
    ok = True
    for w, g in seq:
        g = int(g)
        if w == "first":
            seen.add(g)
        elif g not in seen:
            ok = False
    check(ok and "Breakpoint" not in human.split("Dprintf 2")[1], f"dprintf order and silence:\n{human[:600]}")
    # Tab completion of commands and C names at the prompt.
    outs, status = pty_session(vx, ["run", reduce_elf, "--no-db"], [(b"disas\t", 1.0), (b"\x15", 1.0),
                                                                      (b"p tota\t\n", 2.0), (b"quit\n", 2.0)])
    check("semble" in outs[1] and "l" in outs[3].split("tota", 1)[-1][:40], f"tab completion: {outs[1:4]}")


# --- Faults ---------------------------------------------------------------------------------------

def pty_session(vx, args, steps):
    """Runs vxreplay on a pseudo-terminal; steps are (bytes to send, at most how many seconds to wait
    for the next prompt). Returns the output after each step and the exit status."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(vx, [vx, *args])

    def read_for(seconds):
        out, end = b"", time.time() + seconds
        while time.time() < end and not out.endswith(b"(vxreplay) "):
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
        return out.decode(errors="replace")

    outs = [read_for(10)]
    for data, wait in steps:
        os.write(fd, data)
        outs.append(read_for(wait))
    deadline = time.time() + 20
    while time.time() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return outs, os.waitstatus_to_exitcode(status)
        read_for(0.1)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return outs, None


def check_faults(vx, ex, src):
    reduce_elf = os.path.join(ex, "reduce.elf")
    # A plain run that stopped reports the stop, not a stale exit code; an assertion as one.
    p = subprocess.run([vx, "run", os.path.join(ex, "fault.elf")], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    check("stopped: " in p.stdout and "exit code" not in p.stdout, f"plain run of fault: {p.stdout!r}")
    p = subprocess.run([vx, "run", os.path.join(ex, "assert.elf")], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    check("stopped: assertion failed" in p.stdout and "EBREAK" not in p.stdout and "exit code" not in p.stdout,
          f"plain run of assert: {p.stdout!r}")
    # Any debugging flag makes a session, which reads stdin though it is not a terminal; a plain
    # run never reads it.
    p = subprocess.run([vx, "run", reduce_elf, "--no-db"], input="p 6 * 7\n", capture_output=True, text=True,
                       timeout=60)
    check("6 * 7 = 42" in p.stdout, f"--no-db session reads piped commands: {p.stdout!r}")
    p = subprocess.run([vx, "run", reduce_elf], input="p 6 * 7\n", capture_output=True, text=True, timeout=60)
    check("= 42" not in p.stdout and "exit code: 0" in p.stdout, f"a plain run ignores stdin: {p.stdout!r}")
    # p/u and p/x use the 32-bit width; finish shows the returned value; one pass is "1 pass".
    p = subprocess.run([vx, "run", reduce_elf, "--batch", "--no-db", "-ex", "p/u -1", "-ex", "p/x -1", "-ex",
                        "p/u 0x100000000", "-ex", "continue"], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    check("-1 = 4294967295" in p.stdout and "-1 = 0xffffffff" in p.stdout and "0x100000000 = 4294967296" in p.stdout,
          f"p/u width: {p.stdout!r}")
    check(" over 1 pass " in p.stdout and "1 passes" not in p.stdout, f"'1 pass': {p.stdout[-300:]!r}")
    s = Session(vx, os.path.join(ex, "diverge.elf"), ["continue", "p x", "delete", "finish"], ["--break", "reference"])
    ret = [e for e in s.of("output") if "returned" in e]
    x = value_of(s, "p x")
    check(len(ret) == 1 and x is not None, f"{s.tag()}: finish shows the returned value: {s.events[-4:]}")
    if ret and x is not None:
        # diverge's reference(x) returns r * 1000 + steps.
        xi = int(x)
        r = (xi * 5 if xi % 3 == 0 else xi + 100) if xi & 1 else ((xi ^ 0x55) if xi * 0.75 > 6 else 7 - xi)
        n, steps = xi % 30 + 1, 0
        while n != 1:
            n = 3 * n + 1 if n & 1 else n >> 1
            steps += 1
        check(ret[0]["returned"] == (r * 1000 + steps) & 0xffffffff, f"{s.tag()}: returned {ret[0]} for x={xi}")
    # The stop header lists each hit warp with its own location: another warp whose quantum ended on
    # another breakpoint (1x2x8x8, seed 1: from the 4th stop a warp waits at reduce.c:81).
    args = [vx, "run", reduce_elf, "--config", "1x2x8x8", "--batch", "--no-db"]
    for line in (74, 75, 76, 79, 81):
        args += ["--break", f"reduce.c:{line}"]
    p = subprocess.run(args + ["-ex", "continue"] * 6, capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    also = re.findall(r"also here: .*", p.stdout)
    check(any(re.search(r"at 0x[0-9a-f]{8} in reduce \(reduce\.c:\d+\)", a) for a in also),
          f"'also here' names each warp's own location: {also}")
    # Ctrl-C at the prompt drops the line and the session goes on; Enter after x/2dw goes on.
    outs, status = pty_session(vx, ["run", reduce_elf, "--no-db"], [
        (b"p 111 + 1", 0.2), (b"\x03", 2.0), (b"p 2 + 2\n", 1.0),
        (b"break reduce.c:81\n", 2.0), (b"continue\n", 20.0),
        (b"x/2dw &total\n", 2.0), (b"\n", 2.0), (b"quit\n", 2.0)])
    everything = "".join(outs)
    check("= 112" not in everything, f"Ctrl-C at the prompt drops the line: {everything[-800:]!r}")
    check("2 + 2 = 4" in everything, f"the session goes on after Ctrl-C: {everything[-800:]!r}")
    addrs = re.findall(r"(0x[0-9a-f]{8})(?: <[^>]*>)?:", outs[6] + outs[7])
    check(len(addrs) >= 2 and int(addrs[1], 16) == int(addrs[0], 16) + 8,
          f"Enter after x/2dw shows the next words: {addrs} in {(outs[6] + outs[7])!r}")
    check(status == 0, f"quit after Ctrl-C: status {status}")


# --- Against gdb ----------------------------------------------------------------------------------

def gdb_scope(gdb, elf, pc):
    """{name: where} from gdb's `info scope *pc`: ('register', '$a5'), ('memory', None),
    ('value', None), ('optimized out', None), ('unavailable', None); None for what is not compared."""
    p = subprocess.run([gdb, "-nx", "-batch", "-ex", f"info scope *{pc:#x}", elf], capture_output=True, text=True,
                       timeout=120)
    out = {}
    blocks = re.split(r"\nSymbol ", "\n" + p.stdout)
    for b in blocks[1:]:
        m = re.match(r"(\w+) is (.*)", b, re.S)
        if not m or m.group(1) in out:  # the first (innermost) declaration wins
            continue
        name, rest = m.group(1), m.group(2)
        if rest.startswith("a function"):
            continue
        if rest.startswith("optimized out"):
            out[name] = ("optimized out", None)
        elif rest.startswith("a variable in $"):
            out[name] = ("register", re.match(r"a variable in (\$\w+)", rest).group(1))
        elif rest.startswith("multi-location"):
            where = ("unavailable", None)
            for r in re.finditer(r"Range (0x[0-9a-f]+)-(0x[0-9a-f]+): (.*?)(?=\n  Range|\n,|$)", rest, re.S):
                lo, hi = int(r.group(1), 16), int(r.group(2), 16)
                if lo <= pc < hi:
                    what = r.group(3)
                    if what.startswith("a variable in $"):
                        where = ("register", re.match(r"a variable in (\$\w+)", what).group(1))
                    elif what.startswith("the constant") or "DW_OP_stack_value" in what:
                        where = ("value", None)
                    else:
                        where = None
            out[name] = where
        elif rest.startswith("a variable at frame base") or rest.startswith("static storage"):
            out[name] = ("memory", None)
        else:
            out[name] = None
    return out


def check_gdb(vx, ex, src):
    gdb = shutil.which("gdb-multiarch")
    if not gdb:
        check(False, "gdb-multiarch is not installed (scripts/install-deps.sh installs it)")
        return
    alias = {"$fp": "$s0"}
    cases = [("reduce", f"reduce.c:{source_line(src, 'reduce', 'vx_fail(vx_vote_any(odd)')}"),
             ("reduce", "warp_sum"),
             ("diverge", f"diverge.c:{source_line(src, 'diverge', 'vx_fail(got != job.result)')}"),
             ("saxpy", f"saxpy.c:{source_line(src, 'saxpy', 'VX_IF(i < p->n) { p->out[i]')}")]
    compared = 0
    for kernel, loc in cases:
        elf = os.path.join(ex, kernel + ".elf")
        first = Session(vx, elf, ["continue"], ["--break", loc])
        stops = first.stops()
        if not check(stops and "pc" in stops[0], f"{first.tag()}: no stop"):
            continue
        pc = stops[0]["pc"]
        want = gdb_scope(gdb, elf, pc)
        names = [n for n, w in want.items() if w is not None]
        check(len(names) >= 3, f"{kernel} at {pc:#x}: gdb gave {want}")
        s = Session(vx, elf, ["continue"] + [f"info address {n}" for n in names], ["--break", loc])
        for n in names:
            got = s.output(f"info address {n}")
            kind, reg = want[n]
            ok = got.get("kind") == kind and (kind != "register" or alias.get(reg, reg) == alias.get(
                got.get("register"), got.get("register")))
            check(ok, f"{kernel} at {pc:#x}: {n}: gdb says {want[n]}, vxreplay {got}")
            compared += 1
    check(compared >= 20, f"only {compared} variables compared with gdb")


def main():
    checks = {"variables": check_variables, "frames": check_frames, "faults": check_faults, "gdb": check_gdb,
              "scripts": lambda vx, ex, src: check_scripts(vx, ex, src, tempfile.mkdtemp())}
    return run_checks(checks)


if __name__ == "__main__":
    sys.exit(main())
