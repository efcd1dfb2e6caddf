//! One call of the operation: what it is told, how it asks the node's circuit breaker, and how
//! it says the request went out.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::action::NodeChoice;
use crate::breaker::{Admission, BreakerOpen, CircuitBreaker, NodeBreakers};
use crate::cassandra_types::ConsistencyLevel;

/// What one call of the operation is told, and its handle for reporting the dispatch.
#[derive(Debug, Clone)]
pub struct Attempt {
    number: u32,
    copy: u32,
    node: NodeChoice,
    consistency: Option<ConsistencyLevel>,
    deadline: Instant,
    cut_at: Instant,
    /// When the call started, for the latency of its answer.
    started: Instant,
    breakers: Option<Arc<NodeBreakers>>,
    nodes: Arc<Mutex<AttemptNodes>>,
}

/// Where the call said it went.
#[derive(Debug, Default)]
pub(crate) struct AttemptNodes {
    /// The node written to.
    pub dispatched_to: Option<String>,
    /// The node the breakers admitted, its breaker (none past `max_nodes`), and how.
    pub admitted: Option<Admitted>,
}

/// A node an attempt was admitted to.
#[derive(Debug)]
pub(crate) struct Admitted {
    pub node: String,
    pub breaker: Option<Arc<CircuitBreaker>>,
    pub admission: Admission,
}

impl Attempt {
    /// Attempt `number`'s copy `copy`, cut at `cut_at` (its attempt timeout, at the latest
    /// the request's `deadline`).
    pub(crate) fn new(
        number: u32,
        copy: u32,
        node: NodeChoice,
        consistency: Option<ConsistencyLevel>,
        (deadline, cut_at): (Instant, Instant),
        breakers: Option<Arc<NodeBreakers>>,
    ) -> Self {
        Attempt {
            number,
            copy,
            node,
            consistency,
            deadline,
            cut_at,
            started: Instant::now(),
            breakers,
            nodes: Arc::default(),
        }
    }

    /// How long the call has run, from when it was made.
    pub(crate) fn running_for(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// 0 for the first call, then the retry attempts made so far.
    pub fn number(&self) -> u32 {
        self.number
    }

    /// 0 for the attempt itself, then 1, 2, … for the copies a hedging policy sent while it
    /// was in flight (docs/hedging.md).
    pub fn copy(&self) -> u32 {
        self.copy
    }

    /// Where to send it: [`NodeChoice::Same`] on the first call, then what the policy chose
    /// (reference 003: retry on the same node or the next one in the query plan); for a copy,
    /// what the hedging policy chose.
    pub fn node(&self) -> NodeChoice {
        self.node
    }

    /// The consistency level to use, if the policy changed it (consistency downgrade).
    pub fn consistency(&self) -> Option<ConsistencyLevel> {
        self.consistency
    }

    /// The request's deadline; the executor drops the call when it passes.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// When the executor drops this call: its attempt timeout (the policy's or its route's
    /// `attempt_timeout_ms`) counted from when it started, or the request's deadline if that
    /// comes first or there is none. A driver that takes a per-request timeout can be given
    /// the time left until then.
    pub fn cut_at(&self) -> Instant {
        self.cut_at
    }

    /// The time left until the deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, AttemptNodes> {
        self.nodes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks the circuit breaker of `node` (host:port) before sending there: `Err` when it is
    /// open, and the call should then fail with that error (`?` turns it into a
    /// `CIRCUIT_BREAKER_OPEN` failure, a reason that allows a retry of any request since
    /// nothing was sent). Once admitted, the attempt's outcome is counted in `node`'s breaker.
    /// Always `Ok` when the executor's decider keeps no breakers.
    pub fn admit(&self, node: impl Into<String>) -> Result<(), BreakerOpen> {
        let node = node.into();
        let now = Instant::now().into_std();
        let breaker = (self.breakers.as_ref()).and_then(|breakers| breakers.breaker(&node, now));
        let admission = match &breaker {
            Some(breaker) => breaker.admit_at(now),
            None => Admission::Admitted,
        };
        if !admission.allows() {
            return Err(BreakerOpen { node });
        }
        self.lock().admitted = Some(Admitted {
            node,
            breaker,
            admission,
        });
        Ok(())
    }

    /// The first of `candidates` (the query plan from the node to try next) whose circuit
    /// breaker lets the attempt go, admitted as by [`admit`](Self::admit): a retry on the next
    /// node skips the open ones. `Err` naming the first candidate when every one is open;
    /// `None` when there are no candidates.
    pub fn first_admitted<'a, N: AsRef<str>>(
        &self,
        candidates: &'a [N],
    ) -> Option<Result<&'a N, BreakerOpen>> {
        let first = candidates.first()?;
        Some(
            (candidates.iter())
                .find(|node| self.admit(node.as_ref()).is_ok())
                .ok_or_else(|| BreakerOpen {
                    node: first.as_ref().to_owned(),
                }),
        )
    }

    /// Records that the request was written to `node` (host:port). Call it as soon as the
    /// request may have reached the server: from then on a non-idempotent request that fails
    /// in flight or runs into its deadline may have had an effect, and is not retried for
    /// reasons that do not allow it and times out as ambiguous.
    pub fn dispatched(&self, node: impl Into<String>) {
        self.lock().dispatched_to = Some(node.into());
    }

    /// Where the call said it went, taken.
    pub(crate) fn take_nodes(&self) -> AttemptNodes {
        std::mem::take(&mut *self.lock())
    }
}
