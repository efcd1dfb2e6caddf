#!/usr/bin/env bash
# Builds every guest from source into build/guests/: the Rust policies (policies/) and the
# adversarial test guests (tests/guests/) as components, the WAT test components, and the
# Python, JavaScript, C and Zig policies (policies/<language>/NAME.<ext> ->
# build/guests/<language>_NAME.wasm; rebuilt only when the source or the WIT changed).
# Installs the toolchains first (scripts/guest-toolchain.sh, scripts/polyglot-toolchain.sh,
# both idempotent). Both Rust guest workspaces share one target directory, so std is built
# once.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source scripts/guest-toolchain.sh
source scripts/polyglot-toolchain.sh
out="$root/build/guests"
target="$root/build/guest-target"
mkdir -p "$out"

build_workspace() { # manifest dir
  echo "building guests in $1" >&2
  # shellcheck disable=SC2086
  (cd "$1" && CARGO_TARGET_DIR="$target" $GUEST_CARGO build --release --quiet \
      --target wasm32-unknown-unknown $GUEST_CARGO_FLAGS)
}
build_workspace policies
build_workspace tests/guests

for module in "$target"/wasm32-unknown-unknown/release/*.wasm; do
  name="$(basename "$module" .wasm)"
  case "$name" in
    # An Extism plugin is a core module with Extism's ABI, not a component
    # (benches/extism-compare compares the two).
    extism_*) cp "$module" "$out/$name.wasm" ;;
    *) "$WASM_TOOLS" component new "$module" -o "$out/$name.wasm" ;;
  esac
done
for wat in tests/guests/wat/*.wat; do
  "$WASM_TOOLS" parse "$wat" -o "$out/$(basename "$wat" .wat).wasm"
done
# Whether $1 is missing or older than any of the other files.
stale() {
  local out="$1" input
  shift
  [ -e "$out" ] || return 0
  for input in "$@"; do [ "$input" -nt "$out" ] && return 0; done
  return 1
}
wit_files=(wit/*.wit)

for source in policies/python/*.py tests/guests/python/*.py; do
  name="$(basename "$source" .py)"
  stale "$out/python_$name.wasm" "$source" "${wit_files[@]}" || continue
  echo "building $source" >&2
  "$COMPONENTIZE_PY" -d wit -w retry-policy componentize -p "$(dirname "$source")" "$name" \
    -o "$out/python_$name.wasm" >/dev/null
done

for source in policies/javascript/*.js tests/guests/javascript/*.js; do
  name="$(basename "$source" .js)"
  stale "$out/javascript_$name.wasm" "$source" "${wit_files[@]}" || continue
  echo "building $source" >&2
  # No WASI feature: the component imports nothing but rebound:policy.
  "$COMPONENTIZE_JS" "$source" -w wit -n retry-policy -d stdio random clocks http fetch-event \
    -o "$out/javascript_$name.wasm" >/dev/null
done

# The same JavaScript sources on QuickJS: a smaller engine whose calls cost less
# (docs/policy-javascript.md "Two engines"). The host answers its WASI imports inertly
# (docs/wasi.md).
for source in policies/javascript/*.js tests/guests/javascript/*.js; do
  name="$(basename "$source" .js)"
  stale "$out/quickjs_$name.wasm" "$source" "${wit_files[@]}" || continue
  echo "building $source (QuickJS)" >&2
  "$COMPONENTIZE_QJS" --sync -w wit -n retry-policy -j "$source" -o "$out/quickjs_$name.wasm" >/dev/null
done

# C and Zig share wit-bindgen's C bindings; Zig reads them through translate-c.
bindings="$target/c-bindings"
if stale "$bindings/retry_policy.zig" "${wit_files[@]}"; then
  echo "generating C bindings of wit/ in $bindings" >&2
  mkdir -p "$bindings"
  "$WIT_BINDGEN" c wit --world retry-policy --out-dir "$bindings" >/dev/null
  $ZIG translate-c "$bindings/retry_policy.h" -target wasm32-wasi -lc >"$bindings/retry_policy.zig.tmp"
  mv "$bindings/retry_policy.zig.tmp" "$bindings/retry_policy.zig"
fi
c_bindings=("$bindings/retry_policy.c" "$bindings/retry_policy_component_type.o")

for source in policies/c/*.c; do
  name="$(basename "$source" .c)"
  stale "$out/c_$name.wasm" "$source" "$bindings/retry_policy.h" || continue
  echo "building $source" >&2
  "$CLANG" --target=wasm32-wasi -O2 -mexec-model=reactor -Wall -Werror -Wl,--strip-all \
    -I"$bindings" -o "$target/c_$name.wasm" "$source" "${c_bindings[@]}"
  "$WASM_TOOLS" component new "$target/c_$name.wasm" -o "$out/c_$name.wasm"
done

for source in policies/zig/*.zig; do
  name="$(basename "$source" .zig)"
  stale "$out/zig_$name.wasm" "$source" "$bindings/retry_policy.zig" || continue
  echo "building $source" >&2
  $ZIG build-exe -target wasm32-wasi -mexec-model=reactor -fno-entry -rdynamic -O ReleaseSmall \
    -lc --dep bindings -I"$bindings" "${c_bindings[@]}" \
    -Mroot="$source" -Mbindings="$bindings/retry_policy.zig" -femit-bin="$target/zig_$name.wasm"
  "$WASM_TOOLS" component new "$target/zig_$name.wasm" -o "$out/zig_$name.wasm"
done

echo "guests built: $(ls "$out" | wc -l) components in build/guests/" >&2
