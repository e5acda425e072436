#!/usr/bin/env bash
# The GDB server through the real gdb-multiarch (docs/gdb.md), timed inside gdb (its Python API,
# around gdb.execute): one `stepi` round trip on sgemm (grid 16x16, block 4x4, on 1x1x4x4), one
# `continue` between two hits of a breakpoint in sgemm's inner loop, and `info threads` with 512 lanes
# resident (vecadd, one CTA of 512 threads on 1x1x16x32). Baselines measured in the same run: the
# vxreplay prompt's own stepi and continue (the elapsed time of its stop events), and `info threads`
# with 16 lanes. Figures are medians. VX=PATH times another vxreplay binary (a baseline build).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/vxreplay ] || scripts/build.sh >/dev/null
command -v gdb-multiarch >/dev/null || { echo "gdb-multiarch is missing (scripts/install-deps.sh)"; exit 1; }
vx="${VX:-$PWD/build/vxreplay}"
ex="$PWD/build/examples"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "date: $(date -u +%Y-%m-%d)  nproc: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
python3 - "$vx" "$ex" "$tmp" <<'PY'
import json, os, statistics, subprocess, sys
vx, ex, tmp = sys.argv[1:4]

TIMER = """
import gdb, time, json
def timed(cmd, n):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        gdb.execute(cmd, to_string=True)
        out.append((time.perf_counter() - t) * 1e3)
    return out
"""

def gdb_times(served, elf, setup, cmd, n):
    """Runs gdb on `target remote | served`, the setup commands, then cmd n times; ms per run."""
    script = os.path.join(tmp, "t.py")
    with open(script, "w") as f:
        f.write(TIMER + "\n")
        f.write("gdb.execute('set pagination off')\n")
        f.write(f"gdb.execute({('target remote | ' + ' '.join(served))!r}, to_string=True)\n")
        for c in setup:
            f.write(f"gdb.execute({c!r}, to_string=True)\n")
        f.write(f"print('TIMES', json.dumps(timed({cmd!r}, {n})))\n")
    p = subprocess.run(["gdb-multiarch", "-nx", "--batch", "-x", script, elf], capture_output=True, text=True, timeout=600)
    line = next((l for l in p.stdout.splitlines() if l.startswith("TIMES ")), None)
    if not line:
        sys.exit(f"gdb failed: {p.stdout[-600:]} {p.stderr[-600:]}")
    return json.loads(line[6:])

def prompt_times(elf, extra, commands):
    """The elapsed_ms of the prompt's stop events, in order."""
    args = [vx, "run", elf, *extra, "--no-db", "--batch", "--json"]
    for c in commands:
        args += ["-ex", c]
    p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
    ev = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return [e["elapsed_ms"] for e in ev if e.get("event") == "stop"]

def med(xs):
    return statistics.median(xs)

sgemm = os.path.join(ex, "sgemm.elf")
shape = ["--grid", "16,16", "--block", "4,4"]
served = [vx, "run", sgemm, *shape, "--no-db", "--gdb", "-"]
N = 30
g_step = gdb_times(served, sgemm, ["break sgemm.c:49", "continue", "delete"], "stepi", N)
p_step = prompt_times(sgemm, shape, ["break sgemm.c:49", "continue", "delete 1"] + ["stepi"] * N)[1:]
print(f"stepi on sgemm: gdb {med(g_step):.2f} ms, prompt {med(p_step):.2f} ms (gdb/prompt {med(g_step) / med(p_step):.2f}x); target < 20 ms")

g_cont = gdb_times(served, sgemm, ["break sgemm.c:49", "continue"], "continue", 10)
p_cont = prompt_times(sgemm, shape, ["break sgemm.c:49"] + ["continue"] * 11)[1:]
print(f"continue between two hits (sgemm.c:49): gdb {med(g_cont):.2f} ms, prompt {med(p_cont):.2f} ms "
      f"(gdb/prompt {med(g_cont) / med(p_cont):.2f}x)")

vecadd = os.path.join(ex, "vecadd.elf")
def info_threads(config, block, reps=5):
    served = [vx, "run", vecadd, "--config", config, "--grid", "1", "--block", str(block), "--no-db", "--gdb", "-"]
    # The first `info threads` after a stop: later ones read gdb's caches.
    return [gdb_times(served, vecadd, ["break vecadd.c:37", "continue"], "info threads", 1)[0] for _ in range(reps)]
big = info_threads("1x1x16x32", 512)
small = info_threads("1x1x4x4", 16)
print(f"info threads: 512 lanes {med(big):.1f} ms, 16 lanes {med(small):.1f} ms (ratio {med(big) / med(small):.1f}x "
      f"for 32x the lanes); target < 500 ms")
PY
