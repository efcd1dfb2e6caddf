//! The best-effort strategy's default calculator (reference 001 "Best Effort"): an
//! exponential delay `min × factor^attempt` clamped to `[min, max]`, 1 ms to 500 ms with
//! factor 2 by default, with optional jitter.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::BackoffCalculator;

/// An invalid backoff configuration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BackoffConfigError {
    /// `min` was zero.
    #[error("backoff min must be greater than zero")]
    ZeroMin,
    /// `max` was below `min`.
    #[error("backoff max ({max:?}) must be at least min ({min:?})")]
    MaxBelowMin {
        /// The configured minimum.
        min: Duration,
        /// The configured maximum.
        max: Duration,
    },
    /// `factor` was below 1 or not finite.
    #[error("backoff factor must be a finite number >= 1, got {0}")]
    BadFactor(f64),
    /// `jitter` was outside `[0, 1]`.
    #[error("backoff jitter must be within 0..=1, got {0}")]
    BadJitter(f64),
}

/// Exponential backoff: `min × factor^attempt`, clamped to `[min, max]`.
///
/// With `jitter = j > 0` each delay `d` is drawn uniformly from `[d × (1 − j), d]` and then
/// clamped to `[min, max]` again, which spreads out retries of many requests failing together.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(
    try_from = "ExponentialBackoffConfig",
    into = "ExponentialBackoffConfig"
)]
pub struct ExponentialBackoff {
    min: Duration,
    max: Duration,
    factor: f64,
    jitter: f64,
}

/// Serialised form of [`ExponentialBackoff`], in milliseconds (also best effort's parameters
/// in a registry configuration).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExponentialBackoffConfig {
    #[serde(
        default = "default_min_ms",
        deserialize_with = "crate::ranges::within::<_, _, 0, 86_400_000>"
    )]
    pub min_ms: u64,
    #[serde(
        default = "default_max_ms",
        deserialize_with = "crate::ranges::within::<_, _, 0, 86_400_000>"
    )]
    pub max_ms: u64,
    #[serde(default = "default_factor")]
    pub factor: f64,
    #[serde(default)]
    pub jitter: f64,
}

fn default_min_ms() -> u64 {
    1
}
fn default_max_ms() -> u64 {
    500
}
fn default_factor() -> f64 {
    2.0
}

impl TryFrom<ExponentialBackoffConfig> for ExponentialBackoff {
    type Error = BackoffConfigError;
    fn try_from(c: ExponentialBackoffConfig) -> Result<Self, Self::Error> {
        ExponentialBackoff::new(
            Duration::from_millis(c.min_ms),
            Duration::from_millis(c.max_ms),
            c.factor,
        )?
        .with_jitter(c.jitter)
    }
}

impl From<ExponentialBackoff> for ExponentialBackoffConfig {
    fn from(b: ExponentialBackoff) -> Self {
        ExponentialBackoffConfig {
            min_ms: b.min.as_millis() as u64,
            max_ms: b.max.as_millis() as u64,
            factor: b.factor,
            jitter: b.jitter,
        }
    }
}

impl Default for ExponentialBackoff {
    /// 1 ms to 500 ms, factor 2, no jitter (reference 001 "Best Effort").
    fn default() -> Self {
        ExponentialBackoff {
            min: Duration::from_millis(1),
            max: Duration::from_millis(500),
            factor: 2.0,
            jitter: 0.0,
        }
    }
}

impl ExponentialBackoff {
    /// A calculator with the given bounds and factor, without jitter.
    pub fn new(min: Duration, max: Duration, factor: f64) -> Result<Self, BackoffConfigError> {
        if min.is_zero() {
            return Err(BackoffConfigError::ZeroMin);
        }
        if max < min {
            return Err(BackoffConfigError::MaxBelowMin { min, max });
        }
        if !factor.is_finite() || factor < 1.0 {
            return Err(BackoffConfigError::BadFactor(factor));
        }
        Ok(ExponentialBackoff {
            min,
            max,
            factor,
            jitter: 0.0,
        })
    }

    /// Adds jitter: a fraction in `[0, 1]` of each delay that may be taken off at random.
    pub fn with_jitter(mut self, jitter: f64) -> Result<Self, BackoffConfigError> {
        if !(0.0..=1.0).contains(&jitter) {
            return Err(BackoffConfigError::BadJitter(jitter));
        }
        self.jitter = jitter;
        Ok(self)
    }

    /// The lower bound.
    pub fn min(&self) -> Duration {
        self.min
    }
    /// The upper bound.
    pub fn max(&self) -> Duration {
        self.max
    }
    /// The factor each delay is multiplied by.
    pub fn factor(&self) -> f64 {
        self.factor
    }

    /// The delay without jitter: `min × factor^attempt` clamped to `[min, max]`.
    pub fn nominal(&self, attempt: u32) -> Duration {
        if let Some(delay) = self.whole_factor_nominal(attempt) {
            return delay;
        }
        let exp = i32::try_from(attempt).unwrap_or(i32::MAX);
        let secs = self.min.as_secs_f64() * self.factor.powi(exp);
        if !secs.is_finite() || secs >= self.max.as_secs_f64() {
            return self.max;
        }
        Duration::from_secs_f64(secs).clamp(self.min, self.max)
    }

    /// [`nominal`](Self::nominal) for a whole factor (the default 2), in exact integer
    /// nanoseconds: the same delays as the floating-point product, without its cost. `None`
    /// for a fractional factor or bounds past `u64` nanoseconds.
    fn whole_factor_nominal(&self, attempt: u32) -> Option<Duration> {
        if self.factor.fract() != 0.0 || self.factor > u64::MAX as f64 {
            return None;
        }
        let min = u64::try_from(self.min.as_nanos()).ok()?;
        let max = u64::try_from(self.max.as_nanos()).ok()?;
        // The factor is at least 1, so a product past u64 is past `max` too.
        let nanos = (self.factor as u64)
            .checked_pow(attempt)
            .and_then(|power| power.checked_mul(min))
            .map_or(max, |nanos| nanos.min(max));
        Some(Duration::from_nanos(nanos))
    }
}

impl BackoffCalculator for ExponentialBackoff {
    fn backoff(&self, attempt: u32) -> Duration {
        let nominal = self.nominal(attempt);
        if self.jitter == 0.0 {
            return nominal;
        }
        let keep = 1.0 - self.jitter * fastrand::f64();
        nominal.mul_f64(keep).clamp(self.min, self.max)
    }
}

/// `min × factor^attempt` clamped to `[min, max]` (in ms) for untrusted inputs (a policy's
/// host call): a zero `min` counts as 1, a `max` below `min` as `min`, a factor that is not a
/// finite number >= 1 as 1. Never fails.
pub fn lenient_exponential_ms(attempt: u32, min_ms: u64, max_ms: u64, factor: f64) -> u64 {
    let min = Duration::from_millis(min_ms.max(1));
    let max = Duration::from_millis(max_ms).max(min);
    let factor = if factor.is_finite() && factor >= 1.0 {
        factor
    } else {
        1.0
    };
    ExponentialBackoff {
        min,
        max,
        factor,
        jitter: 0.0,
    }
    .nominal(attempt)
    .as_millis() as u64
}
