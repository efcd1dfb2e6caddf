//! What one decision is about besides the request's own facts: the failure's reason, the
//! error-map retry spec its classification attached, the server's suggested delay, and the
//! decision's moment. A context is built for every failure and dropped with its decision, so
//! nothing of one failure can reach the decision for the next.

use std::time::{Duration, Instant};

use crate::errormap::RetrySpec;
use crate::reason::RetryReason;

/// One failure to decide: what a strategy is told besides the [`Request`](crate::Request).
///
/// ```
/// use std::time::Instant;
/// use rebound::{reasons, DecisionContext};
///
/// let context = DecisionContext::new(&reasons::KV_LOCKED).at(Instant::now());
/// assert_eq!(context.reason(), &reasons::KV_LOCKED);
/// assert!(context.error_map_spec().is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct DecisionContext<'r> {
    reason: &'r RetryReason,
    error_map_spec: Option<RetrySpec>,
    server_delay: Option<Duration>,
    at: Option<Instant>,
}

impl<'r> DecisionContext<'r> {
    /// A failure for `reason`, decided when the strategy has answered (the clock is read
    /// then), with no error-map spec and no server delay.
    pub const fn new(reason: &'r RetryReason) -> Self {
        DecisionContext {
            reason,
            error_map_spec: None,
            server_delay: None,
            at: None,
        }
    }

    /// The error-map retry spec of this failure (reference 001 "KV Error Map Handling"), for
    /// strategies that opt in to its timings.
    pub const fn with_error_map_spec(mut self, spec: Option<RetrySpec>) -> Self {
        self.error_map_spec = spec;
        self
    }

    /// The delay the server asked for before a retry (its pushback), if it named one.
    pub const fn with_server_delay(mut self, delay: Option<Duration>) -> Self {
        self.server_delay = delay;
        self
    }

    /// Fixes the decision's moment (replays, virtual clocks, tokio's paused time): the
    /// deadline is capped against it and a WebAssembly policy's time reads it.
    pub const fn at(mut self, now: Instant) -> Self {
        self.at = Some(now);
        self
    }

    /// Why the request failed.
    pub const fn reason(&self) -> &'r RetryReason {
        self.reason
    }

    /// The error-map retry spec of this failure, if its classification attached one.
    pub const fn error_map_spec(&self) -> Option<&RetrySpec> {
        self.error_map_spec.as_ref()
    }

    /// The server's suggested delay, if it named one.
    pub const fn server_delay(&self) -> Option<Duration> {
        self.server_delay
    }

    /// The decision's moment when the caller fixed it; `None` when the clock decides.
    pub const fn moment(&self) -> Option<Instant> {
        self.at
    }

    /// The decision's moment, or the clock's now when the caller did not fix one.
    pub fn now(&self) -> Instant {
        self.at.unwrap_or_else(Instant::now)
    }
}
