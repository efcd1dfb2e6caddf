//! The sandboxed strategy: asks a policy instance from the pool under the call's budgets,
//! answers the configured fail-safe for every way a call can fail, and keeps the policy's
//! health (failures, quarantine).

use std::sync::Arc;
use std::time::Duration;

use super::call::{arm, classify, Budgets};
use super::component::{LoadError, PolicyPre};
use super::config::WasmStrategyConfig;
use super::deadline::Due;
use super::health::Health;
use super::settings::PolicyStats;
use super::hedging::WasmHedging;
use super::instance::{InstanceRecipe, PolicyInstance, SetupError};
use super::policy_label::PolicyLabel;
use super::pool::InstancePool;
use crate::action::{PolicyFailure, PolicyFailureKind, RetryAction};
use crate::token_buckets::TokenBuckets;
use crate::strategy::DecisionContext;
use crate::hedge::{HedgeAction, HedgingPolicy, InFlight};
use crate::log_rate_limit::LogRateLimit;
use crate::request::Request;
use crate::strategy::{Strategy, SyncStrategy};

/// Lines of stderr one policy may write to the host's log each second (a Python traceback
/// is about eight); the rest are left out and counted in the next line.
const STDERR_LINES_PER_SECOND: u32 = 20;

/// A retry strategy implemented by a sandboxed policy component.
pub struct WasmStrategy {
    recipe: Arc<InstanceRecipe>,
    pool: InstancePool<PolicyInstance>,
    health: Health,
    /// A line a second at most about requests this policy's version cannot describe.
    undescribed_lines: LogRateLimit,
    /// Its hedging, if the component exports `hedging`.
    hedging: Option<Arc<WasmHedging>>,
}

impl std::fmt::Debug for WasmStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("WasmStrategy").field(&self.recipe).finish()
    }
}

impl WasmStrategy {
    /// Runs `component` with `config`, with retry-budget buckets of its own (freed with it).
    /// One instance is created and configured now, so a policy that rejects its parameters, or
    /// fails while configuring, is refused here rather than on the first decision.
    pub fn new(component: PolicyPre, config: WasmStrategyConfig) -> Result<Self, LoadError> {
        let label = PolicyLabel {
            name: component.name().into(),
            version: component.version().into(),
            stderr_lines: Arc::new(LogRateLimit::new(STDERR_LINES_PER_SECOND)),
        };
        let params: Vec<(String, String)> = config
            .params
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let runtime = component.runtime();
        let pool = InstancePool::new(runtime.idle_per_policy(), runtime.idle_budget());
        let health = Health::new(label.clone(), config.quarantine, config.fail_safe);
        let recipe = Arc::new(InstanceRecipe {
            component,
            config,
            params,
            label,
            buckets: Arc::new(TokenBuckets::new()),
        });
        let hedging = WasmHedging::of(&recipe);
        let strategy = WasmStrategy {
            health,
            recipe,
            pool,
            undescribed_lines: LogRateLimit::new(1),
            hedging: hedging.map(Arc::new),
        };
        let instance = strategy.instantiate().map_err(|error| {
            let message = match error {
                SetupError::Rejected(message) => format!("it rejected its parameters: {message}"),
                SetupError::Failed(failure) => failure.to_string(),
            };
            LoadError::Configure {
                policy: strategy.recipe.component.name().to_owned(),
                message,
            }
        })?;
        strategy.pool.put(instance);
        Ok(strategy)
    }

    /// The component.
    pub fn component(&self) -> &PolicyPre {
        &self.recipe.component
    }

    /// The configuration.
    pub fn config(&self) -> &WasmStrategyConfig {
        &self.recipe.config
    }

    /// The policy's health counters.
    pub fn stats(&self) -> PolicyStats {
        PolicyStats {
            budget_buckets: self.recipe.buckets.len(),
            budget_refusals: self.recipe.buckets.refusals(),
            ..self.health.stats()
        }
    }

    /// Drops its retry-budget buckets: calls made before it decides (the registry's smoke
    /// calls) spend no token of its traffic's.
    #[cfg(feature = "registry")]
    pub(crate) fn clear_budgets(&self) {
        self.recipe.buckets.clear();
    }

    fn instantiate(&self) -> Result<PolicyInstance, SetupError> {
        self.recipe.instantiate()
    }

    /// Asks the policy once, outside the fail-safe, the quarantine and the health counters:
    /// its answer as given (the orchestrator's safety guard has not seen it), or how the call
    /// failed. The registry smoke-tests a version with it; `rebound check` runs a grid of
    /// inputs through it. An instance whose call failed is dropped, never reused.
    pub fn try_answer(
        &self,
        request: &Request,
        context: &DecisionContext<'_>,
    ) -> Result<RetryAction, PolicyFailure> {
        if !self.describes(request) {
            return Ok(RetryAction::NoRetry);
        }
        self.try_decide_by(
            request,
            context,
            Due::Within(self.recipe.config.limits.deadline()),
        )
    }

    /// Asks the policy's `hedging.next-copy` once, as [`try_answer`](Self::try_answer) asks its
    /// decision: its answer before the host's hedging rules, none if the component does not
    /// hedge, or how the call failed. `rebound check` runs a grid of requests in flight
    /// through it.
    pub fn try_next_copy(
        &self,
        request: &Request,
        flight: &InFlight<'_>,
    ) -> Result<Option<HedgeAction>, PolicyFailure> {
        match &self.hedging {
            Some(hedging) => hedging.try_next_copy(request, flight),
            None => Ok(None),
        }
    }

    /// As [`try_answer`](Self::try_answer), the call `due` as given (no later than its
    /// deadline after it was asked for).
    fn try_decide_by(
        &self,
        request: &Request,
        context: &DecisionContext<'_>,
        due: Due<'_>,
    ) -> Result<RetryAction, PolicyFailure> {
        let reason = context.reason();
        let mut instance = match self.pool.take() {
            Some(instance) => instance,
            None => self.instantiate().map_err(PolicyFailure::from)?,
        };
        arm(
            &mut instance.store,
            self.recipe.component.runtime(),
            &self.recipe.config.limits,
            Budgets::Decision(due),
        )?;
        // `elapsed-ms` is whole milliseconds: the epoch ticker's coarse clock is precise enough
        // when the caller did not fix the decision's moment.
        let now = context
            .moment()
            .unwrap_or_else(|| self.recipe.component.runtime().coarse_now());
        let state = instance.store.data_mut();
        state.hold_request(request, now, context.pushback());
        state.error_map_spec = context.error_map_spec().copied();
        state.decision_time = context.moment();
        state.progress = context.progress();
        state.attempt_timeout = context.attempt_timeout();
        state.latencies = None;
        let answer = instance
            .policy
            .retry_after(&mut instance.store, request, reason, now);
        let action = answer.map_err(|error| {
            let failure = classify(error);
            // A trap after the policy wrote to stderr (a Python exception's traceback, an
            // abort's message): its last line says what went wrong in the policy's words.
            match instance.store.data_mut().wasi.stderr_summary() {
                Some(line) if failure.kind == PolicyFailureKind::Trap => {
                    PolicyFailure::new(failure.kind, format!("{line} (stderr); {}", failure.detail))
                }
                _ => failure,
            }
        })?;
        if let RetryAction::RetryAfter {
            delay,
            attempt_timeout,
            ..
        } = action
        {
            let max = Duration::from_millis(self.recipe.config.limits.max_delay_ms);
            let invalid = |why: String| Err(PolicyFailure::new(PolicyFailureKind::InvalidAnswer, why));
            if delay > max {
                return invalid(format!("delay {delay:?} exceeds the maximum of {max:?}"));
            }
            if attempt_timeout == Some(Duration::ZERO) {
                return invalid("an attempt timeout of 0 ms would cut the attempt before it is sent".into());
            }
        }
        self.pool.put(instance);
        Ok(action)
    }

    /// Whether its `rebound:policy` version has words for `request`. A request it has none
    /// for is not put to it, and not retried by it (a policy written for other requests says
    /// nothing about these); the first such request a second is logged.
    fn describes(&self, request: &Request) -> bool {
        let version = self.recipe.component.wit_version();
        if version.describes(request.service()) {
            return true;
        }
        if self.undescribed_lines.allow().is_some() {
            tracing::warn!(policy = %self.recipe.label.name, version = %self.recipe.label.version,
                wit = version.number(), service = request.service().name(),
                "this policy's rebound:policy version cannot describe such requests: they are not retried by it; route them to the grpc or http built-in");
        }
        false
    }

    /// Its calls that ran past their deadline or out of fuel, so far.
    #[cfg(feature = "registry")]
    pub(crate) fn overruns(&self) -> u64 {
        self.health.overruns()
    }

    /// Counts a call not made because the policy had as many in progress as it may.
    #[cfg(feature = "registry")]
    pub(crate) fn count_overloaded(&self) {
        self.health.skipped(PolicyFailureKind::Overloaded);
    }

    /// The fail-safe answer to a call that failed as `failure` says, which the context notes.
    pub(crate) fn fail_safe(
        &self,
        failure: PolicyFailure,
        request: &Request,
        context: &DecisionContext<'_>,
    ) -> RetryAction {
        self.recipe
            .config
            .fail_safe
            .answer(failure, request, context)
    }
}

impl Strategy for WasmStrategy {
    fn name(&self) -> &str {
        self.recipe.component.name()
    }

    fn hedging(&self) -> Option<Arc<dyn HedgingPolicy>> {
        self.hedging
            .clone()
            .map(|hedging| hedging as Arc<dyn HedgingPolicy>)
    }

    /// A policy of 0.6.0 on may set the attempt timeout of each retry it asks for.
    fn times_attempts(&self) -> bool {
        self.recipe.component.wit_version() >= super::world::WitVersion::V0_6_0
    }
}

impl SyncStrategy for WasmStrategy {
    fn answer(&self, request: &Request, context: &DecisionContext<'_>) -> RetryAction {
        self.answer_by(
            request,
            context,
            Due::Within(self.recipe.config.limits.deadline()),
        )
    }
}

impl WasmStrategy {
    /// As [`SyncStrategy::answer`], the call `due` as given (no later than its deadline after
    /// it was asked for): a caller that waited for its turn gives the call what is left of the
    /// time it allows.
    pub(crate) fn answer_by(
        &self,
        request: &Request,
        context: &DecisionContext<'_>,
        due: Due<'_>,
    ) -> RetryAction {
        let reason = context.reason();
        if !self.describes(request) {
            return RetryAction::NoRetry;
        }
        if self.health.skips_call() {
            let last = self.health.stats().last_failure.unwrap_or_default();
            let failure = PolicyFailure::new(
                PolicyFailureKind::Quarantined,
                format!("quarantined after repeated failures, the last: {last}"),
            );
            return self.fail_safe(failure, request, context);
        }
        match self.try_decide_by(request, context, due) {
            Ok(action) => {
                self.health.on_success();
                action
            }
            Err(failure) => {
                self.health
                    .on_failure(failure.kind, &failure.detail, request, reason);
                self.fail_safe(failure, request, context)
            }
        }
    }
}
