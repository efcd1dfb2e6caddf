//! Backoff: the controlled backoff of the always-retry path and the pluggable calculators a
//! strategy uses to turn a retry attempt into a delay.

mod controlled;
mod exponential;

pub use controlled::controlled_backoff;
#[cfg(feature = "registry")]
pub(crate) use exponential::ExponentialBackoffConfig;
pub use exponential::{lenient_exponential_ms, BackoffConfigError, ExponentialBackoff};

use std::time::Duration;

/// Turns the number of retries already made into the delay before the next one.
pub trait BackoffCalculator: Send + Sync + std::fmt::Debug {
    /// The delay before retry number `attempt + 1` (`attempt` = retries already made).
    fn backoff(&self, attempt: u32) -> Duration;
}
