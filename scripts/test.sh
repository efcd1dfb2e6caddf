#!/usr/bin/env bash
# The project's one test command (README "Run every test"; .ci/run calls exactly this).
# Installs what the tests need (idempotently), then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked
