//! The rules that follow from how far a failed attempt got (gRFC A6 "Transparent Retries" and
//! "When Retries are Valid"). They come before any strategy is asked, because A6 makes them the
//! client's own, "regardless of the retry configuration": an attempt the server's application
//! never saw is sent again without counting as a retry, a committed or dropped call is never
//! sent again.

use std::time::Duration;

use super::{cancel, pay, time_out};
use crate::action::NodeChoice;
use crate::backoff::controlled_backoff;
use crate::decision::{Decision, DelaySource, RetryPlan};
use crate::outcome::CancelReason;
use crate::progress::Progress;
use crate::request::Request;
use crate::strategy::DecisionContext;

/// The decision `context`'s progress makes without a strategy, if it makes one.
pub(super) fn settle(request: &mut Request, context: &DecisionContext<'_>) -> Option<Decision> {
    let progress = context.progress();
    let reason = context.reason();
    let refusal = match progress {
        Progress::Committed => CancelReason::Committed(reason.clone()),
        Progress::Dropped => CancelReason::Dropped(reason.clone()),
        _ if progress.is_transparent(request.refused_retried()) => {
            return Some(transparent(request, context));
        }
        _ => return None,
    };
    tracing::info!(request_id = request.id(), request_type = %request.request_type(),
        reason = %reason, progress = %progress, "not retried: the call is committed or dropped");
    // Neither is a failure a throttle counts (grpc-go decides both before its throttle); a
    // request's first failure still deposits in its budget.
    let now = context.now();
    pay::for_first_failure(request, context, now);
    Some(cancel(request, now, refusal))
}

/// A transparent retry: a refused attempt at once, an unsent one after the controlled backoff
/// (reference 001) of the transparent retries made, so that a client whose transport keeps
/// failing before sending does not spin until the deadline. Not a counted retry, not counted in
/// a throttle, not paid from a budget; the deadline still ends the request.
fn transparent(request: &mut Request, context: &DecisionContext<'_>) -> Decision {
    let progress = context.progress();
    let delay = match progress {
        Progress::Refused => Duration::ZERO,
        _ => controlled_backoff(request.transparent_retries()),
    };
    let now = context.now();
    let remaining = request.remaining_at(now);
    if delay >= remaining {
        return time_out(request, context, delay, remaining, "transparent retry", now);
    }
    request.record_transparent_retry(progress);
    tracing::debug!(request_id = request.id(), request_type = %request.request_type(),
        reason = %context.reason(), progress = %progress,
        transparent_retries = request.transparent_retries(),
        delay_ms = delay.as_millis() as u64, "retrying transparently");
    Decision::Retry(RetryPlan {
        delay,
        node: NodeChoice::Same,
        consistency: None,
        attempt: request.retry_attempts(),
        source: DelaySource::Transparent,
    })
}
