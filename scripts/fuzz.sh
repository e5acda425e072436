#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz/, built in build-fuzz by scripts/test.sh: clang, -Dfuzz=true)
# for FUZZ_SECONDS each (default 10), with a fixed seed, over a scratch copy of its checked-in
# corpus, after replaying every reproducer kept under tests/fuzz/regressions/TARGET/. Prints each
# target's corpus, how long it ran and its executions per second. A crash fails the run and its
# input is copied to tests/fuzz/regressions/TARGET/ (commit it with the fix). docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
secs=${FUZZ_SECONDS:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
status=0
for t in cmdbuf image command launch store gdb_packet; do
  bin="$build/tests/fuzz/fuzz_$t"
  seeds="tests/fuzz/corpus/$t"
  regressions="tests/fuzz/regressions/$t"
  if ! [ -x "$bin" ]; then
    echo "fuzz $t: $bin is missing (configure with CC=clang CXX=clang++ and -Dfuzz=true)"
    status=1
    continue
  fi
  kept=$(find "$regressions" -type f 2>/dev/null | wc -l)
  if [ "$kept" -gt 0 ]; then
    if ! "$bin" $(find "$regressions" -type f) >"$tmp/$t-regressions.log" 2>&1; then
      echo "fuzz $t: a kept reproducer fails again:"
      tail -30 "$tmp/$t-regressions.log"
      status=1
    fi
  fi
  mkdir -p "$tmp/$t"
  cp "$seeds"/* "$tmp/$t/"
  n_seeds=$(find "$seeds" -type f | wc -l)
  start=$(date +%s.%N)
  if ! "$bin" -seed=1 -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$tmp/$t-" "$tmp/$t" >"$tmp/$t.log" 2>&1; then
    echo "fuzz $t: FAILED; the log's end:"
    tail -40 "$tmp/$t.log"
    mkdir -p "$regressions"
    for a in "$tmp/$t"-crash-* "$tmp/$t"-leak-* "$tmp/$t"-timeout-* "$tmp/$t"-oom-*; do
      [ -e "$a" ] && cp "$a" "$regressions/" && echo "fuzz $t: reproducer kept as $regressions/$(basename "$a")"
    done
    status=1
  fi
  end=$(date +%s.%N)
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$tmp/$t.log" | grep -o '[0-9]*$' || echo 0)
  corpus=$(find "$tmp/$t" -type f | wc -l)
  awk -v t="$t" -v s="$n_seeds" -v k="$kept" -v c="$corpus" -v r="$runs" -v a="$start" -v b="$end" 'BEGIN {
    d = b - a; printf "fuzz %s: %d seed inputs, %d kept reproducers, corpus grew to %d; ran %.1f s, %d executions, %.0f per second\n",
      t, s, k, c, d, r, (d > 0 ? r / d : 0) }'
done
exit $status
