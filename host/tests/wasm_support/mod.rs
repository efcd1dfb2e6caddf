//! Helpers for the WebAssembly tests: the built guests and one shared runtime per test binary.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use rebound::budget::RetryBudgets;
use rebound::wasm::{LoadError, PolicyComponent, WasmRuntime, WasmStrategy, WasmStrategyConfig};

/// The component `name` built by `scripts/build-guests.sh`.
pub fn guest(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../build/guests")
        .join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: build the guests first with ./scripts/build-guests.sh (./scripts/test.sh does)",
        path.display()
    );
    path
}

/// The runtime shared by the tests of one binary (64 MiB per instance at most).
pub fn runtime() -> &'static WasmRuntime {
    static RUNTIME: OnceLock<WasmRuntime> = OnceLock::new();
    RUNTIME.get_or_init(|| WasmRuntime::new(64 << 20).expect("wasmtime engine"))
}

/// Loads guest `name` as a policy of the same name.
pub fn load(name: &str) -> Result<PolicyComponent, LoadError> {
    PolicyComponent::load_file(runtime(), name, &guest(name))
}

/// Loads guest `name` and runs it with `config`.
pub fn strategy(name: &str, config: WasmStrategyConfig) -> Arc<WasmStrategy> {
    let component = load(name).unwrap_or_else(|e| panic!("{e}"));
    Arc::new(
        WasmStrategy::new(component, config, Arc::new(RetryBudgets::new()))
            .unwrap_or_else(|e| panic!("{e}")),
    )
}
