//! Retry specifications of error-map entries (reference 004 "Retry Intervals"): constant,
//! linear and exponential schedules with `after`, `interval`, `ceil` and `max-duration`.
//!
//! The default strategies ignore these timings (reference 001 "KV Error Map Handling"); they
//! are exposed for strategies that opt in.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The schedule algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpecStrategy {
    /// Every retry after `interval`.
    Constant,
    /// Retry `r` after `min(interval × r, ceil)`.
    Linear,
    /// Retry `r` after `min(interval ^ r, ceil)`.
    Exponential,
}

/// A retry specification, all times in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RetrySpec {
    /// The algorithm.
    pub strategy: SpecStrategy,
    /// The initial sleep before the first retry.
    pub after: u64,
    /// The base interval.
    pub interval: u64,
    /// The largest interval of linear and exponential schedules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceil: Option<u64>,
    /// The longest time the retries may take; absent or 0 means "follow the client".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration: Option<u64>,
}

impl RetrySpec {
    pub(super) fn validate(&self) -> Result<(), &'static str> {
        if self.ceil == Some(0) && self.strategy != SpecStrategy::Constant {
            return Err("ceil must be greater than zero");
        }
        Ok(())
    }

    /// The delay before the next retry when `attempt` retries were already made for this
    /// code: `after` first, then the algorithm's interval for retry number `attempt`.
    pub fn delay(&self, attempt: u32) -> Duration {
        if attempt == 0 {
            return Duration::from_millis(self.after);
        }
        let raw = match self.strategy {
            SpecStrategy::Constant => return Duration::from_millis(self.interval),
            SpecStrategy::Linear => self.interval.saturating_mul(u64::from(attempt)),
            SpecStrategy::Exponential => self.interval.saturating_pow(attempt),
        };
        Duration::from_millis(self.ceil.map_or(raw, |ceil| raw.min(ceil)))
    }

    /// The time limit of the retries, if the spec sets one (0 means none).
    pub fn max_duration(&self) -> Option<Duration> {
        self.max_duration
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
    }

    /// The delay before the next retry, or `None` once `elapsed` (since the first failure
    /// with this code) has reached `max-duration`.
    pub fn next_delay(&self, attempt: u32, elapsed: Duration) -> Option<Duration> {
        match self.max_duration() {
            Some(limit) if elapsed >= limit => None,
            Some(limit) => Some(self.delay(attempt).min(limit - elapsed)),
            None => Some(self.delay(attempt)),
        }
    }

    /// The successive delays of the schedule, capped by `max-duration` when set: each item is
    /// the delay before retry 1, 2, ... The sequence ends when the limit is reached, or never
    /// without a limit.
    pub fn schedule(&self) -> impl Iterator<Item = Duration> + '_ {
        let mut elapsed = Duration::ZERO;
        (0u32..).map_while(move |attempt| {
            let delay = self.next_delay(attempt, elapsed)?;
            elapsed = elapsed.saturating_add(delay);
            Some(delay)
        })
    }
}
