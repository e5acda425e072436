#!/usr/bin/env bash
# The prompt as a daily debugger (issue 25), through the real binary, each figure against a baseline
# measured in the same run (medians of 3 sessions, 7 for sgemm):
#  1. sgemm with a 32x32 grid (block 4x4): `break sgemm if` a condition true only in the last CTA
#     (4096 hits, one of them kept), continued to its one real stop, with the store and without,
#     against the plain run; and the same with the breakpoint in the inner k loop (524,288 hits);
#     then (issue 32) conditions on C locals (row and col, true only in the last CTA) at the store
#     of C after the loops (once per warp, 4096 hits: row and col are not yet computed at sgemm's
#     first line) and in the inner k loop, each beside the blockIdx condition at the same line.
#     The plain run and every session alternate (7 rounds; medians of the wall time and of the CPU
#     time, user + system, which the machine's load inflates less; and the fastest CPU time against
#     the plain run's fastest), so a change in the load falls on all of them alike;
#  2. stepi 1000 in hang, with the store and without (the stop event's elapsed_ms), and the session's
#     checkpoints;
#  3. print -lanes of a local (reduce's v) in a 32-thread warp (config 1x1x4x32): 20 prints against
#     the same session without them, per print.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/vxreplay ] || scripts/build.sh >/dev/null
vx="$PWD/build/vxreplay"
ex="$PWD/build/examples"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "date: $(date -u +%Y-%m-%d)  nproc: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
python3 - "$vx" "$ex" "$tmp" "$PWD" <<'PY'
import json, os, resource, shutil, statistics, subprocess, sys, time
vx, ex, tmp, src = sys.argv[1:5]

def timed(args, reps=3):
    ts = []
    for _ in range(reps):
        shutil.rmtree(os.path.join(tmp, "db"), ignore_errors=True)
        t = time.perf_counter()
        p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        ts.append(time.perf_counter() - t)
        if p.returncode != 0:
            sys.exit(f"failed ({p.returncode}): {' '.join(args)}: {p.stderr[-400:]}")
    return statistics.median(ts), p.stdout

def timed_cpu(args):
    # One process: its wall time and its CPU time (user + system; the load does not inflate it).
    shutil.rmtree(os.path.join(tmp, "db"), ignore_errors=True)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    t = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(args)}: {p.stderr[-400:]}")
    return t, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), p.stdout

def session_args(elf, commands, extra=(), store=False):
    args = [vx, "run", os.path.join(ex, elf), "--batch", *extra]
    args += ["--db", os.path.join(tmp, "db")] if store else ["--no-db"]
    for c in commands:
        args += ["-ex", c]
    return args

def session(elf, commands, extra=(), store=False, reps=3):
    return timed(session_args(elf, commands, extra, store), reps)

sgemm_c = list(open(os.path.join(src, "examples", "sgemm.c")))
line = next(i for i, l in enumerate(sgemm_c, 1) if "acc += As[ty * T + k]" in l)
store_line = next(i for i, l in enumerate(sgemm_c, 1) if "sgemm_C[row * N + col] = acc;" in l)
shape = ["--grid", "32,32", "--block", "4,4"]
last = "if blockIdx.x == 31 && blockIdx.y == 31"
# row = blockIdx.y * 4 + ty, col = blockIdx.x * 4 + tx: both >= 124 only in CTA (31,31).
last_c = "if row >= 124 && col >= 124"
variants = []  # (label, --break argument, store)
for where, loc, conds in (("at sgemm", "sgemm", (last,)),
                          (f"at the store of C (sgemm.c:{store_line})", f"sgemm.c:{store_line}", (last, last_c)),
                          ("in the k loop", f"sgemm.c:{line}", (last, last_c))):
    for cond in conds:
        for store in (False, True):
            variants.append((f"{cond[3:]} {where}", f"{loc} {cond}", store))
plain_args = [vx, "run", os.path.join(ex, "sgemm.elf"), *shape]
times, cpus, outs = {}, {}, {}
def one(key, args):
    t, c, out = timed_cpu(args)
    times.setdefault(key, []).append(t)
    cpus.setdefault(key, []).append(c)
    outs[key] = out
for _ in range(7):  # alternating rounds: the plain run, then every session
    one("plain", plain_args)
    for label, brk, store in variants:
        one((label, store), session_args("sgemm.elf", ["continue"], [*shape, "--break", brk], store=store))
plain, plain_cpu = statistics.median(times["plain"]), statistics.median(cpus["plain"])
print(f"plain run, sgemm 32x32 grid: {plain:.2f} s, {plain_cpu:.2f} s CPU (medians of {len(times['plain'])}, "
      f"alternating with the sessions below)")
for label, brk, store in variants:
    t, c = statistics.median(times[(label, store)]), statistics.median(cpus[(label, store)])
    out = outs[(label, store)]
    stops = [l for l in out.splitlines() if "(cta " in l]
    if len(stops) != 1 or "(cta 31,31,0)" not in stops[0]:
        sys.exit(f"break {brk}: expected one stop, in cta 31,31; got {stops}")
    best = min(cpus[(label, store)]) / min(cpus["plain"])
    print(f"break {label}, {'with' if store else 'without'} the store: {t:.2f} s = {t / plain:.2f}x the plain run, "
          f"CPU {c:.2f} s = {c / plain_cpu:.2f}x (fastest against fastest: {best:.2f}x); one stop, cta 31,31")

for store in (False, True):
    # The stop event's own elapsed_ms: the command's time without the process around it.
    ms, cps = [], None
    for _ in range(5):
        _, out = session("hang.elf", ["continue", "delete", "stepi 1000"], ["--json", "--break", "hang"], store=store, reps=1)
        events = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
        ms.append([e for e in events if e.get("event") == "stop"][-1]["elapsed_ms"])
        cps = events[-1].get("stats", {}).get("checkpoints")
    print(f"stepi 1000 in hang {'with' if store else 'without'} the store: {statistics.median(ms):.1f} ms "
          f"(median of 5); {cps} checkpoints in the session (the breakpoint's stop and the stepi's)")

cfg = ["--config", "1x1x4x32", "--block", "32"]
rline = next(i for i, l in enumerate(open(os.path.join(src, "examples", "reduce.c")), 1) if "vx_fail(vx_vote_any(odd)" in l)
base, _ = session("reduce.elf", ["continue"], [*cfg, "--break", f"reduce.c:{rline}"], reps=5)
t, out = session("reduce.elf", ["continue"] + ["print -lanes v"] * 20, [*cfg, "--break", f"reduce.c:{rline}"], reps=5)
lanes = sum(1 for l in out.splitlines() if l.startswith("  lane"))
print(f"print -lanes v in a 32-thread warp: {(t - base) / 20 * 1000:.2f} ms per print "
      f"({lanes // 20} value groups each; session {t:.2f} s against {base:.2f} s)")
PY
