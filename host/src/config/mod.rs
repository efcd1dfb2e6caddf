//! Why a separate module: a registry configuration is read and checked long before anything
//! decides with it — by `rebound check` and `rebound serve --check`, by an editor, at every hot
//! reload — and a file refused here must never reach the running registry. This module turns a
//! TOML file into the model the registry runs and nothing else: named policies (a built-in
//! strategy or a component, with parameters, sandbox limits, fail-safe and guard exemption),
//! the default policy, profiles in the sense of reference 003 "Using multiple policies", routes
//! from a service, a request type or a gRPC method to a policy, and the engine, isolation,
//! budget, throttle, breaker, hedging and telemetry settings. Every error names the file, the
//! line and column, the field, and what was expected.
//!
//! `raw` is the file as written (the TOML schema), this module the model the registry runs,
//! `validate` the step between them (one function per section), [`Builtin`] the built-in
//! strategies a policy may name and their parameters, and [`Route`] what a route matches.

mod aws_builtin;
mod breakers;
mod budgets;
mod builtin;
mod context_match;
mod controls;
mod errors;
mod overlay;
mod params;
mod policies;
mod protocol_builtins;
mod raw;
mod route;
mod throttles;
mod validate;
mod xds_source;

pub use breakers::BreakerDefinition;
pub use builtin::{Builtin, BuiltinPolicy, MAX_ATTEMPTS_LIMIT};
pub use context_match::{ContextMatch, ValueRule};
pub use controls::ControlNames;
pub use overlay::{merged_config, ConfigOverlay, Precedence};
pub use route::Route;
pub use throttles::ThrottleDefinition;
pub use xds_source::XdsSourceConfig;

use crate::hedge::{ConstantSpeculativeExecution, QuantileDelay};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::decision_log::DecisionLogConfig;
use crate::request::{RequestType, Service};
use crate::traffic_budget::BudgetConfig;
use crate::wasm::{
    FailSafe, Optimization, PoolConfig, QuarantineConfig, SandboxLimits, TickerPriority, WasiConfig,
};

/// Where compiled policies are cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheDir {
    /// The user's cache directory (`ArtifactCache::default_dir`), as no `cache_dir` is
    /// configured; if it cannot be used, policies load without a cache.
    UserDefault(PathBuf),
    /// The configured `cache_dir`; if it cannot be used, the configuration is refused.
    Configured(PathBuf),
}

impl CacheDir {
    /// The directory.
    pub fn path(&self) -> &Path {
        match self {
            CacheDir::UserDefault(dir) | CacheDir::Configured(dir) => dir,
        }
    }
}

/// File watching.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct WatchConfig {
    /// Whether the policy files and the configuration are watched for changes.
    pub enabled: bool,
    /// Quiet time after the last change to a file before it is reloaded, in milliseconds
    /// (0 to 60 000).
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 0, 60_000>")]
    pub debounce_ms: u64,
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig {
            enabled: true,
            debounce_ms: 20,
        }
    }
}

/// The WebAssembly engine, fixed when the registry starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct EngineConfig {
    /// How Cranelift optimises policy code.
    pub optimization: Optimization,
    /// Linear memory each instance may reach at most; unset: the largest `limits.memory_bytes`
    /// of the policies at start (at least the default 64 MiB). 64 KiB to 4 GiB.
    #[serde(deserialize_with = "crate::ranges::within_if_set::<_, _, 65_536, 4_294_967_296>")]
    pub max_memory_bytes: Option<u64>,
    /// The instance pool: slots for all policies, idle instances per policy.
    pub pool: PoolConfig,
    /// Whether components' calls run on threads of their own (and how many at once per
    /// policy) instead of the deciding thread; unset: on the deciding thread.
    pub isolation: Option<IsolationConfig>,
    /// The largest component file a policy may name, in bytes; a larger one is refused before
    /// it is read whole or compiled. Unset: [`EngineConfig::DEFAULT_MAX_COMPONENT_BYTES`];
    /// 1 to 1 GiB.
    #[serde(deserialize_with = "crate::ranges::within_if_set::<_, _, 1, 1_073_741_824>")]
    pub max_component_bytes: Option<u64>,
    /// How promptly the machine runs the epoch ticker's thread, which ends calls at their
    /// deadline and wakes isolated callers at theirs: asked, and where the process is not
    /// permitted it the best below. Unset: the embedder's choice, which for the library is
    /// [`TickerPriority::Normal`] (no change to the process's scheduling) and for
    /// `rebound serve` is [`TickerPriority::Realtime`].
    pub ticker_priority: Option<TickerPriority>,
}

impl EngineConfig {
    /// The largest component file when the configuration does not say: 64 MiB, three times
    /// the shipped Python policies (componentize-py's runtime, about 18 MB).
    pub const DEFAULT_MAX_COMPONENT_BYTES: u64 = 64 << 20;

    /// The largest component file a policy may name.
    pub fn max_component_bytes(&self) -> u64 {
        self.max_component_bytes
            .unwrap_or(Self::DEFAULT_MAX_COMPONENT_BYTES)
    }
}

/// Components' calls on dedicated threads, so that a slow or spinning policy cannot hold the
/// threads that decide with the built-ins or serve requests: at most `per_policy` calls of
/// one policy version run at once, and its calls keep the threads busy at most
/// `busy_per_second_ms` per second (a call past either waits, in a tokio runtime up to the
/// call's deadline, holding no thread, then is answered its fail-safe as `overloaded`); the
/// call runs under the sandbox's deadline as on the deciding thread, given what is left of it
/// after the wait, and a caller in a tokio runtime is answered `timeout` by the host as soon
/// as its call is past due having spent 0.2 ms of CPU (spinning), or should even the
/// deadline's grace pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct IsolationConfig {
    /// Threads running components' calls; 0: none, calls run on the deciding thread (no
    /// isolation). Default: two per available core; at most 256.
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 0, 256>")]
    pub threads: usize,
    /// Calls of one policy version running at once. Default: half the available cores, at
    /// least 1 (its time share, not this, bounds an honest policy's throughput; this bounds
    /// how many cores a spinning one holds at once); 1 to 256.
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 1, 256>")]
    pub per_policy: usize,
    /// Milliseconds per second one policy version's calls may keep the threads busy (wall
    /// time of its calls, averaged over 100 ms); 0: no limit. Default: 125 per core (an eighth
    /// of the machine); at most 1 000 000.
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 0, 1_000_000>")]
    pub busy_per_second_ms: u64,
    /// The threads' niceness on Linux (0 to 19; elsewhere ignored): above 0, a machine short
    /// of CPU serves requests and built-in decisions before components' calls (which may then
    /// be slower, and answered their fail-safe past their deadline's grace). Default: 0.
    #[serde(deserialize_with = "crate::ranges::within::<_, _, 0, 19>")]
    pub nice: i32,
}

impl Default for IsolationConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        IsolationConfig {
            threads: cores * 2,
            per_policy: (cores / 2).max(1),
            busy_per_second_ms: 125 * cores as u64,
            nice: 0,
        }
    }
}

/// Where a policy comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum PolicySource {
    /// A built-in native strategy with its parameters.
    Builtin(BuiltinPolicy),
    /// A component file (absolute, resolved against the policy directory).
    Component(PathBuf),
    /// A component in an OCI registry (`registry/repository:tag`), pulled into the artifact
    /// cache's directory (feature `oci`).
    Oci(String),
}

impl PolicySource {
    /// Whether it is the `grpc` built-in hedging after a percentile of observed latencies
    /// (its `hedging_delay`), which its policy must record.
    pub(crate) fn hedges_by_observed_latency(&self) -> bool {
        matches!(self, PolicySource::Builtin(BuiltinPolicy::Grpc(grpc)) if grpc.hedges_by_observed_latency())
    }
}

impl fmt::Display for PolicySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicySource::Builtin(b) => write!(f, "builtin:{}", b.builtin().name()),
            PolicySource::Component(path) => write!(f, "{}", path.display()),
            PolicySource::Oci(reference) => write!(f, "oci:{reference}"),
        }
    }
}

/// One named policy.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PolicyDefinition {
    /// Its source.
    pub source: PolicySource,
    /// Parameters handed to the component's `configure` (empty for built-ins, whose
    /// parameters are in their [`BuiltinPolicy`]).
    pub params: BTreeMap<String, String>,
    /// Sandbox limits (components).
    pub limits: SandboxLimits,
    /// What a failed call answers (components).
    pub fail_safe: FailSafe,
    /// Quarantine of a component that keeps failing.
    pub quarantine: QuarantineConfig,
    /// What the component's WASI imports answer (clocks, randomness).
    pub wasi: WasiConfig,
    /// Whether the safety guard lets this policy retry non-idempotent requests for reasons
    /// that do not allow it (see [`Orchestrator::exempt_from_guard`](crate::Orchestrator::exempt_from_guard)).
    pub guard_exempt: bool,
    /// The sha256 the component file must have (`component = { path, sha256 }`): a file with
    /// another digest is refused at load and at every reload.
    pub pinned_sha256: Option<[u8; 32]>,
    /// The sha256 of the component's compiled artifact in its OCI registry
    /// (`component = { oci, precompiled }`, pushed by `rebound push --precompile`): fetched by
    /// that digest and used instead of compiling when it was compiled from this component for
    /// this host's engine configuration.
    pub precompiled_sha256: Option<[u8; 32]>,
    /// Where `params` is written, for errors about them found when the component loads (its
    /// parameter schema); `None` when the configuration gives no `params`.
    pub params_location: Option<Location>,
    /// The public keys one of which must have signed its OCI component (`[trust]`, feature
    /// `oci`): checked before it loads and at every reload; `None` for components from files
    /// and built-ins, and when the configuration has no `[trust]` table.
    #[cfg(feature = "oci")]
    pub trusted_keys: Option<std::sync::Arc<[crate::distribution::TrustedKey]>>,
    /// Copies of its idempotent requests sent while they are in flight
    /// (`speculative_execution`), instead of its strategy's own hedging (docs/hedging.md).
    pub speculative_execution: Option<SpeculativeExecution>,
    /// How long each attempt may run before it is cut and decided as an `ATTEMPT_TIMEOUT`
    /// failure (`attempt_timeout_ms`), over the strategy's own.
    pub attempt_timeout: Option<std::time::Duration>,
    /// Whether a copy of an idempotent request is sent each time its attempt timeout passes,
    /// the attempt still running (`hedge_on_attempt_timeout`), instead of cutting it.
    pub hedge_on_attempt_timeout: bool,
    /// Whether the latencies of its answered attempts are recorded per authority
    /// (`record_latencies`), for a WebAssembly policy deciding a hedge to read
    /// (`host.observed-latency-ms`); a percentile `speculative_execution` records them anyway.
    pub record_latencies: bool,
}

/// A policy's `speculative_execution`: a copy on the next node after a constant delay, or after
/// a quantile of the latencies observed for the request's authority (docs/hedging.md).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum SpeculativeExecution {
    /// `{ delay_ms, max_executions }`.
    Constant(ConstantSpeculativeExecution),
    /// `{ percentile, min_delay_ms, max_delay_ms, max_executions }`.
    Quantile {
        /// The quantile, its floor and its ceiling.
        delay: QuantileDelay,
        /// The most executions, the first included.
        max_executions: u32,
    },
}

/// A place in a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file (`<inline>` for a configuration given as text).
    pub file: PathBuf,
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
}

impl Location {
    /// An error about `field` at this place.
    pub fn error(&self, field: String, message: String) -> ConfigError {
        ConfigError {
            file: self.file.clone(),
            line: self.line,
            column: self.column,
            field,
            message,
        }
    }
}

/// A validated configuration.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RegistryConfig {
    /// The file it was read from, if any.
    pub file: Option<PathBuf>,
    /// The policy used when nothing more specific applies.
    pub default_policy: String,
    /// The directory relative component paths are resolved against (absolute).
    pub policy_dir: PathBuf,
    /// Directory of the compiled-artifact cache; none: no cache (`cache_dir = false`, or
    /// no user cache directory on this platform).
    pub cache_dir: Option<CacheDir>,
    /// The most bytes the cache's entries may take together (`cache_max_mb`); the entries
    /// used least recently are deleted past it.
    pub cache_max_bytes: u64,
    /// File watching.
    pub watch: WatchConfig,
    /// The engine (read at start only).
    pub engine: EngineConfig,
    /// The policies by name.
    pub policies: BTreeMap<String, PolicyDefinition>,
    /// Profiles: name to a dedicated policy, or `None` to inherit the default.
    pub profiles: BTreeMap<String, Option<String>>,
    /// Services routed to a policy.
    pub services: BTreeMap<Service, String>,
    /// Request types routed to a policy (more specific than a service route).
    pub request_types: BTreeMap<RequestType, String>,
    /// `[[routes]]`: plain HTTP requests and gRPC calls routed by what they are sent to, in
    /// file order (before request types and services).
    pub routes: Vec<Route>,
    /// Whether a policy that fails to load at start stops the registry from starting
    /// (`true`), or starts as a stand-in answering its fail-safe, its error in the status,
    /// until a reload succeeds (`false`, the default). Later reloads never install a failed
    /// load.
    pub strict_start: bool,
    /// Retry budgets proportional to traffic, by name (`[budgets.NAME]`).
    pub budgets: BTreeMap<String, BudgetConfig>,
    /// The budgets kept per client (`[budgets.NAME] per`), by budget name.
    pub budget_scopes: BTreeMap<String, BudgetScope>,
    /// Retry throttles that look at failures, by name (`[throttles.NAME]`).
    pub throttles: BTreeMap<String, ThrottleDefinition>,
    /// Per-node circuit breakers, by name (`[breakers.NAME]`).
    pub breakers: BTreeMap<String, BreakerDefinition>,
    /// The named controls each policy uses (`[policies.NAME] budget`, `throttle`, `breaker`),
    /// by policy; a policy that names none is not in it.
    pub policy_controls: BTreeMap<String, ControlNames>,
    /// The decision log (`[decision_log]`), its file's path resolved; `None`: no log.
    pub decision_log: Option<DecisionLogConfig>,
    /// The OTLP export of spans and metrics (`[telemetry]`), which the application (or
    /// `rebound serve`) starts; `None`: no table.
    #[cfg(feature = "otlp")]
    pub telemetry: Option<crate::otlp::OtlpConfig>,
    /// The xDS control plane whose routes add policies (`[source.xds]`, docs/xds.md), which
    /// `rebound serve` follows; `None`: no table.
    pub xds: Option<XdsSourceConfig>,
}

/// A budget kept per client: each value of the request's client-context entry `key` draws
/// from a budget of its own (`[budgets.NAME] per = "client_context.KEY"`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BudgetScope {
    /// The client-context entry naming the client.
    pub key: String,
    /// The most clients with a budget of their own; later ones share the common budget.
    pub max_clients: usize,
}

impl BudgetScope {
    /// `max_clients` when the table does not say.
    pub const DEFAULT_MAX_CLIENTS: usize = 1024;
    /// The largest `max_clients`.
    pub const MOST_CLIENTS: usize = 100_000;
}

/// A configuration that was refused: where, which field, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}:{column}: {field}: {message}", file.display())]
pub struct ConfigError {
    /// The file (`<inline>` for a configuration given as text).
    pub file: PathBuf,
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
    /// The field, as a dotted path (`policies.robots.component`); empty for a syntax error.
    pub field: String,
    /// What is wrong and what was expected.
    pub message: String,
}

/// Line and column (from 1) of byte `offset` in `text`: where a TOML parser's span starts,
/// as every configuration and scenario error names it.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

impl RegistryConfig {
    /// Reads and validates the configuration file at `path`. Relative paths in it are
    /// resolved against the file's directory.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        // Absolute, so the watcher's event paths compare equal to the configured ones.
        let path = &std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_owned(),
            line: 0,
            column: 0,
            field: String::new(),
            message: format!("cannot read the configuration: {e}"),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let mut config = Self::parse(&text, path, base)?;
        config.file = Some(path.to_owned());
        Ok(config)
    }

    /// Parses and validates configuration `text`, naming `file` in errors and resolving
    /// relative paths against `base`.
    pub fn parse(text: &str, file: &Path, base: &Path) -> Result<Self, ConfigError> {
        let errors = errors::Errors { file, text };
        let base = &std::path::absolute(base).unwrap_or_else(|_| base.to_owned());
        let deserializer = toml::Deserializer::parse(text)
            .map_err(|e| errors.at(e.span().unwrap_or(0..0), "", e.message().trim()))?;
        let raw: raw::RawConfig = serde_path_to_error::deserialize(deserializer).map_err(|e| {
            // `Spanned` values add a private segment to the path: leave it out.
            let field = e
                .path()
                .iter()
                .map(ToString::to_string)
                .filter(|segment| !segment.starts_with("$__serde_spanned"))
                .collect::<Vec<_>>()
                .join(".");
            let inner = e.into_inner();
            errors.at(inner.span().unwrap_or(0..0), field, inner.message().trim())
        })?;
        validate::validate(raw, &errors, base)
    }
}
