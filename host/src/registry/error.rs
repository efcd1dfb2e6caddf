//! Why a registry operation was refused ([`RegistryError`]), and why a policy version could not
//! be built ([`BuildError`]).

use crate::config::ConfigError;
use crate::decide_error::DecideError;
#[cfg(feature = "wasm")]
use crate::wasm::{CacheError, LoadError};

/// Why a registry operation was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// No policy or profile has the name given.
    #[error(transparent)]
    Unknown(#[from] DecideError),
    /// Rollback without a previous version.
    #[error("policy `{0}` has no previous version to roll back to")]
    NoPrevious(String),
    /// Promote or abandon without a shadow trial.
    #[error("policy `{0}` has no shadow candidate")]
    NoShadow(String),
    /// Reloading or shadowing a built-in policy.
    #[error("policy `{0}` is a built-in strategy: it has no file to load")]
    Builtin(String),
    /// A version could not be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The configuration was refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The compiled-artifact cache cannot be used.
    #[cfg(feature = "wasm")]
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// The decision log's file cannot be opened.
    #[error("cannot open the decision log {path}: {error}")]
    DecisionLog {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The WebAssembly engine, or the threads isolating its calls, could not be started.
    #[cfg(feature = "wasm")]
    #[error("cannot start the WebAssembly engine: {0}")]
    Engine(crate::wasm::EngineError),
    /// Policies from another source (an xDS control plane) cannot be added.
    #[error("{0}")]
    Overlay(String),
}

/// Why a version could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The component file could not be read.
    #[error("policy `{policy}`: cannot read {path}: {error}")]
    Read {
        /// The policy.
        policy: String,
        /// The file.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The component file is larger than `[engine] max_component_bytes`.
    #[error("policy `{policy}`: {path} is {size} bytes, more than the limit of {limit} bytes (`[engine] max_component_bytes`); refusing it")]
    TooLarge {
        /// The policy.
        policy: String,
        /// The file.
        path: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The component was refused (not a component, wrong world or version, forbidden
    /// imports, rejected parameters).
    #[cfg(feature = "wasm")]
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The policy is a component and this build runs none (the `wasm` feature is off).
    #[error("policy `{policy}` is a component: this build lacks rebound's `wasm` feature, which runs components")]
    ComponentsNeedWasm {
        /// The policy.
        policy: String,
    },
    /// The component could not be fetched from its OCI registry.
    #[cfg(feature = "oci")]
    #[error("policy `{policy}`: {error}")]
    Oci {
        /// The policy.
        policy: String,
        /// Why.
        error: crate::distribution::OciError,
    },
    /// The policy names an OCI component, and this build has no OCI client.
    #[error("policy `{policy}`: `component = {{ oci = … }}` needs the `oci` feature of rebound, which this build lacks")]
    OciUnsupported {
        /// The policy.
        policy: String,
    },
    /// An OCI component needs the artifact cache's directory to keep what it pulls.
    #[error("policy `{policy}`: a component from an OCI registry is kept in the artifact cache's directory, and this registry has none (`cache_dir = false`, or the directory could not be used: see the warning logged at start)")]
    OciWithoutCache {
        /// The policy.
        policy: String,
    },
    /// The component file's sha256 differs from the one the configuration pins.
    #[error("policy `{policy}`: {path} has sha256 {found}, the configuration pins {expected}; refusing it")]
    PinMismatch {
        /// The policy.
        policy: String,
        /// The file.
        path: String,
        /// The pinned digest (hex).
        expected: String,
        /// The file's digest (hex).
        found: String,
    },
    /// The configuration's `params` do not match the component's parameter schema.
    #[error(transparent)]
    Params(#[from] ConfigError),
    /// The component loaded but failed its smoke calls.
    #[error("policy `{policy}` failed its smoke call ({input}): {failure}")]
    Smoke {
        /// The policy.
        policy: String,
        /// The input that failed.
        input: String,
        /// How it failed.
        failure: String,
    },
    /// The policy's memory limit is above what the engine reserves per instance.
    #[error("policy `{policy}`: limits.memory_bytes = {asked} exceeds the engine's per-instance maximum of {max} bytes, fixed when the host started")]
    MemoryAboveEngine {
        /// The policy.
        policy: String,
        /// The configured limit.
        asked: u64,
        /// The engine's maximum.
        max: u64,
    },
}
