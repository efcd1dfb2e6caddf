//! Retry throttles that look at failures, beside the proportional budget: gRFC A6's
//! `retryThrottling` (a token count a failure takes from and a success gives back to, see
//! [`TokenThrottle`]) and the SRE book's client-side adaptive throttling (a refusal
//! probability from the requests and accepts of a window, see [`AdaptiveThrottle`]). A failure
//! costs what its reason's class costs ([`FailureClass`], [`FailureCosts`]); a throttle is
//! kept per policy, per node, per authority or per client-context entry ([`ThrottleScope`],
//! [`ScopedThrottle`]).
//!
//! Counting an outcome is one atomic read-modify-write and the deciding path takes no lock.
//! Time is an argument (`*_at(now)`) and the adaptive throttle's draws come from a seed, so
//! simulations and replays are deterministic.

mod adaptive;
mod class;
mod scoped;
mod tokens;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

pub use adaptive::{AdaptiveConfig, AdaptiveThrottle, SLOTS};
pub use class::{FailureClass, FailureCosts};
pub use scoped::{ScopedThrottle, ThrottleScope, ThrottleScopeError};
pub use tokens::TokenThrottle;

use crate::field_error::FieldError;
use tokens::thousandths;

/// Which throttle, with its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThrottleKind {
    /// gRFC A6 `retryThrottling`.
    Tokens {
        /// `maxTokens`: the count starts there; retries stop at or below half of it. Within
        /// (0, 1000], three decimal places.
        max_tokens: f64,
        /// `tokenRatio`: what a success gives back. Above 0, three decimal places.
        token_ratio: f64,
    },
    /// Client-side adaptive throttling.
    Adaptive(AdaptiveConfig),
}

/// A throttle's parameters (`[throttles.NAME]`).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ThrottleConfig {
    /// Which throttle.
    pub kind: ThrottleKind,
    /// What a failure of each class costs.
    pub costs: FailureCosts,
}

/// The most tokens a count holds (gRFC A6 "Validation of retryThrottling": `maxTokens` at
/// most 1000); a success gives back at most as many.
pub const MAX_TOKENS: f64 = 1000.0;

/// The largest adaptive `K`: past it no retry is ever refused (the book uses 2).
pub const MAX_K: f64 = 1000.0;

/// The longest adaptive window, in milliseconds: a day.
pub const MAX_WINDOW_MS: u64 = 86_400_000;

impl ThrottleConfig {
    /// A throttle of `kind`, each failure class at its default cost.
    pub fn new(kind: ThrottleKind) -> Self {
        ThrottleConfig {
            kind,
            costs: FailureCosts::default(),
        }
    }

    /// This throttle with failures costing `costs`.
    pub fn with_costs(mut self, costs: FailureCosts) -> Self {
        self.costs = costs;
        self
    }

    /// Checks the ranges as gRFC A6 validates `retryThrottling` (`maxTokens` within (0, 1000],
    /// `tokenRatio` above 0), with the upper bounds a host keeps so that no number is summed
    /// past what it holds (`tokenRatio` at most [`MAX_TOKENS`], `K` at most [`MAX_K`], the
    /// window [`SLOTS`] ms to [`MAX_WINDOW_MS`]), and costs from 0 to 1000.
    pub fn validate(&self) -> Result<(), FieldError> {
        let refuse = |field: &str, message: String| Err(FieldError::new(field, message));
        match self.kind {
            ThrottleKind::Tokens {
                max_tokens,
                token_ratio,
            } => {
                if !(max_tokens > 0.0 && max_tokens <= MAX_TOKENS) {
                    return refuse(
                        "max_tokens",
                        format!("{max_tokens} is out of range; expected above 0 and at most {MAX_TOKENS}"),
                    );
                }
                if !(token_ratio > 0.0 && token_ratio <= MAX_TOKENS) {
                    return refuse(
                        "token_ratio",
                        format!("{token_ratio} is out of range; expected above 0 and at most {MAX_TOKENS}"),
                    );
                }
            }
            ThrottleKind::Adaptive(config) => {
                if !(config.k > 0.0 && config.k <= MAX_K) {
                    return refuse(
                        "k",
                        format!(
                            "{} is out of range; expected above 0 and at most {MAX_K}",
                            config.k
                        ),
                    );
                }
                if !(SLOTS as u64..=MAX_WINDOW_MS).contains(&config.window_ms) {
                    return refuse(
                        "window_ms",
                        format!(
                            "{} is out of range; expected {SLOTS} to {MAX_WINDOW_MS} (a day)",
                            config.window_ms
                        ),
                    );
                }
            }
        }
        for (class, cost) in self.costs.each() {
            if !(0.0..=1000.0).contains(&cost) {
                return refuse(
                    &format!("costs.{class}"),
                    format!("{cost} is out of range; expected 0 to 1000"),
                );
            }
        }
        Ok(())
    }
}

/// The throttle itself.
#[derive(Debug)]
enum Kept {
    Tokens(TokenThrottle),
    /// Boxed: its window is ten times a token count's size.
    Adaptive(Box<AdaptiveThrottle>),
}

/// One throttle: counts failed and successful attempts and says whether a retry may go.
///
/// ```
/// use std::time::Instant;
/// use rebound::throttle::{FailureClass, RetryThrottle, ThrottleConfig, ThrottleKind};
///
/// let config = ThrottleConfig::new(ThrottleKind::Tokens { max_tokens: 10.0, token_ratio: 0.1 });
/// let now = Instant::now();
/// let throttle = RetryThrottle::new(config, now).unwrap();
/// for _ in 0..4 {
///     throttle.failed_at(FailureClass::Other, now);
/// }
/// assert!(throttle.allows_retry_at(now)); // 6 tokens: above half of 10
/// throttle.failed_at(FailureClass::Other, now);
/// assert!(!throttle.allows_retry_at(now)); // 5 tokens: at the threshold
/// ```
#[derive(Debug)]
pub struct RetryThrottle {
    kept: Kept,
    /// Each class's cost, in thousandths of a token.
    costs: [i64; 4],
    /// Retries refused, for the status and metrics.
    refusals: AtomicU64,
}

/// The most attempts a callee's answer may count for in a throttle: a larger count (a header
/// that lies, or a deep chain of retries) counts as this many.
pub const MAX_UPSTREAM_ATTEMPTS: u32 = 16;

impl RetryThrottle {
    /// A throttle as `config` says, whose adaptive window (if any) starts at `now`.
    pub fn new(config: ThrottleConfig, now: Instant) -> Result<Self, FieldError> {
        config.validate()?;
        let kept = match config.kind {
            ThrottleKind::Tokens {
                max_tokens,
                token_ratio,
            } => Kept::Tokens(TokenThrottle::new(max_tokens, token_ratio)),
            ThrottleKind::Adaptive(adaptive) => {
                Kept::Adaptive(Box::new(AdaptiveThrottle::new(adaptive, now)))
            }
        };
        Ok(RetryThrottle {
            kept,
            costs: config.costs.each().map(|(_, cost)| thousandths(cost)),
            refusals: AtomicU64::new(0),
        })
    }

    fn cost(&self, class: FailureClass) -> i64 {
        self.costs[match class {
            FailureClass::Overload => 0,
            FailureClass::Timeout => 1,
            FailureClass::Rejected => 2,
            FailureClass::Other => 3,
        }]
    }

    /// An attempt failed at `now` with a reason of `class`.
    pub fn failed_at(&self, class: FailureClass, now: Instant) {
        self.failed_times_at(class, 1, now);
    }

    /// An attempt failed at `now` with a reason of `class`, its answer saying the callee made
    /// `attempts` attempts of its own (a proxy's or a service's retries behind it): it counts
    /// as that many failures, at most [`MAX_UPSTREAM_ATTEMPTS`] (at least one).
    pub fn failed_times_at(&self, class: FailureClass, attempts: u32, now: Instant) {
        let times = attempts.clamp(1, MAX_UPSTREAM_ATTEMPTS);
        let cost = self.cost(class);
        match &self.kept {
            Kept::Tokens(tokens) => {
                tokens.failed(cost * i64::from(times));
            }
            Kept::Adaptive(adaptive) => {
                for _ in 0..times {
                    adaptive.attempted_at(cost == 0, now);
                }
            }
        }
    }

    /// A request succeeded at `now`.
    pub fn succeeded_at(&self, now: Instant) {
        match &self.kept {
            Kept::Tokens(tokens) => tokens.succeeded(),
            Kept::Adaptive(adaptive) => adaptive.attempted_at(true, now),
        }
    }

    /// Whether a retry may go at `now`; a refusal is counted.
    pub fn allows_retry_at(&self, now: Instant) -> bool {
        let allowed = match &self.kept {
            Kept::Tokens(tokens) => tokens.allows(),
            Kept::Adaptive(adaptive) => adaptive.allows_retry_at(now),
        };
        if !allowed {
            self.refusals.fetch_add(1, Ordering::Relaxed);
        }
        allowed
    }

    /// Retries it refused.
    pub fn refusals(&self) -> u64 {
        self.refusals.load(Ordering::Relaxed)
    }

    /// Where it stands at `now`, for the status: the token count, or the refusal probability.
    pub fn level_at(&self, now: Instant) -> ThrottleLevel {
        match &self.kept {
            Kept::Tokens(tokens) => ThrottleLevel::Tokens(tokens.tokens()),
            Kept::Adaptive(adaptive) => {
                ThrottleLevel::RefusalProbability(adaptive.rejection_probability_at(now))
            }
        }
    }
}

/// Where a throttle stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThrottleLevel {
    /// A token throttle's count.
    Tokens(f64),
    /// An adaptive throttle's refusal probability.
    RefusalProbability(f64),
}

#[cfg(test)]
mod tests {
    use super::tokens::MILLI;
    use super::*;

    fn tokens(costs: FailureCosts) -> ThrottleConfig {
        ThrottleConfig {
            kind: ThrottleKind::Tokens {
                max_tokens: 10.0,
                token_ratio: 1.0,
            },
            costs,
        }
    }

    /// gRFC A6 "Validation of retryThrottling": `maxTokens` within (0, 1000] and `tokenRatio`
    /// above 0; the adaptive throttle's `K` above 0; a negative cost is refused with its class.
    #[test]
    fn out_of_range_parameters_are_refused_with_their_field() {
        let field = |config: ThrottleConfig| config.validate().unwrap_err().field;
        let with = |max_tokens, token_ratio| ThrottleConfig {
            kind: ThrottleKind::Tokens {
                max_tokens,
                token_ratio,
            },
            costs: FailureCosts::default(),
        };
        assert_eq!(field(with(0.0, 0.1)), "max_tokens");
        assert_eq!(field(with(1000.5, 0.1)), "max_tokens");
        assert_eq!(field(with(10.0, 0.0)), "token_ratio");
        assert_eq!(field(with(10.0, -1.0)), "token_ratio");
        assert!(with(1000.0, 0.001).validate().is_ok());
        let adaptive = |k| ThrottleConfig {
            kind: ThrottleKind::Adaptive(AdaptiveConfig {
                k,
                ..AdaptiveConfig::default()
            }),
            costs: FailureCosts::default(),
        };
        assert_eq!(field(adaptive(0.0)), "k");
        assert!(adaptive(2.0).validate().is_ok());
        let negative = FailureCosts {
            timeout: -1.0,
            ..FailureCosts::default()
        };
        assert_eq!(field(tokens(negative)), "costs.timeout");
    }

    /// docs/decisions.md "Throttle failure classes": a failure takes its class's cost; a
    /// rejection of the request itself costs nothing by default, as gRFC A6 counts only
    /// server failures.
    #[test]
    fn a_failure_takes_its_class_s_cost() {
        let costs = FailureCosts {
            timeout: 2.5,
            ..FailureCosts::default()
        };
        let now = Instant::now();
        let throttle = RetryThrottle::new(tokens(costs), now).unwrap();
        assert_eq!(throttle.cost(FailureClass::Timeout), 5 * MILLI / 2);
        throttle.failed_at(FailureClass::Rejected, now);
        assert_eq!(throttle.level_at(now), ThrottleLevel::Tokens(10.0));
        throttle.failed_at(FailureClass::Timeout, now);
        throttle.failed_at(FailureClass::Timeout, now);
        assert_eq!(throttle.level_at(now), ThrottleLevel::Tokens(5.0));
        assert!(!throttle.allows_retry_at(now));
        throttle.succeeded_at(now);
        assert!(throttle.allows_retry_at(now));
    }

    /// docs/throttling.md "What a failure costs": a failure whose callee says it made several
    /// attempts counts that many times, capped, and at least once.
    #[test]
    fn a_failure_counts_as_the_attempts_its_callee_made() {
        let now = Instant::now();
        let throttle = RetryThrottle::new(tokens(FailureCosts::default()), now).unwrap();
        throttle.failed_times_at(FailureClass::Overload, 3, now);
        assert_eq!(throttle.level_at(now), ThrottleLevel::Tokens(7.0));
        throttle.failed_times_at(FailureClass::Overload, 0, now);
        assert_eq!(throttle.level_at(now), ThrottleLevel::Tokens(6.0));
        let capped = RetryThrottle::new(tokens(FailureCosts::default()), now).unwrap();
        capped.failed_times_at(FailureClass::Overload, u32::MAX, now);
        assert_eq!(capped.level_at(now), ThrottleLevel::Tokens(0.0));
        let rejected = RetryThrottle::new(tokens(FailureCosts::default()), now).unwrap();
        rejected.failed_times_at(FailureClass::Rejected, 5, now);
        assert_eq!(rejected.level_at(now), ThrottleLevel::Tokens(10.0));
    }
}
