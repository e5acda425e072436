#!/usr/bin/env bash
# Host programs through vxreplay (docs/host.md), each a ratio against the same program run alone
# (libvortex on the model in-process), measured in the same run:
#   1. a call's round trip: vx_dcr_read 100000 times, microseconds per call (target < 20 us), with
#      a bare socket pair's round trip between two processes as the machine's floor;
#   2. 1000 small launches (vecadd, one CTA of 16 threads): the whole program's wall time plain,
#      under `vxreplay run --` (no session, no recording), and in a recording session
#      (--batch -ex continue, a checkpoint at every launch's start); target within 1.5x plain.
# Medians of 5 runs.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/vxreplay ] || scripts/build.sh >/dev/null
ninja -C build -j2 tests/host_bench examples/host/vecadd_kernel.elf >/dev/null
vx="$PWD/build/vxreplay"
bench="$PWD/build/tests/host_bench"
kernel="$PWD/build/examples/host/vecadd_kernel.elf"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "date: $(date -u +%Y-%m-%d)  nproc: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
python3 - "$vx" "$bench" "$kernel" "$tmp" <<'PY'
import statistics, subprocess, sys, time
vx, bench, kernel, tmp = sys.argv[1:5]

def run(args):
    t = time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(args)}: {p.stderr[-400:]}")
    return dt, p.stdout

def per_call(prefix, mode="calls"):
    vals = []
    for _ in range(5):
        _, out = run(prefix + [bench, mode, "100000", kernel])
        vals.append(float([l for l in out.splitlines() if "per call" in l][0].split()[0]))
    return statistics.median(vals)

plain = per_call([])
hosted = per_call([vx, "run", "--"])
floor = per_call([], "pingpong")
print(f"call round trip: in-process {plain:.3f} us, through vxreplay {hosted:.2f} us "
      f"(+{hosted - plain:.2f} us, ratio {hosted / plain:.0f}x; target < 20 us); bare socket pair {floor:.2f} us "
      f"(vxreplay / bare {hosted / floor:.2f}x)")

def launches(prefix):
    return statistics.median(run(prefix + [bench, "launches", "1000", kernel])[0] for _ in range(5))

p = launches([])
h = launches([vx, "run", "--"])
s = launches([vx, "run", "--db", tmp + "/db", "--batch", "-ex", "continue", "--"])
n = launches([vx, "run", "--db", tmp + "/db", "--checkpoint-interval", "0", "--batch", "-ex", "continue", "--"])
print(f"1000 launches: plain {p * 1e3:.0f} ms, vxreplay run -- {h * 1e3:.0f} ms (ratio {h / p:.2f}x; target 1.5x), "
      f"recording session {s * 1e3:.0f} ms (ratio {s / p:.2f}x), recording session without automatic checkpoints "
      f"{n * 1e3:.0f} ms (ratio {n / p:.2f}x)")
PY
