//! Fail fast (RFC 0049 "Fail Fast (Strict)"): never retry. The host still retries the
//! always-retry reasons itself.

use rebound_guest::{export_policy, Params, Policy, Request, RetryAction, RetryReason};

/// The policy.
pub struct FailFast;

impl Policy for FailFast {
    fn configure(_: &Params) -> Result<Self, String> {
        Ok(FailFast)
    }

    fn retry_after(&self, _: &Request, _: &RetryReason) -> RetryAction {
        RetryAction::NoRetry
    }
}

export_policy!(FailFast);
