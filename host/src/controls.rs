//! A policy's controls as one value. Besides its strategy, what acts on a policy's decisions
//! (the retry budget it draws from, the throttle it counts failures in, the breakers that admit
//! its attempts, the hedging that sends copies of its requests) is resolved once: when an
//! [`Orchestrator`](crate::Orchestrator) is built, or when the registry builds its table for a
//! configuration. Every caller (the rules, the executor, the adapters, outcome reports) asks
//! this value, so a new control is a field here and one line where controls are assembled,
//! never a parallel field threaded through each of them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::breaker::NodeBreakers;
use crate::hedge::{latency_key, ConstantSpeculativeExecution, Hedging, HedgingPolicy, MAX_COPIES};
use crate::latency::LatencySketches;
use crate::request::Request;
use crate::request_outcome::Outcome;
use crate::strategy::DecisionContext;
use crate::strategy::RetryStrategy;
use crate::throttle::ScopedThrottle;
use crate::traffic_budget::TrafficBudget;

/// What acts on one request besides the decisions on its failures: the breakers that admit its
/// attempts, the hedging that sends copies of it, the timeout that cuts each attempt, and the
/// budget, throttle and strategy its end is reported to. A retry loop asks its [`Decider`](crate::Decider) once per request
/// ([`Decider::controls`](crate::Decider::controls)) and keeps the answer for the request's
/// life, so a control added to a policy reaches every loop without a new question. Empty by
/// default: no breakers, no hedging, no attempt timeout, and a report that counts nowhere.
#[derive(Debug, Clone, Default)]
pub struct PolicyControls {
    controls: Option<Arc<Controls>>,
    strategy: Option<Arc<dyn RetryStrategy>>,
    /// The attempt timeout of the route the request matched, over its policy's.
    route_attempt_timeout: Option<Duration>,
}

impl PolicyControls {
    /// The controls of a request decided by `strategy` under `controls` (none: no control).
    pub(crate) fn new(controls: Option<Arc<Controls>>, strategy: Arc<dyn RetryStrategy>) -> Self {
        PolicyControls {
            controls,
            strategy: Some(strategy),
            route_attempt_timeout: None,
        }
    }

    /// These controls, cutting each attempt after `timeout` (a route's `attempt_timeout_ms`)
    /// whatever the policy says.
    #[cfg(feature = "registry")]
    pub(crate) fn with_route_attempt_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.route_attempt_timeout = timeout;
        self
    }

    /// The controls themselves; no control when there are none.
    fn controls(&self) -> &Controls {
        static NO_CONTROLS: Controls = Controls::none();
        self.controls.as_deref().unwrap_or(&NO_CONTROLS)
    }

    /// The circuit breakers the request's attempts are admitted by and counted in, if any.
    pub fn breakers(&self) -> Option<&Arc<NodeBreakers>> {
        self.controls().breakers()
    }

    /// How `request` is hedged at `now`, if its policy hedges: the policy's hedging (its
    /// `speculative_execution`, else its strategy's own), with the budget and throttle that pay
    /// for its copies.
    pub fn hedging(&self, request: &Request, now: Instant) -> Option<Hedging> {
        let strategy = self.strategy.as_deref()?;
        if let Some(timeout) = self.hedged_attempt_timeout(request) {
            let every = ConstantSpeculativeExecution::new(timeout, MAX_COPIES)
                .expect("MAX_COPIES is within the copies allowed");
            return Some(self.controls().paid(Arc::new(every), request, now));
        }
        self.controls().hedging(strategy, request, now)
    }

    /// The attempt timeout of `request` when its policy hedges on it
    /// (`hedge_on_attempt_timeout`) and the request may be hedged: a copy goes each time it
    /// passes, the attempt still running.
    fn hedged_attempt_timeout(&self, request: &Request) -> Option<Duration> {
        (self.controls().hedge_on_attempt_timeout && Hedging::may_hedge(request))
            .then(|| self.configured_attempt_timeout(request))
            .flatten()
    }

    /// How long the next attempt of `request` may run before it is cut and decided as an
    /// `ATTEMPT_TIMEOUT` failure, if it is cut at all: the route's `attempt_timeout_ms`, else
    /// the one the policy's answer set for this attempt
    /// ([`Request::answered_attempt_timeout`]), else the policy's `attempt_timeout_ms`, else its
    /// strategy's own (the `grpc` built-in's `perAttemptRecvTimeout`, the `http` and
    /// `exponential` built-ins' `attempt_timeout_ms`). The request's deadline still ends it: a
    /// retry loop cuts an attempt at whichever comes first, and asks before each attempt.
    ///
    /// None when the policy hedges on attempt timeouts and `request` may be hedged: its attempt
    /// is not cut then, a copy is sent beside it ([`hedging`](Self::hedging)).
    pub fn attempt_timeout(&self, request: &Request) -> Option<Duration> {
        if self.hedged_attempt_timeout(request).is_some() {
            return None;
        }
        self.configured_attempt_timeout(request)
    }

    /// The attempt timeout the route, the policy's answer, the policy or the strategy gives
    /// `request`.
    fn configured_attempt_timeout(&self, request: &Request) -> Option<Duration> {
        (self.route_attempt_timeout)
            .or(request.answered_attempt_timeout())
            .or(self.controls().attempt_timeout)
            .or_else(|| self.strategy.as_deref()?.attempt_timeout(request))
    }

    /// An attempt of `request` was answered (a success or a failure, not an attempt cut short)
    /// `latency` after it started: recorded under the request's key ([`latency_key`]) when a
    /// control reads latencies, so that a quantile delay follows what the authority shows.
    pub fn attempt_answered(&self, request: &Request, latency: Duration) {
        if let Some(latencies) = &self.controls().latencies {
            latencies.record(latency_key(request), latency);
        }
    }

    /// `request` ended as `outcome` at `now` (every request, whether it failed or not), so
    /// that retry budgets and throttles follow the traffic: recorded in the budget and the
    /// throttle, and told to the strategy if it counts outcomes.
    pub fn report(&self, request: &Request, outcome: Outcome, now: Instant) {
        if let Some(strategy) = self.strategy.as_deref() {
            self.controls().report(strategy, request, outcome, now);
        }
    }
}

/// The controls of one policy (or of an orchestrator's default strategy). Empty by default.
#[derive(Debug, Default, Clone)]
pub(crate) struct Controls {
    budget: Option<BudgetControl>,
    throttle: Option<Arc<ScopedThrottle>>,
    breakers: Option<Arc<NodeBreakers>>,
    hedging: Option<Arc<dyn HedgingPolicy>>,
    attempt_timeout: Option<Duration>,
    hedge_on_attempt_timeout: bool,
    /// Where its attempts' latencies are recorded, when a control reads them (a quantile delay).
    latencies: Option<Arc<LatencySketches>>,
}

/// Where a policy's retries are drawn from: one budget, or one per client with the common one
/// for requests that name none.
#[derive(Debug, Clone)]
pub(crate) struct BudgetControl {
    common: Arc<TrafficBudget>,
    per_client: Option<Arc<dyn PerClient>>,
}

/// Budgets kept per client (the registry's `[budgets.NAME] per = "client_context.KEY"`).
pub(crate) trait PerClient: std::fmt::Debug + Send + Sync {
    /// The budget `request`'s client draws from; `common` when it names none.
    fn for_request(&self, request: &Request, common: &Arc<TrafficBudget>) -> Arc<TrafficBudget>;
}

impl BudgetControl {
    /// Every request draws from `budget`.
    pub(crate) fn common(budget: Arc<TrafficBudget>) -> Self {
        BudgetControl {
            common: budget,
            per_client: None,
        }
    }

    /// Each client draws from its own budget in `clients`; a request naming none from `common`.
    #[cfg(feature = "registry")]
    pub(crate) fn per_client(
        common: Arc<TrafficBudget>,
        clients: Option<Arc<dyn PerClient>>,
    ) -> Self {
        BudgetControl {
            common,
            per_client: clients,
        }
    }

    /// The budget `request` draws from.
    fn for_request(&self, request: &Request) -> Arc<TrafficBudget> {
        match &self.per_client {
            Some(clients) => clients.for_request(request, &self.common),
            None => Arc::clone(&self.common),
        }
    }
}

impl Controls {
    /// No control at all.
    pub(crate) const fn none() -> Self {
        Controls {
            budget: None,
            throttle: None,
            breakers: None,
            hedging: None,
            attempt_timeout: None,
            hedge_on_attempt_timeout: false,
            latencies: None,
        }
    }

    /// These controls, recording the latency of each attempt that was answered in `latencies`.
    #[cfg(feature = "registry")]
    pub(crate) fn with_latencies(mut self, latencies: Arc<LatencySketches>) -> Self {
        self.latencies = Some(latencies);
        self
    }

    /// These controls, drawing retries from `budget`.
    pub(crate) fn with_budget(mut self, budget: BudgetControl) -> Self {
        self.budget = Some(budget);
        self
    }

    /// These controls, counting failures in `throttle`.
    pub(crate) fn with_throttle(mut self, throttle: Arc<ScopedThrottle>) -> Self {
        self.throttle = Some(throttle);
        self
    }

    /// These controls, admitting attempts through `breakers`.
    pub(crate) fn with_breakers(mut self, breakers: Arc<NodeBreakers>) -> Self {
        self.breakers = Some(breakers);
        self
    }

    /// These controls, hedging as `policy` says instead of as the strategy does.
    pub(crate) fn with_hedging(mut self, policy: Arc<dyn HedgingPolicy>) -> Self {
        self.hedging = Some(policy);
        self
    }

    /// These controls, cutting each attempt after `timeout` whatever the strategy says.
    pub(crate) fn with_attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = Some(timeout);
        self
    }

    /// These controls, sending a copy of a request that may be hedged each time its attempt
    /// timeout passes instead of cutting the attempt (Envoy's `hedge_on_per_try_timeout`).
    #[cfg(feature = "registry")]
    pub(crate) fn with_hedge_on_attempt_timeout(mut self) -> Self {
        self.hedge_on_attempt_timeout = true;
        self
    }

    /// Whether no control is set.
    pub(crate) fn is_empty(&self) -> bool {
        self.budget.is_none()
            && self.throttle.is_none()
            && self.breakers.is_none()
            && self.hedging.is_none()
            && self.attempt_timeout.is_none()
            && !self.hedge_on_attempt_timeout
            && self.latencies.is_none()
    }

    /// The budget every request draws from when it names no client, if any.
    pub(crate) fn common_budget(&self) -> Option<&TrafficBudget> {
        self.budget.as_ref().map(|budget| &*budget.common)
    }

    /// The budget `request` draws from, if any.
    pub(crate) fn budget_for(&self, request: &Request) -> Option<Arc<TrafficBudget>> {
        (self.budget.as_ref()).map(|budget| budget.for_request(request))
    }

    /// The throttle failures are counted in, if any.
    pub(crate) fn throttle(&self) -> Option<&Arc<ScopedThrottle>> {
        self.throttle.as_ref()
    }

    /// The breakers attempts are admitted by, if any.
    pub(crate) fn breakers(&self) -> Option<&Arc<NodeBreakers>> {
        self.breakers.as_ref()
    }

    /// `context`, drawing from `budget` and counting in these controls' throttle unless it
    /// names its own.
    pub(crate) fn charge<'c>(
        &'c self,
        context: &DecisionContext<'c>,
        budget: Option<&'c TrafficBudget>,
    ) -> DecisionContext<'c> {
        context
            .with_budget(context.budget().or(budget))
            .with_throttle(context.throttle().or(self.throttle.as_deref()))
    }

    /// The hedging policy: these controls' own, else `strategy`'s.
    fn hedging_policy(&self, strategy: &dyn RetryStrategy) -> Option<Arc<dyn HedgingPolicy>> {
        (self.hedging.clone()).or_else(|| strategy.hedging())
    }

    /// Whether requests decided by `strategy` under these controls are hedged.
    #[cfg(feature = "registry")]
    pub(crate) fn hedges(&self, strategy: &dyn RetryStrategy) -> bool {
        self.hedging.is_some() || self.hedge_on_attempt_timeout || strategy.hedging().is_some()
    }

    /// How `request` is hedged at `now`, paid from its budget and throttle; `None` when neither
    /// these controls nor `strategy` hedge.
    pub(crate) fn hedging(
        &self,
        strategy: &dyn RetryStrategy,
        request: &Request,
        now: Instant,
    ) -> Option<Hedging> {
        let policy = self.hedging_policy(strategy)?;
        Some(self.paid(policy, request, now))
    }

    /// `request`'s hedging by `policy` at `now`, paid from its budget and throttle: the
    /// policy's named throttle, else the one the hedging policy brings (gRFC A6's
    /// `retryThrottling`).
    fn paid(&self, policy: Arc<dyn HedgingPolicy>, request: &Request, now: Instant) -> Hedging {
        let throttle = (self.throttle.as_deref())
            .or_else(|| policy.throttle())
            .map(|t| t.for_request(request, now));
        Hedging::new(policy)
            .with_budget(self.budget_for(request))
            .with_throttle(throttle)
            .with_latencies(self.latencies.clone())
    }

    /// Whether attempts of requests decided by `strategy` under these controls may be cut by
    /// an attempt timeout.
    #[cfg(feature = "registry")]
    pub(crate) fn times_attempts(&self, strategy: &dyn RetryStrategy) -> bool {
        self.attempt_timeout.is_some() || strategy.times_attempts()
    }

    /// Whether an outcome report counts anywhere: a budget, a throttle, or `strategy`.
    #[cfg(feature = "registry")]
    pub(crate) fn counts_outcomes(&self, strategy: &dyn RetryStrategy) -> bool {
        self.budget.is_some() || self.throttle.is_some() || strategy.counts_outcomes()
    }

    /// `request`, decided by `strategy`, ended as `outcome` at `now`: told to the strategy if
    /// it counts outcomes, recorded in the budget and the throttle.
    pub(crate) fn report(
        &self,
        strategy: &dyn RetryStrategy,
        request: &Request,
        outcome: Outcome,
        now: Instant,
    ) {
        if strategy.counts_outcomes() {
            strategy.record_outcome(request, outcome);
        }
        if let Some(budget) = self.budget_for(request) {
            outcome.record_in(&budget, now);
        }
        if let Some(throttle) = &self.throttle {
            outcome.record_in_throttle(throttle, request, now);
        }
    }
}
