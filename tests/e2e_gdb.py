"""End-to-end tests of the GDB server (docs/gdb.md): the real gdb-multiarch in batch mode and through
its machine interface against the real vxreplay, over `--gdb -` and a loopback TCP port, and a raw
socket client for the interrupt byte and malformed packets. What gdb prints is checked against the
kernel's source and against the vxreplay prompt at the same stop.

usage: e2e_gdb.py VXREPLAY EXAMPLES_DIR SRC_DIR CHECK"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from e2e_common import EXIT_USAGE, check, failures
from e2e_debug import source_line

GDB = shutil.which("gdb-multiarch")


def gdb_batch(vx_cmd, elf, commands, timeout=60):
    """Runs gdb in batch mode on `target remote | VX_CMD` (a list: the vxreplay command line)."""
    args = [GDB, "-nx", "--batch", "-ex", "set pagination off", "-ex", "set confirm off",
            "-ex", "target remote | " + " ".join(vx_cmd)]
    for c in commands:
        args += ["-ex", c]
    if elf:
        args.append(elf)
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    return p.stdout + p.stderr


def prompt(vx, elf, commands):
    """The vxreplay prompt's JSON events for the same commands (no store)."""
    args = [vx, "run", elf, "--no-db", "--batch", "--json"]
    for c in commands:
        args += ["-ex", c]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    return [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]


def output_of(events, command):
    return next((e for e in events if e.get("event") == "output" and e.get("command") == command), {})


def values_after(text, marker):
    """The $N = VALUE lines gdb printed, in order."""
    return re.findall(r"^\$\d+ = (.*)$", text, re.M)


def thread_rows(text):
    """info threads: (gdb id, core, warp, lane, cta, thread) for each row."""
    rows = []
    for m in re.finditer(r"^\*?\s+(\d+)\s+Thread \d+ \(cta (\d+,\d+,\d+) thread (\d+,\d+,\d+) core (\d+) warp (\d+) "
                         r"lane (\d+) (active|inactive|at a barrier)\)", text, re.M):
        rows.append((int(m[1]), int(m[4]), int(m[5]), int(m[6]), m[2], m[3]))
    return rows


def served(vx, elf, *extra):
    """`vxreplay run ELF --gdb -`, without a store unless extra names one."""
    return [vx, "run", elf, *([] if "--db" in extra else ["--no-db"]), "--gdb", "-", *extra]


# --- checks --------------------------------------------------------------------------------------------

def check_breakpoints(vx, ex, src):
    """break on a function and on file:line; info threads; thread N + p $a0; a C local in several lanes."""
    elf = os.path.join(ex, "vecadd.elf")
    out = gdb_batch(served(vx, elf), elf, [
        "break vecadd.c:37", "continue", "p $pc", "info threads", "thread 6", "p $a0"])
    m = re.search(r"Breakpoint 1 at (0x[0-9a-f]+): file .*vecadd\.c, line 37\.", out)
    hit = re.search(r"Thread (\d+) hit Breakpoint 1, vecadd \(.*\) at .*vecadd\.c:37", out)
    if not check(m and hit, f"breakpoints: no stop at vecadd.c:37:\n{out}"):
        return
    vals = values_after(out, "")
    check(vals and m[1] in vals[0], f"breakpoints: $pc {vals[:1]} is not the breakpoint's {m[1]}")
    # The same stop at the prompt: which warps are resident, and lane registers.
    ev = prompt(vx, elf, ["break vecadd.c:37", "continue", "info warps", "core 0 warp 1 lane 1", "print $a0"])
    warps = output_of(ev, "info warps").get("warps", [])
    rows = thread_rows(out)
    want = sorted((w["core"], w["warp"], l) for w in warps for l in w["lanes"])
    check(sorted((r[1], r[2], r[3]) for r in rows) == want,
          f"breakpoints: info threads lists {[(r[1], r[2], r[3]) for r in rows]}, the prompt's resident lanes {want}")
    cta_of = {(w["core"], w["warp"]): ",".join(map(str, w["cta"])) for w in warps}
    check(all(cta_of.get((r[1], r[2])) == r[4] for r in rows), f"breakpoints: info threads' CTAs differ from the prompt's")
    # Thread 6 is core 0 warp 1 lane 1 (ids from hardware coordinates: 1 + (core*W + warp)*T + lane).
    six = [r for r in rows if r[0] == 6]
    check(six and six[0][1:4] == (0, 1, 1), f"breakpoints: thread 6 is {six}")
    a0 = output_of(ev, "print $a0").get("value")
    check(len(vals) > 1 and a0 is not None and int(vals[1]) & 0xffffffff == a0,
          f"breakpoints: gdb's $a0 in thread 6 {vals[1:2]}, the prompt's {a0}")
    # vecadd.c: i = vx_global_linear() = blockIdx.x * blockDim.x + threadIdx.x, in three lanes of the
    # warp that hit (the others may not have reached i yet), read in a second session at the same stop.
    coords = {r[0]: r for r in rows}
    at = coords.get(int(hit[1]))
    lanes = [r[0] for r in rows if at and (r[1], r[2]) == (at[1], at[2])][:3]
    if not check(len(lanes) == 3, f"breakpoints: the hit warp's lanes {lanes}:\n{out}"):
        return
    cmds = ["break vecadd.c:37", "continue"]
    for tid in lanes:
        cmds += [f"thread {tid}", "p i"]
    i_out = gdb_batch(served(vx, elf), elf, cmds + ["p $vx_thread_idx_x"])
    i_vals = values_after(i_out, "")
    for k, tid in enumerate(lanes):
        if len(i_vals) < 1 + k:
            check(False, f"breakpoints: no value of i in thread {tid}: {i_vals}\n{i_out}")
            continue
        cta = int(coords[tid][4].split(",")[0])
        tx = int(coords[tid][5].split(",")[0])
        check(i_vals[k] == str(cta * 16 + tx), f"breakpoints: p i in thread {tid} = {i_vals[k]}, the source says {cta * 16 + tx}")
    check(len(i_vals) > 3 and i_vals[3] == coords[lanes[-1]][5].split(",")[0],
          f"breakpoints: $vx_thread_idx_x in thread {lanes[-1]} = {i_vals[3:4]}")
    # break on a function: stops after its prologue, in a lane of a warp that reached it.
    elf = os.path.join(ex, "histogram.elf")
    out = gdb_batch(served(vx, elf), elf, ["break histogram", "continue", "p $pc", "info symbol $pc"])
    m = re.search(r"Breakpoint 1 at (0x[0-9a-f]+)", out)
    check(m and re.search(r"Thread \d+ hit Breakpoint 1, histogram \(", out) and
          re.search(r"\$1 = .*" + m[1] + r" <histogram\+\d+>", out), f"breakpoints: break histogram:\n{out}")


def check_stepping(vx, ex, src):
    """stepi, step, next, finish, bt; x/8wx on global and local memory against the prompt."""
    elf = os.path.join(ex, "histogram.elf")
    out = gdb_batch(served(vx, elf), elf, [
        "break histogram.c:44", "continue", "p $pc", "stepi", "p $pc", "next", "info line *$pc", "step",
        "bt", "finish", "x/8wx &bins", "x/8wx 0xffff0000", "monitor info ctas", "monitor when"])
    vals = values_after(out, "")
    check(len(vals) >= 2 and vals[0] != vals[1], f"stepping: stepi did not move the pc: {vals[:2]}")
    check(re.search(r"^#0 .* at .*\.[ch]:\d+", out, re.M) and "_start" in out, f"stepping: bt:\n{out}")
    after = out[out.find("Backtrace stopped"):]
    check(re.search(r"^histogram \(.*\) at .*histogram\.c:\d+", after, re.M), f"stepping: finish:\n{out}")
    ev = prompt(vx, elf, ["break histogram.c:44", "continue", "stepi", "next", "step", "finish",
                          "x/8wx &bins", "x/8wx 0xffff0000"])
    for cmd, what in (("x/8wx &bins", "<bins>"), ("x/8wx 0xffff0000", "0xffff0000")):
        want = output_of(ev, cmd).get("values")
        got = [int(v, 16) for line in re.findall(r"^0x[0-9a-f]+(?: <[^>]+>)?:((?:[ \t]+0x[0-9a-f]{8})+)", out, re.M)
               for v in line.split()]
        # Both dumps are in the output: global first, then local memory.
        first, second = got[:8], got[8:16]
        check(want is not None and (first if what == "<bins>" else second) == want,
              f"stepping: {cmd}: gdb {first if what == '<bins>' else second}, the prompt {want}")
    check("in progress:" in out and "CTA" in out, f"stepping: monitor info ctas:\n{out}")
    check(re.search(r"launch 1, instruction \d+", out) or "instruction" in out, f"stepping: monitor when:\n{out}")


def check_watch_reverse(vx, ex, src):
    """watch on a histogram bin stops at each increment; reverse-stepi and reverse-continue."""
    elf = os.path.join(ex, "histogram.elf")
    out = gdb_batch(served(vx, elf, "--db", tempfile.mkdtemp()), elf, [
        "watch bins[3]", "continue", "continue", "delete", "break histogram.c:44", "continue", "continue",
        "p $pc", "reverse-stepi", "p $pc", "reverse-continue", "p $pc", "info threads"])
    olds = re.findall(r"Old value = (\d+)\nNew value = (\d+)", out)
    check(len(olds) >= 2 and all(int(n) > int(o) for o, n in olds[:2]) and olds[0][1] == olds[1][0],
          f"watch: the bin's increments {olds}:\n{out}")
    hits = re.findall(r"Thread \d+ hit Breakpoint 2,", out)
    check(len(hits) >= 3, f"reverse: {len(hits)} breakpoint reports (two forward, one reverse-continue):\n{out}")
    vals = values_after(out, "")
    check(len(vals) >= 3 and vals[0] != vals[1], f"reverse: reverse-stepi left the pc at {vals[:2]}")
    check(len(vals) >= 3 and "<histogram+" in vals[2], f"reverse: reverse-continue stopped at {vals[2:3]}")


def check_stops(vx, ex, src):
    """A fault is SIGSEGV at the faulting pc; an assertion SIGABRT; the kernel's exit code; usage errors."""
    elf = os.path.join(ex, "fault.elf")
    out = gdb_batch(served(vx, elf), elf, ["continue", "p $pc"])
    ev = prompt(vx, elf, ["continue"])
    stop = next((e for e in ev if e.get("event") == "stop"), {})
    pc = stop.get("exception_pc") or stop.get("pc")
    vals = values_after(out, "")
    check("received signal SIGSEGV" in out and pc is not None and vals and f"0x{pc:08x}" in vals[0],
          f"stops: fault: prompt pc {pc}, gdb:\n{out}")
    elf = os.path.join(ex, "assert.elf")
    out = gdb_batch(served(vx, elf), elf, ["continue", "continue"])
    check("received signal SIGABRT" in out and "exited with code 01" in out, f"stops: assert:\n{out}")
    elf = os.path.join(ex, "hang.elf")
    out = gdb_batch(served(vx, elf, "--watchdog", "20000"), elf, ["continue"])
    check("received signal SIGXCPU" in out, f"stops: the watchdog:\n{out}")
    # Ctrl-C in gdb: SIGINT to gdb, which sends the interrupt byte; the hang stops with SIGINT.
    elf = os.path.join(ex, "hang.elf")
    # Interrupt once gdb is connected and about to resume the kernel (under load the connection
    # can take seconds; gdb's own output is buffered in a pipe, so a marker file says it).
    marker = os.path.join(tempfile.mkdtemp(prefix="vx-gdb-int-"), "connected")
    g = subprocess.Popen([GDB, "-nx", "--batch", "-ex", "set pagination off", "-ex",
                          "target remote | " + " ".join(served(vx, elf, "--watchdog", "0")),
                          "-ex", "shell touch " + marker, "-ex", "continue",
                          "-ex", "p $pc"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    while not os.path.exists(marker) and time.time() < deadline and g.poll() is None:
        time.sleep(0.05)
    time.sleep(0.5)
    g.send_signal(signal.SIGINT)
    try:
        out, _ = g.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        g.kill()
        out, _ = g.communicate()
    shutil.rmtree(os.path.dirname(marker), ignore_errors=True)
    check("hang: waiting for the go flag" in out and "received signal SIGINT" in out and "<hang+" in out,
          f"stops: Ctrl-C on hang:\n{out}")
    for extra in (["--json"], ["--batch"], ["-ex", "info ctas"], ["-x", "/dev/null"]):
        p = subprocess.run([vx, "run", os.path.join(ex, "vecadd.elf"), "--gdb", "-", *extra], capture_output=True,
                           text=True, timeout=30, stdin=subprocess.DEVNULL)
        check(p.returncode == EXIT_USAGE and "--gdb" in p.stderr, f"stops: --gdb - {extra}: status {p.returncode} {p.stderr}")
    for bad in ("70000", "host:", "a:b:c", ""):
        p = subprocess.run([vx, "run", os.path.join(ex, "vecadd.elf"), "--gdb", bad], capture_output=True, text=True,
                           timeout=30, stdin=subprocess.DEVNULL)
        check(p.returncode == EXIT_USAGE, f"stops: --gdb '{bad}': status {p.returncode} {p.stderr}")


class Tcp:
    """vxreplay listening on a loopback port the system picks (it prints it on stderr)."""

    def __init__(self, vx, args):
        self.p = subprocess.Popen([vx, *args, "--gdb", "127.0.0.1:0"], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.port = None
        self.err = ""
        deadline = time.time() + 30
        while time.time() < deadline:
            line = self.p.stderr.readline()
            if not line:
                break
            self.err += line
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m[1])
            if "in gdb:" in line:
                break

    def finish(self):
        try:
            out, err = self.p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            out, err = self.p.communicate()
        return self.p.returncode, out, self.err + err


def frame(payload):
    return b"$" + payload + b"#" + b"%02x" % (sum(payload) & 0xff)


def expand_runs(body):
    """A reply's run lengths undone as gdb does ("X*n": n - 29 more copies of X)."""
    out = bytearray()
    i = 0
    while i < len(body):
        if body[i] == ord("*") and out and i + 1 < len(body):
            out += bytes([out[-1]]) * (body[i + 1] - 29)
            i += 2
        else:
            out.append(body[i])
            i += 1
    return bytes(out)


class Raw:
    """A minimal client: packets out, replies in (acknowledgements skipped)."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = b""

    def send(self, payload):
        self.s.sendall(frame(payload))

    def reply(self):
        while True:
            m = re.search(rb"\$([^#]*)#([0-9a-f]{2})", self.buf)
            if m:
                self.buf = self.buf[m.end():]
                if m[1].startswith(b"O") and m[1] != b"OK":
                    continue  # console output
                return expand_runs(m[1])
            data = self.s.recv(65536)
            if not data:
                return None
            self.buf += data

    def ask(self, payload):
        self.send(payload)
        return self.reply()


def check_tcp(vx, ex, src):
    """gdb over a loopback port; the interrupt byte stops a hang; malformed packets get errors."""
    elf = os.path.join(ex, "vecadd.elf")
    # Beyond loopback only when asked for (docs/gdb.md "Trust").
    p = subprocess.run([vx, "run", elf, "--no-db", "--gdb", "0.0.0.0:0"], capture_output=True, text=True, timeout=30)
    check(p.returncode == 64 and "not a loopback address" in p.stderr and "--gdb-remote" in p.stderr,
          f"tcp: --gdb 0.0.0.0 without --gdb-remote is refused: {p.returncode} {p.stderr!r}")
    p = subprocess.run([vx, "run", elf, "--no-db", "--gdb-allow-files"], capture_output=True, text=True, timeout=30)
    check(p.returncode == 64 and "applies to --gdb only" in p.stderr, f"tcp: a trust flag without --gdb: {p.stderr!r}")
    srv = Tcp(vx, ["run", elf, "--no-db"])
    if not check(srv.port, f"tcp: no port on stderr: {srv.err}"):
        srv.p.kill()
        return
    p = subprocess.run([GDB, "-nx", "--batch", "-ex", "set pagination off", "-ex", f"target remote 127.0.0.1:{srv.port}",
                        "-ex", "break vecadd.c:37", "-ex", "continue", "-ex", "p i", "-ex", "delete",
                        "-ex", "continue", elf], capture_output=True, text=True, timeout=60)
    rc, _, err = srv.finish()
    out = p.stdout + p.stderr
    check("hit Breakpoint 1" in out and re.search(r"^\$1 = \d+$", out, re.M) and "exited normally" in out,
          f"tcp: gdb over TCP:\n{out}")
    check(rc == 0 and "in gdb: gdb-multiarch" in err, f"tcp: status {rc}, stderr {err}")

    # Ctrl-C: gdb sends the interrupt byte while the kernel runs.
    srv = Tcp(vx, ["run", os.path.join(ex, "hang.elf"), "--no-db", "--watchdog", "0"])
    if not check(srv.port, f"tcp: no port for hang: {srv.err}"):
        srv.p.kill()
        return
    c = Raw(srv.port)
    sup = c.ask(b"qSupported:swbreak+")
    check(sup and b"swbreak+" in sup and b"qXfer:features:read+" in sup, f"raw: qSupported {sup}")
    check(c.ask(b"QStartNoAckMode") == b"OK", "raw: no-ack mode")
    check(c.ask(b"qFoo") == b"", "raw: an unknown packet gets the empty reply")
    check(c.ask(b"m80000000") == b"E01", "raw: a malformed m gets an error")
    # Packets that fail to decode are answered in no-ack mode too (ack mode says '-'): an error
    # that says what was wrong, and the session goes on (issue 33).
    for bad, why in ((b"$g#00", b"checksum"), (b"$*~#a8", b"E.a run-length marker (0x2a) with nothing to repeat"),
                     (b"$X80000000,1:}#f4", b"E.an escape character (0x7d) ends the packet"),
                     (frame(b"m" * (2 << 20)), b"longer than")):
        c.s.sendall(bad)
        r = c.reply()
        check(r is not None and r.startswith(b"E.") and why in r, f"raw: no-ack {bad[:24]!r} is answered: {r!r}")
    check(c.ask(b"qC").startswith(b"QC"), "raw: the session goes on after bad packets")
    # The trust boundary: the client reads no file on the server's side (docs/gdb.md "Trust").
    c.send(b"qRcmd," + b"source /etc/passwd".hex().encode())
    said = b""
    while True:
        m = re.search(rb"\$([^#]*)#([0-9a-f]{2})", c.buf)
        if not m:
            data = c.s.recv(65536)
            if not data:
                break
            c.buf += data
            continue
        c.buf = c.buf[m.end():]
        if m[1].startswith(b"O") and m[1] != b"OK":
            said += bytes.fromhex(expand_runs(m[1])[1:].decode())
            continue
        break
    check(b"refused" in said and b"--gdb-allow-files" in said and b"root:" not in said,
          f"raw: monitor source /etc/passwd is refused: {said!r}")
    xml, part = b"", b"m"
    while part and part.startswith(b"m"):
        part = c.ask(b"qXfer:features:read:target.xml:%x,400" % len(xml))
        xml += part[1:] if part else b""
    check(part and part.startswith(b"l") and b"riscv:rv32" in xml and b"vx_core_id" in xml, f"raw: target.xml {xml[:80] if xml else xml}")
    c.send(b"vCont;c")
    time.sleep(0.5)
    t0 = time.time()
    c.s.sendall(b"\x03")
    stop = c.reply()
    check(stop and stop.startswith(b"T02") and b"thread:" in stop and time.time() - t0 < 10,
          f"raw: the interrupt byte stopped the hang with {stop}")
    c.ask(b"vKill;1")
    c.s.close()
    srv.finish()


def mi(vx_cmd, elf, commands, timeout=60):
    """gdb's machine interface: one command per line on stdin, as an IDE sends them."""
    lines = ["-gdb-set pagination off", f"-target-select remote | {' '.join(vx_cmd)}", *commands, "-gdb-exit"]
    p = subprocess.run([GDB, "-nx", "--interpreter=mi3", elf], input="\n".join(lines) + "\n", capture_output=True,
                       text=True, timeout=timeout)
    return p.stdout


def check_mi(vx, ex, src):
    """The commands VS Code sends, through --interpreter=mi3."""
    elf = os.path.join(ex, "vecadd.elf")
    out = mi(served(vx, elf), elf, ["-break-insert vecadd.c:37", "-exec-continue", "-stack-list-frames",
                                    "-thread-info", "-data-evaluate-expression i"])
    check("^connected" in out, f"mi: -target-select:\n{out}")
    check(re.search(r'\^done,bkpt=\{number="1",.*line="37"', out), f"mi: -break-insert:\n{out}")
    check(re.search(r'\*stopped,reason="breakpoint-hit",.*bkptno="1",.*thread-id="\d+"', out), f"mi: -exec-continue:\n{out}")
    check(re.search(r'\^done,stack=\[frame=\{level="0",.*func="vecadd"', out), f"mi: -stack-list-frames:\n{out}")
    check(re.search(r'\^done,threads=\[\{id="1",target-id="Thread 1",details="cta 0,0,0 thread 0,0,0 core 0 warp 0 lane 0', out),
          f"mi: -thread-info:\n{out}")
    check(re.search(r'\^done,value="\d+"', out), f"mi: -data-evaluate-expression:\n{out}")


def check_replay(vx, ex, src):
    """vxreplay replay --gdb: a recording debugged forward and backward."""
    elf = os.path.join(ex, "vecadd.elf")
    db = tempfile.mkdtemp()
    p = subprocess.run([vx, "run", elf, "--db", db, "--batch", "-ex", "break vecadd.c:37", "-ex", "continue"],
                       capture_output=True, text=True, timeout=60)
    rec = os.path.join(db, sorted(os.listdir(db))[0]) if os.listdir(db) else ""
    # No ELF for gdb: it reads the recording's kept image, whose path the server gives (qXfer:exec-file).
    out = gdb_batch([vx, "replay", rec, "--gdb", "-"], None, ["info threads", "p $pc", "stepi", "p $pc", "reverse-stepi",
                                                             "p $pc", "monitor when"])
    vals = values_after(out, "")
    check(p.returncode == 0 and "Reading symbols from" in out and len(vals) == 3 and "<vecadd+" in vals[0] and
          vals[0] != vals[1] and vals[2] == vals[0] and "instruction" in out, f"replay: {p.stderr}\n{out}")
    shutil.rmtree(db, ignore_errors=True)
    # A recording made through gdb, which then goes away: it stays whole and replays its stops.
    db = tempfile.mkdtemp()
    out = gdb_batch(served(vx, elf, "--db", db), elf, ["break vecadd.c:37", "continue", "continue"])
    rec = os.path.join(db, sorted(os.listdir(db))[0]) if os.listdir(db) else ""
    p = subprocess.run([vx, "replay", rec, "--batch", "--json", "-ex", "info checkpoints"], capture_output=True,
                       text=True, timeout=60)
    marks = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{") and '"info checkpoints"' in l]
    text = marks[0].get("text", "") if marks else ""
    check(out.count("hit Breakpoint 1") == 2 and p.returncode == 0 and text.count("breakpoint") >= 2,
          f"replay: the recording of a gdb session: {p.returncode} {p.stderr}\n{text}\n{out}")
    shutil.rmtree(db, ignore_errors=True)


def reduce_total(n):
    """reduce.c's closed form: the sum over g < n of g % 7 + 1."""
    r = n % 7
    return (n // 7) * 28 + r * (r + 1) // 2


def check_writes(vx, ex, src):
    """set var, set $reg, set {int}ADDR through P/M/X; G, M and X from a raw client; refused writes get E01."""
    elf = os.path.join(ex, "reduce.elf")
    want = reduce_total(8 * 16)
    # A global (X or M), a register (P) read back after gdb drops its cache; pc is not writable.
    out = gdb_batch(served(vx, elf), elf, [
        "break reduce", "continue", "set var total = 100", "p total", "set $a0 = 5", "p $a0",
        "maint flush register-cache", "p $a0", "set $ft0 = 1.5", "maint flush register-cache", "p $ft0",
        "set $pc = $pc + 4", "p $pc", "delete", "continue"])
    vals = values_after(out, "")
    check(vals[:4] == ["100", "5", "5", "1.5"], f"writes: values after set: {vals}\n{out}")
    check("Could not write register \"pc\"; remote failure reply 'E01'" in out and len(vals) > 4 and
          "<reduce+" in vals[4], f"writes: a pc write is refused and the pc stays:\n{out}")
    # The kernel's arithmetic carries the write: the total starts at 100 instead of 0.
    check(f"total {want + 100} (expected {want})" in out and "exited with code 01" in out,
          f"writes: set var total:\n{out}")
    # Local memory in the stopped thread's core's view: a C expression, then a raw address.
    line = source_line(src, "reduce", "vx_fail(vx_vote_any(odd)")
    out = gdb_batch(served(vx, elf), elf, [
        f"break reduce.c:{line} if rank == 0", "continue", "p lm->partial[0]", "set var lm->partial[0] = lm->partial[0] - 3",
        "x/wx 0xffff0000", "set {int}0xffff0000 = 5", "x/wx 0xffff0000", "set {int}0x7fff0000 = 1", "delete",
        "continue"])
    vals = values_after(out, "")
    # Warp 0's partial is 1 + 2 + 3 + 4 (g % 7 + 1 for g = 0..3), stored before warp 0 reaches the line
    # (the condition: another warp may get there first); 5 takes 5 from the total.
    check(vals[:1] == ["10"] and re.search(r"^0xffff0000:\s+0x00000007$", out, re.M) and
          re.search(r"^0xffff0000:\s+0x00000005$", out, re.M), f"writes: local memory:\n{out}")
    check("Cannot access memory at address 0x7fff0000" in out, f"writes: an unmapped write is refused:\n{out}")
    # Two vx_fail counts: block 0's own sum against its closed form, and the total.
    check(f"total {want - 5} (expected {want})" in out and "exited with code 02" in out,
          f"writes: set {{int}}0xffff0000:\n{out}")
    # Live mode: the engine writes only a re-launch's saved state; gdb gets E01 and the kernel its own result.
    out = gdb_batch(served(vx, elf, "--mode", "live"), elf, [
        "break reduce", "continue", "set var total = 100", "set $a0 = 5", "delete", "continue"])
    check("Could not write register \"a0\"; remote failure reply 'E01'" in out and
          out.count("writing state is not supported in live mode") == 2 and
          f"total {want} (expected {want})" in out and "exited normally" in out, f"writes: live mode:\n{out}")
    # G (only what changed is written), M and X from a raw client at the kernel's entry.
    srv = Tcp(vx, ["run", elf, "--no-db"])
    if not check(srv.port, f"writes: no port on stderr: {srv.err}"):
        srv.p.kill()
        return
    c = Raw(srv.port)
    c.ask(b"QStartNoAckMode")
    regs = c.ask(b"g")
    if check(regs and len(regs) == 33 * 8, f"writes: g {regs}"):
        a1 = b"efbeadde"  # 0xdeadbeef, target order
        check(c.ask(b"G" + regs[:11 * 8] + a1 + regs[12 * 8:]) == b"OK" and c.ask(b"pb") == a1,
              f"writes: G changed a1")
        check(c.ask(b"G" + regs[:32 * 8] + b"00000000") == b"E01" and c.ask(b"pb") == a1,
              "writes: G with another pc is refused and leaves the registers")
        check(c.ask(b"P0=01000000") == b"E01" and c.ask(b"P20=00000000") == b"E01" and
              c.ask(b"P41=00000000") == b"E01" and c.ask(b"P5=2a000000") == b"OK" and c.ask(b"p5") == b"2a000000",
              "writes: P on x0, pc and a CSR refused, on t0 written")
    check(c.ask(b"Mffff0000,4:01020304") == b"OK" and c.ask(b"mffff0000,4") == b"01020304", "writes: M")
    check(c.ask(b"Xffff0004,0:") == b"OK" and c.ask(b"Xffff0004,2:}]}\x04") == b"OK" and
          c.ask(b"mffff0004,2") == b"7d24", "writes: X with escaped bytes")
    check(c.ask(b"Mffff0000,2:01") == b"E01", "writes: M whose data is shorter than its length")
    c.ask(b"vKill;1")
    c.s.close()
    srv.finish()


CHECKS = {"breakpoints": check_breakpoints, "stepping": check_stepping, "watch-reverse": check_watch_reverse,
          "stops": check_stops, "tcp": check_tcp, "mi": check_mi, "replay": check_replay,
          "writes": check_writes}

if __name__ == "__main__":
    vx, ex, src, which = sys.argv[1:5]
    vx, ex, src = (os.path.abspath(p) for p in (vx, ex, src))
    if not GDB:
        print("gdb-multiarch is not installed (scripts/install-deps.sh installs it)")
        sys.exit(77)  # meson: skipped
    os.chdir(tempfile.mkdtemp())
    CHECKS[which](vx, ex, src)
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")
