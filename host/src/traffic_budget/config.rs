//! A budget's parameters as `[budgets.NAME]` writes them, and the ranges a budget can be built
//! with, checked before one is.

use serde::Deserialize;

use super::SLOTS;
use crate::field_error::FieldError;

/// A budget's parameters, as in `[budgets.NAME]`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct BudgetConfig {
    /// Retries allowed as a percentage of requests (0 to 100).
    pub percent: f64,
    /// Retries allowed per second whatever the traffic (the floor).
    pub min_per_second: u32,
    /// How long a deposit or withdrawal counts, in milliseconds (at least [`TrafficBudget::SLOTS`](crate::TrafficBudget::SLOTS)).
    pub ttl_ms: u64,
}

impl Default for BudgetConfig {
    /// Finagle's default: 20 % of requests and 10 retries a second over 10 seconds.
    fn default() -> Self {
        BudgetConfig {
            percent: 20.0,
            min_per_second: 10,
            ttl_ms: 10_000,
        }
    }
}

impl BudgetConfig {
    /// A budget of `percent` of the requests, at least `min_per_second` retries a second,
    /// counting the last `ttl_ms` milliseconds (unchecked: [`validate`](Self::validate)).
    pub fn new(percent: f64, min_per_second: u32, ttl_ms: u64) -> Self {
        BudgetConfig {
            percent,
            min_per_second,
            ttl_ms,
        }
    }

    /// Checks the ranges: `percent` within 0–100, `ttl_ms` at least [`TrafficBudget::SLOTS`](crate::TrafficBudget::SLOTS) ms.
    pub fn validate(&self) -> Result<(), FieldError> {
        if !(0.0..=100.0).contains(&self.percent) {
            return Err(FieldError::new(
                "percent",
                format!("{} is out of range; expected 0 to 100", self.percent),
            ));
        }
        if self.ttl_ms < SLOTS as u64 {
            return Err(FieldError::new(
                "ttl_ms",
                format!("{} is too short; expected at least {SLOTS}", self.ttl_ms),
            ));
        }
        Ok(())
    }
}
