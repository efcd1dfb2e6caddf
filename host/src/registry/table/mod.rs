//! The registry's published state: the configuration, its slots, each policy's controls and the
//! routes from a request to its policy, so that a decision reads everything it needs from one
//! snapshot without a lock. Replaced whole by a new configuration (`build`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::client_budgets::ClientBudgets;
use super::error::RegistryError;
use super::kept::Named;
use super::slot::Slot;
use super::status::PolicyStatus;
use super::version::PolicyVersion;
use crate::breaker::NodeBreakers;
use crate::config::RegistryConfig;
use crate::config::Route;
use crate::controls::{Controls, PolicyControls};
use crate::decide_error::DecideError;
use crate::decision_log::DecisionLog;
use crate::latency::LatencySketches;
use crate::request::{Request, RequestType, Service};
use crate::throttle::ScopedThrottle;
use crate::traffic_budget::TrafficBudget;

mod build;

pub(super) use build::{build_table, Failed};

/// The published state: the configuration, its slots and routes. Replaced whole.
#[derive(Clone)]
pub(super) struct Table {
    pub config: RegistryConfig,
    pub slots: HashMap<String, Arc<Slot>>,
    default: Arc<Slot>,
    profiles: HashMap<String, Option<Arc<Slot>>>,
    services: HashMap<Service, Arc<Slot>>,
    request_types: HashMap<RequestType, Arc<Slot>>,
    /// `[[routes]]` with their policies, in file order.
    routes: Vec<(Route, Arc<Slot>)>,
    /// The retry budgets by name, kept across configurations while their parameters stay:
    /// for a budget kept per client, the common one.
    pub budgets: Named<TrafficBudget>,
    /// Whether some request's controls can act: some policy has a control, counts outcomes
    /// or hedges. Worked out when the table is built (only built-ins count outcomes, and a
    /// built-in changes only with the configuration), and set when a version that hedges is
    /// installed while it serves ([`Table::installing`]).
    pub has_controls: Arc<AtomicBool>,
    /// The budgets kept per client, by name, kept across configurations the same way.
    pub client_budgets: Named<ClientBudgets>,
    /// The retry throttles by name, kept across configurations while their parameters stay.
    pub throttles: Named<ScopedThrottle>,
    /// The per-node circuit breakers by name, kept across configurations while their
    /// parameters stay.
    pub breakers: Named<NodeBreakers>,
    /// The latencies of attempts, per authority, for the quantile delays of policies
    /// that hedge by them; kept across configurations.
    pub latencies: Arc<LatencySketches>,
    /// The controls of each policy that has some, by policy name.
    controls: HashMap<String, Arc<Controls>>,
    /// The decision log, kept across configurations while its table stays the same.
    pub decision_log: Option<Arc<DecisionLog>>,
}

impl Table {
    pub(super) fn slot(&self, name: &str) -> Result<&Arc<Slot>, RegistryError> {
        self.slots.get(name).ok_or_else(|| {
            RegistryError::from(DecideError::UnknownPolicy {
                name: name.to_owned(),
                known: self.known_policies(),
            })
        })
    }

    /// The configured policies' names, for an error naming an unknown one.
    fn known_policies(&self) -> String {
        (self.config.policies.keys().cloned())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The status of `slot`'s policy, with the budget it draws from.
    pub(super) fn policy_status(&self, slot: &Slot) -> PolicyStatus {
        PolicyStatus {
            budget: (self.config.policy_controls.get(&slot.name))
                .and_then(|names| names.budget.clone()),
            ..slot.status()
        }
    }

    /// The controls of policy `name`, if it has some.
    pub(super) fn controls_of(&self, name: &str) -> Option<&Arc<Controls>> {
        if self.controls.is_empty() {
            return None;
        }
        self.controls.get(name)
    }

    /// The controls of the policy deciding for `request` now: none, without resolving the
    /// request, when no policy has any.
    pub(super) fn controls_for(&self, request: &Request) -> PolicyControls {
        if !self.has_controls.load(Ordering::Relaxed) {
            return PolicyControls::default();
        }
        let Ok((slot, route)) = self.resolve_with_route(request) else {
            return PolicyControls::default();
        };
        let controls = self.controls_of(&slot.name).cloned();
        PolicyControls::new(controls, Arc::clone(&slot.active.load().strategy))
            .with_route_attempt_timeout(route.and_then(|route| route.attempt_timeout))
    }

    /// `version` is about to be installed in one of the table's slots (a reload, a rollback, a
    /// promotion): if it hedges or cuts attempts, the table now asks its slots for requests'
    /// controls.
    pub(super) fn installing(&self, version: &PolicyVersion) {
        let strategy = version.strategy();
        if strategy.hedging().is_some() || strategy.times_attempts() {
            self.has_controls.store(true, Ordering::Relaxed);
        }
    }

    /// The policy deciding for `request`: its own policy name, else its profile's dedicated
    /// policy, else the first `[[routes]]` entry it matches (HTTP requests and gRPC calls),
    /// else the route of its request type, else of its service, else the default.
    pub(super) fn resolve(&self, request: &Request) -> Result<&Arc<Slot>, DecideError> {
        self.resolve_with_route(request).map(|(slot, _)| slot)
    }

    /// [`resolve`](Self::resolve), with the `[[routes]]` entry that chose the policy, if one did.
    fn resolve_with_route(
        &self,
        request: &Request,
    ) -> Result<(&Arc<Slot>, Option<&Route>), DecideError> {
        if let Some(name) = request.policy() {
            let slot = self
                .slots
                .get(name)
                .ok_or_else(|| DecideError::UnknownPolicy {
                    name: name.to_owned(),
                    known: self.known_policies(),
                })?;
            return Ok((slot, None));
        }
        if let Some(profile) = request.profile() {
            match self.profiles.get(profile) {
                Some(Some(slot)) => return Ok((slot, None)),
                Some(None) => {}
                None => {
                    return Err(DecideError::UnknownProfile {
                        name: profile.to_owned(),
                        known: self.profiles.keys().cloned().collect::<Vec<_>>().join(", "),
                    })
                }
            }
        }
        if !self.routes.is_empty() && matches!(request.service(), Service::Http | Service::Grpc) {
            if let Some((route, slot)) = self.routes.iter().find(|(r, _)| r.matches(request)) {
                return Ok((slot, Some(route)));
            }
        }
        let slot = (self.request_types.get(&request.request_type()))
            .or_else(|| self.services.get(&request.service()))
            .unwrap_or(&self.default);
        Ok((slot, None))
    }
}

/// The controls of policy `name` in `controls`: none when it has none.
pub(super) fn controls_in<'c>(
    controls: &'c HashMap<String, Arc<Controls>>,
    name: &str,
) -> &'c Controls {
    static NO_CONTROLS: Controls = Controls::none();
    controls
        .get(name)
        .map_or(&NO_CONTROLS, |controls| &**controls)
}
