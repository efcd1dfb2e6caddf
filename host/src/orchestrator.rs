//! The retry orchestrator (reference 001 "Retry Orchestration"): the one place that decides,
//! for a request and a reason, whether to dispatch again, after how long, or how the request
//! ends. It applies the always-retry path with the controlled backoff, asks the strategy
//! otherwise, enforces the safety guard, caps delays to the deadline, and logs every outcome.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::action::{NodeChoice, PolicyFailure, RetryAction};
use crate::backoff::controlled_backoff;
use crate::cassandra_types::ConsistencyLevel;
use crate::context::{DecisionContext, FailureNote};
use crate::deciding::Deciding;
use crate::outcome::{CancelReason, ErrorContext, RetryError};
use crate::reason::RetryReason;
use crate::request::Request;
use crate::strategy::{BestEffort, RetryStrategy};
use crate::thread_counts::ThreadCounts;
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

/// Counters of the orchestrator's outcomes, one copy per thread (threads deciding at once
/// do not contend for their cache line).
#[derive(Default)]
pub struct OrchestratorStats(ThreadCounts<5>);

/// The counters' places in [`OrchestratorStats`].
const RETRIES: usize = 0;
const TIMEOUTS: usize = 1;
const FAILURES: usize = 2;
const REFUSALS: usize = 3;
const BUDGET_REFUSALS: usize = 4;

impl std::fmt::Debug for OrchestratorStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("OrchestratorStats")
            .field(&self.snapshot())
            .finish()
    }
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
            retries: self.0.total(RETRIES),
            timeouts: self.0.total(TIMEOUTS),
            failures: self.0.total(FAILURES),
            refusals: self.0.total(REFUSALS),
            budget_refusals: self.0.total(BUDGET_REFUSALS),
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
    /// the strategy has answered. A strategy that answers at once is asked by this call (see
    /// [`Deciding`]).
    pub fn maybe_retry<'a>(
        &'a self,
        request: &'a mut Request,
        reason: &'a RetryReason,
    ) -> Deciding<'a> {
        self.decide(request, &DecisionContext::new(reason))
    }

    /// As [`maybe_retry`](Self::maybe_retry), at the given moment `now` (for replays and
    /// virtual clocks).
    pub fn maybe_retry_at<'a>(
        &'a self,
        request: &'a mut Request,
        reason: &'a RetryReason,
        now: Instant,
    ) -> Deciding<'a> {
        self.decide(request, &DecisionContext::new(reason).at(now))
    }

    /// Decides what happens to `request`, whose failure `context` describes, with the
    /// request's own strategy or the default one.
    pub fn decide<'a>(
        &'a self,
        request: &'a mut Request,
        context: &DecisionContext<'a>,
    ) -> Deciding<'a> {
        match (&self.budget, context.budget()) {
            (Some(budget), None) => {
                self.decide_with_own_strategy(request, &context.with_budget(Some(budget)))
            }
            _ => self.decide_with_own_strategy(request, context),
        }
    }

    /// [`decide`](Self::decide) once the context names its budget.
    fn decide_with_own_strategy<'a>(
        &'a self,
        request: &'a mut Request,
        context: &DecisionContext<'a>,
    ) -> Deciding<'a> {
        // Own the strategy only when the request overrides it (rare): the shared default is
        // borrowed, so deciding writes no reference count on a cache line every thread shares.
        match request.strategy().cloned() {
            None => {
                let strategy = &*self.default_strategy;
                self.decide_using(request, context, strategy, self.guard_for(strategy))
            }
            Some(own) => {
                let guard = self.guard_for(&*own);
                if let Some(decision) = self.settle_at_once(request, context, &*own, guard) {
                    return Deciding::ready(decision);
                }
                let context = *context;
                Deciding::pending(async move { self.ask(request, &context, &*own, guard).await })
            }
        }
    }

    /// Decides with `strategy` under `guard` instead of the request's or the default strategy
    /// (the registry resolves the strategy itself), at the context's moment or, if it fixes
    /// none, when the strategy has answered.
    pub fn decide_using<'a>(
        &'a self,
        request: &'a mut Request,
        context: &DecisionContext<'a>,
        strategy: &'a dyn RetryStrategy,
        guard: Guard,
    ) -> Deciding<'a> {
        if let Some(decision) = self.settle_at_once(request, context, strategy, guard) {
            return Deciding::ready(decision);
        }
        let context = *context;
        Deciding::pending(async move { self.ask(request, &context, strategy, guard).await })
    }

    /// Whether `strategy` is exempt from the safety guard. No name is hashed when no
    /// strategy is exempt (the common case).
    fn guard_for(&self, strategy: &dyn RetryStrategy) -> Guard {
        if !self.guard_exempt.is_empty() && self.guard_exempt.contains(strategy.name()) {
            Guard::Exempt
        } else {
            Guard::Enforced
        }
    }

    /// The decision, when it needs no waiting: the request is done, the reason is always
    /// retried, or the strategy answers at once. `None` when the strategy must be awaited.
    fn settle_at_once(
        &self,
        request: &mut Request,
        context: &DecisionContext<'_>,
        strategy: &dyn RetryStrategy,
        guard: Guard,
    ) -> Option<Decision> {
        if let Some(decision) = self.settle_without_strategy(request, context) {
            return Some(decision);
        }
        let sync = strategy.as_sync()?;
        let note = FailureNote::default();
        let action = sync.decide(request, &context.with_failure_note(&note));
        Some(self.conclude(request, context, action, note, strategy.name(), guard))
    }

    /// Asks a strategy whose answer may need waiting for, then concludes.
    async fn ask(
        &self,
        request: &mut Request,
        context: &DecisionContext<'_>,
        strategy: &dyn RetryStrategy,
        guard: Guard,
    ) -> Decision {
        if let Some(decision) = self.settle_without_strategy(request, context) {
            return decision;
        }
        let note = FailureNote::default();
        let action = strategy
            .retry_after(request, &context.with_failure_note(&note))
            .await;
        self.conclude(request, context, action, note, strategy.name(), guard)
    }

    /// What is decided before any strategy is asked: a request already done is left alone;
    /// an always-retry reason gets the controlled backoff.
    fn settle_without_strategy(
        &self,
        request: &mut Request,
        context: &DecisionContext<'_>,
    ) -> Option<Decision> {
        let reason = context.reason();
        if request.is_done() {
            tracing::debug!(request_id = request.id(), reason = %reason, "request already done; left alone");
            return Some(Decision::AlreadyDone);
        }
        if reason.always_retry() {
            let delay = controlled_backoff(request.retry_attempts());
            let now = context.now();
            return Some(self.schedule(
                request,
                context,
                (delay, NodeChoice::Same, None),
                DelaySource::ControlledBackoff,
                "orchestrator",
                now,
            ));
        }
        None
    }

    /// The decision once the strategy named `name` answered `action` (its failure, if any,
    /// in `note`): the safety guard, the budget, the deadline and the error context.
    fn conclude(
        &self,
        request: &mut Request,
        context: &DecisionContext<'_>,
        action: RetryAction,
        note: FailureNote,
        name: &str,
        guard: Guard,
    ) -> Decision {
        let reason = context.reason();
        let now = context.now();
        // A retry to schedule makes the first failure's deposit with its withdrawal; every
        // other answer makes it here.
        if !matches!(action, RetryAction::RetryAfter { .. }) {
            deposit_first_failure(request, context, now);
        }
        match action {
            RetryAction::RetryAfter {
                delay,
                node,
                consistency,
            } => {
                let refusal = if reason.never_retry() {
                    Some(CancelReason::NeverRetried(reason.clone()))
                } else if !request.is_idempotent()
                    && !reason.allows_non_idempotent_retry()
                    && guard == Guard::Enforced
                {
                    Some(CancelReason::UnsafeRetryRefused(reason.clone()))
                } else {
                    None
                };
                if let Some(cancel) = refusal {
                    deposit_first_failure(request, context, now);
                    self.refuse(request, cancel, name, now)
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
                self.fail(request, now, cancel.text(), |context| {
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
                self.fail(request, now, cancel.text(), |context| {
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
        // (a timeout) is not. A first failure deposits first, in the same step.
        let first_failure = request.retry_attempts() == 0;
        let granted = match context.budget() {
            Some(budget) if delay < remaining && first_failure => {
                budget.deposit_and_try_withdraw_at(now)
            }
            Some(budget) if delay < remaining => budget.try_withdraw_at(now),
            Some(budget) if first_failure => {
                budget.deposit_at(now);
                true
            }
            _ => true,
        };
        if !granted {
            let cancel = CancelReason::RetryBudgetExhausted(reason.clone());
            self.stats.0.add_one(BUDGET_REFUSALS);
            tracing::debug!(request_id = request.id(), request_type = %request.request_type(),
                reason = %reason, attempts = request.retry_attempts(), strategy,
                "not retried: the retry budget is exhausted");
            return self.fail(request, now, cancel.text(), |context| {
                RetryError::RequestCanceled {
                    reason: cancel,
                    context,
                }
            });
        }
        request.record_retry(reason);
        if delay >= remaining {
            // Reference 001 "Capping the Retry Duration": cap to the time left, then end the
            // request as a timeout at that moment instead of dispatching it again.
            let total = request.elapsed_at(now) + remaining;
            let error = RetryError::timeout(request, total);
            request.cancel("TIMEOUT");
            self.stats.0.add_one(TIMEOUTS);
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
        self.stats.0.add_one(RETRIES);
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
        self.stats.0.add_one(REFUSALS);
        tracing::warn!(request_id = request.id(), request_type = %request.request_type(),
            reason = %cancel.retry_reason(), idempotent = request.is_idempotent(),
            refusal = %cancel, strategy, "safety guard refused the retry the strategy asked for");
        self.fail(request, now, cancel.text(), |context| {
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
        self.stats.0.add_one(FAILURES);
        Decision::Fail(error)
    }
}

/// A request deposits in its budget once, at its first failure's decision, at the decision's
/// moment (one that never fails is reported by its outcome instead). Before any withdrawal the
/// decision makes: a decision that schedules a retry deposits in the same step as it
/// withdraws ([`Orchestrator::schedule`]); any other makes the deposit here.
fn deposit_first_failure(request: &Request, context: &DecisionContext<'_>, now: Instant) {
    if let Some(budget) = context.budget().filter(|_| request.retry_attempts() == 0) {
        budget.deposit_at(now);
    }
}
