//! `FastFailOnTerminalErrorRetryStrategy` (reference 001 "Fail Fast (Terminal Errors)"):
//! fails at once on the five terminal reasons of revision 16, best effort otherwise.

use crate::action::{RetryAction, TerminalError};
use crate::backoff::{BackoffCalculator, ExponentialBackoff};
use crate::context::DecisionContext;
use crate::reason::{ReasonKind, RetryReason};
use crate::request::Request;

use super::{BestEffort, SyncStrategy};

/// The revision 16 table, in the order the RFC says it is applied.
const TERMINAL: [(ReasonKind, TerminalError); 5] = [
    (
        ReasonKind::AuthenticationError,
        TerminalError::AuthenticationFailureException,
    ),
    (ReasonKind::TlsError, TerminalError::CouchbaseException),
    (
        ReasonKind::BucketAccessError,
        TerminalError::CouchbaseException,
    ),
    (
        ReasonKind::ScopeNotFound,
        TerminalError::ScopeNotFoundException,
    ),
    (
        ReasonKind::CollectionNotFound,
        TerminalError::CollectionNotFoundException,
    ),
];

/// Fast-fails terminal reasons with their named error; behaves as [`BestEffort`] otherwise.
#[derive(Debug, Clone, Default)]
pub struct FastFailOnTerminalError<C = ExponentialBackoff> {
    best_effort: BestEffort<C>,
}

impl<C: BackoffCalculator> FastFailOnTerminalError<C> {
    /// With a custom calculator for the best-effort fallback.
    pub fn with_calculator(calculator: C) -> Self {
        FastFailOnTerminalError {
            best_effort: BestEffort::with_calculator(calculator),
        }
    }

    /// The terminal error for `reason`, if it is one of the five.
    pub fn terminal_error(reason: &RetryReason) -> Option<TerminalError> {
        let kind = reason.kind();
        TERMINAL.iter().find(|(k, _)| *k == kind).map(|(_, e)| *e)
    }
}

impl<C: BackoffCalculator> SyncStrategy for FastFailOnTerminalError<C> {
    fn name(&self) -> &str {
        "fast-fail-on-terminal-error"
    }

    fn decide(&self, request: &Request, context: &DecisionContext<'_>) -> RetryAction {
        match Self::terminal_error(context.reason()) {
            Some(error) => RetryAction::Fail(error),
            None => self.best_effort.decide(request, context),
        }
    }
}
