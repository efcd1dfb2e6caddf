//! A declarative strategy shaped like gRPC's `retryPolicy` (gRFC A6): at most `max_attempts`
//! attempts, an exponential delay, the reasons it retries and those it never retries, and the
//! node a retry goes to. The orchestrator's rules (always-retry reasons, never-retried reasons,
//! the safety guard for non-idempotent requests, the deadline cap) still apply around it.

use std::time::Duration;

use crate::action::{NodeChoice, RetryAction};
use crate::backoff::{BackoffCalculator, ExponentialBackoff};
use crate::pushback::Pushback;
use crate::reason::ReasonKind;
use crate::request::Request;
use crate::strategy::DecisionContext;

use super::{Strategy, SyncStrategy};

/// Retries a failure whose reason it accepts while fewer than `max_attempts` attempts were
/// made, after `backoff.backoff(retries made)`, on `node`.
///
/// Unlike [`BestEffort`](super::BestEffort) it does not look at idempotency itself: a retry of
/// a non-idempotent request for a reason that does not allow it is refused by the
/// orchestrator's safety guard, as for any strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct ExponentialRetry {
    max_attempts: u32,
    backoff: ExponentialBackoff,
    retry_on: Vec<ReasonKind>,
    never_on: Vec<ReasonKind>,
    node: NodeChoice,
    attempt_timeout: Option<Duration>,
}

impl ExponentialRetry {
    /// At most `max_attempts` attempts (the first one included, as gRPC counts), waiting
    /// `backoff` between them, for every reason, on the same node.
    pub fn new(max_attempts: u32, backoff: ExponentialBackoff) -> Self {
        ExponentialRetry {
            max_attempts,
            backoff,
            retry_on: Vec::new(),
            never_on: Vec::new(),
            node: NodeChoice::Same,
            attempt_timeout: None,
        }
    }

    /// Retries only these reasons (empty: every reason not in `never_on`).
    pub fn retry_on(mut self, kinds: impl IntoIterator<Item = ReasonKind>) -> Self {
        self.retry_on = kinds.into_iter().collect();
        self
    }

    /// Never retries these reasons.
    pub fn never_on(mut self, kinds: impl IntoIterator<Item = ReasonKind>) -> Self {
        self.never_on = kinds.into_iter().collect();
        self
    }

    /// Sends retries to `node`.
    pub fn on_node(mut self, node: NodeChoice) -> Self {
        self.node = node;
        self
    }

    /// Cuts each attempt after `timeout` (an `ATTEMPT_TIMEOUT` failure, decided like any
    /// other); the request's deadline still ends it.
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = Some(timeout);
        self
    }

    /// Whether this strategy retries a failure of `kind` at all.
    pub fn accepts(&self, kind: ReasonKind) -> bool {
        !self.never_on.contains(&kind)
            && (self.retry_on.is_empty() || self.retry_on.contains(&kind))
    }
}

impl Strategy for ExponentialRetry {
    fn name(&self) -> &str {
        "exponential"
    }

    fn times_attempts(&self) -> bool {
        self.attempt_timeout.is_some()
    }

    fn attempt_timeout(&self, _request: &Request) -> Option<Duration> {
        self.attempt_timeout
    }
}

impl SyncStrategy for ExponentialRetry {
    fn answer(&self, request: &Request, context: &DecisionContext<'_>) -> RetryAction {
        let retries = request.retry_attempts();
        // Attempts made so far: the first one and every retry.
        let attempts = retries.saturating_add(1);
        if attempts >= self.max_attempts || !self.accepts(context.reason().kind()) {
            return RetryAction::NoRetry;
        }
        let action = RetryAction::RetryAfter {
            delay: self.backoff.backoff(retries),
            node: self.node,
            consistency: None,
            attempt_timeout: None,
        };
        // Never sooner than the server's pushback asks, and not at all if it says stop.
        Pushback::honour(context.pushback(), action)
    }
}
