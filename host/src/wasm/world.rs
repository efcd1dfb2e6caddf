//! The released versions of the WIT package `rebound:policy` this host loads, and the
//! version-independent face of a component's bindings: pre-instantiate, instantiate,
//! configure and ask `retry-after`, whichever version the component was built for, and ask a
//! 0.5.0 component that exports `hedging` about the copies of a request in flight.

use std::time::Instant;

use wasmtime::component::{Component, HasSelf, InstancePre, Linker};
use wasmtime::Store;

use super::bindings::{v0_1, v0_2, v0_3, v0_4, v0_5};
use super::on_fiber;
use super::store::CallState;
use super::wasi;
use crate::action::{NodeChoice, RetryAction};
use crate::hedge::{Asked, HedgeAction, InFlight};
use crate::pushback::Pushback;
use crate::reason::{ReasonKind, RetryReason};
use crate::request::{Request, Service};

/// A released version of the WIT package `rebound:policy`. The host keeps one set of bindings
/// per released version, so a component built for any of them keeps loading
/// (docs/wit-versions.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[non_exhaustive]
pub enum WitVersion {
    /// `rebound:policy@0.1.0`: `retry-after(request, reason)`; context through `host`.
    #[serde(rename = "0.1.0")]
    V0_1_0,
    /// `rebound:policy@0.2.0`: `retry-after(reason)`; the failure read through `failure`.
    #[serde(rename = "0.2.0")]
    V0_2_0,
    /// `rebound:policy@0.3.0`: 0.2.0 and `failure.server-delay-ms`, the server's pushback.
    #[serde(rename = "0.3.0")]
    V0_3_0,
    /// `rebound:policy@0.4.0`: 0.3.0 and requests of any protocol (plain HTTP requests, gRPC
    /// calls: method, authority, route, status) and `failure.retries-since-pushback`.
    #[serde(rename = "0.4.0")]
    V0_4_0,
    /// `rebound:policy@0.5.0`: 0.4.0 and the optional `hedging` export (world
    /// `hedging-policy`): when the next copy of a request in flight goes.
    #[serde(rename = "0.5.0")]
    V0_5_0,
}

impl WitVersion {
    /// Every version this host loads, oldest first.
    pub const ALL: [WitVersion; 5] = [
        WitVersion::V0_1_0,
        WitVersion::V0_2_0,
        WitVersion::V0_3_0,
        WitVersion::V0_4_0,
        WitVersion::V0_5_0,
    ];
    /// The newest version: the one `wit/policy.wit` and the guest SDK implement.
    pub const CURRENT: WitVersion = WitVersion::V0_5_0;

    /// The version number, e.g. `0.2.0`.
    pub const fn number(self) -> &'static str {
        match self {
            WitVersion::V0_1_0 => "0.1.0",
            WitVersion::V0_2_0 => "0.2.0",
            WitVersion::V0_3_0 => "0.3.0",
            WitVersion::V0_4_0 => "0.4.0",
            WitVersion::V0_5_0 => "0.5.0",
        }
    }

    /// The versioned package name, e.g. `rebound:policy@0.2.0`.
    pub const fn package(self) -> &'static str {
        match self {
            WitVersion::V0_1_0 => "rebound:policy@0.1.0",
            WitVersion::V0_2_0 => "rebound:policy@0.2.0",
            WitVersion::V0_3_0 => "rebound:policy@0.3.0",
            WitVersion::V0_4_0 => "rebound:policy@0.4.0",
            WitVersion::V0_5_0 => "rebound:policy@0.5.0",
        }
    }

    /// Whether a policy of this version can be told about a request to `service`: versions
    /// before 0.4.0 have no words for plain HTTP requests or gRPC calls.
    pub const fn describes(self, service: Service) -> bool {
        matches!(self, WitVersion::V0_4_0 | WitVersion::V0_5_0)
            || !matches!(service, Service::Http | Service::Grpc)
    }

    /// Whether this version's `retry-reason` has a case for `kind`. A reason it has none for
    /// reaches its policies by its name, as `other(name)`; what they answer decides, under the
    /// host's rules.
    pub const fn has_case_for(self, kind: ReasonKind) -> bool {
        match kind {
            ReasonKind::HttpStatus | ReasonKind::GrpcStatus => {
                matches!(self, WitVersion::V0_4_0 | WitVersion::V0_5_0)
            }
            ReasonKind::AttemptTimeout => false,
            _ => true,
        }
    }

    /// The version with this number, if this host loads it.
    pub fn from_number(number: &str) -> Option<WitVersion> {
        WitVersion::ALL.into_iter().find(|v| v.number() == number)
    }

    /// The WIT text of this version, as released.
    pub fn wit(self) -> &'static str {
        match self {
            WitVersion::V0_1_0 => include_str!("../../wit/released/0.1.0/policy.wit"),
            WitVersion::V0_2_0 => include_str!("../../wit/released/0.2.0/policy.wit"),
            WitVersion::V0_3_0 => include_str!("../../wit/released/0.3.0/policy.wit"),
            WitVersion::V0_4_0 => include_str!("../../wit/released/0.4.0/policy.wit"),
            WitVersion::V0_5_0 => include_str!("../../wit/policy.wit"),
        }
    }

    /// Which hosts accept a component built for this version, in words: this one (the
    /// `rebound` crate's version, and the versions it loads), and by the support rule
    /// (docs/wit-versions.md) every later one.
    pub fn accepted_by(self) -> String {
        let loads: Vec<&str> = WitVersion::ALL.iter().map(|v| v.number()).collect();
        format!(
            "accepted by this host (rebound {}, which loads rebound:policy {}) and every later host; {} is the newest",
            crate::VERSION,
            loads.join(", "),
            if self == WitVersion::CURRENT { "it" } else { WitVersion::CURRENT.package() },
        )
    }

    /// The `rebound:policy` interfaces a component of this version may import.
    pub(crate) fn granted_interfaces(self) -> &'static [&'static str] {
        match self {
            WitVersion::V0_1_0 => &["types", "host"],
            WitVersion::V0_2_0 | WitVersion::V0_3_0 | WitVersion::V0_4_0 | WitVersion::V0_5_0 => {
                &["types", "failure", "host"]
            }
        }
    }
}

impl std::fmt::Display for WitVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.package())
    }
}

/// A component's pre-instantiated bindings, of the version it was built for.
#[derive(Clone)]
pub(crate) enum WorldPre {
    V0_1(v0_1::RetryPolicyPre<CallState>),
    V0_2(v0_2::RetryPolicyPre<CallState>),
    V0_3(v0_3::RetryPolicyPre<CallState>),
    V0_4(v0_4::RetryPolicyPre<CallState>),
    V0_5(v0_5::RetryPolicyPre<CallState>),
    V0_5Hedging(v0_5::hedging::HedgingPolicyPre<CallState>),
    /// A 0.5.0 component that imports WASI 0.3's async functions: called on a fiber.
    V0_5OnFiber(v0_5::on_fiber::RetryPolicyPre<CallState>),
}

/// The interface a 0.5.0 component that hedges exports.
const HEDGING_EXPORT: &str = "rebound:policy/hedging@0.5.0";

impl WorldPre {
    /// Links `component` against `version`'s host imports (and the inert WASI when it
    /// `imports_wasi`) and pre-instantiates it. The error is wasmtime's.
    pub(crate) fn new(
        version: WitVersion,
        component: &Component,
        imports_wasi: bool,
    ) -> wasmtime::Result<Self> {
        let mut linker = Linker::<CallState>::new(component.engine());
        match version {
            WitVersion::V0_1_0 => {
                v0_1::RetryPolicy::add_to_linker::<CallState, HasSelf<CallState>>(
                    &mut linker,
                    |s| s,
                )?
            }
            WitVersion::V0_2_0 => {
                v0_2::RetryPolicy::add_to_linker::<CallState, HasSelf<CallState>>(
                    &mut linker,
                    |s| s,
                )?
            }
            WitVersion::V0_3_0 => {
                v0_3::RetryPolicy::add_to_linker::<CallState, HasSelf<CallState>>(
                    &mut linker,
                    |s| s,
                )?
            }
            WitVersion::V0_4_0 => {
                v0_4::RetryPolicy::add_to_linker::<CallState, HasSelf<CallState>>(
                    &mut linker,
                    |s| s,
                )?
            }
            WitVersion::V0_5_0 => {
                v0_5::RetryPolicy::add_to_linker::<CallState, HasSelf<CallState>>(
                    &mut linker,
                    |s| s,
                )?
            }
        }
        if imports_wasi {
            wasi::add_to_linker(&mut linker, component)?;
        }
        let pre: InstancePre<CallState> = linker.instantiate_pre(component)?;
        if wasi::needs_fiber(component) {
            if version != WitVersion::V0_5_0 || exports_hedging(component) {
                wasmtime::bail!(
                    "it imports WASI 0.3's async functions, which this host links only for a policy built for the world retry-policy of rebound:policy@0.5.0"
                );
            }
            return Ok(WorldPre::V0_5OnFiber(v0_5::on_fiber::RetryPolicyPre::new(pre)?));
        }
        Ok(match version {
            WitVersion::V0_1_0 => WorldPre::V0_1(v0_1::RetryPolicyPre::new(pre)?),
            WitVersion::V0_2_0 => WorldPre::V0_2(v0_2::RetryPolicyPre::new(pre)?),
            WitVersion::V0_3_0 => WorldPre::V0_3(v0_3::RetryPolicyPre::new(pre)?),
            WitVersion::V0_4_0 => WorldPre::V0_4(v0_4::RetryPolicyPre::new(pre)?),
            WitVersion::V0_5_0 if exports_hedging(component) => {
                WorldPre::V0_5Hedging(v0_5::hedging::HedgingPolicyPre::new(pre)?)
            }
            WitVersion::V0_5_0 => WorldPre::V0_5(v0_5::RetryPolicyPre::new(pre)?),
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
            WorldPre::V0_5OnFiber(pre) => pre.engine(),
        }
    }

    /// Whether the component exports `hedging`.
    pub(crate) fn hedges(&self) -> bool {
        matches!(self, WorldPre::V0_5Hedging(_))
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
            WorldPre::V0_5OnFiber(pre) => {
                World::V0_5OnFiber(on_fiber::drive(pre.instantiate_async(store))?)
            }
        })
    }
}

/// Whether `component` exports the `hedging` interface of 0.5.0.
fn exports_hedging(component: &Component) -> bool {
    component
        .component_type()
        .exports(component.engine())
        .any(|(name, _)| name == HEDGING_EXPORT)
}

/// An instance's exports, of the version it was built for.
pub(crate) enum World {
    V0_1(v0_1::RetryPolicy),
    V0_2(v0_2::RetryPolicy),
    V0_3(v0_3::RetryPolicy),
    V0_4(v0_4::RetryPolicy),
    V0_5(v0_5::RetryPolicy),
    V0_5Hedging(v0_5::hedging::HedgingPolicy),
    V0_5OnFiber(v0_5::on_fiber::RetryPolicy),
}

impl World {
    /// `strategy.configure`: the policy's verdict on its parameters.
    pub(crate) fn configure(
        &self,
        store: &mut Store<CallState>,
        params: &[(String, String)],
    ) -> wasmtime::Result<Result<(), String>> {
        match self {
            World::V0_1(policy) => policy
                .rebound_policy_strategy()
                .call_configure(store, params),
            World::V0_2(policy) => policy
                .rebound_policy_strategy()
                .call_configure(store, params),
            World::V0_3(policy) => policy
                .rebound_policy_strategy()
                .call_configure(store, params),
            World::V0_4(policy) => policy
                .rebound_policy_strategy()
                .call_configure(store, params),
            World::V0_5(policy) => policy
                .rebound_policy_strategy()
                .call_configure(store, params),
            World::V0_5Hedging(policy) => policy
                .rebound_policy_strategy()
                .call_configure(store, params),
            World::V0_5OnFiber(policy) => {
                on_fiber::drive(policy.rebound_policy_strategy().call_configure(store, params))
            }
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
        match self {
            World::V0_1(policy) => {
                let answer = policy.rebound_policy_strategy().call_retry_after(
                    store,
                    v0_1::request_to_wit(request, now),
                    &v0_1::reason_to_wit(reason),
                )?;
                Ok(v0_1::action_to_host(&answer, request, reason))
            }
            World::V0_2(policy) => {
                let answer = policy
                    .rebound_policy_strategy()
                    .call_retry_after(&mut *store, &v0_2::reason_to_wit(reason))?;
                let best_effort = matches!(answer, v0_3::wit::RetryAction::BestEffort);
                let action = v0_2::action_to_host(&answer, request, reason);
                Ok(honour_pushback(best_effort, action, store.data()))
            }
            World::V0_3(policy) => {
                let answer = policy
                    .rebound_policy_strategy()
                    .call_retry_after(&mut *store, &v0_3::reason_to_wit(reason))?;
                let best_effort = matches!(answer, v0_3::wit::RetryAction::BestEffort);
                let action = v0_3::action_to_host(&answer, request, reason);
                Ok(honour_pushback(best_effort, action, store.data()))
            }
            World::V0_4(policy) => {
                let answer = policy
                    .rebound_policy_strategy()
                    .call_retry_after(&mut *store, &v0_4::reason_to_wit(reason))?;
                Ok(current_action(&answer, request, reason, store.data()))
            }
            World::V0_5(policy) => {
                let answer = policy
                    .rebound_policy_strategy()
                    .call_retry_after(&mut *store, &v0_5::reason_to_wit(reason))?;
                Ok(current_action(&answer, request, reason, store.data()))
            }
            World::V0_5Hedging(policy) => {
                let answer = policy
                    .rebound_policy_strategy()
                    .call_retry_after(&mut *store, &v0_5::reason_to_wit(reason))?;
                Ok(current_action(&answer, request, reason, store.data()))
            }
            World::V0_5OnFiber(policy) => {
                let reason_wit = v0_5::reason_to_wit(reason);
                let strategy = policy.rebound_policy_strategy();
                let answer = on_fiber::drive(strategy.call_retry_after(&mut *store, &reason_wit))?;
                Ok(current_action(&answer, request, reason, store.data()))
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
        use v0_5::hedging::exports::rebound::policy::hedging as wit;
        let World::V0_5Hedging(policy) = self else {
            return Ok(None);
        };
        let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let flight = wit::InFlight {
            asked: match flight.asked {
                Asked::AfterCopy => wit::Asked::AfterCopy,
                Asked::AfterFailure => wit::Asked::AfterFailure,
            },
            copies: flight.copies,
            outstanding: flight.outstanding,
            since_first_ms: ms(flight.since_first),
            since_last_ms: ms(flight.since_last),
            failures: flight.failures.iter().map(v0_5::reason_to_wit).collect(),
        };
        let answer = policy
            .rebound_policy_hedging()
            .call_next_copy(store, &flight)?;
        Ok(Some(match answer {
            wit::HedgeAction::Wait => HedgeAction::Wait,
            wit::HedgeAction::Send(hedge) => HedgeAction::SendAfter {
                after: std::time::Duration::from_millis(hedge.delay_ms),
                node: match hedge.node {
                    v0_5::wit::NodeChoice::Same => NodeChoice::Same,
                    v0_5::wit::NodeChoice::Next => NodeChoice::Next,
                },
            },
        }))
    }

    /// `hedging.is-fatal` for a copy failed for `reason`, or none when the component does not
    /// hedge.
    pub(crate) fn is_fatal(
        &self,
        store: &mut Store<CallState>,
        reason: &RetryReason,
    ) -> wasmtime::Result<Option<bool>> {
        let World::V0_5Hedging(policy) = self else {
            return Ok(None);
        };
        policy
            .rebound_policy_hedging()
            .call_is_fatal(store, &v0_5::reason_to_wit(reason))
            .map(Some)
    }
}

/// The engine's action for the answer of a 0.4.0 or 0.5.0 policy (they share their types).
fn current_action(
    answer: &v0_5::wit::RetryAction,
    request: &Request,
    reason: &RetryReason,
    call: &CallState,
) -> RetryAction {
    let best_effort = matches!(answer, v0_5::wit::RetryAction::BestEffort);
    honour_pushback(
        best_effort,
        v0_5::action_to_host(answer, request, reason),
        call,
    )
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
