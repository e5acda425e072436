#!/usr/bin/env bash
# The host channel on an idle and on a busy machine (docs/host.md: a side that waits spins for
# 200 us, then sleeps): a call's round trip (vx_mem_info, 20000 calls) and a small launch (vecadd,
# 300 launches) through `vxreplay run --`, by the program's own timer, while the machine is idle and
# while three processes a processor spin on it (with `nproc` of them the program's two processes
# still get a processor each most of the time). With BASE=DIR (a build directory of another commit
# holding vxreplay, host/libvortex.so.0 and tests/host_bench) both builds run in alternation.
# Medians of RUNS runs (default 5), with the smallest and largest: on a busy machine they spread.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/vxreplay ] || scripts/build.sh >/dev/null
ninja -C build -j2 vxreplay tests/host_bench examples/host/vecadd_kernel.elf >/dev/null
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  nproc: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
python3 - "$PWD/build" "${BASE:-}" "$PWD/build/examples/host/vecadd_kernel.elf" "${RUNS:-5}" <<'PY'
import os, signal, statistics, subprocess, sys
this, base, kernel, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
builds = [("this", this)] + ([("base", base)] if base else [])

def figure(build, mode, count, key):
    # The build's own library: host_bench finds it through its RUNPATH ($ORIGIN/../host).
    out = subprocess.run([os.path.join(build, "vxreplay"), "run", "--", os.path.join(build, "tests", "host_bench"),
                          mode, str(count), kernel], capture_output=True, text=True, check=True).stdout
    return float([l for l in out.splitlines() if key in l][0].split()[0])

def spinners():
    code = "import os, signal\nsignal.signal(signal.SIGTERM, lambda *a: os._exit(0))\nwhile True: pass\n"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(3 * os.cpu_count())]

for load in ("idle", "busy"):
    procs = spinners() if load == "busy" else []
    try:
        res = {(b, k): [] for b, _ in builds for k in ("call", "launch")}
        for i in range(runs):
            for name, build in (builds if i % 2 == 0 else builds[::-1]):
                res[(name, "call")].append(figure(build, "calls", 20000, "per call"))
                res[(name, "launch")].append(figure(build, "launches", 300, "per launch"))
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            p.wait()
    for name, _ in builds:
        c, l = statistics.median(res[(name, "call")]), statistics.median(res[(name, "launch")])
        print(f"{load}, {name}: a call's round trip {c:.1f} us, a launch {l:.1f} us "
              f"(min-max {min(res[(name, 'call')]):.1f}-{max(res[(name, 'call')]):.1f} and "
              f"{min(res[(name, 'launch')]):.1f}-{max(res[(name, 'launch')]):.1f})")
    if base:
        rc = statistics.median(a / b for a, b in zip(res[("this", "call")], res[("base", "call")]))
        rl = statistics.median(a / b for a, b in zip(res[("this", "launch")], res[("base", "launch")]))
        print(f"{load}, this / base: call {rc:.2f}x, launch {rl:.2f}x (pair by pair)")
PY
