//! Where a decision pays. A failure must be counted in its throttle once and deposited in its
//! budget once, and a retry paid for once, whatever path the decision takes (a retry, a refusal,
//! an ending, a timeout at the deadline); spread over the rules' call sites that rule is easy to
//! break. Here is the one ordered step that does it (docs/breakers.md: throttle, then budget).

use std::sync::Arc;
use std::time::Instant;

use crate::outcome::CancelReason;
use crate::request::Request;
use crate::strategy::DecisionContext;
use crate::throttle::{FailureClass, RetryThrottle};

/// What a retry asks of the controls.
#[derive(Debug, Clone, Copy)]
pub(super) struct RetryAsk {
    /// Whether the retry would be dispatched (its delay ends before the deadline); one the
    /// deadline ends is a timeout and is neither throttled nor paid for.
    pub dispatched: bool,
    /// Whether the failure counts in the throttle: a strategy's retry does; an always-retry
    /// reason's (a routing correction, as gRFC A6's transparent retries) does not.
    pub counted: bool,
}

/// A failure that is not retried: deposited once (the request's first failure) and counted in
/// the throttle once.
pub(super) fn for_ending(request: &Request, context: &DecisionContext<'_>, now: Instant) {
    deposit_first_failure(request, context, now);
    count_failure(request, context, now);
}

/// A retry: the throttle counts the failure, then says whether a retry may go (gRFC A6: the
/// count falls before the threshold is looked at); then the budget pays for it, a first failure
/// depositing in the same step. `Err` names why the retry is refused; what was counted stays
/// counted.
pub(super) fn for_retry(
    request: &Request,
    context: &DecisionContext<'_>,
    ask: RetryAsk,
    now: Instant,
) -> Result<(), CancelReason> {
    let throttle = if ask.counted {
        count_failure(request, context, now)
    } else {
        None
    };
    if ask.dispatched && throttle.is_some_and(|throttle| !throttle.allows_retry_at(now)) {
        deposit_first_failure(request, context, now);
        return Err(CancelReason::RetryThrottled(context.reason().clone()));
    }
    let first_failure = request.retry_attempts() == 0;
    let granted = match context.budget() {
        Some(budget) if ask.dispatched && first_failure => budget.deposit_and_try_withdraw_at(now),
        Some(budget) if ask.dispatched => budget.try_withdraw_at(now),
        Some(budget) if first_failure => {
            budget.deposit_at(now);
            true
        }
        _ => true,
    };
    if granted {
        Ok(())
    } else {
        Err(CancelReason::RetryBudgetExhausted(context.reason().clone()))
    }
}

/// A request deposits in its budget once, at its first failure's decision (one that never
/// fails is reported by its outcome instead).
pub(super) fn for_first_failure(request: &Request, context: &DecisionContext<'_>, now: Instant) {
    deposit_first_failure(request, context, now);
}

fn deposit_first_failure(request: &Request, context: &DecisionContext<'_>, now: Instant) {
    if let Some(budget) = context.budget().filter(|_| request.retry_attempts() == 0) {
        budget.deposit_at(now);
    }
}

/// Counts the failure being decided in the request's throttle, if it has one, at the cost of
/// its reason's class, as many times as the callee says it attempted it; the throttle, to ask
/// whether a retry may go.
fn count_failure(
    request: &Request,
    context: &DecisionContext<'_>,
    now: Instant,
) -> Option<Arc<RetryThrottle>> {
    let throttle = context.throttle()?.for_request(request, now);
    let class = FailureClass::of(context.reason(), context.pushback());
    throttle.failed_times_at(class, context.upstream_attempts(), now);
    Some(throttle)
}
