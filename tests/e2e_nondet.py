#!/usr/bin/env python3
"""Finding nondeterminism through the real binary (docs/nondeterminism.md): vxreplay diff, sweep and
run --races on kernels written for them, and on every race-free example.

Usage: e2e_nondet.py VXREPLAY EXAMPLES_DIR SOURCE_ROOT CHECK
CHECK: diff | open | races | clean | sweep | parallel | inputs
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from e2e_common import EXIT_BAD_INPUT, EXIT_USAGE, check, failures

EXIT_RACE = 67
CLEAN = ["vecadd", "sgemm", "reduce", "diverge", "histogram", "hello", "saxpy"]


def run(vx, args, timeout=300, cwd=None):
    p = subprocess.run([vx, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def source_line(root, name, text):
    """The 1-based line of `text` in examples/NAME.c: what a report must point at."""
    with open(os.path.join(root, "examples", name + ".c")) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                return i
    raise SystemExit(f"{text!r} is not in examples/{name}.c")


def diff_json(vx, ex, name, seeds):
    rc, out, err = run(vx, ["diff", os.path.join(ex, name + ".elf"), "--seeds", seeds, "--json"])
    try:
        return rc, json.loads(out)
    except ValueError:
        check(False, f"diff {name} {seeds}: not JSON: {out[:200]!r} {err[-200:]!r}")
        return rc, {}


def check_diff(vx, ex, root):
    # racy: the diverging read is the load of the counter; a producing write is the store.
    rc, d = diff_json(vx, ex, "racy", "3,7")
    check(rc == 1, f"diff racy: status {rc}, want 1")
    fd = d.get("first_divergence") or {}
    load = source_line(root, "racy", "uint32_t v = counter;")
    store = source_line(root, "racy", "counter = v + 1u;")
    check(fd.get("file") == "racy.c" and fd.get("line") == load, f"diff racy: divergence at {fd.get('file')}:{fd.get('line')}, want racy.c:{load}")
    writers = [w for w in ((fd.get("a") or {}).get("writer"), (fd.get("b") or {}).get("writer")) if w]
    check(writers and all(w.get("line") == store and w.get("file") == "racy.c" for w in writers),
          f"diff racy: producing writes {writers}, want racy.c:{store}")
    check(fd.get("a", {}).get("value") != fd.get("b", {}).get("value"), "diff racy: the two values are the same")
    check(d.get("final", {}).get("memory_bytes_differ", 0) > 0, "diff racy: no memory difference at the end")
    # The text report names the same pair.
    rc, out, _ = run(vx, ["diff", os.path.join(ex, "racy.elf"), "--seeds", "3,7"])
    check(rc == 1 and f"racy.c:{load}" in out and f"racy.c:{store}" in out and "counter = v + 1u;" in out,
          f"diff racy text: {out[:600]!r}")

    # lmem_race: thread 0 reads a slot of local memory another warp has not written yet.
    rc, d = diff_json(vx, ex, "lmem_race", "5,6")
    fd = d.get("first_divergence") or {}
    check(rc == 1, f"diff lmem_race: status {rc}, want 1")
    check(fd.get("line") == source_line(root, "lmem_race", "sum += slots[i]"), f"diff lmem_race: at line {fd.get('line')}")
    a, b = fd.get("a") or {}, fd.get("b") or {}
    check(a.get("local") and b.get("local"), f"diff lmem_race: not a local-memory read: {fd}")
    unwritten = [r for r in (a, b) if r.get("writer") is None]
    written = [r for r in (a, b) if r.get("writer")]
    check(len(unwritten) == 1 and len(written) == 1, f"diff lmem_race: want one read of a value not yet written: {fd}")
    if written:
        check(written[0]["writer"].get("line") == source_line(root, "lmem_race", "slots[tid] = tid + 1u;"),
              f"diff lmem_race: writer {written[0]['writer']}")

    # cycles: the only difference is the read of mcycle.
    rc, d = diff_json(vx, ex, "cycles", "1,2")
    fd = d.get("first_divergence") or {}
    check(rc == 1 and (fd.get("a") or {}).get("csr") == 0xB00, f"diff cycles: status {rc}, divergence {fd}")
    check("mcycle" in fd.get("instruction", ""), f"diff cycles: instruction {fd.get('instruction')!r}")

    # Two configurations of one kernel, and the same seed twice: the same run.
    rc, d = diff_json(vx, ex, "racy", "4,4")
    check(rc == 0 and d.get("same") is True and d.get("first_divergence") is None, f"diff racy 4,4: {rc} {d}")
    rc, out, err = run(vx, ["diff", os.path.join(ex, "vecadd.elf"), "--configs", "1x1x4x4,1x2x4x4"])
    check(rc == 0 and "do not differ" in out, f"diff vecadd over two configs: {rc} {out[:300]!r} {err[-200:]!r}")

    # Two recordings of two seeds: the same divergence as two seeds.
    with tempfile.TemporaryDirectory() as tmp:
        dirs = []
        for seed in ("3", "7"):
            db = os.path.join(tmp, "s" + seed)
            rc, out, err = run(vx, ["run", os.path.join(ex, "racy.elf"), "--seed", seed, "--db", db, "--batch",
                                    "--ex", "continue"])
            check(rc == 0, f"recording seed {seed}: {rc} {err[-300:]!r}")
            found = [os.path.join(db, e) for e in os.listdir(db)] if os.path.isdir(db) else []
            dirs += found[:1]
        if check(len(dirs) == 2, f"recordings: {dirs}"):
            rc, out, err = run(vx, ["diff", *dirs, "--json"])
            d = json.loads(out) if out.strip().startswith("{") else {}
            check(rc == 1 and (d.get("first_divergence") or {}).get("line") == load,
                  f"diff of two recordings: {rc} {out[:300]!r} {err[-300:]!r}")
            # Recordings of different workloads are refused.
            db = os.path.join(tmp, "other")
            run(vx, ["run", os.path.join(ex, "vecadd.elf"), "--db", db, "--batch", "--ex", "continue"])
            other = [os.path.join(db, e) for e in os.listdir(db)][0]
            rc, out, err = run(vx, ["diff", dirs[0], other])
            check(rc == EXIT_BAD_INPUT and "different workloads" in err, f"diff of two workloads: {rc} {err[-300:]!r}")
            # --open on a recording: the replayed session stops at the divergence.
            b = (d.get("first_divergence") or {}).get("b") or {}
            rc, out, err = run(vx, ["diff", *dirs, "--open", "B", "--batch", "--ex", "print/x $pc"])
            check(rc == 0 and "Divergence in run B" in out and f"= {hex(b.get('pc', 0))}" in out.lower(),
                  f"diff of recordings --open B: {rc} {out[-500:]!r} {err[-300:]!r}")


def check_open(vx, ex, root):
    """--open B: a session stopped at the diverging load of run B; print and x read the value."""
    with tempfile.TemporaryDirectory() as tmp:
        _, d = diff_json(vx, ex, "racy", "3,7")
        b = (d.get("first_divergence") or {}).get("b") or {}
        rc, out, err = run(vx, ["diff", os.path.join(ex, "racy.elf"), "--seeds", "3,7", "--open", "B", "--db", tmp,
                                "--batch", "--ex", "print/x $pc", "--ex", "x/1wx " + hex(b.get("address", 0))])
        check(rc == 0, f"--open B: status {rc}; {err[-300:]!r}")
        check("Divergence in run B" in out, f"--open B: no stop at the divergence: {out[-800:]!r}")
        check(f"= {hex(b.get('pc', 0))}" in out.lower(), f"--open B: print $pc does not show {hex(b.get('pc', 0))}: {out[-600:]!r}")
        check(f"0x{b.get('value', -1):08x}" in out, f"--open B: x does not show the value B read ({b.get('value')}): {out[-600:]!r}")


def check_races(vx, ex, root):
    rc, out, err = run(vx, ["run", os.path.join(ex, "racy.elf"), "--races"])
    load, store = source_line(root, "racy", "uint32_t v = counter;"), source_line(root, "racy", "counter = v + 1u;")
    check(rc == EXIT_RACE, f"racy --races: status {rc}, want {EXIT_RACE}")
    check(f"read-write" in out and f"racy.c:{load}" in out and f"racy.c:{store}" in out, f"racy --races: {out[:800]!r}")
    check("same-instruction" in out, "racy --races: the lanes' one store is not reported as its own kind")
    # Once per pair of source lines and kind.
    heads = [l for l in out.splitlines() if l.startswith("Race (")]
    check(len(heads) == len(set(h.split(" in launch")[0].split(") on")[0] for h in heads)) or len(heads) <= 4,
          f"racy --races: repeated reports: {heads}")
    rc, out, _ = run(vx, ["run", os.path.join(ex, "lmem_race.elf"), "--races"])
    check(rc == EXIT_RACE and "on local 0x" in out and f"lmem_race.c:{source_line(root, 'lmem_race', 'sum += slots[i]')}" in out,
          f"lmem_race --races: {rc} {out[:500]!r}")
    rc, out, _ = run(vx, ["run", os.path.join(ex, "cta_race.elf"), "--races"])
    cta_lines = [l for l in out.splitlines() if l.strip().startswith(("write by", "read by"))]
    ctas = {l.split("CTA ")[1].split(" ")[0] for l in cta_lines if "CTA " in l}
    check(rc == EXIT_RACE and len(ctas) >= 2, f"cta_race --races: status {rc}, CTAs {ctas}: {out[:500]!r}")


def check_clean(vx, ex, root):
    """Every race-free example: no race, one outcome class over 64 seeds, no divergence."""
    for name in CLEAN:
        elf = os.path.join(ex, name + ".elf")
        rc, out, _ = run(vx, ["run", elf, "--races", "--quiet"])
        check(rc == 0 and "Race" not in out, f"{name} --races: status {rc}: {out[-400:]!r}")
        rc, out, _ = run(vx, ["sweep", elf, "--seeds", "1-64", "--jobs", "2", "--json"])
        d = json.loads(out) if out.strip().startswith("{") else {}
        check(rc == 0 and len(d.get("classes", [])) == 1 and d.get("runs") == 64, f"{name} sweep: {rc} {out[:300]!r}")
        rc, out, _ = run(vx, ["diff", elf, "--seeds", "3,7"])
        check(rc == 0 and "do not differ" in out, f"{name} diff: {rc} {out[:400]!r}")


def check_sweep(vx, ex, root):
    rc, out, err = run(vx, ["sweep", os.path.join(ex, "racy.elf"), "--seeds", "1-16", "--jobs", "2", "--json"])
    d = json.loads(out) if out.strip().startswith("{") else {}
    check(rc == 1 and len(d.get("classes", [])) >= 2, f"sweep racy: {rc} {out[:300]!r} {err[-300:]!r}")
    check(sum(c["count"] for c in d.get("classes", [])) == 16, "sweep racy: the classes do not add up to 16 runs")
    div = d.get("divergence") or {}
    check((div.get("first_divergence") or {}).get("line") == source_line(root, "racy", "uint32_t v = counter;"),
          f"sweep racy: divergence between the two largest classes: {div.get('first_divergence')}")
    rc, _, _ = run(vx, ["sweep", os.path.join(ex, "racy.elf"), "--seeds", "1-4", "--races"])
    check(rc == EXIT_RACE, f"sweep --races racy: status {rc}")
    # The rare-interleaving bug: PCT finds it within 8 seeds, the default scheduler not in 64.
    def first_failing(schedule, seeds):
        rc, out, _ = run(vx, ["sweep", os.path.join(ex, "rare.elf"), "--seeds", seeds, "--jobs", "2", "--schedule",
                              schedule, "--json"])
        d = json.loads(out)
        bad = [s for c in d["classes"] if c["outcome"] != "exit 0" for s in c["seeds"]]
        return min(bad) if bad else None
    check(first_failing("random", "1-64") is None, "rare: the default schedule found the bug within 64 seeds")
    found = first_failing("pct", "1-8")
    check(found is not None, "rare: PCT did not find the bug within 8 seeds")
    if found is None:
        return
    # The strategy is part of the recording: a replay of the failing PCT run fails the same way.
    with tempfile.TemporaryDirectory() as tmp:
        rare = os.path.join(ex, "rare.elf")
        rc, out, err = run(vx, ["run", rare, "--schedule", "pct", "--seed", str(found), "--db", tmp, "--batch",
                                "--ex", "continue"])
        check(rc == 1, f"rare under pct seed {found} in a session: status {rc}, want 1; {err[-200:]!r}")
        rec = os.path.join(tmp, os.listdir(tmp)[0])
        rc, out, err = run(vx, ["replay", rec, "--batch", "--ex", "continue"])
        check(rc == 1, f"replay of the pct recording: status {rc}, want 1 (the schedule replayed); {err[-200:]!r}")


def check_parallel(vx, ex, root):
    """A sweep through GNU parallel: --emit-jobs, parallel, --merge equals the built-in sweep."""
    if not shutil.which("parallel"):
        check(False, "GNU parallel is not installed (scripts/install-deps.sh installs it)")
        return
    elf = os.path.join(ex, "racy.elf")
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = os.path.join(tmp, "results")
        rc, jobs, err = run(vx, ["sweep", elf, "--seeds", "1-12", "--emit-jobs", "--out", out_dir])
        check(rc == 0 and len(jobs.splitlines()) == 12, f"--emit-jobs: {rc} {jobs[:300]!r} {err[-200:]!r}")
        p = subprocess.run(["parallel", "-j", "2"], input=jobs, capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, f"parallel: {p.returncode} {p.stderr[-300:]!r}")
        rc_m, merged, err = run(vx, ["sweep", elf, "--seeds", "1-12", "--merge", out_dir, "--json"])
        rc_b, builtin, _ = run(vx, ["sweep", elf, "--seeds", "1-12", "--jobs", "2", "--json"])
        check(rc_m == rc_b == 1 and merged == builtin, f"merge != built-in sweep: {rc_m} {rc_b} {merged[:300]!r} {builtin[:300]!r}")
        # Foreign and truncated results are refused.
        first = sorted(os.listdir(out_dir))[0]
        with open(os.path.join(out_dir, first)) as f:
            text = f.read()
        with open(os.path.join(out_dir, "zz-cut.json"), "w") as f:
            f.write(text[: len(text) // 2])
        rc, _, err = run(vx, ["sweep", elf, "--merge", out_dir])
        check(rc == EXIT_BAD_INPUT and "zz-cut.json" in err, f"truncated result: {rc} {err[-200:]!r}")
        os.remove(os.path.join(out_dir, "zz-cut.json"))
        rc, _, err = run(vx, ["sweep", os.path.join(ex, "vecadd.elf"), "--merge", out_dir])
        check(rc == EXIT_BAD_INPUT and "another workload" in err, f"foreign results: {rc} {err[-200:]!r}")


def check_inputs(vx, ex, root):
    elf = os.path.join(ex, "racy.elf")
    for args, status, words in [
        (["diff", elf, "--seeds", "3,x"], EXIT_USAGE, ["--seeds", "'x'"]),
        (["diff", elf, "--seeds", "3"], EXIT_USAGE, ["two runs"]),
        (["diff", elf, "--seeds", "1,2", "--open", "C"], EXIT_USAGE, ["--open"]),
        (["run", elf, "--races", "--break", "racy"], EXIT_USAGE, ["--races"]),
        (["diff", elf, "--configs", "1x1x4x3,1x1x4x4"], EXIT_USAGE, ["--configs"]),
        (["sweep", elf, "--seeds", "9-3"], EXIT_USAGE, ["--seeds", "9-3"]),
        (["sweep", elf, "--seeds", "1-"], EXIT_USAGE, ["--seeds"]),
        (["sweep", elf, "--jobs", "0"], EXIT_USAGE, ["--jobs"]),
        (["sweep", elf, "--merge", "/nonexistent-dir"], EXIT_BAD_INPUT, ["not a directory"]),
        (["diff", "/nonexistent.elf", "--seeds", "1,2"], EXIT_BAD_INPUT, ["/nonexistent.elf"]),
    ]:
        rc, out, err = run(vx, args)
        what = " ".join(args[:1] + args[2:])
        check(rc == status, f"{what}: status {rc}, want {status}; {err[-200:]!r}")
        check(all(w in err for w in words) and len(err.strip().splitlines()) == 1, f"{what}: stderr {err[-300:]!r}")


def main():
    vx, ex, root, what = sys.argv[1:5]
    {"diff": check_diff, "open": check_open, "races": check_races, "clean": check_clean, "sweep": check_sweep,
     "parallel": check_parallel, "inputs": check_inputs}[what](vx, ex, root)
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
