//! Best effort (RFC 0049 "Best Effort"): retry when the request is idempotent or the reason
//! allows a non-idempotent retry, after `min × factor^attempt` clamped to `[min, max]`
//! (parameters `min_ms`, `max_ms`, `factor`; default 1, 500, 2), never sooner than the server's
//! pushback asks and not at all when it says stop. With the reference's parameters it answers
//! the host's own best effort (the `best-effort` action, as its C and Zig twins do), which
//! decides the same without a call out of the sandbox; tuned, it computes in the policy.

use rebound_guest::{
    export_policy, host, NodeChoice, Params, Policy, ReasonExt, Request, Retry, RetryAction,
    RetryReason,
};

/// The policy with its backoff parameters.
#[derive(Debug)]
pub struct BestEffort {
    min_ms: u64,
    max_ms: u64,
    factor: f64,
}

impl Policy for BestEffort {
    fn configure(params: &Params) -> Result<Self, String> {
        let policy = BestEffort {
            min_ms: params.parse_or("min_ms", 1)?,
            max_ms: params.parse_or("max_ms", 500)?,
            factor: params.parse_or("factor", 2.0)?,
        };
        if policy.min_ms == 0
            || policy.max_ms < policy.min_ms
            || !policy.factor.is_finite()
            || policy.factor < 1.0
        {
            return Err(format!(
                "expected 0 < min_ms <= max_ms and factor >= 1, got min_ms={} max_ms={} factor={}",
                policy.min_ms, policy.max_ms, policy.factor
            ));
        }
        Ok(policy)
    }

    fn retry_after(&self, request: &Request, reason: &RetryReason) -> RetryAction {
        if self.is_reference() {
            return RetryAction::BestEffort;
        }
        // The reason first: it is known without asking the host.
        if !(reason.allows_non_idempotent_retry() || request.idempotent()) {
            return RetryAction::NoRetry;
        }
        let backoff = host::exponential_backoff(
            request.retry_attempts(),
            self.min_ms,
            self.max_ms,
            self.factor,
        );
        // No sooner than the server asked; not at all if it said stop (gRFC A6).
        let delay_ms = match host::server_delay_ms() {
            Some(asked) if asked < 0 => return RetryAction::NoRetry,
            Some(asked) => backoff.max(asked.unsigned_abs()),
            None => backoff,
        };
        RetryAction::Retry(Retry {
            delay_ms,
            node: NodeChoice::Same,
            consistency: None,
            attempt_timeout_ms: None,
        })
    }
}

impl BestEffort {
    /// Whether these are the reference's parameters (1 ms, 500 ms, 2), the host's best effort.
    fn is_reference(&self) -> bool {
        self.min_ms == 1 && self.max_ms == 500 && self.factor == 2.0
    }
}

export_policy!(BestEffort);

#[cfg(test)]
mod tests {
    use super::*;
    use rebound_guest::testing::{request, Call};
    use rebound_guest::RequestType;

    fn policy() -> BestEffort {
        BestEffort::configure(&Params::default()).unwrap()
    }

    /// With the reference's parameters the policy answers the host's best effort. A factor a
    /// hair above 2 makes it compute instead (not the reference's parameters), while every
    /// delay in whole milliseconds stays the reference's: its answers equal the host's, the
    /// server's pushback included (never sooner; none when it says stop).
    #[test]
    fn matches_host_best_effort() {
        assert_eq!(
            policy().retry_after(&request(RequestType::Get, 0), &RetryReason::KvLocked),
            RetryAction::BestEffort
        );
        let computing = BestEffort {
            min_ms: 1,
            max_ms: 500,
            factor: 2.000_000_000_000_001,
        };
        assert!(!computing.is_reference());
        for ty in [RequestType::Get, RequestType::Upsert] {
            for attempts in 0..12 {
                for reason in [
                    RetryReason::KvLocked,
                    RetryReason::SocketClosedWhileInFlight,
                ] {
                    let req = request(ty, attempts);
                    for pushback in [None, Some(0), Some(40), Some(600), Some(-1)] {
                        let call = match pushback {
                            Some(ms) => Call::new().server_delay_ms(ms),
                            None => Call::new(),
                        };
                        call.run(|| {
                            assert_eq!(
                                computing.retry_after(&req, &reason),
                                host::best_effort(&req, &reason),
                                "{ty:?} {attempts} {reason:?} {pushback:?}"
                            )
                        });
                    }
                }
            }
        }
    }

    #[test]
    fn rejects_bad_parameters() {
        let bad = Params::new(vec![("min_ms".into(), "0".into())]);
        assert!(BestEffort::configure(&bad)
            .unwrap_err()
            .contains("min_ms=0"));
        let bad = Params::new(vec![("factor".into(), "fast".into())]);
        assert!(BestEffort::configure(&bad).unwrap_err().contains("factor"));
    }
}
