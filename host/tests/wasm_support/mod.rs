//! Helpers for the WebAssembly tests: the built guests and one shared runtime per test binary.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use rebound::wasm::{
    ArtifactCache, LoadError, PolicyPre, WasmRuntime, WasmStrategy, WasmStrategyConfig, WitVersion,
};

/// The released versions kept as fixtures (`tests/fixtures/rebound-policy-V/`): every version
/// this host loads but the newest, whose components are built from today's source.
pub(crate) fn released_versions() -> Vec<WitVersion> {
    WitVersion::ALL
        .into_iter()
        .filter(|v| *v != WitVersion::CURRENT)
        .collect()
}

/// The name under which [`guest`] finds the fixture `name` built for `version`
/// (`tests/fixtures/rebound-policy-VERSION/`, bytes kept from the tree's history).
pub(crate) fn released(version: WitVersion, name: &str) -> String {
    format!("{RELEASED}{}/{name}", version.number())
}

/// [`released`] for `rebound:policy@0.1.0`.
pub(super) fn released_0_1_0(name: &str) -> String {
    released(WitVersion::V0_1_0, name)
}

const RELEASED: &str = "released-";

/// The component `name` built by `scripts/build-guests.sh`, or a released version's fixture
/// when `name` comes from [`released`].
pub(crate) fn guest(name: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if let Some((version, fixture)) = name
        .strip_prefix(RELEASED)
        .and_then(|rest| rest.split_once('/'))
    {
        return root
            .join(format!("../tests/fixtures/rebound-policy-{version}"))
            .join(format!("{fixture}.wasm"));
    }
    let path = root.join("../build/guests").join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: build the guests first with ./scripts/build-guests.sh (./scripts/test.sh does)",
        path.display()
    );
    path
}

/// The runtime shared by the tests of one binary (64 MiB per instance at most).
pub(crate) fn runtime() -> &'static WasmRuntime {
    static RUNTIME: OnceLock<WasmRuntime> = OnceLock::new();
    RUNTIME.get_or_init(|| WasmRuntime::new(64 << 20).expect("wasmtime engine"))
}

/// The compiled-artifact cache the test binaries share (under `build/`), so that each Python
/// or JavaScript guest, seconds to compile, is compiled once per build.
pub(super) fn cache() -> &'static ArtifactCache {
    static CACHE: OnceLock<ArtifactCache> = OnceLock::new();
    CACHE.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../build/test-artifact-cache");
        ArtifactCache::open(&dir, runtime().engine()).expect("the test artifact cache")
    })
}

/// Loads guest `name` as a policy of the same name, its machine code from the shared cache.
pub(super) fn load(name: &str) -> Result<PolicyPre, LoadError> {
    let path = guest(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    PolicyPre::load_cached(runtime(), name, &bytes, Some(cache()))
}

/// Loads guest `name` and runs it with `config`.
pub(super) fn strategy(name: &str, config: WasmStrategyConfig) -> Arc<WasmStrategy> {
    let component = load(name).unwrap_or_else(|e| panic!("{e}"));
    Arc::new(WasmStrategy::new(component, config).unwrap_or_else(|e| panic!("{e}")))
}
