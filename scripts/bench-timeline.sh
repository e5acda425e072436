#!/usr/bin/env bash
# What the recording's timeline (docs/view.md) costs: a recording of sgemm N=64 on 1x2x8x8 (grid 8x8,
# block 8x8, run to its end) with the default --timeline-interval against the same without it
# (--timeline-interval 0), in alternation (which goes first alternates too); medians of the
# processes' CPU and wall times and the median of the pairwise ratios. Then the store's size both
# ways and the time `vxreplay view` takes to write the page.
# Usage: scripts/bench-timeline.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
ninja -C build vxreplay examples/sgemm.elf >/dev/null
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  nproc: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
python3 - "$PWD/build/vxreplay" "$PWD/build/examples/sgemm.elf" "${1:-15}" <<'PY'
import os, resource, shutil, statistics, subprocess, sys, tempfile, time
vx, elf, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
tmp = tempfile.mkdtemp()
base = [vx, "run", elf, "--config", "1x2x8x8", "--grid", "8,8", "--block", "8,8", "--batch", "-ex", "continue"]

def once(extra, keep=None):
    db = keep or os.path.join(tmp, "db")
    shutil.rmtree(db, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run(base + ["--db", db] + extra, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {p.stderr[-300:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall

cases = {"on": [], "off": []}
flags = {"on": [], "off": ["--timeline-interval", "0"]}
once([]), once(flags["off"])
for i in range(runs):
    for k in (("on", "off") if i % 2 == 0 else ("off", "on")):
        cases[k].append(once(flags[k]))
for what, idx in (("cpu", 0), ("wall", 1)):
    on = statistics.median(x[idx] for x in cases["on"]) * 1e3
    off = statistics.median(x[idx] for x in cases["off"]) * 1e3
    r = statistics.median(a[idx] / b[idx] for a, b in zip(cases["on"], cases["off"]))
    print(f"recording sgemm N=64 1x2x8x8, {what}: {on:.1f} ms with the timeline, {off:.1f} ms without: {r:.3f}x")
sizes = {}
for k in ("on", "off"):
    db = os.path.join(tmp, "db-" + k)
    once(flags[k], db)
    sizes[k] = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(db) for f in fs)
    if k == "on":
        rec = os.path.join(db, os.listdir(db)[0])
        t = time.perf_counter()
        subprocess.run([vx, "view", rec, "-o", os.path.join(tmp, "p.html")], check=True, capture_output=True)
        view = time.perf_counter() - t
print(f"store bytes on disk: {sizes['on']} with the timeline, {sizes['off']} without; vxreplay view: {view * 1e3:.0f} ms")
page = os.path.join(tmp, "p.html")
print(f"the page: {os.path.getsize(page)} bytes")
shutil.copy(page, os.path.join(os.environ.get("TMPDIR", "/tmp"), "vxreplay-bench-page.html"))
shutil.rmtree(tmp, ignore_errors=True)
PY
# Drawn by Debian's headless chromium (selenium is in Debian's python3; scripts/test.sh installs it).
page="${TMPDIR:-/tmp}/vxreplay-bench-page.html"
if /usr/bin/python3 -c 'import selenium' 2>/dev/null; then
  /usr/bin/python3 - "$page" <<'PY'
import shutil, statistics, sys
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
o = Options()
for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000", "--disable-dev-shm-usage"]:
    o.add_argument(a)
o.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
d = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=o)
try:
    drawn = []
    for _ in range(5):
        d.get("file://" + sys.argv[1])
        drawn.append(d.execute_script("return window.vxreplayView.drawn"))
    redraws = [d.execute_script("return window.vxreplayView.redraw()") for _ in range(50)]
    print(f"headless chromium: drawn {statistics.median(drawn):.0f} ms after navigation (median of 5); "
          f"a redraw (one zoom or pan step) {statistics.median(redraws):.2f} ms (median of 50)")
finally:
    d.quit()
PY
else
  echo "headless chromium: not measured (Debian's python3-selenium is not installed)"
fi
rm -f "$page"
