#!/usr/bin/env bash
# The project's main job as far as it is built (README "Run it"): builds the example policies
# from source (installing the guest toolchain if needed), then walks failures through the
# orchestrator with native strategies and with sandboxed WebAssembly policies, then decides
# examples/decisions.jsonl with `rebound eval` and the policies of examples/rebound.toml,
# checks a WebAssembly policy with `rebound check`, and simulates a TMPFAIL storm through
# three policies side by side with `rebound simulate` (chart in build/simulate/).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build-guests.sh
cargo run --quiet -p rebound --example decide
echo
echo "rebound eval --config examples/rebound.toml examples/decisions.jsonl:"
cargo run --quiet -p rebound-cli -- eval --config examples/rebound.toml examples/decisions.jsonl
echo
echo "rebound check build/guests/retry_budget.wasm:"
cargo run --quiet -p rebound-cli -- check build/guests/retry_budget.wasm
echo
mkdir -p build/simulate
echo "rebound simulate examples/scenarios/tmpfail.toml:"
cargo run --quiet -p rebound-cli -- simulate examples/scenarios/tmpfail.toml --chart build/simulate/tmpfail.svg
