#!/usr/bin/env bash
# What durability costs a debugging session (docs/store.md, "Durability"): a scripted session of 1000
# stops on sgemm (1x1x4x4, a breakpoint in the inner loop, 1000 continues by re-launch) with the
# checkpoint store against the same session without it (--no-db), for this build and for a baseline
# binary (an older build) in the same run, in alternation; medians of the processes' CPU and wall
# times, and the median of the ratios pair by pair.
# Usage: scripts/bench-durability.sh BASELINE_VXREPLAY [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sgemm-session-setup.sh
python3 - "$PWD/build/vxreplay" "$1" "$PWD/build/examples/sgemm.elf" "$line" "${2:-5}" <<'PY'
import atexit, os, resource, shutil, statistics, subprocess, sys, tempfile, time
new, base, elf, line, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
pin = ["taskset", "-c", os.environ["BENCH_PIN_CPU"]] if os.environ.get("BENCH_PIN_CPU") else []
script = ["-ex", f"break sgemm.c:{line}"] + ["-ex", "continue"] * 1000
tmp = tempfile.mkdtemp(dir="build")  # on the disk the recordings go to (not a tmpfs), ignored by git
atexit.register(shutil.rmtree, tmp, True)  # a failed run (sys.exit) leaves nothing behind

def once(vx, store):
    db = os.path.join(tmp, "db")
    shutil.rmtree(db, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(pin + [vx, "run", elf, "--batch"] + (["--db", db] if store else ["--no-db"]) + script,
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"{vx} failed ({p.returncode}): {p.stderr[-300:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall

res = {(b, s): [] for b in ("new", "base") for s in (True, False)}
order = [("new", True), ("new", False), ("base", True), ("base", False)]
for i in range(runs):
    for b, s in (order if i % 2 == 0 else order[::-1]):
        res[(b, s)].append(once(new if b == "new" else base, s))
shutil.rmtree(tmp, ignore_errors=True)
med = lambda xs, k: statistics.median(x[k] for x in xs)
for b in ("new", "base"):
    on, off = res[(b, True)], res[(b, False)]
    print(f"{'this build' if b == 'new' else 'baseline  '}: 1000 stops with the store {med(on, 1):.2f} s wall "
          f"({med(on, 0):.2f} s cpu), without {med(off, 1):.2f} s wall ({med(off, 0):.2f} s cpu): "
          f"store / no store {statistics.median(a[1] / b_[1] for a, b_ in zip(on, off)):.2f}x wall")
r = statistics.median(a[1] / b_[1] for a, b_ in zip(res[("new", True)], res[("base", True)]))
print(f"with the store, this build / baseline: {r:.3f}x wall")
PY
