#!/usr/bin/env bash
# Runs upstream Vortex regression host programs (tests/regression/*/main.cpp) against this
# project's libvortex and vxreplay, and prints one table row per program
# (docs/host-upstream-results.md has the results and how the upstream files were obtained).
#
#   scripts/upstream-regression.sh UPSTREAM_TREE VXREPLAY_BUILD_DIR [STANDIN_DIR]
#
# UPSTREAM_TREE holds upstream's files, downloaded outside this repository (never commit them):
#   UPSTREAM_TREE/tests/regression/NAME/main.cpp (+ common.h, kernel.cpp, ...).
# VXREPLAY_BUILD_DIR is a Meson build of this tree with host/libvortex.so and vxreplay built.
# A program's kernel is upstream's own when UPSTREAM_TREE/tests/regression/NAME/kernel.vxbin is
# there (a tree built with upstream's toolchain; its kernel.elf beside it is used for symbols).
# STANDIN_DIR (optional) holds, per program, NAME/kernel.elf: a kernel to run the unmodified host
#   program with when upstream's own kernel cannot be built here (upstream's kernel library and
#   its generated VX_types.h are not in UPSTREAM_TREE). The script turns each kernel.elf into a
#   kernel.vxbin (upstream's format, with a VXSYMTAB footer naming `main`) beside the host binary.
#
# Host programs are compiled unmodified: g++ -std=c++17 main.cpp $(pkg-config --cflags --libs
# vortex) against the build tree's vortex-uninstalled.pc (or an installed vortex.pc when
# PKG_CONFIG_PATH points at one). Each run has a timeout (TIMEOUT, default 120 s).
set -u

upstream=${1:?usage: $0 UPSTREAM_TREE VXREPLAY_BUILD_DIR [STANDIN_DIR]}
build=${2:?usage: $0 UPSTREAM_TREE VXREPLAY_BUILD_DIR [STANDIN_DIR]}
standin=${3:-}
timeout_s=${TIMEOUT:-120}
upstream=$(cd "$upstream" && pwd)
build=$(cd "$build" && pwd)
[ -n "$standin" ] && standin=$(cd "$standin" && pwd)
work=${WORK:-$(mktemp -d /tmp/vx-upstream-run.XXXXXX)}

if pkg-config --exists vortex 2>/dev/null; then
  pc_flags=$(pkg-config --cflags --libs vortex)
  libdir=$(pkg-config --variable=libdir vortex)
else
  pc_flags=$(PKG_CONFIG_PATH="$build/meson-uninstalled" pkg-config --cflags --libs vortex-uninstalled)
  libdir="$build/host"
fi
vxreplay="$build/vxreplay"

# kernel.elf -> kernel.vxbin: u64 min VMA, u64 max VMA, the loadable bytes from the min VMA,
# then the VXSYMTAB footer (names blob, entries {u32 name offset, u16 length, u16 pad, u64 pc},
# u32 count, "VXSYMTAB"), all little-endian (docs/host-kernels.md).
make_vxbin() {
  python3 - "$1" "$2" <<'PY'
import struct, subprocess, sys
elf, out = sys.argv[1], sys.argv[2]
data = open(elf, 'rb').read()
assert data[:4] == b'\x7fELF' and data[4] == 1, 'ELF32 expected'
phoff, = struct.unpack_from('<I', data, 28)
phentsize, phnum = struct.unpack_from('<HH', data, 42)
loads = []
for i in range(phnum):
    p_type, p_off, p_vaddr, _, p_filesz, p_memsz, _, _ = struct.unpack_from('<8I', data, phoff + i * phentsize)
    if p_type == 1 and p_memsz:
        loads.append((p_vaddr, p_off, p_filesz, p_memsz))
lo = min(v for v, _, _, _ in loads)
hi = max(v + m for v, _, _, m in loads)
image = bytearray(hi - lo)
for v, off, fs, _ in loads:
    image[v - lo:v - lo + fs] = data[off:off + fs]
syms = subprocess.run(['llvm-nm', '--defined-only', elf], capture_output=True, text=True, check=True).stdout
pc = next(int(a, 16) for a, t, n in (l.split() for l in syms.splitlines() if len(l.split()) == 3) if n == 'main')
name = b'main'
footer = name + struct.pack('<IHHQ', 0, len(name), 0, pc) + struct.pack('<I', 1) + b'VXSYMTAB'
open(out, 'wb').write(struct.pack('<QQ', lo, hi) + bytes(image) + footer)
PY
}

run_one() {  # $1 = label, rest = command; prints PASSED/FAILED(rc) and keeps the log
  local label=$1; shift
  local log="$dir/$label.log"
  (cd "$dir" && LD_LIBRARY_PATH="$libdir" timeout "$timeout_s" "$@") >"$log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ] && grep -q 'PASSED' "$log"; then echo "PASSED"
  elif [ $rc -eq 124 ]; then echo "TIMEOUT"
  else echo "FAILED($rc)"; fi
}

printf '| program | host builds | kernel | alone 1x1x4x4 | alone 1x2x8x8 | vxreplay 1x1x4x4 | vxreplay 1x2x8x8 |\n'
printf '|---|---|---|---|---|---|---|\n'
for src in "$upstream"/tests/regression/*/main.cpp; do
  name=$(basename "$(dirname "$src")")
  dir="$work/$name"; mkdir -p "$dir"
  host="-"; kern="-"; r1="-"; r2="-"; r3="-"; r4="-"
  if g++ -std=c++17 "$src" -I"$(dirname "$src")" $pc_flags -o "$dir/main" >"$dir/build.log" 2>&1; then
    host="yes"
  else
    host="no: $(grep -m1 'error' "$dir/build.log" | sed 's/^[^:]*:[0-9]*:[0-9]*: //')"
  fi
  if [ -f "$(dirname "$src")/kernel.vxbin" ]; then
    # Upstream's own kernel, built by upstream's toolchain in its tree (with its ELF when there).
    cp "$(dirname "$src")/kernel.vxbin" "$dir/kernel.vxbin"
    [ -f "$(dirname "$src")/kernel.elf" ] && cp "$(dirname "$src")/kernel.elf" "$dir/kernel.elf"
    kern="upstream's"
  elif [ -n "$standin" ] && [ -f "$standin/$name/kernel.elf" ]; then
    cp "$standin/$name/kernel.elf" "$dir/kernel.elf"
    if make_vxbin "$dir/kernel.elf" "$dir/kernel.vxbin" 2>"$dir/vxbin.log"; then kern="stand-in"; else kern="vxbin failed"; fi
  else
    kern="none"
  fi
  if [ "$host" = yes ] && [ -f "$dir/kernel.vxbin" ]; then
    r1=$(run_one alone-1x1x4x4 env VX_CONFIG=1x1x4x4 ./main)
    r2=$(run_one alone-1x2x8x8 env VX_CONFIG=1x2x8x8 ./main)
    r3=$(run_one vxreplay-1x1x4x4 "$vxreplay" run --config 1x1x4x4 -- ./main)
    r4=$(run_one vxreplay-1x2x8x8 "$vxreplay" run --config 1x2x8x8 -- ./main)
  fi
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$host" "$kern" "$r1" "$r2" "$r3" "$r4"
done
echo "logs: $work" >&2
