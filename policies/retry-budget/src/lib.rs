//! Best effort, with retries limited per second through a host-kept token bucket, so a storm
//! of failures cannot turn into a storm of retries. Parameters: `per_second` (default 10),
//! `burst` (default 20), `budget` (the bucket's name, default `retry-budget`; the host keeps
//! the bucket for this policy alone).

use rebound_guest::{export_policy, host, Params, Policy, Request, RetryAction, RetryReason};

/// The policy and its budget.
pub struct RetryBudget {
    name: String,
    per_second: u32,
    burst: u32,
}

impl Policy for RetryBudget {
    fn configure(params: &Params) -> Result<Self, String> {
        Ok(RetryBudget {
            name: params.get("budget").unwrap_or("retry-budget").to_owned(),
            per_second: params.parse_or("per_second", 10)?,
            burst: params.parse_or("burst", 20)?,
        })
    }

    fn retry_after(&self, request: &Request, reason: &RetryReason) -> RetryAction {
        match host::best_effort(request, reason) {
            RetryAction::Retry(retry)
                if host::retry_budget(&self.name, self.per_second, self.burst) =>
            {
                RetryAction::Retry(retry)
            }
            RetryAction::Retry(_) => RetryAction::NoRetry,
            other => other,
        }
    }
}

export_policy!(RetryBudget);

#[cfg(test)]
mod tests {
    use super::*;
    use rebound_guest::{testing::request, RequestType};

    #[test]
    fn retries_stop_when_the_budget_is_spent() {
        let params = Params::new(vec![
            ("burst".into(), "3".into()),
            ("per_second".into(), "0".into()),
            ("budget".into(), "unit-test".into()),
        ]);
        let p = RetryBudget::configure(&params).unwrap();
        let req = request(RequestType::Get, 0);
        let retried = (0..10)
            .filter(|_| {
                matches!(
                    p.retry_after(&req, &RetryReason::KvLocked),
                    RetryAction::Retry(_)
                )
            })
            .count();
        assert_eq!(retried, 3);
    }
}
