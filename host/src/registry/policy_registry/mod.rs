//! The policy registry: every configured name maps to an atomically replaceable active
//! version. Deciding resolves the request's policy (per-request name, profile, request-type
//! and service routes, default) and reads its active version without locks; changes (reload,
//! rollback, shadow, promote, a new configuration) build the new state off the deciding path
//! and publish it with one atomic swap.

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use arc_swap::ArcSwap;

use super::build::BuildContext;
#[cfg(feature = "wasm")]
use super::components::{Components, Credentials};
use super::error::RegistryError;
use super::reload_path::ReloadPath;
use super::table::{build_table, Failed, Table};
use crate::config::RegistryConfig;
#[cfg(feature = "wasm")]
use crate::wasm::{ArtifactCache, EngineSettings, SandboxLimits, TickerPriority, WasmRuntime};

#[cfg(feature = "wasm")]
mod component_lifecycle;
mod deciding;
mod lifecycle;
mod overlay;

pub use deciding::Decided;

/// Named policies, each with an atomically replaceable active version.
pub struct PolicyRegistry {
    /// The engine and what goes with it (feature `wasm`).
    #[cfg(feature = "wasm")]
    components: Components,
    table: ArcSwap<Table>,
    /// Serialises changes; deciding never takes it.
    writer: Mutex<()>,
    config_error: Mutex<Option<String>>,
    config_reload_failures: AtomicU64,
    /// Whether the watcher's reload thread runs, and the reload steps that panicked.
    pub(crate) reload_path: ReloadPath,
    /// Policies and routes an xDS source adds to the file's, kept across reloads of it.
    overlay: Mutex<Option<crate::config::ConfigOverlay>>,
    /// Which of the overlay's tables are in effect with the configuration applied.
    precedence: Mutex<Option<crate::config::Precedence>>,
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

    /// Loads every policy of `config`, its components (feature `wasm`) in a new engine set up
    /// as its `[engine]` table says.
    pub fn new(config: RegistryConfig) -> Result<Self, RegistryError> {
        #[cfg(feature = "wasm")]
        {
            let runtime = Self::runtime_for(&config)?;
            Self::with_runtime(config, runtime)
        }
        #[cfg(not(feature = "wasm"))]
        Self::build(config)
    }

    /// The engine [`new`](Self::new) makes for `config`, for an application that sets it up
    /// further (a [`ComponentCompiler`](crate::wasm::ComponentCompiler), say) before
    /// [`with_runtime`](Self::with_runtime).
    #[cfg(feature = "wasm")]
    pub fn runtime_for(config: &RegistryConfig) -> Result<WasmRuntime, RegistryError> {
        let engine = &config.engine;
        let runtime = WasmRuntime::with_pool(
            Self::max_memory_bytes(config),
            engine.optimization,
            engine.pool,
        )
        .map_err(RegistryError::Engine)?;
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
    #[cfg(feature = "wasm")]
    pub fn engine_settings(config: &RegistryConfig) -> EngineSettings {
        EngineSettings::new(
            Self::max_memory_bytes(config),
            config.engine.optimization,
            config.engine.pool.instances,
        )
    }

    /// The largest linear memory `config` gives an instance: its `[engine]` setting, or the
    /// largest of its policies' limits.
    #[cfg(feature = "wasm")]
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
    #[cfg(feature = "wasm")]
    pub fn with_runtime(
        config: RegistryConfig,
        runtime: WasmRuntime,
    ) -> Result<Self, RegistryError> {
        let components = Components::new(&config, runtime, Credentials::default())?;
        Self::build(config, components)
    }

    /// Loads every policy of `config` in `runtime`, reaching OCI registries with
    /// `credentials` (at start and at every reload).
    #[cfg(feature = "oci")]
    pub fn with_credentials(
        config: RegistryConfig,
        runtime: WasmRuntime,
        credentials: crate::distribution::RegistryCredentials,
    ) -> Result<Self, RegistryError> {
        let components = Components::new(&config, runtime, credentials)?;
        Self::build(config, components)
    }

    fn build(
        config: RegistryConfig,
        #[cfg(feature = "wasm")] components: Components,
    ) -> Result<Self, RegistryError> {
        let failed = if config.strict_start {
            Failed::Refuse
        } else {
            Failed::StandIn
        };
        #[cfg(feature = "wasm")]
        let table = build_table(&BuildContext::of(&components), config, None, failed)?;
        #[cfg(not(feature = "wasm"))]
        let table = build_table(&BuildContext::built_ins(), config, None, failed)?;
        Ok(PolicyRegistry {
            #[cfg(feature = "wasm")]
            components,
            table: ArcSwap::from_pointee(table),
            writer: Mutex::new(()),
            config_error: Mutex::new(None),
            config_reload_failures: AtomicU64::new(0),
            reload_path: ReloadPath::default(),
            overlay: Mutex::new(None),
            precedence: Mutex::new(None),
        })
    }

    /// The engine the policies run in (for components loaded beside the registry's).
    #[cfg(feature = "wasm")]
    pub fn runtime(&self) -> &WasmRuntime {
        &self.components.runtime
    }

    /// The compiled-artifact cache, if the configuration names one.
    #[cfg(feature = "wasm")]
    pub fn cache(&self) -> Option<&ArtifactCache> {
        self.components.cache.as_ref()
    }

    /// The running configuration.
    pub fn config(&self) -> RegistryConfig {
        self.table.load().config.clone()
    }

    fn build_context(&self) -> BuildContext<'_> {
        #[cfg(feature = "wasm")]
        return BuildContext::of(&self.components);
        #[cfg(not(feature = "wasm"))]
        BuildContext::built_ins()
    }
}
