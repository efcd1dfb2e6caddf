#!/usr/bin/env bash
# The project's one test command (README "Run every test"; .ci/run calls exactly this).
# Builds every guest from source (installing the guest toolchain if needed, idempotently),
# then runs every test: the host workspace (engine, sandbox, parity) and the policies' own
# native unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build-guests.sh
cargo test --workspace --locked
(cd policies && cargo test --locked)
