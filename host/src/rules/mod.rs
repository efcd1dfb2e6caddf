//! The orchestrator's rules (reference 001 "Retry Orchestration"), applied to one decision
//! whatever strategy answers it: a request already done is left alone; an attempt the server's
//! application never saw is retried transparently and a committed or dropped call ends, as gRFC
//! A6 says (`progress`); an always-retry reason gets the controlled backoff without asking the
//! strategy; otherwise the strategy is asked,
//! and its answer passes the safety guard (no unsafe retry of a non-idempotent request, no
//! retry of a never-retried reason), the retry throttle, the retry budget, and the deadline
//! cap (reference 001 "Capping the Retry Duration"), then ends the request with its error
//! context or schedules the retry. Every outcome is logged.

use std::time::{Duration, Instant};

use crate::action::{NodeChoice, PolicyFailure, RetryAction};
use crate::backoff::controlled_backoff;
use crate::cassandra_types::ConsistencyLevel;
use crate::decision::{Deciding, Decision, DelaySource, RetryPlan};
use crate::outcome::{CancelReason, ErrorContext, RetryError};
use crate::pushback::Pushback;
use crate::reason::ReasonKind;
use crate::request::Request;
use crate::strategy::RetryStrategy;
use crate::strategy::{DecisionContext, FailureNote};

mod pay;
mod progress;

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

/// Applies the rules to `strategy`'s answer under `guard`, at the context's moment or, if it
/// fixes none, when the strategy has answered: at once when no waiting is needed (see
/// [`Deciding`]).
pub(crate) fn apply<'a>(
    request: &'a mut Request,
    context: &DecisionContext<'a>,
    strategy: &'a dyn RetryStrategy,
    guard: Guard,
) -> Deciding<'a> {
    if let Some(decision) = settle_at_once(request, context, strategy, guard) {
        return Deciding::ready(decision);
    }
    let context = *context;
    Deciding::pending(async move { ask(request, &context, strategy, guard).await })
}

/// The decision, when it needs no waiting: the request is done, the reason is always
/// retried, or the strategy answers at once. `None` when the strategy must be awaited.
pub(crate) fn settle_at_once(
    request: &mut Request,
    context: &DecisionContext<'_>,
    strategy: &dyn RetryStrategy,
    guard: Guard,
) -> Option<Decision> {
    if let Some(decision) = settle_without_strategy(request, context) {
        return Some(decision);
    }
    let sync = strategy.as_sync()?;
    let note = FailureNote::default();
    let action = sync.answer(request, &context.with_failure_note(&note));
    Some(conclude(
        request,
        context,
        action,
        note,
        strategy.name(),
        guard,
    ))
}

/// Asks a strategy whose answer may need waiting for, then concludes.
pub(crate) async fn ask(
    request: &mut Request,
    context: &DecisionContext<'_>,
    strategy: &dyn RetryStrategy,
    guard: Guard,
) -> Decision {
    if let Some(decision) = settle_without_strategy(request, context) {
        return decision;
    }
    let note = FailureNote::default();
    let action = strategy
        .retry_after(request, &context.with_failure_note(&note))
        .await;
    conclude(request, context, action, note, strategy.name(), guard)
}

/// What is decided before any strategy is asked: a request already done is left alone; how far
/// the attempt got may settle it (`progress`); an always-retry reason gets the controlled
/// backoff when the request may be sent again.
fn settle_without_strategy(
    request: &mut Request,
    context: &DecisionContext<'_>,
) -> Option<Decision> {
    let reason = context.reason();
    if request.is_done() {
        tracing::debug!(request_id = request.id(), reason = %reason, "request already done; left alone");
        return Some(Decision::AlreadyDone);
    }
    if let Some(decision) = progress::settle(request, context) {
        return Some(decision);
    }
    // An always-retry reason of reference 001 allows a non-idempotent retry; a plain HTTP
    // request or gRPC call that was sent is still not sent again (`may_be_sent_again`).
    if reason.always_retry() && request.may_be_sent_again(reason) {
        let delay = controlled_backoff(request.retry_attempts());
        let now = context.now();
        return Some(schedule(
            request,
            context,
            AskedRetry::after(delay),
            DelaySource::ControlledBackoff,
            "orchestrator",
            now,
        ));
    }
    None
}

/// The decision once the strategy named `name` answered `action` (its failure, if any,
/// in `note`): the safety guard, the throttle and the budget (`pay`), the deadline and the
/// error context.
fn conclude(
    request: &mut Request,
    context: &DecisionContext<'_>,
    action: RetryAction,
    note: FailureNote,
    name: &str,
    guard: Guard,
) -> Decision {
    let now = context.now();
    if let RetryAction::RetryAfter {
        delay,
        node,
        consistency,
        attempt_timeout,
    } = action
    {
        let Some(refusal) = guard_refusal(request, context, guard) else {
            let asked = AskedRetry {
                delay,
                node,
                consistency,
                attempt_timeout,
            };
            return schedule(request, context, asked, DelaySource::Strategy, name, now);
        };
        pay::for_ending(request, context, now);
        return refuse(request, refusal, name, now);
    }
    pay::for_ending(request, context, now);
    end(request, context, action, note, (name, now))
}

/// Why the safety guard refuses a retry of `request`, if it does: its reason is never retried,
/// or the request may not be sent again and `guard` is enforced.
fn guard_refusal(
    request: &Request,
    context: &DecisionContext<'_>,
    guard: Guard,
) -> Option<CancelReason> {
    let reason = context.reason();
    if reason.never_retry() {
        Some(CancelReason::NeverRetried(reason.clone()))
    } else if !request.may_be_sent_again(reason) && guard == Guard::Enforced {
        Some(CancelReason::UnsafeRetryRefused(reason.clone()))
    } else {
        None
    }
}

/// The decision for an answer that is not a retry, once paid, by the strategy `name` at `now`:
/// the request ends with its error context, or (`Ignore`) completes with an empty result.
fn end(
    request: &mut Request,
    context: &DecisionContext<'_>,
    action: RetryAction,
    note: FailureNote,
    (name, now): (&str, Instant),
) -> Decision {
    let reason = context.reason();
    match action {
        RetryAction::RetryAfter { .. } | RetryAction::NoRetry => {
            tracing::info!(request_id = request.id(), request_type = %request.request_type(),
                reason = %reason, attempts = request.retry_attempts(), strategy = name,
                "not retried: strategy answered no retry");
            cancel(request, now, CancelReason::NoMoreRetries(reason.clone()))
        }
        RetryAction::PolicyFailed(kind) => {
            let failure = note
                .into_inner()
                .filter(|failure| failure.kind == kind)
                .unwrap_or_else(|| PolicyFailure::new(kind, "the policy said nothing more"));
            // DEBUG: the policy's own failure line (at most one a second per policy, the
            // rest counted) carries the same; a line per decision here would not be bounded.
            tracing::debug!(request_id = request.id(), request_type = %request.request_type(),
                reason = %reason, failure = %kind, strategy = name,
                "not retried: the policy failed (fail-safe)");
            cancel(
                request,
                now,
                CancelReason::PolicyFailed(failure, reason.clone()),
            )
        }
        RetryAction::Rethrow => {
            tracing::info!(request_id = request.id(), request_type = %request.request_type(),
                reason = %reason, attempts = request.retry_attempts(), strategy = name,
                "not retried: strategy rethrows");
            fail(request, now, "rethrow".into(), |context| {
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
            fail(request, now, error.name().into(), |context| {
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

/// A retry as the strategy or the controlled backoff asked for it.
struct AskedRetry {
    delay: Duration,
    node: NodeChoice,
    consistency: Option<ConsistencyLevel>,
    attempt_timeout: Option<Duration>,
}

impl AskedRetry {
    /// On the same node after `delay`, under the configured attempt timeout.
    const fn after(delay: Duration) -> Self {
        AskedRetry {
            delay,
            node: NodeChoice::Same,
            consistency: None,
            attempt_timeout: None,
        }
    }
}

/// Schedules the `retry` the strategy (or the controlled backoff, by `source`) asked for, once
/// the controls allow and pay for it, or ends the request at its deadline when the delay reaches
/// it (reference 001 "Capping the Retry Duration").
fn schedule(
    request: &mut Request,
    context: &DecisionContext<'_>,
    retry: AskedRetry,
    source: DelaySource,
    strategy: &str,
    now: Instant,
) -> Decision {
    let AskedRetry {
        delay,
        node,
        consistency,
        attempt_timeout,
    } = retry;
    let reason = context.reason();
    let remaining = request.remaining_at(now);
    let ask = pay::RetryAsk {
        dispatched: delay < remaining,
        counted: source == DelaySource::Strategy,
    };
    if let Err(refusal) = pay::for_retry(request, context, ask, now) {
        tracing::debug!(request_id = request.id(), request_type = %request.request_type(),
            reason = %reason, attempts = request.retry_attempts(), strategy,
            refusal = refusal.text(), "not retried: the retry throttle or budget refuses it");
        return cancel(request, now, refusal);
    }
    let pushed_back = matches!(context.pushback(), Some(Pushback::After(_)));
    request.record_retry(reason, pushed_back);
    if !ask.dispatched {
        return time_out(request, context, delay, remaining, strategy, now);
    }
    if let Some(level) = consistency {
        request.set_consistency(level);
    }
    request.set_answered_attempt_timeout(attempt_timeout);
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

/// Reference 001 "Capping the Retry Duration": a retry whose `delay` reaches the deadline is
/// capped to the time left, and the request ends as a timeout at that moment instead of being
/// dispatched again.
fn time_out(
    request: &mut Request,
    context: &DecisionContext<'_>,
    delay: Duration,
    remaining: Duration,
    strategy: &str,
    now: Instant,
) -> Decision {
    let total = request.elapsed_at(now) + remaining;
    let error = RetryError::timeout(request, total);
    request.cancel("TIMEOUT");
    tracing::info!(request_id = request.id(), request_type = %request.request_type(),
        reason = %context.reason(), attempts = request.retry_attempts(),
        requested_delay_ms = delay.as_millis() as u64,
        capped_delay_ms = remaining.as_millis() as u64, error = error.name(), strategy,
        "retry delay reaches the deadline: request times out when it passes");
    Decision::Timeout {
        after: remaining,
        error,
    }
}

fn refuse(request: &mut Request, refusal: CancelReason, strategy: &str, now: Instant) -> Decision {
    tracing::warn!(request_id = request.id(), request_type = %request.request_type(),
        reason = %refusal.retry_reason(), idempotent = request.is_idempotent(),
        refusal = %refusal, strategy, "safety guard refused the retry the strategy asked for");
    cancel(request, now, refusal)
}

/// Ends `request` as canceled for `reason`; or, when the failure is an attempt cut by its
/// timeout, as a timeout (reference 002 "The Ubiquitous TimeoutException": ambiguous if it was
/// dispatched and is not idempotent), its context saying why it was not retried.
fn cancel(request: &mut Request, now: Instant, reason: CancelReason) -> Decision {
    if reason.retry_reason().kind() == ReasonKind::AttemptTimeout {
        let ambiguous = RetryError::timeout_is_ambiguous(request);
        return fail(request, now, reason.text(), |context| {
            RetryError::timeout_in(ambiguous, context)
        });
    }
    fail(request, now, reason.text(), |context| {
        RetryError::RequestCanceled { reason, context }
    })
}

fn fail(
    request: &mut Request,
    now: Instant,
    why: String,
    error: impl FnOnce(Box<ErrorContext>) -> RetryError,
) -> Decision {
    let context = ErrorContext::new(request, Some(why.clone()), request.elapsed_at(now));
    let error = error(Box::new(context));
    request.cancel(why);
    Decision::Fail(error)
}
