//! The Cassandra driver's `ConsistencyDowngradingRetryPolicy`: like the default policy, but
//! when the requested consistency cannot be reached, reads are retried at the level the live
//! replicas allow and writes already persisted on a replica are ignored.

use rebound_guest::cassandra::{decide, retry_now, CassandraVerdicts};
use rebound_guest::{
    export_policy, ConsistencyLevel, NodeChoice, Params, Policy, ReadTimeout, Request, RetryAction,
    RetryReason, Unavailable, WriteTimeout, WriteType,
};

/// The policy.
pub struct CassandraDowngrading;

fn is_serial(level: ConsistencyLevel) -> bool {
    matches!(
        level,
        ConsistencyLevel::Serial | ConsistencyLevel::LocalSerial
    )
}

/// Same node at THREE, TWO or ONE per `alive`; with none alive, rethrow unless EACH_QUORUM
/// (whose count is per datacenter).
fn downgrade(alive: u32, current: ConsistencyLevel) -> RetryAction {
    let level = match alive {
        3.. => ConsistencyLevel::Three,
        2 => ConsistencyLevel::Two,
        1 => ConsistencyLevel::One,
        _ if current == ConsistencyLevel::EachQuorum => ConsistencyLevel::One,
        _ => return RetryAction::Rethrow,
    };
    retry_now(NodeChoice::Same, Some(level))
}

impl CassandraVerdicts for CassandraDowngrading {
    fn on_read_timeout(&self, e: &ReadTimeout, retries: u32) -> RetryAction {
        if retries != 0 || is_serial(e.consistency) {
            RetryAction::Rethrow
        } else if e.received < e.block_for {
            downgrade(e.received, e.consistency)
        } else if !e.data_present {
            retry_now(NodeChoice::Same, None)
        } else {
            RetryAction::Rethrow
        }
    }

    fn on_write_timeout(&self, e: &WriteTimeout, retries: u32) -> RetryAction {
        if retries != 0 {
            return RetryAction::Rethrow;
        }
        match e.write_type {
            WriteType::Simple | WriteType::Batch if e.received > 0 => RetryAction::Ignore,
            WriteType::UnloggedBatch => downgrade(e.received, e.consistency),
            WriteType::BatchLog => retry_now(NodeChoice::Same, None),
            _ => RetryAction::Rethrow,
        }
    }

    fn on_unavailable(&self, e: &Unavailable, retries: u32) -> RetryAction {
        if retries != 0 {
            RetryAction::Rethrow
        } else if is_serial(e.consistency) {
            retry_now(NodeChoice::Next, None)
        } else {
            downgrade(e.alive, e.consistency)
        }
    }
}

impl Policy for CassandraDowngrading {
    fn configure(_: &Params) -> Result<Self, String> {
        Ok(CassandraDowngrading)
    }

    fn retry_after(&self, request: &Request, reason: &RetryReason) -> RetryAction {
        decide(self, request, reason)
    }
}

export_policy!(CassandraDowngrading);
