//! A policy version: one loaded, validated build of a named policy (built-in or component),
//! with its content hash, source and load time. Versions are immutable; the registry swaps
//! whole versions, so a decision always runs on exactly one of them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use metrics::SharedString;

use super::error::BuildError;
use super::stand_in::StandIn;
use crate::config::BuiltinPolicy;
use crate::config::{PolicyDefinition, PolicySource};
use crate::decision_log::LoggedVersion;
use crate::rules::Guard;
use crate::strategy::RetryStrategy;
#[cfg(feature = "wasm")]
use crate::wasm::{CodeOrigin, PolicyPre, WasmStrategy, WitVersion};

/// The hash and version of a stand-in.
const STAND_IN: &str = "not-loaded";

/// One loaded, validated build of a named policy.
pub struct PolicyVersion {
    pub(super) name: String,
    pub(super) hash: String,
    pub(super) source: PolicySource,
    pub(super) loaded_at: SystemTime,
    pub(super) load_time: Duration,
    #[cfg(feature = "wasm")]
    pub(super) origin: Option<CodeOrigin>,
    pub(super) guard: Guard,
    pub(super) strategy: Arc<dyn RetryStrategy>,
    #[cfg(feature = "wasm")]
    pub(super) wasm: Option<Arc<WasmStrategy>>,
    pub(super) decisions: AtomicU64,
    /// Its `policy` and `version` metric labels, made at its first decision.
    pub(super) metric_labels: OnceLock<[SharedString; 2]>,
}

impl std::fmt::Debug for PolicyVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyVersion")
            .field("name", &self.name)
            .field("version", &self.version())
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl LoggedVersion for PolicyVersion {
    fn name(&self) -> &str {
        PolicyVersion::name(self)
    }
    fn version(&self) -> &str {
        PolicyVersion::version(self)
    }
}

#[cfg(feature = "wasm")]
impl crate::isolation::IsolatedVersion for PolicyVersion {
    fn strategy(&self) -> &dyn RetryStrategy {
        PolicyVersion::strategy(self)
    }
    fn component(&self) -> Option<&Arc<WasmStrategy>> {
        self.wasm.as_ref()
    }
    fn policy(&self) -> &str {
        PolicyVersion::name(self)
    }
    fn label(&self) -> &str {
        PolicyVersion::version(self)
    }
}

impl PolicyVersion {
    /// The policy name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The content hash: the component's sha256 in hex, or `builtin:NAME`.
    pub fn hash(&self) -> &str {
        &self.hash
    }
    /// Its `policy` and `version` labels in the library's metrics (`telemetry`), shared, so
    /// that recording a decision allocates no string.
    pub(crate) fn metric_labels(&self) -> [SharedString; 2] {
        self.metric_labels
            .get_or_init(|| {
                [self.name(), self.version()]
                    .map(|label| SharedString::from(Arc::<str>::from(label)))
            })
            .clone()
    }

    /// A short version label: the first 12 hex digits of the hash, or the built-in's name.
    pub fn version(&self) -> &str {
        self.hash
            .get(..12)
            .filter(|_| self.is_component())
            .unwrap_or(&self.hash)
    }
    /// Whether it runs a component.
    fn is_component(&self) -> bool {
        #[cfg(feature = "wasm")]
        return self.wasm.is_some();
        #[cfg(not(feature = "wasm"))]
        false
    }
    /// Where it was loaded from.
    pub fn source(&self) -> &PolicySource {
        &self.source
    }
    /// When it was loaded.
    pub fn loaded_at(&self) -> SystemTime {
        self.loaded_at
    }
    /// How long reading, compiling (or fetching from the cache), configuring and smoke-calling
    /// took.
    pub fn load_time(&self) -> Duration {
        self.load_time
    }
    /// Whether the machine code was compiled or cached (components only).
    #[cfg(feature = "wasm")]
    pub fn origin(&self) -> Option<CodeOrigin> {
        self.origin
    }
    /// The version of `rebound:policy` the component was built for (components only).
    #[cfg(feature = "wasm")]
    pub fn wit_version(&self) -> Option<WitVersion> {
        self.wasm.as_ref().map(|w| w.component().wit_version())
    }
    /// The safety guard for this policy.
    pub fn guard(&self) -> Guard {
        self.guard
    }
    /// The strategy.
    pub fn strategy(&self) -> &dyn RetryStrategy {
        &*self.strategy
    }
    /// The sandboxed strategy, for components.
    #[cfg(feature = "wasm")]
    pub fn wasm(&self) -> Option<&WasmStrategy> {
        self.wasm.as_deref()
    }
    /// Decisions this version was resolved for.
    pub fn decisions(&self) -> u64 {
        self.decisions.load(Ordering::Relaxed)
    }
    pub(crate) fn count_decision(&self) {
        self.decisions.fetch_add(1, Ordering::Relaxed);
    }
    /// The component, for components.
    #[cfg(feature = "wasm")]
    pub(crate) fn component(&self) -> Option<&PolicyPre> {
        self.wasm.as_deref().map(WasmStrategy::component)
    }

    /// The stand-in for policy `name`, which failed to load with `error`: it answers the
    /// definition's fail-safe (a non-strict start).
    pub(crate) fn stand_in(
        name: &str,
        definition: &PolicyDefinition,
        error: &BuildError,
    ) -> PolicyVersion {
        PolicyVersion {
            name: name.to_owned(),
            hash: STAND_IN.to_owned(),
            source: definition.source.clone(),
            loaded_at: SystemTime::now(),
            load_time: Duration::ZERO,
            #[cfg(feature = "wasm")]
            origin: None,
            guard: guard(definition),
            strategy: Arc::new(StandIn {
                name: name.to_owned(),
                error: error.to_string(),
                fail_safe: definition.fail_safe,
            }),
            #[cfg(feature = "wasm")]
            wasm: None,
            decisions: AtomicU64::new(0),
            metric_labels: OnceLock::new(),
        }
    }

    /// Whether this is the stand-in for a policy that failed to load at start.
    pub fn is_stand_in(&self) -> bool {
        self.hash == STAND_IN
    }

    pub(super) fn builtin(
        name: &str,
        builtin: &BuiltinPolicy,
        definition: &PolicyDefinition,
    ) -> PolicyVersion {
        let strategy = builtin.strategy();
        PolicyVersion {
            name: name.to_owned(),
            hash: builtin.version(),
            source: definition.source.clone(),
            loaded_at: SystemTime::now(),
            load_time: Duration::ZERO,
            #[cfg(feature = "wasm")]
            origin: None,
            guard: guard(definition),
            strategy,
            #[cfg(feature = "wasm")]
            wasm: None,
            decisions: AtomicU64::new(0),
            metric_labels: OnceLock::new(),
        }
    }
}

/// The guard `definition` asks for.
pub(super) fn guard(definition: &PolicyDefinition) -> Guard {
    if definition.guard_exempt {
        Guard::Exempt
    } else {
        Guard::Enforced
    }
}
