#!/usr/bin/env python3
"""End-to-end tests of `vxreplay run KERNEL --launch FILE.json` (docs/cli.md, "Launch files").

Usage: e2e_launch.py VXREPLAY EXAMPLES_DIR SOURCE_ROOT CHECK
  CHECK is one of:
    run        the plain runner: saxpy with buffers from a file, a pattern and a seeded generator,
               dumps and comparisons (a wrong expected file gives the mismatch message and status 1),
               flags override the file
    session    the same through a debugger session (--batch -ex continue)
    malformed  bad launch files give one-line errors naming the file and the JSON path, status 65;
               --live runs a live session; without a Debug Module it exits 69
"""
import json
import os
import struct
import sys
import tempfile

from e2e_common import EXIT_BAD_INPUT, EXIT_USAGE, check, failures, run

N = 1000
A = 0.5





def splitmix64_words(seed, count):
    """The documented generator of "init": {"random": SEED}: low 32 bits of each splitmix64 output."""
    mask = (1 << 64) - 1
    state = seed & mask
    out = []
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        out.append(z & 0xFFFFFFFF)
    return out


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def saxpy_setup(tmp):
    """A launch file for saxpy in tmp; returns (launch path, expected output bytes)."""
    xs = [f32(float(i % 97)) for i in range(N)]
    ypat = [f32(1.0), f32(-2.0), f32(0.25)]
    write(os.path.join(tmp, "x.bin"), struct.pack(f"<{N}f", *xs))
    # Every value is exact in binary32, whether or not the compiler fuses the multiply-add.
    expected = struct.pack(f"<{N}f", *[f32(f32(A * xs[i]) + ypat[i % 3]) for i in range(N)])
    write(os.path.join(tmp, "expected.bin"), expected)
    write(os.path.join(tmp, "wrong.bin"), expected[:100] + bytes([expected[100] ^ 0xFF]) + expected[101:])
    launch = {
        "grid": [64, 1, 1],
        "block": [16, 1, 1],
        "entry": "saxpy",
        "buffers": [
            {"name": "x", "init": {"file": "x.bin"}},
            {"name": "y", "size": 4 * N, "init": {"pattern": [struct.unpack("<I", struct.pack("<f", v))[0]
                                                              for v in ypat]}},
            {"name": "noise", "size": 64, "init": {"random": 42}, "dump": "noise.bin"},
            {"name": "out", "size": 4 * N, "init": "zeros", "dump": "out.bin", "compare": "expected.bin"},
        ],
        "args": [{"u32": N}, {"f32": A}, {"buffer": "x"}, {"buffer": "y"}, {"buffer": "out"}],
    }
    path = os.path.join(tmp, "launch.json")
    with open(path, "w") as f:
        json.dump(launch, f, indent=2)
    wrong = dict(launch)
    wrong["buffers"] = [dict(b) for b in launch["buffers"]]
    wrong["buffers"][3]["compare"] = "wrong.bin"
    wrong["buffers"][3]["dump"] = "out-wrong.bin"
    with open(os.path.join(tmp, "wrong.json"), "w") as f:
        json.dump(wrong, f, indent=2)
    return path, expected


def check_outputs(tmp, expected, tag):
    out = open(os.path.join(tmp, "out.bin"), "rb").read() if os.path.exists(os.path.join(tmp, "out.bin")) else None
    check(out == expected, f"{tag}: out.bin differs from the expected output")
    noise = open(os.path.join(tmp, "noise.bin"), "rb").read() if os.path.exists(os.path.join(tmp, "noise.bin")) else b""
    check(noise == struct.pack("<16I", *splitmix64_words(42, 16)), f"{tag}: noise.bin is not splitmix64(42)")
    for name in ("out.bin", "noise.bin"):
        if os.path.exists(os.path.join(tmp, name)):
            os.remove(os.path.join(tmp, name))


def check_run(vx, ex, src, session):
    elf = os.path.join(ex, "saxpy.elf")
    extra = ["--batch", "-ex", "continue", "--no-db"] if session else []
    tag = "session" if session else "run"
    # The example launch file in the source tree, and the image's own (self-checking) launch.
    rc, out, err = run(vx, ["run", elf, "--launch", os.path.join(src, "examples", "launch", "saxpy.json"), *extra])
    check(rc == 0, f"{tag}: examples/launch/saxpy.json: status {rc}: {err.strip()[:300]}")
    rc, out, err = run(vx, ["run", elf, *extra])
    check(rc == 0, f"{tag}: saxpy without a launch file: status {rc}: {err.strip()[:300]}")
    with tempfile.TemporaryDirectory() as tmp:
        launch, expected = saxpy_setup(tmp)
        rc, out, err = run(vx, ["run", elf, "--launch", launch, *extra])
        check(rc == 0, f"{tag}: status {rc}, expected 0: {err.strip()[:300]}")
        check_outputs(tmp, expected, tag)
        # A wrong expected file: the first differing byte, both values, status 1.
        rc, out, err = run(vx, ["run", elf, "--launch", os.path.join(tmp, "wrong.json"), *extra])
        check(rc == 1, f"{tag}: wrong expected file: status {rc}, expected 1: {err.strip()[:300]}")
        want = (f"buffers[3] (\"out\"): compare: differs from {os.path.join(tmp, 'wrong.bin')} at byte offset 100 "
                f"(0x64): got 0x{expected[100]:02x}, expected 0x{expected[100] ^ 0xFF:02x}")
        check(want in err, f"{tag}: mismatch message lacks '{want}': {err.strip()[:400]}")
        check(open(os.path.join(tmp, "out-wrong.bin"), "rb").read() == expected, f"{tag}: dump with a mismatch")
        # Flags override the file: one CTA of 16 threads computes only out[0..15].
        rc, out, err = run(vx, ["run", elf, "--launch", launch, "--grid", "1", *extra])
        check(rc == 1, f"{tag}: --grid 1: status {rc}, expected 1 (a mismatch): {err.strip()[:300]}")
        first = next(i for i in range(64, len(expected)) if expected[i] != 0)  # out[16..] stays zero
        check(f"at byte offset {first} ({first:#x}): got 0x00, expected 0x{expected[first]:02x}" in err,
              f"{tag}: --grid 1: mismatch not at byte {first}: {err.strip()[:300]}")


def check_malformed(vx, ex):
    elf = os.path.join(ex, "saxpy.elf")
    with tempfile.TemporaryDirectory() as tmp:
        def launch_file(name, text):
            return write(os.path.join(tmp, name), text.encode())

        cases = [
            ("bad JSON", launch_file("bad.json", '{\n  "grid": [1, 1],\n  "block": [16\n}\n'),
             "bad.json:4:1: "),
            ("unknown key", launch_file("typo.json", '{"buffers": [{"name": "a", "sise": 16}]}'),
             'typo.json: buffers[0].sise: unknown key'),
            ("missing buffer name", launch_file("noname.json", '{"buffers": [{"size": 16}]}'),
             'noname.json: buffers[0]: missing "name"'),
            ("unknown buffer in args", launch_file("noarg.json", '{"args": [{"buffer": "q"}]}'),
             'noarg.json: args[0].buffer: no buffer named "q"'),
            ("unreadable file", launch_file("nofile.json", '{"buffers": [{"name": "d", "init": {"file": "input.bin"}}]}'),
             f"nofile.json: buffers[0].init.file: cannot read {os.path.join(tmp, 'input.bin')}"),
            ("size not a multiple of 4",
             launch_file("odd.json", '{"buffers": [{"name": "a", "size": 10, "init": {"random": 1}}]}'),
             "odd.json: buffers[0].size: 10 is not a multiple of 4"),
            ("zero size", launch_file("zero.json", '{"buffers": [{"name": "a", "size": 0}]}'),
             "zero.json: buffers[0].size: must be greater than 0"),
            ("unknown entry", launch_file("entry.json", '{"entry": "no_such_kernel"}'),
             'entry.json: entry: no symbol "no_such_kernel"'),
            ("missing launch file", os.path.join(tmp, "nope.json"), "cannot read"),
        ]
        for session in (False, True):
            extra = ["--batch", "--no-db"] if session else []
            for what, path, want in cases:
                tag = f"{'session' if session else 'run'}: {what}"
                rc, out, err = run(vx, ["run", elf, "--launch", path, *extra], timeout=60)
                check(rc == EXIT_BAD_INPUT, f"{tag}: status {rc}, expected {EXIT_BAD_INPUT}: {err.strip()[:200]}")
                check(want in err, f"{tag}: stderr lacks '{want}': {err.strip()[:300]}")
                check(len(err.strip().splitlines()) == 1, f"{tag}: not a one-line error: {err.strip()[:300]}")
        rc, out, err = run(vx, ["run", elf, "--live", "--batch", "--no-db"], timeout=60)
        check(rc == 0, f"--live: status {rc}, expected 0: {err.strip()[:300]}")
        rc, out, err = run(vx, ["run", elf, "--live", "--no-debug-module", "--batch", "--no-db"], timeout=60)
        check(rc == 69, f"--live on a device without a DM: status {rc}, expected 69")
        check("this device has no Debug Module; use --mode relaunch" in err and len(err.strip().splitlines()) == 1,
              f"--live without a DM: expected one line: {err.strip()[:300]}")


def main():
    vx, ex, src, what = sys.argv[1:5]
    if what == "run":
        check_run(vx, ex, src, session=False)
    elif what == "session":
        check_run(vx, ex, src, session=True)
    elif what == "malformed":
        check_malformed(vx, ex)
    else:
        print("unknown check", what, file=sys.stderr)
        return 2
    print(f"{'FAILED' if failures else 'ok'}: {what} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
