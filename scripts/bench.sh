#!/usr/bin/env bash
# Prints the model's simulation speed: lane instructions per second for sgemm and
# vecadd at two sizes on three configurations, against targets and against the
# same kernel without the decode cache (the baseline measured in this run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
ninja -C build tests/bench_model >/dev/null  # benchmarks are not built by default
json=$(mktemp)
trap 'rm -f "$json"' EXIT
build/tests/bench_model build/examples --benchmark_format=json --benchmark_out="$json" \
  --benchmark_out_format=json >/dev/null
python3 - "$json" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
ctx = data["context"]
print(f"date: {ctx['date']}  host: {ctx['host_name']}  cpus: {ctx['num_cpus']}  "
      f"mhz: {ctx['mhz_per_cpu']}  build: {ctx['library_build_type']} benchmark library")
try:
    model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    print(f"cpu: {model}")
except (OSError, StopIteration):
    pass
rows = {}
for b in data["benchmarks"]:
    name = b["name"].replace("/min_time:0.300", "")
    rows[name] = b
targets = {"sgemm/N=32/1x1x4x4": 80e6, "sgemm/N=32/1x1x4x32": 300e6,
           "sgemm/N=64/1x1x4x4": 1000e6, "sgemm/N=64/1x1x4x32": 4000e6}
print(f"{'benchmark':44} {'lane instr':>12} {'ms/run':>8} {'M lane-instr/s':>15}  note")
for name, b in rows.items():
    if "error_message" in b:
        print(f"{name:44} ERROR {b['error_message']}")
        continue
    ips = b["lane_ips"]
    note = ""
    if name in targets:
        t = targets[name]
        note = f"target {t/1e6:.0f}M: {'met' if ips >= t else 'MISSED'} ({ips/t:.2f}x)"
    print(f"{name:44} {b['lane_instructions']:12.0f} {b['real_time']:8.2f} {ips/1e6:15.1f}  {note}")
for shape in ("1x1x4x4", "1x1x4x32"):
    ref, fast = rows.get(f"sgemm/N=64/{shape}/reference"), rows.get(f"sgemm/N=64/{shape}")
    if ref and fast and "lane_ips" in ref and "lane_ips" in fast:
        print(f"fast path against the reference interpreter, sgemm N=64 {shape}: "
              f"{fast['lane_ips'] / ref['lane_ips']:.2f}x (same run)")
base = rows.get("sgemm/N=32/1x1x4x4/no-decode-cache")
fast = rows.get("sgemm/N=32/1x1x4x4")
if base and fast and "lane_ips" in base and "lane_ips" in fast:
    print(f"decode cache speedup on sgemm N=32 1x1x4x4: {fast['lane_ips'] / base['lane_ips']:.2f}x "
          f"({fast['lane_ips']/1e6:.1f}M vs {base['lane_ips']/1e6:.1f}M lane-instr/s, same run)")
PY
