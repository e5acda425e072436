#!/usr/bin/env python3
"""End-to-end tests of what upstream-style kernels need from the model (docs/host-kernels.md).

Usage: e2e_host_kernels.py VXREPLAY EXAMPLES_DIR SOURCE_ROOT CHECK
  CHECK is one of:
    tls         a legacy-style kernel whose per-hart TLS blocks lie past the image runs on 1x2x8x8
    address     launch-file buffers at fixed addresses (the kernel gets one as a plain number)
    vxbin       .vxbin images with and without a VXSYMTAB footer: launched at the min vma or the
                entry the footer names; symbols from the ELF beside it or --symbols, said on stderr
    divergence  a plain branch whose lanes disagree: its pc, file:line and lanes in the plain runner
                and in a session; --strict-branches stops there as a device exception (66)
"""
import os
import re
import shutil
import struct
import sys
import tempfile

from e2e_common import EXIT_BAD_INPUT, EXIT_DEVICE_STOP, check, failures, run


def elf_segments_and_symbols(path):
    """(PT_LOAD segments as (vaddr, file bytes, memsz), {symbol: value}) of an ELF32 little-endian file."""
    data = open(path, "rb").read()
    e_phoff, e_shoff = struct.unpack_from("<II", data, 28)
    e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from("<HHHH", data, 42)
    segs = []
    for i in range(e_phnum):
        p_type, p_offset, p_vaddr, _, p_filesz, p_memsz = struct.unpack_from("<IIIIII", data, e_phoff + i * e_phentsize)
        if p_type == 1 and p_memsz:
            segs.append((p_vaddr, data[p_offset:p_offset + p_filesz], p_memsz))
    syms = {}
    for i in range(e_shnum):
        sh = struct.unpack_from("<IIIIIIIIII", data, e_shoff + i * e_shentsize)
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = struct.unpack_from("<IIIIIIIIII", data, e_shoff + sh[6] * e_shentsize)
        for k in range(sh[5] // 16):
            name, value = struct.unpack_from("<II", data, sh[4] + k * 16)
            end = data.index(b"\0", strtab[4] + name)
            syms[data[strtab[4] + name:end].decode()] = value
    return segs, syms


def make_vxbin(elf, entries=None):
    """The bytes of upstream's .vxbin for an ELF: min vma, max vma (u64), the loadable bytes from the
    min vma to the end of the last file bytes, then (entries: [(name, pc)]) a VXSYMTAB footer."""
    segs, _ = elf_segments_and_symbols(elf)
    lo = min(v for v, _, _ in segs)
    hi = max(v + m for v, _, m in segs)
    raw = bytearray(max(v + len(b) for v, b, _ in segs) - lo)
    for v, b, _ in segs:
        raw[v - lo:v - lo + len(b)] = b
    out = struct.pack("<QQ", lo, hi) + bytes(raw)
    if entries is not None:
        blob, table = b"", b""
        for name, pc in entries:
            if blob:
                blob += b"\0"
            table += struct.pack("<IHHQ", len(blob), len(name), 0, pc)
            blob += name.encode()
        out += blob + table + struct.pack("<I", len(entries)) + b"VXSYMTAB"
    return out


def write(path, data):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return path


def exit_code(out):
    m = re.search(r"exit code: (\d+)", out)
    return int(m.group(1)) if m else None


def check_tls(vx, ex, src):
    elf = os.path.join(ex, "legacy_tls.elf")
    for cfg in ["1x2x8x8", "1x1x4x32", "1x1x4x4"]:
        rc, out, err = run(vx, ["run", elf, "--config", cfg])
        check(rc == 0 and exit_code(out) == 0, f"tls on {cfg}: status {rc}, exit code {exit_code(out)}: {err.strip()[:300]}")
    # Every lane of every warp, on the largest shape (a block of 64 threads fills the core's 8 warps).
    rc, out, err = run(vx, ["run", elf, "--config", "1x2x8x8", "--block", "64"])
    check(rc == 0 and exit_code(out) == 0, f"tls, block 64: status {rc}: {err.strip()[:300]}")
    with tempfile.TemporaryDirectory() as tmp:
        # The .vxbin with its ELF beside it: the ELF's TLS facts apply.
        shutil.copy(elf, os.path.join(tmp, "legacy_tls.elf"))
        vxbin = write(os.path.join(tmp, "legacy_tls.vxbin"), make_vxbin(elf))
        rc, out, err = run(vx, ["run", vxbin, "--config", "1x2x8x8"])
        check(rc == 0 and exit_code(out) == 0, f"tls .vxbin: status {rc}: {err.strip()[:300]}")
        check("from " + os.path.join(tmp, "legacy_tls.elf") + " beside it" in err, f"tls .vxbin: stderr {err!r}")
        # Without its ELF nothing says where TLS lies: the first hart past the image's pages faults in
        # __init_tls, as the model did for every legacy image before it mapped TLS.
        os.remove(os.path.join(tmp, "legacy_tls.elf"))
        rc, out, err = run(vx, ["run", vxbin, "--config", "1x2x8x8"])
        check(rc == EXIT_DEVICE_STOP and "store to unmapped memory" in err, f"tls .vxbin alone: {rc} {err!r}")


def check_address(vx, ex, src):
    saxpy = os.path.join(ex, "saxpy.elf")
    n, a = 64, 2.0
    with tempfile.TemporaryDirectory() as tmp:
        xs = [float(i) for i in range(n)]
        write(os.path.join(tmp, "x.bin"), struct.pack(f"<{n}f", *xs))
        expected = struct.pack(f"<{n}f", *[a * xs[i] + 1.0 for i in range(n)])
        write(os.path.join(tmp, "expected.bin"), expected)
        # The kernel gets x's address as a plain number: only a buffer really at 0x300000 gives the result.
        write(os.path.join(tmp, "fixed.json"), """{
          "grid": [4], "block": [16], "entry": "saxpy",
          "buffers": [
            {"name": "y", "size": 256, "init": {"pattern": [1065353216]}},
            {"name": "x", "address": "0x300000", "init": {"file": "x.bin"}},
            {"name": "out", "size": 256, "address": 3153920, "compare": "expected.bin", "dump": "out.bin"}
          ],
          "args": [{"u32": 64}, {"f32": 2.0}, {"u32": 3145728}, {"buffer": "y"}, {"buffer": "out"}]
        }""")
        rc, out, err = run(vx, ["run", saxpy, "--launch", os.path.join(tmp, "fixed.json")])
        check(rc == 0 and exit_code(out) == 0, f"address: status {rc}: {err.strip()[:300]}")
        got = open(os.path.join(tmp, "out.bin"), "rb").read() if os.path.exists(os.path.join(tmp, "out.bin")) else b""
        check(got == expected, "address: the output differs from a * x + y")
        rc, out, err = run(vx, ["run", saxpy, "--launch", os.path.join(tmp, "fixed.json"), "--batch", "--no-db",
                                "-ex", "continue", "-ex", "x/2wx 0x300004"])
        check(rc == 0, f"address, session: status {rc}: {err.strip()[:300]}")
        check("0x3f800000" in out and "0x40000000" in out, f"address, session: x/2wx 0x300004 shows {out[-300:]!r}")
        # A fixed address on the kernel image: one line naming the buffer, status 65.
        write(os.path.join(tmp, "clash.json"), '{"buffers": [{"name": "k", "size": 16, "address": "0x80000000"}]}')
        rc, out, err = run(vx, ["run", saxpy, "--launch", os.path.join(tmp, "clash.json")])
        check(rc == EXIT_BAD_INPUT, f"address clash: status {rc}")
        check(re.search(r'clash.json: buffers\[0\] \("k"\): mem_reserve: 0x80000000\.\.0x80000010 overlaps', err)
              is not None, f"address clash: stderr {err!r}")


def check_vxbin(vx, ex, src):
    saxpy_elf = os.path.join(ex, "saxpy.elf")
    _, syms = elf_segments_and_symbols(saxpy_elf)
    n = 64
    with tempfile.TemporaryDirectory() as tmp:
        xs = [float(i % 7) for i in range(n)]
        write(os.path.join(tmp, "x.bin"), struct.pack(f"<{n}f", *xs))
        write(os.path.join(tmp, "expected.bin"), struct.pack(f"<{n}f", *[0.5 * xs[i] + 1.0 for i in range(n)]))
        launch = write(os.path.join(tmp, "l.json"), """{
          "grid": [4], "block": [16],
          "buffers": [
            {"name": "x", "init": {"file": "x.bin"}},
            {"name": "y", "size": 256, "init": {"pattern": [1065353216]}},
            {"name": "out", "size": 256, "compare": "expected.bin"}
          ],
          "args": [{"u32": 64}, {"f32": 0.5}, {"buffer": "x"}, {"buffer": "y"}, {"buffer": "out"}]
        }""")
        # One footer entry: the launch runs it (no ELF beside: by address, said on stderr).
        one = write(os.path.join(tmp, "one.vxbin"), make_vxbin(saxpy_elf, [("saxpy", syms["saxpy"])]))
        rc, out, err = run(vx, ["run", one, "--launch", launch])
        check(rc == 0 and exit_code(out) == 0, f"vxbin, one entry: status {rc}: {err.strip()[:300]}")
        check("no symbols for one.vxbin (no one.elf beside it" in err and "debugging by address" in err,
              f"vxbin, one entry: stderr {err!r}")
        # Several entries and no "main": the launch needs --entry (or the launch file's entry).
        two = write(os.path.join(tmp, "two.vxbin"),
                    make_vxbin(saxpy_elf, [("first", syms["_start"]), ("saxpy", syms["saxpy"])]))
        rc, out, err = run(vx, ["run", two])
        check(rc == EXIT_BAD_INPUT and "first, saxpy" in err and "--entry" in err, f"vxbin, two entries: {rc} {err!r}")
        rc, out, err = run(vx, ["run", two, "--launch", launch, "--entry", "saxpy"])
        check(rc == 0 and exit_code(out) == 0, f"vxbin --entry saxpy: status {rc}: {err.strip()[:300]}")
        with_entry = write(os.path.join(tmp, "e.json"), open(launch).read().replace('"grid"', '"entry": "saxpy", "grid"'))
        rc, out, err = run(vx, ["run", two, "--launch", with_entry])
        check(rc == 0 and exit_code(out) == 0, f"vxbin, launch-file entry: status {rc}: {err.strip()[:300]}")
        rc, out, err = run(vx, ["run", two, "--entry", "nope"])
        check(rc == EXIT_BAD_INPUT and 'no kernel "nope"' in err, f"vxbin --entry nope: {rc} {err!r}")
        # The ELF beside it, when its loadable bytes match: symbols, and a breakpoint by function.
        shutil.copy(saxpy_elf, os.path.join(tmp, "one.elf"))
        rc, out, err = run(vx, ["run", one, "--launch", launch, "--batch", "--no-db", "--break", "saxpy",
                                "-ex", "continue", "-ex", "continue"])
        check("symbols for one.vxbin from " + os.path.join(tmp, "one.elf") + " beside it (its loadable bytes match)"
              in err, f"vxbin beside: stderr {err!r}")
        check(re.search(r"Breakpoint 1, saxpy\b", out) is not None, f"vxbin beside: {out[:600]!r}")
        check(rc == 0, f"vxbin beside: status {rc}")
        # An ELF beside it that is another kernel is not used.
        shutil.copy(os.path.join(ex, "vecadd.elf"), os.path.join(tmp, "one.elf"))
        rc, out, err = run(vx, ["run", one, "--launch", launch])
        check(rc == 0 and "is not its ELF: their loadable bytes differ at 0x" in err, f"vxbin, wrong ELF: {err!r}")
        # --symbols FILE: used when it matches, an error when it does not.
        rc, out, err = run(vx, ["run", one, "--launch", launch, "--symbols", saxpy_elf])
        check(rc == 0 and f"symbols for one.vxbin from {saxpy_elf} (--symbols)" in err, f"--symbols: {rc} {err!r}")
        rc, out, err = run(vx, ["run", one, "--symbols", os.path.join(ex, "vecadd.elf")])
        check(rc == EXIT_BAD_INPUT and "is not the ELF of" in err, f"--symbols mismatch: {rc} {err!r}")
        # No footer: the image starts at its min vma and its own startup calls main (legacy_tls).
        plain = write(os.path.join(tmp, "plain.vxbin"), make_vxbin(os.path.join(ex, "legacy_tls.elf")))
        rc, out, err = run(vx, ["run", plain])
        check(rc == 0 and exit_code(out) == 0, f"vxbin, no footer: status {rc}: {err.strip()[:300]}")
        # A footer whose entry lies outside the image.
        bad = write(os.path.join(tmp, "bad.vxbin"), make_vxbin(saxpy_elf, [("k", 0x10)]))
        rc, out, err = run(vx, ["run", bad])
        check(rc == EXIT_BAD_INPUT and 'VXSYMTAB footer: entry 0 ("k"): pc 0x10 is outside the image' in err,
              f"vxbin, bad footer: {rc} {err!r}")


def check_divergence(vx, ex, src):
    elf = os.path.join(ex, "branchy.elf")
    line = next(i for i, l in enumerate(open(os.path.join(src, "examples", "branchy.c")), 1) if "if (i & 1u)" in l)
    where = f"(branchy.c:{line}, in branchy)"
    rc, out, err = run(vx, ["run", elf])
    reports = [l for l in err.splitlines() if "divergent branch at pc" in l]
    check(rc == 8 and exit_code(out) == 8, f"branchy: status {rc}, the even lanes ran the odd side 8 times")
    check(len(reports) == 1, f"branchy: one report per pc, got {reports}")
    check(bool(reports) and where in reports[0] and "taken by lanes 1,3, not taken by lanes 0,2" in reports[0]
          and "the warp followed lane 3 (taken)" in reports[0], f"branchy: {reports}")
    check("divergent branches: 4" in out, f"branchy: the count: {out!r}")
    rc, out, err = run(vx, ["run", os.path.join(ex, "vecadd.elf")])
    check(rc == 0 and "divergent branch at" not in err, f"vecadd: no report expected: {err!r}")
    # --strict-branches: a device exception at the branch, before it executes.
    rc, out, err = run(vx, ["run", elf, "--strict-branches"])
    check(rc == EXIT_DEVICE_STOP, f"strict: status {rc}")
    check(re.search(r"device exception: divergent branch \(lanes disagree outside a split\) at pc 0x[0-9a-f]+ "
                    r"\(core 0, warp \d+, lane 0, lanes taken 0x0000000a\)", err) is not None, f"strict: {err!r}")
    check(where in err, f"strict: no source line: {err!r}")
    # A session: the same line once, at the stop or the exit; --strict-branches stops there (66).
    rc, out, err = run(vx, ["run", elf, "--batch", "--no-db", "-ex", "continue"])
    reports = [l for l in out.splitlines() if l.startswith("divergent branch at pc")]
    check(rc == 8 and len(reports) == 1 and where in reports[0], f"session: status {rc}, {reports}")
    rc, out, err = run(vx, ["run", elf, "--batch", "--no-db", "--break", "odd_side", "-ex", "continue",
                            "-ex", "continue"])
    reports = [l for l in out.splitlines() if l.startswith("divergent branch at pc")]
    check(len(reports) == 1, f"session with a breakpoint: one report, got {reports}")
    rc, out, err = run(vx, ["run", elf, "--batch", "--no-db", "--mode", "live", "-ex", "continue"])
    reports = [l for l in out.splitlines() if l.startswith("divergent branch at pc")]
    check(rc == 8 and len(reports) == 1 and where in reports[0], f"live session: status {rc}, {reports}")
    rc, out, err = run(vx, ["run", elf, "--batch", "--no-db", "--strict-branches", "-ex", "continue"])
    check(rc == EXIT_DEVICE_STOP, f"strict session: status {rc}")
    check(f"Device exception: divergent branch (lanes disagree outside a split), branchy (branchy.c:{line})" in out,
          f"strict session: {out!r}")


def main():
    vx, ex, src, what = sys.argv[1:5]
    {"tls": check_tls, "address": check_address, "vxbin": check_vxbin, "divergence": check_divergence}[what](vx, ex, src)
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
