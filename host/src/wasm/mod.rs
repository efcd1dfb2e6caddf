//! WebAssembly strategies: a policy component implementing the WIT world
//! `rebound:policy/retry-policy` runs in a wasmtime sandbox behind the same
//! [`RetryStrategy`](crate::RetryStrategy) trait as the native strategies.
//!
//! The sandbox's and the engine's settings ([`SandboxLimits`], [`FailSafe`],
//! [`QuarantineConfig`], [`WasiConfig`], [`PoolConfig`], [`Optimization`], [`TickerPriority`])
//! are plain values, there with the `registry` feature alone so that a configuration reads the
//! same in every build; what runs components needs the `wasm` feature (wasmtime):
//!
//! - [`WasmRuntime`]: one engine (component model, pooling allocator, fuel, epoch
//!   interruption) and the epoch ticker that enforces wall-clock deadlines.
//! - [`WasiConfig`]: the inert WASI 0.2 a policy's language runtime may import (no files, no
//!   network, no environment; clocks and randomness as configured).
//! - [`PolicyPre`]: a compiled, checked, pre-instantiated component. Loading rejects a
//!   component of the wrong world or of a package version the host does not load, and one
//!   that imports anything the host does not grant (no real files, network or environment).
//! - [`WitVersion`]: the released versions of `rebound:policy`; the host keeps one set of
//!   bindings per version, so components built for any of them keep loading.
//! - [`WasmStrategy`]: the strategy. Each call runs under a deadline, a fuel budget and a
//!   memory cap; any failure yields the configured fail-safe, discards the instance, and
//!   repeated failures quarantine the policy.
//! - [`ArtifactCache`]: compiled components on disk, keyed by component and engine;
//!   [`CompiledArtifact`]: one compiled ahead of time, to ship beside its component.

/// Items of the engine: built with the `wasm` feature only.
macro_rules! engine {
    ($($item:item)*) => { $(#[cfg(feature = "wasm")] $item)* };
}

/// Items the registry's isolation and lifecycle use: with the `wasm` and `registry` features.
macro_rules! engine_for_registry {
    ($($item:item)*) => { $(#[cfg(all(feature = "wasm", feature = "registry"))] $item)* };
}

engine! {
    mod alarm;
    mod artifact;
    mod bindings;
    mod cache;
    mod call;
    mod call_watch;
    mod compiler;
    mod component;
    mod config;
    mod deadline;
    mod engine_error;
    mod health;
    mod hedging;
    mod host_trap;
    mod imports;
    mod instance;
    mod io_hand_off;
    mod metadata;
    mod on_fiber;
    mod policy_label;
    mod pool;
    mod runtime;
    mod store;
    mod strategy;
    mod ticker_priority;
    mod wasi;
    mod world;
    mod wit_version;
    mod hedging_calls;

    pub use artifact::CompiledArtifact;
    pub use cache::{ArtifactCache, CacheError, CacheStats};
    pub use compiler::{ComponentCompiler, EngineSettings};
    pub use component::{CodeOrigin, LoadError, PolicyPre, HOST_PACKAGE};
    pub use config::WasmStrategyConfig;
    pub use engine_error::EngineError;
    pub use metadata::{ParamKind, ParamSpec, PolicyMetadata, METADATA_SECTION};
    pub use runtime::WasmRuntime;
    pub use strategy::WasmStrategy;
    pub use wit_version::WitVersion;
}

engine_for_registry! {
    pub(crate) use call_watch::CallWatch;
    pub(crate) use component::{read_metadata, MachineCode};
    pub(crate) use deadline::{Due, MOST_PAST_DEADLINE};
}

mod builders;
mod settings;

pub use settings::{
    FailSafe, Optimization, PolicyStats, PoolConfig, QuarantineConfig, SandboxLimits,
    TickerPriority, WasiClocks, WasiConfig, WasiRandom, DEFAULT_CACHE_MAX_BYTES,
};
