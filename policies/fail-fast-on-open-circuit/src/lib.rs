//! The Couchbase Java SDK guide's example ("Customizing the RetryStrategy"): fail fast when
//! the endpoint's circuit breaker is open; best effort otherwise.

use rebound_guest::{export_policy, Params, Policy, Request, RetryAction, RetryReason};

/// The policy.
pub struct FailFastOnOpenCircuit;

impl Policy for FailFastOnOpenCircuit {
    fn configure(_: &Params) -> Result<Self, String> {
        Ok(FailFastOnOpenCircuit)
    }

    fn retry_after(&self, _: &Request, reason: &RetryReason) -> RetryAction {
        match reason {
            RetryReason::CircuitBreakerOpen => RetryAction::NoRetry,
            _ => RetryAction::BestEffort,
        }
    }
}

export_policy!(FailFastOnOpenCircuit);
