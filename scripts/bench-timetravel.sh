#!/usr/bin/env bash
# Time travel through the real binary on sgemm N=64 (grid 16x16, block 4x4) on 1x1x4x4, late in the
# run (docs/time-travel.md): the time of one reverse-stepi, of a reverse-continue to a breakpoint
# about 1 M instructions back, of one goto between two checkpoints; the automatic checkpoints' number
# and bytes against the run's length; a forward run's time with automatic checkpoints against the
# same run without them (--checkpoint-interval 0): whole sessions in alternating pairs (with, without,
# with, without, ...), a ratio per pair, the median ratio, so a drift of the machine's speed affects
# both sides of a pair alike.
#
# Usage: scripts/bench-timetravel.sh [BUILD_DIR]   (default: build; the vxreplay and examples there)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
[ -x "$build/vxreplay" ] || { echo "bench-timetravel: no vxreplay in $build (build it first)" >&2; exit 64; }
vx="$build/vxreplay"
elf="$build/examples/sgemm.elf"
echo "vxreplay: $vx"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "date: $(date -u +%Y-%m-%d)  nproc: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
python3 - "$vx" "$elf" "$tmp" <<'PY'
import json, os, statistics, subprocess, sys, time
vx, elf, tmp = sys.argv[1:4]
shape = ["--grid", "16,16", "--block", "4,4"]

def session(commands, extra=()):
    args = [vx, "run", elf, *shape, "--batch", "--json", "--db", os.path.join(tmp, "db"), *extra]
    for c in commands:
        args += ["-ex", c]
    t = time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    dt = time.perf_counter() - t
    if p.returncode not in (0,):
        sys.exit(f"session failed ({p.returncode}): {' '.join(commands)}: {p.stderr[-400:]}")
    events = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return dt, events

def stops(events):
    return [e for e in events if e.get("event") == "stop"]

# The forward run with and without automatic checkpoints, in alternating pairs: A B A B ...
PAIRS = 9
with_t, without_t, ratios = [], [], []
for _ in range(PAIRS):
    a, ev_auto = session(["continue", "info checkpoints all"])
    b, ev_none = session(["continue"], ["--checkpoint-interval", "0"])
    with_t.append(a)
    without_t.append(b)
    ratios.append(a / b)
total = [e for e in ev_none if e.get("event") == "exit"][0]["stats"]["instructions"]
auto_cps = len([e for e in ev_auto if e.get("command") == "info checkpoints all"][0]["all"])
auto_bytes = [e for e in ev_auto if e.get("event") == "exit"][0]["stats"]["bytes_stored"]
none_bytes = [e for e in ev_none if e.get("event") == "exit"][0]["stats"]["bytes_stored"]
print(f"sgemm N=64 1x1x4x4: {total} warp instructions; automatic checkpoints every 262144 instructions")
print(f"  forward run, session with `continue`, {PAIRS} alternating pairs: median {statistics.median(with_t)*1e3:7.1f} ms "
      f"with automatic checkpoints, {statistics.median(without_t)*1e3:7.1f} ms without; ratio per pair: median "
      f"{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
print(f"  automatic checkpoints: {auto_cps} for {total} instructions, {(auto_bytes-none_bytes)/max(1,auto_cps):.0f} bytes "
      f"each on average ({auto_bytes} bytes stored in all)")

# Per command: the stop events' elapsed_ms (the command's own time inside the process), medians.
def med_elapsed(events, n):
    xs = [e["elapsed_ms"] for e in stops(events)[-n:]]
    return statistics.median(xs), min(xs), max(xs)

# reverse-stepi late in the run (goto end: the launch's last instruction).
K = 20
_, ev = session(["continue", "goto end"] + ["reverse-stepi"] * K)
m, lo, hi = med_elapsed(ev, K)
print(f"  reverse-stepi late in the run: median {m:6.2f} ms (min {lo:.2f}, max {hi:.2f}; {K} in a row)")

# reverse-continue to a breakpoint about 1 M instructions back (a CTA 100 CTAs before the last),
# from the end of the run, 5 times (goto end between them).
cond = "break sgemm if blockIdx.y == 9 && blockIdx.x == 12"
late = [cond, "continue", "disable", "continue", "enable", "goto end"]
_, ev = session(late + ["reverse-continue", "goto end"] * 5)
st = stops(ev)
rcs = [e for e in st if e["reason"] == "breakpoint"][1:]
ends = [e for e in st if e["reason"] != "breakpoint" and e["instructions"] > 0]
assert len(rcs) == 5 and all(e["cta"] == [12, 9, 0] for e in rcs), rcs
dist = ends[-1]["instructions"] - rcs[-1]["instructions"]
xs = [e["elapsed_ms"] for e in rcs]
print(f"  reverse-continue {dist} instructions back to a breakpoint: median {statistics.median(xs):6.2f} ms "
      f"(min {min(xs):.2f}, max {max(xs):.2f})")

# goto between two checkpoints.
G = 40
_, ev = session(late + ["checkpoint"] + ["goto 1", "goto 2"] * (G // 2))
m, lo, hi = med_elapsed(ev, G)
print(f"  goto a checkpoint: median {m:6.2f} ms (min {lo:.2f}, max {hi:.2f}; {G} in a row)")
PY
