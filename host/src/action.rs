//! What a strategy answers (reference 001 "Retry Strategies" `RetryAction`, extended with the
//! Cassandra verdicts of reference 003 "Behavior" and the terminal errors of revision 16).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cassandra_types::ConsistencyLevel;

/// Which node the retry goes to (reference 003 `RetryDecision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeChoice {
    /// The same node (the Couchbase SDK routes by vbucket/service, so "same" is its default).
    #[default]
    Same,
    /// The next node of the query plan.
    Next,
}

/// The terminal errors `FastFailOnTerminalErrorRetryStrategy` fails with (reference 001
/// "Fail Fast (Terminal Errors)").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TerminalError {
    /// AUTHENTICATION_ERROR.
    AuthenticationFailureException,
    /// TLS_ERROR and BUCKET_ACCESS_ERROR.
    CouchbaseException,
    /// SCOPE_NOT_FOUND.
    ScopeNotFoundException,
    /// COLLECTION_NOT_FOUND.
    CollectionNotFoundException,
}

impl TerminalError {
    /// The error's name as in reference 001.
    pub const fn name(self) -> &'static str {
        match self {
            TerminalError::AuthenticationFailureException => "AuthenticationFailureException",
            TerminalError::CouchbaseException => "CouchbaseException",
            TerminalError::ScopeNotFoundException => "ScopeNotFoundException",
            TerminalError::CollectionNotFoundException => "CollectionNotFoundException",
        }
    }
}

impl fmt::Display for TerminalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a sandboxed policy failed to answer (the host then applies its fail-safe action).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PolicyFailureKind {
    /// The guest trapped (e.g. `unreachable`, out-of-bounds access).
    Trap,
    /// The guest panicked.
    Panic,
    /// The call ran past its wall-clock deadline.
    Timeout,
    /// The call used up its instruction budget (fuel).
    FuelExhausted,
    /// The guest tried to grow its memory past the cap.
    MemoryLimitExceeded,
    /// The guest overflowed its stack.
    StackOverflow,
    /// The guest answered something the host does not accept.
    InvalidAnswer,
    /// The policy is quarantined after repeated failures and was not called.
    Quarantined,
    /// The policy had as many calls in progress as it may, or had used its share of the
    /// policy threads' time (`[engine] isolation`'s `per_policy`, `busy_per_second_ms`), for
    /// the whole deadline, and was not called.
    Overloaded,
    /// The policy failed to load when the registry started and has no version to call (a
    /// start that is not strict); a successful reload replaces the stand-in.
    NotLoaded,
}

impl PolicyFailureKind {
    /// The snake_case name used in logs, metrics and error contexts.
    pub const fn name(self) -> &'static str {
        match self {
            PolicyFailureKind::Trap => "trap",
            PolicyFailureKind::Panic => "panic",
            PolicyFailureKind::Timeout => "timeout",
            PolicyFailureKind::FuelExhausted => "fuel_exhausted",
            PolicyFailureKind::MemoryLimitExceeded => "memory_limit_exceeded",
            PolicyFailureKind::StackOverflow => "stack_overflow",
            PolicyFailureKind::InvalidAnswer => "invalid_answer",
            PolicyFailureKind::Quarantined => "quarantined",
            PolicyFailureKind::Overloaded => "overloaded",
            PolicyFailureKind::NotLoaded => "not_loaded",
        }
    }
}

impl fmt::Display for PolicyFailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A policy call that failed: the kind of failure and what happened, in the policy's own
/// words where it said any (a Rust panic's message, a Python exception's last traceback line)
/// or the sandbox's (the trap, the limit it hit).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {detail}")]
pub struct PolicyFailure {
    /// The kind of failure.
    pub kind: PolicyFailureKind,
    /// What happened.
    pub detail: String,
}

impl PolicyFailure {
    /// A failure of `kind`, described by `detail`.
    pub fn new(kind: PolicyFailureKind, detail: impl Into<String>) -> Self {
        PolicyFailure {
            kind,
            detail: detail.into(),
        }
    }
}

/// A strategy's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub enum RetryAction {
    /// Do not retry: the request is cancelled (RequestCanceled).
    NoRetry,
    /// Retry after `delay` (zero means at once) on `node`, optionally at another consistency
    /// and under another attempt timeout.
    RetryAfter {
        /// How long to wait before dispatching again.
        delay: Duration,
        /// Where to dispatch.
        node: NodeChoice,
        /// A new consistency level for the retry (consistency downgrade).
        consistency: Option<ConsistencyLevel>,
        /// How long the retry's attempt may run before it is cut, over the attempt timeout the
        /// configuration gives (a route's `attempt_timeout_ms` still wins); none keeps the
        /// configured one. The request's deadline still ends it.
        attempt_timeout: Option<Duration>,
    },
    /// Cassandra IGNORE: treat the request as successful with an empty result.
    Ignore,
    /// Cassandra RETHROW: surface the original error to the caller.
    Rethrow,
    /// Fail at once with a terminal error.
    Fail(TerminalError),
    /// The policy failed to answer; the request is cancelled with this as the reason (the
    /// sandbox's "no retry" fail-safe).
    PolicyFailed(PolicyFailureKind),
}

impl RetryAction {
    /// Retry on the same node after `delay`.
    pub const fn after(delay: Duration) -> Self {
        RetryAction::RetryAfter {
            delay,
            node: NodeChoice::Same,
            consistency: None,
            attempt_timeout: None,
        }
    }

    /// Retry at once on `node`, optionally at another consistency (a Cassandra verdict).
    pub const fn now_on(node: NodeChoice, consistency: Option<ConsistencyLevel>) -> Self {
        RetryAction::RetryAfter {
            delay: Duration::ZERO,
            node,
            consistency,
            attempt_timeout: None,
        }
    }

    /// This action, its retry's attempt cut after `timeout` (see
    /// [`RetryAction::RetryAfter::attempt_timeout`]); an action that is not a retry is unchanged.
    pub const fn with_attempt_timeout(self, timeout: Duration) -> Self {
        match self {
            RetryAction::RetryAfter {
                delay,
                node,
                consistency,
                ..
            } => RetryAction::RetryAfter {
                delay,
                node,
                consistency,
                attempt_timeout: Some(timeout),
            },
            other => other,
        }
    }

    /// Whether the action asks for a retry.
    pub const fn is_retry(&self) -> bool {
        matches!(self, RetryAction::RetryAfter { .. })
    }
}
