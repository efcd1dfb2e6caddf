//! The version-independent face of a component's bindings: pre-instantiate, instantiate,
//! configure and ask `retry-after`, whichever released version of `rebound:policy` the
//! component was built for, and ask a component that exports `hedging` (0.5.0 on) about the
//! copies of a request in flight.

use std::time::Instant;

use wasmtime::component::{Component, HasSelf, InstancePre, Linker};
use wasmtime::Store;

use super::bindings::{v0_1, v0_2, v0_3, v0_4, v0_5, v0_6};
use super::on_fiber;
use super::store::CallState;
use super::wasi;
pub(crate) use super::wit_version::WitVersion;
use crate::action::RetryAction;
use crate::hedge::{HedgeAction, InFlight};
use crate::pushback::Pushback;
use crate::reason::RetryReason;
use crate::request::Request;

/// A component's pre-instantiated bindings, of the version it was built for.
#[derive(Clone)]
pub(crate) enum WorldPre {
    V0_1(v0_1::RetryPolicyPre<CallState>),
    V0_2(v0_2::RetryPolicyPre<CallState>),
    V0_3(v0_3::RetryPolicyPre<CallState>),
    V0_4(v0_4::RetryPolicyPre<CallState>),
    V0_5(v0_5::RetryPolicyPre<CallState>),
    V0_5Hedging(v0_5::hedging::HedgingPolicyPre<CallState>),
    V0_6(v0_6::RetryPolicyPre<CallState>),
    V0_6Hedging(v0_6::hedging::HedgingPolicyPre<CallState>),
    /// A 0.6.0 component that imports WASI 0.3's async functions: called on a fiber.
    V0_6OnFiber(v0_6::on_fiber::RetryPolicyPre<CallState>),
}

impl WorldPre {
    /// Links `component` against `version`'s host imports (and the inert WASI when it
    /// `imports_wasi`) and pre-instantiates it. The error is wasmtime's.
    pub(crate) fn new(
        version: WitVersion,
        component: &Component,
        imports_wasi: bool,
    ) -> wasmtime::Result<Self> {
        let mut linker = Linker::<CallState>::new(component.engine());
        macro_rules! link {
            ($b:ident) => {
                $b::RetryPolicy::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |s| s)?
            };
        }
        match version {
            WitVersion::V0_1_0 => link!(v0_1),
            WitVersion::V0_2_0 => link!(v0_2),
            WitVersion::V0_3_0 => link!(v0_3),
            WitVersion::V0_4_0 => link!(v0_4),
            WitVersion::V0_5_0 => link!(v0_5),
            WitVersion::V0_6_0 => link!(v0_6),
        }
        if imports_wasi {
            wasi::add_to_linker(&mut linker, component)?;
        }
        let pre: InstancePre<CallState> = linker.instantiate_pre(component)?;
        if wasi::needs_fiber(component) {
            if version != WitVersion::CURRENT || exports_hedging(component, version) {
                wasmtime::bail!(
                    "it imports WASI 0.3's async functions, which this host links only for a policy built for the world retry-policy of {}",
                    WitVersion::CURRENT.package()
                );
            }
            return Ok(WorldPre::V0_6OnFiber(v0_6::on_fiber::RetryPolicyPre::new(pre)?));
        }
        Ok(match version {
            WitVersion::V0_1_0 => WorldPre::V0_1(v0_1::RetryPolicyPre::new(pre)?),
            WitVersion::V0_2_0 => WorldPre::V0_2(v0_2::RetryPolicyPre::new(pre)?),
            WitVersion::V0_3_0 => WorldPre::V0_3(v0_3::RetryPolicyPre::new(pre)?),
            WitVersion::V0_4_0 => WorldPre::V0_4(v0_4::RetryPolicyPre::new(pre)?),
            WitVersion::V0_5_0 if exports_hedging(component, version) => {
                WorldPre::V0_5Hedging(v0_5::hedging::HedgingPolicyPre::new(pre)?)
            }
            WitVersion::V0_5_0 => WorldPre::V0_5(v0_5::RetryPolicyPre::new(pre)?),
            WitVersion::V0_6_0 if exports_hedging(component, version) => {
                WorldPre::V0_6Hedging(v0_6::hedging::HedgingPolicyPre::new(pre)?)
            }
            WitVersion::V0_6_0 => WorldPre::V0_6(v0_6::RetryPolicyPre::new(pre)?),
        })
    }

    /// The engine the component was compiled for, which its stores must use.
    pub(crate) fn engine(&self) -> &wasmtime::Engine {
        match self {
            WorldPre::V0_1(pre) => pre.engine(),
            WorldPre::V0_2(pre) => pre.engine(),
            WorldPre::V0_3(pre) => pre.engine(),
            WorldPre::V0_4(pre) => pre.engine(),
            WorldPre::V0_5(pre) => pre.engine(),
            WorldPre::V0_5Hedging(pre) => pre.engine(),
            WorldPre::V0_6(pre) => pre.engine(),
            WorldPre::V0_6Hedging(pre) => pre.engine(),
            WorldPre::V0_6OnFiber(pre) => pre.engine(),
        }
    }

    /// Whether the component exports `hedging`.
    pub(crate) fn hedges(&self) -> bool {
        matches!(self, WorldPre::V0_5Hedging(_) | WorldPre::V0_6Hedging(_))
    }

    /// Instantiates the component in `store`.
    pub(crate) fn instantiate(&self, store: &mut Store<CallState>) -> wasmtime::Result<World> {
        Ok(match self {
            WorldPre::V0_1(pre) => World::V0_1(pre.instantiate(store)?),
            WorldPre::V0_2(pre) => World::V0_2(pre.instantiate(store)?),
            WorldPre::V0_3(pre) => World::V0_3(pre.instantiate(store)?),
            WorldPre::V0_4(pre) => World::V0_4(pre.instantiate(store)?),
            WorldPre::V0_5(pre) => World::V0_5(pre.instantiate(store)?),
            WorldPre::V0_5Hedging(pre) => World::V0_5Hedging(pre.instantiate(store)?),
            WorldPre::V0_6(pre) => World::V0_6(pre.instantiate(store)?),
            WorldPre::V0_6Hedging(pre) => World::V0_6Hedging(pre.instantiate(store)?),
            WorldPre::V0_6OnFiber(pre) => {
                World::V0_6OnFiber(on_fiber::drive(pre.instantiate_async(store))?)
            }
        })
    }
}

/// Whether `component`, built for `version`, exports that version's `hedging` interface.
fn exports_hedging(component: &Component, version: WitVersion) -> bool {
    let export = format!("rebound:policy/hedging@{}", version.number());
    component
        .component_type()
        .exports(component.engine())
        .any(|(name, _)| name == export)
}

/// An instance's exports, of the version it was built for.
pub(crate) enum World {
    V0_1(v0_1::RetryPolicy),
    V0_2(v0_2::RetryPolicy),
    V0_3(v0_3::RetryPolicy),
    V0_4(v0_4::RetryPolicy),
    V0_5(v0_5::RetryPolicy),
    V0_5Hedging(v0_5::hedging::HedgingPolicy),
    V0_6(v0_6::RetryPolicy),
    V0_6Hedging(v0_6::hedging::HedgingPolicy),
    V0_6OnFiber(v0_6::on_fiber::RetryPolicy),
}

impl World {
    /// `strategy.configure`: the policy's verdict on its parameters.
    pub(crate) fn configure(
        &self,
        store: &mut Store<CallState>,
        params: &[(String, String)],
    ) -> wasmtime::Result<Result<(), String>> {
        macro_rules! configure {
            ($policy:expr) => {
                $policy.rebound_policy_strategy().call_configure(store, params)
            };
        }
        match self {
            World::V0_1(policy) => configure!(policy),
            World::V0_2(policy) => configure!(policy),
            World::V0_3(policy) => configure!(policy),
            World::V0_4(policy) => configure!(policy),
            World::V0_5(policy) => configure!(policy),
            World::V0_5Hedging(policy) => configure!(policy),
            World::V0_6(policy) => configure!(policy),
            World::V0_6Hedging(policy) => configure!(policy),
            World::V0_6OnFiber(policy) => on_fiber::drive(configure!(policy)),
        }
    }

    /// `strategy.retry-after` for `request`, failed for `reason` (its facts at `now`), as the
    /// engine's action. The store's call state already holds the failure (`failure` reads
    /// it; 0.1.0 receives the request record instead).
    pub(crate) fn retry_after(
        &self,
        store: &mut Store<CallState>,
        request: &Request,
        reason: &RetryReason,
        now: Instant,
    ) -> wasmtime::Result<RetryAction> {
        // The answer of a version (0.2.0 on) whose bindings module is `$b`.
        macro_rules! ask {
            ($b:ident, $policy:expr) => {{
                let answer = $policy
                    .rebound_policy_strategy()
                    .call_retry_after(&mut *store, &$b::reason_to_wit(reason))?;
                let best_effort = matches!(answer, $b::wit::RetryAction::BestEffort);
                let action = $b::action_to_host(&answer, request, reason);
                Ok(honour_pushback(best_effort, action, store.data()))
            }};
        }
        match self {
            World::V0_1(policy) => {
                let answer = policy.rebound_policy_strategy().call_retry_after(
                    store,
                    v0_1::request_to_wit(request, now),
                    &v0_1::reason_to_wit(reason),
                )?;
                Ok(v0_1::action_to_host(&answer, request, reason))
            }
            World::V0_2(policy) => ask!(v0_2, policy),
            World::V0_3(policy) => ask!(v0_3, policy),
            World::V0_4(policy) => ask!(v0_4, policy),
            World::V0_5(policy) => ask!(v0_5, policy),
            World::V0_5Hedging(policy) => ask!(v0_5, policy),
            World::V0_6(policy) => ask!(v0_6, policy),
            World::V0_6Hedging(policy) => ask!(v0_6, policy),
            World::V0_6OnFiber(policy) => {
                let reason_wit = v0_6::reason_to_wit(reason);
                let strategy = policy.rebound_policy_strategy();
                let answer = on_fiber::drive(strategy.call_retry_after(&mut *store, &reason_wit))?;
                let best_effort = matches!(answer, v0_6::wit::RetryAction::BestEffort);
                let action = v0_6::action_to_host(&answer, request, reason);
                Ok(honour_pushback(best_effort, action, store.data()))
            }
        }
    }

    /// `hedging.next-copy` for the request in flight (the store's call state holds it), or
    /// none when the component does not hedge.
    pub(crate) fn next_copy(
        &self,
        store: &mut Store<CallState>,
        flight: &InFlight<'_>,
    ) -> wasmtime::Result<Option<HedgeAction>> {
        match self {
            World::V0_5Hedging(policy) => super::hedging_calls::next_copy_v0_5(policy, store, flight),
            World::V0_6Hedging(policy) => super::hedging_calls::next_copy_v0_6(policy, store, flight),
            _ => Ok(None),
        }
    }

    /// `hedging.is-fatal` for a copy failed for `reason`, or none when the component does not
    /// hedge.
    pub(crate) fn is_fatal(
        &self,
        store: &mut Store<CallState>,
        reason: &RetryReason,
    ) -> wasmtime::Result<Option<bool>> {
        match self {
            World::V0_5Hedging(policy) => (policy.rebound_policy_hedging())
                .call_is_fatal(store, &v0_5::reason_to_wit(reason))
                .map(Some),
            World::V0_6Hedging(policy) => (policy.rebound_policy_hedging())
                .call_is_fatal(store, &v0_6::reason_to_wit(reason))
                .map(Some),
            _ => Ok(None),
        }
    }
}

/// The engine's action for a policy's answer (0.2.0 on): a `best-effort` answer is the built-in
/// best effort, which never retries sooner than the failure's pushback asks, nor at all if it
/// says stop.
fn honour_pushback(best_effort: bool, action: RetryAction, call: &CallState) -> RetryAction {
    if best_effort {
        Pushback::honour(call.pushback, action)
    } else {
        action
    }
}
