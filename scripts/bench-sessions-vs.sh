#!/usr/bin/env bash
# Debugger sessions against another vxreplay binary (an older build: the baseline) in the same run,
# on sgemm (1x1x4x4) with a breakpoint in the inner loop: 200 continues (re-launch stop to stop),
# the same with the checkpoint store, 500 stepi by re-launch, and 500 stepi live. Both binaries run
# each session in alternation (which goes first alternates too); medians of the processes' CPU and wall times, and the median of the
# ratios pair by pair (this build / baseline: below 1 is faster), which holds when the machine's
# speed drifts during the run.
# Usage: scripts/bench-sessions-vs.sh BASELINE_VXREPLAY [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sgemm-session-setup.sh
python3 - "$PWD/build/vxreplay" "$1" "$PWD/build/examples/sgemm.elf" "$line" "${2:-9}" <<'PY'
import os, resource, shutil, statistics, subprocess, sys, tempfile, time
new, base, elf, line, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
pin = ["taskset", "-c", os.environ["BENCH_PIN_CPU"]] if os.environ.get("BENCH_PIN_CPU") else []
brk = ["-ex", f"break sgemm.c:{line}"]
cases = [
    ("200 continues, re-launch, no store", ["--no-db"] + brk + ["-ex", "continue"] * 200),
    ("200 continues, re-launch, store", ["--db", None] + brk + ["-ex", "continue"] * 200),
    ("500 stepi, re-launch", ["--no-db"] + brk + ["-ex", "continue"] + ["-ex", "stepi"] * 500),
    ("500 stepi, live", ["--live", "--no-db"] + brk + ["-ex", "continue"] + ["-ex", "stepi"] * 500),
]
tmp = tempfile.mkdtemp()

def once(vx, args):
    db = os.path.join(tmp, "db")
    shutil.rmtree(db, ignore_errors=True)
    args = [db if a is None else a for a in args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(pin + [vx, "run", elf, "--batch"] + args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"{vx} failed ({p.returncode}): {p.stderr[-300:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall

print(f"{'session':38} {'cpu ms':>9} {'base':>9} {'ratio':>6}   {'wall ms':>9} {'base':>9} {'ratio':>6}")
for name, args in cases:
    once(new, args), once(base, args)  # warm-up
    r = {"new": [], "base": []}
    for i in range(runs):  # which goes first alternates too
        for who in (("new", "base") if i % 2 == 0 else ("base", "new")):
            r[who].append(once(new if who == "new" else base, args))
    cn, cb = (statistics.median(x[0] for x in r[v]) * 1e3 for v in ("new", "base"))
    wn, wb = (statistics.median(x[1] for x in r[v]) * 1e3 for v in ("new", "base"))
    cr = statistics.median(a[0] / b[0] for a, b in zip(r["new"], r["base"]))
    wr = statistics.median(a[1] / b[1] for a, b in zip(r["new"], r["base"]))
    print(f"{name:38} {cn:9.1f} {cb:9.1f} {cr:6.3f}   {wn:9.1f} {wb:9.1f} {wr:6.3f}")
shutil.rmtree(tmp, ignore_errors=True)
PY
