//! The retry orchestrator (reference 001 "Retry Orchestration"): a default strategy, the
//! strategies exempt from the safety guard, and its controls (an optional retry budget, retry
//! throttle, breakers and hedging, one `Controls` value), around the one set of rules every
//! decision passes (`rules`): the always-retry path with the controlled backoff, the
//! strategy's answer, the safety guard, the throttle and the budget, and the deadline cap.
//! For an application that decides with one strategy in code, without a registry.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::breaker::NodeBreakers;
use crate::controls::{BudgetControl, Controls, PolicyControls};
use crate::decide_error::DecideError;
use crate::decider::Decider;
use crate::decision::{Deciding, Decision};
use crate::hedge::HedgingPolicy;
use crate::request::Request;
use crate::rules;
pub(crate) use crate::rules::Guard;
use crate::strategy::DecisionContext;
use crate::strategy::{BestEffort, RetryStrategy};
use crate::throttle::ScopedThrottle;
use crate::traffic_budget::TrafficBudget;

/// The retry orchestrator.
#[derive(Debug)]
pub struct Orchestrator {
    default_strategy: Arc<dyn RetryStrategy>,
    guard_exempt: HashSet<String>,
    controls: Arc<Controls>,
}

impl Default for Orchestrator {
    /// An orchestrator whose default strategy is [`BestEffort`].
    fn default() -> Self {
        Orchestrator::new(Arc::new(
            BestEffort::<crate::backoff::ExponentialBackoff>::default(),
        ))
    }
}

impl Orchestrator {
    /// An orchestrator using `default_strategy` for requests without their own.
    pub fn new(default_strategy: Arc<dyn RetryStrategy>) -> Self {
        Orchestrator {
            default_strategy,
            guard_exempt: HashSet::new(),
            controls: Arc::default(),
        }
    }

    /// Draws every retry it decides from `budget` (unless a decision's context names its
    /// own): see [`DecisionContext::with_budget`]. Report requests' ends
    /// ([`PolicyControls::report`]; the executor does) so that requests which
    /// never fail count too.
    pub fn with_budget(self, budget: Arc<TrafficBudget>) -> Self {
        self.with_control(|controls| controls.with_budget(BudgetControl::common(budget)))
    }

    /// Counts every failure it decides in `throttle` and lets a retry go only when the
    /// throttle allows one (unless a decision's context names its own): see
    /// [`DecisionContext::with_throttle`]. Report requests' ends
    /// ([`PolicyControls::report`]; the executor does) so that successes
    /// count.
    pub fn with_throttle(self, throttle: Arc<ScopedThrottle>) -> Self {
        self.with_control(|controls| controls.with_throttle(throttle))
    }

    /// Admits attempts through `breakers` and counts their outcomes there: an executor asks the
    /// node's breaker before each attempt (`Attempt::admit`) and counts how it
    /// ended.
    pub fn with_breakers(self, breakers: Arc<NodeBreakers>) -> Self {
        self.with_control(|controls| controls.with_breakers(breakers))
    }

    /// Sends copies of its requests while they are in flight as `policy` says (instead of its
    /// strategy's own hedging, if it has one), paid from its budget and throttle; only
    /// idempotent requests are ever hedged (see [`hedge`](crate::hedge)).
    pub fn with_hedging(self, policy: Arc<dyn HedgingPolicy>) -> Self {
        self.with_control(|controls| controls.with_hedging(policy))
    }

    /// Cuts each attempt after `timeout` (instead of its strategy's own attempt timeout, if
    /// it has one): an executor drops an attempt still running then and decides it as an
    /// `ATTEMPT_TIMEOUT` failure; the request's deadline still ends the request.
    pub fn with_attempt_timeout(self, timeout: Duration) -> Self {
        self.with_control(|controls| controls.with_attempt_timeout(timeout))
    }

    /// The throttle failures are counted in, if any.
    pub fn throttle(&self) -> Option<&ScopedThrottle> {
        self.controls.throttle().map(|throttle| &**throttle)
    }

    /// These controls, changed by `change`.
    fn with_control(mut self, change: impl FnOnce(Controls) -> Controls) -> Self {
        let controls = Arc::make_mut(&mut self.controls);
        *controls = change(std::mem::take(controls));
        self
    }

    /// The budget retries are drawn from, if any.
    pub fn budget(&self) -> Option<&TrafficBudget> {
        self.controls.common_budget()
    }

    /// Exempts the strategy named `name` from the safety guard: its retries of non-idempotent
    /// requests for reasons that do not allow them are dispatched. Use only for a strategy
    /// that knows (from application context) that such a retry cannot lose data.
    pub fn exempt_from_guard(mut self, name: impl Into<String>) -> Self {
        self.guard_exempt.insert(name.into());
        self
    }

    /// Decides what happens to `request`, whose failure `context` describes, with the strategy
    /// the context names for the request (reference 002: a per-request strategy overrides the
    /// global one) or else the default one. The clock is read once the strategy has answered,
    /// unless the context fixes the moment ([`DecisionContext::at`]). A strategy that answers
    /// at once is asked by this call (see [`Deciding`]).
    pub fn decide<'a>(
        &'a self,
        request: &'a mut Request,
        context: &DecisionContext<'a>,
    ) -> Deciding<'a> {
        let strategy = context.strategy().unwrap_or(&*self.default_strategy);
        let guard = self.guard_for(strategy);
        let told = context.lacks_fired_timeout().then(|| {
            let fired = Decider::controls(self, request).attempt_timeout(request);
            context.with_attempt_timeout(fired)
        });
        let context = told.as_ref().unwrap_or(context);
        if self.controls.is_empty() {
            return rules::apply(request, context, strategy, guard);
        }
        let context = (self.controls).charge(context, self.controls.common_budget());
        rules::apply(request, &context, strategy, guard)
    }

    /// Whether `strategy` is exempt from the safety guard. No name is hashed when no
    /// strategy is exempt (the common case).
    fn guard_for(&self, strategy: &dyn RetryStrategy) -> Guard {
        if !self.guard_exempt.is_empty() && self.guard_exempt.contains(strategy.name()) {
            Guard::Exempt
        } else {
            Guard::Enforced
        }
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

    /// Its controls, for every request (the hedging and report of its default strategy).
    fn controls(&self, _request: &Request) -> PolicyControls {
        let controls = (!self.controls.is_empty()).then(|| Arc::clone(&self.controls));
        PolicyControls::new(controls, Arc::clone(&self.default_strategy))
    }
}
