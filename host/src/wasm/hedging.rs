//! A WebAssembly policy's hedging: the `hedging` export of a component built for the world
//! `hedging-policy` (`rebound:policy@0.5.0`), asked through instances of its own pool, under
//! the sandbox's decision budgets. A call that fails (a trap, a limit, the deadline) sends no
//! copy and makes a failure fatal: the request goes on as if it were not hedged, and its
//! failure is decided as any other. The host's own rules ([`Hedging`](crate::hedge::Hedging))
//! apply whatever the policy answers.

use std::sync::Arc;
use std::time::Instant;

use super::call::{arm, classify, Budgets};
use super::deadline::Due;
use super::instance::{InstanceRecipe, PolicyInstance};
use super::pool::InstancePool;
use super::store::CallState;
use super::world::World;
use crate::action::PolicyFailure;
use crate::hedge::{HedgeAction, HedgingPolicy, InFlight};
use crate::reason::RetryReason;
use crate::request::Request;

/// The hedging of one policy version.
pub(crate) struct WasmHedging {
    recipe: Arc<InstanceRecipe>,
    pool: InstancePool<PolicyInstance>,
}

impl std::fmt::Debug for WasmHedging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("WasmHedging").field(&self.recipe).finish()
    }
}

impl WasmHedging {
    /// The hedging of the policy whose instances `recipe` makes (those of its strategy), if
    /// its component exports `hedging`.
    pub(super) fn of(recipe: &Arc<InstanceRecipe>) -> Option<Self> {
        if !recipe.component.hedges() {
            return None;
        }
        let runtime = recipe.component.runtime();
        Some(WasmHedging {
            recipe: Arc::clone(recipe),
            pool: InstancePool::new(runtime.idle_per_policy(), runtime.idle_budget()),
        })
    }

    /// Runs `call` on an instance holding `request` (its facts now, the last failure's
    /// `pushback` in `flight`): its answer, none if the component does not hedge, or how the
    /// call failed. An instance whose call failed is dropped.
    fn ask<T>(
        &self,
        request: &Request,
        flight: Option<&InFlight<'_>>,
        call: impl FnOnce(&World, &mut wasmtime::Store<CallState>) -> wasmtime::Result<Option<T>>,
    ) -> Result<Option<T>, PolicyFailure> {
        let mut instance = match self.pool.take() {
            Some(instance) => instance,
            None => self.recipe.instantiate().map_err(PolicyFailure::from)?,
        };
        let (component, limits) = (&self.recipe.component, &self.recipe.config.limits);
        let deadline = Budgets::Decision(Due::Within(limits.deadline()));
        arm(&mut instance.store, component.runtime(), limits, deadline)?;
        let state = instance.store.data_mut();
        state.hold_request(request, Instant::now(), flight.and_then(|f| f.pushback));
        state.error_map_spec = None;
        state.decision_time = None;
        state.progress = crate::progress::Progress::Processed;
        state.attempt_timeout = None;
        state.latencies = flight.and_then(|f| f.latencies).cloned();
        let answer = call(&instance.policy, &mut instance.store).map_err(classify)?;
        self.pool.put(instance);
        Ok(answer)
    }
}

impl WasmHedging {
    /// Asks `hedging.next-copy` once: its answer as given, or how the call failed.
    pub(super) fn try_next_copy(
        &self,
        request: &Request,
        flight: &InFlight<'_>,
    ) -> Result<Option<HedgeAction>, PolicyFailure> {
        self.ask(request, Some(flight), |policy, store| {
            policy.next_copy(store, flight)
        })
    }
}

impl HedgingPolicy for WasmHedging {
    fn name(&self) -> &str {
        self.recipe.component.name()
    }

    fn next_copy(&self, request: &Request, flight: &InFlight<'_>) -> HedgeAction {
        match self.try_next_copy(request, flight) {
            Ok(Some(action)) => action,
            Ok(None) => HedgeAction::Wait,
            Err(failure) => {
                tracing::debug!(
                    policy = self.recipe.component.name(),
                    version = self.recipe.component.version(),
                    "hedging.next-copy failed, no copy sent: {failure}"
                );
                HedgeAction::Wait
            }
        }
    }

    fn is_fatal(&self, request: &Request, reason: &RetryReason) -> bool {
        match self.ask(request, None, |policy, store| {
            policy.is_fatal(store, reason)
        }) {
            Ok(Some(fatal)) => fatal,
            Ok(None) => true,
            Err(failure) => {
                tracing::debug!(
                    policy = self.recipe.component.name(),
                    version = self.recipe.component.version(),
                    "hedging.is-fatal failed, the failure ends the request: {failure}"
                );
                true
            }
        }
    }
}
