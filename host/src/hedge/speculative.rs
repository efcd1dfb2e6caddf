//! The Cassandra drivers' constant speculative execution (`ConstantSpeculativeExecutionPolicy`,
//! DataStax Java driver 4: `advanced.speculative-execution-policy` with `max-executions` and
//! `delay`): a new execution of an idempotent statement goes to the next node of the query
//! plan every `delay` while no answer came, up to `max_executions` executions, the first
//! included. A failed execution does not end the others (each execution's error goes to the
//! retry policy in the driver; here the request's last failure does, once no execution is left).

use std::time::Duration;

use super::{HedgeAction, HedgingPolicy, InFlight, MAX_COPIES};
use crate::action::NodeChoice;
use crate::reason::RetryReason;
use crate::request::Request;

/// Constant speculative execution: a new execution every `delay`, at most `max_executions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConstantSpeculativeExecution {
    delay: Duration,
    max_executions: u32,
}

/// A speculative execution configuration that was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "max_executions: {0} is out of range; expected 1 to {MAX_COPIES} (1: no speculative execution)"
)]
pub struct SpeculativeConfigError(pub u32);

impl ConstantSpeculativeExecution {
    /// Executions `delay` apart, at most `max_executions` (1 to [`MAX_COPIES`], the first
    /// execution included).
    pub fn new(delay: Duration, max_executions: u32) -> Result<Self, SpeculativeConfigError> {
        if !(1..=MAX_COPIES).contains(&max_executions) {
            return Err(SpeculativeConfigError(max_executions));
        }
        Ok(ConstantSpeculativeExecution {
            delay,
            max_executions,
        })
    }
}

impl ConstantSpeculativeExecution {
    /// The wait between one execution and the next.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// The most executions, the first included.
    pub fn max_executions(&self) -> u32 {
        self.max_executions
    }
}

impl HedgingPolicy for ConstantSpeculativeExecution {
    fn name(&self) -> &str {
        "speculative-execution"
    }

    fn next_copy(&self, _request: &Request, flight: &InFlight<'_>) -> HedgeAction {
        if flight.copies >= self.max_executions {
            return HedgeAction::Wait;
        }
        // The schedule is the timer's alone (`flight.asked` aside): a failed execution does
        // not bring the next one forward.
        HedgeAction::SendAfter {
            after: self.delay.saturating_sub(flight.since_last),
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

    /// docs/decisions.md "Speculative execution": a new execution on the next node every
    /// `delay` from the last one, up to `max_executions`, the first included.
    #[test]
    fn executions_go_every_delay_to_the_next_node() {
        let policy = ConstantSpeculativeExecution::new(Duration::from_millis(100), 3).unwrap();
        let request = Request::new(1, crate::RequestType::Get, Duration::from_secs(1)).unwrap();
        let flight = InFlight::with;
        assert_eq!(
            policy.next_copy(&request, &flight(Asked::AfterCopy, 1, 0)),
            HedgeAction::SendAfter {
                after: Duration::from_millis(100),
                node: NodeChoice::Next
            }
        );
        assert_eq!(
            policy.next_copy(&request, &flight(Asked::AfterFailure, 2, 30)),
            HedgeAction::SendAfter {
                after: Duration::from_millis(70),
                node: NodeChoice::Next
            }
        );
        assert_eq!(
            policy.next_copy(&request, &flight(Asked::AfterCopy, 3, 0)),
            HedgeAction::Wait
        );
        assert_eq!(
            ConstantSpeculativeExecution::new(Duration::ZERO, 6),
            Err(SpeculativeConfigError(6))
        );
        assert!(ConstantSpeculativeExecution::new(Duration::ZERO, 0).is_err());
    }
}
