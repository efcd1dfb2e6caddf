#!/usr/bin/env bash
# The project's one test command (README "Run every test"; .ci/run calls exactly this).
# Builds every guest from source (installing the guest toolchain if needed, idempotently),
# installs the servers the end-to-end tests start (memcached), then runs every test: the host
# workspace (engine, sandbox, parity, executor, the memcached example end to end) and the
# policies' own native unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."
# A one-off CI build gains nothing from incremental state (hundreds of MB); local runs keep it.
if [ -n "${CI:-}" ]; then
  export CARGO_INCREMENTAL=0
fi
./scripts/build-guests.sh
./scripts/test-services.sh
cargo test --workspace --locked
(cd policies && cargo test --locked)
