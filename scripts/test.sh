#!/usr/bin/env bash
# The whole test suite: unit and end-to-end tests, then the malformed-input and
# unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
# Test-only dependencies: qemu-user (the reference of the gdb conformance test, tests/conformance/),
# clang-format (every C++ file is checked against .clang-format), and chromium, chromium-driver and
# python3-selenium (the pages of vxreplay view opened in a real browser, tests/e2e_view.py).
missing=()
for p in qemu-user clang-format chromium chromium-driver python3-selenium; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "installing: ${missing[*]} (tests only)"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi
scripts/check-format.sh
meson test -C build --print-errorlogs --num-processes 2

# The sanitizer build: optimization level 1 (it compiles much faster than -O2 and still runs the
# model fast enough), and only the programs of the suites run here.
[ -f build-asan/build.ninja ] || meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
  -Doptimization=1
# What the unit and malformed-input suites run, and what they depend on (their test programs, the
# vxreplay binary, the example images), from Meson's own list of tests: a new test needs no edit here.
mapfile -t asan_targets < <(python3 - build-asan <<'PY'
import json, os, subprocess, sys
b = os.path.abspath(sys.argv[1])
tests = json.loads(subprocess.check_output(["meson", "introspect", b, "--tests"]))
targets = {t["id"]: t for t in json.loads(subprocess.check_output(["meson", "introspect", b, "--targets"]))}
outputs = {f for t in targets.values() for f in t["filename"]}
out = set()
for t in tests:
    if not {s.split(":")[-1] for s in t["suite"]} & {"unit", "malformed"}:
        continue
    files = [c for c in t["cmd"] if c in outputs]  # the test program (arguments such as directories are not targets)
    for d in t.get("depends", []):
        files += targets[d]["filename"] if d in targets else []
    out.update(os.path.relpath(f, b) for f in files)
print("\n".join(sorted(out)))
PY
)
ninja -C build-asan "${asan_targets[@]}"
ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --no-rebuild --print-errorlogs --num-processes 2 --suite unit --suite malformed

# Hostile input, permanently: the libFuzzer targets, built with clang (so the project builds with
# gcc and clang) under ASan and UBSan, each run for a fixed short time (docs/fuzzing.md).
[ -f build-fuzz/build.ninja ] || CC=clang CXX=clang++ meson setup build-fuzz -Db_sanitize=address,undefined \
  -Db_lundef=false -Doptimization=1 -Dfuzz=true
# Every tests/fuzz/fuzz_*.cpp is a target (a new one needs only its source and a meson.build entry).
fuzzers=()
for f in tests/fuzz/fuzz_*.cpp; do fuzzers+=("tests/fuzz/$(basename "$f" .cpp)"); done
ninja -C build-fuzz "${fuzzers[@]}"
FUZZ_SECONDS=${FUZZ_SECONDS:-10} scripts/fuzz.sh build-fuzz
