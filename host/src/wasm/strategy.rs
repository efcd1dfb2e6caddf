//! The sandboxed strategy: calls a policy component under per-call limits, turns every way a
//! call can fail into the configured fail-safe, and quarantines a policy that keeps failing.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use wasmtime::{Store, Trap};

use super::bindings::{self as b, RetryPolicy};
use super::component::{LoadError, PolicyComponent};
use super::imports::{CallState, HostTrap, PolicyLabel};
use super::runtime::{SandboxLimits, EPOCH_TICK, SETUP_FUEL_FACTOR};
use super::wasi::WasiConfig;
use crate::action::{PolicyFailureKind, RetryAction};
use crate::budget::RetryBudgets;
use crate::context::DecisionContext;
use crate::reason::RetryReason;
use crate::request::Request;
use crate::strategy::{BestEffort, SyncStrategy};

/// What a failed (or quarantined) policy call answers instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailSafe {
    /// No retry: the request is cancelled with a reason saying the policy failed.
    #[default]
    NoRetry,
    /// The built-in best-effort decision.
    BestEffort,
}

/// When a failing policy is quarantined, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QuarantineConfig {
    /// Consecutive failed calls that quarantine the policy (0: never).
    pub after_failures: u32,
    /// How long a quarantine lasts before one call is let through to probe recovery.
    pub cooldown_ms: u64,
}

impl Default for QuarantineConfig {
    fn default() -> Self {
        QuarantineConfig {
            after_failures: 5,
            cooldown_ms: 30_000,
        }
    }
}

/// How a policy component is run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WasmStrategyConfig {
    /// Per-call limits.
    pub limits: SandboxLimits,
    /// The answer when a call fails.
    pub fail_safe: FailSafe,
    /// Quarantine of a policy that keeps failing.
    pub quarantine: QuarantineConfig,
    /// Parameters handed to the policy's `configure`.
    pub params: BTreeMap<String, String>,
    /// What the policy's WASI imports answer, if it has any.
    pub wasi: WasiConfig,
}

const FAILURE_KINDS: [PolicyFailureKind; 8] = [
    PolicyFailureKind::Trap,
    PolicyFailureKind::Panic,
    PolicyFailureKind::Timeout,
    PolicyFailureKind::FuelExhausted,
    PolicyFailureKind::MemoryLimitExceeded,
    PolicyFailureKind::StackOverflow,
    PolicyFailureKind::InvalidAnswer,
    PolicyFailureKind::Quarantined,
];

/// A snapshot of a policy's health.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyStats {
    /// Calls answered by the policy itself.
    pub decisions: u64,
    /// Failed or skipped calls, by kind name.
    pub failures: BTreeMap<&'static str, u64>,
    /// Times the policy was quarantined.
    pub quarantines: u64,
    /// Whether it is quarantined now.
    pub quarantined: bool,
    /// Consecutive failures so far.
    pub consecutive_failures: u32,
    /// What the last failure was (kind and detail, e.g. the guest's panic message).
    pub last_failure: Option<String>,
}

/// An instantiated, configured policy instance.
struct Warm {
    store: Store<CallState>,
    policy: RetryPolicy,
}

/// A retry strategy implemented by a sandboxed policy component.
pub struct WasmStrategy {
    component: PolicyComponent,
    config: WasmStrategyConfig,
    params: Vec<(String, String)>,
    label: PolicyLabel,
    budgets: Arc<RetryBudgets>,
    idle: Mutex<Vec<Warm>>,
    max_idle: usize,
    base: Instant,
    /// Nanoseconds after `base` until which the policy is quarantined; 0 when it is not.
    quarantined_until: AtomicU64,
    consecutive_failures: AtomicU32,
    decisions: AtomicU64,
    failures: [AtomicU64; FAILURE_KINDS.len()],
    quarantines: AtomicU64,
    last_failure: Mutex<Option<String>>,
}

impl std::fmt::Debug for WasmStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmStrategy")
            .field("policy", &self.component.name())
            .field("version", &self.component.version())
            .finish_non_exhaustive()
    }
}

/// A policy call that failed: the kind of failure and what happened (e.g. the guest's panic
/// message, the trap, the limit it hit).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {detail}")]
pub struct CallFailure {
    /// The kind of failure.
    pub kind: PolicyFailureKind,
    /// What happened.
    pub detail: String,
}

impl CallFailure {
    fn new(kind: PolicyFailureKind, detail: impl Into<String>) -> Self {
        CallFailure {
            kind,
            detail: detail.into(),
        }
    }
}

impl WasmStrategy {
    /// Runs `component` with `config`, sharing `budgets` with other policies. One instance is
    /// created and configured now, so a policy that rejects its parameters, or fails while
    /// configuring, is refused here rather than on the first decision.
    pub fn new(
        component: PolicyComponent,
        config: WasmStrategyConfig,
        budgets: Arc<RetryBudgets>,
    ) -> Result<Self, LoadError> {
        let label = PolicyLabel {
            name: component.name().into(),
            version: component.version().into(),
        };
        let params = config
            .params
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let strategy = WasmStrategy {
            component,
            config,
            params,
            label,
            budgets,
            idle: Mutex::new(Vec::new()),
            max_idle: std::thread::available_parallelism().map_or(2, |n| n.get() * 2),
            base: Instant::now(),
            quarantined_until: AtomicU64::new(0),
            consecutive_failures: AtomicU32::new(0),
            decisions: AtomicU64::new(0),
            failures: Default::default(),
            quarantines: AtomicU64::new(0),
            last_failure: Mutex::new(None),
        };
        let warm = strategy
            .instantiate()
            .map_err(|failure| LoadError::Configure {
                policy: strategy.component.name().to_owned(),
                message: failure.to_string(),
            })?;
        strategy.release(warm);
        Ok(strategy)
    }

    /// The component.
    pub fn component(&self) -> &PolicyComponent {
        &self.component
    }

    /// The configuration.
    pub fn config(&self) -> &WasmStrategyConfig {
        &self.config
    }

    /// The policy's health counters.
    pub fn stats(&self) -> PolicyStats {
        PolicyStats {
            decisions: self.decisions.load(Ordering::Relaxed),
            failures: FAILURE_KINDS
                .iter()
                .zip(&self.failures)
                .map(|(k, n)| (k.name(), n.load(Ordering::Relaxed)))
                .filter(|(_, n)| *n > 0)
                .collect(),
            quarantines: self.quarantines.load(Ordering::Relaxed),
            quarantined: self.quarantined_until.load(Ordering::Relaxed) != 0,
            consecutive_failures: self.consecutive_failures.load(Ordering::Relaxed),
            last_failure: self
                .last_failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }

    /// Arms `store` for one call: a decision's budgets, or an instance's setup budgets.
    fn arm(&self, store: &mut Store<CallState>, setup: bool) -> Result<(), CallFailure> {
        let limits = &self.config.limits;
        let (fuel, deadline_ms) = if setup {
            (
                limits.fuel.saturating_mul(SETUP_FUEL_FACTOR),
                limits.setup_deadline_ms,
            )
        } else {
            (limits.fuel, limits.deadline_ms)
        };
        store
            .set_fuel(fuel)
            .map_err(|e| CallFailure::new(PolicyFailureKind::Trap, format!("{e:#}")))?;
        let ticks = deadline_ms.div_ceil(EPOCH_TICK.as_millis() as u64) + 1;
        store.set_epoch_deadline(ticks);
        store.data_mut().deadline.reset();
        Ok(())
    }

    fn instantiate(&self) -> Result<Warm, CallFailure> {
        let memory_cap = usize::try_from(self.config.limits.memory_bytes).unwrap_or(usize::MAX);
        let state = CallState::new(
            self.label.clone(),
            Arc::clone(&self.budgets),
            memory_cap,
            self.config.wasi,
        );
        let mut store = Store::new(self.component.runtime().engine(), state);
        store.limiter(|state| state);
        store.epoch_deadline_callback(|mut store| Ok(store.data_mut().deadline.on_deadline()));
        self.arm(&mut store, true)?;
        let policy = self
            .component
            .pre()
            .instantiate(&mut store)
            .map_err(classify)?;
        policy
            .rebound_policy_strategy()
            .call_configure(&mut store, &self.params)
            .map_err(classify)?
            .map_err(|message| {
                CallFailure::new(
                    PolicyFailureKind::InvalidAnswer,
                    format!("configure: {message}"),
                )
            })?;
        Ok(Warm { store, policy })
    }

    fn release(&self, warm: Warm) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < self.max_idle {
            idle.push(warm);
        }
    }

    /// Asks the policy once, outside the fail-safe, the quarantine and the health counters:
    /// its answer as given (the orchestrator's safety guard has not seen it), or how the call
    /// failed. The registry smoke-tests a version with it; `rebound check` runs a grid of
    /// inputs through it.
    pub fn try_decide(
        &self,
        request: &Request,
        context: &DecisionContext<'_>,
    ) -> Result<RetryAction, CallFailure> {
        let reason = context.reason();
        let warm = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut warm = match warm {
            Some(warm) => warm,
            None => self.instantiate()?,
        };
        self.arm(&mut warm.store, false)?;
        let state = warm.store.data_mut();
        if !Arc::ptr_eq(&state.client_context, request.shared_client_context()) {
            state.client_context = Arc::clone(request.shared_client_context());
        }
        state.error_map_spec = context.error_map_spec().copied();
        state.decision_time = context.moment();
        // `elapsed-ms` is whole milliseconds: the epoch ticker's coarse clock is precise enough
        // when the caller did not fix the decision's moment.
        let now = context
            .moment()
            .unwrap_or_else(|| self.component.runtime().coarse_now());
        state.request = Some(b::request_to_wit(request, now));
        let wit_reason = b::reason_to_wit(reason);
        let answer = warm
            .policy
            .rebound_policy_strategy()
            .call_retry_after(&mut warm.store, &wit_reason)
            .map_err(classify)?;
        let action = b::action_to_host(&answer, request, reason);
        if let RetryAction::RetryAfter { delay, .. } = action {
            let max = Duration::from_millis(self.config.limits.max_delay_ms);
            if delay > max {
                return Err(CallFailure::new(
                    PolicyFailureKind::InvalidAnswer,
                    format!("delay {delay:?} exceeds the maximum of {max:?}"),
                ));
            }
        }
        self.release(warm);
        Ok(action)
    }

    fn fail_safe(
        &self,
        kind: PolicyFailureKind,
        request: &Request,
        reason: &RetryReason,
    ) -> RetryAction {
        match self.config.fail_safe {
            FailSafe::NoRetry => RetryAction::PolicyFailed(kind),
            FailSafe::BestEffort => BestEffort::default_decision(request, reason),
        }
    }

    fn now_nanos(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    fn record_failure(&self, kind: PolicyFailureKind) {
        let index = FAILURE_KINDS.iter().position(|k| *k == kind).unwrap_or(0);
        self.failures[index].fetch_add(1, Ordering::Relaxed);
    }

    fn on_success(&self) {
        self.decisions.fetch_add(1, Ordering::Relaxed);
        // Load first: the common healthy case then writes nothing shared.
        if self.consecutive_failures.load(Ordering::Relaxed) > 0
            && self.consecutive_failures.swap(0, Ordering::Relaxed) > 0
            && self.quarantined_until.swap(0, Ordering::Relaxed) != 0
        {
            tracing::info!(
                policy = &*self.label.name,
                version = &*self.label.version,
                "policy recovered: quarantine lifted"
            );
        }
    }

    fn on_failure(&self, failure: CallFailure, request: &Request, reason: &RetryReason) {
        let CallFailure { kind, detail } = failure;
        self.record_failure(kind);
        *self.last_failure.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(format!("{kind}: {detail}"));
        let failures = self.consecutive_failures.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::warn!(policy = &*self.label.name, version = &*self.label.version,
            failure = %kind, detail = %detail, request_id = request.id(), reason = %reason,
            consecutive_failures = failures, "policy call failed; fail-safe applied, instance discarded");
        let threshold = self.config.quarantine.after_failures;
        if threshold > 0 && failures >= threshold {
            let until = self.now_nanos().saturating_add(
                u64::try_from(Duration::from_millis(self.config.quarantine.cooldown_ms).as_nanos())
                    .unwrap_or(u64::MAX),
            );
            self.quarantined_until.store(until, Ordering::Relaxed);
            self.quarantines.fetch_add(1, Ordering::Relaxed);
            tracing::error!(policy = &*self.label.name, version = &*self.label.version,
                consecutive_failures = failures, cooldown_ms = self.config.quarantine.cooldown_ms,
                fail_safe = ?self.config.fail_safe, "policy quarantined");
        }
    }
}

/// Maps a call error to its failure kind.
fn classify(error: wasmtime::Error) -> CallFailure {
    if let Some(trap) = error.downcast_ref::<HostTrap>() {
        let kind = match trap {
            HostTrap::Panic(_) => PolicyFailureKind::Panic,
            HostTrap::Denied(_) | HostTrap::NoFailure(_) => PolicyFailureKind::Trap,
            HostTrap::MemoryLimitExceeded { .. } => PolicyFailureKind::MemoryLimitExceeded,
        };
        return CallFailure::new(kind, trap.to_string());
    }
    let kind = match error.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => PolicyFailureKind::FuelExhausted,
        Some(Trap::Interrupt) => PolicyFailureKind::Timeout,
        Some(Trap::StackOverflow) => PolicyFailureKind::StackOverflow,
        _ => PolicyFailureKind::Trap,
    };
    CallFailure::new(kind, format!("{error:#}"))
}

impl SyncStrategy for WasmStrategy {
    fn name(&self) -> &str {
        self.component.name()
    }

    fn decide(&self, request: &Request, context: &DecisionContext<'_>) -> RetryAction {
        let reason = context.reason();
        let until = self.quarantined_until.load(Ordering::Relaxed);
        if until != 0 && self.now_nanos() < until {
            self.record_failure(PolicyFailureKind::Quarantined);
            return self.fail_safe(PolicyFailureKind::Quarantined, request, reason);
        }
        match self.try_decide(request, context) {
            Ok(action) => {
                self.on_success();
                action
            }
            Err(failure) => {
                let kind = failure.kind;
                self.on_failure(failure, request, reason);
                self.fail_safe(kind, request, reason)
            }
        }
    }
}
