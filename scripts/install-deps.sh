#!/usr/bin/env bash
# Installs the Debian 12 packages vxreplay builds and tests with, when missing.
set -euo pipefail
pkgs=(meson ninja-build pkg-config g++ clang libclang-rt-14-dev lld python3 libelf-dev libdw-dev libcli11-dev catch2 libbenchmark-dev
  capnproto libcapnp-dev liblmdb-dev libzstd-dev libxxhash-dev librapidcheck-dev libedit-dev nlohmann-json3-dev
  libbz2-dev libncurses-dev  # the archives libdw.a and libedit.a need (meson -Dstatic_deps, the default)
  gdb-multiarch parallel)  # GNU parallel: the sweep test runs emitted jobs through it
# Xbyak: the x86-64 assembler the model's block translator emits host code with (device/jit.cpp).
[ "$(dpkg --print-architecture)" = amd64 ] && pkgs+=(libxbyak-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi
