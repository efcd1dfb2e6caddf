//! The driver's request errors as Rebound's reasons (reference 003 "Retries"): read and write
//! timeouts, unavailable and the other coordinator errors with their data, a broken connection
//! as an aborted request. What the driver settles before any policy is asked (reference 003
//! "Hard-coded rules") and what no retry can fix are answered here without asking.

use rebound::cassandra::{AbortKind, ServerErrorKind, WriteType as ReboundWriteType};
use rebound::{reasons, ReadTimeout, RetryReason, Unavailable, WriteTimeout};
use scylla::errors::{BrokenConnectionErrorKind, DbError, RequestAttemptError, WriteType};
use scylla::policies::retry::RetryDecision;

use crate::consistency::to_rebound;

/// What the adapter does with a driver error.
#[derive(Debug, Clone, PartialEq)]
pub enum Mapped {
    /// A policy decides, for this reason.
    Ask(RetryReason),
    /// Decided without a policy: the driver's hard-coded rules, or an error no retry can fix
    /// (the safe default, no retry).
    Fixed(RetryDecision),
}

/// How the adapter treats `error`.
///
/// - `READ_TIMEOUT`, `WRITE_TIMEOUT`, `UNAVAILABLE` carry their consistency, replica counts,
///   `data_present` and write type; a write type this host does not know is not retried.
/// - Overloaded, server error, truncate, read and write failures, and ScyllaDB's rate limit
///   (as overloaded) are `ERROR_RESPONSE`s; syntax, invalid, already-exists, unauthorized,
///   configuration and authentication errors are query-validation errors, never retried.
/// - A broken connection is an aborted request: a missed keepalive as a heartbeat, any other
///   break as a closed connection.
/// - A bootstrapping coordinator is `BOOTSTRAPPING` (the next node, whatever the idempotence).
/// - No stream id could be allocated: the request was never written, so the next target is
///   always safe (reference 003 "any error before a network write was attempted").
/// - Unprepared: the driver re-prepares and retries before asking a policy; one that reaches
///   the policy was not fixed by that, and is not retried.
/// - Anything else (a request that could not be serialised, a response that could not be
///   parsed, a reprepared id that changed, an unknown error code) is not retried.
pub fn map(error: &RequestAttemptError) -> Mapped {
    use Mapped::{Ask, Fixed};
    match error {
        RequestAttemptError::DbError(db_error, _) => map_db_error(db_error),
        RequestAttemptError::BrokenConnectionError(broken) => {
            let kind = match broken.downcast_ref::<BrokenConnectionErrorKind>() {
                Some(BrokenConnectionErrorKind::KeepaliveTimeout(_)) => AbortKind::Heartbeat,
                _ => AbortKind::ClosedConnection,
            };
            Ask(RetryReason::RequestAborted(kind))
        }
        RequestAttemptError::UnableToAllocStreamId => Fixed(RetryDecision::RetryNextTarget(None)),
        _ => Fixed(RetryDecision::DontRetry),
    }
}

fn map_db_error(error: &DbError) -> Mapped {
    use Mapped::{Ask, Fixed};
    let response = |kind| Ask(RetryReason::ErrorResponse(kind));
    match error {
        DbError::ReadTimeout {
            consistency,
            received,
            required,
            data_present,
        } => Ask(RetryReason::from(ReadTimeout {
            consistency: to_rebound(*consistency),
            block_for: count(*required),
            received: count(*received),
            data_present: *data_present,
        })),
        DbError::WriteTimeout {
            consistency,
            received,
            required,
            write_type,
        } => match write_type_of(write_type) {
            Some(write_type) => Ask(RetryReason::from(WriteTimeout {
                consistency: to_rebound(*consistency),
                write_type,
                block_for: count(*required),
                received: count(*received),
            })),
            None => Fixed(RetryDecision::DontRetry),
        },
        DbError::Unavailable {
            consistency,
            required,
            alive,
        } => Ask(RetryReason::from(Unavailable {
            consistency: to_rebound(*consistency),
            required: count(*required),
            alive: count(*alive),
        })),
        DbError::Overloaded | DbError::RateLimitReached { .. } => {
            response(ServerErrorKind::Overloaded)
        }
        DbError::ServerError => response(ServerErrorKind::ServerError),
        DbError::TruncateError => response(ServerErrorKind::Truncate),
        DbError::ReadFailure { .. } => response(ServerErrorKind::ReadFailure),
        DbError::WriteFailure { .. } => response(ServerErrorKind::WriteFailure),
        DbError::FunctionFailure { .. } => response(ServerErrorKind::FunctionFailure),
        DbError::ProtocolError => response(ServerErrorKind::ProtocolError),
        DbError::SyntaxError
        | DbError::Invalid
        | DbError::AlreadyExists { .. }
        | DbError::Unauthorized
        | DbError::ConfigError
        | DbError::AuthenticationError => response(ServerErrorKind::QueryValidation),
        DbError::IsBootstrapping => Ask(reasons::BOOTSTRAPPING),
        _ => Fixed(RetryDecision::DontRetry),
    }
}

/// A replica count as the protocol's `int` (never negative from a server; 0 if it were).
fn count(n: i32) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

fn write_type_of(write_type: &WriteType) -> Option<ReboundWriteType> {
    Some(match write_type {
        WriteType::Simple => ReboundWriteType::Simple,
        WriteType::Batch => ReboundWriteType::Batch,
        WriteType::UnloggedBatch => ReboundWriteType::UnloggedBatch,
        WriteType::Counter => ReboundWriteType::Counter,
        WriteType::BatchLog => ReboundWriteType::BatchLog,
        WriteType::Cas => ReboundWriteType::Cas,
        WriteType::View => ReboundWriteType::View,
        WriteType::Cdc => ReboundWriteType::Cdc,
        _ => return None,
    })
}
