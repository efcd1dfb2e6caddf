//! Per-node circuit breakers, kept by the host and fed by the outcomes of attempts that name
//! their node: an open breaker fails an attempt to its node with `CIRCUIT_BREAKER_OPEN` before
//! dispatch (reference 001, "Retry Reasons"), and an attempt to the next node skips the open
//! ones. The parameters and their defaults are Couchbase core-io's ([`BreakerConfig`]); the
//! states and transitions are [`CircuitBreaker`]'s; [`NodeBreakers`] keeps one per node.
//!
//! The breaker comes first in the fixed order of the layers: breaker → strategy → safety
//! guard → throttle → budget → deadline cap. It acts before an attempt is sent; the others
//! decide after it failed, and a refusal is a failure like any other for them (a pre-dispatch
//! reason, so even a non-idempotent request may be retried after it).

mod circuit;
mod nodes;

use std::time::Duration;

pub use circuit::{Admission, BreakerState, CircuitBreaker};
pub use nodes::{BreakerOpen, NodeBreakers};

use crate::field_error::FieldError;
use crate::pushback::Pushback;
use crate::reason::{ReasonKind, RetryReason};
use crate::throttle::FailureClass;

/// How an attempt that failed for `reason`, the server pushing back as `pushback` says, counts
/// in its node's breaker: not at all when the breaker itself refused it (nothing was sent), as
/// an answer when the node rejected the request itself (a malformed or unauthorised request
/// says nothing of the node's health), as a failure otherwise (overload, timeouts, connection
/// failures, server errors). An attempt that succeeded, or ended with an answer that is not
/// retried, counts as an answer.
pub fn failure_counts(reason: &RetryReason, pushback: Option<Pushback>) -> Option<bool> {
    if reason.kind() == ReasonKind::CircuitBreakerOpen {
        return None;
    }
    Some(FailureClass::of(reason, pushback) != FailureClass::Rejected)
}

/// A breaker's parameters (`[breakers.NAME]`), Couchbase core-io's `CircuitBreakerConfig`
/// defaults unless set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BreakerConfig {
    /// The fewest attempts a window must count before it can open the breaker: 20.
    pub volume_threshold: u32,
    /// The percentage of a window's attempts that must have failed to open it: 50.
    pub error_percentage: u32,
    /// How long an open breaker refuses attempts before a canary goes: 5 s.
    pub sleep_window: Duration,
    /// How long a window counts: 1 minute.
    pub rolling_window: Duration,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            volume_threshold: 20,
            error_percentage: 50,
            sleep_window: Duration::from_secs(5),
            rolling_window: Duration::from_secs(60),
        }
    }
}

impl BreakerConfig {
    /// The most attempts a window counts exactly, and so the largest `volume_threshold`.
    pub const MOST_VOLUME: u32 = 0xffff;

    /// Checks the ranges: a volume threshold within 1 to [`MOST_VOLUME`](Self::MOST_VOLUME),
    /// an error percentage within 1 to 100, windows of at least a millisecond and at most a
    /// day.
    pub fn validate(&self) -> Result<(), FieldError> {
        let refuse = |field: &str, message: String| Err(FieldError::new(field, message));
        if !(1..=Self::MOST_VOLUME).contains(&self.volume_threshold) {
            return refuse(
                "volume_threshold",
                format!(
                    "{} is out of range; expected 1 to {}",
                    self.volume_threshold,
                    Self::MOST_VOLUME
                ),
            );
        }
        if !(1..=100).contains(&self.error_percentage) {
            return refuse(
                "error_percentage",
                format!(
                    "{} is out of range; expected 1 to 100",
                    self.error_percentage
                ),
            );
        }
        let day = Duration::from_secs(86_400);
        for (field, window) in [
            ("sleep_window_ms", self.sleep_window),
            ("rolling_window_ms", self.rolling_window),
        ] {
            if window < Duration::from_millis(1) || window > day {
                return refuse(
                    field,
                    format!(
                        "{} ms is out of range; expected 1 to 86400000",
                        window.as_millis()
                    ),
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reason::reasons;

    /// docs/decisions.md "Breaker defaults": Couchbase core-io's `CircuitBreakerConfig`.
    #[test]
    fn the_defaults_are_core_io_s() {
        let config = BreakerConfig::default();
        assert_eq!(config.volume_threshold, 20);
        assert_eq!(config.error_percentage, 50);
        assert_eq!(config.sleep_window, Duration::from_secs(5));
        assert_eq!(config.rolling_window, Duration::from_secs(60));
        assert_eq!(config.validate(), Ok(()));
    }

    /// docs/decisions.md "Breaker failures": what an attempt's failure counts as.
    #[test]
    fn failures_count_unless_the_request_was_rejected_or_never_sent() {
        assert_eq!(failure_counts(&reasons::CIRCUIT_BREAKER_OPEN, None), None);
        assert_eq!(
            failure_counts(&reasons::SOCKET_NOT_AVAILABLE, None),
            Some(true)
        );
        assert_eq!(
            failure_counts(&RetryReason::HttpStatus(503), None),
            Some(true)
        );
        assert_eq!(
            failure_counts(&RetryReason::HttpStatus(504), None),
            Some(true)
        );
        assert_eq!(
            failure_counts(&RetryReason::HttpStatus(404), None),
            Some(false)
        );
    }

    /// Out-of-range parameters are refused naming the field and the range.
    #[test]
    fn out_of_range_parameters_name_their_field() {
        let refused = |config: BreakerConfig| config.validate().unwrap_err().to_string();
        let base = BreakerConfig::default();
        assert_eq!(
            refused(BreakerConfig {
                volume_threshold: 0,
                ..base
            }),
            "volume_threshold: 0 is out of range; expected 1 to 65535"
        );
        assert_eq!(
            refused(BreakerConfig {
                error_percentage: 101,
                ..base
            }),
            "error_percentage: 101 is out of range; expected 1 to 100"
        );
        assert_eq!(
            refused(BreakerConfig {
                sleep_window: Duration::ZERO,
                ..base
            }),
            "sleep_window_ms: 0 ms is out of range; expected 1 to 86400000"
        );
    }
}
