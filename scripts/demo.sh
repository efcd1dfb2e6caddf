#!/usr/bin/env bash
# The project's main job (README "On a fresh machine"). It builds what its steps run and nothing
# else: the `rebound` binary and the walk-through example in one cargo invocation (one build of
# their shared dependencies), and from source the three Rust policies the steps load
# (installing the Rust guest toolchain if needed; the other languages' toolchains and guests
# belong to the test command). Then it walks failures through the orchestrator with native
# strategies and with sandboxed WebAssembly policies, decides examples/decisions.jsonl with
# `rebound eval` and the policies of examples/rebound.toml, checks a WebAssembly policy with
# `rebound check`, and simulates a TMPFAIL storm through three policies side by side with
# `rebound simulate` (chart in build/simulate/). Each step says when it began.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s (at %dm%02ds)\n' "$*" $((SECONDS / 60)) $((SECONDS % 60)); }

# The policies the steps load: decide.rs loads no_retry_for_robots and adversary,
# examples/rebound.toml names no_retry_for_robots and retry_budget, and `rebound check` below
# checks retry_budget.
policies=(policies/no-retry-for-robots policies/retry-budget tests/guests/adversary)

step "building the rebound binary and the walk-through example; beside it, the policies' std and dependencies"
# `rebound build` runs cargo on each policy crate; the same cargo command run here first, while
# the host builds, leaves it only the component step. The guest toolchain's installs wait on
# the network, and std for wasm32 builds with one codegen unit on one processor, so both share
# the machine well with the host's build.
(
  source scripts/guest-toolchain.sh
  toolchain_wasm_tools
  toolchain_rust
  export CARGO_TARGET_DIR="$PWD/build/guest-target"
  for policy in "${policies[@]}"; do
    # shellcheck disable=SC2086
    $GUEST_CARGO build --quiet --release --target wasm32-unknown-unknown \
      --manifest-path "$policy/Cargo.toml" $GUEST_CARGO_FLAGS
  done
) &
guest_dependencies=$!
cargo build --locked --quiet -p rebound-cli -p rebound-core --bins --example decide
rebound=target/debug/rebound
wait "$guest_dependencies"

step "the policies the steps load, as components (rebound build)"
REBOUND="$rebound" ./scripts/build-guests.sh "${policies[@]}"

step "the orchestrator, native strategies and WebAssembly policies (host/examples/decide.rs)"
target/debug/examples/decide

step "rebound eval --config examples/rebound.toml examples/decisions.jsonl"
"$rebound" eval --config examples/rebound.toml examples/decisions.jsonl

step "rebound check build/guests/retry_budget.wasm"
"$rebound" check build/guests/retry_budget.wasm

step "rebound simulate examples/scenarios/tmpfail.toml"
mkdir -p build/simulate
"$rebound" simulate examples/scenarios/tmpfail.toml --chart build/simulate/tmpfail.svg
step "done"
