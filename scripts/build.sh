#!/usr/bin/env bash
# Installs what is missing, configures build/ once, and builds everything.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build
meson compile -C build
