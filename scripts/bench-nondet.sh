#!/usr/bin/env bash
# Finding nondeterminism through the real binary (docs/nondeterminism.md): `run --races` on sgemm
# N=64 (grid 16x16, block 4x4) and histogram, and `diff` of two seeds of sgemm N=64, each as a
# ratio against a plain run of the same workload measured in the same run; sweep throughput in
# runs per second with 1 and 2 worker processes. Medians of 5 of each process's CPU time (user +
# system; the machine is shared, so wall time is printed beside it but the ratios use CPU time).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/vxreplay ] || scripts/build.sh >/dev/null
vx="$PWD/build/vxreplay"
ex="$PWD/build/examples"
echo "date: $(date -u +%Y-%m-%d)  nproc: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
python3 - "$vx" "$ex" <<'PY'
import resource, statistics, subprocess, sys, time
vx, ex = sys.argv[1:3]
sgemm = [f"{ex}/sgemm.elf", "--grid", "16,16", "--block", "4,4"]
hist = [f"{ex}/histogram.elf"]

def timed(args, ok=(0,), wall=False):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run([vx, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    dt = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in ok:
        sys.exit(f"{' '.join(args)} failed ({p.returncode}): {p.stderr[-300:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return dt if wall else cpu

def median(args, ok=(0,), reps=5, wall=False):
    return statistics.median(timed(args, ok, wall) for _ in range(reps))

for name, w in (("sgemm N=64", sgemm), ("histogram", hist)):
    plain = median(["run", *w, "--quiet"])
    races = median(["run", *w, "--quiet", "--races"])
    print(f"run --races, {name}: {races*1e3:8.1f} ms CPU vs a plain run {plain*1e3:8.1f} ms: ratio {races/plain:.2f}")

plain = median(["run", *sgemm, "--quiet"])
diff = median(["diff", *sgemm, "--seeds", "1,2"], ok=(0, 1))
print(f"diff --seeds 1,2, sgemm N=64: {diff*1e3:8.1f} ms CPU vs one plain run {plain*1e3:8.1f} ms: ratio {diff/plain:.2f}")

for name, w, n in (("racy", [f"{ex}/racy.elf"], 64), ("sgemm N=64", sgemm, 8)):
    for jobs in (1, 2):
        # Throughput is wall time: that is what parallel workers buy.
        t = median(["sweep", *w, "--seeds", f"1-{n}", "--jobs", str(jobs)], ok=(0, 1), reps=3, wall=True)
        print(f"sweep {name}, {n} seeds, --jobs {jobs}: {t*1e3:8.1f} ms wall, {n/t:7.1f} runs/s")
PY
