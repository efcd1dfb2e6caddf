//! Best effort (RFC 0049 "Best Effort"), computed in the policy: retry when the request is
//! idempotent or the reason allows a non-idempotent retry, after `min × factor^attempt`
//! clamped to `[min, max]` (parameters `min_ms`, `max_ms`, `factor`; default 1, 500, 2).

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
        // The reason first: it is known without asking the host.
        if !(reason.allows_non_idempotent_retry() || request.idempotent()) {
            return RetryAction::NoRetry;
        }
        let delay_ms = host::exponential_backoff(
            request.retry_attempts(),
            self.min_ms,
            self.max_ms,
            self.factor,
        );
        RetryAction::Retry(Retry {
            delay_ms,
            node: NodeChoice::Same,
            consistency: None,
        })
    }
}

export_policy!(BestEffort);

#[cfg(test)]
mod tests {
    use super::*;
    use rebound_guest::testing::request;
    use rebound_guest::RequestType;

    fn policy() -> BestEffort {
        BestEffort::configure(&Params::default()).unwrap()
    }

    #[test]
    fn matches_host_best_effort() {
        for ty in [RequestType::Get, RequestType::Upsert] {
            for attempts in 0..12 {
                for reason in [
                    RetryReason::KvLocked,
                    RetryReason::SocketClosedWhileInFlight,
                ] {
                    let req = request(ty, attempts);
                    assert_eq!(
                        policy().retry_after(&req, &reason),
                        host::best_effort(&req, &reason)
                    );
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
