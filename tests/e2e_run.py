#!/usr/bin/env python3
"""End-to-end tests of `vxreplay run` on the example kernels and on bad input.

Usage: e2e_run.py VXREPLAY EXAMPLES_DIR CHECK [ARG]
  CHECK is one of:
    kernel NAME   run NAME on the three test configurations and check its outcome
    seeds         every kernel but racy gives one result over seeds 1..16; racy gives several
    malformed     bad kernel files and bad arguments give clear errors and the documented status
"""
import os
import re
import sys
import tempfile

from e2e_common import EXIT_BAD_INPUT, EXIT_DEVICE_STOP, EXIT_USAGE, check, failures, run

CONFIGS = ["1x1x4x4", "1x2x8x8", "1x1x4x32"]





def summary(out):
    m = re.search(r"divergent branches: (\d+)", out)
    return {"divergent": int(m.group(1)) if m else None,
            "exit_code": int(re.search(r"exit code: (\d+)", out).group(1)) if "exit code:" in out else None}


def console_lines(out):
    """The kernel's console output: everything before the summary lines."""
    lines = out.splitlines()
    end = next((i for i, l in enumerate(lines) if l.startswith("exit code: ")), len(lines))
    return lines[:end]


COMPUTING = ["vecadd", "sgemm", "reduce", "diverge", "histogram", "hello", "saxpy"]


def check_kernel(vx, ex, name):
    elf = os.path.join(ex, name + ".elf")
    for cfg in CONFIGS:
        args = ["run", elf, "--config", cfg]
        if name == "hang":
            args += ["--watchdog", "200000"]
        rc, out, err = run(vx, args)
        tag = f"{name} on {cfg}"
        if name in COMPUTING or name == "racy":
            s = summary(out)
            check(rc == 0, f"{tag}: exit status {rc}, stderr: {err.strip()[:300]}")
            check(s["exit_code"] == 0, f"{tag}: kernel exit code {s['exit_code']}")
            check(s["divergent"] == 0, f"{tag}: {s['divergent']} divergent plain branches (missing split/join)")
        if name == "hello":
            hellos = [l for l in console_lines(out) if l.startswith("hello from")]
            check(len(hellos) > 1, f"{tag}: expected a hello line per thread, got {len(hellos)}")
            check(len(set(hellos)) == len(hellos), f"{tag}: duplicate hello lines")
        if name == "racy":
            check(re.search(r"racy: counter = \d+", out) is not None, f"{tag}: no counter line")
        if name == "offbyone":
            # The bug is real: rows start wrong (docs/time-travel.md's walkthrough finds why).
            m = re.search(r"offbyone: (\d+) of 16 rows start wrong", out)
            check(rc == 0 and m is not None and int(m[1]) > 0, f"{tag}: exit {rc}, output {out[:300]!r}")
        if name == "fault":
            check(rc == EXIT_DEVICE_STOP, f"{tag}: exit status {rc}, expected {EXIT_DEVICE_STOP}")
            check("store to unmapped memory" in err, f"{tag}: stderr lacks the cause: {err.strip()[:300]}")
            check(re.search(r"address 0x[0-9a-f]+", err) is not None, f"{tag}: stderr lacks the address")
        if name == "assert":
            check(rc == EXIT_DEVICE_STOP, f"{tag}: exit status {rc}, expected {EXIT_DEVICE_STOP}")
            check("assertion failed" in err, f"{tag}: stderr lacks 'assertion failed': {err.strip()[:300]}")
            check("ASSERT FAILED" in out, f"{tag}: console lacks the assertion message")
        if name == "branchy":
            # Half the lanes of each warp ran the wrong side of a plain branch; the report names it.
            check(rc == 8 and summary(out)["exit_code"] == 8, f"{tag}: exit status {rc}, expected 8")
            check(re.search(r"divergent branch at pc 0x[0-9a-f]+ \(branchy\.c:\d+, in branchy\)", err) is not None,
                  f"{tag}: no divergence report: {err.strip()[:300]}")
        if name == "hang":
            check(rc == EXIT_DEVICE_STOP, f"{tag}: exit status {rc}, expected {EXIT_DEVICE_STOP}")
            check("watchdog" in err, f"{tag}: stderr lacks 'watchdog': {err.strip()[:300]}")


def check_seeds(vx, ex):
    for name in COMPUTING + ["racy"]:
        results = set()
        for seed in range(1, 17):
            rc, out, err = run(vx, ["run", os.path.join(ex, name + ".elf"), "--seed", str(seed)])
            # The order of console lines depends on the schedule; their content must not.
            results.add((rc, summary(out)["exit_code"], tuple(sorted(console_lines(out)))))
        if name == "racy":
            check(len(results) >= 2, f"racy: one result over 16 seeds, expected the race to show")
        else:
            check(len(results) == 1, f"{name}: {len(results)} different results over 16 seeds")


def check_malformed(vx, ex):
    with tempfile.TemporaryDirectory() as tmp:
        def write(name, data):
            path = os.path.join(tmp, name)
            with open(path, "wb") as f:
                f.write(data)
            return path

        good = open(os.path.join(ex, "vecadd.elf"), "rb").read()
        cases = [
            ("missing file", ["run", os.path.join(tmp, "nope.elf")], EXIT_BAD_INPUT, "cannot open"),
            ("empty file", ["run", write("empty.elf", b"")], EXIT_BAD_INPUT, "empty"),
            ("truncated ELF", ["run", write("trunc.elf", good[:200])], EXIT_BAD_INPUT, "trunc.elf"),
            ("short vxbin", ["run", write("short.vxbin", b"\x00" * 8)], EXIT_BAD_INPUT, "16-byte header"),
            ("vxbin with inverted range",
             ["run", write("inv.vxbin", (0x80001000).to_bytes(8, "little") + (0x80000000).to_bytes(8, "little"))],
             EXIT_BAD_INPUT, "is not above"),
            ("64-bit ELF", ["run", write("elf64.elf", b"\x7fELF\x02\x01\x01" + b"\x00" * 57)], EXIT_BAD_INPUT, "ELF"),
            ("bad config", ["run", os.path.join(ex, "vecadd.elf"), "--config", "1x1x4x3"], EXIT_USAGE,
             "power of two"),
            ("bad grid", ["run", os.path.join(ex, "vecadd.elf"), "--grid", "0"], EXIT_USAGE, "at least 1"),
            ("block too big", ["run", os.path.join(ex, "vecadd.elf"), "--block", "1000"], EXIT_BAD_INPUT,
             "warps"),
            ("unknown flag", ["run", os.path.join(ex, "vecadd.elf"), "--bogus"], EXIT_USAGE, "bogus"),
            ("no subcommand", [], EXIT_USAGE, ""),
        ]
        # Flip bytes in the program headers of a good ELF: never a crash.
        for i, off in enumerate([52, 60, 68, 80, 100]):
            bad = bytearray(good)
            for k in range(8):
                if off + k < len(bad):
                    bad[off + k] ^= 0xA5
            cases.append((f"corrupted ELF at {off}", ["run", write(f"corrupt{i}.elf", bytes(bad))], None, ""))
        for what, args, want_rc, want_text in cases:
            rc, out, err = run(vx, args, timeout=60)
            check(rc >= 0, f"{what}: killed by signal {-rc}")
            if want_rc is not None:
                check(rc == want_rc, f"{what}: exit status {rc}, expected {want_rc}; stderr: {err.strip()[:200]}")
            else:
                check(rc in (0, EXIT_BAD_INPUT, EXIT_DEVICE_STOP) or 1 <= rc <= 63,
                      f"{what}: unexpected exit status {rc}")
            check(want_text.lower() in (err + out).lower(), f"{what}: message lacks '{want_text}': {err.strip()[:200]}")
            if rc == EXIT_BAD_INPUT or rc == EXIT_USAGE:
                check(err.strip() != "", f"{what}: no error message on stderr")


def main():
    vx, ex, what = sys.argv[1], sys.argv[2], sys.argv[3]
    if what == "kernel":
        check_kernel(vx, ex, sys.argv[4])
    elif what == "seeds":
        check_seeds(vx, ex)
    elif what == "malformed":
        check_malformed(vx, ex)
    else:
        print("unknown check", what, file=sys.stderr)
        return 2
    print(f"{'FAILED' if failures else 'ok'}: {what} {' '.join(sys.argv[4:])} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
