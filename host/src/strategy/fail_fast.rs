//! The strict fail-fast strategy (reference 001 "Fail Fast (Strict)"). Internal: the RFC ships
//! it only for the host's own commands; users should extend best effort instead.

use crate::action::RetryAction;
use crate::request::Request;
use crate::strategy::DecisionContext;

use super::{Strategy, SyncStrategy};

/// Never retries. Always-retry reasons are still retried by the orchestrator.
#[derive(Debug, Clone, Copy, Default)]
pub struct FailFast;

impl Strategy for FailFast {
    fn name(&self) -> &str {
        "fail-fast"
    }
}

impl SyncStrategy for FailFast {
    fn answer(&self, _request: &Request, _context: &DecisionContext<'_>) -> RetryAction {
        RetryAction::NoRetry
    }
}
