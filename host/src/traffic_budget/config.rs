//! A budget's parameters as `[budgets.NAME]` writes them, and the ranges a budget can be built
//! with, checked before one is.

use serde::Deserialize;

use super::SLOTS;

/// A budget's parameters, as in `[budgets.NAME]`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
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

/// A budget configuration that was refused: the field and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct BudgetConfigError {
    /// `percent`, `min_per_second` or `ttl_ms`.
    pub field: &'static str,
    /// What was expected.
    pub message: String,
}

impl BudgetConfig {
    /// Checks the ranges: `percent` within 0–100, `ttl_ms` at least [`TrafficBudget::SLOTS`](crate::TrafficBudget::SLOTS) ms.
    pub fn validate(&self) -> Result<(), BudgetConfigError> {
        if !(0.0..=100.0).contains(&self.percent) {
            return Err(BudgetConfigError {
                field: "percent",
                message: format!("{} is out of range; expected 0 to 100", self.percent),
            });
        }
        if self.ttl_ms < SLOTS as u64 {
            return Err(BudgetConfigError {
                field: "ttl_ms",
                message: format!("{} is too short; expected at least {SLOTS}", self.ttl_ms),
            });
        }
        Ok(())
    }
}
