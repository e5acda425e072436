#!/usr/bin/env bash
# Every C++ file of the tree is as clang-format writes it (.clang-format; Debian 12's clang-format 14).
# Prints the files that are not and fails; `clang-format -i FILE` formats one. The C kernels and host
# programs are not checked (tests name their source lines).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.hpp')
bad=()
for f in "${files[@]}"; do
  clang-format --style=file --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "check-format: ${#bad[@]} C++ files are not as clang-format writes them (clang-format -i FILE):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: all ${#files[@]} C++ files as clang-format writes them"
