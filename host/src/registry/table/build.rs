//! Building the published table for a configuration. A reload must keep what it did not change
//! (slots of unchanged policies with their versions, counters and shadows; budgets, throttles and
//! breakers whose parameters stay, by the one rule of `kept`), resolve each policy's controls
//! once, and refuse a configuration that names a policy it lacks, before anything is published.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::{controls_in, Table};
use crate::breaker::NodeBreakers;
use crate::config::{ControlNames, RegistryConfig, SpeculativeExecution};
use crate::controls::{BudgetControl, Controls, PerClient};
use crate::decide_error::DecideError;
use crate::decision_log::DecisionLog;
use crate::hedge::{HedgingPolicy, QuantileSpeculativeExecution};
use crate::latency::{LatencySketches, DEFAULT_KEYS};
use crate::registry::build::BuildContext;
use crate::registry::client_budgets::ClientBudgets;
use crate::registry::error::RegistryError;
use crate::registry::kept::{keep_or_make, Named};
use crate::registry::slot::Slot;
use crate::registry::version::PolicyVersion;
use crate::strategy::RetryStrategy;
use crate::throttle::ScopedThrottle;
use crate::traffic_budget::TrafficBudget;

/// What becomes of a policy that fails to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::registry) enum Failed {
    /// The configuration is refused.
    Refuse,
    /// The policy starts as a stand-in answering its fail-safe.
    StandIn,
}

/// The named budgets, throttles and breakers of a configuration, and the latencies its
/// quantile delays read.
struct NamedControls {
    budgets: Named<TrafficBudget>,
    client_budgets: Named<ClientBudgets>,
    throttles: Named<ScopedThrottle>,
    breakers: Named<NodeBreakers>,
    latencies: Arc<LatencySketches>,
}

/// Builds the state for `config`, keeping the slots (versions, counters, shadows) of
/// policies whose definition did not change.
///
/// A policy that fails to build refuses the whole configuration, except with `Failed::StandIn`
/// (a start that is not strict): it is then a stand-in answering its fail-safe, its error in
/// its slot's status.
pub(in crate::registry) fn build_table(
    ctx: &BuildContext<'_>,
    config: RegistryConfig,
    old: Option<&Table>,
    failed: Failed,
) -> Result<Table, RegistryError> {
    let named = NamedControls::build(&config, old);
    let decision_log = decision_log(&config, old)?;
    let slots = build_slots(ctx, &config, old, failed)?;
    check_references(&config, &slots)?;
    let controls = policy_controls(&config, &named);
    let some_slot = |asks: fn(&Controls, &dyn RetryStrategy) -> bool| {
        (slots.values()).any(|slot| {
            asks(
                controls_in(&controls, &slot.name),
                slot.active.load().strategy(),
            )
        })
    };
    let hedges = some_slot(Controls::hedges);
    if hedges {
        warn_of_unhedged_routes(&config, &slots, &controls);
    }
    let has_controls = hedges
        || some_slot(Controls::counts_outcomes)
        || some_slot(Controls::times_attempts)
        || config
            .routes
            .iter()
            .any(|route| route.attempt_timeout.is_some())
        || !controls.is_empty();
    let by_name = |name: &String| Arc::clone(&slots[name]);
    Ok(Table {
        has_controls: Arc::new(AtomicBool::new(has_controls)),
        default: by_name(&config.default_policy),
        profiles: (config.profiles.iter())
            .map(|(p, policy)| (p.clone(), policy.as_ref().map(by_name)))
            .collect(),
        services: (config.services.iter())
            .map(|(s, p)| (*s, by_name(p)))
            .collect(),
        request_types: (config.request_types.iter())
            .map(|(t, p)| (*t, by_name(p)))
            .collect(),
        routes: (config.routes.iter())
            .map(|route| (route.clone(), by_name(&route.policy)))
            .collect(),
        controls,
        slots,
        config,
        budgets: named.budgets,
        client_budgets: named.client_budgets,
        throttles: named.throttles,
        breakers: named.breakers,
        latencies: named.latencies,
        decision_log,
    })
}

impl NamedControls {
    /// The budgets, throttles and breakers `config` names, each running one of `old` whose
    /// parameters did not change kept.
    fn build(config: &RegistryConfig, old: Option<&Table>) -> Self {
        let budgets = keep_or_make(
            &config.budgets,
            old.map(|table| &table.budgets),
            |running, budget| running.config() == *budget,
            |name, budget| {
                TrafficBudget::new(*budget)
                    .expect("validated with the configuration")
                    .named(name)
            },
        );
        let scoped = (config.budget_scopes.iter())
            .map(|(name, scope)| (name.clone(), (config.budgets[name], scope)))
            .collect();
        let client_budgets = keep_or_make(
            &scoped,
            old.map(|table| &table.client_budgets),
            |running, made_with| running.made_with() == *made_with,
            |name, (budget, scope)| ClientBudgets::new(name, *budget, (*scope).clone()),
        );
        let throttles = keep_or_make(
            &config.throttles,
            old.map(|table| &table.throttles),
            |running, definition| {
                running.made_with() == (definition.config, &definition.scope, definition.max_scopes)
            },
            |_, definition| {
                ScopedThrottle::new(
                    definition.config,
                    definition.scope.clone(),
                    definition.max_scopes,
                    std::time::Instant::now(),
                )
                .expect("validated with the configuration")
            },
        );
        let breakers = keep_or_make(
            &config.breakers,
            old.map(|table| &table.breakers),
            |running, definition| running.made_with() == (definition.config, definition.max_nodes),
            |_, definition| {
                NodeBreakers::new(definition.config, definition.max_nodes)
                    .expect("validated with the configuration")
            },
        );
        NamedControls {
            budgets,
            client_budgets,
            throttles,
            breakers,
            // What was learned of the nodes outlives a configuration.
            latencies: old.map_or_else(
                || Arc::new(LatencySketches::new(DEFAULT_KEYS)),
                |table| Arc::clone(&table.latencies),
            ),
        }
    }
}

/// The controls of each policy that has some: the budget, throttle and breakers it names, and
/// its `speculative_execution`, `attempt_timeout_ms` and `hedge_on_attempt_timeout`. Adding a
/// control is one line here.
fn policy_controls(
    config: &RegistryConfig,
    named: &NamedControls,
) -> HashMap<String, Arc<Controls>> {
    let mut controls = HashMap::new();
    let names_none = ControlNames::default();
    for (policy, definition) in &config.policies {
        let mut these = Controls::default();
        let names = config.policy_controls.get(policy).unwrap_or(&names_none);
        if let Some(budget) = &names.budget {
            let clients = (named.client_budgets.get(budget).cloned())
                .map(|clients| clients as Arc<dyn PerClient>);
            let common = Arc::clone(&named.budgets[budget]);
            these = these.with_budget(BudgetControl::per_client(common, clients));
        }
        if let Some(throttle) = &names.throttle {
            these = these.with_throttle(Arc::clone(&named.throttles[throttle]));
        }
        if let Some(breakers) = &names.breaker {
            these = these.with_breakers(Arc::clone(&named.breakers[breakers]));
        }
        match definition.speculative_execution {
            Some(SpeculativeExecution::Constant(constant)) => {
                these = these.with_hedging(Arc::new(constant) as Arc<dyn HedgingPolicy>);
            }
            Some(SpeculativeExecution::Quantile {
                delay,
                max_executions,
            }) => {
                let latencies = Arc::clone(&named.latencies);
                let hedging = QuantileSpeculativeExecution::new(
                    delay,
                    max_executions,
                    Arc::clone(&latencies),
                )
                .expect("validated with the configuration");
                these = these
                    .with_hedging(Arc::new(hedging))
                    .with_latencies(latencies);
            }
            None => {}
        }
        if let Some(timeout) = definition.attempt_timeout {
            these = these.with_attempt_timeout(timeout);
        }
        if definition.hedge_on_attempt_timeout {
            these = these.with_hedge_on_attempt_timeout();
        }
        if definition.record_latencies {
            these = these.with_latencies(Arc::clone(&named.latencies));
        }
        if !these.is_empty() {
            controls.insert(policy.clone(), Arc::new(these));
        }
    }
    controls
}

/// The decision log: the running one while the `[decision_log]` table stays (an application's
/// own log, installed with `PolicyRegistry::set_decision_log`, too).
fn decision_log(
    config: &RegistryConfig,
    old: Option<&Table>,
) -> Result<Option<Arc<DecisionLog>>, RegistryError> {
    Ok(match (old, &config.decision_log) {
        (Some(old), log) if old.config.decision_log == *log => old.decision_log.clone(),
        (_, None) => None,
        (_, Some(log)) => Some(Arc::new(DecisionLog::open(log).map_err(|error| {
            RegistryError::DecisionLog {
                path: log.file.clone().unwrap_or_default(),
                error,
            }
        })?)),
    })
}

/// The slot of every policy: kept from `old` while its definition did not change, else a new
/// version built (or, with `Failed::StandIn`, a stand-in for one that fails to build).
fn build_slots(
    ctx: &BuildContext<'_>,
    config: &RegistryConfig,
    old: Option<&Table>,
    failed: Failed,
) -> Result<HashMap<String, Arc<Slot>>, RegistryError> {
    let no_slots = HashMap::new();
    let old = old.map_or(&no_slots, |table| &table.slots);
    let mut slots = HashMap::new();
    for (name, definition) in &config.policies {
        let slot = match old.get(name) {
            Some(slot) if slot.definition == *definition => Arc::clone(slot),
            other => {
                let known = other.map(|s| s.versions()).unwrap_or_default();
                match PolicyVersion::build(name, definition, ctx, &known) {
                    Ok(version) => {
                        log_loaded(name, &version);
                        Arc::new(Slot::new(name, definition.clone(), version))
                    }
                    Err(error) if failed == Failed::StandIn => {
                        tracing::error!(policy = &**name, %error,
                            "policy failed to load; it answers its fail-safe until a reload succeeds (strict_start = true refuses to start instead)");
                        let stand_in = PolicyVersion::stand_in(name, definition, &error);
                        let slot = Slot::new(name, definition.clone(), stand_in);
                        slot.load_failed(error.to_string());
                        Arc::new(slot)
                    }
                    Err(error) => return Err(error.into()),
                }
            }
        };
        slots.insert(name.clone(), slot);
    }
    Ok(slots)
}

/// Logs that policy `name` loaded as `version`.
fn log_loaded(name: &str, version: &PolicyVersion) {
    #[cfg(feature = "wasm")]
    let origin = version.origin();
    #[cfg(not(feature = "wasm"))]
    let origin: Option<()> = None;
    tracing::info!(policy = name, version = version.version(),
        source = %version.source(), load_ms = version.load_time().as_millis() as u64,
        origin = ?origin, "policy loaded");
}

/// A configuration made in code may name a policy it lacks (a file's is checked when read):
/// refused here rather than looked up blindly.
fn check_references(
    config: &RegistryConfig,
    slots: &HashMap<String, Arc<Slot>>,
) -> Result<(), RegistryError> {
    let referenced = std::iter::once(&config.default_policy)
        .chain(config.profiles.values().flatten())
        .chain(config.services.values())
        .chain(config.request_types.values())
        .chain(config.routes.iter().map(|route| &route.policy));
    match referenced
        .into_iter()
        .find(|name| !slots.contains_key(*name))
    {
        None => Ok(()),
        Some(missing) => Err(RegistryError::from(DecideError::UnknownPolicy {
            name: missing.clone(),
            known: (config.policies.keys().cloned())
                .collect::<Vec<_>>()
                .join(", "),
        })),
    }
}

/// Warns of a request type routed to a policy that hedges when requests of that type are not
/// idempotent unless one declares it: the host never hedges them (docs/hedging.md).
fn warn_of_unhedged_routes(
    config: &RegistryConfig,
    slots: &HashMap<String, Arc<Slot>>,
    controls: &HashMap<String, Arc<Controls>>,
) {
    for (request_type, policy) in &config.request_types {
        let Some(slot) = slots.get(policy) else {
            continue;
        };
        let hedging = controls_in(controls, policy).hedges(slot.active.load().strategy());
        // Idempotent neither when read-only nor as a GET: only a request's own declaration
        // makes it so.
        let never = !request_type.is_idempotent(true, Some(crate::request::HttpMethod::Get));
        if hedging && never {
            tracing::warn!(request_type = %request_type, policy = &**policy,
                "policy hedges, but requests of this type are not idempotent unless one declares it: they are never hedged");
        }
    }
}
