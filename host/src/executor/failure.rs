//! How the operation reports a failure: its own error, and what the executor needs to decide.

use crate::breaker::BreakerOpen;
use crate::classify::{classify, Response};
use crate::errormap::ErrorMap;
use crate::progress::Progress;
use crate::pushback::Pushback;
use crate::reason::{reasons, RetryReason};
use crate::retry_loop::Cause;

/// A failed attempt: the operation's own error `E` and its [`Cause`].
#[derive(Debug)]
pub struct Failure<E> {
    /// The operation's error, handed back if the request ends with it.
    pub error: E,
    /// Why it failed.
    pub cause: Cause,
    /// The node the request was written to, if the operation did not report it on the
    /// [`Attempt`](super::Attempt) already.
    pub dispatched_to: Option<String>,
    /// What the server said about retrying (an HTTP `Retry-After`, a gRPC-style pushback):
    /// the built-in policies never retry sooner, and not at all when it says stop.
    pub pushback: Option<Pushback>,
    /// How far the attempt got (gRFC A6): an attempt the server's application never saw is
    /// retried transparently, a committed one never. [`Progress::Processed`] unless said.
    pub progress: Progress,
}

impl<E> Failure<E> {
    /// Failed for a known `reason`.
    pub fn reason(error: E, reason: RetryReason) -> Self {
        Failure {
            error,
            cause: Cause::Reason(reason),
            dispatched_to: None,
            pushback: None,
            progress: Progress::Processed,
        }
    }

    /// Failed with a server `response`, classified now (with `error_map` for unknown KV
    /// statuses, reference 001 "KV Error Map Handling").
    pub fn response(error: E, response: Response<'_>, error_map: Option<&ErrorMap>) -> Self {
        Failure {
            error,
            cause: Cause::Classified(Box::new(classify(response, error_map))),
            dispatched_to: None,
            pushback: None,
            progress: Progress::Processed,
        }
    }

    /// Failed in a way no retry can fix.
    pub fn final_error(error: E) -> Self {
        Failure {
            error,
            cause: Cause::Final,
            dispatched_to: None,
            pushback: None,
            progress: Progress::Processed,
        }
    }

    /// The server pushed back: see [`Pushback`] (e.g. `Pushback::from_retry_after` of an HTTP
    /// 429's or 503's `Retry-After`).
    pub fn with_pushback(mut self, pushback: Pushback) -> Self {
        self.pushback = Some(pushback);
        self
    }

    /// The attempt got as far as `progress` says before it failed.
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = progress;
        self
    }

    /// The request was written to `node` before it failed.
    pub fn dispatched_to(mut self, node: impl Into<String>) -> Self {
        self.dispatched_to = Some(node.into());
        self
    }
}

impl<E: From<BreakerOpen>> From<BreakerOpen> for Failure<E> {
    /// The node's circuit breaker refused the attempt: `CIRCUIT_BREAKER_OPEN`, before
    /// dispatch.
    fn from(open: BreakerOpen) -> Self {
        Failure::reason(E::from(open), reasons::CIRCUIT_BREAKER_OPEN)
    }
}
