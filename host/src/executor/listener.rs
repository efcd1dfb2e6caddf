//! Callbacks for an application that wants to hear what the executor does, as resilience4j's
//! event publisher and Polly's `OnRetry` offer: a retry about to be waited for, a request given
//! up, a success that needed retries. Called on the request's own task, between attempts:
//! a listener must return quickly (count, log, record; never block).

use std::time::Duration;

use crate::outcome::RetryError;
use crate::reason::RetryReason;
use crate::request::Request;
use crate::request_outcome::Outcome;

/// What the executor tells an application (every method does nothing unless overridden).
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::time::Duration;
/// use rebound::executor::ExecutorListener;
/// use rebound::{Request, RetryReason};
///
/// #[derive(Default)]
/// struct CountRetries(AtomicU64);
///
/// impl ExecutorListener for CountRetries {
///     fn on_retry(&self, _: &Request, _: &RetryReason, _: Duration, _: u32) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
/// ```
pub trait ExecutorListener: Send + Sync {
    /// `request` failed for `reason` and attempt number `next_attempt` (0 is the first) will
    /// start after `delay`.
    fn on_retry(
        &self,
        _request: &Request,
        _reason: &RetryReason,
        _delay: Duration,
        _next_attempt: u32,
    ) {
    }

    /// `request` ended without a value as `outcome` (failed or timed out); `error` is the
    /// orchestrator's outcome error when it ended the request (none when the operation's error
    /// was final, or the policy ignored it).
    fn on_give_up(&self, _request: &Request, _outcome: Outcome, _error: Option<&RetryError>) {}

    /// `request` succeeded at attempt `attempts` after retries (a first attempt's success is
    /// not reported).
    fn on_success(&self, _request: &Request, _attempts: u32) {}
}
