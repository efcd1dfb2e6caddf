//! The breakers of one `[breakers.NAME]` table: one per node, made at the node's first
//! attempt, about `max_nodes` of them at most, in a store that evicts the nodes least in use
//! (`scope_store`), so a caller naming many nodes cannot grow the host's memory; a node
//! named by more than 256 bytes has no breaker and is never refused.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::{Admission, BreakerConfig, BreakerState, CircuitBreaker};
use crate::field_error::FieldError;
use crate::scope_store::ScopeStore;

/// An attempt was not sent: the breaker of its node is open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("circuit breaker open for {node}: the attempt was not sent")]
pub struct BreakerOpen {
    /// The node (the first one of the candidates, when every one was open).
    pub node: String,
}

/// The breakers of one `[breakers.NAME]` table: one per node, made at the node's first
/// attempt, about `max_nodes` of them at most (the nodes least in use evicted); a node named
/// by more than 256 bytes has no breaker and is never refused.
#[derive(Debug)]
pub struct NodeBreakers {
    config: BreakerConfig,
    nodes: ScopeStore<CircuitBreaker>,
    opened: AtomicU64,
}

impl NodeBreakers {
    /// The most nodes with a breaker when the configuration does not say.
    pub const DEFAULT_MAX_NODES: usize = 1024;

    /// Breakers as `config` says, for at most `max_nodes` nodes. A node's breaker keeps time
    /// from the moment of its first attempt, on the clock the caller passes (tokio's, a
    /// simulation's).
    pub fn new(config: BreakerConfig, max_nodes: usize) -> Result<Self, FieldError> {
        config.validate()?;
        Ok(NodeBreakers {
            config,
            nodes: ScopeStore::new(max_nodes, |_| 0),
            opened: AtomicU64::new(0),
        })
    }

    /// What it was made with: a new configuration keeps the breakers while these stay.
    pub fn made_with(&self) -> (BreakerConfig, usize) {
        (self.config, self.nodes.capacity())
    }

    /// How many times a breaker opened (a canary's failure included).
    pub fn opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    /// The breaker of `node`, made at `now` if it has none yet; `None` for a node named by
    /// more than 256 bytes.
    pub fn breaker(&self, node: &str, now: Instant) -> Option<Arc<CircuitBreaker>> {
        self.nodes
            .get_or_add("", node, || CircuitBreaker::new(self.config, now))
    }

    /// Whether an attempt to `node` may go at `now`.
    pub fn admit_at(&self, node: &str, now: Instant) -> Admission {
        match self.breaker(node, now) {
            Some(breaker) => breaker.admit_at(now),
            None => Admission::Admitted,
        }
    }

    /// The first of `candidates` (a query plan, from the node to try next) whose breaker lets
    /// an attempt go at `now`, with its admission; [`BreakerOpen`] naming the first candidate
    /// when every one is open, or `None` when there are none.
    pub fn first_admitted_at<'a, N: AsRef<str>>(
        &self,
        candidates: &'a [N],
        now: Instant,
    ) -> Option<Result<(&'a N, Admission), BreakerOpen>> {
        let first = candidates.first()?;
        Some(
            (candidates.iter())
                .map(|node| (node, self.admit_at(node.as_ref(), now)))
                .find(|(_, admission)| admission.allows())
                .ok_or_else(|| BreakerOpen {
                    node: first.as_ref().to_owned(),
                }),
        )
    }

    /// An attempt to `node`, admitted as `admission`, ended at `now`: `failed` if it failed in
    /// a way that says the node is unwell (see [`failure_counts`](super::failure_counts)).
    pub fn record_at(&self, node: &str, admission: Admission, failed: bool, now: Instant) {
        if let Some(breaker) = self.nodes.get("", node) {
            self.record_in(&breaker, node, admission, failed, now);
        }
    }

    /// As [`record_at`](Self::record_at), with `node`'s breaker in hand (from
    /// [`breaker`](Self::breaker), when the attempt was admitted): no lookup.
    pub fn record_in(
        &self,
        breaker: &CircuitBreaker,
        node: &str,
        admission: Admission,
        failed: bool,
        now: Instant,
    ) {
        if breaker.record_at(admission, failed, now) == Some(BreakerState::Open) {
            self.opened.fetch_add(1, Ordering::Relaxed);
            tracing::info!(node, "circuit breaker opened");
        }
    }

    /// The state of `node`'s breaker, if it has one.
    pub fn state(&self, node: &str) -> Option<BreakerState> {
        self.nodes.get("", node).map(|breaker| breaker.state())
    }

    /// Each node's breaker, by node.
    pub fn each(&self) -> Vec<(String, Arc<CircuitBreaker>)> {
        self.nodes.each()
    }
}

impl PartialEq for NodeBreakers {
    /// The same breakers: two tables with the same parameters count apart.
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn breakers(max_nodes: usize) -> NodeBreakers {
        NodeBreakers::new(BreakerConfig::default(), max_nodes).unwrap()
    }

    fn trip(breakers: &NodeBreakers, node: &str, now: Instant) {
        for _ in 0..20 {
            let admission = breakers.admit_at(node, now);
            breakers.record_at(node, admission, true, now);
        }
    }

    /// One node's failures open its breaker only; the next-node choice skips it.
    #[test]
    fn an_open_node_is_skipped_for_the_next() {
        let now = Instant::now();
        let b = breakers(16);
        trip(&b, "a:9042", now);
        assert_eq!(b.state("a:9042"), Some(BreakerState::Open));
        assert_eq!(b.opened(), 1);
        assert_eq!(b.admit_at("b:9042", now), Admission::Admitted);
        let plan = ["a:9042", "b:9042"];
        let (node, admission) = b.first_admitted_at(&plan, now).unwrap().unwrap();
        assert_eq!((*node, admission), ("b:9042", Admission::Admitted));
        trip(&b, "b:9042", now);
        assert_eq!(
            b.first_admitted_at(&plan, now).unwrap(),
            Err(BreakerOpen {
                node: "a:9042".into()
            })
        );
        let none: [&str; 0] = [];
        assert_eq!(b.first_admitted_at(&none, now), None);
        let later = now + Duration::from_secs(6);
        let (node, admission) = b.first_admitted_at(&plan, later).unwrap().unwrap();
        assert_eq!((*node, admission), ("a:9042", Admission::Canary));
    }

    /// docs/decisions.md "Throttle scopes": past `max_nodes` a new node still gets a breaker
    /// of its own (the nodes least in use evicted), and the breakers held stay about
    /// `max_nodes`.
    #[test]
    fn nodes_past_the_limit_get_a_breaker_and_memory_stays_bounded() {
        let now = Instant::now();
        let b = breakers(64);
        for n in 0..1_000 {
            let _ = b.admit_at(&format!("junk{n}"), now);
        }
        trip(&b, "a", now);
        assert_eq!(b.admit_at("a", now), Admission::Refused);
        assert!(b.each().len() <= 64 + 64 / 10, "{}", b.each().len());
    }
}
