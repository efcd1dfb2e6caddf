//! RFC 0049 "Accessible Context in the RetryStrategy": requests whose client context marks
//! them as coming from a robot are never retried; others get best effort. The context key is
//! the parameter `key` (default `isRobotRequest`).

use rebound_guest::{export_policy, host, Params, Policy, Request, RetryAction, RetryReason};

/// The policy and the context key it looks for.
pub struct NoRetryForRobots {
    key: String,
}

impl Policy for NoRetryForRobots {
    fn configure(params: &Params) -> Result<Self, String> {
        Ok(NoRetryForRobots {
            key: params.get("key").unwrap_or("isRobotRequest").to_owned(),
        })
    }

    fn retry_after(&self, _: &Request, _: &RetryReason) -> RetryAction {
        if host::client_context(&self.key).is_some() {
            return RetryAction::NoRetry;
        }
        RetryAction::BestEffort
    }
}

export_policy!(NoRetryForRobots);

#[cfg(test)]
mod tests {
    use super::*;
    use rebound_guest::testing::{request, Call};
    use rebound_guest::RequestType;

    #[test]
    fn robots_are_not_retried() {
        let p = NoRetryForRobots::configure(&Params::default()).unwrap();
        let req = request(RequestType::Get, 0);
        let robot = Call::new().client_context("isRobotRequest", "true");
        assert_eq!(
            robot.run(|| p.retry_after(&req, &RetryReason::KvLocked)),
            RetryAction::NoRetry
        );
        assert_eq!(
            p.retry_after(&req, &RetryReason::KvLocked),
            RetryAction::BestEffort
        );
    }
}
