//! Echoes the server's pushback (`failure.server-delay-ms`, since `rebound:policy@0.3.0`) as its
//! answer, so a test sees exactly what the host handed over: a retry after the pushback's
//! milliseconds, no retry when the server said stop (a negative pushback), and rethrow when
//! the server said nothing.

use rebound_guest::{
    export_policy, host, NodeChoice, Params, Policy, Request, Retry, RetryAction, RetryReason,
};

struct PushbackEcho;

impl Policy for PushbackEcho {
    fn configure(_: &Params) -> Result<Self, String> {
        Ok(PushbackEcho)
    }

    fn retry_after(&self, _: &Request, _: &RetryReason) -> RetryAction {
        match host::server_delay_ms().map(u64::try_from) {
            Some(Ok(delay_ms)) => RetryAction::Retry(Retry {
                delay_ms,
                node: NodeChoice::Same,
                consistency: None,
                attempt_timeout_ms: None,
            }),
            Some(Err(_)) => RetryAction::NoRetry,
            None => RetryAction::Rethrow,
        }
    }
}

export_policy!(PushbackEcho);
