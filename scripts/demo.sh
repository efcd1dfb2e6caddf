#!/usr/bin/env bash
# The project's main job as far as it is built: walks failures through the orchestrator and
# prints the decisions (README "Run it").
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet -p rebound --example decide
