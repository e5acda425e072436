#!/usr/bin/env bash
# The model against QEMU's user-mode riscv32 emulator on one scalar workload
# (scripts/bench-qemu/sgemm_scalar.c, a single-thread sgemm, N=128), built twice
# from the same source: for the model with the examples' runtime, run with
# `vxreplay run --config 1x1x1x1`, and as a bare riscv32 Linux program for
# qemu-riscv32. It checks that both print the same checksum and execute the
# same number of instructions in the workload function, then times whole
# processes, alternating model and QEMU, and prints the medians and their ratio.
#
# qemu-user is a benchmark-only dependency: installed here when missing.
# BASE_VX=PATH adds another vxreplay binary (e.g. an older build) to the same
# alternating runs, as a baseline. RUNS=N sets the number of runs of each (default 7).
# COUNT=0 skips the instruction-count check (it traces QEMU one instruction at a time).
# PIN=N runs every timed process on processor N (default 0; PIN= lets the scheduler choose): on a
# shared VM one virtual processor can run at half speed for minutes, and a median then says which
# processor each program landed on more than how fast it is.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v qemu-riscv32 >/dev/null; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "installing qemu-user (benchmark only)"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends qemu-user >/dev/null
fi
[ -x build/vxreplay ] || scripts/build.sh >/dev/null
ninja -C build vxreplay examples/start.o examples/vx_print.o examples/vx_runtime.o >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=scripts/bench-qemu/sgemm_scalar.c
cflags=(--target=riscv32 -march=rv32imaf -mabi=ilp32f -mcmodel=medany -mno-relax -ffreestanding -nostdlib
  -fno-builtin -O2 -fuse-ld=lld -static)
# For the model: exactly as examples/meson.build builds a kernel.
clang "${cflags[@]}" -g -Xclang -fconvergent-functions -Iexamples/runtime -Wl,-T,examples/runtime/link.ld \
  "$src" build/examples/start.o build/examples/vx_print.o build/examples/vx_runtime.o -o "$tmp/model.elf"
# For QEMU: no runtime, no libc; _start and the system calls are in the source.
clang "${cflags[@]}" -DBENCH_LINUX -Wl,-e,_start "$src" -o "$tmp/qemu.elf"

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')  nproc: $(nproc)  cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "$(qemu-riscv32 --version | head -1)"
pin_cpu="${PIN-0}"
echo "timed processes on processor: ${pin_cpu:-any (not pinned)}"
python3 - "$PWD/build/vxreplay" "$tmp" "${BASE_VX:-}" "${RUNS:-7}" "${COUNT:-1}" "$pin_cpu" <<'PY'
import json, os, re, resource, statistics, subprocess, sys, time
vx, tmp, base_vx, runs, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1"
pin = ["taskset", "-c", sys.argv[6]] if sys.argv[6] else []
model_elf, qemu_elf = os.path.join(tmp, "model.elf"), os.path.join(tmp, "qemu.elf")

def symbol(elf, name):
    out = subprocess.run(["llvm-nm", "-S", elf], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[3] == name:
            return int(f[0], 16), int(f[1], 16)
    sys.exit(f"{elf}: no symbol {name}")

def run(args):
    """Whole process: wall seconds, CPU seconds (user + system) and stdout."""
    t = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    out, err = p.communicate()
    wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({p.returncode}): {err.decode()[-400:]}")
    return wall, out.decode()

def timed(args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, out = run(args)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out

model_cmd = [vx, "run", model_elf, "--config", "1x1x1x1", "--quiet"]
qemu_cmd = ["qemu-riscv32", qemu_elf]
_, _, mo = timed(model_cmd)
_, _, qo = timed(qemu_cmd)
mo, qo = mo.strip(), qo.strip()
if mo != qo or not mo.startswith("checksum "):
    sys.exit(f"the outputs differ: model {mo!r}, qemu {qo!r}")
print(f"result: both print {mo!r}")

if count:
    # Model: breakpoints on the workload's first and last instruction (its one ret); the launch's
    # instruction counts at the two stops, plus the ret itself.
    lo, size = symbol(model_elf, "sgemm_scalar")
    last = lo + size - 4
    dis = subprocess.run(["llvm-objdump", "-d", f"--start-address={last}", f"--stop-address={last + 4}", model_elf],
                         capture_output=True, text=True, check=True).stdout
    if not re.search(r"\sret\s*$", dis, re.M):
        sys.exit("the workload's last instruction is not its ret")
    p = subprocess.run([vx, "run", model_elf, "--config", "1x1x1x1", "--no-db", "--json", "--batch",
                        "--break", f"*{lo:#x}", "-ex", "continue", "-ex", "delete", "-ex", f"break *{last:#x}",
                        "-ex", "continue"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    stops = [e for e in map(json.loads, filter(lambda l: l.startswith("{"), p.stdout.splitlines()))
             if e.get("event") == "stop" and e.get("reason") == "breakpoint"]
    if len(stops) != 2:
        sys.exit(f"model: expected two breakpoint stops, got {len(stops)}: {p.stderr[-300:]}")
    model_count = stops[1]["instructions"] - stops[0]["instructions"] + 1
    # QEMU: one instruction per translation block, no chaining, every block logged; the workload
    # calls nothing, so its instructions are the logged pcs inside the function.
    qlo, qsize = symbol(qemu_elf, "sgemm_scalar")
    trace = subprocess.Popen(["qemu-riscv32", "-singlestep", "-d", "exec,nochain", "-D", "/dev/stderr", qemu_elf],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    lo_s, hi_s = b"%08x" % qlo, b"%08x" % (qlo + qsize)
    qemu_count = 0
    for line in trace.stderr:
        i = line.find(b"/")
        if i > 0 and lo_s <= line[i + 1:i + 9] < hi_s:
            qemu_count += 1
    trace.wait()
    if model_count != qemu_count:
        sys.exit(f"instruction counts differ: model {model_count}, qemu {qemu_count}")
    print(f"instructions in sgemm_scalar: {model_count} on both (model: breakpoints; qemu: -singlestep -d exec trace)")

cmds = [("model", pin + model_cmd), ("qemu", pin + qemu_cmd)]
if base_vx:
    cmds.append(("baseline", pin + [base_vx] + model_cmd[1:]))
walls = {n: [] for n, _ in cmds}
cpus = {n: [] for n, _ in cmds}
for _ in range(runs):
    for name, cmd in cmds:
        w, c, _ = timed(cmd)
        walls[name].append(w)
        cpus[name].append(c)
med = lambda xs: statistics.median(xs)
for name, _ in cmds:
    print(f"{name:9} wall median {med(walls[name]) * 1e3:8.1f} ms  cpu median {med(cpus[name]) * 1e3:8.1f} ms  ({runs} runs)")
print(f"model speed / qemu speed: {med(walls['qemu']) / med(walls['model']):.2f}x by wall time, "
      f"{med(cpus['qemu']) / med(cpus['model']):.2f}x by cpu time (same run; target 1.0x in both)")
if base_vx:
    print(f"model / baseline: {med(walls['baseline']) / med(walls['model']):.2f}x faster by wall time, "
          f"{med(cpus['baseline']) / med(cpus['model']):.2f}x by cpu time")
PY
