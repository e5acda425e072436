#!/usr/bin/env bash
# What questions over the history cost (docs/time-travel.md, "Questions over the history"), on
# sgemm N=64 on 1x1x4x4 (grid 16x16, block 4x4) recorded to its end:
#   - gathering the writes, against a plain run: the session `continue; goto end; info writes X`
#     minus the same session without the question (pairwise, in alternation), over the plain run
#     `continue` alone; the gathering time the session itself measures is printed too;
#   - each question after that (origin, info writes), as the session measures it, and
#     origin -depth 2 (a pass of its own);
#   - the gathered writes' memory against the recording's size on disk, and the size the recording
#     keeps them in (docs/store.md "History");
#   - the first question of a later session (`vxreplay replay`), which reads the kept writes
#     instead of gathering them.
# Medians over RUNS (default 7). Targets (issue 38): gathering within 3x a plain run, each later
# question under 100 ms.
# Usage: scripts/bench-history.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
ninja -C build vxreplay examples/sgemm.elf >/dev/null
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  nproc: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
python3 - "$PWD/build/vxreplay" "$PWD/build/examples/sgemm.elf" "${1:-7}" <<'PY'
import json, os, resource, shutil, statistics, subprocess, sys, tempfile, time
vx, elf, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
import atexit
tmp = tempfile.mkdtemp(dir="build")  # on the disk recordings go to, ignored by git
atexit.register(shutil.rmtree, tmp, True)  # a failed run (sys.exit) leaves nothing behind
base = [vx, "run", elf, "--grid", "16,16", "--block", "4,4", "--batch", "--json"]
plain = ["-ex", "continue"]
at_end = plain + ["-ex", "goto end"]
questions = ["info writes sgemm_C[0]", "origin sgemm_C[4095]", "origin sgemm_C[2048]", "info writes sgemm_C[100]",
             "origin -depth 2 sgemm_C[2048]"]

def once(cmds):
    db = os.path.join(tmp, "db")
    shutil.rmtree(db, ignore_errors=True)
    t = time.perf_counter()
    p = subprocess.run(base + ["--db", db] + cmds, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {p.stderr[-300:]}")
    events = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    errors = [e for e in events if e.get("event") == "error"]
    if errors:
        sys.exit(f"errors: {errors[:3]}")
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(db) for f in fs)
    return wall, events, size

plain_w, bare_w, asked_w, gathered, later, depth2, index, rec = [], [], [], [], [], [], [], []
stored, read_ms, bare_rec = [], [], []

def replay_first():
    db = os.path.join(tmp, "db")
    rec_dir = os.path.join(db, sorted(os.listdir(db))[0])
    p = subprocess.run([vx, "replay", rec_dir, "--batch", "--json", "-ex", "goto end", "-ex", questions[1]],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    hist = [json.loads(l)["history"] for l in p.stdout.splitlines() if l.startswith("{") and '"history"' in l]
    if p.returncode != 0 or not hist or hist[0]["launches_read"] != 1:
        sys.exit(f"the replay did not read the kept writes ({p.returncode}): {hist} {p.stderr[-300:]}")
    return hist[0]["gathered_ms"]

for i in range(runs):
    order = [0, 1, 2] if i % 2 == 0 else [2, 1, 0]
    for k in order:
        if k == 0:
            plain_w.append(once(plain)[0])
        elif k == 1:
            w, _, size = once(at_end)
            bare_w.append(w)
            bare_rec.append(size)
        else:
            w, events, size = once(at_end + sum((["-ex", q] for q in questions), []))
            asked_w.append(w)
            hist = [e["history"] for e in events if e.get("event") == "output" and "history" in e]
            gathered.append(hist[0]["gathered_ms"])
            later.append(max(h["elapsed_ms"] for h in hist[1:-1]))
            depth2.append(hist[-1]["elapsed_ms"])
            index.append(hist[0]["index_bytes"])
            stored.append(hist[0]["stored_bytes"])
            rec.append(size)
            read_ms.append(replay_first())
shutil.rmtree(tmp, ignore_errors=True)
med = statistics.median
# The questions' session minus the same without them, less the -depth question's own time (its
# pass is not the gathering) and the other questions' (about 1 ms each).
gather_wall = med(a - b - d / 1000 for a, b, d in zip(asked_w, bare_w, depth2))
print(f"plain run (continue): {med(plain_w) * 1000:.1f} ms wall, median of {runs}")
print(f"gathering the writes: {gather_wall * 1000:.1f} ms wall (session with the questions minus without, "
      f"less the -depth question's time), "
      f"{med(gathered):.1f} ms as the session measures it")
print(f"gathering / plain run: {gather_wall / med(plain_w):.2f}x (target 3x)")
print(f"slowest later question: {med(later):.2f} ms (target 100 ms)")
print(f"origin -depth 2 (one more pass, every instruction observed): {med(depth2):.1f} ms")
print(f"gathered writes in memory: {med(index) / 1e6:.1f} MB; kept in the recording: {med(stored) / 1e6:.2f} MB; "
      f"the recording on disk without them: {med(bare_rec) / 1e6:.2f} MB, with them {med(rec) / 1e6:.2f} MB "
      f"(kept writes / recording without them: {med(stored) / med(bare_rec):.1f}x)")
print(f"a later session's first question (reads the kept writes): {med(read_ms):.1f} ms, "
      f"against {med(gathered):.1f} ms gathering ({med(gathered) / med(read_ms):.1f}x faster)")
PY
