//! The bare export: `retry-after` with the world's signature that answers a constant retry
//! (1 ms, same node) without reading the request or the reason, so the orchestrator takes the same path as
//! for a real retry decision. The benchmark measures the call floor with it.

use rebound_guest::bindings::exports::rebound::policy::strategy::Guest;
use rebound_guest::{NodeChoice, Retry, RetryAction, RetryReason};

struct Noop;

impl Guest for Noop {
    fn configure(_: Vec<(String, String)>) -> Result<(), String> {
        Ok(())
    }

    fn retry_after(_: RetryReason) -> RetryAction {
        RetryAction::Retry(Retry {
            delay_ms: 1,
            node: NodeChoice::Same,
            consistency: None,
            attempt_timeout_ms: None,
        })
    }
}

rebound_guest::bindings::export_bindings!(Noop with_types_in rebound_guest::bindings);
