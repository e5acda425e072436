#!/usr/bin/env bash
# The prompt as a daily debugger (issue 25), through the real binary, each figure against a baseline
# measured in the same run (medians of 3 sessions):
#  1. sgemm with a 32x32 grid (block 4x4): `break sgemm if` a condition true only in the last CTA
#     (4096 hits, one of them kept), continued to its one real stop, with the store and without,
#     against the plain run; and the same with the breakpoint in the inner k loop (524,288 hits);
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
import json, os, shutil, statistics, subprocess, sys, time
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

def session(elf, commands, extra=(), store=False, reps=3):
    args = [vx, "run", os.path.join(ex, elf), "--batch", *extra]
    args += ["--db", os.path.join(tmp, "db")] if store else ["--no-db"]
    for c in commands:
        args += ["-ex", c]
    return timed(args, reps)

line = next(i for i, l in enumerate(open(os.path.join(src, "examples", "sgemm.c")), 1)
            if "acc += As[ty * T + k]" in l)
shape = ["--grid", "32,32", "--block", "4,4"]
plain, _ = timed([vx, "run", os.path.join(ex, "sgemm.elf"), *shape])
last = "if blockIdx.x == 31 && blockIdx.y == 31"
for where, loc in (("at sgemm", "sgemm"), ("in the k loop", f"sgemm.c:{line}")):
    for store in (False, True):
        t, out = session("sgemm.elf", ["continue"], [*shape, "--break", f"{loc} {last}"], store=store)
        ends = [l for l in out.splitlines() if l.startswith("session:")]
        print(f"conditional breakpoint {where}, sgemm 32x32 grid, {'with' if store else 'without'} the store: "
              f"{t:.2f} s = {t / plain:.2f}x the plain run ({plain:.2f} s); {ends[-1][:120] if ends else ''}")

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
