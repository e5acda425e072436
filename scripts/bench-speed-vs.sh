#!/usr/bin/env bash
# The model's speed against another vxreplay binary (an older build: the baseline) in the same run:
# sgemm N=64 (grid 16x16) on 1x1x4x4 (block 4x4) and 1x1x4x32 (block 8x8), run by both binaries in
# alternation through the plain runner; medians of the run's own lane-instructions per second (the
# summary line, which times the kernel's run, not the process) and of the processes' CPU times.
# Usage: scripts/bench-speed-vs.sh BASELINE_VXREPLAY [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 BASELINE_VXREPLAY [RUNS]" >&2; exit 64; }
ninja -C build vxreplay examples/sgemm.elf >/dev/null
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  nproc: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
python3 - "$PWD/build/vxreplay" "$1" "$PWD/build/examples/sgemm.elf" "${2:-7}" <<'PY'
import re, resource, statistics, subprocess, sys
new, base, elf, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cases = [("1x1x4x4", "4,4"), ("1x1x4x32", "8,8")]

def once(vx, config, block):
    grid = "16,16" if block == "4,4" else "8,8"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([vx, "run", elf, "--config", config, "--grid", grid, "--block", block],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"{vx} failed ({p.returncode}): {p.stderr[-300:]}")
    m = re.search(r"\(([0-9.]+) M lane-instructions/s\)", p.stdout)
    return float(m.group(1)), (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

for config, block in cases:
    r = {"new": [], "base": []}
    c = {"new": [], "base": []}
    for _ in range(runs):
        for name, vx in (("new", new), ("base", base)):
            ips, cpu = once(vx, config, block)
            r[name].append(ips)
            c[name].append(cpu)
    med = statistics.median
    print(f"sgemm N=64 {config}: {med(r['new']):8.1f} M lane-instr/s (baseline {med(r['base']):8.1f}): "
          f"{med(r['new']) / med(r['base']):.2f}x; process CPU {med(c['new']) * 1e3:.0f} ms vs "
          f"{med(c['base']) * 1e3:.0f} ms: {med(c['base']) / med(c['new']):.2f}x ({runs} runs each, alternating)")
PY
