#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz/, built in build-fuzz by scripts/test.sh: clang, -Dfuzz=true)
# for FUZZ_SECONDS each (default 10), with a fixed seed, over a scratch copy of its checked-in
# corpus, after replaying every reproducer kept under tests/fuzz/regressions/TARGET/. Prints, per
# target, the corpus size, the reproducers replayed, how long each part ran and the executions per
# second. A crash fails the run and its input is copied to tests/fuzz/regressions/TARGET/ (commit it
# with the fix). docs/fuzzing.md.
#
# Usage: scripts/fuzz.sh [BUILD_DIR [TARGET...]]   (the targets default to every tests/fuzz/fuzz_*.cpp)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
shift || true
secs=${FUZZ_SECONDS:-10}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/fuzz_*.cpp; do
    t=$(basename "$f" .cpp)
    targets+=("${t#fuzz_}")
  done
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# Regular files under a directory that may not exist (git keeps no empty directories), one per line.
files_under() {
  if [ -d "$1" ]; then find "$1" -type f ! -name '*.md' | sort; fi
}

status=0
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/fuzz_$t"
  seeds="tests/fuzz/corpus/$t"
  regressions="tests/fuzz/regressions/$t"
  if ! [ -x "$bin" ]; then
    echo "fuzz $t: $bin is missing (configure with CC=clang CXX=clang++ and -Dfuzz=true)"
    status=1
    continue
  fi
  mapfile -t kept < <(files_under "$regressions")
  replay_start=$(date +%s.%N)
  if [ ${#kept[@]} -gt 0 ]; then
    if ! "$bin" -rss_limit_mb=2048 -timeout=30 "${kept[@]}" >"$tmp/$t-regressions.log" 2>&1; then
      echo "fuzz $t: a kept reproducer fails again:"
      tail -30 "$tmp/$t-regressions.log"
      status=1
    fi
  fi
  replay_end=$(date +%s.%N)
  mkdir -p "$tmp/$t"
  mapfile -t seed_files < <(files_under "$seeds")
  [ ${#seed_files[@]} -eq 0 ] || cp "${seed_files[@]}" "$tmp/$t/"
  start=$(date +%s.%N)
  if ! "$bin" -seed=1 -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$tmp/$t-" "$tmp/$t" >"$tmp/$t.log" 2>&1; then
    echo "fuzz $t: FAILED; the log's end:"
    tail -40 "$tmp/$t.log"
    mkdir -p "$regressions"
    for a in "$tmp/$t"-crash-* "$tmp/$t"-leak-* "$tmp/$t"-timeout-* "$tmp/$t"-oom-*; do
      if [ -e "$a" ]; then
        cp "$a" "$regressions/"
        echo "fuzz $t: reproducer kept as $regressions/$(basename "$a")"
      fi
    done
    status=1
  fi
  end=$(date +%s.%N)
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$tmp/$t.log" | grep -o '[0-9]*$' || true)
  corpus=$(find "$tmp/$t" -type f | wc -l)
  awk -v t="$t" -v s="${#seed_files[@]}" -v k="${#kept[@]}" -v c="$corpus" -v r="${runs:-0}" \
      -v ra="$replay_start" -v rb="$replay_end" -v a="$start" -v b="$end" 'BEGIN {
    d = b - a
    printf "fuzz %s: %d reproducers replayed in %.1f s; corpus %d seed inputs, grew to %d; fuzzed %.1f s, %d executions, %.0f per second\n",
      t, k, rb - ra, s, c, d, r, (d > 0 ? r / d : 0) }'
done
exit $status
