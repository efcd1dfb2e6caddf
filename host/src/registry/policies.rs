//! The policy registry: every configured name maps to an atomically replaceable active
//! version. Deciding resolves the request's policy (per-request name, profile, request-type
//! and service routes, default) and reads its active version without locks; changes (reload,
//! rollback, shadow, promote, a new configuration) build the new state off the deciding path
//! and publish it with one atomic swap.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use arc_swap::{ArcSwap, ArcSwapOption};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::compile_ahead::CompileAhead;
use super::config::{ConfigError, PolicyDefinition, PolicySource, RegistryConfig};
use super::shadow::{Shadow, ShadowStatus, Shadowed};
use super::status::{PolicyStatus, RegistryStatus, VersionStatus};
use super::version::{read, BuildContext, BuildError, PolicyVersion};
use crate::budget::RetryBudgets;
use crate::orchestrator::{Decision, Guard, Orchestrator};
use crate::reason::RetryReason;
use crate::request::{Request, RequestType, Service};
use crate::wasm::{ArtifactCache, CacheError, SandboxLimits, WasmRuntime};

/// Why a registry operation was refused.
#[derive(Debug, thiserror::Error)]
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
    /// The wasmtime engine could not be created.
    #[error("cannot create the WebAssembly engine: {0}")]
    Engine(String),
}

/// A decision and the version it was resolved to.
#[derive(Debug)]
pub struct Decided {
    /// The orchestrator's decision.
    pub decision: Decision,
    /// The version that decided; `None` when the request carried its own strategy object.
    pub version: Option<Arc<PolicyVersion>>,
}

/// What a reload did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ReloadOutcome {
    /// The file has the active version's content: nothing changed.
    Unchanged {
        /// The active version.
        version: String,
    },
    /// A new version is active; the old one is kept for rollback.
    Swapped {
        /// The version replaced.
        from: String,
        /// The version now active.
        to: String,
    },
}

/// A named policy: its definition and its versions.
struct Slot {
    name: String,
    definition: PolicyDefinition,
    active: ArcSwap<PolicyVersion>,
    previous: ArcSwapOption<PolicyVersion>,
    shadow: ArcSwapOption<Shadow>,
    last_error: Mutex<Option<String>>,
    swaps: AtomicU64,
}

impl Slot {
    fn new(name: &str, definition: PolicyDefinition, version: PolicyVersion) -> Self {
        Slot {
            name: name.to_owned(),
            definition,
            active: ArcSwap::from_pointee(version),
            previous: ArcSwapOption::empty(),
            shadow: ArcSwapOption::empty(),
            last_error: Mutex::new(None),
            swaps: AtomicU64::new(0),
        }
    }

    /// Makes `version` active, keeping the one it replaces for rollback.
    fn install(&self, version: Arc<PolicyVersion>, why: &str) -> ReloadOutcome {
        // Writers are serialised, so nothing replaces the active version between this load and
        // the store below. The bookkeeping comes first: whoever sees the new version also sees
        // the swap counted.
        let to = version.version().to_owned();
        let old = self.active.load_full();
        let from = old.version().to_owned();
        self.previous.store(Some(old));
        self.swaps.fetch_add(1, Ordering::Relaxed);
        *lock(&self.last_error) = None;
        self.active.store(version);
        tracing::info!(
            policy = &*self.name,
            from = &*from,
            to = &*to,
            why,
            "policy version swapped"
        );
        ReloadOutcome::Swapped { from, to }
    }

    /// Builds a version of this policy from the component `bytes` read from `path`, reusing
    /// the compiled component of a version it already holds with the same content.
    fn build(
        &self,
        path: &Path,
        bytes: &[u8],
        ctx: &BuildContext<'_>,
    ) -> Result<PolicyVersion, BuildError> {
        PolicyVersion::from_component_bytes(
            &self.name,
            &self.definition,
            path,
            bytes,
            ctx,
            &self.versions(),
        )
    }

    fn versions(&self) -> Vec<Arc<PolicyVersion>> {
        let mut known = vec![self.active.load_full()];
        known.extend(self.previous.load_full());
        known.extend(self.shadow.load_full().map(|s| Arc::clone(s.candidate())));
        known
    }

    fn status(&self) -> PolicyStatus {
        let active = self.active.load_full();
        let stats = active.wasm().map(|w| w.stats());
        PolicyStatus {
            name: self.name.clone(),
            active: VersionStatus::of(&active),
            previous: self.previous.load_full().map(|v| VersionStatus::of(&v)),
            guard_exempt: active.guard() == Guard::Exempt,
            failures: stats
                .as_ref()
                .map(|s| s.failures.clone())
                .unwrap_or_default(),
            quarantined: stats.as_ref().is_some_and(|s| s.quarantined),
            quarantines: stats.as_ref().map_or(0, |s| s.quarantines),
            last_failure: stats.and_then(|s| s.last_failure),
            swaps: self.swaps.load(Ordering::Relaxed),
            last_error: lock(&self.last_error).clone(),
            shadow: self.shadow.load_full().map(|s| s.status()),
        }
    }
}

/// The published state: the configuration, its slots and routes. Replaced whole.
struct Table {
    config: RegistryConfig,
    slots: HashMap<String, Arc<Slot>>,
    default: Arc<Slot>,
    profiles: HashMap<String, Option<Arc<Slot>>>,
    services: HashMap<Service, Arc<Slot>>,
    request_types: HashMap<RequestType, Arc<Slot>>,
}

impl Table {
    fn slot(&self, name: &str) -> Result<&Arc<Slot>, RegistryError> {
        self.slots
            .get(name)
            .ok_or_else(|| RegistryError::UnknownPolicy {
                name: name.to_owned(),
                known: self
                    .config
                    .policies
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// The policy deciding for `request`: its own policy name, else its profile's dedicated
    /// policy, else the route of its request type, else of its service, else the default.
    fn resolve(&self, request: &Request) -> Result<&Arc<Slot>, RegistryError> {
        if let Some(name) = request.policy_name() {
            return self.slot(name);
        }
        if let Some(profile) = request.profile_name() {
            match self.profiles.get(profile) {
                Some(Some(slot)) => return Ok(slot),
                Some(None) => {}
                None => {
                    return Err(RegistryError::UnknownProfile {
                        name: profile.to_owned(),
                        known: self.profiles.keys().cloned().collect::<Vec<_>>().join(", "),
                    })
                }
            }
        }
        Ok(self
            .request_types
            .get(&request.request_type())
            .or_else(|| self.services.get(&request.service()))
            .unwrap_or(&self.default))
    }
}

/// Named policies, each with an atomically replaceable active version.
pub struct PolicyRegistry {
    orchestrator: Orchestrator,
    runtime: WasmRuntime,
    budgets: Arc<RetryBudgets>,
    cache: Option<ArtifactCache>,
    ahead: CompileAhead,
    table: ArcSwap<Table>,
    /// Serialises changes; deciding never takes it.
    writer: Mutex<()>,
    config_error: Mutex<Option<String>>,
}

impl std::fmt::Debug for PolicyRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyRegistry")
            .field("policies", &self.table.load().config.policies.keys())
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl PolicyRegistry {
    /// Reads the configuration file at `path` and loads every policy in it.
    pub fn from_file(path: &Path) -> Result<Self, RegistryError> {
        Self::new(RegistryConfig::load(path)?)
    }

    /// Loads every policy of `config` in a new engine set up as its `[engine]` table says.
    pub fn new(config: RegistryConfig) -> Result<Self, RegistryError> {
        let max_memory = config.engine.max_memory_bytes.unwrap_or_else(|| {
            config
                .policies
                .values()
                .map(|p| p.limits.memory_bytes)
                .chain([SandboxLimits::default().memory_bytes])
                .max()
                .unwrap_or_default()
        });
        let runtime = WasmRuntime::with_optimization(max_memory, config.engine.optimization)
            .map_err(|e| RegistryError::Engine(format!("{e:#}")))?;
        Self::with_runtime(config, runtime)
    }

    /// Loads every policy of `config` in `runtime`.
    pub fn with_runtime(
        config: RegistryConfig,
        runtime: WasmRuntime,
    ) -> Result<Self, RegistryError> {
        let cache = match &config.cache_dir {
            Some(dir) => Some(ArtifactCache::open(dir, runtime.engine())?),
            None => None,
        };
        let budgets = Arc::new(RetryBudgets::new());
        let ahead = CompileAhead::default();
        let ctx = BuildContext {
            runtime: &runtime,
            cache: cache.as_ref(),
            ahead: &ahead,
            budgets: &budgets,
        };
        let table = build_table(&ctx, config, &HashMap::new())?;
        Ok(PolicyRegistry {
            orchestrator: Orchestrator::default(),
            runtime,
            budgets,
            cache,
            ahead,
            table: ArcSwap::from_pointee(table),
            writer: Mutex::new(()),
            config_error: Mutex::new(None),
        })
    }

    /// The orchestrator that applies the engine's rules around every policy's answer.
    pub fn orchestrator(&self) -> &Orchestrator {
        &self.orchestrator
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
            budgets: &self.budgets,
        }
    }

    /// Decides for `request`, which failed for `reason`, with the policy the request resolves
    /// to. The active version is read without a lock and held until the decision is made, so
    /// a swap during the call does not affect it.
    pub async fn maybe_retry(
        &self,
        request: &mut Request,
        reason: &RetryReason,
    ) -> Result<Decided, RegistryError> {
        self.decide(request, reason, None).await
    }

    /// As [`maybe_retry`](Self::maybe_retry), at the given moment `now` (virtual clocks,
    /// replays, tokio's paused time).
    pub async fn maybe_retry_at(
        &self,
        request: &mut Request,
        reason: &RetryReason,
        now: Instant,
    ) -> Result<Decided, RegistryError> {
        self.decide(request, reason, Some(now)).await
    }

    async fn decide(
        &self,
        request: &mut Request,
        reason: &RetryReason,
        now: Option<Instant>,
    ) -> Result<Decided, RegistryError> {
        if let Some(strategy) = request.strategy().cloned() {
            let decision = self
                .orchestrator
                .maybe_retry_using(request, reason, &*strategy, Guard::Enforced, now)
                .await;
            return Ok(Decided {
                decision,
                version: None,
            });
        }
        let (version, shadow) = {
            let table = self.table.load();
            let slot = table.resolve(request)?;
            (slot.active.load_full(), slot.shadow.load_full())
        };
        version.count_decision();
        let decision = match &shadow {
            None => {
                self.orchestrator
                    .maybe_retry_using(request, reason, version.strategy(), version.guard(), now)
                    .await
            }
            Some(shadow) => {
                let strategy = Shadowed {
                    active: &version,
                    shadow,
                };
                self.orchestrator
                    .maybe_retry_using(request, reason, &strategy, version.guard(), now)
                    .await
            }
        };
        Ok(Decided {
            decision,
            version: Some(version),
        })
    }

    /// The active version of policy `name`.
    pub fn active(&self, name: &str) -> Result<Arc<PolicyVersion>, RegistryError> {
        Ok(self.table.load().slot(name)?.active.load_full())
    }

    fn slot(&self, name: &str) -> Result<Arc<Slot>, RegistryError> {
        self.table.load().slot(name).cloned()
    }

    /// Reloads policy `name` from its file: compiles (or fetches from the cache), configures
    /// and smoke-calls the new content off the deciding path, then swaps it in. A file whose
    /// content is already active changes nothing. On failure the active version keeps serving
    /// and the error is logged and kept in the policy's status.
    pub fn reload(&self, name: &str) -> Result<ReloadOutcome, RegistryError> {
        let _writer = lock(&self.writer);
        let slot = self.slot(name)?;
        let PolicySource::Component(path) = &slot.definition.source else {
            return Err(RegistryError::Builtin(name.to_owned()));
        };
        let result = read(name, path).and_then(|bytes| {
            let active = slot.active.load_full();
            if hex_sha256(&bytes) == active.hash() {
                return Ok(None);
            }
            slot.build(path, &bytes, &self.build_context()).map(Some)
        });
        match result {
            Ok(None) => {
                *lock(&slot.last_error) = None;
                Ok(ReloadOutcome::Unchanged {
                    version: slot.active.load().version().to_owned(),
                })
            }
            Ok(Some(version)) => Ok(slot.install(Arc::new(version), "reload")),
            Err(error) => {
                tracing::error!(policy = name, error = %error,
                    active_version = slot.active.load().version(),
                    "reload failed; the active version keeps serving");
                *lock(&slot.last_error) = Some(error.to_string());
                Err(error.into())
            }
        }
    }

    /// Makes the previous version of `name` active again (the current one becomes the
    /// previous: a second rollback undoes the first). It stays active until the policy's file
    /// changes again.
    pub fn rollback(&self, name: &str) -> Result<ReloadOutcome, RegistryError> {
        let _writer = lock(&self.writer);
        let slot = self.slot(name)?;
        let previous = slot
            .previous
            .load_full()
            .ok_or_else(|| RegistryError::NoPrevious(name.to_owned()))?;
        Ok(slot.install(previous, "rollback"))
    }

    /// Starts a shadow trial for `name`: the component at `path`, built with the policy's
    /// parameters and limits, answers beside the active version on a `sample` share (0..=1)
    /// of its decisions. A trial already running is replaced.
    pub fn shadow(
        &self,
        name: &str,
        path: &Path,
        sample: f64,
    ) -> Result<ShadowStatus, RegistryError> {
        let _writer = lock(&self.writer);
        let slot = self.slot(name)?;
        if matches!(slot.definition.source, PolicySource::Builtin(_)) {
            return Err(RegistryError::Builtin(name.to_owned()));
        }
        let bytes = read(name, path)?;
        let candidate = slot.build(path, &bytes, &self.build_context())?;
        let shadow = Shadow::new(Arc::new(candidate), sample);
        let status = shadow.status();
        slot.shadow.store(Some(Arc::new(shadow)));
        tracing::info!(
            policy = name,
            candidate_version = &*status.version,
            sample = status.sample,
            "shadow trial started"
        );
        Ok(status)
    }

    /// Makes the shadow candidate of `name` the active version and ends the trial.
    pub fn promote(&self, name: &str) -> Result<ReloadOutcome, RegistryError> {
        let _writer = lock(&self.writer);
        let (slot, shadow) = self.end_trial(name, "promoted")?;
        Ok(slot.install(Arc::clone(shadow.candidate()), "promote"))
    }

    /// Ends the shadow trial of `name` without using the candidate.
    pub fn abandon(&self, name: &str) -> Result<ShadowStatus, RegistryError> {
        let _writer = lock(&self.writer);
        Ok(self.end_trial(name, "abandoned")?.1.status())
    }

    /// Removes the shadow trial of `name` (the caller holds the writer lock) and logs its tally.
    fn end_trial(
        &self,
        name: &str,
        ending: &str,
    ) -> Result<(Arc<Slot>, Arc<Shadow>), RegistryError> {
        let slot = self.slot(name)?;
        let shadow = slot
            .shadow
            .swap(None)
            .ok_or_else(|| RegistryError::NoShadow(name.to_owned()))?;
        let status = shadow.status();
        tracing::info!(
            policy = name,
            compared = status.compared,
            disagreements = status.disagreements,
            ending,
            "shadow trial ended"
        );
        Ok((slot, shadow))
    }

    /// Replaces the configuration. Policies whose definition is unchanged keep their versions,
    /// counters and trials; new and changed ones are loaded first. If any fails, the running
    /// configuration stays and the error is returned (and kept in the status).
    pub fn apply(&self, config: RegistryConfig) -> Result<(), RegistryError> {
        let _writer = lock(&self.writer);
        let old = self.table.load_full();
        if config.cache_dir != old.config.cache_dir || config.engine != old.config.engine {
            tracing::warn!("cache_dir or [engine] changed: they take effect after a restart");
        }
        match build_table(&self.build_context(), config, &old.slots) {
            Ok(table) => {
                self.table.store(Arc::new(table));
                *lock(&self.config_error) = None;
                tracing::info!("configuration applied");
                Ok(())
            }
            Err(error) => {
                tracing::error!(error = %error, "new configuration refused; the running one stays");
                *lock(&self.config_error) = Some(error.to_string());
                Err(error)
            }
        }
    }

    /// Reads the configuration file again and applies it. A bad file leaves the running
    /// configuration in place; the error is returned and kept in the status.
    pub fn reload_config(&self) -> Result<(), RegistryError> {
        let file = self.table.load().config.file.clone();
        let Some(file) = file else {
            return Ok(());
        };
        match RegistryConfig::load(&file) {
            Ok(config) => self.apply(config),
            Err(error) => {
                tracing::error!(error = %error, "configuration reload refused; the running one stays");
                *lock(&self.config_error) = Some(error.to_string());
                Err(error.into())
            }
        }
    }
    /// Starts compiling the component file at `path` for the reload its change will cause,
    /// unless a version of a policy using it already has this content. Runs on the watcher's
    /// early-compile thread; any error waits for the reload to report it.
    pub(crate) fn compile_ahead(&self, path: &Path) {
        let table = self.table.load();
        let mut slots = table
            .slots
            .values()
            .filter(|s| matches!(&s.definition.source, PolicySource::Component(p) if p == path));
        let Some(first) = slots.next() else { return };
        let Ok(bytes) = std::fs::read(path) else {
            return;
        };
        let sha256: [u8; 32] = Sha256::digest(&bytes).into();
        let known = std::iter::once(first)
            .chain(slots)
            .flat_map(|s| s.versions())
            .any(|v| v.component().is_some_and(|c| c.sha256() == &sha256));
        if !known {
            let started = Instant::now();
            if self
                .ahead
                .prepare(&self.runtime, &bytes, &sha256, self.cache.as_ref())
            {
                tracing::debug!(path = %path.display(), compile_ms = started.elapsed().as_millis() as u64, "compiled ahead of the debounce");
            }
        }
    }

    /// The policies whose component file is `path`.
    pub(crate) fn policies_at(&self, path: &Path) -> Vec<String> {
        self.table
            .load()
            .config
            .policies
            .iter()
            .filter(|(_, d)| matches!(&d.source, PolicySource::Component(p) if p == path))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The configuration file and every component file.
    pub(crate) fn watched_files(&self) -> (Option<PathBuf>, Vec<PathBuf>) {
        let table = self.table.load();
        let files = table
            .config
            .policies
            .values()
            .filter_map(|d| match &d.source {
                PolicySource::Component(path) => Some(path.clone()),
                PolicySource::Builtin(_) => None,
            })
            .collect();
        (table.config.file.clone(), files)
    }

    /// The status of every policy.
    pub fn status(&self) -> RegistryStatus {
        let table = self.table.load();
        let mut policies: Vec<PolicyStatus> = table.slots.values().map(|s| s.status()).collect();
        policies.sort_by(|a, b| a.name.cmp(&b.name));
        RegistryStatus {
            config_file: table.config.file.as_ref().map(|f| f.display().to_string()),
            config_error: lock(&self.config_error).clone(),
            default_policy: table.config.default_policy.clone(),
            policies,
            cache: self.cache.as_ref().map(ArtifactCache::stats),
        }
    }

    /// The status of policy `name`.
    pub fn policy_status(&self, name: &str) -> Result<PolicyStatus, RegistryError> {
        Ok(self.slot(name)?.status())
    }
}

/// Builds the state for `config`, keeping the slots (versions, counters, shadows) of
/// policies whose definition did not change.
fn build_table(
    ctx: &BuildContext<'_>,
    config: RegistryConfig,
    old: &HashMap<String, Arc<Slot>>,
) -> Result<Table, RegistryError> {
    let mut slots = HashMap::new();
    for (name, definition) in &config.policies {
        let slot = match old.get(name) {
            Some(slot) if slot.definition == *definition => Arc::clone(slot),
            other => {
                let known = other.map(|s| s.versions()).unwrap_or_default();
                let version = PolicyVersion::build(name, definition, ctx, &known)?;
                tracing::info!(policy = &**name, version = version.version(),
                    source = %version.source(), load_ms = version.load_time().as_millis() as u64,
                    origin = ?version.origin(), "policy loaded");
                Arc::new(Slot::new(name, definition.clone(), version))
            }
        };
        slots.insert(name.clone(), slot);
    }
    let by_name = |name: &String| Arc::clone(&slots[name]);
    Ok(Table {
        default: by_name(&config.default_policy),
        profiles: config
            .profiles
            .iter()
            .map(|(p, policy)| (p.clone(), policy.as_ref().map(by_name)))
            .collect(),
        services: config
            .services
            .iter()
            .map(|(s, p)| (*s, by_name(p)))
            .collect(),
        request_types: config
            .request_types
            .iter()
            .map(|(t, p)| (*t, by_name(p)))
            .collect(),
        slots,
        config,
    })
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
