//! The driver's `DefaultRetryPolicy` (reference 003 "Behavior"): at most one retry, only where
//! the chance of success is high.

use crate::action::{NodeChoice, RetryAction};
use crate::cassandra_types::{AbortKind, ServerErrorKind, WriteType};
use crate::reason::{ReadTimeout, Unavailable, WriteTimeout};
use crate::request::Request;

use super::CassandraPolicy;

/// `DefaultRetryPolicy`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultRetryPolicy;

/// Verdict for an aborted request, shared by both built-in policies: retry on the next node
/// if the connection closed or a heartbeat failed; rethrow otherwise (a driver bug).
pub fn aborted_verdict(kind: AbortKind) -> RetryAction {
    match kind {
        AbortKind::ClosedConnection | AbortKind::Heartbeat => {
            RetryAction::now_on(NodeChoice::Next, None)
        }
        AbortKind::Other => RetryAction::Rethrow,
    }
}

/// Verdict for other coordinator errors, shared by both built-in policies: rethrow read and
/// write failures, retry the rest on the next node.
pub fn error_response_verdict(kind: ServerErrorKind) -> RetryAction {
    match kind {
        ServerErrorKind::ReadFailure | ServerErrorKind::WriteFailure => RetryAction::Rethrow,
        _ => RetryAction::now_on(NodeChoice::Next, None),
    }
}

impl CassandraPolicy for DefaultRetryPolicy {
    fn name(&self) -> &str {
        "cassandra-default"
    }

    /// One retry on the same node, only if enough replicas answered but not the data replica.
    fn on_read_timeout(&self, _: &Request, e: &ReadTimeout, retry_count: u32) -> RetryAction {
        if retry_count == 0 && e.received >= e.block_for && !e.data_present {
            RetryAction::now_on(NodeChoice::Same, None)
        } else {
            RetryAction::Rethrow
        }
    }

    /// One retry on the same node, only for a BATCH_LOG write.
    fn on_write_timeout(&self, _: &Request, e: &WriteTimeout, retry_count: u32) -> RetryAction {
        if retry_count == 0 && e.write_type == WriteType::BatchLog {
            RetryAction::now_on(NodeChoice::Same, None)
        } else {
            RetryAction::Rethrow
        }
    }

    /// One retry, on the next node (the coordinator may be network-isolated).
    fn on_unavailable(&self, _: &Request, _: &Unavailable, retry_count: u32) -> RetryAction {
        if retry_count == 0 {
            RetryAction::now_on(NodeChoice::Next, None)
        } else {
            RetryAction::Rethrow
        }
    }

    fn on_request_aborted(&self, _: &Request, kind: AbortKind, _: u32) -> RetryAction {
        aborted_verdict(kind)
    }

    fn on_error_response(&self, _: &Request, kind: ServerErrorKind, _: u32) -> RetryAction {
        error_response_verdict(kind)
    }
}
