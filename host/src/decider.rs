//! What decides for a retry loop: the orchestrator alone, or a policy registry.

use std::future::Future;
use std::sync::Arc;

use crate::controls::PolicyControls;
use crate::decide_error::DecideError;
use crate::decision::Decision;
use crate::request::Request;
use crate::strategy::DecisionContext;

/// Decides what happens to a failed request: [`Orchestrator`](crate::Orchestrator) (its
/// default strategy) or `PolicyRegistry` (the request's policy by name, profile or route).
pub trait Decider: Send + Sync {
    /// The decision for `request`, whose failure `context` describes. A retry loop fixes the
    /// context's moment (tokio's clock in the executor, so that paused time in tests moves
    /// the deadline too; the virtual clock in `rebound simulate`).
    fn decide<'a>(
        &'a self,
        request: &'a mut Request,
        context: &'a DecisionContext<'a>,
    ) -> impl Future<Output = Result<Decision, DecideError>> + Send + 'a;

    /// What acts on `request` besides the decisions on its failures: the breakers, hedging,
    /// budget and throttle of the policy that decides for it ([`PolicyControls`]). A retry
    /// loop asks once per request and reports the request's end to the answer, so that retry
    /// budgets follow the traffic. None by default.
    fn controls(&self, request: &Request) -> PolicyControls {
        let _ = request;
        PolicyControls::default()
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

    fn controls(&self, request: &Request) -> PolicyControls {
        (**self).controls(request)
    }
}
