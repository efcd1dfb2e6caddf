//! The policy registry: every configured name maps to an atomically replaceable active
//! version. Deciding resolves the request's policy (per-request name, profile, request-type
//! and service routes, default) and reads its active version without locks; changes (reload,
//! rollback, shadow, promote, a new configuration) build the new state off the deciding path
//! and publish it with one atomic swap.

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use arc_swap::ArcSwap;

use super::compile_ahead::CompileAhead;
use super::config::{CacheDir, RegistryConfig};
use super::error::RegistryError;
use super::isolation::Isolation;
use super::reload_path::ReloadPath;
use super::table::{build_table, Failed, Table};
use super::version::{BuildContext, Credentials};
use crate::wasm::{ArtifactCache, EngineSettings, SandboxLimits, TickerPriority, WasmRuntime};

mod deciding;
mod lifecycle;

pub use deciding::Decided;

/// Named policies, each with an atomically replaceable active version.
pub struct PolicyRegistry {
    runtime: WasmRuntime,
    cache: Option<ArtifactCache>,
    ahead: CompileAhead,
    /// `[engine] max_component_bytes`, fixed at start.
    max_component_bytes: u64,
    table: ArcSwap<Table>,
    /// Serialises changes; deciding never takes it.
    writer: Mutex<()>,
    config_error: Mutex<Option<String>>,
    config_reload_failures: AtomicU64,
    isolation: Option<Isolation>,
    /// How OCI registries are reached.
    credentials: Credentials,
    /// Whether the watcher's reload thread runs, and the reload steps that panicked.
    pub(crate) reload_path: ReloadPath,
}

impl std::fmt::Debug for PolicyRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyRegistry")
            .field("policies", &self.table.load().config.policies.keys())
            .finish_non_exhaustive()
    }
}

impl PolicyRegistry {
    /// Reads the configuration file at `path` and loads every policy in it.
    pub fn from_file(path: &Path) -> Result<Self, RegistryError> {
        Self::new(RegistryConfig::load(path)?)
    }

    /// Loads every policy of `config` in a new engine set up as its `[engine]` table says.
    pub fn new(config: RegistryConfig) -> Result<Self, RegistryError> {
        let runtime = Self::runtime_for(&config)?;
        Self::with_runtime(config, runtime)
    }

    /// The engine [`new`](Self::new) makes for `config`, for an application that sets it up
    /// further (a [`ComponentCompiler`](crate::wasm::ComponentCompiler), say) before
    /// [`with_runtime`](Self::with_runtime).
    pub fn runtime_for(config: &RegistryConfig) -> Result<WasmRuntime, RegistryError> {
        let engine = &config.engine;
        let runtime = WasmRuntime::with_pool(
            Self::max_memory_bytes(config),
            engine.optimization,
            engine.pool,
        )
        .map_err(|e| RegistryError::Engine(format!("{e:#}")))?;
        // A new runtime's ticker is scheduled as the default asks already.
        if let Some(wanted) = engine
            .ticker_priority
            .filter(|p| *p != TickerPriority::default())
        {
            runtime.set_ticker_priority(wanted);
        }
        Ok(runtime)
    }

    /// What the engine [`runtime_for`](Self::runtime_for) makes for `config` is made from:
    /// the settings a component is compiled ahead for (`rebound push --precompile`).
    pub fn engine_settings(config: &RegistryConfig) -> EngineSettings {
        EngineSettings::new(
            Self::max_memory_bytes(config),
            config.engine.optimization,
            config.engine.pool.instances,
        )
    }

    /// The largest linear memory `config` gives an instance: its `[engine]` setting, or the
    /// largest of its policies' limits.
    fn max_memory_bytes(config: &RegistryConfig) -> u64 {
        config.engine.max_memory_bytes.unwrap_or_else(|| {
            config
                .policies
                .values()
                .map(|p| p.limits.memory_bytes)
                .chain([SandboxLimits::default().memory_bytes])
                .max()
                .unwrap_or_default()
        })
    }

    /// Loads every policy of `config` in `runtime`, reaching OCI registries anonymously
    /// (see `with_credentials`, feature `oci`).
    pub fn with_runtime(
        config: RegistryConfig,
        runtime: WasmRuntime,
    ) -> Result<Self, RegistryError> {
        Self::build(config, runtime, Credentials::default())
    }

    /// Loads every policy of `config` in `runtime`, reaching OCI registries with
    /// `credentials` (at start and at every reload).
    #[cfg(feature = "oci")]
    pub fn with_credentials(
        config: RegistryConfig,
        runtime: WasmRuntime,
        credentials: super::oci_credentials::RegistryCredentials,
    ) -> Result<Self, RegistryError> {
        Self::build(config, runtime, credentials)
    }

    fn build(
        config: RegistryConfig,
        runtime: WasmRuntime,
        credentials: Credentials,
    ) -> Result<Self, RegistryError> {
        let cache = match &config.cache_dir {
            Some(CacheDir::Configured(dir)) => Some(ArtifactCache::open(dir, runtime.engine())?),
            Some(CacheDir::UserDefault(dir)) => ArtifactCache::open_or_warn(dir, runtime.engine()),
            None => None,
        };
        let cache = cache.map(|cache| cache.with_max_bytes(config.cache_max_bytes));
        let ahead = CompileAhead::default();
        let max_component_bytes = config.engine.max_component_bytes();
        let ctx = BuildContext {
            runtime: &runtime,
            cache: cache.as_ref(),
            ahead: &ahead,
            max_component_bytes,
            credentials: &credentials,
        };
        let isolation = (config.engine.isolation)
            .filter(|isolation| isolation.threads > 0)
            .map(Isolation::new)
            .transpose()?;
        let failed = if config.strict_start {
            Failed::Refuse
        } else {
            Failed::StandIn
        };
        let table = build_table(&ctx, config, None, failed)?;
        Ok(PolicyRegistry {
            runtime,
            cache,
            ahead,
            max_component_bytes,
            table: ArcSwap::from_pointee(table),
            writer: Mutex::new(()),
            config_error: Mutex::new(None),
            config_reload_failures: AtomicU64::new(0),
            isolation,
            credentials,
            reload_path: ReloadPath::default(),
        })
    }

    /// The engine the policies run in (for components loaded beside the registry's).
    pub fn runtime(&self) -> &WasmRuntime {
        &self.runtime
    }

    /// The compiled-artifact cache, if the configuration names one.
    pub fn cache(&self) -> Option<&ArtifactCache> {
        self.cache.as_ref()
    }

    /// The running configuration.
    pub fn config(&self) -> RegistryConfig {
        self.table.load().config.clone()
    }

    fn build_context(&self) -> BuildContext<'_> {
        BuildContext {
            runtime: &self.runtime,
            cache: self.cache.as_ref(),
            ahead: &self.ahead,
            max_component_bytes: self.max_component_bytes,
            credentials: &self.credentials,
        }
    }
}
