//! The Cassandra driver's verdict model for policies: implement the five verdict methods of
//! [`CassandraVerdicts`] and call [`decide`], which applies the driver's hard-coded rules
//! first (Cassandra Java driver 4.x "Retries", "Hard-coded rules").

use crate::convert::{abort_to_host, action_to_wit, reason_to_host, server_error_to_host};
use crate::{
    AbortKind, ConsistencyLevel, NodeChoice, ReadTimeout, Request, Retry, RetryAction, RetryReason,
    ServerErrorKind, Unavailable, WriteTimeout,
};

/// Retry at once on `node`, optionally at another consistency level.
pub fn retry_now(node: NodeChoice, consistency: Option<ConsistencyLevel>) -> RetryAction {
    RetryAction::Retry(Retry {
        delay_ms: 0,
        node,
        consistency,
        attempt_timeout_ms: None,
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
    /// Aborted before a response (asked for idempotent requests only). Default: the verdict
    /// both of the driver's policies give (next node on a closed connection or missed
    /// heartbeat, rethrow otherwise), from the host library itself.
    fn on_request_aborted(&self, kind: AbortKind, _retries: u32) -> RetryAction {
        action_to_wit(&rebound::cassandra::aborted_verdict(abort_to_host(kind)))
    }
    /// Another coordinator error (asked for idempotent requests only). Default: the verdict
    /// both of the driver's policies give (rethrow read and write failures, next node
    /// otherwise), from the host library itself.
    fn on_error_response(&self, kind: ServerErrorKind, _retries: u32) -> RetryAction {
        action_to_wit(&rebound::cassandra::error_response_verdict(
            server_error_to_host(kind),
        ))
    }
}

/// Applies the driver's hard-coded rules and idempotence gate — the host library's own
/// [`route`](rebound::cassandra::route), so guest and host cannot drift — then asks
/// `policy`. The driver's rules are CQL's: a plain HTTP request or gRPC call gets the host's
/// best effort, which never resends one that is not idempotent and was already sent.
pub fn decide(
    policy: &impl CassandraVerdicts,
    request: &Request,
    reason: &RetryReason,
) -> RetryAction {
    use rebound::cassandra::{route, Route};
    if matches!(
        request.service(),
        crate::Service::Http | crate::Service::Grpc
    ) {
        return RetryAction::BestEffort;
    }
    if let Route::Fixed(action) = route(&reason_to_host(reason), request.idempotent()) {
        return action_to_wit(&action);
    }
    let retries = request.retry_attempts();
    match reason {
        RetryReason::ReadTimeout(e) => policy.on_read_timeout(e, retries),
        RetryReason::Unavailable(e) => policy.on_unavailable(e, retries),
        RetryReason::WriteTimeout(e) => policy.on_write_timeout(e, retries),
        RetryReason::RequestAborted(kind) => policy.on_request_aborted(*kind, retries),
        RetryReason::ErrorResponse(kind) => policy.on_error_response(*kind, retries),
        // The only other reason `route` asks about: a socket closed while in flight.
        _ => policy.on_request_aborted(AbortKind::ClosedConnection, retries),
    }
}
