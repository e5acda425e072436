#!/usr/bin/env python3
"""End-to-end tests of host programs written against vortex.h (docs/host.md).

Usage: e2e_host.py VXREPLAY BUILD_ROOT SOURCE_ROOT CHECK
  CHECK is one of:
    plain    each example host program run alone (libvortex drives the model in-process) and
             under `vxreplay run -- PROGRAM`: the same output and exit status
    session  a breakpoint in the second of three launches, print and x there, info launches,
             continue to the host's own PASSED; sgemm -n 64 at the README's line
    kill     SIGKILL of the host while its kernel is stopped: the session says so, exits 137, and
             the recording replays
    killmany SIGKILL of vxreplay at random points while it records a program of many small launches:
             every launch the program saw complete is in the recording, which replays to its end
    misuse   null and stale handles, copies past a buffer's end, vx_start on a data buffer, an
             overlapping reserve...: each call fails with a reason on stderr, plain and under vxreplay
    status   125 (vxreplay's own failure), 126 (cannot execute), 127 (not found), the host's own
             status and 128+N for a signal
    replay   `vxreplay replay` of a host program's recording with the program and its kernel gone
             reaches the same stops
    abi      a program using every vortex.h function, compiled against the installed header and
             library (pkg-config vortex, no project include), run plain and under vxreplay
"""
import json
import glob
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from e2e_common import check, failures, line_of, stop_server
from e2e_common import run_cmd as run

VX, BUILD, SRC, CHECK = sys.argv[1:5]
HOST_DIR = os.path.join(BUILD, "examples", "host")
EXAMPLES = ["vecadd", "sgemm", "histogram", "pipeline", "fixed", "twokernels", "queues"]


def prog(name):
    return os.path.join(HOST_DIR, name)


def check_plain():
    for name in EXAMPLES:
        args = [prog(name)] + (["-n", "64"] if name == "sgemm" else [])
        rc0, out0, err0 = run(args)
        rc1, out1, err1 = run([VX, "run", "--"] + args)
        check(rc0 == 0 and "PASSED" in out0, f"{name} plain: status {rc0}, output {out0!r} {err0!r}")
        check(rc1 == rc0, f"{name} under vxreplay: status {rc1}, plain {rc0}: {err1!r}")
        check(out1 == out0, f"{name} under vxreplay: output {out1!r}, plain {out0!r}")
    # The kernel's own status: a wrong result is the host's failure, and it passes through.
    rc, out, err = run([VX, "run", "--", prog("sgemm"), "-n", "30"])
    check(rc == 2 and "multiple of the tile size" in err, f"sgemm -n 30: status {rc}, {err!r}")


def check_session():
    # C variables in a host session, as the same kernel run directly has them (issue 32): scale's
    # arguments at the stop (pipeline's launch 2 scales by 3; i is the focus thread's index).
    rc, out, err = run([VX, "run", "--no-db", "--break", "scale", "--batch", "-ex", "continue", "-ex", "info args",
                        "-ex", "p threadIdx.x + blockIdx.x * blockDim.x", "-ex", "p k * 2", "--", prog("pipeline")])
    m = re.search(r"^i = (\d+)$", out, re.M)
    g = re.search(r"^threadIdx\.x \+ blockIdx\.x \* blockDim\.x = (\d+)$", out, re.M)
    check("\nk = 3\n" in out and m is not None and g is not None and m.group(1) == g.group(1) and "k * 2 = 6" in out,
          f"host session: C variables of the kernel: {out!r} {err!r}")
    with tempfile.TemporaryDirectory() as tmp:
        rc, out, err = run([VX, "run", "--db", tmp, "--break", "scale", "--batch", "-ex", "continue", "-ex",
                            "print/x $a1", "-ex", "x/4xw $a0", "-ex", "info launches", "-ex", "info l", "-ex",
                            "delete", "-ex", "continue", "--", prog("pipeline")])
        check(rc == 0, f"pipeline session: status {rc}: {err!r}")
        check(re.search(r"Breakpoint 1, scale \(pipeline\.c:\d+\), launch 2 \(pipeline\)", out) is not None,
              f"the stop is in launch 2 and names it: {out!r}")
        # x/4xw of x after the fill launch: 0.0, 1.0, 2.0, 3.0.
        check("0x00000000\t0x3f800000\t0x40000000\t0x40400000" in out, f"x shows the fill launch's floats: {out!r}")
        check(re.search(r"\$a1 = 0x[0-9a-f]+", out) is not None, f"print/x: {out!r}")
        check(re.search(r"\* 2\s+pipeline\s+0x", out) is not None and re.search(r"\n  1\s+pipeline", out) is not None,
              f"info launches lists launches 1 and 2, 2 current: {out!r}")
        check("lane 0  active" in out, f"info l is still info lanes: {out!r}")
        check(out.count("PASSED") == 1 and "launch 3 (add) done" in out, f"the host finishes: {out!r}")
        # Time travel across the host's launches: back from launch 2 into launch 1, then forward to the end.
        rc, out, err = run([VX, "run", "--db", tmp, "--break", "scale", "--batch", "-ex", "continue", "-ex",
                            "break fill", "-ex", "reverse-continue", "-ex", "delete", "-ex", "continue", "--",
                            prog("pipeline")])
        check(rc == 0 and re.search(r"Breakpoint 2, fill \(pipeline\.c:\d+\), launch 1 \(pipeline\)", out) is not None
              and "PASSED" in out, f"reverse-continue into launch 1: {rc} {out!r} {err!r}")
        # The README's command: sgemm -n 64 stopped at the store of C, then to PASSED.
        line = line_of(os.path.join(SRC, "examples", "host", "kernels", "sgemm.c"), "C[row * N + col] = acc;")
        rc, out, err = run([VX, "run", "--db", tmp, "--break", f"sgemm.c:{line}", "--batch", "-ex", "continue",
                            "-ex", "print blockIdx", "-ex", "delete", "-ex", "continue", "--", prog("sgemm"), "-n",
                            "64"])
        check(rc == 0 and f"Breakpoint 1, sgemm (sgemm.c:{line}), launch 1 (sgemm)" in out and "PASSED" in out,
              f"sgemm session: status {rc}: {out!r} {err!r}")
        # A device that runs more instructions per launch than the watchdog: a stop, and the host's
        # vx_ready_wait fails; the host's own status is the session's.
        rc, out, err = run([VX, "run", "--no-db", "--watchdog", "1000", "--batch", "-ex", "continue", "--",
                            prog("sgemm"), "-n", "64"])
        check("Watchdog" in out and "vx_ready_wait" in err and rc == 1,
              f"watchdog under a host: status {rc}: {out!r} {err!r}")


def check_images():
    """Per-image symbols: a program that uploads two kernel images at the same addresses, one after
    the other. Each launch is read with its own image's symbols; a breakpoint on a function only
    the second image has is pending until it is uploaded; one set in the first image does not stop
    in the second at the same address; reverse moves cross back into the first image."""
    line = line_of(os.path.join(SRC, "examples", "host", "kernels", "vecadd.c"), "VX_IF(i < p->n)")
    with tempfile.TemporaryDirectory() as tmp:
        rc, out, err = run([VX, "run", "--db", tmp, "--break", f"vecadd.c:{line}", "--break", "scale if i == 5",
                            "--batch", "-ex", "info breakpoints", "-ex", "continue", "-ex", "p p->n", "-ex", "delete 1",
                            "-ex", "continue", "-ex", "info args", "-ex", "bt", "-ex", "info launches", "-ex",
                            f"break vecadd.c:{line}", "-ex", "reverse-continue", "-ex", "p p->n", "-ex", "delete",
                            "-ex", "continue", "--", prog("twokernels")])
        check(rc == 0 and "twokernels: PASSED" in out, f"twokernels session: status {rc}: {out!r} {err!r}")
        check(re.search(r"2\s+breakpoint\s+y\s+<PENDING>\s+scale", out) is not None,
              f"a location only a later image has is pending: {out!r}")
        check(re.search(rf"Breakpoint 1, vecadd \(vecadd\.c:{line}\), launch 1 \(vecadd\)", out) is not None
              and "p->n = 64" in out, f"launch 1 reads the first image: {out!r}")
        # Breakpoint 1's address holds other code in launch 2: it does not stop there.
        stops = re.findall(r"^Breakpoints? [\d, ]+, (\w+) .*launch (\d) \((\w+)\)", out, re.M)
        check(stops[:3] == [("vecadd", "1", "vecadd"), ("scale", "2", "pipeline"), ("vecadd", "1", "vecadd")],
              f"stops: {stops}: {out!r}")
        check("\ni = 5\n" in out and "k = 3" in out and re.search(r"#1 .* in pipeline \(", out) is not None,
              f"launch 2 reads the second image (args, frames): {out!r}")
        check(re.search(r"\n  1\s+vecadd\s+0x", out) is not None and re.search(r"\* 2\s+pipeline\s+0x", out) is not None,
              f"info launches names each launch's kernel from its image: {out!r}")
        check(out.count("p->n = 64") == 2, f"reverse-continue back into launch 1 reads the first image: {out!r}")
        # The recording replayed: each launch with its own image's symbols, as in the session.
        rec = [os.path.join(tmp, d) for d in os.listdir(tmp)][0]
        rc, out, err = run([VX, "replay", rec, "--batch", "-ex", "delete", "-ex", "break scale if i == 6", "-ex",
                            "continue", "-ex", "bt", "-ex", "p k", "-ex", "info launches", "-ex",
                            f"break vecadd.c:{line}", "-ex", "reverse-continue", "-ex", "p p->n"])
        check(rc == 0 and re.search(r"Breakpoint 1, scale \(pipeline\.c:\d+\), launch 2 \(pipeline\)", out) is not None
              and "k = 3" in out and re.search(r"#1 .* in pipeline \(", out) is not None
              and re.search(r"\n  1\s+vecadd\s+0x", out) is not None and "p->n = 64" in out,
              f"the replay reads each launch with its own image: {rc} {out!r} {err!r}")


def check_channel():
    """A program that breaks the channel's protocol never makes either side wait forever: vxreplay
    answers with the error and closes the channel, the program's own status passes through, and
    the recording directory stays readable (issue 33)."""
    abuse = os.path.join(BUILD, "tests", "host_abuse")
    for mode, says in (("oversize", "a message of 4294967295 bytes is larger than the channel's limit"),
                       ("garbage", "a message of 1145324612 bytes is larger than the channel's limit"),
                       ("partial", "stopped sending in the middle of a message"),
                       ("before-hello", "before the handshake (vx_dev_open must come first)")):
        with tempfile.TemporaryDirectory() as tmp:
            t = time.monotonic()
            try:
                rc, out, err = run([VX, "run", "--db", tmp, "--", abuse, mode], timeout=20)
            except subprocess.TimeoutExpired:
                check(False, f"channel {mode}: vxreplay or the program waited forever")
                continue
            took = time.monotonic() - t
            check(took < 5, f"channel {mode}: took {took:.1f} s")
            check(rc == 3, f"channel {mode}: the program's own status passes through: {rc} {err!r}")
            check(f"{mode}: reply status -1: vxreplay closed the channel" in out and says in out,
                  f"channel {mode}: the program's call got the error: {out!r}")
            check("the host channel broke: " in err and says in err, f"channel {mode}: vxreplay says why: {err!r}")
            rc, out, err = run([VX, "ls", tmp])
            check(rc == 0, f"channel {mode}: the recording directory stays readable: {rc} {out!r} {err!r}")
    # The shared rings (docs/host.md, "The channel"). The region is sealed at its size: shrinking it
    # under vxreplay's map would make its next access a SIGBUS.
    rc, out, err = run([VX, "run", "--", abuse, "shrink-rings"], timeout=20)
    check(rc == 4 and "shrink-rings: Operation not permitted" in out, f"shrink-rings: {rc} {out!r} {err!r}")
    # A counter moved past the ring is refused as a broken stream.
    rc, out, err = run([VX, "run", "--", abuse, "ring-counter"], timeout=20)
    check(rc == 3 and "the peer's write counter of the shared ring is 1099511627776" in err,
          f"ring-counter: {rc} {out!r} {err!r}")
    # A second process of the same command says hello through the rings the first one moved the
    # channel onto (it used to be read as wake-ups: both sides waited forever).
    bench = os.path.join(BUILD, "tests", "host_bench")
    kernel = os.path.join(HOST_DIR, "vecadd_kernel.elf")
    try:
        rc, out, err = run([VX, "run", "--", "sh", "-c", f"{bench} calls 100 {kernel} && {bench} calls 100 {kernel}"],
                           timeout=20)
        check(rc == 0 and out.count("per call") == 2, f"two processes on one channel: {rc} {out!r} {err!r}")
    except subprocess.TimeoutExpired:
        check(False, "two processes on one channel: waited forever")


def check_vortex2():
    """Upstream's asynchronous API (vortex2.h): a program with a queue, two kernels of one module and
    events runs alone and under vxreplay with the same output; a breakpoint in the second enqueued
    launch prints C variables, reverse-continue goes into the first; the recording replays with the
    program and its kernel file deleted; misuse gets upstream's error codes (issue 34)."""
    queues = prog("queues")
    rc0, out0, err0 = run([queues])
    rc1, out1, err1 = run([VX, "run", "--", queues])
    check(rc0 == 0 and "queues: PASSED" in out0, f"queues plain: {rc0} {out0!r} {err0!r}")
    check(rc1 == 0 and out1 == out0, f"queues under vxreplay: {rc1} {out1!r} {err1!r}")
    src = os.path.join(SRC, "examples", "host", "kernels", "axpy2.c")
    acc, sc = line_of(src, "float sum = z[i] + y[i];"), line_of(src, "float v = p->a * x[i];")
    with tempfile.TemporaryDirectory() as tmp:
        # The program and its kernel in a directory of their own, deleted before the replay.
        own = os.path.join(tmp, "own")
        os.mkdir(own)
        shutil.copy(queues, own)
        shutil.copy(os.path.join(HOST_DIR, "axpy2_kernel.elf"), own)
        prog_copy, kernel_copy = os.path.join(own, "queues"), os.path.join(own, "axpy2_kernel.elf")
        db = os.path.join(tmp, "db")
        rc, out, err = run([VX, "run", "--db", db, "--break", f"axpy2.c:{acc} if i == 5", "--batch", "-ex", "continue",
                            "-ex", "print i", "-ex", "print y[i]", "-ex", "info launches", "-ex",
                            f"break axpy2.c:{sc} if i == 7", "-ex", "reverse-continue", "-ex", "print i", "-ex",
                            "print p->a", "-ex", "delete", "-ex", "continue", "--", prog_copy, "-k", kernel_copy])
        check(rc == 0 and "queues: PASSED" in out, f"vortex2 session: {rc} {out!r} {err!r}")
        check(re.search(rf"Breakpoint 1, accumulate \(axpy2\.c:{acc}\), launch 2 \(accumulate\)", out) is not None
              and "\ni = 5\n" in out and "y[i] = 15" in out, f"vortex2: the second launch's stop and its values: {out!r}")
        check(re.search(r"\n  1\s+scale\s", out) is not None and re.search(r"\* 2\s+accumulate\s", out) is not None,
              f"vortex2: info launches names both kernels: {out!r}")
        check(re.search(rf"Breakpoint 2, scale \(axpy2\.c:{sc}\), launch 1 \(scale\)", out) is not None
              and "\ni = 7\n" in out and "p->a = 3" in out, f"vortex2: reverse-continue into the first launch: {out!r}")
        shutil.rmtree(own)
        rec = [os.path.join(db, d) for d in os.listdir(db)][0]
        # It opens at its first stop (the second launch's breakpoint), then goes back into the first.
        rc, out, err = run([VX, "replay", rec, "--batch", "-ex", "print y[i]", "-ex", f"break axpy2.c:{sc} if i == 7",
                            "-ex", "reverse-continue", "-ex", "print i"])
        check(rc == 0 and "launch 2 (accumulate)" in out and "y[i] = 15" in out and "launch 1 (scale)" in out
              and "\ni = 7\n" in out,
              f"vortex2: the recording replays without the program or the kernel file: {rc} {out!r} {err!r}")
    # The module as upstream ships kernels, a .vxbin with both kernels in its VXSYMTAB footer: it runs,
    # and a session finds its symbols in the ELF beside it, or in --symbols FILE when there is none.
    from e2e_host_kernels import elf_segments_and_symbols, make_vxbin
    elf = os.path.join(HOST_DIR, "axpy2_kernel.elf")
    _, syms = elf_segments_and_symbols(elf)
    with tempfile.TemporaryDirectory() as tmp:
        vxbin = os.path.join(tmp, "axpy2.vxbin")
        with open(vxbin, "wb") as f:
            f.write(make_vxbin(elf, [("scale", syms["scale"]), ("accumulate", syms["accumulate"])]))
        rc, out, err = run([queues, "-k", vxbin])
        check(rc == 0 and "queues: PASSED" in out, f"vortex2 .vxbin module: {rc} {out!r} {err!r}")
        rc, out, err = run([VX, "run", "--no-db", "--break", f"axpy2.c:{acc} if i == 5", "--batch", "-ex", "continue",
                            "-ex", "print y[i]", "-ex", "delete", "-ex", "continue", "--", queues, "-k", vxbin])
        check(rc == 0 and "no symbols for axpy2.vxbin" in err and rc == 0,
              f"vortex2 .vxbin without its ELF: said, by address: {rc} {out!r} {err!r}")
        rc, out, err = run([VX, "run", "--no-db", "--symbols", elf, "--break", f"axpy2.c:{acc} if i == 5", "--batch",
                            "-ex", "continue", "-ex", "print y[i]", "-ex", "delete", "-ex", "continue", "--", queues,
                            "-k", vxbin])
        check(rc == 0 and "y[i] = 15" in out and "(--symbols)" in err and "queues: PASSED" in out,
              f"vortex2 .vxbin with --symbols: {rc} {out!r} {err!r}")
        shutil.copy(elf, os.path.join(tmp, "axpy2.elf"))
        db = os.path.join(tmp, "db")
        rc, out, err = run([VX, "run", "--db", db, "--break", "accumulate", "--batch", "-ex", "continue", "-ex",
                            "delete", "-ex", "continue", "--", queues, "-k", vxbin])
        check(rc == 0 and "Breakpoint 1, accumulate" in out and "beside it" in err,
              f"vortex2 .vxbin with its ELF beside it: {rc} {out!r} {err!r}")
        # The recording keeps that ELF for the .vxbin's symbols: the replay needs neither file.
        os.remove(vxbin)
        os.remove(os.path.join(tmp, "axpy2.elf"))
        rec = [os.path.join(db, d) for d in os.listdir(db)][0]
        rc, out, err = run([VX, "replay", rec, "--batch", "-ex", f"break axpy2.c:{acc} if i == 5", "-ex", "continue",
                            "-ex", "print y[i]"])
        check(rc == 0 and re.search(rf"accumulate \(axpy2\.c:{acc}\), launch 2", out) is not None and "y[i] = 15" in out,
              f"vortex2 .vxbin recording replayed with the symbols of its ELF: {rc} {out!r} {err!r}")
    # Upstream's kernel files are .vxbin: one with thread-local storage on 1x2x8x8 (hart 121 on lies
    # past the image) runs when its ELF is beside it, alone and under vxreplay, and says so.
    run_kernel = os.path.join(BUILD, "tests", "host_run_kernel")
    tls_elf = os.path.join(BUILD, "examples", "legacy_tls.elf")
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(tls_elf, os.path.join(tmp, "legacy_tls.elf"))
        vxbin = os.path.join(tmp, "legacy_tls.vxbin")
        with open(vxbin, "wb") as f:
            f.write(make_vxbin(tls_elf))
        env = dict(os.environ, VX_CONFIG="1x2x8x8")
        rc0, out0, err0 = run([run_kernel, vxbin], env=env)
        rc1, out1, err1 = run([VX, "run", "--config", "1x2x8x8", "--", run_kernel, vxbin])
        for what, rc, out, err in (("alone", rc0, out0, err0), ("under vxreplay", rc1, out1, err1)):
            check(rc == 0 and "completed" in out and "legacy_tls.elf beside it" in err,
                  f"tls .vxbin {what}: {rc} {out!r} {err!r}")
        os.remove(os.path.join(tmp, "legacy_tls.elf"))
        rc, out, err = run([run_kernel, vxbin], env=env)
        check(rc == 1 and "store to unmapped memory" in err, f"tls .vxbin without its ELF: {rc} {out!r} {err!r}")
    misuse = os.path.join(BUILD, "tests", "host_misuse2")
    kernel = os.path.join(HOST_DIR, "axpy2_kernel.elf")
    rc0, out0, err0 = run([misuse, kernel])
    rc1, out1, err1 = run([VX, "run", "--", misuse, kernel])
    check(rc0 == 0 and "14 of 14 misuses refused" in out0, f"vortex2 misuse plain: {rc0} {out0!r} {err0!r}")
    check(rc1 == 0 and out1 == out0, f"vortex2 misuse under vxreplay: {rc1} {out1!r} {err1!r}")
    for line in err0.splitlines():
        check(line.startswith("vortex: vx_"), f"vortex2 misuse: a stderr line that does not name the call: {line!r}")
    # A command's error names the command the program called, then the call it was made of.
    check("vortex: vx_enqueue_read: vx_copy_from_dev: a copy of 64 bytes at offset 32" in err0,
          f"vortex2 misuse: the enqueued read's error names vx_enqueue_read: {err0!r}")


def check_live():
    """A host program debugged live (--mode live, docs/live.md): warps halted in place through the
    Debug Module in each launch the program enqueues; a breakpoint in the second launch prints C
    variables; one set while stopped and a reverse-continue into the first launch (the session goes
    on by re-launch); a batch of commands (vx_enqueue_commands) runs its launch live too. Without a
    Debug Module, status 69 before the program starts (issue 34)."""
    queues = prog("queues")
    src = os.path.join(SRC, "examples", "host", "kernels", "axpy2.c")
    acc, sc = line_of(src, "float sum = z[i] + y[i];"), line_of(src, "float v = p->a * x[i];")
    with tempfile.TemporaryDirectory() as tmp:
        marker = os.path.join(tmp, "ran")
        rc, out, err = run([VX, "run", "--mode", "live", "--no-debug-module", "--batch", "--no-db", "--", "sh", "-c",
                            f"touch {marker}; exec {queues}"])
        check(rc == 69 and "no Debug Module" in err and not os.path.exists(marker),
              f"live without a Debug Module: status {rc}, program ran: {os.path.exists(marker)}: {err!r}")
        db = os.path.join(tmp, "db")
        rc, out, err = run([VX, "run", "--mode", "live", "--db", db, "--break", f"axpy2.c:{acc} if i == 5", "--batch",
                            "-ex", "continue", "-ex", "print i", "-ex", "print y[i]", "-ex", "info session", "-ex",
                            f"break axpy2.c:{sc} if i == 7", "-ex", "reverse-continue", "-ex", "print i", "-ex",
                            "print p->a", "-ex", "info session", "-ex", "delete", "-ex", "continue", "--", queues])
        check(rc == 0 and "queues: PASSED" in out, f"live host session: {rc} {out!r} {err!r}")
        check("Mode: live (--mode live" in out and re.search(
            rf"Breakpoint 1, accumulate \(axpy2\.c:{acc}\), launch 2 \(accumulate\)", out) is not None
              and "\ni = 5\n" in out and "y[i] = 15" in out, f"live: the second launch's stop and its values: {out!r}")
        check(re.search(rf"Breakpoint 2, scale \(axpy2\.c:{sc}\), launch 1 \(scale\)", out) is not None
              and "\ni = 7\n" in out and "p->a = 3" in out and "went on in re-launch mode" in out,
              f"live: a breakpoint set while stopped, reverse-continue into the first launch: {out!r}")
        # Live to the end, through the batch's launch (launch 3): its breakpoint stops there too.
        rc, out, err = run([VX, "run", "--live", "--no-db", "--break", f"axpy2.c:{acc} if i == 5", "--batch", "-ex",
                            "continue", "-ex", "continue", "-ex", "print z[i]", "-ex", "delete", "-ex", "continue",
                            "--", queues])
        check(rc == 0 and "queues: PASSED" in out and re.search(
            rf"Breakpoint 1, accumulate \(axpy2\.c:{acc}\), launch 3 \(accumulate\)", out) is not None
              and "z[i] = 16" in out, f"live: the batch's launch: {rc} {out!r} {err!r}")


def check_timeout():
    """vx_ready_wait's timeout under vxreplay counts device time: a kernel that never ends fails the
    wait after it, as alone, and the session says so; time stopped at the prompt does not count, so
    a short kernel held at a breakpoint longer than the timeout still completes (issue 34)."""
    run_kernel = os.path.join(BUILD, "tests", "host_run_kernel")
    hang = os.path.join(BUILD, "examples", "hang.elf")
    hello = os.path.join(BUILD, "examples", "hello.elf")
    rc0, out0, err0 = run([run_kernel, hang, "300"])
    check(rc0 == 1 and "run_kernel: failed" in out0 and "timed out after 300 ms" in err0,
          f"timeout alone: {rc0} {out0!r} {err0!r}")
    rc1, out1, err1 = run([VX, "run", "--watchdog", "100000000", "--", run_kernel, hang, "300"])
    check(rc1 == 1 and "run_kernel: failed" in out1 and "timed out after 300 ms of device time" in err1,
          f"timeout under vxreplay: {rc1} {out1!r} {err1!r}")
    rc, out, err = run([VX, "run", "--no-db", "--watchdog", "100000000", "--batch", "-ex", "continue", "--", run_kernel,
                        hang, "300"])
    check("the host program's vx_ready_wait timed out after 300 ms of device time" in err
          and "Watchdog: the launch exceeded" in out and "run_kernel: failed" in out,
          f"timeout in a session: said, and the launch goes on to its watchdog: {rc} {out!r} {err!r}")
    # Held at a breakpoint for 1.5 s at the prompt (commands on stdin), with a 400 ms timeout.
    p = subprocess.Popen([VX, "run", "--no-db", "--", run_kernel, hello, "400"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.stdin.write("break hello\ncontinue\n")
    p.stdin.flush()
    time.sleep(1.5)
    out, err = p.communicate("delete\ncontinue\n", timeout=120)
    check(p.returncode == 0 and "Breakpoint 1, hello" in out and "run_kernel: completed" in out
          and "timed out" not in err, f"time at the prompt is not device time: {p.returncode} {out[-400:]!r} {err!r}")


def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def check_kill():
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.Popen([VX, "run", "--db", tmp, "--break", "scale", "-ex", "continue", "--", prog("pipeline")],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen = ""
        deadline = time.time() + 60
        while "Breakpoint 1, scale" not in seen and time.time() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            seen += line
        check("Breakpoint 1, scale" in seen, f"the session stops in launch 2: {seen!r}")
        kids = children_of(p.pid)
        check(len(kids) == 1, f"vxreplay has the host as its one child: {kids}")
        for k in kids:
            os.kill(k, signal.SIGKILL)
        out, err = p.communicate("delete\ncontinue\nquit\n", timeout=60)
        check(p.returncode == 128 + 9, f"a host killed by SIGKILL: status {p.returncode}: {err!r}")
        check("the host program was killed by signal 9" in err, f"the session says so: {err!r}")
        dirs = glob.glob(os.path.join(tmp, "pipeline-*"))
        check(len(dirs) == 1, f"one recording: {dirs}")
        if dirs:
            rc, out, err = run([VX, "replay", dirs[0], "--break", "scale", "--batch", "-ex", "continue"])
            check(rc == 0 and "launch 2 (pipeline)" in out, f"the recording replays to launch 2: {rc} {out!r} {err!r}")


def serve_states(rec, paths):
    # `vxreplay view REC --serve 0`: each path's status and JSON body.
    server = subprocess.Popen([VX, "view", rec, "--serve", "0"], stderr=subprocess.PIPE, text=True)
    got = []
    try:
        line = server.stderr.readline()
        if not check("http://127.0.0.1:" in line, f"serve: the server says where it listens: {line!r}"):
            return got
        base = "http://" + line.split("http://")[1].split("/")[0] + "/"
        for path in paths:
            try:
                with urllib.request.urlopen(base + path, timeout=120) as r:
                    body = json.loads(r.read().decode())
                # What differs between two recordings of one run: where they are, how long it took.
                body.pop("command", None)
                body.get("header", {}).pop("elapsed_ms", None)
                got.append((r.status, body))
            except urllib.error.HTTPError as e:
                got.append((e.code, e.read().decode()))
    finally:
        stop_server(server, "serve")
    return got


def check_killmany():
    # A recording lives in LMDB commits that a killed process cannot take back (docs/store.md,
    # "Durability"): a kill at any point keeps every launch the host saw complete. Fixed seed.
    rng = random.Random(3701)
    bench = os.path.join(BUILD, "tests", "host_bench")
    kernel = os.path.join(HOST_DIR, "vecadd_kernel.elf")
    most = 0
    for trial in range(5):
        delay = rng.uniform(0.0, 1.0)
        with tempfile.TemporaryDirectory() as tmp:
            p = subprocess.Popen([VX, "run", "--db", tmp, "--batch", "-ex", "continue", "--", bench, "launches-log",
                                  "1000000", kernel], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            # From the first launch the program saw complete (a loaded machine may take long to get there).
            first = p.stdout.readline()
            time.sleep(delay)
            p.kill()
            # The host sees the channel close and ends; its output pipe is the session's.
            out, err = p.communicate(timeout=60)
            out = first + out
            done = [int(m) for m in re.findall(r"^launch (\d+) done$", out, re.M)]
            seen = max(done, default=0)
            most = max(most, seen)
            what = f"kill {trial} after {delay:.2f} s ({seen} launches seen)"
            check(p.returncode == -signal.SIGKILL, f"{what}: vxreplay killed: {p.returncode} {err[-300:]!r}")
            dirs = glob.glob(os.path.join(tmp, "host_bench-*"))
            check(len(dirs) == 1, f"{what}: one recording: {dirs}")
            if len(dirs) != 1:
                continue
            # As the kill left it: a replay writes the launch starts it derives into the recording.
            untouched = os.path.join(tmp, "untouched")
            shutil.copytree(dirs[0], untouched)
            rc, listing, lerr = run([VX, "replay", dirs[0], "--batch", "-ex", "info launches"])
            rows = [int(m) for m in re.findall(r"^[* ] (\d+) +vecadd ", listing, re.M)]
            check(rc == 0 and rows == list(range(1, len(rows) + 1)) and len(rows) >= seen,
                  f"{what}: the recording lists launches 1..{len(rows)}: {rc} {lerr[-300:]!r}")
            rc, ran, rerr = run([VX, "replay", dirs[0], "--batch", "-ex", "continue"])
            passes = re.search(r"over (\d+) passes", rerr + ran)
            check(rc == 0 and "end of recording" in ran + rerr and passes and int(passes.group(1)) >= seen,
                  f"{what}: the recording replays to its end: {rc} {ran[-300:]!r} {rerr[-300:]!r}")
            if seen >= 2:
                # The last launch seen: its start checkpoint was still staged at the kill, so goto derives it
                # from the recorded host operations (engine/session_time.cpp, seek). The state there is the
                # one a whole recording of as many launches has (each launch's schedule is its own).
                at = f"goto {seen}:20"
                rc, out, err = run([VX, "replay", untouched, "--batch", "-ex", at, "-ex", "info registers"])
                got = out[out.find(f"Launch {seen}, instruction 20,"):].split("\nsession: ")[0]
                with tempfile.TemporaryDirectory() as whole:
                    run([VX, "run", "--db", whole, "--batch", "-ex", "continue", "--", bench, "launches", str(seen),
                         kernel])
                    ref = glob.glob(os.path.join(whole, "host_bench-*"))
                    rrc, rout, rerr = run([VX, "replay", ref[0] if ref else whole, "--batch", "-ex", at, "-ex",
                                           "info registers"])
                want = rout[rout.find(f"Launch {seen}, instruction 20,"):].split("\nsession: ")[0]
                check(rc == 0 and rrc == 0 and "zero " in got and got == want,
                      f"{what}: {at} reaches the state a whole recording has: {rc} {got[-400:]!r} {err!r}; "
                      f"whole: {rrc} {want[-400:]!r} {rerr[-300:]!r}")
                rc, out, err = run([VX, "replay", dirs[0], "--batch", "-ex", f"goto {len(rows) + 1}:0"])
                check(f"launch {len(rows) + 1} is not in this session's history (launches 1 to {len(rows)})" in out + err,
                      f"{what}: a launch past the recording: {rc} {out[-300:]!r} {err[-300:]!r}")
    check(most > 0, "some kill came after the program saw a launch complete")
    # A recording without automatic checkpoints has none at all: goto runs from the beginning.
    states = []
    for extra in ([], ["--checkpoint-interval", "0"]):
        with tempfile.TemporaryDirectory() as tmp:
            run([VX, "run", "--db", tmp] + extra + ["--batch", "-ex", "continue", "--", bench, "launches", "3", kernel])
            rec = glob.glob(os.path.join(tmp, "host_bench-*"))
            rc, out, err = run([VX, "replay", rec[0] if rec else tmp, "--batch", "-ex", "goto 2:20", "-ex", "info registers"])
            states.append((rc, out[out.find("Launch 2, instruction 20,"):].split("\nsession: ")[0], err))
    check(states[0][0] == 0 and states[1][0] == 0 and "zero " in states[0][1] and states[0][1] == states[1][1],
          f"goto 2:20 without automatic checkpoints: {states}")
    # The run to a launch's start replays the host's copy of another kernel image over a planted
    # breakpoint's address: the breakpoint then covers the new kernel's word, which a step past it runs.
    script = ["goto 1:0", "break *0x80000050", "goto 2:40", "x/1wx 0x80000050", "continue", "stepi",
              "info registers sp a3"]
    outs = []
    for extra in ([], ["--checkpoint-interval", "0"]):
        with tempfile.TemporaryDirectory() as tmp:
            run([VX, "run", "--db", tmp] + extra + ["--batch", "-ex", "continue", "--", prog("twokernels")])
            rec = glob.glob(os.path.join(tmp, "twokernels-*"))
            args = [VX, "replay", rec[0] if rec else tmp, "--batch"]
            for c in script:
                args += ["-ex", c]
            rc, out, err = run(args)
            # The passes differ (a run from the beginning is one more): everything else is the same.
            outs.append((rc, re.sub(r"pass \d+", "pass N", out[out.find("Launch 2, instruction 40,"):].split("\nsession: ")[0]),
                         err))
    check(outs[0][0] == 0 and "sp " in outs[0][1] and outs[0][1] == outs[1][1],
          f"a breakpoint across kernels, with and without automatic checkpoints: {outs}")
    # Launch starts are written only every checkpoint interval of work (docs/store.md, "Launch
    # starts"): 50 launches of 232 instructions take one. Reverse moves across and inside launches
    # whose starts were not written derive them, and answer as a recording with every start does.
    script = ["goto 40:30", "break vecadd", "reverse-continue", "reverse-continue", "reverse-continue",
              "reverse-stepi", "reverse-stepi", "info registers pc a0 a1", "goto 30:150", "reverse-step",
              "reverse-next", "bt", "goto 45:200", "reverse-finish", "delete", "goto 45:100", "reverse-continue"]
    outs, served, ends = [], [], []
    for extra in ([], ["--checkpoint-interval", "100"]):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, err = run([VX, "run", "--db", tmp] + extra + ["--batch", "-ex", "continue", "--", bench,
                                                                   "launches", "50", kernel])
            stored = re.search(r"(\d+) checkpoints", err + out)
            rec = glob.glob(os.path.join(tmp, "host_bench-*"))
            # First read-only (`view --serve` writes nothing into the recording): the starts it
            # derives stay in its memory.
            data = os.path.join(rec[0] if rec else tmp, "data.mdb")
            before = open(data, "rb").read() if os.path.exists(data) else b""
            served.append(serve_states(rec[0] if rec else tmp, ["state?launch=40&instret=30", "state?launch=12&instret=5",
                                                                "state?launch=40&instret=31"]))
            check(before and open(data, "rb").read() == before, f"view --serve left {data} byte for byte as it was")
            args = [VX, "replay", rec[0] if rec else tmp, "--batch"]
            for c in script:
                args += ["-ex", c]
            rrc, rout, rerr = run(args)
            outs.append((rc, int(stored.group(1)) if stored else None, rrc,
                         rout[rout.find("Launch 40, instruction 30,"):].split("\nsession: ")[0], rerr))
            # From the workload's end (no stop to come back to), back over launches without starts:
            # four warps hit in launch 50, the fifth reverse-continue goes into launch 49.
            erc, eout, eerr = run([VX, "replay", rec[0] if rec else tmp, "--batch", "-ex", "continue", "-ex",
                                   "break vecadd"] + ["-ex", "reverse-continue"] * 5)
            ends.append((erc, eout[eout.find("Breakpoint 1 at"):].split("\nsession: ")[0], eerr[-300:]))
    check(all(status == 200 for status, _ in served[0]) and served[0] == served[1],
          f"view --serve (read-only) of launches without their starts answers as with every start: {served}")
    (rc0, n0, rrc0, got, err0), (rc1, n1, rrc1, want, err1) = outs
    check(rc0 == 0 and rc1 == 0 and n0 == 1 and n1 is not None and n1 >= 100,
          f"50 short launches: one checkpoint (the first start), and every start with a short interval: {outs}")
    for moved in ("Breakpoint 1, vecadd (vecadd.c:13), launch 39 (vecadd), 148 instructions", "#1  0x80000048 in _start",
                  "No more reverse-execution history, launch 1 (vecadd), 0 instructions"):
        check(moved in got, f"reverse moves across launches without their starts: {moved!r} in {got[-1500:]!r}")
    check(ends[0][0] == 0 and "launch 50 (vecadd)" in ends[0][1] and "launch 49 (vecadd)" in ends[0][1]
          and ends[0] == ends[1], f"reverse-continue from the workload's end, as with every start: {ends}")
    check(rrc0 == 0 and rrc1 == 0 and got == want,
          f"reverse moves across launches without their starts answer as with every start: {rrc0} {got[-1500:]!r} "
          f"{err0[-300:]!r}; every start: {rrc1} {want[-1500:]!r} {err1[-300:]!r}")


def check_misuse():
    kernel = os.path.join(HOST_DIR, "vecadd_kernel.elf")
    misuse = os.path.join(BUILD, "tests", "host_misuse")
    rc0, out0, err0 = run([misuse, kernel])
    rc1, out1, err1 = run([VX, "run", "--", misuse, kernel])
    check(rc0 == 0 and "14 of 14 misuses refused" in out0, f"misuse plain: {rc0} {out0!r} {err0!r}")
    check(rc1 == rc0 and out1 == out0, f"misuse under vxreplay: {rc1} {out1!r}, plain {out0!r}")
    for err in (err0, err1):
        for want in ("vx_dev_caps: null device handle", "vx_copy_to_dev: null buffer handle",
                     "runs past the end of the 64-byte buffer", "holds no kernel", "overlaps buffer",
                     "is not page aligned", "DCR 0x7ff does not exist", "are not VX_MEM_* bits",
                     "/nonexistent/kernel.elf", "vx_copy_to_dev: not a live buffer handle",
                     "vx_dev_caps: not an open device handle"):
            check(want in err, f"misuse: stderr says {want!r}: {err!r}")
    # Every line on stderr names the library and the call.
    for line in err1.splitlines():
        check(line.startswith("vortex: vx_"), f"misuse: a stderr line that does not name the call: {line!r}")


def check_status():
    with tempfile.TemporaryDirectory() as tmp:
        rc, out, err = run([VX, "run", "--", os.path.join(tmp, "no-such-program")])
        check(rc == 127 and "not found" in err, f"missing program: {rc} {err!r}")
        text = os.path.join(tmp, "not-a-program")
        with open(text, "w") as f:
            f.write("hello\n")
        os.chmod(text, 0o644)
        rc, out, err = run([VX, "run", "--", text])
        check(rc == 126 and "cannot execute" in err, f"not executable: {rc} {err!r}")
        rc, out, err = run([VX, "run", "--config", "0x1", "--", prog("vecadd")])
        check(rc == 125 and "--config" in err, f"bad vxreplay flag with a host: {rc} {err!r}")
        rc, out, err = run([VX, "run", "--no-such-flag", "--", prog("vecadd")])
        check(rc == 125, f"unknown flag with a host: {rc} {err!r}")
        rc, out, err = run([VX, "run", "--grid", "4", "--", prog("vecadd")])
        check(rc == 125 and "sets its own launches" in err, f"--grid with a host: {rc} {err!r}")
        rc, out, err = run([VX, "run", "--"])
        check(rc == 125, f"nothing after --: {rc} {err!r}")
        for code in (0, 3, 65, 66):
            rc, out, err = run([VX, "run", "--", "sh", "-c", f"exit {code}"])
            check(rc == code, f"the host's own status {code}: {rc} {err!r}")
        rc, out, err = run([VX, "run", "--", "sh", "-c", "kill -TERM $$"])
        check(rc == 128 + 15 and "signal 15" in err, f"a host killed by SIGTERM: {rc} {err!r}")
        # Misuse of the channel itself: a program whose libvortex refuses a second device.
        rc, out, err = run([VX, "run", "--", prog("sgemm"), "-n", "64"], env=dict(os.environ, VX_CONFIG="1x1x4x4"))
        check(rc == 0, f"VX_CONFIG does not matter under vxreplay: {rc} {err!r}")


def check_replay():
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        shutil.copy(prog("pipeline"), work)
        shutil.copy(os.path.join(HOST_DIR, "pipeline_kernel.elf"), work)
        db = os.path.join(tmp, "db")
        rc0, out0, err0 = run([VX, "run", "--db", db, "--break", "scale", "--batch", "-ex", "continue", "-ex",
                               "delete", "-ex", "continue", "--", os.path.join(work, "pipeline"), "-k",
                               os.path.join(work, "pipeline_kernel.elf")])
        check(rc0 == 0 and "PASSED" in out0, f"recording: {rc0} {out0!r} {err0!r}")
        shutil.rmtree(work)  # no host, no kernel file
        dirs = glob.glob(os.path.join(db, "*"))
        check(len(dirs) == 1, f"one recording: {dirs}")
        rc, out, err = run([VX, "ls", db])
        check(rc == 0 and "host " in out and "pipeline" in out, f"ls names the host command: {out!r}")
        # The replay opens at the recorded stop and runs to the recorded end. Opening at a checkpoint is a
        # move in time, so its header has no pass (docs/cli.md); the rest is the recorded stop's.
        rc1, out1, err1 = run([VX, "replay", dirs[0], "--batch", "-ex", "info launches", "-ex", "continue"])
        check(rc1 == 0, f"replay: {rc1} {err1!r}")
        stop0 = re.search(r"Breakpoint 1, (scale .*instructions)", out0)
        stop1 = re.search(r"Checkpoint 1, (scale .*instructions)", out1)
        check(stop0 is not None and stop1 is not None and
              stop0.group(1).replace(", pass 1,", ",") == stop1.group(1),
              f"the replay opens at the recorded stop: {out0!r} / {out1!r}")
        check(re.search(r"\* 2\s+pipeline", out1) is not None, f"info launches in the replay: {out1!r}")
        check("[Kernel exited with code 0]" in out1, f"the replay runs to the recorded end: {out1!r}")
        # The recorded stop is its mark alone, a few thousand instructions after the recording's one
        # checkpoint (docs/store.md, "Stops"): the first replay derives it, and stores the checkpoints
        # it passes (launch 2's start, the stop) and launch 3's start.
        stored = re.search(r"; (\d+) checkpoints, \d+ bytes stored", out1)
        check(stored is not None and 1 <= int(stored.group(1)) <= 3, f"the first replay's checkpoints: {out1!r}")
        # Every checkpoint on the way is in the recording now: a second replay adds none, and the
        # instructions before the opening checkpoint are restored, not run: nothing runs twice.
        rc2, out2, err2 = run([VX, "replay", dirs[0], "--batch", "-ex", "continue"])
        check(rc2 == 0 and "[Kernel exited with code 0]" in out2, f"second replay: {rc2} {out2!r} {err2!r}")
        check(re.search(r"; 0 checkpoints, 0 bytes stored", out2) is not None, f"the replay stores nothing new: {out2!r}")
        check("re-execution ratio 1.000" in out2, f"the replay's re-execution ratio: {out2!r}")
        # Breakpoints given to the replay stop in the replayed launches as they did in the original.
        rc2, out2, err2 = run([VX, "replay", dirs[0], "--break", "scale", "--batch", "-ex", "continue"])
        hits = re.findall(r"Breakpoint 1, scale \(pipeline\.c:\d+\), launch 2 \(pipeline\), pass \d+, \d+ instructions", out2)
        check(rc2 == 0 and len(hits) == 1, f"a breakpoint in a replay: {rc2} {out2!r} {err2!r}")


def check_abi():
    with tempfile.TemporaryDirectory() as tmp:
        dest = os.path.join(tmp, "dest")
        rc, out, err = run(["meson", "install", "-C", BUILD, "--destdir", dest, "--no-rebuild", "--quiet"], timeout=300)
        check(rc == 0, f"meson install: {rc} {err!r}")
        pcs = glob.glob(os.path.join(dest, "**", "vortex.pc"), recursive=True)
        headers = glob.glob(os.path.join(dest, "**", "vortex.h"), recursive=True)
        check(len(glob.glob(os.path.join(dest, "**", "vortex2.h"), recursive=True)) == 1, "vortex2.h is installed")
        libs = glob.glob(os.path.join(dest, "**", "libvortex.so"), recursive=True)
        if not check(len(pcs) == 1 and len(headers) == 1 and len(libs) == 1, f"installed: {pcs} {headers} {libs}"):
            return
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pcs[0]), PKG_CONFIG_SYSROOT_DIR=dest)
        rc, flags, err = run(["pkg-config", "--cflags", "--libs", "vortex"], env=env)
        check(rc == 0 and "-lvortex" in flags, f"pkg-config vortex: {rc} {flags!r} {err!r}")
        exe = os.path.join(tmp, "abi")
        # No project include: only what pkg-config gives, and C, not C++.
        rc, out, err = run(["cc", "-std=c99", "-Wall", "-Werror", os.path.join(SRC, "tests", "host", "abi.c"),
                            *flags.split(), "-o", exe], env=env)
        if not check(rc == 0, f"compiling against the installed header and library: {err!r}"):
            return
        runenv = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(libs[0]))
        kernel = os.path.join(HOST_DIR, "vecadd_kernel.elf")
        rc0, out0, err0 = run([exe, kernel], env=runenv)
        check(rc0 == 0 and "ABI OK" in out0, f"abi plain: {rc0} {out0!r} {err0!r}")
        rc1, out1, err1 = run([VX, "run", "--", exe, kernel], env=runenv)
        check(rc1 == 0 and out1 == out0, f"abi under vxreplay: {rc1} {out1!r} {err1!r}")
        # vortex2.h through the installed package, and through the build tree's vortex-uninstalled.pc.
        uninstalled = dict(os.environ, PKG_CONFIG_PATH=os.path.join(BUILD, "meson-uninstalled"))
        rc, uflags, err = run(["pkg-config", "--cflags", "--libs", "vortex-uninstalled"], env=uninstalled)
        check(rc == 0 and "-lvortex" in uflags, f"pkg-config vortex-uninstalled: {rc} {uflags!r} {err!r}")
        for what, fl, e, libdir in (("installed", flags, env, os.path.dirname(libs[0])),
                                    ("uninstalled", uflags, uninstalled, os.path.join(BUILD, "host"))):
            exe2 = os.path.join(tmp, "misuse2-" + what)
            rc, out, err = run(["cc", "-std=c99", "-Wall", "-Werror", os.path.join(SRC, "tests", "host", "misuse2.c"),
                                *fl.split(), "-o", exe2], env=e)
            if check(rc == 0, f"vortex2.h against the {what} package: {err!r}"):
                rc, out, err = run([exe2, os.path.join(HOST_DIR, "axpy2_kernel.elf")],
                                   env=dict(os.environ, LD_LIBRARY_PATH=libdir))
                check(rc == 0 and "14 of 14" in out, f"vortex2 program built against the {what} package: {rc} {out!r}")
        rc, syms, err = run(["nm", "-D", "--defined-only", libs[0]])
        names = sorted(l.split()[-1] for l in syms.splitlines() if l.strip())
        # Exactly the functions the two headers declare (vortex.h's and vortex2.h's), nothing else.
        declared = set()
        for h in ("vortex.h", "vortex2.h"):
            text = open(os.path.join(SRC, "host", h)).read()
            declared |= set(re.findall(r"^(?:int|vx_result_t|const char\*)\s+(vx_\w+)\s*\(", text, re.M))
        check(sorted(names) == sorted(declared) and len(declared) > 70,
              f"exported symbols: extra {sorted(set(names) - declared)}, missing {sorted(declared - set(names))}")


{"plain": check_plain, "session": check_session, "kill": check_kill, "killmany": check_killmany, "misuse": check_misuse,
 "status": check_status, "replay": check_replay, "abi": check_abi, "images": check_images,
 "channel": check_channel, "vortex2": check_vortex2, "live": check_live,
 "timeout": check_timeout}[CHECK]()
sys.exit(1 if failures else 0)
