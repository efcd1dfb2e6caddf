//! The driver's `ConsistencyDowngradingRetryPolicy` (reference 003 "Behavior"): like the
//! default policy, but when the requested consistency cannot be reached it retries reads at a
//! lower level and ignores writes already persisted on a replica.

use crate::action::{NodeChoice, RetryAction};
use crate::cassandra_types::{AbortKind, ConsistencyLevel, ServerErrorKind, WriteType};
use crate::reason::{ReadTimeout, Unavailable, WriteTimeout};
use crate::request::Request;

use super::{aborted_verdict, error_response_verdict, CassandraPolicy};

/// `ConsistencyDowngradingRetryPolicy`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConsistencyDowngradingRetryPolicy;

/// Retry on the same node at the level `alive` replicas can reach: THREE, TWO or ONE; with
/// none alive, rethrow, except for EACH_QUORUM, whose count is per datacenter only (so ONE may
/// still succeed elsewhere).
fn downgrade(alive: u32, current: ConsistencyLevel) -> RetryAction {
    let level = match alive {
        3.. => ConsistencyLevel::Three,
        2 => ConsistencyLevel::Two,
        1 => ConsistencyLevel::One,
        0 if current == ConsistencyLevel::EachQuorum => ConsistencyLevel::One,
        0 => return RetryAction::Rethrow,
    };
    RetryAction::now_on(NodeChoice::Same, Some(level))
}

impl CassandraPolicy for ConsistencyDowngradingRetryPolicy {
    fn name(&self) -> &str {
        "cassandra-downgrading-consistency"
    }

    fn on_read_timeout(&self, _: &Request, e: &ReadTimeout, retry_count: u32) -> RetryAction {
        if retry_count != 0 || e.consistency.is_serial() {
            // Serial (CAS) reads are never downgraded: rethrow.
            RetryAction::Rethrow
        } else if e.received < e.block_for {
            downgrade(e.received, e.consistency)
        } else if !e.data_present {
            RetryAction::now_on(NodeChoice::Same, None)
        } else {
            RetryAction::Rethrow
        }
    }

    fn on_write_timeout(&self, _: &Request, e: &WriteTimeout, retry_count: u32) -> RetryAction {
        if retry_count != 0 {
            return RetryAction::Rethrow;
        }
        match e.write_type {
            WriteType::Simple | WriteType::Batch if e.received > 0 => RetryAction::Ignore,
            WriteType::UnloggedBatch => downgrade(e.received, e.consistency),
            WriteType::BatchLog => RetryAction::now_on(NodeChoice::Same, None),
            _ => RetryAction::Rethrow,
        }
    }

    fn on_unavailable(&self, _: &Request, e: &Unavailable, retry_count: u32) -> RetryAction {
        if retry_count != 0 {
            RetryAction::Rethrow
        } else if e.consistency.is_serial() {
            // A lightweight transaction failed at the Paxos phase: try another coordinator.
            RetryAction::now_on(NodeChoice::Next, None)
        } else {
            downgrade(e.alive, e.consistency)
        }
    }

    fn on_request_aborted(&self, _: &Request, kind: AbortKind, _: u32) -> RetryAction {
        aborted_verdict(kind)
    }

    fn on_error_response(&self, _: &Request, kind: ServerErrorKind, _: u32) -> RetryAction {
        error_response_verdict(kind)
    }
}
