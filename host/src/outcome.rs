//! How a request ends when it is not retried (reference 002 "Request Cancellations", "The
//! Ubiquitous TimeoutException"; reference 001 "Fail Fast (Terminal Errors)"), each with an
//! [`ErrorContext`] that serialises to the JSON fields of reference 002 "ErrorContext".

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::action::{PolicyFailure, TerminalError};
use crate::reason::RetryReason;
use crate::request::Request;

/// Why the orchestrator cancelled a request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CancelReason {
    /// The strategy answered no retry.
    NoMoreRetries(RetryReason),
    /// The safety guard refused a retry the strategy asked for: a non-idempotent request and a
    /// reason that does not allow its retry.
    UnsafeRetryRefused(RetryReason),
    /// The reason is never retried (unknown reasons), whatever the strategy asked for.
    NeverRetried(RetryReason),
    /// The policy failed to answer (sandbox fail-safe: no retry).
    PolicyFailed(PolicyFailure, RetryReason),
    /// The retry was decided, but the policy's retry budget could not pay for it.
    RetryBudgetExhausted(RetryReason),
    /// The retry was decided, but the policy's retry throttle refused it: too many recent
    /// failures.
    RetryThrottled(RetryReason),
    /// The call was committed before it failed (gRFC A6 "When Retries are Valid": response
    /// headers or a message arrived): never retried, whatever the strategy would answer.
    Committed(RetryReason),
    /// The load balancer dropped the call (gRFC A6 "Transparent Retries": a `DROP` pick fails
    /// at once, without any retries).
    Dropped(RetryReason),
}

impl CancelReason {
    /// The cancellation as text (its `Display`), written into one allocation of 64 bytes:
    /// enough for the cancellation of any known reason but a policy failure's (60 bytes at
    /// most), where `to_string` grew its buffer on the way (twice for a `NO_MORE_RETRIES`).
    pub(crate) fn text(&self) -> String {
        use std::fmt::Write;
        let mut text = String::with_capacity(64);
        let _ = write!(text, "{self}");
        text
    }

    /// The retry reason behind the cancellation.
    pub fn retry_reason(&self) -> &RetryReason {
        match self {
            CancelReason::NoMoreRetries(r)
            | CancelReason::UnsafeRetryRefused(r)
            | CancelReason::NeverRetried(r)
            | CancelReason::PolicyFailed(_, r)
            | CancelReason::RetryBudgetExhausted(r)
            | CancelReason::RetryThrottled(r)
            | CancelReason::Committed(r)
            | CancelReason::Dropped(r) => r,
        }
    }
}

impl CancelReason {
    /// The cause's name, as in error contexts and decision JSON (`NO_MORE_RETRIES`, …).
    pub const fn name(&self) -> &'static str {
        match self {
            CancelReason::NoMoreRetries(_) => "NO_MORE_RETRIES",
            CancelReason::UnsafeRetryRefused(_) => "UNSAFE_RETRY_REFUSED",
            CancelReason::NeverRetried(_) => "NEVER_RETRIED",
            CancelReason::PolicyFailed(..) => "POLICY_FAILED",
            CancelReason::RetryBudgetExhausted(_) => "RETRY_BUDGET_EXHAUSTED",
            CancelReason::RetryThrottled(_) => "RETRY_THROTTLED",
            CancelReason::Committed(_) => "COMMITTED",
            CancelReason::Dropped(_) => "DROPPED",
        }
    }
}

impl fmt::Display for CancelReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name();
        match self {
            CancelReason::PolicyFailed(failure, r) => {
                write!(f, "{name} ({}; {r})", failure.kind)
            }
            other => write!(f, "{name} ({})", other.retry_reason()),
        }
    }
}

/// The outcome error of a request that will not be dispatched again.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RetryError {
    /// RequestCanceled: not retried before its timeout.
    #[error("request canceled: {reason} {context}")]
    RequestCanceled {
        /// Why.
        reason: CancelReason,
        /// The context.
        context: Box<ErrorContext>,
    },
    /// The deadline passed; the request may have had a side effect on the server.
    #[error("ambiguous timeout {context}")]
    AmbiguousTimeout {
        /// The context.
        context: Box<ErrorContext>,
    },
    /// The deadline passed; the request had no side effect (idempotent or never dispatched).
    #[error("unambiguous timeout {context}")]
    UnambiguousTimeout {
        /// The context.
        context: Box<ErrorContext>,
    },
    /// A terminal error (revision 16 fast fail).
    #[error("{error}: {reason} {context}")]
    Terminal {
        /// The named error.
        error: TerminalError,
        /// The reason that was terminal.
        reason: RetryReason,
        /// The context.
        context: Box<ErrorContext>,
    },
    /// The original error is surfaced to the caller (Cassandra RETHROW).
    #[error("rethrown: {reason} {context}")]
    Rethrown {
        /// The reason whose error is rethrown.
        reason: RetryReason,
        /// The context.
        context: Box<ErrorContext>,
    },
}

impl RetryError {
    /// The error's name: `RequestCanceled`, `AmbiguousTimeout`, `UnambiguousTimeout`, the
    /// terminal error's name, or `rethrow`.
    pub fn name(&self) -> &'static str {
        match self {
            RetryError::RequestCanceled { .. } => "RequestCanceled",
            RetryError::AmbiguousTimeout { .. } => "AmbiguousTimeout",
            RetryError::UnambiguousTimeout { .. } => "UnambiguousTimeout",
            RetryError::Terminal { error, .. } => error.name(),
            RetryError::Rethrown { .. } => "rethrow",
        }
    }

    /// The error context.
    pub fn context(&self) -> &ErrorContext {
        match self {
            RetryError::RequestCanceled { context, .. }
            | RetryError::AmbiguousTimeout { context }
            | RetryError::UnambiguousTimeout { context }
            | RetryError::Terminal { context, .. }
            | RetryError::Rethrown { context, .. } => context,
        }
    }

    /// Whether this is a timeout.
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            RetryError::AmbiguousTimeout { .. } | RetryError::UnambiguousTimeout { .. }
        )
    }

    /// The timeout for `request`: unambiguous only if it is idempotent or was never dispatched
    /// (reference 002 "The Ubiquitous TimeoutException").
    pub fn timeout(request: &Request, total: Duration) -> RetryError {
        let context = Box::new(ErrorContext::new(request, Some("TIMEOUT".into()), total));
        RetryError::timeout_in(Self::timeout_is_ambiguous(request), context)
    }

    /// Whether a timeout of `request` is ambiguous: it was dispatched and is not idempotent.
    pub(crate) fn timeout_is_ambiguous(request: &Request) -> bool {
        !request.is_idempotent() && request.was_dispatched()
    }

    /// A timeout with `context`, ambiguous or not.
    pub(crate) fn timeout_in(ambiguous: bool, context: Box<ErrorContext>) -> RetryError {
        if ambiguous {
            RetryError::AmbiguousTimeout { context }
        } else {
            RetryError::UnambiguousTimeout { context }
        }
    }
}

/// The `service` object of an error context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServiceContext {
    /// The service name (`kv`, `query`, ...).
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// The `timings` object of an error context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    /// Time from the request's start to its end, in microseconds.
    pub total_micros: u64,
}

/// Reference 002 "ErrorContext": what a failed request carries for debugging.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorContext {
    /// The request's unique id.
    pub request_id: u64,
    /// Whether the request is idempotent.
    pub idempotent: bool,
    /// The request type.
    pub request_type: &'static str,
    /// Retries made.
    pub retried: u32,
    /// Distinct reasons of the retries.
    pub retry_reasons: Vec<String>,
    /// Whether the request completed (success or failure).
    pub completed: bool,
    /// The timeout in milliseconds.
    pub timeout_ms: u64,
    /// Whether the request was cancelled.
    pub cancelled: bool,
    /// Why it was cancelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The client context.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub client_context: BTreeMap<String, String>,
    /// Service-specific properties.
    pub service: ServiceContext,
    /// Timings.
    pub timings: Timings,
    /// The node the request was last sent to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_dispatched_to: Option<String>,
}

impl ErrorContext {
    /// The context of `request`, ended after `total` for `reason`.
    pub fn new(request: &Request, reason: Option<String>, total: Duration) -> Self {
        ErrorContext {
            request_id: request.id(),
            idempotent: request.is_idempotent(),
            request_type: request.request_type().name(),
            retried: request.retry_attempts(),
            retry_reasons: request
                .retry_reasons()
                .iter()
                .map(|r| r.name().to_owned())
                .collect(),
            completed: true,
            timeout_ms: request.timeout().as_millis() as u64,
            cancelled: true,
            reason,
            client_context: request.client_context().clone(),
            service: ServiceContext {
                kind: request.service().name(),
            },
            timings: Timings {
                total_micros: total.as_micros() as u64,
            },
            last_dispatched_to: request.last_dispatched_to().map(str::to_owned),
        }
    }
}

impl fmt::Display for ErrorContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match serde_json::to_string(self) {
            Ok(json) => f.write_str(&json),
            Err(_) => Err(fmt::Error),
        }
    }
}
