#!/usr/bin/env bash
# Builds every guest from source into build/guests/: the Rust policies (policies/) and the
# adversarial test guests (tests/guests/) as components, and the WAT test components.
# Installs the toolchain first (scripts/guest-toolchain.sh, idempotent). Both guest
# workspaces share one target directory, so std is built once.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source scripts/guest-toolchain.sh
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
  "$WASM_TOOLS" component new "$module" -o "$out/$name.wasm"
done
for wat in tests/guests/wat/*.wat; do
  "$WASM_TOOLS" parse "$wat" -o "$out/$(basename "$wat" .wat).wasm"
done
echo "guests built: $(ls "$out" | wc -l) components in build/guests/" >&2
