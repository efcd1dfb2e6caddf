#!/usr/bin/env bash
# Sets up (idempotently, pinned versions) the toolchains that build policies written in Python,
# JavaScript, C and Zig, and exports how to call them. Sourced by build-guests.sh; run it
# directly to install. Routes (shared/TOOLCHAINS.md):
#   Python      componentize-py (PyPI) into .tools/venv
#   JavaScript  componentize-js (SpiderMonkey) and componentize-qjs (QuickJS) (npm, with
#               scripts/js-toolchain/package-lock.json) into .tools/node
#   C           wit-bindgen-cli (crates.io, cargo install into ~/.cache/rebound-tools/cargo)
#               + Debian's clang-14
#   Zig         ziglang (PyPI) into .tools/venv, with the same C bindings
# Exports: COMPONENTIZE_PY, COMPONENTIZE_JS, COMPONENTIZE_QJS, WIT_BINDGEN, CLANG, ZIG (command as a string).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
COMPONENTIZE_PY_VERSION=0.25.1
ZIGLANG_VERSION=0.17.0
WIT_BINDGEN_VERSION=0.63.0
C_DEBIAN_PACKAGES=(clang-14 lld-14 libclang-rt-14-dev-wasm32 wasi-libc)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
note() { echo "polyglot toolchain: $*" >&2; }

venv="$root/.tools/venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if [ "$("$venv/bin/componentize-py" --version 2>/dev/null | awk '{print $2}')" != "$COMPONENTIZE_PY_VERSION" ] \
  || [ "$("$venv/bin/python" -m ziglang version 2>/dev/null)" != "$ZIGLANG_VERSION" ]; then
  note "installing componentize-py $COMPONENTIZE_PY_VERSION and ziglang $ZIGLANG_VERSION into .tools/venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    "componentize-py==$COMPONENTIZE_PY_VERSION" "ziglang==$ZIGLANG_VERSION"
fi
export COMPONENTIZE_PY="$venv/bin/componentize-py" ZIG="$venv/bin/python -m ziglang"

# `npm install` with the committed lock, not `npm ci`: some packages list optional platform
# binaries that the registry does not have, which `npm ci` refuses as an out-of-sync lock.
node_dir="$root/.tools/node"
lock="$root/scripts/js-toolchain/package-lock.json"
if ! cmp -s "$lock" "$node_dir/.installed-lock.json" \
  || [ ! -x "$node_dir/node_modules/.bin/componentize-js" ] \
  || [ ! -x "$node_dir/node_modules/.bin/componentize-qjs" ]; then
  note "installing componentize-js and componentize-qjs (scripts/js-toolchain/package-lock.json) into .tools/node"
  mkdir -p "$node_dir"
  cp "$root/scripts/js-toolchain/package.json" "$lock" "$node_dir/"
  (cd "$node_dir" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$lock" "$node_dir/.installed-lock.json"
fi
export COMPONENTIZE_JS="$node_dir/node_modules/.bin/componentize-js"
export COMPONENTIZE_QJS="$node_dir/node_modules/.bin/componentize-qjs"

# Built from source, so kept per user rather than per checkout: a fresh clone on a machine
# that has built it once reuses it.
cargo_root="${XDG_CACHE_HOME:-$HOME/.cache}/rebound-tools/cargo"
if [ "$("$cargo_root/bin/wit-bindgen" --version 2>/dev/null | awk '{print $2}')" != "$WIT_BINDGEN_VERSION" ]; then
  note "installing wit-bindgen-cli $WIT_BINDGEN_VERSION into $cargo_root (about 3 minutes, once per user)"
  cargo install --quiet --locked "wit-bindgen-cli@$WIT_BINDGEN_VERSION" --root "$cargo_root"
fi
export WIT_BINDGEN="$cargo_root/bin/wit-bindgen"

if ! dpkg -s "${C_DEBIAN_PACKAGES[@]}" >/dev/null 2>&1; then
  note "installing Debian's ${C_DEBIAN_PACKAGES[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${C_DEBIAN_PACKAGES[@]}" >/dev/null
fi
export CLANG=clang-14
