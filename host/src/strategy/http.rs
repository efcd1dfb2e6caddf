//! Retries of plain HTTP requests (RFC 9110): a request whose method is idempotent
//! (§9.2.2: GET, HEAD, OPTIONS, TRACE, PUT, DELETE) or declared so is retried after a failure
//! before it was sent, a connection lost while it was in flight, or a response whose status is
//! in the table (408, 429, 500, 502, 503, 504 by default); any other request only after a
//! failure before it was sent. The delay is an exponential backoff with full jitter
//! (`random(0, min(initial × multiplier^n, max))` before retry `n + 1`), and never shorter
//! than the server's `Retry-After` (§10.2.3), itself capped (urllib3's `retry_after_max`); a
//! `Retry-After` that cannot be read ends retries. A 413, 429 or 503 whose `Retry-After` can
//! be read is retried even outside the table, as urllib3's `respect_retry_after_header` does;
//! with that turned off, the server's pushback is not read at all. At most `max_attempts`
//! attempts, the first included.

use std::time::Duration;

use crate::action::{NodeChoice, RetryAction};
use crate::classify::{DEFAULT_HTTP_RETRY_STATUSES, RETRY_AFTER_STATUSES};
use crate::pushback::Pushback;
use crate::reason::{RetryReason, Stage};
use crate::request::{Request, Service};
use crate::strategy::DecisionContext;

use super::{Strategy, SyncStrategy};

/// Retries HTTP requests as RFC 9110 allows (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct HttpRetry {
    max_attempts: u32,
    initial: Duration,
    max: Duration,
    multiplier: f64,
    statuses: Vec<u16>,
    attempt_timeout: Option<Duration>,
    respect_retry_after: bool,
    retry_after_max: Duration,
}

impl Default for HttpRetry {
    /// Three attempts, 100 ms doubling up to 5 s, the default status table, `Retry-After`
    /// respected up to 6 hours.
    fn default() -> Self {
        HttpRetry {
            max_attempts: 3,
            initial: Duration::from_millis(100),
            max: Duration::from_secs(5),
            multiplier: 2.0,
            statuses: HttpRetry::DEFAULT_STATUSES.to_vec(),
            attempt_timeout: None,
            respect_retry_after: true,
            retry_after_max: HttpRetry::DEFAULT_RETRY_AFTER_MAX,
        }
    }
}

impl HttpRetry {
    /// The statuses retried by default ([`DEFAULT_HTTP_RETRY_STATUSES`]).
    pub const DEFAULT_STATUSES: [u16; 6] = DEFAULT_HTTP_RETRY_STATUSES;

    /// The longest server delay waited for by default: urllib3's `DEFAULT_RETRY_AFTER_MAX`,
    /// 6 hours.
    pub const DEFAULT_RETRY_AFTER_MAX: Duration = Duration::from_secs(6 * 60 * 60);

    /// At most `max_attempts` attempts (the first included).
    pub fn max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// The backoff before jitter: `initial`, multiplied by `multiplier` per retry, at most
    /// `max`.
    pub fn backoff(mut self, initial: Duration, max: Duration, multiplier: f64) -> Self {
        self.initial = initial;
        self.max = max.max(initial);
        self.multiplier = multiplier;
        self
    }

    /// The statuses retried.
    pub fn statuses(mut self, statuses: impl IntoIterator<Item = u16>) -> Self {
        self.statuses = statuses.into_iter().collect();
        self
    }

    /// Cuts each attempt after `timeout` (an `ATTEMPT_TIMEOUT` failure: retried like a
    /// connection lost in flight, so only an idempotent request); the request's deadline still
    /// ends it.
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = Some(timeout);
        self
    }

    /// Whether the server's pushback is read (urllib3's `respect_retry_after_header`, on by
    /// default): a 413, 429 or 503 whose `Retry-After` can be read is then retried even outside
    /// the statuses, no sooner than it asks, and one that cannot be read ends retries. Off, the
    /// backoff alone sets the delay and the statuses alone what is retried.
    pub fn respect_retry_after(mut self, respect: bool) -> Self {
        self.respect_retry_after = respect;
        self
    }

    /// The longest server delay waited for: a `Retry-After` asking for more is waited for this
    /// long (urllib3's `retry_after_max`; the AWS SDKs' standard mode caps it at their maximum
    /// backoff, 20 s).
    pub fn retry_after_max(mut self, max: Duration) -> Self {
        self.retry_after_max = max;
        self
    }

    /// The server's pushback as this strategy reads it: none when it does not respect it, and
    /// a delay no longer than its cap.
    fn pushback(&self, pushback: Option<Pushback>) -> Option<Pushback> {
        match pushback.filter(|_| self.respect_retry_after)? {
            Pushback::After(delay) => Some(Pushback::After(delay.min(self.retry_after_max))),
            other => Some(other),
        }
    }

    /// The ceiling of retry `retries + 1`'s delay: `min(initial × multiplier^retries, max)`.
    pub fn ceiling(&self, retries: u32) -> Duration {
        Duration::from_nanos(self.ceiling_nanos(retries) as u64)
    }

    /// [`ceiling`](Self::ceiling) in nanoseconds, as a float (no `Duration` rounding on the
    /// deciding path).
    fn ceiling_nanos(&self, retries: u32) -> f64 {
        let exponent = i32::try_from(retries).unwrap_or(i32::MAX);
        let nanos = self.initial.as_secs_f64() * 1e9 * self.multiplier.powi(exponent);
        let max = self.max.as_secs_f64() * 1e9;
        if nanos.is_finite() && nanos < max {
            nanos
        } else {
            max
        }
    }

    /// Whether a failure for `reason`, with the server's `pushback` as this strategy reads it,
    /// is one this strategy retries at all, idempotency aside.
    fn retries(&self, reason: &RetryReason, pushback: Option<Pushback>) -> bool {
        match reason {
            RetryReason::HttpStatus(status) => {
                self.statuses.contains(status)
                    || (RETRY_AFTER_STATUSES.contains(status)
                        && matches!(pushback, Some(Pushback::After(_))))
            }
            other => matches!(other.stage(), Stage::PreDispatch | Stage::InFlight),
        }
    }
}

impl Strategy for HttpRetry {
    fn name(&self) -> &str {
        "http"
    }

    fn times_attempts(&self) -> bool {
        self.attempt_timeout.is_some()
    }

    fn attempt_timeout(&self, _request: &Request) -> Option<Duration> {
        self.attempt_timeout
    }
}

impl SyncStrategy for HttpRetry {
    fn answer(&self, request: &Request, context: &DecisionContext<'_>) -> RetryAction {
        let reason = context.reason();
        let pushback = self.pushback(context.pushback());
        let attempts = request.retry_attempts().saturating_add(1);
        if request.service() != Service::Http
            || !request.may_be_sent_again(reason)
            || !self.retries(reason, pushback)
            || attempts >= self.max_attempts
        {
            return RetryAction::NoRetry;
        }
        let ceiling = self.ceiling_nanos(request.retry_attempts());
        let action = RetryAction::RetryAfter {
            delay: Duration::from_nanos((ceiling * fastrand::f64()) as u64),
            node: NodeChoice::Same,
            consistency: None,
            attempt_timeout: None,
        };
        Pushback::honour(pushback, action)
    }
}
