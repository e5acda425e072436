#!/usr/bin/env bash
# Host programs through vxreplay (docs/host.md), each a ratio against the same program run alone
# (libvortex on the model in-process), measured in the same run:
#   1. a call's round trip: vx_mem_info 100000 times, microseconds per call (target < 20 us), with
#      a bare socket pair's round trip between two processes as the machine's floor;
#   2. 1000 small launches (vecadd, one CTA of 16 threads; LAUNCHES=N for another count), per launch
#      by the program's own timer and as the whole program's wall time (start-up included): plain,
#      under `vxreplay run --` (no session, no recording), and in a recording session (--batch -ex
#      continue: a checkpoint at every launch's start; with --checkpoint-interval 0; and with
#      --timeline-interval 0, no timeline samples); target within 1.5x plain.
#   3. with BASE=DIR (another build directory holding vxreplay, tests/host_bench and the kernel, e.g.
#      an older commit's): the recording session of those launches, this build and BASE alternating,
#      9 rounds, per launch and in CPU time, as ratios this / BASE.
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
python3 - "$vx" "$bench" "$kernel" "$tmp" "${BASE:-}" "${LAUNCHES:-1000}" <<'PY'
import os, resource, shutil, statistics, subprocess, sys, time
vx, bench, kernel, tmp, base, count = sys.argv[1:7]

def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def run(args):
    t, c = time.perf_counter(), cpu()
    p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    dt = time.perf_counter() - t
    run.cpu = cpu() - c  # CPU time of the program and of vxreplay: what a loaded machine does not inflate
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
    runs, cpus = [], []
    for _ in range(5):
        shutil.rmtree(tmp + "/db", ignore_errors=True)
        runs.append(run(prefix + [bench, "launches", count, kernel]))
        cpus.append(run.cpu)
    wall = statistics.median(r[0] for r in runs)
    each = statistics.median(float([l for l in r[1].splitlines() if "per launch" in l][0].split()[0]) for r in runs)
    launches.cpu = statistics.median(cpus)
    return wall, each

(pw, pe) = launches([])
pc = launches.cpu
(hw, he) = launches([vx, "run", "--"])
hc = launches.cpu
(sw, se) = launches([vx, "run", "--db", tmp + "/db", "--batch", "-ex", "continue", "--"])
(nw, ne) = launches([vx, "run", "--db", tmp + "/db", "--checkpoint-interval", "0", "--batch", "-ex", "continue", "--"])
(tw, te) = launches([vx, "run", "--db", tmp + "/db", "--timeline-interval", "0", "--batch", "-ex", "continue", "--"])
print(f"{count} launches, per launch (the program's own timer): plain {pe:.1f} us, vxreplay run -- {he:.1f} us "
      f"(ratio {he / pe:.2f}x; target 1.5x), recording session {se:.1f} us ({se / pe:.2f}x), recording session "
      f"without automatic checkpoints {ne:.1f} us ({ne / pe:.2f}x), without the timeline {te:.1f} us ({te / pe:.2f}x)")
print(f"{count} launches, whole program (start-up included): plain {pw * 1e3:.0f} ms, vxreplay run -- {hw * 1e3:.0f} ms "
      f"(ratio {hw / pw:.2f}x), recording session {sw * 1e3:.0f} ms, without automatic checkpoints {nw * 1e3:.0f} ms, "
      f"without the timeline {tw * 1e3:.0f} ms")
print(f"{count} launches, CPU time (user + system, every process): plain {pc * 1e3:.0f} ms, vxreplay run -- "
      f"{hc * 1e3:.0f} ms (ratio {hc / pc:.2f}x)")

if base:
    builds = {"this": (vx, bench, kernel),
              "base": tuple(os.path.join(os.path.abspath(base), p)
                            for p in ("vxreplay", "tests/host_bench", "examples/host/vecadd_kernel.elf"))}
    got = {k: ([], []) for k in builds}
    for i in range(9):
        for k in (builds if i % 2 == 0 else list(builds)[::-1]):
            v, b, kern = builds[k]
            shutil.rmtree(tmp + "/db", ignore_errors=True)
            _, out = run([v, "run", "--db", tmp + "/db", "--batch", "-ex", "continue", "--", b, "launches", count, kern])
            got[k][0].append(float([l for l in out.splitlines() if "per launch" in l][0].split()[0]))
            got[k][1].append(run.cpu)
    med = {k: (statistics.median(v[0]), statistics.median(v[1])) for k, v in got.items()}
    print(f"recording session, {count} launches, per launch: this {med['this'][0]:.1f} us, base {med['base'][0]:.1f} us "
          f"(this / base {med['this'][0] / med['base'][0]:.2f}); CPU this {med['this'][1] * 1e3:.0f} ms, base "
          f"{med['base'][1] * 1e3:.0f} ms (this / base {med['this'][1] / med['base'][1]:.2f}); 9 rounds alternating")
PY
