//! Hedged requests: while a request is in flight, another copy of it may be sent, and the
//! first good answer wins (gRFC A6 "Hedging Policy"; the Cassandra drivers' speculative
//! executions). A [`HedgingPolicy`] says when the next copy goes and where; the host decides
//! what no policy can override ([`Hedging`]):
//!
//! - only an idempotent request (or a read-only one) ever gets a second copy;
//! - every copy after the first is paid for: the throttle must allow a retry and the budget
//!   must grant one, else no more copies go;
//! - at most [`MAX_COPIES`] copies, the first included;
//! - a pushback that says stop ends the sending of copies (those in flight go on);
//! - the first success wins and the others are cancelled; a fatal failure ends them all;
//! - the request's deadline bounds every copy.
//!
//! [`HedgeSchedule`] is the I/O-free state of one request's copies, which the executor drives
//! on tokio's clock. When every copy has failed and no more are due, the last failure is
//! decided as any failure is (strategy, guard, throttle, budget, deadline): gRPC's hedged
//! methods have no retry policy, so it ends there, as A6 says.

mod grpc;
mod quantile;
mod schedule;
mod speculative;

use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use grpc::GrpcHedging;
pub use quantile::{
    latency_key, QuantileDelay, QuantileDelayError, QuantileSpeculativeExecution, NO_AUTHORITY,
};
pub use schedule::{CopyEnd, HedgeSchedule};
pub use speculative::{ConstantSpeculativeExecution, SpeculativeConfigError};

use crate::action::NodeChoice;
use crate::latency::LatencySketches;
use crate::pushback::Pushback;
use crate::reason::RetryReason;
use crate::request::Request;
use crate::throttle::{RetryThrottle, ScopedThrottle};
use crate::traffic_budget::TrafficBudget;

/// The most copies of one request, the first included (gRFC A6 "Limits on Retries and Hedges":
/// 5 unless the client changes it).
pub const MAX_COPIES: u32 = 5;

/// Why a hedging policy is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// A copy was just sent (the first one included).
    AfterCopy,
    /// A copy just failed, in a way that does not end the request.
    AfterFailure,
}

/// A request in flight, as a hedging policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct InFlight<'a> {
    /// Why the policy is asked now.
    pub asked: Asked,
    /// Copies sent so far, the first included.
    pub copies: u32,
    /// Copies sent and not answered yet.
    pub outstanding: u32,
    /// The time since the first copy was sent.
    pub since_first: Duration,
    /// The time since the last copy was sent.
    pub since_last: Duration,
    /// Why each copy that failed so far failed, in order.
    pub failures: &'a [RetryReason],
    /// The last failure's pushback, if it had one.
    pub pushback: Option<Pushback>,
    /// The latencies the request's policy records, if it records them (a policy deciding the
    /// hedge may read a percentile of its authority's).
    pub latencies: Option<&'a Arc<LatencySketches>>,
}

impl InFlight<'static> {
    /// A request with `copies` out and none answered, the last sent `since_last_ms` ago, the
    /// policy asked as `asked` (for tests of hedging policies).
    #[cfg(test)]
    pub(crate) fn with(asked: Asked, copies: u32, since_last_ms: u64) -> Self {
        InFlight {
            asked,
            copies,
            outstanding: copies,
            since_first: Duration::ZERO,
            since_last: Duration::from_millis(since_last_ms),
            failures: &[],
            pushback: None,
            latencies: None,
        }
    }
}

/// When the next copy goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HedgeAction {
    /// No copy now; the policy is asked again after the next failure.
    Wait,
    /// The next copy goes `after` this long from now (zero: at once), to `node`.
    SendAfter {
        /// The wait before the copy.
        after: Duration,
        /// Where: the same node, or the next one of the query plan.
        node: NodeChoice,
    },
}

/// A strategy that sends copies of a request in flight (see the [module docs](self)).
pub trait HedgingPolicy: Debug + Send + Sync {
    /// Its name, for logs.
    fn name(&self) -> &str;

    /// When the next copy of `request` goes, asked after every copy sent and every failure
    /// that does not end the request. The host sends it only if its own rules allow.
    fn next_copy(&self, request: &Request, flight: &InFlight<'_>) -> HedgeAction;

    /// Whether a copy's failure for `reason` ends the request at once, cancelling the other
    /// copies (gRPC: a status not among `nonFatalStatusCodes`).
    fn is_fatal(&self, request: &Request, reason: &RetryReason) -> bool;

    /// The throttle the policy brings itself (the `grpc` built-in's `retryThrottling`, kept per
    /// server name), if any: asked before every copy after the first and told of the copies'
    /// failures that do not end the request, as gRFC A6 "Throttling Retry Attempts and Hedged
    /// RPCs" says, unless the request's policy names a throttle of its own. None by default.
    fn throttle(&self) -> Option<&ScopedThrottle> {
        None
    }
}

/// A hedging policy with what the host pays its copies from: the request's retry budget and
/// throttle, if it has them.
#[derive(Debug, Clone)]
pub struct Hedging {
    policy: Arc<dyn HedgingPolicy>,
    budget: Option<Arc<TrafficBudget>>,
    throttle: Option<Arc<RetryThrottle>>,
    latencies: Option<Arc<LatencySketches>>,
}

impl Hedging {
    /// `policy`'s copies, paid for by nothing but the host's other rules.
    pub fn new(policy: Arc<dyn HedgingPolicy>) -> Self {
        Hedging {
            policy,
            budget: None,
            throttle: None,
            latencies: None,
        }
    }

    /// The policy reads a percentile of the latencies in `latencies`, if given (the request's
    /// policy records them).
    pub fn with_latencies(mut self, latencies: Option<Arc<LatencySketches>>) -> Self {
        self.latencies = latencies;
        self
    }

    /// The latencies the policy may read, if its request's policy records them.
    pub fn latencies(&self) -> Option<&Arc<LatencySketches>> {
        self.latencies.as_ref()
    }

    /// Each copy after the first withdraws a retry from `budget`; none goes once it refuses.
    pub fn with_budget(mut self, budget: Option<Arc<TrafficBudget>>) -> Self {
        self.budget = budget;
        self
    }

    /// Each copy after the first goes only while `throttle` allows a retry (gRFC A6: "hedged
    /// RPCs will only be sent if `token_count` is greater than the threshold"), and each copy's
    /// failure counts in it.
    pub fn with_throttle(mut self, throttle: Option<Arc<RetryThrottle>>) -> Self {
        self.throttle = throttle;
        self
    }

    /// The policy.
    pub fn policy(&self) -> &dyn HedgingPolicy {
        &*self.policy
    }

    /// Whether `request` may be hedged at all: only an idempotent (or read-only) request is.
    pub fn may_hedge(request: &Request) -> bool {
        request.is_idempotent()
    }

    /// Whether the host pays for one more copy at `now`: the throttle allows a retry and the
    /// budget grants one (withdrawn here). Every path that sends copies asks this before each
    /// copy after the first.
    pub fn pay_for_copy(&self, now: Instant) -> bool {
        if let Some(throttle) = &self.throttle {
            if !throttle.allows_retry_at(now) {
                return false;
            }
        }
        match &self.budget {
            Some(budget) => budget.try_withdraw_at(now),
            None => true,
        }
    }

    /// The throttle copies' failures count in, if any.
    pub fn throttle(&self) -> Option<&RetryThrottle> {
        self.throttle.as_deref()
    }
}
