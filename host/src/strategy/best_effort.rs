//! The default strategy (reference 001 "Best Effort"): retry whenever it is safe, with an
//! exponential delay from a pluggable calculator.

use crate::action::RetryAction;
use crate::backoff::{BackoffCalculator, ExponentialBackoff};
use crate::pushback::Pushback;
use crate::reason::RetryReason;
use crate::request::Request;
use crate::strategy::DecisionContext;

use super::{Strategy, SyncStrategy};

/// Retries an idempotent request, or any request whose reason allows a non-idempotent retry,
/// after `calculator.backoff(retry_attempts)`; otherwise answers no retry.
#[derive(Debug, Clone, Default)]
pub struct BestEffort<C = ExponentialBackoff> {
    calculator: C,
}

impl<C: BackoffCalculator> BestEffort<C> {
    /// Best effort with a custom calculator (reference 001: "a constructor available to pass
    /// in a different backoff calculator").
    pub fn with_calculator(calculator: C) -> Self {
        BestEffort { calculator }
    }

    /// The calculator.
    pub fn calculator(&self) -> &C {
        &self.calculator
    }
}

impl BestEffort {
    /// The decision of best effort with the default exponential backoff: what the WebAssembly
    /// host answers a policy's `best-effort` (answer or `host.best-effort` call) and its
    /// best-effort fail-safe.
    pub fn default_decision(request: &Request, reason: &RetryReason) -> RetryAction {
        BestEffort::<ExponentialBackoff>::default().answer_reason(request, reason)
    }
}

impl<C: BackoffCalculator> BestEffort<C> {
    /// Best effort needs only the reason of the failure: it retries whatever the host's guard
    /// would let be sent again (`Request::may_be_sent_again`; for Couchbase and Cassandra
    /// requests, reference 001's rule), and nothing else.
    pub(crate) fn answer_reason(&self, request: &Request, reason: &RetryReason) -> RetryAction {
        if request.may_be_sent_again(reason) {
            RetryAction::after(self.calculator.backoff(request.retry_attempts()))
        } else {
            RetryAction::NoRetry
        }
    }
}

impl<C: BackoffCalculator> Strategy for BestEffort<C> {
    fn name(&self) -> &str {
        "best-effort"
    }
}

impl<C: BackoffCalculator> SyncStrategy for BestEffort<C> {
    /// Best effort's answer, no sooner than the server's pushback asks (and none if it says
    /// stop).
    fn answer(&self, request: &Request, context: &DecisionContext<'_>) -> RetryAction {
        Pushback::honour(
            context.pushback(),
            self.answer_reason(request, context.reason()),
        )
    }
}
