//! The Cassandra driver's verdict model for policies: implement the five verdict methods of
//! [`CassandraVerdicts`] and call [`decide`], which applies the driver's hard-coded rules
//! first (Cassandra Java driver 4.x "Retries", "Hard-coded rules").

use crate::{
    AbortKind, ConsistencyLevel, NodeChoice, ReadTimeout, ReasonExt, Request, Retry, RetryAction,
    RetryReason, ServerErrorKind, Unavailable, WriteTimeout,
};

/// Retry at once on `node`, optionally at another consistency level.
pub fn retry_now(node: NodeChoice, consistency: Option<ConsistencyLevel>) -> RetryAction {
    RetryAction::Retry(Retry {
        delay_ms: 0,
        node,
        consistency,
    })
}

/// A driver retry policy; `retries` is the number of retries already made.
pub trait CassandraVerdicts {
    /// READ_TIMEOUT.
    fn on_read_timeout(&self, e: &ReadTimeout, retries: u32) -> RetryAction;
    /// WRITE_TIMEOUT (asked for idempotent requests only).
    fn on_write_timeout(&self, e: &WriteTimeout, retries: u32) -> RetryAction;
    /// UNAVAILABLE.
    fn on_unavailable(&self, e: &Unavailable, retries: u32) -> RetryAction;
    /// Aborted before a response (asked for idempotent requests only). Default, as both of
    /// the driver's policies: next node on a closed connection or missed heartbeat, rethrow
    /// otherwise (a driver bug).
    fn on_request_aborted(&self, kind: AbortKind, _retries: u32) -> RetryAction {
        match kind {
            AbortKind::ClosedConnection | AbortKind::Heartbeat => retry_now(NodeChoice::Next, None),
            AbortKind::Other => RetryAction::Rethrow,
        }
    }
    /// Another coordinator error (asked for idempotent requests only). Default, as both of
    /// the driver's policies: rethrow read and write failures, next node otherwise.
    fn on_error_response(&self, kind: ServerErrorKind, _retries: u32) -> RetryAction {
        match kind {
            ServerErrorKind::ReadFailure | ServerErrorKind::WriteFailure => RetryAction::Rethrow,
            _ => retry_now(NodeChoice::Next, None),
        }
    }
}

/// Applies the driver's hard-coded rules, then asks `policy`: never-retried errors are
/// rethrown; pre-dispatch errors and bootstrapping nodes go to the next node; unprepared
/// statements are retried on the same node; write timeouts, aborts and error responses of
/// non-idempotent requests are rethrown without asking; anything else unknown is rethrown.
pub fn decide(
    policy: &impl CassandraVerdicts,
    request: &Request,
    reason: &RetryReason,
) -> RetryAction {
    let retries = request.retry_attempts;
    let idempotent = request.idempotent;
    if reason.never_retry() {
        return RetryAction::Rethrow;
    }
    match reason {
        RetryReason::ReadTimeout(e) => policy.on_read_timeout(e, retries),
        RetryReason::Unavailable(e) => policy.on_unavailable(e, retries),
        RetryReason::WriteTimeout(e) if idempotent => policy.on_write_timeout(e, retries),
        RetryReason::RequestAborted(kind) if idempotent => {
            policy.on_request_aborted(*kind, retries)
        }
        RetryReason::SocketClosedWhileInFlight if idempotent => {
            policy.on_request_aborted(AbortKind::ClosedConnection, retries)
        }
        RetryReason::ErrorResponse(kind) if idempotent => policy.on_error_response(*kind, retries),
        RetryReason::Bootstrapping => retry_now(NodeChoice::Next, None),
        RetryReason::Unprepared => retry_now(NodeChoice::Same, None),
        r if r.is_pre_dispatch() => retry_now(NodeChoice::Next, None),
        _ => RetryAction::Rethrow,
    }
}
