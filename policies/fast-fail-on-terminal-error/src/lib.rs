//! `FastFailOnTerminalErrorRetryStrategy` (RFC 0049 revision 16): the five terminal reasons
//! fail at once with their named error, in the RFC's order; everything else is best effort.

use rebound_guest::{
    export_policy, Params, Policy, Request, RetryAction, RetryReason, TerminalError,
};

/// The policy.
pub struct FastFailOnTerminalError;

impl Policy for FastFailOnTerminalError {
    fn configure(_: &Params) -> Result<Self, String> {
        Ok(FastFailOnTerminalError)
    }

    fn retry_after(&self, _: &Request, reason: &RetryReason) -> RetryAction {
        let terminal = match reason {
            RetryReason::AuthenticationError => TerminalError::AuthenticationFailure,
            RetryReason::TlsError => TerminalError::Couchbase,
            RetryReason::BucketAccessError => TerminalError::Couchbase,
            RetryReason::ScopeNotFound => TerminalError::ScopeNotFound,
            RetryReason::CollectionNotFound => TerminalError::CollectionNotFound,
            _ => return RetryAction::BestEffort,
        };
        RetryAction::Fail(terminal)
    }
}

export_policy!(FastFailOnTerminalError);

#[cfg(test)]
mod tests {
    use super::*;
    use rebound_guest::{testing::request, RequestType};

    #[test]
    fn terminal_reasons_fail_fast_others_best_effort() {
        let req = request(RequestType::Get, 0);
        let p = FastFailOnTerminalError;
        assert_eq!(
            p.retry_after(&req, &RetryReason::TlsError),
            RetryAction::Fail(TerminalError::Couchbase)
        );
        assert_eq!(
            p.retry_after(&req, &RetryReason::KvLocked),
            RetryAction::BestEffort
        );
    }
}
