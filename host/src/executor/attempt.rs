//! One call of the operation: what it is told, and how it says the request went out.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::action::NodeChoice;
use crate::cassandra_types::ConsistencyLevel;

/// What one call of the operation is told, and its handle for reporting the dispatch.
#[derive(Debug, Clone)]
pub struct Attempt {
    number: u32,
    node: NodeChoice,
    consistency: Option<ConsistencyLevel>,
    deadline: Instant,
    dispatched_to: Arc<Mutex<Option<String>>>,
}

impl Attempt {
    pub(crate) fn new(
        number: u32,
        node: NodeChoice,
        consistency: Option<ConsistencyLevel>,
        deadline: Instant,
    ) -> Self {
        Attempt {
            number,
            node,
            consistency,
            deadline,
            dispatched_to: Arc::default(),
        }
    }

    /// 0 for the first call, then the retry attempts made so far.
    pub fn number(&self) -> u32 {
        self.number
    }

    /// Where to send it: [`NodeChoice::Same`] on the first call, then what the policy chose
    /// (reference 003: retry on the same node or the next one in the query plan).
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

    /// The time left until the deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Records that the request was written to `node` (host:port). Call it as soon as the
    /// request may have reached the server: from then on a non-idempotent request that fails
    /// in flight or runs into its deadline may have had an effect, and is not retried for
    /// reasons that do not allow it and times out as ambiguous.
    pub fn dispatched(&self, node: impl Into<String>) {
        *self.dispatched_to.lock().unwrap_or_else(|p| p.into_inner()) = Some(node.into());
    }

    /// The node recorded by [`dispatched`](Self::dispatched), taken.
    pub(crate) fn take_dispatched(&self) -> Option<String> {
        self.dispatched_to
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}
