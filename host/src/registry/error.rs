//! Why a registry operation was refused.

use super::config::ConfigError;
use super::version::BuildError;
use crate::wasm::CacheError;

/// Why a registry operation was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// No policy has this name.
    #[error("no policy named `{name}`; known policies: {known}")]
    UnknownPolicy {
        /// The name asked for.
        name: String,
        /// The configured names.
        known: String,
    },
    /// No profile has this name.
    #[error("no profile named `{name}`; known profiles: {known}")]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// The configured names.
        known: String,
    },
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
    /// The wasmtime engine could not be created.
    #[error("cannot create the WebAssembly engine: {0}")]
    Engine(String),
}
