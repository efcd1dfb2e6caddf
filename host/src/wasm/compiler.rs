//! Where a runtime compiles components: on the calling thread (the default), or through a
//! [`ComponentCompiler`] the application installs. `rebound serve` installs one that compiles
//! in a child process bounded in time and memory, so that a pathological component cannot
//! take the server's memory, and what compiling allocated goes back to the system when the
//! child exits.

use super::engine_error::EngineError;
use super::settings::Optimization;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// What a runtime's engine is made from, and so what its machine code depends on: a compiler
/// making artifacts for a runtime builds its engine from these ([`precompile`](Self::precompile)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EngineSettings {
    /// The largest linear memory an instance may have, in bytes.
    pub max_memory_bytes: u64,
    /// How Cranelift optimises.
    pub optimization: Optimization,
    /// Component instances the engine's pool holds.
    pub instances: u32,
    /// Whether the engine supports the component model's concurrency, which a component that
    /// imports WASI 0.3 needs (docs/wasi.md "WASI 0.3"). Off unless such a component asks: it
    /// adds to what every call on the engine costs (docs/performance.md "WebAssembly
    /// decisions").
    pub concurrency: bool,
}

impl EngineSettings {
    /// The settings of a runtime whose instances may hold up to `max_memory_bytes` each,
    /// compiled with `optimization`, with a pool of `instances` (at least 2).
    pub fn new(max_memory_bytes: u64, optimization: Optimization, instances: u32) -> Self {
        EngineSettings {
            max_memory_bytes,
            optimization,
            instances: instances.max(2),
            concurrency: false,
        }
    }

    /// These settings with the component model's concurrency supported.
    pub fn with_concurrency(self) -> Self {
        EngineSettings {
            concurrency: true,
            ..self
        }
    }

    /// The wasmtime configuration of an engine with these settings.
    pub(crate) fn config(&self) -> Config {
        let instances = self.instances.max(2);
        let mut pooling = PoolingAllocationConfig::default();
        pooling
            .total_component_instances(instances)
            .total_core_instances(instances.saturating_mul(8))
            .total_memories(instances.saturating_mul(2))
            .total_tables(instances.saturating_mul(8))
            .max_memory_size(usize::try_from(self.max_memory_bytes).unwrap_or(usize::MAX));
        let mut config = Config::new();
        config
            .wasm_component_model(true)
            .consume_fuel(true)
            .epoch_interruption(true)
            .concurrency_support(self.concurrency)
            .max_wasm_stack(512 << 10)
            .cranelift_opt_level(match self.optimization {
                Optimization::None => wasmtime::OptLevel::None,
                Optimization::Speed => wasmtime::OptLevel::Speed,
            })
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));
        config
    }

    /// wasmtime's artifact of component `bytes` for an engine with these settings: what a
    /// [`ComponentCompiler`] returns. The error is wasmtime's explanation.
    pub fn precompile(&self, bytes: &[u8]) -> Result<Vec<u8>, EngineError> {
        let engine = Engine::new(&self.config()).map_err(|e| EngineError::of(&e))?;
        engine
            .precompile_component(bytes)
            .map_err(|e| EngineError::of(&e))
    }
}

/// Compiles components for a runtime ([`WasmRuntime::set_compiler`](super::WasmRuntime::set_compiler)).
///
/// # Safety
///
/// The runtime loads what [`compile`](Self::compile) returns as machine code, which wasmtime
/// checks only for its format and engine settings: an implementation must return only what
/// [`EngineSettings::precompile`] made from `bytes` for `settings`, in this process or in
/// another running the same build of this crate.
pub unsafe trait ComponentCompiler: Send + Sync + std::fmt::Debug {
    /// The artifact of component `bytes` for an engine with `settings`, or why there is none
    /// (a limit it passed, wasmtime's refusal).
    fn compile(&self, settings: &EngineSettings, bytes: &[u8]) -> Result<Vec<u8>, EngineError>;
}
