#!/usr/bin/env bash
# Times debugger sessions on sgemm (default configuration 1x1x4x4) through the real binary:
# the time of one `stepi` (the median of 5 sessions of 100 stepi, minus the median of 5 without them, / 100)
# and of one `continue` between two hits of a breakpoint in the inner loop (likewise, 20 continues), with
# the default checkpoint store (fsync per stop) and without it. Prints the machine and the date.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
vx="$PWD/build/vxreplay"
elf="$PWD/build/examples/sgemm.elf"
line=$(grep -n 'for (uint32_t k = 0; k < T; k++) acc +=' examples/sgemm.c | cut -d: -f1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "date: $(date -u +%Y-%m-%d)  nproc: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
python3 - "$vx" "$elf" "$line" "$tmp" <<'PY'
import os, statistics, subprocess, sys, time
vx, elf, line, tmp = sys.argv[1:5]

def session(commands, db):
    args = [vx, "run", elf, "--batch", "--json"] + (["--db", db] if db else ["--no-db"])
    for c in commands:
        args += ["-ex", c]
    t = time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"session failed ({p.returncode}): {p.stderr[-400:]}")
    return dt

def median_of(commands, db, reps=5):
    return statistics.median(session(commands, db) for _ in range(reps))

start = ["break sgemm", "continue"]
for label, db in (("no store", None), ("store, fsync", os.path.join(tmp, "db"))):
    base = median_of(start, db)
    steps = median_of(start + ["stepi"] * 100, db)
    loop_base = median_of([f"break sgemm.c:{line}", "continue"], db)
    loop = median_of([f"break sgemm.c:{line}", "continue"] + ["continue"] * 20, db)
    print(f"{label:14} per stepi: {(steps - base) / 100 * 1e3:7.2f} ms   per continue between two hits: "
          f"{(loop - loop_base) / 20 * 1e3:7.2f} ms   (session to the first stop: {base * 1e3:.0f} ms)")
PY
