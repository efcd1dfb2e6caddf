//! The Cassandra driver's `DefaultRetryPolicy`: at most one retry, only where success is
//! likely (read timeout with enough replies but no data: same node; BATCH_LOG write timeout:
//! same node; unavailable: next node; closed connection: next node; error responses other
//! than read/write failures: next node — the SDK defaults shared with the downgrading policy).

use rebound_guest::cassandra::{decide, retry_now, CassandraVerdicts};
use rebound_guest::{
    export_policy, NodeChoice, Params, Policy, ReadTimeout, Request, RetryAction, RetryReason,
    Unavailable, WriteTimeout, WriteType,
};

/// The policy.
pub struct CassandraDefault;

impl CassandraVerdicts for CassandraDefault {
    fn on_read_timeout(&self, e: &ReadTimeout, retries: u32) -> RetryAction {
        if retries == 0 && e.received >= e.block_for && !e.data_present {
            retry_now(NodeChoice::Same, None)
        } else {
            RetryAction::Rethrow
        }
    }

    fn on_write_timeout(&self, e: &WriteTimeout, retries: u32) -> RetryAction {
        if retries == 0 && e.write_type == WriteType::BatchLog {
            retry_now(NodeChoice::Same, None)
        } else {
            RetryAction::Rethrow
        }
    }

    fn on_unavailable(&self, _: &Unavailable, retries: u32) -> RetryAction {
        if retries == 0 {
            retry_now(NodeChoice::Next, None)
        } else {
            RetryAction::Rethrow
        }
    }
}

impl Policy for CassandraDefault {
    fn configure(_: &Params) -> Result<Self, String> {
        Ok(CassandraDefault)
    }

    fn retry_after(&self, request: &Request, reason: &RetryReason) -> RetryAction {
        decide(self, request, reason)
    }
}

export_policy!(CassandraDefault);
