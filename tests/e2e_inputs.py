#!/usr/bin/env python3
"""Hostile inputs through the real binary (issue 24's list): each is a clear one-line error with the
documented exit status, never a crash, a hang or an unbounded read.

Usage: e2e_inputs.py VXREPLAY EXAMPLES_DIR
"""
import os
import subprocess
import sys
import tempfile
import time

from e2e_common import EXIT_BAD_INPUT, EXIT_USAGE, check, finish


def run(vx, args, timeout=30):
    p = subprocess.run([vx, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def expect(vx, args, status, words):
    rc, out, err = run(vx, args)
    what = " ".join(args)[:120]
    check(rc == status, f"{what}: status {rc}, want {status}; stderr {err[-300:]!r}")
    check(all(w in err for w in words), f"{what}: stderr {err[-300:]!r} should say {words}")
    check(0 < len(err.strip().splitlines()) <= 2 and len(err) < 600, f"{what}: not a short error: {err[-300:]!r}")


def main():
    vx, ex = sys.argv[1:3]
    reduce_elf = os.path.join(ex, "reduce.elf")
    with tempfile.TemporaryDirectory() as tmp:
        # Kernel files: a directory, a device, a missing file.
        expect(vx, ["run", tmp], EXIT_BAD_INPUT, [tmp, "directory"])
        expect(vx, ["run", "/dev/zero"], EXIT_BAD_INPUT, ["/dev/zero", "not a regular file"])
        # Launch files: a number too large for a double, a syntax error after a long token, a huge buffer file.
        big = os.path.join(tmp, "big.json")
        open(big, "w").write('{"lmem": 1e999}')
        expect(vx, ["run", reduce_elf, "--launch", big], EXIT_BAD_INPUT, ["big.json", "1e999"])
        long = os.path.join(tmp, "long.json")
        open(long, "w").write('{"grid": [1], "x' + "a" * 60000 + '" : ]')
        expect(vx, ["run", reduce_elf, "--launch", long], EXIT_BAD_INPUT, ["long.json:1:"])
        zero = os.path.join(tmp, "zero.json")
        open(zero, "w").write('{"buffers": [{"name": "z", "size": 16, "init": {"file": "/dev/zero"}}]}')
        expect(vx, ["run", reduce_elf, "--launch", zero], EXIT_BAD_INPUT, ["/dev/zero", "not a regular file"])
        # Scripts: a directory, a device.
        expect(vx, ["run", reduce_elf, "-x", tmp, "--batch"], EXIT_USAGE, ["-x", "directory"])
        expect(vx, ["run", reduce_elf, "-x", "/dev/zero", "--batch"], EXIT_USAGE, ["-x", "not a regular file"])
        # Files above their size caps (sparse: nothing is written) are refused by their size, at once.
        huge = os.path.join(tmp, "huge.elf")
        with open(huge, "wb") as f:
            f.truncate(3 << 30)
        start = time.monotonic()
        expect(vx, ["run", huge], EXIT_BAD_INPUT, [huge, str(3 << 30)])
        script = os.path.join(tmp, "huge.gdb")
        with open(script, "wb") as f:
            f.truncate(17 << 20)
        expect(vx, ["run", reduce_elf, "-x", script, "--batch"], EXIT_USAGE, ["-x", str(17 << 20)])
        took = time.monotonic() - start
        check(took < 10, f"refusing files above the caps took {took:.1f} s")
        # Numbers that do not parse as what they mean: every numeric flag of run and replay, in turn.
        bad = ("-1", "99999999999999999999999", "", "x", "1e3", " 5")
        for flag in ("--seed", "--watchdog", "--lmem", "--checkpoint-interval", "--db-map-size"):
            for value in bad:
                expect(vx, ["run", reduce_elf, flag, value], EXIT_USAGE, [flag])
        for value in bad:
            expect(vx, ["run", reduce_elf, "--mode", "live", "--attach-after", value], EXIT_USAGE, ["--attach-after"])
            expect(vx, ["replay", tmp, "--at", value], EXIT_USAGE, ["--at"])
        expect(vx, ["run", reduce_elf, "--lmem", "4294967296"], EXIT_USAGE, ["--lmem"])
        expect(vx, ["replay", tmp, "--at", "4294967296"], EXIT_USAGE, ["--at"])
        for flag in ("--grid", "--block"):
            expect(vx, ["run", reduce_elf, flag, ""], EXIT_USAGE, [flag])
        # Expressions nested past the limit.
        rc, out, err = run(vx, ["run", reduce_elf, "--batch", "--no-db", "-ex", "print " + "(" * 5000 + "1" + ")" * 5000,
                                "-ex", "print " + "-" * 60000 + "1", "-ex", "print " + "+".join(["1"] * 60000)])
        check(rc == 0 and err.count("too deeply nested") == 3, f"deep expressions: status {rc}, stderr {err[-300:]!r}")
        # Issue 33's smaller items. An empty --db is a mistake, not the default directory.
        expect(vx, ["run", reduce_elf, "--db", ""], EXIT_USAGE, ["--db", "empty directory name"])
        # A number the JSON reader cannot hold: the JSON path, not the library's own text.
        over = os.path.join(tmp, "over.json")
        with open(over, "w") as f:
            f.write('{"buffers": [{"name": "a", "size": 4}, {"name": "b", "size": 1e999}]}')
        expect(vx, ["run", reduce_elf, "--launch", over], EXIT_BAD_INPUT, ["buffers[1].size: number overflow"])
        rc, out, err = run(vx, ["run", reduce_elf, "--launch", over])
        check("json.exception" not in err, f"launch file: the library's own text: {err!r}")
        # A sweep result of the wrong type: the key and the types.
        merge = os.path.join(tmp, "merge")
        os.mkdir(merge)
        with open(os.path.join(merge, "a.json"), "w") as f:
            f.write('{"format": "vxreplay-sweep-result", "version": "1"}')
        expect(vx, ["sweep", reduce_elf, "--merge", merge], EXIT_BAD_INPUT, ["a.json: version: expected an integer"])
        # vxreplay ls lists the directories it skips, with the reason.
        root = os.path.join(tmp, "ls")
        for d in ("none", "dir", "fifo", "zero"):
            os.makedirs(os.path.join(root, d))
        os.mkdir(os.path.join(root, "dir", "data.mdb"))
        os.mkfifo(os.path.join(root, "fifo", "data.mdb"))
        os.symlink("/dev/zero", os.path.join(root, "zero", "data.mdb"))
        rc, out, err = run(vx, ["ls", root])
        check(rc == 0 and "none" in out and "no data.mdb in it" in out and "data.mdb is a directory" in out
              and "(a FIFO)" in out and "(a device, through a symbolic link)" in out, f"ls: {rc} {out!r} {err!r}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
