//! What decides for a retry loop: the orchestrator alone, or a policy registry.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use crate::breaker::NodeBreakers;
use crate::decide_error::DecideError;
use crate::decision::Decision;
use crate::hedge::Hedging;
use crate::orchestrator::Orchestrator;
use crate::request::Request;
use crate::request_outcome::Outcome;
use crate::strategy::DecisionContext;

/// Decides what happens to a failed request: [`Orchestrator`] (its default strategy) or
/// `PolicyRegistry` (the request's policy by name, profile or route).
pub trait Decider: Send + Sync {
    /// The decision for `request`, whose failure `context` describes. A retry loop fixes the
    /// context's moment (tokio's clock in the executor, so that paused time in tests moves
    /// the deadline too; the virtual clock in `rebound simulate`).
    fn decide<'a>(
        &'a self,
        request: &'a mut Request,
        context: &'a DecisionContext<'a>,
    ) -> impl Future<Output = Result<Decision, DecideError>> + Send + 'a;

    /// `request` ended as `outcome` at `now` (every request, whether it failed or not), so that
    /// retry budgets follow the traffic. Nothing by default.
    fn report(&self, request: &Request, outcome: Outcome, now: Instant) {
        let _ = (request, outcome, now);
    }

    /// The circuit breakers `request`'s attempts are admitted by and counted in, if any: the
    /// executor asks once per request. None by default.
    fn breakers(&self, request: &Request) -> Option<Arc<NodeBreakers>> {
        let _ = request;
        None
    }

    /// How `request` is hedged at `now`, if its strategy hedges: the policy, with the budget
    /// and throttle that pay for its copies. The executor asks once per request. None by
    /// default.
    fn hedging(&self, request: &Request, now: Instant) -> Option<Hedging> {
        let _ = (request, now);
        None
    }
}

impl Decider for Orchestrator {
    async fn decide(
        &self,
        request: &mut Request,
        context: &DecisionContext<'_>,
    ) -> Result<Decision, DecideError> {
        Ok(Orchestrator::decide(self, request, context).await)
    }

    fn report(&self, request: &Request, outcome: Outcome, now: Instant) {
        (self.controls()).report(self.strategy(), request, outcome, now);
    }

    fn breakers(&self, _request: &Request) -> Option<Arc<NodeBreakers>> {
        self.breakers().cloned()
    }

    fn hedging(&self, request: &Request, now: Instant) -> Option<Hedging> {
        Orchestrator::hedging(self, request, now)
    }
}

#[cfg(feature = "registry")]
impl Decider for crate::registry::PolicyRegistry {
    async fn decide(
        &self,
        request: &mut Request,
        context: &DecisionContext<'_>,
    ) -> Result<Decision, DecideError> {
        let decided = crate::registry::PolicyRegistry::decide(self, request, context).await?;
        Ok(decided.decision)
    }

    fn report(&self, request: &Request, outcome: Outcome, now: Instant) {
        crate::registry::PolicyRegistry::report(self, request, outcome, now);
    }

    fn breakers(&self, request: &Request) -> Option<Arc<NodeBreakers>> {
        crate::registry::PolicyRegistry::breakers(self, request)
    }

    fn hedging(&self, request: &Request, now: Instant) -> Option<Hedging> {
        crate::registry::PolicyRegistry::hedging(self, request, now)
    }
}

impl<D: Decider> Decider for Arc<D> {
    fn decide<'a>(
        &'a self,
        request: &'a mut Request,
        context: &'a DecisionContext<'a>,
    ) -> impl Future<Output = Result<Decision, DecideError>> + Send + 'a {
        (**self).decide(request, context)
    }

    fn report(&self, request: &Request, outcome: Outcome, now: Instant) {
        (**self).report(request, outcome, now);
    }

    fn breakers(&self, request: &Request) -> Option<Arc<NodeBreakers>> {
        (**self).breakers(request)
    }

    fn hedging(&self, request: &Request, now: Instant) -> Option<Hedging> {
        (**self).hedging(request, now)
    }
}
