#!/usr/bin/env python3
"""A recording that cannot be written (issue 24): a session whose store writes fail as on a full disk
(a file-size limit, RLIMIT_FSIZE: no root needed; vxreplay itself ignores SIGXFSZ, the signal such
a write raises, which would otherwise kill it) and one that fills LMDB's own map (--db-map-size).
Each says so once, goes on, loses no checkpoint it committed, reports the stops it could not record,
exits 74; and a store that cannot be written at all is a clear error (74), never a signal. A
session whose only failures are automatic checkpoints exits 74 as well, and one whose file-size
limit is raised after the first failure (space returns) records its later stops: what was not
written is kept and given again with the next checkpoint.

Usage: e2e_fulldisk.py VXREPLAY EXAMPLES_DIR SOURCE_DIR
"""
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile

from e2e_common import check, finish
from e2e_debug import source_line

EXIT_CANT_WRITE = 74


def limited(kib):
    def setup():  # SIGXFSZ at its default (subprocess restores it): vxreplay must not die of it
        resource.setrlimit(resource.RLIMIT_FSIZE, (kib * 1024, kib * 1024))
    return setup


def session(vx, elf, db, commands, extra=(), preexec=None):
    args = [vx, "run", elf, "--batch", "--json", "--db", db, *extra]
    for c in commands:
        args += ["-ex", c]
    p = subprocess.run(args, capture_output=True, text=True, timeout=300, preexec_fn=preexec, stdin=subprocess.DEVNULL)
    events = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return p.returncode, events, p.stderr


# Stops 166 instructions apart are recorded by their marks alone (docs/store.md, "Stops"), which
# fill no store; with automatic checkpoints off every stop writes its checkpoint, as these tests need.
EVERY_STOP = ["--checkpoint-interval", "0"]


def check_form(vx, elf, line, tmp, name, extra, preexec):
    db = os.path.join(tmp, name)
    rc, events, err = session(vx, elf, db, [f"break sgemm.c:{line}"] + ["continue"] * 40, EVERY_STOP + extra, preexec)
    t = name
    errors = [e["message"] for e in events if e.get("event") == "error"]
    stops = [e for e in events if e.get("event") == "stop" and e.get("reason") == "breakpoint"]
    check(rc == EXIT_CANT_WRITE, f"{t}: status {rc}, want 74; {err[-300:]!r}")
    check(len(stops) == 40, f"{t}: {len(stops)} stops: the session must go on")
    said = [m for m in errors if "could not be written" in m]
    check(len(said) == 1, f"{t}: the failure should be said once, got {said}")
    final = [m for m in errors if "not recorded" in m]
    unsaved = int(final[0].split()[0]) if final else -1
    check(0 < unsaved < 40, f"{t}: final report {final}")
    # The recording opens with every checkpoint it committed, and the stops it could not write are the missing ones.
    rec = os.path.join(db, "sgemm-1")
    p = subprocess.run([vx, "replay", rec, "--batch", "--json", "-ex", "info checkpoints"], capture_output=True,
                       text=True, timeout=120)
    out = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    cps = [e for e in out if e.get("command") == "info checkpoints"]
    listed = [c["instret"] for c in cps[0]["checkpoints"]] if cps else []
    check(p.returncode == 0 and len(listed) == 40 - unsaved, f"{t}: replay lists {len(listed)}, want {40 - unsaved}; "
                                                            f"{p.stderr[-300:]!r}")
    at = [s["instructions"] for s in stops]
    check(set(listed) <= set(at), f"{t}: listed points that were not stops: {sorted(set(listed) - set(at))}")
    # Every stop before the first failure is there (nothing committed was lost).
    missing = [i for i, x in enumerate(at) if x not in listed]
    check(missing and all(x in listed for x in at[:missing[0]]), f"{t}: stops missing {missing}")


def check_automatic_only(vx, elf, tmp):
    # No breakpoint: every checkpoint that fails is an automatic one (--checkpoint-interval).
    db = os.path.join(tmp, "automatic")
    rc, events, err = session(vx, elf, db, ["continue"], ["--db-map-size", "200000", "--checkpoint-interval", "100"])
    errors = [e["message"] for e in events if e.get("event") == "error"]
    final = [m for m in errors if "automatic checkpoints were not written" in m]
    check(rc == EXIT_CANT_WRITE, f"automatic checkpoints only: status {rc}, want 74; {errors[-2:]}")
    check(len(final) == 1 and "MDB_MAP_FULL" in final[0] and "stop" not in final[0].split(":")[0],
          f"automatic checkpoints only: final report {final}")


def check_recovery(vx, elf, line, tmp):
    # The soft file-size limit is raised (as space returning) once the first stop could not be written.
    db = os.path.join(tmp, "recovery")

    def setup():
        resource.setrlimit(resource.RLIMIT_FSIZE, (150 * 1024, resource.RLIM_INFINITY))

    p = subprocess.Popen([vx, "run", elf, "--json", "--db", db, *EVERY_STOP, "-ex", f"break sgemm.c:{line}"],
                         stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, preexec_fn=setup)
    marker = "print 424242"

    def command(c):  # the events of command c (a marker command after it shows where they end)
        p.stdin.write(f"{c}\n{marker}\n")
        p.stdin.flush()
        out = []
        for raw in p.stdout:
            if raw.startswith("{"):
                ev = json.loads(raw)
                if ev.get("command") == marker:
                    return out
                out.append(ev)
        return out

    stops, failed_at, raised = [], None, False
    try:
        for i in range(40):
            evs = command("continue")
            stops += [e["instructions"] for e in evs if e.get("event") == "stop" and e.get("reason") == "breakpoint"]
            if any("could not be written" in e.get("message", "") for e in evs if e.get("event") == "error"):
                failed_at = len(stops)
                resource.prlimit(p.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
                raised = True
            if raised and len(stops) >= failed_at + 10:
                break
        p.stdin.close()
        rest = [json.loads(l) for l in p.stdout if l.startswith("{")]
        rc = p.wait(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    check(failed_at is not None, "recovery: no stop failed under the file-size limit")
    if failed_at is None:
        return
    final = [e["message"] for e in rest if e.get("event") == "error" and "not recorded" in e.get("message", "")]
    check(rc == EXIT_CANT_WRITE and final, f"recovery: status {rc}, final {final}")
    rec = os.path.join(db, "sgemm-1")
    q = subprocess.run([vx, "replay", rec, "--batch", "--json", "-ex", "info checkpoints"], capture_output=True,
                       text=True, timeout=120)
    out = [json.loads(l) for l in q.stdout.splitlines() if l.startswith("{")]
    cps = [e for e in out if e.get("command") == "info checkpoints"]
    listed = {c["instret"] for c in cps[0]["checkpoints"]} if cps else set()
    later = stops[failed_at:]
    check(q.returncode == 0 and len(later) >= 10 and all(x in listed for x in later),
          f"recovery: stops after space returned not all recorded: {sorted(set(later) - listed)} "
          f"(status {q.returncode}, {q.stderr[-300:]!r})")
    check(all(x in listed for x in stops[:failed_at - 1]), "recovery: a stop before the failure is missing")


def listing(vx, rec, preexec=None):
    p = subprocess.run([vx, "replay", rec, "--batch", "--json", "-ex", "info checkpoints"], capture_output=True,
                       text=True, timeout=120, preexec_fn=preexec)
    out = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    cps = [e for e in out if e.get("command") == "info checkpoints"]
    return p.returncode, [c["instret"] for c in cps[0]["checkpoints"]] if cps else None, p.stderr


def check_read_without_room(vx, elf, line, tmp):
    # A recording whose lock file is gone (never opened since it was copied, or removed) is read where
    # nothing can be written: LMDB would create lock.mdb and write its header through a map (SIGBUS on
    # a full filesystem, an error under a file-size limit); reading needs no room.
    db = os.path.join(tmp, "readonly")
    rc, events, err = session(vx, elf, db, [f"break sgemm.c:{line}"] + ["continue"] * 3)
    rec = os.path.join(db, "sgemm-1")
    rc, want, err = listing(vx, rec)
    check(rc == 0 and want and len(want) >= 3, f"read without room: the recording lists {want}: {err[-200:]!r}")
    kept = sorted(f for f in os.listdir(rec) if f != "lock.mdb")  # data.mdb, synced-meta (group commit)
    os.remove(os.path.join(rec, "lock.mdb"))
    p = subprocess.run([vx, "ls", db], capture_output=True, text=True, timeout=60, preexec_fn=limited(0))
    check(p.returncode == 0 and rec in p.stdout and "unreadable" not in p.stdout,
          f"ls under a file-size limit: {p.returncode} {p.stdout[-300:]!r} {p.stderr[-200:]!r}")
    rc, got, err = listing(vx, rec, limited(0))
    check(rc == 0 and got == want, f"replay under a file-size limit: status {rc}, {got} (want {want}); {err[-200:]!r}")
    check(sorted(os.listdir(rec)) == kept, f"read without room left files behind: {os.listdir(rec)}")
    # A full filesystem proper (a small tmpfs in a user namespace), where this was a SIGBUS; only
    # where the machine lets unprivileged users mount one.
    mnt = os.path.join(tmp, "full")
    os.mkdir(mnt)
    try:
        can = subprocess.run(["unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o size=1m tmpfs "$1"', "sh", mnt],
                             capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        can = False
    if not can:
        print("read without room: no tmpfs in a user namespace here; the full-filesystem form is skipped")
        return
    script = ('mount -t tmpfs -o size=1m tmpfs "$1" && cp -r "$2" "$1/rec" && '
              '{ dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null; true; } && '
              '"$3" ls "$1"; echo "ls=$?"; "$3" replay "$1/rec" --batch --json -ex "info checkpoints"; echo "replay=$?"')
    p = subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", mnt, rec, vx], capture_output=True, text=True,
                       timeout=120)
    out = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    cps = [e for e in out if e.get("command") == "info checkpoints"]
    got = [c["instret"] for c in cps[0]["checkpoints"]] if cps else None
    check("ls=0" in p.stdout and "replay=0" in p.stdout and "unreadable" not in p.stdout and got == want,
          f"read on a full filesystem: {p.stdout[-400:]!r} {p.stderr[-300:]!r}")


def main():
    vx, ex, src = sys.argv[1:4]
    elf = os.path.join(ex, "sgemm.elf")
    line = source_line(src, "sgemm", "for (uint32_t k = 0; k < T; k++) acc +=")
    with tempfile.TemporaryDirectory() as tmp:
        check_form(vx, elf, line, tmp, "file-size-limit", [], limited(150))
        check_form(vx, elf, line, tmp, "map-full", ["--db-map-size", "200000"], None)
        check_automatic_only(vx, elf, tmp)
        check_recovery(vx, elf, line, tmp)
        check_read_without_room(vx, elf, line, tmp)
        # --stop-on-store-error ends the session at the first failure instead (status 74 still).
        db = os.path.join(tmp, "stop")
        rc, events, err = session(vx, elf, db, [f"break sgemm.c:{line}"] + ["continue"] * 40,
                                  EVERY_STOP + ["--db-map-size", "200000", "--stop-on-store-error"])
        stops = [e for e in events if e.get("event") == "stop"]
        msgs = [e["message"] for e in events if e.get("event") == "error"]
        check(rc == EXIT_CANT_WRITE and len(stops) < 40 and any("session ends" in m for m in msgs),
              f"--stop-on-store-error: status {rc}, {len(stops)} stops, {msgs}")
        # Nothing can be written: a clear error at the start.
        rc, events, err = session(vx, elf, os.path.join(tmp, "none"), ["continue"], preexec=limited(16))
        msgs = [e["message"] for e in events if e.get("event") == "error"]
        check(rc == EXIT_CANT_WRITE and msgs and "cannot write" in msgs[0], f"no room at the start: {rc} {msgs} {err[-200:]!r}")
        # The host program does not inherit vxreplay's ignored SIGXFSZ: bit 24 (SIGXFSZ - 1) of its
        # SigIgn mask is clear, as it is for the program run alone.
        probe = ["sh", "-c", "grep '^SigIgn:' /proc/self/status"]
        alone = subprocess.run(probe, capture_output=True, text=True, timeout=60).stdout.split()[-1]
        p = subprocess.run([vx, "run", "--no-db", "--", *probe], capture_output=True, text=True, timeout=60)
        hosted = p.stdout.split()[-1] if p.stdout.split() else ""
        bit = 1 << (signal.SIGXFSZ - 1)
        check(p.returncode == 0 and hosted and not int(hosted, 16) & bit and int(hosted, 16) == int(alone, 16),
              f"the host program's ignored signals under vxreplay: {hosted!r} (alone {alone!r}) {p.stderr[-200:]!r}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
