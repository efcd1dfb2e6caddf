//! The registry's published state: the configuration, its slots and the routes from a
//! request to its policy. Replaced whole by a new configuration.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::build::BuildContext;
use super::client_budgets::ClientBudgets;
use super::config::RegistryConfig;
use super::error::RegistryError;
use super::route::Route;
use super::slot::Slot;
use super::status::PolicyStatus;
use super::version::PolicyVersion;
use crate::breaker::NodeBreakers;
use crate::decision_log::DecisionLog;
use crate::hedge::{Hedging, HedgingPolicy};
use crate::request::{Request, RequestType, Service};
use crate::throttle::ScopedThrottle;
use crate::traffic_budget::TrafficBudget;

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
    pub budgets: HashMap<String, Arc<TrafficBudget>>,
    /// Whether an outcome report counts anywhere: a budget, a throttle, or a policy that
    /// counts outcomes.
    /// Worked out when the table is built: only built-ins count outcomes, and a built-in
    /// changes only with the configuration (a reload swaps components).
    pub counts_outcomes: bool,
    /// Whether some policy hedges: worked out when the table is built, and set when a version
    /// that hedges is installed while it serves ([`Table::installing`]).
    pub hedges: Arc<AtomicBool>,
    /// The budgets kept per client, by name, kept across configurations the same way.
    pub client_budgets: HashMap<String, Arc<ClientBudgets>>,
    /// The budget of each policy that has one, by policy name.
    policy_budgets: HashMap<String, PolicyBudget>,
    /// The retry throttles by name, kept across configurations while their parameters stay.
    pub throttles: HashMap<String, Arc<ScopedThrottle>>,
    /// The throttle of each policy that has one, by policy name.
    policy_throttles: HashMap<String, Arc<ScopedThrottle>>,
    /// The per-node circuit breakers by name, kept across configurations while their
    /// parameters stay.
    pub breakers: HashMap<String, Arc<NodeBreakers>>,
    /// The breakers of each policy that has them, by policy name.
    policy_breakers: HashMap<String, Arc<NodeBreakers>>,
    /// The decision log, kept across configurations while its table stays the same.
    pub decision_log: Option<Arc<DecisionLog>>,
}

impl Table {
    pub(super) fn slot(&self, name: &str) -> Result<&Arc<Slot>, RegistryError> {
        self.slots
            .get(name)
            .ok_or_else(|| RegistryError::UnknownPolicy {
                name: name.to_owned(),
                known: self
                    .config
                    .policies
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// The status of `slot`'s policy, with the budget it draws from.
    pub(super) fn policy_status(&self, slot: &Slot) -> PolicyStatus {
        PolicyStatus {
            budget: self.config.policy_budgets.get(&slot.name).cloned(),
            ..slot.status()
        }
    }

    /// The retry budget policy `name` draws from for `request`, if it has one.
    pub(super) fn budget_for(&self, name: &str, request: &Request) -> Option<Arc<TrafficBudget>> {
        if self.policy_budgets.is_empty() {
            return None;
        }
        let budget = self.policy_budgets.get(name)?;
        Some(match &budget.per_client {
            Some(clients) => clients.for_request(request, &budget.common),
            None => Arc::clone(&budget.common),
        })
    }

    /// The retry throttle policy `name` counts its failures in, if it has one.
    pub(super) fn throttle_for(&self, name: &str) -> Option<&Arc<ScopedThrottle>> {
        if self.policy_throttles.is_empty() {
            return None;
        }
        self.policy_throttles.get(name)
    }

    /// How `request` is hedged at `now`, if its policy's strategy hedges: with the policy's
    /// budget and throttle.
    pub(super) fn hedging_for(
        &self,
        request: &Request,
        now: std::time::Instant,
    ) -> Option<Hedging> {
        if !self.hedges.load(Ordering::Relaxed) {
            return None;
        }
        let slot = self.resolve(request).ok()?;
        let policy = match slot.definition.speculative_execution {
            Some(speculative) => Arc::new(speculative) as Arc<dyn HedgingPolicy>,
            None => slot.active.load().strategy().hedging()?,
        };
        Some(
            Hedging::new(policy)
                .with_budget(self.budget_for(&slot.name, request))
                .with_throttle(
                    self.throttle_for(&slot.name)
                        .map(|t| t.for_request(request, now)),
                ),
        )
    }

    /// The circuit breakers admitting `request`'s attempts, if its policy has them.
    /// `version` is about to be installed in one of the table's slots (a reload, a rollback, a
    /// promotion): if it hedges, the table now asks its slots how requests are hedged.
    pub(super) fn installing(&self, version: &PolicyVersion) {
        if version.strategy().hedging().is_some() {
            self.hedges.store(true, Ordering::Relaxed);
        }
    }

    /// Whether some policy has breakers.
    pub(super) fn has_breakers(&self) -> bool {
        !self.policy_breakers.is_empty()
    }

    pub(super) fn breakers_for(&self, request: &Request) -> Option<Arc<NodeBreakers>> {
        if self.policy_breakers.is_empty() {
            return None;
        }
        let slot = self.resolve(request).ok()?;
        self.policy_breakers.get(&slot.name).cloned()
    }

    /// The policy deciding for `request`: its own policy name, else its profile's dedicated
    /// policy, else the first `[[routes]]` entry it matches (HTTP requests and gRPC calls),
    /// else the route of its request type, else of its service, else the default.
    pub(super) fn resolve(&self, request: &Request) -> Result<&Arc<Slot>, RegistryError> {
        if let Some(name) = request.policy_name() {
            return self.slot(name);
        }
        if let Some(profile) = request.profile_name() {
            match self.profiles.get(profile) {
                Some(Some(slot)) => return Ok(slot),
                Some(None) => {}
                None => {
                    return Err(RegistryError::UnknownProfile {
                        name: profile.to_owned(),
                        known: self.profiles.keys().cloned().collect::<Vec<_>>().join(", "),
                    })
                }
            }
        }
        if !self.routes.is_empty() && matches!(request.service(), Service::Http | Service::Grpc) {
            if let Some((_, slot)) = self.routes.iter().find(|(r, _)| r.matches(request)) {
                return Ok(slot);
            }
        }
        Ok(self
            .request_types
            .get(&request.request_type())
            .or_else(|| self.services.get(&request.service()))
            .unwrap_or(&self.default))
    }
}

/// The budget a policy draws from: one for all its requests, or one per client.
#[derive(Clone)]
struct PolicyBudget {
    common: Arc<TrafficBudget>,
    per_client: Option<Arc<ClientBudgets>>,
}

/// What becomes of a policy that fails to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failed {
    /// The configuration is refused.
    Refuse,
    /// The policy starts as a stand-in answering its fail-safe.
    StandIn,
}

/// Builds the state for `config`, keeping the slots (versions, counters, shadows) of
/// policies whose definition did not change.
///
/// A policy that fails to build refuses the whole configuration, except with `Failed::StandIn`
/// (a start that is not strict): it is then a stand-in answering its fail-safe, its error in
/// its slot's status.
pub(super) fn build_table(
    ctx: &BuildContext<'_>,
    config: RegistryConfig,
    old: Option<&Table>,
    failed: Failed,
) -> Result<Table, RegistryError> {
    let budgets: HashMap<String, Arc<TrafficBudget>> = config
        .budgets
        .iter()
        .map(|(name, budget)| {
            let kept = old
                .and_then(|table| table.budgets.get(name))
                .filter(|running| running.config() == *budget);
            let budget = match kept {
                Some(running) => Arc::clone(running),
                None => Arc::new(
                    TrafficBudget::new(*budget)
                        .expect("validated with the configuration")
                        .named(name),
                ),
            };
            (name.clone(), budget)
        })
        .collect();
    let client_budgets: HashMap<String, Arc<ClientBudgets>> = config
        .budget_scopes
        .iter()
        .map(|(name, scope)| {
            let made_with = (config.budgets[name], scope);
            let kept = old
                .and_then(|table| table.client_budgets.get(name))
                .filter(|running| running.made_with() == made_with);
            let clients = match kept {
                Some(running) => Arc::clone(running),
                None => Arc::new(ClientBudgets::new(name, made_with.0, scope.clone())),
            };
            (name.clone(), clients)
        })
        .collect();
    let policy_budgets = config
        .policy_budgets
        .iter()
        .map(|(policy, budget)| {
            let budget = PolicyBudget {
                common: Arc::clone(&budgets[budget]),
                per_client: client_budgets.get(budget).cloned(),
            };
            (policy.clone(), budget)
        })
        .collect();
    let throttles: HashMap<String, Arc<ScopedThrottle>> = config
        .throttles
        .iter()
        .map(|(name, definition)| {
            let kept = old
                .and_then(|table| table.throttles.get(name))
                .filter(|running| {
                    running.made_with()
                        == (definition.config, &definition.scope, definition.max_scopes)
                });
            let throttle = match kept {
                Some(running) => Arc::clone(running),
                None => Arc::new(
                    ScopedThrottle::new(
                        definition.config,
                        definition.scope.clone(),
                        definition.max_scopes,
                        std::time::Instant::now(),
                    )
                    .expect("validated with the configuration"),
                ),
            };
            (name.clone(), throttle)
        })
        .collect();
    let policy_throttles = (config.policy_throttles.iter())
        .map(|(policy, throttle)| (policy.clone(), Arc::clone(&throttles[throttle])))
        .collect();
    let breakers: HashMap<String, Arc<NodeBreakers>> = (config.breakers.iter())
        .map(|(name, definition)| {
            let kept = old
                .and_then(|table| table.breakers.get(name))
                .filter(|running| running.made_with() == (definition.config, definition.max_nodes));
            let breakers = match kept {
                Some(running) => Arc::clone(running),
                None => Arc::new(
                    NodeBreakers::new(definition.config, definition.max_nodes)
                        .expect("validated with the configuration"),
                ),
            };
            (name.clone(), breakers)
        })
        .collect();
    let policy_breakers = (config.policy_breakers.iter())
        .map(|(policy, name)| (policy.clone(), Arc::clone(&breakers[name])))
        .collect();
    // The running log stays while the `[decision_log]` table does (an application's own log,
    // installed with `PolicyRegistry::set_decision_log`, too).
    let decision_log = match (old, &config.decision_log) {
        (Some(old), log) if old.config.decision_log == *log => old.decision_log.clone(),
        (_, None) => None,
        (_, Some(log)) => Some(Arc::new(DecisionLog::open(log).map_err(|error| {
            RegistryError::DecisionLog {
                path: log.file.clone().unwrap_or_default(),
                error,
            }
        })?)),
    };
    let no_slots = HashMap::new();
    let old = old.map_or(&no_slots, |table| &table.slots);
    let mut slots = HashMap::new();
    for (name, definition) in &config.policies {
        let slot = match old.get(name) {
            Some(slot) if slot.definition == *definition => Arc::clone(slot),
            other => {
                let known = other.map(|s| s.versions()).unwrap_or_default();
                let version = match PolicyVersion::build(name, definition, ctx, &known) {
                    Ok(version) => version,
                    Err(error) if failed == Failed::StandIn => {
                        tracing::error!(policy = &**name, %error,
                            "policy failed to load; it answers its fail-safe until a reload succeeds (strict_start = true refuses to start instead)");
                        let slot = Slot::new(
                            name,
                            definition.clone(),
                            PolicyVersion::stand_in(name, definition, &error),
                        );
                        slot.load_failed(error.to_string());
                        slots.insert(name.clone(), Arc::new(slot));
                        continue;
                    }
                    Err(error) => return Err(error.into()),
                };
                #[cfg(feature = "wasm")]
                let origin = version.origin();
                #[cfg(not(feature = "wasm"))]
                let origin: Option<()> = None;
                tracing::info!(policy = &**name, version = version.version(),
                    source = %version.source(), load_ms = version.load_time().as_millis() as u64,
                    origin = ?origin, "policy loaded");
                Arc::new(Slot::new(name, definition.clone(), version))
            }
        };
        slots.insert(name.clone(), slot);
    }
    // A configuration made in code may name a policy it lacks (a file's is checked when
    // read): refused here rather than looked up blindly.
    let referenced = std::iter::once(&config.default_policy)
        .chain(config.profiles.values().flatten())
        .chain(config.services.values())
        .chain(config.request_types.values())
        .chain(config.routes.iter().map(|route| &route.policy));
    if let Some(missing) = referenced
        .into_iter()
        .find(|name| !slots.contains_key(*name))
    {
        return Err(RegistryError::UnknownPolicy {
            name: missing.clone(),
            known: config
                .policies
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let by_name = |name: &String| Arc::clone(&slots[name]);
    let counts_outcomes = !budgets.is_empty()
        || !throttles.is_empty()
        || (slots.values()).any(|slot| slot.active.load().strategy().counts_outcomes());
    let hedges = (slots.values()).any(|slot| hedges(slot));
    if hedges {
        warn_of_unhedged_routes(&config, &slots);
    }
    Ok(Table {
        counts_outcomes,
        hedges: Arc::new(AtomicBool::new(hedges)),
        default: by_name(&config.default_policy),
        profiles: config
            .profiles
            .iter()
            .map(|(p, policy)| (p.clone(), policy.as_ref().map(by_name)))
            .collect(),
        services: config
            .services
            .iter()
            .map(|(s, p)| (*s, by_name(p)))
            .collect(),
        request_types: config
            .request_types
            .iter()
            .map(|(t, p)| (*t, by_name(p)))
            .collect(),
        routes: (config.routes.iter())
            .map(|route| (route.clone(), by_name(&route.policy)))
            .collect(),
        slots,
        config,
        budgets,
        client_budgets,
        policy_budgets,
        throttles,
        policy_throttles,
        breakers,
        policy_breakers,
        decision_log,
    })
}

/// Warns of a request type routed to a policy that hedges when requests of that type are not
/// idempotent unless one declares it: the host never hedges them (docs/hedging.md).
fn warn_of_unhedged_routes(config: &RegistryConfig, slots: &HashMap<String, Arc<Slot>>) {
    for (request_type, policy) in &config.request_types {
        let Some(slot) = slots.get(policy) else {
            continue;
        };
        let hedging = hedges(slot);
        // Idempotent neither when read-only nor as a GET: only a request's own declaration
        // makes it so.
        let never = !request_type.is_idempotent(true, Some(crate::request::HttpMethod::Get));
        if hedging && never {
            tracing::warn!(request_type = %request_type, policy = &**policy,
                "policy hedges, but requests of this type are not idempotent unless one declares it: they are never hedged");
        }
    }
}

/// Whether `slot`'s policy hedges: its `speculative_execution`, or its strategy's own hedging.
fn hedges(slot: &Slot) -> bool {
    slot.definition.speculative_execution.is_some()
        || slot.active.load().strategy().hedging().is_some()
}
