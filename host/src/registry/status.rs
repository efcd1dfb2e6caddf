//! Status snapshots of the registry and its policies, serialisable for the `rebound` binary's
//! API and for logs.

use std::collections::BTreeMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::client_budgets::ClientBudgets;
use super::reload_path::Watching;
use super::shadow::ShadowStatus;
use super::version::PolicyVersion;
use crate::breaker::{BreakerState, NodeBreakers};
use crate::throttle::{ScopedThrottle, ThrottleKind, ThrottleLevel};
use crate::traffic_budget::TrafficBudget;
#[cfg(feature = "wasm")]
use crate::wasm::{CacheStats, CodeOrigin, PolicyMetadata, WitVersion};

/// One version, as status reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct VersionStatus {
    /// The short version label.
    pub version: String,
    /// The content hash.
    pub hash: String,
    /// Where it was loaded from.
    pub source: String,
    /// When it was loaded, in milliseconds since the Unix epoch.
    pub loaded_at_unix_ms: u64,
    /// How long loading took (read, compile or cache fetch, configure, smoke calls), in µs.
    pub load_time_us: u64,
    /// Whether the machine code was compiled or cached (components only, feature `wasm`).
    #[cfg(feature = "wasm")]
    pub origin: Option<CodeOrigin>,
    /// The version of `rebound:policy` the component was built for (components only).
    #[cfg(feature = "wasm")]
    pub wit_version: Option<WitVersion>,
    /// What the component says about itself (its `rebound:policy` section), if anything.
    #[cfg(feature = "wasm")]
    pub metadata: Option<PolicyMetadata>,
    /// Decisions resolved to this version.
    pub decisions: u64,
}

impl VersionStatus {
    pub(crate) fn of(version: &PolicyVersion) -> Self {
        VersionStatus {
            version: version.version().to_owned(),
            hash: version.hash().to_owned(),
            source: version.source().to_string(),
            loaded_at_unix_ms: unix_ms(version.loaded_at()),
            load_time_us: u64::try_from(version.load_time().as_micros()).unwrap_or(u64::MAX),
            #[cfg(feature = "wasm")]
            origin: version.origin(),
            #[cfg(feature = "wasm")]
            wit_version: version.wit_version(),
            #[cfg(feature = "wasm")]
            metadata: version.component().and_then(|c| c.metadata()).cloned(),
            decisions: version.decisions(),
        }
    }
}

fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The status of one named policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PolicyStatus {
    /// The policy name.
    pub name: String,
    /// The active version.
    pub active: VersionStatus,
    /// The version kept for rollback.
    pub previous: Option<VersionStatus>,
    /// Whether the safety guard is lifted for this policy.
    pub guard_exempt: bool,
    /// Failed policy calls of the active version, by kind (components only).
    pub failures: BTreeMap<&'static str, u64>,
    /// Whether the active version is quarantined.
    pub quarantined: bool,
    /// Times the active version was quarantined.
    pub quarantines: u64,
    /// The active version's last call failure (kind and detail).
    pub last_failure: Option<String>,
    /// The active version's `host.retry-budget` buckets in use (at most
    /// [`MAX_BUCKETS_PER_POLICY`](crate::MAX_BUCKETS_PER_POLICY)).
    pub budget_buckets: usize,
    /// The active version's `host.retry-budget` calls refused a bucket (a name too long, one
    /// bucket too many): each got no token.
    pub budget_refusals: u64,
    /// Versions swapped in since the policy was defined (reloads, rollbacks, promotions).
    pub swaps: u64,
    /// The last reload error, cleared by the next successful reload.
    pub last_error: Option<String>,
    /// Reloads that failed (the running version kept serving).
    pub reload_failures: u64,
    /// The shadow trial, if one runs.
    pub shadow: Option<ShadowStatus>,
    /// The retry budget it draws from (`[budgets.NAME]`; its counters are in the registry's
    /// status), if any.
    pub budget: Option<String>,
}

/// The status of the registry.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RegistryStatus {
    /// Whether the configuration's and components' files are watched and reloaded;
    /// `stopped` when the reload thread ended without being asked to.
    pub watching: Watching,
    /// Reload steps that panicked (each caught: the running configuration stayed).
    pub reload_panics: u64,
    /// The last of them, with its message.
    pub last_reload_panic: Option<String>,
    /// The configuration file, if the registry was built from one.
    pub config_file: Option<String>,
    /// The last configuration reload error (the running configuration was kept).
    pub config_error: Option<String>,
    /// Configuration reloads that failed.
    pub config_reload_failures: u64,
    /// With policies from another source (the xDS source's, docs/xds.md "Precedence"): which of
    /// its tables are in effect beside the file's, which the file's replaced, and how many of
    /// its routes match before the file's.
    pub overlay: Option<crate::config::Precedence>,
    /// The default policy.
    pub default_policy: String,
    /// Every policy, by name.
    pub policies: Vec<PolicyStatus>,
    /// The compiled-artifact cache counters, if a cache is configured (feature `wasm`).
    #[cfg(feature = "wasm")]
    pub cache: Option<CacheStats>,
    /// The retry budgets, by name.
    pub budgets: Vec<BudgetStatus>,
    /// The retry throttles, by name.
    pub throttles: Vec<ThrottleStatus>,
    /// The per-node circuit breakers, by name.
    pub breakers: Vec<BreakerStatus>,
    /// The attempt latencies kept for quantile delays: the authorities and nodes with a
    /// sketch, and how many were evicted to stay within the cap.
    pub latencies: crate::latency::LatencyStats,
}

/// One `[breakers.NAME]` table, as status reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct BreakerStatus {
    /// Its name (`[breakers.NAME]`).
    pub name: String,
    /// The policies whose attempts it admits.
    pub policies: Vec<String>,
    /// How many times a node's breaker opened.
    pub opened: u64,
    /// The nodes whose breaker is not closed, with their state.
    pub nodes: Vec<NodeBreakerStatus>,
}

/// A node whose breaker is open or half open.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct NodeBreakerStatus {
    /// The node.
    pub node: String,
    /// `open` or `half_open`.
    pub state: BreakerState,
}

impl BreakerStatus {
    /// The status of `breakers`, named `name`, admitting the attempts of `policies`.
    pub(crate) fn of(name: &str, breakers: &NodeBreakers, policies: Vec<String>) -> Self {
        BreakerStatus {
            name: name.to_owned(),
            policies,
            opened: breakers.opened(),
            nodes: (breakers.each().into_iter())
                .map(|(node, breaker)| NodeBreakerStatus {
                    node,
                    state: breaker.state(),
                })
                .filter(|node| node.state != BreakerState::Closed)
                .collect(),
        }
    }
}

/// One retry throttle, as status reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ThrottleStatus {
    /// Its name (`[throttles.NAME]`).
    pub name: String,
    /// `tokens` or `adaptive`.
    pub kind: &'static str,
    /// What it is kept per: `policy`, `node`, `authority` or `client_context.KEY`.
    pub per: String,
    /// The policies counting their failures in it.
    pub policies: Vec<String>,
    /// The scopes with a throttle of their own.
    pub scopes: usize,
    /// Scopes evicted to make room for others (those least in use).
    pub scopes_evicted: u64,
    /// Retries refused (RETRY_THROTTLED; every scope's, evicted ones included).
    pub refusals: u64,
    /// The common throttle's token count (`tokens`).
    pub tokens: Option<f64>,
    /// The common throttle's refusal probability (`adaptive`).
    pub refusal_probability: Option<f64>,
}

impl ThrottleStatus {
    /// The status of `throttle`, named `name`, counted in by `policies`.
    pub(crate) fn of(name: &str, throttle: &ScopedThrottle, policies: Vec<String>) -> Self {
        let now = Instant::now();
        let (config, scope, _) = throttle.made_with();
        let each = throttle.each();
        let (evicted, forgotten_refusals) = throttle.forgotten();
        let (tokens, refusal_probability) = match each[0].1.level_at(now) {
            ThrottleLevel::Tokens(tokens) => (Some(tokens), None),
            ThrottleLevel::RefusalProbability(p) => (None, Some(p)),
        };
        ThrottleStatus {
            name: name.to_owned(),
            kind: match config.kind {
                ThrottleKind::Tokens { .. } => "tokens",
                ThrottleKind::Adaptive(_) => "adaptive",
            },
            per: scope.to_string(),
            policies,
            scopes: each.len() - 1,
            scopes_evicted: evicted,
            refusals: forgotten_refusals + each.iter().map(|(_, t)| t.refusals()).sum::<u64>(),
            tokens,
            refusal_probability,
        }
    }
}

/// One retry budget, as status reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct BudgetStatus {
    /// Its name (`[budgets.NAME]`).
    pub name: String,
    /// Retries allowed as a percentage of requests.
    pub percent: f64,
    /// Retries allowed per second whatever the traffic.
    pub min_per_second: u32,
    /// The window, in milliseconds.
    pub ttl_ms: u64,
    /// The policies drawing from it.
    pub policies: Vec<String>,
    /// Requests deposited (every client's, for a budget kept per client).
    pub deposits: u64,
    /// Retries granted (every client's).
    pub withdrawals: u64,
    /// Retries refused (RETRY_BUDGET_EXHAUSTED; every client's).
    pub refusals: u64,
    /// Retries it would grant now (for a budget kept per client, its common budget: requests
    /// naming no client, and clients past `max_clients`).
    pub balance: u64,
    /// For a budget kept per client, the client-context entry naming the client.
    pub per: Option<String>,
    /// For a budget kept per client, the clients with a budget of their own.
    pub clients: usize,
}

impl BudgetStatus {
    /// The status of `budget`, drawn from by `policies`, with its clients' if it is kept per
    /// client.
    pub(crate) fn of(
        budget: &TrafficBudget,
        clients: Option<&ClientBudgets>,
        policies: Vec<String>,
    ) -> Self {
        let config = budget.config();
        let now = Instant::now();
        let mut stats = budget.stats_at(now);
        let each = clients.map(ClientBudgets::each).unwrap_or_default();
        for client in &each {
            let client = client.stats_at(now);
            stats.deposits += client.deposits;
            stats.withdrawals += client.withdrawals;
            stats.refusals += client.refusals;
        }
        BudgetStatus {
            per: clients.map(|c| format!("client_context.{}", c.made_with().1.key)),
            clients: each.len(),
            name: budget.name().to_owned(),
            percent: config.percent,
            min_per_second: config.min_per_second,
            ttl_ms: config.ttl_ms,
            policies,
            deposits: stats.deposits,
            withdrawals: stats.withdrawals,
            refusals: stats.refusals,
            balance: stats.balance,
        }
    }
}
