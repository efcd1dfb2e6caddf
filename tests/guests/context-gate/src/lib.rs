//! Retries a failed request after 1 ms, on the same node, only when its client context holds
//! the key named by the parameter `key` (default `idempotency-key`: the caller's word that the
//! server applies the request once); no retry otherwise. A rule that reads the client context
//! and nothing else, so a test sees whether an adapter handed the context to the policy.

use rebound_guest::{
    export_policy, host, NodeChoice, Params, Policy, Request, Retry, RetryAction, RetryReason,
};

struct ContextGate {
    key: String,
}

impl Policy for ContextGate {
    fn configure(params: &Params) -> Result<Self, String> {
        Ok(ContextGate {
            key: params.get("key").unwrap_or("idempotency-key").to_owned(),
        })
    }

    fn retry_after(&self, _request: &Request, _reason: &RetryReason) -> RetryAction {
        match host::client_context(&self.key) {
            Some(_) => RetryAction::Retry(Retry {
                delay_ms: 1,
                node: NodeChoice::Same,
                consistency: None,
                attempt_timeout_ms: None,
            }),
            None => RetryAction::NoRetry,
        }
    }
}

export_policy!(ContextGate);
