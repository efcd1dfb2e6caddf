//! The stand-in for a policy that failed to load when the registry started (a start that is
//! not strict): it answers the policy's fail-safe, saying why, until a reload of the policy
//! succeeds.

use crate::action::{PolicyFailure, PolicyFailureKind, RetryAction};
use crate::request::Request;
use crate::strategy::DecisionContext;
use crate::strategy::{Strategy, SyncStrategy};
use crate::wasm::FailSafe;

/// Answers policy `name`'s fail-safe, noting the load error as the failure.
#[derive(Debug)]
pub(super) struct StandIn {
    pub name: String,
    pub error: String,
    pub fail_safe: FailSafe,
}

impl Strategy for StandIn {
    fn name(&self) -> &str {
        &self.name
    }
}

impl SyncStrategy for StandIn {
    fn answer(&self, request: &Request, context: &DecisionContext<'_>) -> RetryAction {
        let failure = PolicyFailure::new(PolicyFailureKind::NotLoaded, self.error.clone());
        self.fail_safe.answer(failure, request, context)
    }
}
