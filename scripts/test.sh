#!/usr/bin/env bash
# The project's one test command (README "Run every test"; .ci/run calls exactly this).
# While it works, the servers the end-to-end tests start (memcached, an OCI registry, podman)
# and the guest toolchains are installed in the background, idempotently. First the gates a
# reader relies on: formatting, the structure (file sizes, import cycles), the supply chain
# (licenses, bans and sources of the locked packages), clippy with warnings
# denied (functions of at most 80 lines among them), the docs without warnings (also as docs.rs
# builds them, with every feature marked), the
# library built with each of its features alone and with none, the loom models, and the
# registry's tests in a build without wasm. Then it compiles the tests,
# builds every guest from source with the `rebound` binary just compiled (`rebound build`), and
# runs every test: the host workspace (engine, sandbox, parity, executor, the memcached example
# end to end, the binary) and the policies' own native unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."
# A one-off CI build gains nothing from incremental state (hundreds of MB); local runs keep it.
# CI's disk is also the scarcest thing it has: its binaries carry no debug info (a panic still
# names its file and line), and the gates below build into a directory of their own
# that is removed once they pass (their check-mode metadata and the build without wasm serve
# nothing after them). Local runs share one target directory, so a second run starts warm.
gates_dir=target
if [ -n "${CI:-}" ]; then
  export CARGO_INCREMENTAL=0
  export CARGO_PROFILE_DEV_STRIP=debuginfo
  gates_dir=target/gates
fi

# Each step says when it began, so a slow step shows in the log.
step() { printf '\n== %s (at %dm%02ds)\n' "$*" $((SECONDS / 60)) $((SECONDS % 60)); }

step "build dependencies (OpenSSL for the Couchbase SDK)"
./scripts/build-deps.sh

step "test services and guest toolchains: installing beside the builds below (log: target/setup.log)"
# Package downloads and installs wait on the network and the disk more than on the processors,
# so they overlap the compilation steps; the guests step waits for them.
mkdir -p target
(./scripts/test-services.sh && ./scripts/guest-toolchain.sh && ./scripts/polyglot-toolchain.sh) \
  >target/setup.log 2>&1 &
setup=$!

step "formatting (cargo fmt --check: the workspace, the policies, the test guests)"
cargo fmt --all --check
(cd policies && cargo fmt --all --check)
(cd tests/guests && cargo fmt --all --check)
# Formatting only: building this bench compiles a second wasmtime (docs/performance.md).
(cd benches/extism-compare && cargo fmt --check)

step "structure: no source file over 500 lines, no import cycle between a crate's modules"
python3 scripts/check-structure.py host/src cli/src adapters/*/src guest-sdk/src examples/*/src

step "supply chain: the locked packages' licenses, bans and sources (cargo-deny, deny.toml)"
./scripts/supply-chain.sh

step "clippy, warnings denied (every target of the workspace; no function over 80 lines)"
cargo clippy --workspace --all-targets --locked --target-dir "$gates_dir" -- -D warnings

step "each feature of the library alone, and none"
for features in "" executor tower tower-retry http wasm registry oci otlp xds; do
  echo "rebound --no-default-features --features '$features'"
  cargo clippy -p rebound-core --no-default-features --features "$features" --locked \
    --target-dir "$gates_dir" -- -D warnings
done
# The workspace's targets build the guest SDK with `hedging` (its tests ask for it, so the
# guide's hedging example runs with the other tests): here it is checked without.
echo "rebound-guest without hedging"
cargo clippy -p rebound-guest --locked --target-dir "$gates_dir" -- -D warnings

step "loom models of the retry budget's atomics (every interleaving of two threads)"
# A target directory of its own: the cfg changes every artifact's hash.
RUSTFLAGS="--cfg loom -D warnings" cargo test -p rebound-core --no-default-features --lib --release \
  --locked --target-dir target/loom loom_models
[ -z "${CI:-}" ] || rm -rf target/loom

step "the registry without wasm: built-ins decide, a component is refused naming the feature"
# Its own build: in the workspace's, another member turns `wasm` on.
cargo test -p rebound-core --no-default-features --features registry --lib --locked \
  --target-dir "$gates_dir"

step "the Rust the workspace claims to need (rust-version, CONTRIBUTING.md)"
msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)
running=$(rustc --version | cut -d' ' -f2)
if [ "$running" = "$msrv" ] || [ "${running%.*}" = "$msrv" ]; then
  echo "rustc $running is the MSRV ($msrv): every step above and below checks it"
elif rustup toolchain list 2>/dev/null | grep -q "^$msrv"; then
  cargo "+$msrv" check --workspace --all-targets --locked --target-dir "$gates_dir/msrv"
else
  echo "test.sh: rustc $running is newer than the MSRV $msrv, and no $msrv toolchain is installed: the MSRV is not checked here (rustup toolchain install $msrv)"
fi

step "API docs, warnings denied: with the default features, and as docs.rs builds them"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --lib --locked --target-dir "$gates_dir"
# docs.rs builds every feature with a nightly compiler and marks each item a feature gates
# (`doc_cfg`); RUSTC_BOOTSTRAP lets this compiler do the same, so the marks are checked here. A
# directory of its own: build scripts that probe for a nightly compiler must not see it in the
# other builds.
docs_dir="$gates_dir/docsrs"
RUSTC_BOOTSTRAP=1 RUSTDOCFLAGS="--cfg docsrs -D warnings" cargo doc --workspace --no-deps --lib \
  --all-features --locked --target-dir "$docs_dir"
marks_missing() { echo "test.sh: $1 shows no feature marks (doc_cfg)" >&2; exit 1; }
grep -q 'Available on crate feature `registry` only' "$docs_dir/doc/rebound/index.html" ||
  marks_missing "rebound's API index"
grep -q 'Available on <strong>crate feature <code>hedging' \
  "$docs_dir/doc/rebound_guest/trait.Policy.html" || marks_missing "rebound_guest::Policy"
[ "$gates_dir" = target ] || rm -rf "$gates_dir"

step "tests compiled (the rebound binary with them)"
cargo test --workspace --locked --no-run

step "test services and guest toolchains installed"
setup_status=0
wait "$setup" || setup_status=$?
cat target/setup.log
[ "$setup_status" = 0 ] || { echo "test.sh: installing the test services or the guest toolchains failed" >&2; exit 1; }

step "guests (built by that binary's \`rebound build\`)"
REBOUND=target/debug/rebound ./scripts/build-guests.sh

step "tests"
cargo test --workspace --locked --no-fail-fast
(cd policies && cargo test --locked)
step "done"
