#!/usr/bin/env bash
# What a new application pays to build Rebound (docs/performance.md "Building an application"):
# a project outside the tree using the reqwest middleware with a built-in policy, built from a
# cold target directory (the crates' sources already downloaded) twice — with built-ins only,
# then with the adapter's `wasm` feature — and what `cargo tree` says each compiles.
# Usage: ./scripts/app-build-time.sh [PROFILE]   (PROFILE: dev, the default, or release)
set -euo pipefail
tree="$(cd "$(dirname "$0")/.." && pwd)"
profile="${1:-dev}"
app="$(mktemp -d)"
trap 'rm -rf "$app"' EXIT
mkdir -p "$app/src"
cat >"$app/Cargo.toml" <<EOF
[package]
name = "new-application"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
rebound-reqwest = { path = "$tree/adapters/reqwest" }
reqwest = { version = "0.13", default-features = false }
reqwest-middleware = { version = "0.5", default-features = false }
tokio = { version = "1", features = ["macros", "rt"] }

[features]
wasm = ["rebound-reqwest/wasm"]

[workspace]
EOF
cat >"$app/src/main.rs" <<'EOF'
use std::sync::Arc;

use rebound_reqwest::rebound::registry::{PolicyRegistry, RegistryConfig};
use rebound_reqwest::ReboundMiddleware;

const CONFIG: &str = "default_policy = \"http\"\n[watch]\nenabled = false\n[policies.http]\nbuiltin = \"http\"\n";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = RegistryConfig::parse(CONFIG, "rebound.toml".as_ref(), ".".as_ref())?;
    let registry = Arc::new(PolicyRegistry::new(config)?);
    let _client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(ReboundMiddleware::new(registry))
        .build();
    println!("ready");
    Ok(())
}
EOF
# The tree's lock: the same versions as the tree builds.
cp "$tree/Cargo.lock" "$app/Cargo.lock"
cd "$app"
cargo fetch --quiet
for features in "" wasm; do
    label="${features:-built-ins only}"
    crates=$(cargo tree -e normal --features "$features" --prefix none | sort -u | wc -l)
    heavy=$(cargo tree -e normal --features "$features" --prefix none | grep -c '^wasmtime\|^cranelift' || true)
    start=$SECONDS
    CARGO_TARGET_DIR="$app/target-${features:-builtins}" cargo build --quiet --profile "$profile" --features "$features"
    printf '%s: %d s, %s crates (wasmtime and cranelift: %s)\n' "$label" $((SECONDS - start)) "$crates" "$heavy"
done
