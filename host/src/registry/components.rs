//! What running components takes beside the table of policies — the engine, the
//! compiled-artifact cache, the compiles started ahead of a reload, the isolation threads, the
//! size limit of a component file and the credentials of OCI registries — in one value that
//! exists only with the `wasm` feature: a registry of built-ins carries none of it.

use super::compile_ahead::CompileAhead;
use crate::config::{CacheDir, RegistryConfig};
use super::error::RegistryError;
use crate::isolation::Isolation;
use crate::wasm::{ArtifactCache, WasmRuntime};

/// How a registry reaches OCI registries (feature `oci`).
#[cfg(feature = "oci")]
pub(crate) type Credentials = crate::distribution::RegistryCredentials;
/// Without the `oci` feature there is no registry to reach.
#[cfg(not(feature = "oci"))]
#[derive(Debug, Default)]
pub(crate) struct Credentials {}

/// The engine and what goes with it, made once when the registry starts.
pub(crate) struct Components {
    pub(crate) runtime: WasmRuntime,
    pub(crate) cache: Option<ArtifactCache>,
    pub(crate) ahead: CompileAhead,
    pub(super) isolation: Option<Isolation>,
    /// `[engine] max_component_bytes`, fixed at start.
    pub(crate) max_component_bytes: u64,
    /// How OCI registries are reached.
    #[cfg_attr(not(feature = "oci"), allow(dead_code))]
    pub(crate) credentials: Credentials,
}

impl Components {
    /// What `config`'s components run with, in `runtime`: its cache opened, its isolation
    /// threads started.
    pub(crate) fn new(
        config: &RegistryConfig,
        runtime: WasmRuntime,
        credentials: Credentials,
    ) -> Result<Self, RegistryError> {
        let cache = match &config.cache_dir {
            Some(CacheDir::Configured(dir)) => Some(ArtifactCache::open(dir, runtime.engine())?),
            Some(CacheDir::UserDefault(dir)) => ArtifactCache::open_or_warn(dir, runtime.engine()),
            None => None,
        };
        let isolation = (config.engine.isolation)
            .filter(|isolation| isolation.threads > 0)
            .map(Isolation::new)
            .transpose()
            .map_err(RegistryError::Engine)?;
        Ok(Components {
            cache: cache.map(|cache| cache.with_max_bytes(config.cache_max_bytes)),
            runtime,
            ahead: CompileAhead::default(),
            isolation,
            max_component_bytes: config.engine.max_component_bytes(),
            credentials,
        })
    }
}
