//! The reason table, read from the engine itself, so a policy sees exactly the flags the host
//! applies.

use rebound::Stage;

use crate::convert::reason_to_host;
use crate::RetryReason;

/// Flags and names of a [`RetryReason`] (Couchbase RFC 0049 "RetryReason").
pub trait ReasonExt {
    /// May a non-idempotent request be retried for this reason?
    fn allows_non_idempotent_retry(&self) -> bool;
    /// Does the host retry it itself (policies never see these)?
    fn always_retry(&self) -> bool;
    /// Did it happen before the request was written to the network?
    fn is_pre_dispatch(&self) -> bool;
    /// Is it never retried, whatever the policy answers?
    fn never_retry(&self) -> bool;
    /// The SCREAMING_SNAKE name (as given, for `other`).
    fn name(&self) -> String;
}

impl ReasonExt for RetryReason {
    fn allows_non_idempotent_retry(&self) -> bool {
        reason_to_host(self).allows_non_idempotent_retry()
    }
    fn always_retry(&self) -> bool {
        reason_to_host(self).always_retry()
    }
    fn is_pre_dispatch(&self) -> bool {
        reason_to_host(self).stage() == Stage::PreDispatch
    }
    fn never_retry(&self) -> bool {
        reason_to_host(self).never_retry()
    }
    fn name(&self) -> String {
        reason_to_host(self).name().to_owned()
    }
}
