#!/usr/bin/env bash
# The project's main job as far as it is built (README "Run it"): builds the example policies
# from source (installing the guest toolchain if needed), then walks failures through the
# orchestrator with native strategies and with sandboxed WebAssembly policies, then decides
# examples/decisions.jsonl with `rebound eval` and the policies of examples/rebound.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build-guests.sh
cargo run --quiet -p rebound --example decide
echo
echo "rebound eval --config examples/rebound.toml examples/decisions.jsonl:"
cargo run --quiet -p rebound-cli -- eval --config examples/rebound.toml examples/decisions.jsonl
