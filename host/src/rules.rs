//! The orchestrator's rules (reference 001 "Retry Orchestration"), applied to one decision
//! whatever strategy answers it: a request already done is left alone; an always-retry reason
//! gets the controlled backoff without asking the strategy; otherwise the strategy is asked,
//! and its answer passes the safety guard (no unsafe retry of a non-idempotent request, no
//! retry of a never-retried reason), the retry throttle, the retry budget, and the deadline
//! cap (reference 001 "Capping the Retry Duration"), then ends the request with its error
//! context or schedules the retry. Every outcome is logged.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::action::{NodeChoice, PolicyFailure, RetryAction};
use crate::backoff::controlled_backoff;
use crate::cassandra_types::ConsistencyLevel;
use crate::context::{DecisionContext, FailureNote};
use crate::decision::{Deciding, Decision, DelaySource, RetryPlan};
use crate::outcome::{CancelReason, ErrorContext, RetryError};
use crate::pushback::Pushback;
use crate::request::Request;
use crate::strategy::RetryStrategy;
use crate::throttle::{FailureClass, RetryThrottle};

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

/// Decides with `strategy` under `guard`, at the context's moment or, if it fixes none, when
/// the strategy has answered: at once when no waiting is needed (see [`Deciding`]).
pub(crate) fn decide<'a>(
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

/// What is decided before any strategy is asked: a request already done is left alone;
/// an always-retry reason gets the controlled backoff when the request may be sent again.
fn settle_without_strategy(
    request: &mut Request,
    context: &DecisionContext<'_>,
) -> Option<Decision> {
    let reason = context.reason();
    if request.is_done() {
        tracing::debug!(request_id = request.id(), reason = %reason, "request already done; left alone");
        return Some(Decision::AlreadyDone);
    }
    // An always-retry reason of reference 001 allows a non-idempotent retry; a plain HTTP
    // request or gRPC call that was sent is still not sent again (`may_be_sent_again`).
    if reason.always_retry() && request.may_be_sent_again(reason) {
        let delay = controlled_backoff(request.retry_attempts());
        let now = context.now();
        return Some(schedule(
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
    request: &mut Request,
    context: &DecisionContext<'_>,
    action: RetryAction,
    note: FailureNote,
    name: &str,
    guard: Guard,
) -> Decision {
    let reason = context.reason();
    let now = context.now();
    // A retry to schedule makes the first failure's deposit with its withdrawal and counts
    // the failure in the throttle before asking it; every other answer does both here.
    if !matches!(action, RetryAction::RetryAfter { .. }) {
        deposit_first_failure(request, context, now);
        throttle_failure(request, context, now);
    }
    match action {
        RetryAction::RetryAfter {
            delay,
            node,
            consistency,
        } => {
            let refusal = if reason.never_retry() {
                Some(CancelReason::NeverRetried(reason.clone()))
            } else if !request.may_be_sent_again(reason) && guard == Guard::Enforced {
                Some(CancelReason::UnsafeRetryRefused(reason.clone()))
            } else {
                None
            };
            if let Some(cancel) = refusal {
                deposit_first_failure(request, context, now);
                throttle_failure(request, context, now);
                refuse(request, cancel, name, now)
            } else {
                schedule(
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
            fail(request, now, cancel.text(), |context| {
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
            fail(request, now, cancel.text(), |context| {
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

fn schedule(
    request: &mut Request,
    context: &DecisionContext<'_>,
    (delay, node, consistency): (Duration, NodeChoice, Option<ConsistencyLevel>),
    source: DelaySource,
    strategy: &str,
    now: Instant,
) -> Decision {
    let reason = context.reason();
    let remaining = request.remaining_at(now);
    // The throttle counts the failure, then says whether a retry may go (gRFC A6: the count
    // falls before the threshold is looked at); a retry the deadline ends is a timeout
    // whatever it says. Always-retry reasons (routing corrections, which A6's transparent
    // retries resemble) are neither counted nor throttled.
    let throttle = match source {
        DelaySource::Strategy => throttle_failure(request, context, now),
        _ => None,
    };
    if delay < remaining && throttle.is_some_and(|throttle| !throttle.allows_retry_at(now)) {
        let cancel = CancelReason::RetryThrottled(reason.clone());
        tracing::debug!(request_id = request.id(), request_type = %request.request_type(),
            reason = %reason, attempts = request.retry_attempts(), strategy,
            "not retried: the retry throttle refuses retries");
        deposit_first_failure(request, context, now);
        return fail(request, now, cancel.text(), |context| {
            RetryError::RequestCanceled {
                reason: cancel,
                context,
            }
        });
    }
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
        tracing::debug!(request_id = request.id(), request_type = %request.request_type(),
            reason = %reason, attempts = request.retry_attempts(), strategy,
            "not retried: the retry budget is exhausted");
        return fail(request, now, cancel.text(), |context| {
            RetryError::RequestCanceled {
                reason: cancel,
                context,
            }
        });
    }
    let pushed_back = matches!(context.pushback(), Some(Pushback::After(_)));
    request.record_retry(reason, pushed_back);
    if delay >= remaining {
        // Reference 001 "Capping the Retry Duration": cap to the time left, then end the
        // request as a timeout at that moment instead of dispatching it again.
        let total = request.elapsed_at(now) + remaining;
        let error = RetryError::timeout(request, total);
        request.cancel("TIMEOUT");
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

fn refuse(request: &mut Request, cancel: CancelReason, strategy: &str, now: Instant) -> Decision {
    tracing::warn!(request_id = request.id(), request_type = %request.request_type(),
        reason = %cancel.retry_reason(), idempotent = request.is_idempotent(),
        refusal = %cancel, strategy, "safety guard refused the retry the strategy asked for");
    fail(request, now, cancel.text(), |context| {
        RetryError::RequestCanceled {
            reason: cancel,
            context,
        }
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

/// A request deposits in its budget once, at its first failure's decision, at the decision's
/// moment (one that never fails is reported by its outcome instead). Before any withdrawal the
/// decision makes: a decision that schedules a retry deposits in the same step as it
/// withdraws (`schedule`); any other makes the deposit here.
fn deposit_first_failure(request: &Request, context: &DecisionContext<'_>, now: Instant) {
    if let Some(budget) = context.budget().filter(|_| request.retry_attempts() == 0) {
        budget.deposit_at(now);
    }
}

/// Counts the failure being decided in the request's throttle, if it has one, at the cost of
/// its reason's class; the throttle, to ask whether a retry may go.
fn throttle_failure(
    request: &Request,
    context: &DecisionContext<'_>,
    now: Instant,
) -> Option<Arc<RetryThrottle>> {
    let throttle = context.throttle()?.for_request(request, now);
    throttle.failed_at(FailureClass::of(context.reason(), context.pushback()), now);
    Some(throttle)
}
