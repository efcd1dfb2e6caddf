//! How a request ended, reported back to the host so that retry budgets
//! follow the whole traffic, the requests that never failed included: the executor and the
//! tower layer report every request's end, `serve` takes reports over HTTP, `eval` as lines.

use std::time::Instant;

use crate::request::Request;
use crate::throttle::ScopedThrottle;
use crate::traffic_budget::TrafficBudget;

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// It succeeded after `attempts` attempts (1: the first attempt, no retry).
    Succeeded {
        /// Attempts made, the first one included.
        attempts: u32,
    },
    /// It ended with an error after `attempts` attempts.
    Failed {
        /// Attempts made, the first one included.
        attempts: u32,
    },
    /// Its deadline passed after `attempts` attempts.
    TimedOut {
        /// Attempts made, the first one included.
        attempts: u32,
    },
}

impl Outcome {
    /// Records this outcome in `budget` at `now`: a request deposits once, at its first
    /// failure's decision, or here when it succeeded at its first attempt and so was never
    /// decided. Atomic adds only: no lock, nothing the deciding path waits for.
    pub fn record_in(self, budget: &TrafficBudget, now: Instant) {
        if self == (Outcome::Succeeded { attempts: 1 }) {
            budget.deposit_at(now);
        }
    }

    /// Records this outcome in `request`'s scope of `throttle` at `now`: a success gives back
    /// (its failed attempts were counted at their decisions, as was the last one of a request
    /// that failed).
    pub fn record_in_throttle(self, throttle: &ScopedThrottle, request: &Request, now: Instant) {
        if matches!(self, Outcome::Succeeded { .. }) {
            throttle.for_request(request, now).succeeded_at(now);
        }
    }
}
