#!/usr/bin/env bash
# The release step that holds each published crate to semver against its last published
# version: cargo-semver-checks (from crates.io, built once into .tools/cargo-semver-checks)
# compares each crate's public API with the version crates.io
# has, and fails on a change the new version number does not allow. A crate crates.io does not
# have yet has nothing to be compared with and is said so. `--baseline-rev REV` compares with
# the tree at a git revision instead (to check a change before it is released).
#
#   scripts/semver-check.sh [--baseline-rev REV] [CRATE...]   (default: every published crate)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
SEMVER_CHECKS_VERSION=0.51.0
tools="$root/.tools/cargo-semver-checks"
checks="$tools/bin/cargo-semver-checks"
if ! "$checks" semver-checks --version 2>/dev/null | grep -q " $SEMVER_CHECKS_VERSION$"; then
  echo "semver: installing cargo-semver-checks $SEMVER_CHECKS_VERSION into .tools/cargo-semver-checks" >&2
  cargo install --locked --quiet --root "$tools" "cargo-semver-checks@$SEMVER_CHECKS_VERSION"
fi
baseline_rev=""
if [ "${1:-}" = "--baseline-rev" ]; then
  [ -n "${2:-}" ] || { echo "semver-check.sh: --baseline-rev needs a git revision" >&2; exit 2; }
  baseline_rev="$2"
  shift 2
fi
crates=("$@")
[ "${#crates[@]}" -gt 0 ] || crates=(rebound-core rebound-guest rebound-cli rebound-scylla \
  rebound-couchbase rebound-reqwest rebound-tonic rebound-aws)
cd "$root"
failed=()
for crate in "${crates[@]}"; do
  if [ -n "$baseline_rev" ]; then
    baseline=(--baseline-rev "$baseline_rev")
  else
    # The newest version crates.io has, if it has the crate.
    published="$( (cargo info "$crate" --registry crates-io 2>/dev/null || true) |
      sed -n 's/^version: \([^ ]*\).*/\1/p' | head -1)"
    if [ -z "$published" ]; then
      echo "semver: $crate is not on crates.io yet: nothing to compare it with"
      continue
    fi
    baseline=(--baseline-version "$published")
  fi
  echo "semver: $crate against ${baseline[*]}"
  "$checks" semver-checks check-release -p "$crate" "${baseline[@]}" || failed+=("$crate")
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "semver-check.sh: ${failed[*]} changed its API beyond what its version allows" >&2
  exit 1
fi
