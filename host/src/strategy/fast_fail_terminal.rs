//! `FastFailOnTerminalErrorRetryStrategy` (reference 001 "Fail Fast (Terminal Errors)"):
//! fails at once on the five terminal reasons of revision 16, best effort otherwise.

use crate::action::{RetryAction, TerminalError};
use crate::backoff::{BackoffCalculator, ExponentialBackoff};
use crate::reason::{ReasonKind, RetryReason};
use crate::request::Request;
use crate::strategy::DecisionContext;

use super::{BestEffort, Strategy, SyncStrategy};

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
/// By default all five reasons are terminal, as reference 001 says; [`only`](Self::only)
/// keeps fewer (the others are then treated as best effort treats them).
#[derive(Debug, Clone)]
pub struct FastFailOnTerminalError<C = ExponentialBackoff> {
    best_effort: BestEffort<C>,
    terminal: Vec<ReasonKind>,
}

impl<C: Default> Default for FastFailOnTerminalError<C> {
    fn default() -> Self {
        FastFailOnTerminalError {
            best_effort: BestEffort::default(),
            terminal: Self::TERMINAL_REASONS.to_vec(),
        }
    }
}

impl<C> FastFailOnTerminalError<C> {
    /// The five terminal reasons of reference 001, in the order the RFC applies them.
    pub const TERMINAL_REASONS: [ReasonKind; 5] = [
        TERMINAL[0].0,
        TERMINAL[1].0,
        TERMINAL[2].0,
        TERMINAL[3].0,
        TERMINAL[4].0,
    ];
}

impl<C: BackoffCalculator> FastFailOnTerminalError<C> {
    /// With a custom calculator for the best-effort fallback.
    pub fn with_calculator(calculator: C) -> Self {
        FastFailOnTerminalError {
            best_effort: BestEffort::with_calculator(calculator),
            terminal: Self::TERMINAL_REASONS.to_vec(),
        }
    }

    /// Fast-fails only the terminal reasons among `kinds` (any other kind in it is left out:
    /// only the five have a named error to fail with).
    pub fn only(mut self, kinds: impl IntoIterator<Item = ReasonKind>) -> Self {
        self.terminal = kinds
            .into_iter()
            .filter(|k| Self::TERMINAL_REASONS.contains(k))
            .collect();
        self
    }

    /// The terminal error for `reason`, if it is one of the five.
    pub fn terminal_error(reason: &RetryReason) -> Option<TerminalError> {
        let kind = reason.kind();
        TERMINAL.iter().find(|(k, _)| *k == kind).map(|(_, e)| *e)
    }
}

impl<C: BackoffCalculator> Strategy for FastFailOnTerminalError<C> {
    fn name(&self) -> &str {
        "fast-fail-on-terminal-error"
    }
}

impl<C: BackoffCalculator> SyncStrategy for FastFailOnTerminalError<C> {
    fn answer(&self, request: &Request, context: &DecisionContext<'_>) -> RetryAction {
        let reason = context.reason();
        match Self::terminal_error(reason) {
            Some(error) if self.terminal.contains(&reason.kind()) => RetryAction::Fail(error),
            _ => self.best_effort.answer(request, context),
        }
    }
}
