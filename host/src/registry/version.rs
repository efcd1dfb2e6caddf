//! A policy version: one loaded, validated build of a named policy (built-in or component),
//! with its content hash, source and load time. Versions are immutable; the registry swaps
//! whole versions, so a decision always runs on exactly one of them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use metrics::SharedString;
use sha2::{Digest, Sha256};

use super::builtin::BuiltinPolicy;
use super::compile_ahead::CompileAhead;
use super::config::{ConfigError, PolicyDefinition, PolicySource};
use super::error::BuildError;
use super::stand_in::StandIn;
use crate::cassandra_types::ConsistencyLevel;
use crate::context::DecisionContext;
use crate::decision_log::LoggedVersion;
use crate::reason::{reasons, ReadTimeout, RetryReason};
use crate::request::{Request, RequestType};
use crate::rules::Guard;
use crate::strategy::RetryStrategy;
use crate::wasm::{
    read_metadata, ArtifactCache, CodeOrigin, LoadError, PolicyPre, WasmRuntime, WasmStrategy,
    WasmStrategyConfig, WitVersion,
};

/// The hash and version of a stand-in.
const STAND_IN: &str = "not-loaded";

/// One loaded, validated build of a named policy.
pub struct PolicyVersion {
    name: String,
    hash: String,
    source: PolicySource,
    loaded_at: SystemTime,
    load_time: Duration,
    origin: Option<CodeOrigin>,
    guard: Guard,
    strategy: Arc<dyn RetryStrategy>,
    wasm: Option<Arc<WasmStrategy>>,
    decisions: AtomicU64,
    /// Its `policy` and `version` metric labels, made at its first decision.
    metric_labels: OnceLock<[SharedString; 2]>,
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

/// What the registry needs to build component versions.
/// How a registry reaches OCI registries (feature `oci`).
#[cfg(feature = "oci")]
pub(crate) type Credentials = super::oci_credentials::RegistryCredentials;
/// Without the `oci` feature there is no registry to reach.
#[cfg(not(feature = "oci"))]
#[derive(Debug, Default)]
pub(crate) struct Credentials {}

pub(crate) struct BuildContext<'a> {
    pub runtime: &'a WasmRuntime,
    pub cache: Option<&'a ArtifactCache>,
    pub ahead: &'a CompileAhead,
    /// The largest component file a policy may name.
    pub max_component_bytes: u64,
    /// How OCI registries are reached.
    #[cfg_attr(not(feature = "oci"), allow(dead_code))]
    pub credentials: &'a Credentials,
}

impl LoggedVersion for PolicyVersion {
    fn name(&self) -> &str {
        PolicyVersion::name(self)
    }
    fn version(&self) -> &str {
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
            .filter(|_| self.wasm.is_some())
            .unwrap_or(&self.hash)
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
    pub fn origin(&self) -> Option<CodeOrigin> {
        self.origin
    }
    /// The version of `rebound:policy` the component was built for (components only).
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
    pub fn wasm(&self) -> Option<&WasmStrategy> {
        self.wasm.as_deref()
    }
    /// The sandboxed strategy, shared, for components.
    pub(crate) fn wasm_shared(&self) -> Option<&Arc<WasmStrategy>> {
        self.wasm.as_ref()
    }
    /// Decisions this version was resolved for.
    pub fn decisions(&self) -> u64 {
        self.decisions.load(Ordering::Relaxed)
    }
    pub(crate) fn count_decision(&self) {
        self.decisions.fetch_add(1, Ordering::Relaxed);
    }
    /// The component, for components.
    pub(crate) fn component(&self) -> Option<&PolicyPre> {
        self.wasm.as_deref().map(WasmStrategy::component)
    }

    /// Builds policy `name` from its definition, reading its component file if it has one.
    /// `known` is a version already loaded from the same source: its compiled component is
    /// reused when the file's content is unchanged.
    pub(crate) fn build(
        name: &str,
        definition: &PolicyDefinition,
        ctx: &BuildContext<'_>,
        known: &[Arc<PolicyVersion>],
    ) -> Result<PolicyVersion, BuildError> {
        match &definition.source {
            PolicySource::Builtin(builtin) => Ok(Self::builtin(name, builtin, definition)),
            PolicySource::Component(path) => {
                let bytes = read(name, path, ctx.max_component_bytes)?;
                Self::from_component_bytes(name, definition, path, &bytes, ctx, known)
            }
            PolicySource::Oci(reference) => {
                let path = fetch_oci(name, reference, definition, ctx)?;
                let bytes = read(name, &path, ctx.max_component_bytes)?;
                Self::from_component_bytes(name, definition, &path, &bytes, ctx, known)
            }
        }
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
            origin: None,
            guard: guard(definition),
            strategy: Arc::new(StandIn {
                name: name.to_owned(),
                error: error.to_string(),
                fail_safe: definition.fail_safe,
            }),
            wasm: None,
            decisions: AtomicU64::new(0),
            metric_labels: OnceLock::new(),
        }
    }

    /// Whether this is the stand-in for a policy that failed to load at start.
    pub fn is_stand_in(&self) -> bool {
        self.hash == STAND_IN
    }

    fn builtin(
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
            origin: None,
            guard: guard(definition),
            strategy,
            wasm: None,
            decisions: AtomicU64::new(0),
            metric_labels: OnceLock::new(),
        }
    }

    /// Builds a component version of policy `name` from `bytes` (read from `path`), then
    /// smoke-calls it.
    pub(crate) fn from_component_bytes(
        name: &str,
        definition: &PolicyDefinition,
        path: &Path,
        bytes: &[u8],
        ctx: &BuildContext<'_>,
        known: &[Arc<PolicyVersion>],
    ) -> Result<PolicyVersion, BuildError> {
        let started = Instant::now();
        let max = ctx.runtime.max_memory_bytes();
        if definition.limits.memory_bytes > max {
            return Err(BuildError::MemoryAboveEngine {
                policy: name.to_owned(),
                asked: definition.limits.memory_bytes,
                max,
            });
        }
        let sha256: [u8; 32] = Sha256::digest(bytes).into();
        if let Some(pinned) = definition.pinned_sha256.filter(|pinned| *pinned != sha256) {
            return Err(BuildError::PinMismatch {
                policy: name.to_owned(),
                path: path.display().to_string(),
                expected: hex::encode(pinned),
                found: hex::encode(sha256),
            });
        }
        let reused = known
            .iter()
            .filter_map(|v| v.component())
            .find(|c| c.sha256() == &sha256 && c.name() == name)
            .cloned();
        let component = match reused {
            Some(component) => component,
            None => {
                let code = ctx
                    .ahead
                    .take(ctx.runtime, bytes, &sha256, ctx.cache)
                    .map_err(|message| LoadError::compile(name, bytes, &message))?;
                let metadata = read_metadata(name, bytes)?;
                PolicyPre::from_machine_code(ctx.runtime, name, sha256, metadata, code)?
            }
        };
        if let Some(metadata) = component.metadata() {
            metadata.check_params(&definition.params).map_err(|e| {
                let field = format!("policies.{name}.params.{}", e.param);
                let message = format!("{} (the parameter schema of {})", e.message, path.display());
                match &definition.params_location {
                    Some(at) => at.error(field, message),
                    None => ConfigError {
                        file: path.to_owned(),
                        line: 0,
                        column: 0,
                        field,
                        message,
                    },
                }
            })?;
        }
        let origin = component.origin();
        let config = WasmStrategyConfig {
            limits: definition.limits,
            fail_safe: definition.fail_safe,
            quarantine: definition.quarantine,
            params: definition.params.clone(),
            wasi: definition.wasi,
        };
        let wasm = Arc::new(WasmStrategy::new(component, config)?);
        smoke(name, &wasm)?;
        Ok(PolicyVersion {
            name: name.to_owned(),
            hash: hex::encode(sha256),
            source: match &definition.source {
                PolicySource::Oci(_) => definition.source.clone(),
                _ => PolicySource::Component(path.to_owned()),
            },
            loaded_at: SystemTime::now(),
            load_time: started.elapsed(),
            origin: Some(origin),
            guard: guard(definition),
            strategy: Arc::clone(&wasm) as Arc<dyn RetryStrategy>,
            wasm: Some(wasm),
            decisions: AtomicU64::new(0),
            metric_labels: OnceLock::new(),
        })
    }
}

fn guard(definition: &PolicyDefinition) -> Guard {
    if definition.guard_exempt {
        Guard::Exempt
    } else {
        Guard::Enforced
    }
}

/// The local file holding policy `name`'s OCI component `reference`: pulled into the artifact
/// cache's directory, or read from there (registry/oci.rs).
pub(crate) fn fetch_oci(
    name: &str,
    reference: &str,
    definition: &PolicyDefinition,
    ctx: &BuildContext<'_>,
) -> Result<PathBuf, BuildError> {
    #[cfg(feature = "oci")]
    {
        let cache = ctx.cache.ok_or_else(|| BuildError::OciWithoutCache {
            policy: name.to_owned(),
        })?;
        let pin: Option<String> = definition.pinned_sha256.map(hex::encode);
        let store = super::oci_store::OciStore::new(cache.dir());
        let limit = ctx.max_component_bytes;
        let fetched = match &definition.trusted_keys {
            Some(keys) => {
                store.resolve_trusted(reference, pin.as_deref(), keys, ctx.credentials, limit)
            }
            None => store
                .resolve(reference, pin.as_deref(), ctx.credentials, limit)
                .map(|path| super::oci_store::Fetched {
                    path,
                    signed_layers: None,
                }),
        }
        .map_err(|source| BuildError::Oci {
            policy: name.to_owned(),
            source,
        })?;
        if let Some(precompiled) = definition.precompiled_sha256 {
            let pin = hex::encode(precompiled);
            super::oci_store::install_precompiled(
                name,
                cache,
                &fetched,
                reference,
                &pin,
                ctx.credentials,
                limit,
            );
        }
        Ok(fetched.path)
    }
    #[cfg(not(feature = "oci"))]
    {
        let _ = (reference, definition, ctx);
        Err(BuildError::OciUnsupported {
            policy: name.to_owned(),
        })
    }
}

/// The component file at `path`, refused unread past `limit` bytes.
pub(crate) fn read(policy: &str, path: &Path, limit: u64) -> Result<Vec<u8>, BuildError> {
    use std::io::Read;
    let failed = |source| BuildError::Read {
        policy: policy.to_owned(),
        path: path.display().to_string(),
        source,
    };
    let too_large = |size| BuildError::TooLarge {
        policy: policy.to_owned(),
        path: path.display().to_string(),
        size,
        limit,
    };
    let file = std::fs::File::open(path).map_err(failed)?;
    let size = file.metadata().map_err(failed)?.len();
    if size > limit {
        return Err(too_large(size));
    }
    // The file may grow between the two: read at most one byte past the limit.
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(failed)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Calls a new version on a few representative inputs (a read, a write, a query, a CQL read
/// timeout) before it may decide anything: a version that traps, panics, overruns its limits
/// or answers nonsense on them is refused. The tokens its retry budgets gave these calls are
/// given back.
fn smoke(name: &str, strategy: &WasmStrategy) -> Result<(), BuildError> {
    let timeout = Duration::from_millis(2500);
    let request = |ty| Request::new(0, ty, timeout).expect("non-zero timeout");
    let read_timeout = RetryReason::ReadTimeout(ReadTimeout {
        consistency: ConsistencyLevel::LocalQuorum,
        block_for: 2,
        received: 1,
        data_present: false,
    });
    let inputs = [
        (
            request(RequestType::Get),
            reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
        ),
        (request(RequestType::Upsert), reasons::KV_TEMPORARY_FAILURE),
        (
            request(RequestType::Query).readonly(true),
            reasons::QUERY_INDEX_NOT_FOUND,
        ),
        (request(RequestType::Cql).idempotent(true), read_timeout),
    ];
    for (request, reason) in &inputs {
        if let Err(failure) = strategy.try_answer(request, &DecisionContext::new(reason)) {
            return Err(BuildError::Smoke {
                policy: name.to_owned(),
                input: format!("{} after {reason}", request.request_type()),
                failure: failure.to_string(),
            });
        }
    }
    strategy.clear_budgets();
    Ok(())
}
