"""gdb conformance: the same gdb command script, run three ways on the same compiled program.

  ref     the oracle: gdb-multiarch on a bare riscv32 Linux build under `qemu-riscv32 -g`
  prompt  the vxreplay prompt: `vxreplay run kernel.elf --config 1x1x1x1 --no-db --batch`
  gdb     gdb-multiarch over vxreplay: `target remote | vxreplay run kernel.elf ... --gdb -`

Each program's functions are compiled once (programs/NAME.c -> NAME.o); the object is linked into a
one-thread Vortex kernel (glue_kernel.c) and into a Linux program (glue_linux.c), both calling
test_main(). Each transcript is normalized into facts tagged by the index of the script command that
printed them (stops, values, locals, frames, types, returned values, exits); prompt and gdb are
compared with ref fact by fact. known_differences.txt lists the disagreements expected today: the
run fails on one not listed, and on a listed one that no longer occurs.

usage: run.py --vxreplay BUILD/vxreplay --examples BUILD/examples [--work DIR] [--jobs N]
              [--only NAME ...] [--show NAME] [--write-known FILE]"""
import argparse
import concurrent.futures
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
PROGRAMS = os.path.join(HERE, "programs")
KNOWN = os.path.join(HERE, "known_differences.txt")
MODES = ("prompt", "gdb")
TIMEOUT = 120  # seconds per transcript

CFLAGS = ["--target=riscv32", "-march=rv32imaf", "-mabi=ilp32f", "-mcmodel=medany", "-mno-relax",
          "-ffreestanding", "-nostdlib", "-fno-builtin", "-g", "-gdwarf-4"]
# docs/kernels.md: a kernel's own code is compiled with -fconvergent-functions (glue_kernel.c only).
KERNEL_CFLAGS = ["-O2", "-Xclang", "-fconvergent-functions", "-I" + os.path.join(SRC, "examples/runtime")]
GDB_SETUP = ["set confirm off", "set pagination off", "set width 0", "set height 0"]


def fail(msg):
    sys.exit(f"gdb-conformance: {msg}")


def sh(args, **kw):
    p = subprocess.run(args, capture_output=True, text=True, timeout=kw.pop("timeout", 120), **kw)
    if p.returncode != 0:
        fail(f"{' '.join(args)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")


# --- building ------------------------------------------------------------------------------------

def opt_level(c_file):
    """The first line of every program says how it is compiled: `// -O0 ...` or `// -O2 ...`."""
    m = re.match(r"//\s*(-O[0-3s])\b", open(c_file).readline())
    if not m:
        fail(f"{c_file}: the first line must start with `// -O0` or `// -O2`")
    return m[1]


def build(name, work, examples):
    """NAME.o once; kernel.elf and linux.elf linked from it. Returns their paths."""
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    c = os.path.join(PROGRAMS, name + ".c")
    obj, kernel, linux = (os.path.join(d, f) for f in (name + ".o", "kernel.elf", "linux.elf"))
    sh(["clang", *CFLAGS, opt_level(c), "-c", c, "-o", obj])
    sh(["clang", *CFLAGS, "-fuse-ld=lld", "-static", "-Wl,-T," + os.path.join(SRC, "examples/runtime/link.ld"),
        os.path.join(work, "glue_kernel.o"), obj,
        *(os.path.join(examples, o) for o in ("start.o", "vx_print.o", "vx_runtime.o")), "-o", kernel])
    sh(["clang", *CFLAGS, "-fuse-ld=lld", "-static", "-Wl,-e,_start", os.path.join(work, "glue_linux.o"), obj,
        "-o", linux])
    return kernel, linux


def load_ranges(elf):
    """[lo, hi) of the ELF32's loadable segments."""
    data = open(elf, "rb").read()
    phoff, = struct.unpack_from("<I", data, 28)
    phentsize, phnum = struct.unpack_from("<HH", data, 42)
    out = []
    for i in range(phnum):
        ptype, _, vaddr, _, _, memsz = struct.unpack_from("<IIIIII", data, phoff + i * phentsize)
        if ptype == 1 and memsz:
            out.append((vaddr, vaddr + memsz))
    return out


# --- running -------------------------------------------------------------------------------------

def script_commands(name):
    """The script's commands: its lines without blanks and `#` comments."""
    lines = open(os.path.join(PROGRAMS, name + ".gdb")).read().splitlines()
    return [l.strip() for l in lines if l.strip() and not l.strip().startswith("#")]


def marked(commands):
    """Every command preceded by `echo @@CMD k@@`, so output can be cut by command. They are given as
    -ex arguments, not -x: gdb abandons a -x script at its first error, -ex commands go on."""
    out = []
    for k, c in enumerate(commands):
        out += ["-ex", f"echo @@CMD {k}@@\\n", "-ex", c]
    return out


def run_ref(linux, commands, d):
    """gdb on qemu-riscv32's gdbstub (a Unix socket: no port to pick). Software watchpoints:
    qemu-user inserts no hardware ones, and gdb single-stepping gives the stop a hardware watchpoint
    that fires before the access gives once gdb has stepped over it."""
    sock = os.path.join(d, "qemu.sock")
    if os.path.exists(sock):
        os.unlink(sock)
    qemu = subprocess.Popen(["qemu-riscv32", "-g", sock, linux], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(sock):
            if qemu.poll() is not None or time.monotonic() > deadline:
                fail(f"qemu-riscv32 -g {sock} {linux} did not open its gdb socket")
            time.sleep(0.01)
        setup = GDB_SETUP + ["set can-use-hw-watchpoints 0", "file " + linux, "target remote " + sock]
        return gdb(setup, commands)
    finally:
        if qemu.poll() is None:
            qemu.kill()
        qemu.wait()


def transcript(args):
    """stdout and stderr of one run, interleaved as printed."""
    try:
        return subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=TIMEOUT).stdout
    except subprocess.TimeoutExpired:
        fail(f"timed out after {TIMEOUT} s: {' '.join(args[:8])} ...")
    except OSError as e:
        fail(f"cannot run {args[0]}: {e}")


def gdb(setup, commands):
    args = ["gdb-multiarch", "-batch", "-nx"]
    for c in setup:
        args += ["-ex", c]
    return transcript(args + marked(commands))


def run_prompt(vx, kernel, commands):
    return transcript([vx, "run", kernel, "--config", "1x1x1x1", "--no-db", "--batch", *marked(commands)])


def run_gdbserver(vx, kernel, commands):
    return gdb(GDB_SETUP + [f"target remote | {vx} run {kernel} --config 1x1x1x1 --no-db --gdb -"], commands)


# --- facts ---------------------------------------------------------------------------------------

VERBS = {"p": "print", "inspect": "print", "output": "print", "call": "print", "b": "break", "br": "break",
         "tb": "tbreak", "c": "continue", "cont": "continue", "n": "next", "s": "step", "si": "stepi",
         "ni": "nexti", "fin": "finish", "u": "until", "adv": "advance", "bt": "backtrace", "where": "backtrace",
         "f": "frame", "whatis": "ptype", "rwatch": "watch", "awatch": "watch"}
NOISE = re.compile(r"^(\s+core \d|\s+also here:|\s+watchpoint \d+: .*, by |Run till exit|Kernel .* launched|Mode: |"
                   r"session: |exit code: |=> 0x|Continuing\.|Reading symbols|warning: |vxreplay: |"
                   r"Backtrace stopped|Starting program|Remote debugging using)")
HEX = re.compile(r"0x[0-9a-f]+")
# gdb: `[0xADDR in ]FUNC (ARGS) at PATH:LINE`; the prompt: `FUNC (FILE:LINE)`.
GDB_LOC = re.compile(r"^(?:0x[0-9a-f]+ in )?([A-Za-z_]\w*) \(.*\) at (\S+):(\d+)$")
FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?([A-Za-z_]\w*) "
                   r"(?:\(.*\) at (\S+):(\d+)|\((?:.*\) \()?([^()\s]+):(\d+)\)(?:, inlined)?)$")
PROMPT_STOP = re.compile(r"^(Breakpoints? [\d, ]+|Temporary breakpoint \d+|Watchpoint \d+|Step|Interrupted|[A-Z][\w ]*?), "
                         r"([A-Za-z_]\w*)(?:, inlined ([A-Za-z_]\w*))? \(([^()\s]+):(\d+)\)(?:, .*)?$")
SET_BREAK = re.compile(r"^(Temporary breakpoint|Breakpoint|Hardware breakpoint) (\d+) at 0x[0-9a-f]+: "
                       r"(?:file (\S+), line (\d+)\.|[A-Za-z_]\w*(?:, inlined [A-Za-z_]\w*)? \(([^()\s]+):(\d+)\)\..*|"
                       r"(.*)\. \((\d+) locations\))$")
GDB_HIT = re.compile(r"^(?:Thread \d+ hit )?(Temporary breakpoint|Breakpoint) (\d+), (.*)$")
WATCH = re.compile(r"^(?:Hardware |Software )?(read |access \(read/write\) )?[Ww]atchpoint (\d+): (.*)$")
MOVES = {"continue", "run", "next", "step", "stepi", "nexti", "finish", "until", "advance"}
ORDER = ("hit ", "old value", "new value", "value ", "at ", "frame ", "returned ", "display ", "exited ")
SOURCE = re.compile(r"^(?:0x[0-9a-f]+\t)?(\d+)\t")


def base(path):
    return os.path.basename(path)


class Normalizer:
    """Turns one transcript into facts: {command index: [fact, ...]}. `ranges` are the addresses of
    the image and the stack of this build: a hex number inside them is printed as ADDR (the two links
    place the same code and data at different addresses)."""

    def __init__(self, ranges):
        self.ranges = ranges
        self.func, self.file = "?", "?"  # the location gdb leaves implicit when it prints a line alone

    def addr(self, text):
        return HEX.sub(lambda m: "ADDR" if any(lo <= int(m[0], 16) < hi for lo, hi in self.ranges) else m[0], text)

    def parse(self, text, commands):
        chunks, k = {}, None
        for line in text.splitlines():
            m = re.match(r"^@@CMD (\d+)@@$", line)
            if m:
                k = int(m[1])
                chunks[k] = []
            elif k is not None:
                chunks[k].append(line.rstrip())
            else:
                self.command("", [line.rstrip()])  # before the first command: the initial location
        facts, other = {}, {}
        for k, c in enumerate(commands):
            facts[k], other[k] = self.command(c, chunks.get(k, []))
        return facts, other

    def stop(self, func, file, line):
        self.func, self.file = func, base(file)
        return f"at {func} {self.file}:{line}"

    def command(self, cmd, lines):
        word = re.split(r"[\s/]", cmd, maxsplit=1)[0]
        verb = VERBS.get(word, word)
        arg = re.sub(r"^\S+(?:/\w+)?\s*", "", cmd) if verb == "print" else ""
        facts, other, skip_source, ptype = [], [], False, []
        for l in lines:
            if not l.strip() or NOISE.match(l):
                continue
            if verb == "ptype":
                ptype.append(" ".join(l.split()))
                continue
            m = re.match(r"^\[Inferior \d+ \(.*\) exited (normally|with code (\d+))\]$", l)
            if m:
                facts.append(f"exited {int(m[2], 8) if m[2] else 0}")
                continue
            m = re.match(r"^\[Kernel exited with code (\d+)\]$", l)
            if m:
                facts.append(f"exited {int(m[1])}")
                continue
            m = SET_BREAK.match(l)
            if m:
                where = f"{base(m[3] or m[5])}:{m[4] or m[6]}" if (m[3] or m[5]) else f"{m[8]} locations"
                facts.append(f"{m[1].lower()} {m[2]} at {where}")
                continue
            m = WATCH.match(l)
            if m:
                facts.append(f"{m[1] or ''}watchpoint {m[2]}: {m[3]}" if verb == "watch" else f"hit watchpoint {m[2]}")
                continue
            m = re.match(r"^\s*(Old value|New value|Value) = (.*)$", l)
            if m:
                facts.append(f"{m[1].lower()} {self.addr(m[2])}")
                continue
            m = re.match(r"^Value returned (?:is (?:\$\d+ = )?(.*)|in \$\w+: (.*?)(?: \(0x[0-9a-f]+\))?)$", l)
            if m:
                facts.append(f"returned {self.addr(m[1] or m[2])}")
                continue
            m = re.match(r"^(\d+): (.*)$", l)
            if m:
                if word != "display":  # gdb in batch mode does not show a new display at once
                    facts.append(f"display {m[1]}: {self.addr(m[2])}")
                continue
            m = PROMPT_STOP.match(l)
            if m:
                why = m[1].lower()
                if why.startswith(("breakpoint", "temporary", "watchpoint")):
                    facts.append("hit " + why.replace("breakpoints", "breakpoint"))
                facts.append(self.stop(m[3] or m[2], m[4], m[5]))
                skip_source = True
                continue
            m = GDB_HIT.match(l)
            if m:
                facts.append(f"hit {m[1].lower()} {m[2]}")
                loc = GDB_LOC.match(m[3])
                if loc:
                    facts.append(self.stop(*loc.groups()))
                    skip_source = True
                continue
            m = FRAME.match(l)
            if m:
                func, file, line = m[2], m[3] or m[5], m[4] or m[6]
                if verb == "backtrace":
                    if "test_main" not in " ".join(f for f in facts):  # frames past test_main are glue
                        facts.append(f"#{m[1]} {func} {base(file)}:{line}")
                else:
                    facts.append(f"frame #{m[1]} {func} {base(file)}:{line}")
                    self.func, self.file = func, base(file)
                    skip_source = True
                continue
            m = GDB_LOC.match(l)
            if m:
                facts.append(self.stop(*m.groups()))
                skip_source = True
                continue
            m = SOURCE.match(l)
            if m:
                if not skip_source:
                    facts.append(f"at {self.func} {self.file}:{m[1]}")
                skip_source = False
                continue
            if verb == "print":
                m = re.match(r"^\$\d+ = (.*)$", l) or (re.match(r"^" + re.escape(arg) + r" = (.*)$", l) if arg else None)
                if m:
                    facts.append("value " + self.addr(m[1]))
                    continue
            if verb == "info" and (re.match(r"^[A-Za-z_]\w* = ", l) or l in ("No locals.", "No arguments.")):
                facts.append(self.addr(l))
                continue
            other.append(l.strip())
        if ptype:
            facts.append(self.addr(" ".join(ptype)))
        # A stop's parts in one order: gdb prints a watchpoint's values before the location, the prompt after.
        if verb in MOVES:
            facts.sort(key=lambda f: next((i for i, p in enumerate(ORDER) if f.startswith(p)), len(ORDER)))
        return facts, other


# --- comparing -----------------------------------------------------------------------------------

def compare(ref, got):
    """Per command: (agreeing facts, disagreement or None)."""
    out = {}
    for k, want in ref.items():
        have = got.get(k, [])
        agree = sum(1 for a, b in zip(want, have) if a == b)
        out[k] = (agree, None if want == have else (want, have))
    return out


def load_known(path, scripts):
    """known_differences.txt: `program | mode | command index | command | reason`."""
    known = {}
    for n, line in enumerate(open(path).read().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        f = [x.strip() for x in line.split("|")]
        if len(f) != 5 or f[1] not in MODES or not f[2].isdigit() or not f[4]:
            fail(f"{path}:{n}: expected `program | mode | command index | command | reason`, got: {line}")
        prog, mode, k, cmd, reason = f[0], f[1], int(f[2]), f[3], f[4]
        if prog in scripts:
            cmds = scripts[prog]
            if k >= len(cmds) or cmds[k] != cmd:
                fail(f"{path}:{n}: command {k} of {prog}.gdb is {cmds[k] if k < len(cmds) else 'missing'!r}, not {cmd!r}")
            known[(prog, mode, k)] = reason
        elif not os.path.exists(os.path.join(PROGRAMS, prog + ".c")):
            fail(f"{path}:{n}: no program {prog}")
    return known


def one_program(name, args):
    d = os.path.join(args.work, name)
    kernel, linux = build(name, args.work, args.examples)
    commands = script_commands(name)
    texts = {"ref": run_ref(linux, commands, d), "prompt": run_prompt(args.vxreplay, kernel, commands),
             "gdb": run_gdbserver(args.vxreplay, kernel, commands)}
    linux_ranges = load_ranges(linux) + [(0x407e0000, 0x40810000)]  # qemu-user's riscv32 stack
    kernel_ranges = load_ranges(kernel) + [(0xfffe0000, 0xffff0000)]  # the one hart's stack (start.S)
    result = {}
    for mode, text in texts.items():
        with open(os.path.join(d, mode + ".txt"), "w") as f:
            f.write(text)
        norm = Normalizer(linux_ranges if mode == "ref" else kernel_ranges)
        result[mode] = norm.parse(text, commands)
    facts = result["ref"][0]
    # The oracle itself must have worked: it stopped in test_main and produced facts.
    flat = [f for k in facts for f in facts[k]]
    if not any(f.startswith("at test_main ") for f in flat) or len(flat) < 5:
        fail(f"{name}: the reference run (gdb on qemu) did not reach test_main; transcript in {d}/ref.txt:\n"
             + texts["ref"][-2000:])
    # Every script ends the program with its last command, and only there: commands after the end
    # would compare what two debuggers say about a finished program.
    ends = [k for k in facts if any(f.startswith("exited ") for f in facts[k])]
    if ends != [len(commands) - 1]:
        fail(f"{name}.gdb: the reference program ends at command(s) {ends}, not at the last one "
             f"({len(commands) - 1}); see {d}/ref.txt")
    return name, commands, result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vxreplay", required=True)
    ap.add_argument("--examples", required=True, help="the build's examples/ (start.o, vx_print.o, vx_runtime.o)")
    ap.add_argument("--work", help="build and transcript directory (default: a temporary one, removed)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", nargs="*", help="these programs only (known differences of others are not checked)")
    ap.add_argument("--show", help="print this program's facts for the three modes side by side")
    ap.add_argument("--known", default=KNOWN, help="the list of expected disagreements (default: %(default)s)")
    ap.add_argument("--write-known", help="write the disagreements measured now to this file, in the list's form")
    args = ap.parse_args()
    args.vxreplay = os.path.abspath(args.vxreplay)
    args.examples = os.path.abspath(args.examples)
    for tool, pkg in (("clang", "clang"), ("ld.lld", "lld"), ("qemu-riscv32", "qemu-user"),
                      ("gdb-multiarch", "gdb-multiarch")):
        if not shutil.which(tool):
            fail(f"{tool} not found: install Debian's {pkg} (scripts/test.sh installs it)")
    for f in [args.vxreplay] + [os.path.join(args.examples, o) for o in ("start.o", "vx_print.o", "vx_runtime.o")]:
        if not os.path.exists(f) or (f == args.vxreplay and not os.access(f, os.X_OK)):
            fail(f"{f} not found (or not executable): build the project first (scripts/build.sh)")
    tmp = None
    if not args.work:
        tmp = args.work = tempfile.mkdtemp(prefix="vx-conformance-")
    os.makedirs(args.work, exist_ok=True)
    args.work = os.path.abspath(args.work)
    try:
        return report(args)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def report(args):
    names = sorted(f[:-2] for f in os.listdir(PROGRAMS) if f.endswith(".c"))
    for n in names:
        if not os.path.exists(os.path.join(PROGRAMS, n + ".gdb")):
            fail(f"programs/{n}.c has no {n}.gdb")
    if args.only:
        names = [n for n in names if n in args.only]
    sh(["clang", *CFLAGS, *KERNEL_CFLAGS, "-c", os.path.join(HERE, "glue_kernel.c"), "-o",
        os.path.join(args.work, "glue_kernel.o")])
    sh(["clang", *CFLAGS, "-O2", "-c", os.path.join(HERE, "glue_linux.c"), "-o", os.path.join(args.work, "glue_linux.o")])
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda n: one_program(n, args), names))
    elapsed = time.monotonic() - t0
    scripts = {n: c for n, c, _ in results}
    known = load_known(args.known, scripts)

    total = {"facts": 0, **{m: 0 for m in MODES}}
    found = {}  # (program, mode, k) -> (command, expected, got)
    print(f"{'program':24} {'facts':>6} {'prompt':>14} {'gdb':>14}")
    for name, commands, result in results:
        ref, _ = result["ref"]
        nfacts = sum(len(v) for v in ref.values())
        row = [f"{name:24} {nfacts:6}"]
        total["facts"] += nfacts
        for mode in MODES:
            facts, other = result[mode]
            agree = 0
            for k, (a, diff) in compare(ref, facts).items():
                agree += a
                if diff:
                    got = diff[1]
                    if not got and other[k]:  # say what was printed instead (e.g. an error)
                        got = ["(nothing; printed: " + " / ".join(other[k][:2]) + ")"]
                    found[(name, mode, k)] = (commands[k], diff[0], got)
            total[mode] += agree
            row.append(f"{agree:6}/{nfacts:<3} {pct(agree, nfacts):>4}")
        print(" ".join(row))
        if args.show == name:
            show(commands, result)
    print(f"{'total (' + str(len(results)) + ' programs)':24} {total['facts']:6} "
          + " ".join(f"{total[m]:6}/{total['facts']:<3} {pct(total[m], total['facts']):>4}" for m in MODES))
    print(f"\ngdb conformance: {len(results)} programs, {total['facts']} facts; prompt agrees with gdb on "
          f"{total['prompt']} ({pct(total['prompt'], total['facts'])}), gdb over vxreplay on {total['gdb']} "
          f"({pct(total['gdb'], total['facts'])}); {sum(1 for k in found if k[1] == 'prompt')} prompt and "
          f"{sum(1 for k in found if k[1] == 'gdb')} gdb commands disagree; {elapsed:.1f} s, {args.jobs} jobs")

    print("\ndisagreements (program | mode | command index | command: expected -> got):")
    for key in sorted(found):
        cmd, want, have = found[key]
        tag = "known" if key in known else "NEW"
        print(f"  [{tag}] {key[0]} | {key[1]} | {key[2]} | {cmd}: {' ; '.join(want) or '(nothing)'} -> "
              f"{' ; '.join(have) or '(nothing)'}" + (f"   # {known[key]}" if key in known else ""))
    if args.write_known:
        with open(args.write_known, "w") as f:
            for key in sorted(found):
                f.write(f"{key[0]} | {key[1]} | {key[2]} | {found[key][0]} | {known.get(key, 'TODO')}\n")
    new = sorted(k for k in found if k not in known)
    gone = sorted(k for k in known if k not in found and (not args.only or k[0] in args.only))
    for k in gone:
        print(f"FIXED (remove it from known_differences.txt): {k[0]} | {k[1]} | {k[2]} | {scripts[k[0]][k[2]]} | {known[k]}")
    for k in new:
        print(f"NEW DISAGREEMENT (fix it, or list it in known_differences.txt): {k[0]} | {k[1]} | {k[2]} | "
              f"{found[k][0]}")
    if new or gone:
        print(f"FAIL: {len(new)} disagreement(s) not in known_differences.txt, {len(gone)} listed that no longer "
              f"occur (transcripts: {'--work DIR keeps them' if args.work.startswith(tempfile.gettempdir()) else args.work})")
        return 1
    print("ok: every disagreement is a known one")
    return 0


def pct(a, b):
    return f"{100 * a / b:.1f}%" if b else "-"


def show(commands, result):
    for k, c in enumerate(commands):
        print(f"  [{k}] {c}")
        for mode in ("ref",) + MODES:
            print(f"      {mode:7} {result[mode][0][k]}")


if __name__ == "__main__":
    sys.exit(main())
