//! The policy registry: every configured name maps to an atomically replaceable active
//! version. Deciding resolves the request's policy (per-request name, profile, request-type
//! and service routes, default) and reads its active version without locks; changes (reload,
//! rollback, shadow, promote, a new configuration) build the new state off the deciding path
//! and publish it with one atomic swap.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Instant, SystemTime};

use arc_swap::ArcSwap;
use metrics::SharedString;
use sha2::{Digest, Sha256};

use super::compile_ahead::CompileAhead;
use super::config::{CacheDir, PolicySource, RegistryConfig};
use super::error::RegistryError;
use super::isolation::{Isolated, Isolation};
use super::shadow::{Shadow, ShadowStatus, Shadowed};
use super::slot::{lock, ReloadOutcome, Slot};
use super::status::{BudgetStatus, PolicyStatus, RegistryStatus};
use super::table::{build_table, Failed, Table};
use super::version::{fetch_oci, read, BuildContext, PolicyVersion};
use crate::budget::RetryBudgets;
use crate::context::DecisionContext;
use crate::decision::Decision;
use crate::decision_id::DecisionId;
use crate::decision_log::{
    DecidedBy, DecisionLog, DecisionLogStats, Entry, LoggedVersion, ShadowAnswers,
};
use crate::reason::RetryReason;
use crate::request::Request;
use crate::request_outcome::Outcome;
use crate::rules::{self, Guard};
use crate::strategy::RetryStrategy;
use crate::telemetry;
use crate::traffic_budget::TrafficBudget;
use crate::wasm::{ArtifactCache, SandboxLimits, TickerPriority, WasmRuntime};

/// A decision, its ID and the version it was resolved to.
#[derive(Debug)]
#[must_use]
pub struct Decided {
    /// The orchestrator's decision.
    pub decision: Decision,
    /// The version that decided; `None` when the request carried its own strategy object.
    pub version: Option<Arc<PolicyVersion>>,
    /// This decision's unique, time-ordered ID. The decisions of one request's retries share
    /// the request's id ([`Request::id`]), its trail.
    pub decision_id: DecisionId,
}

/// What decides for one request: its own strategy, or a policy's active version (with its
/// shadow trial and retry budget, if any).
enum Target<'s> {
    Own(&'s dyn RetryStrategy),
    Policy {
        version: Arc<PolicyVersion>,
        shadow: Option<Arc<Shadow>>,
        budget: Option<Arc<TrafficBudget>>,
    },
}

/// Named policies, each with an atomically replaceable active version.
pub struct PolicyRegistry {
    runtime: WasmRuntime,
    budgets: Arc<RetryBudgets>,
    cache: Option<ArtifactCache>,
    ahead: CompileAhead,
    table: ArcSwap<Table>,
    /// Serialises changes; deciding never takes it.
    writer: Mutex<()>,
    config_error: Mutex<Option<String>>,
    config_reload_failures: AtomicU64,
    isolation: Option<Isolation>,
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
        let max_memory = config.engine.max_memory_bytes.unwrap_or_else(|| {
            config
                .policies
                .values()
                .map(|p| p.limits.memory_bytes)
                .chain([SandboxLimits::default().memory_bytes])
                .max()
                .unwrap_or_default()
        });
        let engine = &config.engine;
        let runtime = WasmRuntime::with_pool(max_memory, engine.optimization, engine.pool)
            .map_err(|e| RegistryError::Engine(format!("{e:#}")))?;
        // A new runtime's ticker is scheduled as the default asks already.
        if let Some(wanted) = engine
            .ticker_priority
            .filter(|p| *p != TickerPriority::default())
        {
            runtime.set_ticker_priority(wanted);
        }
        Self::with_runtime(config, runtime)
    }

    /// Loads every policy of `config` in `runtime`.
    pub fn with_runtime(
        config: RegistryConfig,
        runtime: WasmRuntime,
    ) -> Result<Self, RegistryError> {
        let cache = match &config.cache_dir {
            Some(CacheDir::Configured(dir)) => Some(ArtifactCache::open(dir, runtime.engine())?),
            Some(CacheDir::UserDefault(dir)) => ArtifactCache::open_or_warn(dir, runtime.engine()),
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
            budgets,
            cache,
            ahead,
            table: ArcSwap::from_pointee(table),
            writer: Mutex::new(()),
            config_error: Mutex::new(None),
            config_reload_failures: AtomicU64::new(0),
            isolation,
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
        self.decide(request, &DecisionContext::new(reason)).await
    }

    /// As [`maybe_retry`](Self::maybe_retry), at the given moment `now` (virtual clocks,
    /// replays, tokio's paused time).
    pub async fn maybe_retry_at(
        &self,
        request: &mut Request,
        reason: &RetryReason,
        now: Instant,
    ) -> Result<Decided, RegistryError> {
        self.decide(request, &DecisionContext::new(reason).at(now))
            .await
    }

    /// Decides for `request`, whose failure `context` describes, with the policy the request
    /// resolves to (see [`maybe_retry`](Self::maybe_retry)).
    pub async fn decide(
        &self,
        request: &mut Request,
        context: &DecisionContext<'_>,
    ) -> Result<Decided, RegistryError> {
        // What deciding needs from the published table, read without a lock; the table is
        // not held across the policy's call.
        let (log, target) = {
            let table = self.table.load();
            let slot = table.resolve(request)?;
            let target = Target::Policy {
                version: slot.active.load_full(),
                shadow: slot.shadow.load_full(),
                budget: table.budget_of(&slot.name).cloned(),
            };
            (sampled_log(&table), target)
        };
        Ok(self.decide_for(request, context, log, target).await)
    }

    /// Decides for `request` with `strategy` instead of a configured policy (reference 002
    /// "Customizing the RetryStrategy": a per-request strategy overrides the global one), under
    /// the safety guard, logged in the decision log by the strategy's name. `Decided::version`
    /// is `None`.
    pub async fn decide_using(
        &self,
        request: &mut Request,
        context: &DecisionContext<'_>,
        strategy: &dyn RetryStrategy,
    ) -> Decided {
        let log = sampled_log(&self.table.load());
        self.decide_for(request, context, log, Target::Own(strategy))
            .await
    }

    /// The decision of `target` for `request`, logged in `log` if given.
    async fn decide_for(
        &self,
        request: &mut Request,
        context: &DecisionContext<'_>,
        log: Option<Arc<DecisionLog>>,
        target: Target<'_>,
    ) -> Decided {
        // The request as the policy sees it, kept for the decision log before deciding
        // changes it, and the shadow's answers: boxed, so that the future of a decision that
        // is not logged stays small (an adapter boxes it, and moves it, per request).
        let logged = log
            .as_ref()
            .map(|_| Box::new((request.clone(), context.now(), OnceLock::new())));
        let (decision, version) = match target {
            Target::Own(strategy) => {
                let decision = rules::decide(request, context, strategy, Guard::Enforced).await;
                let labels = || [SharedString::from(strategy.name().to_owned()), "".into()];
                telemetry::record_decision(labels, &decision, context.reason());
                (decision, Err(strategy.name()))
            }
            Target::Policy {
                version,
                shadow,
                budget,
            } => {
                let context = &context.with_budget(budget.as_deref());
                let answers = logged.as_ref().map(|logged| &logged.2);
                let decision = self
                    .decide_with(&version, shadow.as_deref(), request, context, answers)
                    .await;
                (decision, Ok(version))
            }
        };
        let decision_id = DecisionId::next();
        // The executor's attempt span (and any span with this field) names the decision.
        tracing::Span::current().record("decision_id", tracing::field::display(decision_id));
        if let (Some(log), Some(logged)) = (log, logged) {
            let (input, at, shadow_answers) = *logged;
            log.record(Entry {
                time: SystemTime::now(),
                decision_id,
                decided_by: match &version {
                    Ok(version) => {
                        DecidedBy::Version(Arc::clone(version) as Arc<dyn LoggedVersion>)
                    }
                    Err(strategy) => DecidedBy::Strategy((*strategy).to_owned()),
                },
                request: input,
                at,
                reason: context.reason().clone(),
                spec: context.error_map_spec().copied(),
                pushback: context.pushback(),
                decision: decision.clone(),
                attempts: request.retry_attempts(),
                shadow: shadow_answers.into_inner(),
            });
        }
        Decided {
            decision,
            version: version.ok(),
            decision_id,
        }
    }

    /// The decision of `version` (beside its `shadow` trial, whose answers go to `answers` if
    /// given), on the isolation threads for a component when the engine has them.
    async fn decide_with(
        &self,
        version: &Arc<PolicyVersion>,
        shadow: Option<&Shadow>,
        request: &mut Request,
        context: &DecisionContext<'_>,
        answers: Option<&OnceLock<ShadowAnswers>>,
    ) -> Decision {
        version.count_decision();
        let decision = match (shadow, &self.isolation) {
            (None, Some(isolation)) if version.wasm().is_some() => {
                let strategy = Isolated { isolation, version };
                rules::decide(request, context, &strategy, version.guard()).await
            }
            (None, _) => rules::decide(request, context, version.strategy(), version.guard()).await,
            (Some(shadow), _) => {
                let strategy = Shadowed {
                    active: version,
                    shadow,
                    answers,
                };
                rules::decide(request, context, &strategy, version.guard()).await
            }
        };
        telemetry::record_decision(|| version.metric_labels(), &decision, context.reason());
        decision
    }

    /// Installs `log` as the decision log (an application's own sink, see
    /// [`DecisionLog::to_writer`]), or removes the log with `None`. It stays until a
    /// configuration changes the `[decision_log]` table.
    pub fn set_decision_log(&self, log: Option<DecisionLog>) {
        let _writer = lock(&self.writer);
        let mut table = Table::clone(&self.table.load());
        table.decision_log = log.map(Arc::new);
        self.table.store(Arc::new(table));
    }

    /// What the decision log did so far, if there is one.
    pub fn decision_log_stats(&self) -> Option<DecisionLogStats> {
        self.table
            .load()
            .decision_log
            .as_ref()
            .map(|log| log.stats())
    }

    /// `request` ended as `outcome` at `now`: recorded in the retry budget of the policy
    /// that decides for it, if it has one (lock-free: the published table and atomic adds).
    pub fn report(&self, request: &Request, outcome: Outcome, now: Instant) {
        let table = self.table.load();
        if table.budgets.is_empty() {
            return;
        }
        if let Some(budget) = table
            .resolve(request)
            .ok()
            .and_then(|slot| table.budget_of(&slot.name))
        {
            outcome.record_in(budget, now);
        }
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
        let ctx = self.build_context();
        // An OCI tag is resolved again: an explicit reload is when an unpinned tag moves.
        let path = match &slot.definition.source {
            PolicySource::Builtin(_) => return Err(RegistryError::Builtin(name.to_owned())),
            PolicySource::Component(path) => Ok(path.clone()),
            PolicySource::Oci(reference) => fetch_oci(name, reference, &slot.definition, &ctx),
        };
        let result = path.and_then(|path| {
            let bytes = read(name, &path)?;
            let active = slot.active.load_full();
            if hex_sha256(&bytes) == active.hash() {
                return Ok(None);
            }
            slot.build(&path, &bytes, &ctx).map(Some)
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
                slot.reload_failed(error.to_string());
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
    pub fn apply(&self, mut config: RegistryConfig) -> Result<(), RegistryError> {
        let _writer = lock(&self.writer);
        let old = self.table.load_full();
        // Isolation the file leaves unset keeps what the host started with (`serve` sets it).
        if config.engine.isolation.is_none() {
            config.engine.isolation = old.config.engine.isolation;
        }
        if config.cache_dir != old.config.cache_dir || config.engine != old.config.engine {
            tracing::warn!("cache_dir or [engine] changed: they take effect after a restart");
        }
        match build_table(&self.build_context(), config, Some(&old), Failed::Refuse) {
            Ok(table) => {
                self.table.store(Arc::new(table));
                *lock(&self.config_error) = None;
                tracing::info!("configuration applied");
                Ok(())
            }
            Err(error) => {
                tracing::error!(error = %error, "new configuration refused; the running one stays");
                self.config_reload_failed(error.to_string());
                Err(error)
            }
        }
    }

    /// Records a refused configuration: the error stays in the status until one applies.
    fn config_reload_failed(&self, error: String) {
        *lock(&self.config_error) = Some(error);
        self.config_reload_failures.fetch_add(1, Ordering::Relaxed);
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
                self.config_reload_failed(error.to_string());
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
                // Builtins have no file; an OCI component changes by an explicit reload.
                PolicySource::Builtin(_) | PolicySource::Oci(_) => None,
            })
            .collect();
        (table.config.file.clone(), files)
    }

    /// The status of every policy.
    pub fn status(&self) -> RegistryStatus {
        let table = self.table.load();
        let mut policies: Vec<PolicyStatus> = table
            .slots
            .values()
            .map(|slot| table.policy_status(slot))
            .collect();
        policies.sort_by(|a, b| a.name.cmp(&b.name));
        RegistryStatus {
            config_file: table.config.file.as_ref().map(|f| f.display().to_string()),
            config_error: lock(&self.config_error).clone(),
            config_reload_failures: self.config_reload_failures.load(Ordering::Relaxed),
            default_policy: table.config.default_policy.clone(),
            policies,
            cache: self.cache.as_ref().map(ArtifactCache::stats),
            budgets: table
                .config
                .budgets
                .keys()
                .map(|name| {
                    let users = (table.config.policy_budgets.iter())
                        .filter(|(_, budget)| *budget == name)
                        .map(|(policy, _)| policy.clone())
                        .collect();
                    BudgetStatus::of(&table.budgets[name], users)
                })
                .collect(),
        }
    }

    /// The status of policy `name`.
    pub fn policy_status(&self, name: &str) -> Result<PolicyStatus, RegistryError> {
        let table = self.table.load();
        Ok(table.policy_status(table.slot(name)?))
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The decision log of `table`, when it samples the decision being made.
fn sampled_log(table: &Table) -> Option<Arc<DecisionLog>> {
    table
        .decision_log
        .as_ref()
        .filter(|log| log.sampled())
        .cloned()
}
