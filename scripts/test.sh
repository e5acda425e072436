#!/usr/bin/env bash
# The whole test suite: unit and end-to-end tests, then the malformed-input and
# unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
meson test -C build --print-errorlogs --num-processes 2

# Everything built by default (the benchmarks are not): the unit and malformed suites' programs.
[ -f build-asan/build.ninja ] || meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
ninja -C build-asan
ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --no-rebuild --print-errorlogs --num-processes 2 --suite unit --suite malformed
