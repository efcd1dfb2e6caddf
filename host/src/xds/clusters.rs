//! What an Envoy cluster says about retries, as Rebound's controls: gRFC A44 reads no cluster
//! field for retries, and Envoy keeps two there. A cluster's `retry_budget` (in its default
//! priority's circuit-breaker thresholds) bounds retries in proportion to the requests it
//! carries, which is what Rebound's budgets do; its outlier detection's failure-percentage
//! ejection takes a host out once too many of its requests fail, which is what Rebound's
//! per-node breakers do. Each becomes a table (`[budgets."xds/cluster/NAME"]`,
//! `[breakers."xds/cluster/NAME"]`) that the policy of every route forwarding to the cluster
//! names. Envoy's concurrency limits (`max_connections`, `max_pending_requests`,
//! `max_requests`, `max_retries`) bound a connection pool rather than decide a retry; they and
//! the other ejection algorithms are reported, not read (docs/xds.md "Clusters").

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use toml::{Table, Value};

use crate::config::ConfigOverlay;
use crate::field_error::FieldError;

/// A cluster: its name, its circuit-breaker thresholds and its outlier detection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cluster {
    /// Its name, as routes name it.
    pub name: String,
    /// `circuit_breakers.thresholds`, in order.
    pub thresholds: Vec<Thresholds>,
    /// `outlier_detection`, when set.
    pub outlier_detection: Option<OutlierDetection>,
}

/// One priority's circuit-breaker thresholds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Thresholds {
    /// Whether they are the default priority's (`DEFAULT`, not `HIGH`).
    pub default_priority: bool,
    /// `retry_budget`, when set.
    pub retry_budget: Option<RetryBudget>,
    /// The concurrency limits set (`max_connections`, `max_requests`, …), by field name.
    pub limits: Vec<&'static str>,
}

/// A cluster's retry budget.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RetryBudget {
    /// `budget_percent.value` (Envoy's default: 20).
    pub budget_percent: Option<f64>,
    /// `budget_interval` (Envoy's default: 0, the requests active now).
    pub budget_interval: Option<Duration>,
    /// `min_retry_concurrency` (Envoy's default: 3).
    pub min_retry_concurrency: Option<u32>,
}

/// A cluster's outlier detection, the fields of its failure-percentage ejection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutlierDetection {
    /// `interval` (default 10 s).
    pub interval: Option<Duration>,
    /// `base_ejection_time` (default 30 s).
    pub base_ejection_time: Option<Duration>,
    /// `failure_percentage_threshold` (default 85).
    pub failure_percentage_threshold: Option<u32>,
    /// `enforcing_failure_percentage` (default 0: the ejection is off).
    pub enforcing_failure_percentage: Option<u32>,
    /// `failure_percentage_request_volume` (default 50).
    pub failure_percentage_request_volume: Option<u32>,
    /// Whether consecutive-5xx ejection is on (Envoy's default: after 5, enforced at 100 %).
    pub consecutive_5xx: bool,
    /// Whether success-rate ejection is on (Envoy's default: enforced at 100 %).
    pub success_rate: bool,
    /// The other fields set (success-rate ejection, gateway failures, …), by field name.
    pub others: Vec<&'static str>,
}

/// A cluster's controls as configuration tables, and what was read and not used.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterControls {
    /// A `[budgets.NAME]` table, when the cluster has a retry budget.
    pub budget: Option<Table>,
    /// A `[breakers.NAME]` table, when its outlier detection ejects by failure percentage.
    pub breaker: Option<Table>,
    /// What was read and not used, each with its field path and why.
    pub ignored: Vec<String>,
}

/// The name of the budget and the breaker made of cluster `cluster`.
pub fn control_name(cluster: &str) -> String {
    format!("xds/cluster/{cluster}")
}

/// Envoy's defaults, and the range of a budget's window.
const DEFAULT_BUDGET_PERCENT: f64 = 20.0;
const DEFAULT_MIN_RETRY_CONCURRENCY: u32 = 3;
const BUDGET_WINDOW_MS: (u64, u64, u64) = (10, 10_000, 86_400_000);
/// The largest floor a budget keeps (`min_per_second`).
const MOST_PER_SECOND: u32 = 10_000_000;
const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);
const DEFAULT_EJECTION_TIME: Duration = Duration::from_secs(30);
const DEFAULT_FAILURE_PERCENTAGE: u32 = 85;
const DEFAULT_REQUEST_VOLUME: u32 = 50;

/// `cluster`'s controls, as the module says; a field whose value Envoy itself refuses is
/// refused, with its path.
pub fn controls(cluster: &Cluster) -> Result<ClusterControls, FieldError> {
    let mut controls = ClusterControls::default();
    let mut chosen = false;
    for (i, thresholds) in cluster.thresholds.iter().enumerate() {
        let at = format!("circuit_breakers.thresholds[{i}]");
        if !thresholds.default_priority || chosen {
            let why = if chosen {
                "an earlier entry has the default priority"
            } else {
                "only the default priority's are read"
            };
            controls.ignored.push(format!("{at}: {why}"));
            continue;
        }
        chosen = true;
        for limit in &thresholds.limits {
            controls.ignored.push(format!(
                "{at}.{limit}: a concurrency limit of the connection pool, not read"
            ));
        }
        if let Some(budget) = &thresholds.retry_budget {
            controls.budget = Some(budget_table(budget, &at, &mut controls.ignored)?);
        }
    }
    if let Some(outlier) = &cluster.outlier_detection {
        controls.breaker = breaker_table(outlier, &mut controls.ignored);
    }
    let name = &cluster.name;
    for line in &mut controls.ignored {
        *line = format!("{name}: {line}");
    }
    Ok(controls)
}

/// A `[budgets]` table of `budget` at `at`.
fn budget_table(
    budget: &RetryBudget,
    at: &str,
    ignored: &mut Vec<String>,
) -> Result<Table, FieldError> {
    let percent = budget.budget_percent.unwrap_or(DEFAULT_BUDGET_PERCENT);
    if !(0.0..=100.0).contains(&percent) {
        return Err(FieldError::new(
            format!("{at}.retry_budget.budget_percent.value"),
            format!("{percent} is out of range; expected 0 to 100"),
        ));
    }
    let (shortest, default, longest) = BUDGET_WINDOW_MS;
    let window = match budget.budget_interval.filter(|d| !d.is_zero()) {
        None => default,
        Some(interval) => {
            let ms = u64::try_from(interval.as_millis()).unwrap_or(u64::MAX);
            let kept = ms.clamp(shortest, longest);
            if kept != ms {
                ignored.push(format!(
                    "{at}.retry_budget.budget_interval: {ms} ms read as {kept} ms, the nearest window a budget keeps"
                ));
            }
            kept
        }
    };
    let floor = (budget.min_retry_concurrency)
        .unwrap_or(DEFAULT_MIN_RETRY_CONCURRENCY)
        .min(MOST_PER_SECOND);
    let mut table = Table::new();
    table.insert("percent".into(), Value::Float(percent));
    table.insert("min_per_second".into(), Value::Integer(floor.into()));
    table.insert("ttl_ms".into(), Value::Integer(window as i64));
    Ok(table)
}

/// A `[breakers]` table of `outlier`'s failure-percentage ejection, when it is enforced.
fn breaker_table(outlier: &OutlierDetection, ignored: &mut Vec<String>) -> Option<Table> {
    let at = "outlier_detection";
    if outlier.consecutive_5xx {
        ignored.push(format!(
            "{at}.consecutive_5xx: ejection after consecutive errors is not read"
        ));
    }
    if outlier.success_rate {
        ignored.push(format!(
            "{at}.enforcing_success_rate: ejection by success rate is not read"
        ));
    }
    for field in &outlier.others {
        ignored.push(format!("{at}.{field}: not read"));
    }
    let enforcing = outlier.enforcing_failure_percentage.unwrap_or(0);
    if enforcing == 0 {
        return None;
    }
    if enforcing < 100 {
        ignored.push(format!(
            "{at}.enforcing_failure_percentage: {enforcing} % read as 100 % (a breaker always opens)"
        ));
    }
    let threshold = (outlier.failure_percentage_threshold).unwrap_or(DEFAULT_FAILURE_PERCENTAGE);
    if threshold == 0 {
        ignored.push(format!(
            "{at}.failure_percentage_threshold: 0 read as 1, the least a breaker opens at"
        ));
    }
    let volume = (outlier.failure_percentage_request_volume).unwrap_or(DEFAULT_REQUEST_VOLUME);
    let ms = |d: Option<Duration>, default: Duration| {
        let ms = d.unwrap_or(default).as_millis().clamp(1, 86_400_000);
        Value::Integer(ms as i64)
    };
    let mut table = Table::new();
    table.insert(
        "error_percentage".into(),
        Value::Integer(threshold.clamp(1, 100).into()),
    );
    table.insert(
        "volume_threshold".into(),
        Value::Integer(volume.max(1).into()),
    );
    table.insert(
        "rolling_window_ms".into(),
        ms(outlier.interval, DEFAULT_INTERVAL),
    );
    table.insert(
        "sleep_window_ms".into(),
        ms(outlier.base_ejection_time, DEFAULT_EJECTION_TIME),
    );
    Some(table)
}

/// Gives each policy of `overlay` that forwards to a cluster of `clusters` (`policy_clusters`:
/// policy to cluster) that cluster's budget and breaker, and adds their tables and what was
/// not read of the clusters used.
pub fn attach(
    overlay: &mut ConfigOverlay,
    policy_clusters: &BTreeMap<String, String>,
    clusters: &BTreeMap<String, ClusterControls>,
) {
    let mut used = BTreeSet::new();
    for (policy, cluster) in policy_clusters {
        let (Some(controls), Some(Value::Table(table))) =
            (clusters.get(cluster), overlay.policies.get_mut(policy))
        else {
            continue;
        };
        let name = control_name(cluster);
        if let Some(budget) = &controls.budget {
            table.insert("budget".into(), name.as_str().into());
            overlay.budgets.insert(name.clone(), budget.clone().into());
        }
        if let Some(breaker) = &controls.breaker {
            table.insert("breaker".into(), name.as_str().into());
            overlay
                .breakers
                .insert(name.clone(), breaker.clone().into());
        }
        if used.insert(cluster) {
            overlay.ignored.extend(controls.ignored.iter().cloned());
        }
    }
}
