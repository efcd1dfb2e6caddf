//! What the executor does once a call of the operation ended (answered, failed or cut short by
//! the deadline): the request counts as dispatched if the call said so, the end is counted in
//! the breaker of the call's node, and an answer's latency is told to the request's controls.

use tokio::time::Instant;

use super::attempt::{Admitted, Attempt};
use super::failure::Failure;
use crate::breaker::{self, Admission};
use crate::controls::PolicyControls;
use crate::retry_loop::RetryLoop;

/// How a call ended: its result, or `None` when the deadline cut it short.
pub(super) type CallEnd<'a, T, E> = Option<&'a Result<T, Failure<E>>>;

/// Settles the call `attempt` ended as `end`, under the request's `controls`: the request
/// counts as dispatched to the node it was written to, the end is counted in that node's
/// breaker, and an answer's latency is recorded.
pub(super) fn settle<T, E>(
    retry: &mut RetryLoop,
    controls: &PolicyControls,
    end: CallEnd<'_, T, E>,
    attempt: &Attempt,
) {
    let breakers = controls.breakers();
    let nodes = attempt.take_nodes();
    let written_to = match end {
        Some(Err(failure)) => failure.dispatched_to.as_deref(),
        _ => None,
    };
    if let Some(breakers) = breakers {
        let node = match &nodes.admitted {
            Some(admitted) => Some(Ok(admitted)),
            None => written_to.or(nodes.dispatched_to.as_deref()).map(Err),
        };
        if let (Some(node), Some(failed)) = (node, failed(end)) {
            let now = Instant::now().into_std();
            match node {
                Ok(Admitted {
                    node,
                    breaker: Some(breaker),
                    admission,
                }) => breakers.record_in(breaker, node, *admission, failed, now),
                // A node past `max_nodes`: it has no breaker.
                Ok(Admitted { breaker: None, .. }) => {}
                Err(node) => breakers.record_at(node, Admission::Admitted, failed, now),
            }
        }
    }
    if let Some(to) = nodes.dispatched_to {
        retry.dispatched(to);
    }
    if end.is_some() {
        controls.attempt_answered(retry.request(), attempt.running_for());
    }
}

/// Settles a call dropped before it ended (another copy answered first): the request counts
/// as dispatched if it said so; a breaker counts nothing, having no end to count.
pub(super) fn settle_dropped(retry: &mut RetryLoop, attempt: &Attempt) {
    if let Some(to) = attempt.take_nodes().dispatched_to {
        retry.dispatched(to);
    }
}

/// How a call's end counts in a breaker: a success, a final failure and an answer that is not
/// retried count as answers (`false`); a failure counts as [`breaker::failure_counts`] says; a
/// call the deadline cut short counts as a failure.
fn failed<T, E>(end: CallEnd<'_, T, E>) -> Option<bool> {
    match end {
        Some(Ok(_)) => Some(false),
        Some(Err(failure)) => match failure.cause.reason() {
            Some(reason) => breaker::failure_counts(reason, failure.pushback),
            None => Some(false),
        },
        None => Some(true),
    }
}
