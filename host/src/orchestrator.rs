//! The retry orchestrator (reference 001 "Retry Orchestration"): the one place that decides,
//! for a request and a reason, whether to dispatch again, after how long, or how the request
//! ends. It applies the always-retry path with the controlled backoff, asks the strategy
//! otherwise, enforces the safety guard, caps delays to the deadline, and logs every outcome.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::action::{NodeChoice, PolicyFailure, RetryAction};
use crate::backoff::controlled_backoff;
use crate::cassandra_types::ConsistencyLevel;
use crate::context::{DecisionContext, FailureNote};
use crate::outcome::{CancelReason, ErrorContext, RetryError};
use crate::reason::RetryReason;
use crate::request::Request;
use crate::strategy::{BestEffort, RetryStrategy};
use crate::traffic_budget::TrafficBudget;

/// Where a retry delay came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DelaySource {
    /// The controlled backoff of an always-retry reason; the strategy was not asked.
    ControlledBackoff,
    /// The strategy.
    Strategy,
}

/// A retry to dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPlan {
    /// Wait this long, then dispatch again. Always shorter than the time left.
    pub delay: Duration,
    /// Where to dispatch.
    pub node: NodeChoice,
    /// The consistency level to use from now on, if the strategy changed it.
    pub consistency: Option<ConsistencyLevel>,
    /// The retry attempts after this decision (so 1 for the first retry).
    pub attempt: u32,
    /// Who chose the delay.
    pub source: DelaySource,
}

/// What the orchestrator decided.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[must_use]
pub enum Decision {
    /// Dispatch again after the plan's delay.
    Retry(RetryPlan),
    /// The retry delay reaches the deadline: wait `after` (the time left), then the request
    /// ends with `error`, a timeout, without being dispatched again.
    Timeout {
        /// The time left until the deadline.
        after: Duration,
        /// The timeout error.
        error: RetryError,
    },
    /// The request ends now with `error`.
    Fail(RetryError),
    /// The error is ignored: the request completes with an empty result (Cassandra IGNORE).
    Ignore,
    /// The request was already completed or cancelled: left alone.
    AlreadyDone,
}

impl Decision {
    /// The decision's name, as the decision JSON's `decision` field and the metrics'
    /// `decision` label give it: `retry`, `timeout`, `cancel`, `ignore` or `already_done`.
    pub const fn name(&self) -> &'static str {
        match self {
            Decision::Retry(_) => "retry",
            Decision::Timeout { .. } => "timeout",
            Decision::Fail(_) => "cancel",
            Decision::Ignore => "ignore",
            Decision::AlreadyDone => "already_done",
        }
    }
}

/// Whether the safety guard checks a strategy's retries of non-idempotent requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Guard {
    /// Retries of non-idempotent requests for reasons that do not allow them are refused.
    #[default]
    Enforced,
    /// Such retries are dispatched: for a strategy that knows, from application context, that
    /// they cannot lose data.
    Exempt,
}

/// Counters of the orchestrator's outcomes.
#[derive(Debug, Default)]
pub struct OrchestratorStats {
    retries: AtomicU64,
    timeouts: AtomicU64,
    failures: AtomicU64,
    refusals: AtomicU64,
    budget_refusals: AtomicU64,
}

/// A snapshot of [`OrchestratorStats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatsSnapshot {
    /// Retries scheduled.
    pub retries: u64,
    /// Requests ended as timeouts.
    pub timeouts: u64,
    /// Requests ended now (cancelled, terminal, rethrown), refusals included.
    pub failures: u64,
    /// Retries the guard refused (unsafe non-idempotent retries, never-retried reasons).
    pub refusals: u64,
    /// Retries a retry budget could not pay for (counted in `failures` too).
    pub budget_refusals: u64,
}

impl OrchestratorStats {
    /// Reads the counters.
    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            retries: self.retries.load(Ordering::Relaxed),
            timeouts: self.timeouts.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            refusals: self.refusals.load(Ordering::Relaxed),
            budget_refusals: self.budget_refusals.load(Ordering::Relaxed),
        }
    }
}

/// The retry orchestrator.
#[derive(Debug)]
pub struct Orchestrator {
    default_strategy: Arc<dyn RetryStrategy>,
    guard_exempt: HashSet<String>,
    stats: OrchestratorStats,
    budget: Option<Arc<TrafficBudget>>,
}

impl Default for Orchestrator {
    /// An orchestrator whose default strategy is [`BestEffort`].
    fn default() -> Self {
        Orchestrator::new(Arc::new(
            BestEffort::<crate::backoff::ExponentialBackoff>::default(),
        ))
    }
}

impl Orchestrator {
    /// An orchestrator using `default_strategy` for requests without their own.
    pub fn new(default_strategy: Arc<dyn RetryStrategy>) -> Self {
        Orchestrator {
            default_strategy,
            guard_exempt: HashSet::new(),
            stats: OrchestratorStats::default(),
            budget: None,
        }
    }

    /// Draws every retry it decides from `budget` (unless a decision's context names its
    /// own): see [`DecisionContext::with_budget`]. Report requests' ends
    /// ([`Decider::report`](crate::Decider::report); the executor does) so that requests which
    /// never fail count too.
    pub fn with_budget(mut self, budget: Arc<TrafficBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// The budget retries are drawn from, if any.
    pub fn budget(&self) -> Option<&TrafficBudget> {
        self.budget.as_deref()
    }

    /// Exempts the strategy named `name` from the safety guard: its retries of non-idempotent
    /// requests for reasons that do not allow them are dispatched. Use only for a strategy
    /// that knows (from application context) that such a retry cannot lose data.
    pub fn exempt_from_guard(mut self, name: impl Into<String>) -> Self {
        self.guard_exempt.insert(name.into());
        self
    }

    /// The default strategy.
    pub fn default_strategy(&self) -> &Arc<dyn RetryStrategy> {
        &self.default_strategy
    }

    /// The outcome counters.
    pub fn stats(&self) -> &OrchestratorStats {
        &self.stats
    }

    /// Decides what happens to `request`, which failed for `reason`, reading the clock once
    /// the strategy has answered.
    pub async fn maybe_retry(&self, request: &mut Request, reason: &RetryReason) -> Decision {
        self.decide(request, &DecisionContext::new(reason)).await
    }

    /// As [`maybe_retry`](Self::maybe_retry), at the given moment `now` (for replays and
    /// virtual clocks).
    pub async fn maybe_retry_at(
        &self,
        request: &mut Request,
        reason: &RetryReason,
        now: Instant,
    ) -> Decision {
        self.decide(request, &DecisionContext::new(reason).at(now))
            .await
    }

    /// Decides what happens to `request`, whose failure `context` describes, with the
    /// request's own strategy or the default one.
    pub async fn decide(&self, request: &mut Request, context: &DecisionContext<'_>) -> Decision {
        // Own the strategy only when the request overrides it (rare): the shared default is
        // borrowed, so deciding writes no reference count on a cache line every thread shares.
        let override_strategy = request.strategy().cloned();
        let strategy = override_strategy
            .as_deref()
            .unwrap_or(&*self.default_strategy);
        // No name is hashed when no strategy is exempt (the common case).
        let guard = if !self.guard_exempt.is_empty() && self.guard_exempt.contains(strategy.name())
        {
            Guard::Exempt
        } else {
            Guard::Enforced
        };
        match (&self.budget, context.budget()) {
            (Some(budget), None) => {
                let context = context.with_budget(Some(budget));
                self.decide_using(request, &context, strategy, guard).await
            }
            _ => self.decide_using(request, context, strategy, guard).await,
        }
    }

    /// Decides with `strategy` under `guard` instead of the request's or the default strategy
    /// (the registry resolves the strategy itself), at the context's moment or, if it fixes
    /// none, when the strategy has answered.
    pub async fn decide_using(
        &self,
        request: &mut Request,
        context: &DecisionContext<'_>,
        strategy: &dyn RetryStrategy,
        guard: Guard,
    ) -> Decision {
        let reason = context.reason();
        if request.is_done() {
            tracing::debug!(request_id = request.id(), reason = %reason, "request already done; left alone");
            return Decision::AlreadyDone;
        }
        if reason.always_retry() {
            let delay = controlled_backoff(request.retry_attempts());
            let now = context.now();
            deposit_first_failure(request, context, now);
            return self.schedule(
                request,
                context,
                (delay, NodeChoice::Same, None),
                DelaySource::ControlledBackoff,
                "orchestrator",
                now,
            );
        }

        let note = FailureNote::default();
        let action = strategy
            .retry_after(request, &context.with_failure_note(&note))
            .await;
        let now = context.now();
        deposit_first_failure(request, context, now);
        let name = strategy.name();
        match action {
            RetryAction::RetryAfter {
                delay,
                node,
                consistency,
            } => {
                if reason.never_retry() {
                    self.refuse(
                        request,
                        CancelReason::NeverRetried(reason.clone()),
                        name,
                        now,
                    )
                } else if !request.is_idempotent()
                    && !reason.allows_non_idempotent_retry()
                    && guard == Guard::Enforced
                {
                    self.refuse(
                        request,
                        CancelReason::UnsafeRetryRefused(reason.clone()),
                        name,
                        now,
                    )
                } else {
                    self.schedule(
                        request,
                        context,
                        (delay, node, consistency),
                        DelaySource::Strategy,
                        name,
                        now,
                    )
                }
            }
            RetryAction::NoRetry => {
                let cancel = CancelReason::NoMoreRetries(reason.clone());
                tracing::info!(request_id = request.id(), request_type = %request.request_type(),
                    reason = %reason, attempts = request.retry_attempts(), strategy = name,
                    "not retried: strategy answered no retry");
                self.fail(request, now, cancel.to_string(), |context| {
                    RetryError::RequestCanceled {
                        reason: cancel,
                        context,
                    }
                })
            }
            RetryAction::PolicyFailed(kind) => {
                let failure = note
                    .into_inner()
                    .filter(|failure| failure.kind == kind)
                    .unwrap_or_else(|| PolicyFailure::new(kind, "the policy said nothing more"));
                let cancel = CancelReason::PolicyFailed(failure, reason.clone());
                // DEBUG: the policy's own failure line (at most one a second per policy, the
                // rest counted) carries the same; a line per decision here would not be bounded.
                tracing::debug!(request_id = request.id(), request_type = %request.request_type(),
                    reason = %reason, failure = %kind, strategy = name,
                    "not retried: the policy failed (fail-safe)");
                self.fail(request, now, cancel.to_string(), |context| {
                    RetryError::RequestCanceled {
                        reason: cancel,
                        context,
                    }
                })
            }
            RetryAction::Rethrow => {
                tracing::info!(request_id = request.id(), request_type = %request.request_type(),
                    reason = %reason, attempts = request.retry_attempts(), strategy = name,
                    "not retried: strategy rethrows");
                self.fail(request, now, "rethrow".into(), |context| {
                    RetryError::Rethrown {
                        reason: reason.clone(),
                        context,
                    }
                })
            }
            RetryAction::Fail(error) => {
                tracing::info!(request_id = request.id(), request_type = %request.request_type(),
                    reason = %reason, error = %error, strategy = name,
                    "not retried: terminal error");
                self.fail(request, now, error.name().into(), |context| {
                    RetryError::Terminal {
                        error,
                        reason: reason.clone(),
                        context,
                    }
                })
            }
            RetryAction::Ignore => {
                tracing::info!(request_id = request.id(), reason = %reason, strategy = name,
                    "error ignored: request completes with an empty result");
                request.complete();
                Decision::Ignore
            }
        }
    }

    fn schedule(
        &self,
        request: &mut Request,
        context: &DecisionContext<'_>,
        (delay, node, consistency): (Duration, NodeChoice, Option<ConsistencyLevel>),
        source: DelaySource,
        strategy: &str,
        now: Instant,
    ) -> Decision {
        let reason = context.reason();
        let remaining = request.remaining_at(now);
        // A retry that will be dispatched is paid for by the budget; one the deadline ends
        // (a timeout) is not.
        if let Some(budget) = context.budget().filter(|_| delay < remaining) {
            if !budget.try_withdraw_at(now) {
                let cancel = CancelReason::RetryBudgetExhausted(reason.clone());
                self.stats.budget_refusals.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(request_id = request.id(), request_type = %request.request_type(),
                    reason = %reason, attempts = request.retry_attempts(), strategy,
                    "not retried: the retry budget is exhausted");
                return self.fail(request, now, cancel.to_string(), |context| {
                    RetryError::RequestCanceled {
                        reason: cancel,
                        context,
                    }
                });
            }
        }
        request.record_retry(reason);
        if delay >= remaining {
            // Reference 001 "Capping the Retry Duration": cap to the time left, then end the
            // request as a timeout at that moment instead of dispatching it again.
            let total = request.elapsed_at(now) + remaining;
            let error = RetryError::timeout(request, total);
            request.cancel("TIMEOUT");
            self.stats.timeouts.fetch_add(1, Ordering::Relaxed);
            tracing::info!(request_id = request.id(), request_type = %request.request_type(),
                reason = %reason, attempts = request.retry_attempts(),
                requested_delay_ms = delay.as_millis() as u64,
                capped_delay_ms = remaining.as_millis() as u64, error = error.name(), strategy,
                "retry delay reaches the deadline: request times out when it passes");
            return Decision::Timeout {
                after: remaining,
                error,
            };
        }
        if let Some(level) = consistency {
            request.set_consistency(level);
        }
        self.stats.retries.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(request_id = request.id(), request_type = %request.request_type(),
            reason = %reason, attempt = request.retry_attempts(),
            delay_ms = delay.as_millis() as u64, node = ?node, strategy, "retrying");
        Decision::Retry(RetryPlan {
            delay,
            node,
            consistency,
            attempt: request.retry_attempts(),
            source,
        })
    }

    fn refuse(
        &self,
        request: &mut Request,
        cancel: CancelReason,
        strategy: &str,
        now: Instant,
    ) -> Decision {
        self.stats.refusals.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(request_id = request.id(), request_type = %request.request_type(),
            reason = %cancel.retry_reason(), idempotent = request.is_idempotent(),
            refusal = %cancel, strategy, "safety guard refused the retry the strategy asked for");
        self.fail(request, now, cancel.to_string(), |context| {
            RetryError::RequestCanceled {
                reason: cancel,
                context,
            }
        })
    }

    fn fail(
        &self,
        request: &mut Request,
        now: Instant,
        why: String,
        error: impl FnOnce(Box<ErrorContext>) -> RetryError,
    ) -> Decision {
        let context = ErrorContext::new(request, Some(why.clone()), request.elapsed_at(now));
        let error = error(Box::new(context));
        request.cancel(why);
        self.stats.failures.fetch_add(1, Ordering::Relaxed);
        Decision::Fail(error)
    }
}

/// A request deposits in its budget once, at its first failure's decision, at the decision's
/// moment (one that never fails is reported by its outcome instead). Before any withdrawal the
/// decision makes.
fn deposit_first_failure(request: &Request, context: &DecisionContext<'_>, now: Instant) {
    if let Some(budget) = context.budget().filter(|_| request.retry_attempts() == 0) {
        budget.deposit_at(now);
    }
}
