#!/usr/bin/env bash
# The project's main job as far as it is built (README "Run it"): builds the example policies
# from source (installing the guest toolchain if needed), then walks failures through the
# orchestrator with native strategies and with sandboxed WebAssembly policies.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build-guests.sh
cargo run --quiet -p rebound --example decide
