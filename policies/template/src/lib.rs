//! A starting point for a Rebound policy in Rust (`rebound new rust NAME` copies it; see
//! docs/writing-a-rust-policy.md). It caps retries at the parameter `max_attempts` (default 3),
//! gives an attempt cut by its attempt timeout twice as long the next time, and otherwise
//! answers the host's best effort, which already refuses unsafe retries of non-idempotent
//! requests.

use rebound_guest::{
    export_policy, host, Params, Policy, Request, Retry, RetryAction, RetryReason,
};

/// The policy: how many retries it allows.
pub struct Template {
    max_attempts: u32,
}

impl Policy for Template {
    /// Called once per instance with the policy's `params` from the host configuration; an
    /// `Err` refuses them (the host then refuses to load the policy).
    fn configure(params: &Params) -> Result<Self, String> {
        Ok(Template {
            max_attempts: params.parse_or("max_attempts", 3)?,
        })
    }

    /// Decides for `request`, which failed for `reason`.
    fn retry_after(&self, request: &Request, reason: &RetryReason) -> RetryAction {
        if request.retry_attempts() >= self.max_attempts {
            return RetryAction::NoRetry;
        }
        // An attempt cut by its timeout: the retry best effort makes gets twice as long (the
        // request's deadline still ends it).
        if let Some(fired) = host::attempt_timeout_ms() {
            if let RetryAction::Retry(retry) = host::best_effort(request, reason) {
                let attempt_timeout_ms = Some(fired.saturating_mul(2));
                return RetryAction::Retry(Retry {
                    attempt_timeout_ms,
                    ..retry
                });
            }
        }
        RetryAction::BestEffort
    }
}

export_policy!(Template);

#[cfg(test)]
mod tests {
    use super::*;
    use rebound_guest::testing::{request, Call};
    use rebound_guest::RequestType;

    #[test]
    fn best_effort_until_max_attempts() {
        let policy = Template::configure(&Params::default()).unwrap();
        let reason = RetryReason::ServiceNotAvailable;
        let answer = |attempts| policy.retry_after(&request(RequestType::Get, attempts), &reason);
        assert_eq!(answer(2), RetryAction::BestEffort);
        assert_eq!(answer(3), RetryAction::NoRetry);
    }

    #[test]
    fn an_attempt_cut_by_its_timeout_gets_twice_as_long_next_time() {
        let policy = Template::configure(&Params::default()).unwrap();
        let reason = RetryReason::AttemptTimeout;
        let get = request(RequestType::Get, 0);
        let answer = Call::new()
            .attempt_timeout_ms(200)
            .run(|| policy.retry_after(&get, &reason));
        let RetryAction::Retry(retry) = answer else {
            panic!("{answer:?}");
        };
        assert_eq!(retry.attempt_timeout_ms, Some(400));
        assert_eq!(policy.retry_after(&get, &reason), RetryAction::BestEffort);
    }

    #[test]
    fn a_bad_max_attempts_is_refused_naming_it() {
        let params = Params::new(vec![("max_attempts".to_owned(), "many".to_owned())]);
        let error = Template::configure(&params).err().unwrap();
        assert!(error.contains("max_attempts"), "{error}");
    }
}
