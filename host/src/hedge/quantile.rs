//! Speculative execution whose delay is a quantile of the latencies observed for the request's
//! authority (`speculative_execution = { percentile, min_delay_ms, max_delay_ms }`):
//! a copy goes once the attempt has run longer than, say, 95 % of that node's recent attempts
//! (failsafe-go's and Envoy's latency-based hedging), bounded by a floor and a ceiling. Until
//! the authority has been seen answering often enough to have a quantile, the ceiling is the
//! delay: an unknown one is hedged late rather than early.

use std::sync::Arc;
use std::time::Duration;

use super::{HedgeAction, HedgingPolicy, InFlight, SpeculativeConfigError, MAX_COPIES};
use crate::action::NodeChoice;
use crate::latency::LatencySketches;
use crate::reason::RetryReason;
use crate::request::Request;

/// A delay taken from a latency quantile, between a floor and a ceiling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantileDelay {
    percentile: f64,
    min_delay: Duration,
    max_delay: Duration,
}

/// A quantile delay that was refused, saying which field and what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum QuantileDelayError {
    /// The percentile is not in (0, 100).
    #[error("percentile: {0} is out of range; expected a number above 0 and below 100")]
    Percentile(f64),
    /// The floor is above the ceiling.
    #[error("min_delay_ms: {min} ms is above max_delay_ms, {max} ms")]
    MinAboveMax {
        /// The floor, in ms.
        min: u128,
        /// The ceiling, in ms.
        max: u128,
    },
}

impl QuantileDelay {
    /// The `percentile` (in (0, 100)) of the observed latencies, at least `min_delay` and at
    /// most `max_delay`.
    pub fn new(
        percentile: f64,
        min_delay: Duration,
        max_delay: Duration,
    ) -> Result<Self, QuantileDelayError> {
        if !(percentile > 0.0 && percentile < 100.0) {
            return Err(QuantileDelayError::Percentile(percentile));
        }
        if min_delay > max_delay {
            return Err(QuantileDelayError::MinAboveMax {
                min: min_delay.as_millis(),
                max: max_delay.as_millis(),
            });
        }
        Ok(QuantileDelay {
            percentile,
            min_delay,
            max_delay,
        })
    }

    /// The percentile.
    pub fn percentile(&self) -> f64 {
        self.percentile
    }

    /// The floor.
    pub fn min_delay(&self) -> Duration {
        self.min_delay
    }

    /// The ceiling: also the delay while the key has no quantile yet.
    pub fn max_delay(&self) -> Duration {
        self.max_delay
    }

    /// The delay for a request to `key`, from `sketches`.
    pub fn delay(&self, sketches: &LatencySketches, key: &str) -> Duration {
        (sketches.quantile(key, self.percentile))
            .map_or(self.max_delay, |q| q.clamp(self.min_delay, self.max_delay))
    }
}

/// Which latencies a request's attempts are recorded under and its hedges read: its authority
/// (an HTTP host and port, a gRPC server name), or [`NO_AUTHORITY`] for a request that names
/// none (a Couchbase or Cassandra request, a gRPC call on a channel whose URIs carry no
/// authority), which all share one sketch. Not the node an attempt was written to: a request's
/// first hedge is planned before any node is known.
pub fn latency_key(request: &Request) -> &str {
    request.authority().unwrap_or(NO_AUTHORITY)
}

/// The key of the requests that name no authority.
pub const NO_AUTHORITY: &str = "";

/// Speculative execution after a quantile delay: a new execution on the next node each time
/// the last one has run for the delay, at most `max_executions`, the first included.
#[derive(Debug, Clone)]
pub struct QuantileSpeculativeExecution {
    delay: QuantileDelay,
    max_executions: u32,
    sketches: Arc<LatencySketches>,
}

impl QuantileSpeculativeExecution {
    /// Executions `delay` apart as `sketches` observe it, at most `max_executions` (1 to
    /// [`MAX_COPIES`], the first included).
    pub fn new(
        delay: QuantileDelay,
        max_executions: u32,
        sketches: Arc<LatencySketches>,
    ) -> Result<Self, SpeculativeConfigError> {
        if !(1..=MAX_COPIES).contains(&max_executions) {
            return Err(SpeculativeConfigError(max_executions));
        }
        Ok(QuantileSpeculativeExecution {
            delay,
            max_executions,
            sketches,
        })
    }
}

impl HedgingPolicy for QuantileSpeculativeExecution {
    fn name(&self) -> &str {
        "quantile-speculative-execution"
    }

    fn next_copy(&self, request: &Request, flight: &InFlight<'_>) -> HedgeAction {
        if flight.copies >= self.max_executions {
            return HedgeAction::Wait;
        }
        let delay = self.delay.delay(&self.sketches, latency_key(request));
        HedgeAction::SendAfter {
            after: delay.saturating_sub(flight.since_last),
            node: NodeChoice::Next,
        }
    }

    fn is_fatal(&self, _request: &Request, _reason: &RetryReason) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hedge::Asked;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    /// docs/decisions.md "Hedge delays from observed latency": the delay is the key's quantile
    /// within [min, max], the ceiling while the key has no quantile, and a slow node's delay is
    /// its own, not a fast one's.
    #[test]
    fn the_delay_is_the_key_s_quantile_between_floor_and_ceiling() {
        let sketches = Arc::new(LatencySketches::new(16));
        for i in 0..100u64 {
            sketches.record("fast:1", MS(10 + i % 10));
            sketches.record("slow:1", MS(200 + i % 10));
        }
        let delay = QuantileDelay::new(95.0, MS(5), MS(150)).unwrap();
        let fast = delay.delay(&sketches, "fast:1");
        assert!(fast >= MS(19) && fast <= MS(21), "{fast:?}");
        assert_eq!(delay.delay(&sketches, "slow:1"), MS(150), "capped");
        assert_eq!(delay.delay(&sketches, "new:1"), MS(150), "unknown");
        assert_eq!(delay.delay(&sketches, NO_AUTHORITY), MS(150));
        let floor = QuantileDelay::new(50.0, MS(30), MS(150)).unwrap();
        assert_eq!(floor.delay(&sketches, "fast:1"), MS(30));

        let policy = QuantileSpeculativeExecution::new(delay, 2, Arc::clone(&sketches)).unwrap();
        let request = Request::new(1, crate::RequestType::Http, MS(1000))
            .unwrap()
            .with_authority("fast:1");
        let HedgeAction::SendAfter { after, node } =
            policy.next_copy(&request, &InFlight::with(Asked::AfterCopy, 1, 5))
        else {
            panic!("a copy goes");
        };
        assert_eq!(node, NodeChoice::Next);
        assert_eq!(after, fast - MS(5));
        assert_eq!(
            policy.next_copy(&request, &InFlight::with(Asked::AfterCopy, 2, 0)),
            HedgeAction::Wait
        );
    }

    /// Bad input is refused naming the field: a percentile outside (0, 100), a floor above the
    /// ceiling, more executions than the host allows.
    #[test]
    fn bad_quantile_delays_are_refused() {
        for bad in [0.0, 100.0, -1.0, 150.0, f64::NAN] {
            let error = QuantileDelay::new(bad, MS(1), MS(2)).unwrap_err();
            assert!(error.to_string().starts_with("percentile:"), "{error}");
        }
        let error = QuantileDelay::new(95.0, MS(30), MS(20)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "min_delay_ms: 30 ms is above max_delay_ms, 20 ms"
        );
        let delay = QuantileDelay::new(95.0, MS(1), MS(2)).unwrap();
        let sketches = Arc::new(LatencySketches::new(1));
        assert!(QuantileSpeculativeExecution::new(delay, 6, sketches).is_err());
    }
}
