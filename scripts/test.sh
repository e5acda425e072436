#!/usr/bin/env bash
# The whole test suite: unit and end-to-end tests, then the malformed-input and
# unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
meson test -C build --print-errorlogs --num-processes 2

# Only what the unit and malformed suites run is built here (no benchmarks).
[ -f build-asan/build.ninja ] || meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
ninja -C build-asan device/device_tests engine/engine_tests checkpoint/checkpoint_tests checkpoint/crash_helper \
  vxreplay examples/vecadd.elf
ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --no-rebuild --print-errorlogs --num-processes 2 --suite unit --suite malformed
