//! Prometheus metrics of `rebound serve`: decisions by policy, version and outcome, decision
//! latency, and, read from the registry at each scrape, policy failures by kind, quarantines,
//! swaps and failed reloads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use metrics_util::layers::FanoutBuilder;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use rebound::otlp::OtlpRecorder;
use rebound::registry::{BudgetStatus, PolicyRegistry, PolicyStatus, RegistryStatus};
use rebound::LogRateLimit;

use super::facade;

/// Labels of a connection closed by the server.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClosedLabels {
    reason: &'static str,
}

/// The connections' metrics, shared by the accept loop and every connection, with the budget
/// of their log lines.
#[derive(Debug, Clone)]
pub struct ConnectionMetrics {
    open: Gauge,
    refused: Counter,
    closed: Family<ClosedLabels, Counter>,
    lines: Arc<LogRateLimit>,
    /// Answers the routes have made on every connection.
    answers: Arc<AtomicU64>,
}

/// At most one line a second about connections (refused at the cap, failed accepts, sockets
/// that cannot be watched): what a client can cause on every connection.
const CONNECTION_LINES_PER_SECOND: u32 = 1;

impl Default for ConnectionMetrics {
    fn default() -> Self {
        ConnectionMetrics {
            open: Gauge::default(),
            refused: Counter::default(),
            closed: Family::default(),
            lines: Arc::new(LogRateLimit::new(CONNECTION_LINES_PER_SECOND)),
            answers: Arc::default(),
        }
    }
}

impl ConnectionMetrics {
    fn register(&self, registry: &mut Registry) {
        registry.register(
            "connections_open",
            "Client connections open now",
            self.open.clone(),
        );
        registry.register(
            "connections_refused",
            "Connections refused because max_connections were open",
            self.refused.clone(),
        );
        registry.register(
            "connections_closed",
            "Connections the server closed for waiting on their client, by reason (idle_timeout, header_timeout, body_timeout)",
            self.closed.clone(),
        );
    }

    /// A connection was accepted.
    pub fn opened(&self) {
        self.open.inc();
    }

    /// A connection ended.
    pub fn ended(&self) {
        self.open.dec();
    }

    /// A connection was refused at the cap.
    pub fn refused(&self) {
        self.refused.inc();
    }

    /// A request on some connection was answered.
    pub fn answered(&self) {
        self.answers.fetch_add(1, Ordering::Relaxed);
    }

    /// Requests answered so far, on every connection.
    pub fn answers(&self) -> u64 {
        self.answers.load(Ordering::Relaxed)
    }

    /// Whether a line about connections may be written now; if so, how many were left out.
    pub fn line_allowed(&self) -> Option<u64> {
        self.lines.allow()
    }

    /// A connection was closed for `reason`.
    pub fn closed(&self, reason: &'static str) {
        self.closed.get_or_create(&ClosedLabels { reason }).inc();
    }
}

/// The server's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    latency: Histogram,
    refused: Counter,
    privileged_refused: Counter,
    client_refused: Counter,
    panics: Counter,
    connections: ConnectionMetrics,
}

impl Metrics {
    /// Metrics of a server deciding with `policies`, the library's also recorded into `otlp`
    /// when given.
    pub fn new(policies: Arc<PolicyRegistry>, otlp: Option<OtlpRecorder>) -> Self {
        let mut registry = Registry::with_prefix("rebound");
        // The library's metrics (decisions by policy, version, decision, reason and cancel
        // reason: docs/observability.md), recorded through the `metrics` facade.
        let (recorder, collector) = facade::bridge();
        registry.register_collector(Box::new(collector));
        let installed = match otlp {
            None => metrics::set_global_recorder(recorder).is_ok(),
            Some(otlp) => metrics::set_global_recorder(
                FanoutBuilder::default()
                    .add_recorder(recorder)
                    .add_recorder(otlp)
                    .build(),
            )
            .is_ok(),
        };
        if !installed {
            tracing::warn!("a metrics recorder was installed already: the library's metrics are not on /metrics");
        }
        rebound::telemetry::enable();
        // 10 µs to about 330 ms.
        let latency = Histogram::new(exponential_buckets(0.000_01, 2.0, 16));
        registry.register(
            "decision_duration_seconds",
            "Time to decide one request, from the parsed body to the answer",
            latency.clone(),
        );
        let refused = Counter::default();
        registry.register(
            "refused_requests",
            "Decision requests refused as bad input (4xx)",
            refused.clone(),
        );
        let privileged_refused = Counter::default();
        registry.register(
            "privileged_refused",
            "Privileged requests refused (no or a wrong token, another site, not JSON)",
            privileged_refused.clone(),
        );
        let client_refused = Counter::default();
        registry.register(
            "client_refused",
            "Decision, classify and outcome requests refused for no or an unknown client token",
            client_refused.clone(),
        );
        let panics = Counter::default();
        registry.register(
            "panics",
            "Panics in the server (a request that caused one was answered 500; the server went on)",
            panics.clone(),
        );
        registry.register_collector(Box::new(PolicyCollector(policies)));
        let connections = ConnectionMetrics::default();
        connections.register(&mut registry);
        Metrics {
            registry,
            latency,
            refused,
            privileged_refused,
            client_refused,
            panics,
            connections,
        }
    }

    /// The count of panics, which the panic hook adds to.
    pub fn panics(&self) -> Counter {
        self.panics.clone()
    }

    /// A request for a decision (or to classify, or an outcome report) was refused for its
    /// client token.
    pub fn client_refused(&self) {
        self.client_refused.inc();
    }

    /// A privileged request was refused.
    pub fn privileged_refused(&self) {
        self.privileged_refused.inc();
    }

    /// The connections' metrics.
    pub fn connections(&self) -> &ConnectionMetrics {
        &self.connections
    }

    /// Times a decision that took `took`; an answer the classifier settled without a policy
    /// (`outcome` `not_retried` or `success`) is counted here, the registry counts the others.
    pub fn decided(&self, policy: Option<&(String, String)>, outcome: &str, took: Duration) {
        if policy.is_none() {
            let decision = match outcome {
                "not_retried" => "not_retried",
                "success" => "success",
                _ => "other",
            };
            rebound::telemetry::record_answer("".into(), "".into(), decision, "", "");
        }
        self.latency.observe(took.as_secs_f64());
    }

    /// Counts a refused request.
    pub fn refused(&self) {
        self.refused.inc();
    }

    /// Scrapes `source`'s state too.
    pub fn watch_xds(&mut self, source: rebound::xds::ads::XdsSource) {
        (self.registry).register_collector(Box::new(super::xds_metrics::XdsCollector(source)));
    }

    /// The text exposition format.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

/// A counter read from each policy's status: name, help, and how to read it.
type PolicyCounter = (&'static str, &'static str, fn(&PolicyStatus) -> u64);

/// The registry's own counters, read at each scrape.
#[derive(Debug)]
struct PolicyCollector(Arc<PolicyRegistry>);

impl Collector for PolicyCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let status = self.0.status();
        encode_policies(&status, &mut encoder)?;
        encode_reloads(&status, &mut encoder)?;
        encode_budgets_and_throttles(&status, &mut encoder)
    }
}

/// Each policy's failures, quarantines, swaps, reload failures and budget refusals.
fn encode_policies(
    status: &RegistryStatus,
    encoder: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let mut failures = encoder.encode_descriptor(
        "policy_failures",
        "Policy calls that failed (trap, panic, timeout, fuel_exhausted, ...) by policy and kind",
        None,
        MetricType::Counter,
    )?;
    for policy in &status.policies {
        for (kind, count) in &policy.failures {
            let labels = [("policy", policy.name.as_str()), ("kind", kind)];
            ConstCounter::new(*count).encode(failures.encode_family(&labels)?)?;
        }
    }
    let per_policy: [PolicyCounter; 4] = [
        (
            "policy_quarantines",
            "Times a policy was quarantined after repeated failures",
            |p| p.quarantines,
        ),
        (
            "policy_swaps",
            "Versions swapped in (reload, rollback, promote) by policy",
            |p| p.swaps,
        ),
        (
            "reload_failures",
            "Reloads that failed, by policy (the running version kept serving)",
            |p| p.reload_failures,
        ),
        (
            "policy_budget_refusals",
            "host.retry-budget calls of the active version refused a bucket (past 64 buckets \
                 or a 64-byte name), by policy",
            |p| p.budget_refusals,
        ),
    ];
    for (name, help, count) in per_policy {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
        for policy in &status.policies {
            let labels = [("policy", policy.name.as_str())];
            ConstCounter::new(count(policy)).encode(family.encode_family(&labels)?)?;
        }
    }
    let mut quarantined = encoder.encode_descriptor(
        "policy_quarantined",
        "1 while a policy is quarantined",
        None,
        MetricType::Gauge,
    )?;
    for policy in &status.policies {
        let labels = [("policy", policy.name.as_str())];
        ConstGauge::new(i64::from(policy.quarantined))
            .encode(quarantined.encode_family(&labels)?)?;
    }
    Ok(())
}

/// The configuration reloads that failed, and the reload steps that panicked.
fn encode_reloads(
    status: &RegistryStatus,
    encoder: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let config_reload_failures = encoder.encode_descriptor(
        "config_reload_failures",
        "Configuration reloads that failed (the running configuration was kept)",
        None,
        MetricType::Counter,
    )?;
    ConstCounter::new(status.config_reload_failures).encode(config_reload_failures)?;
    let reload_panics = encoder.encode_descriptor(
            "reload_panics",
            "Reload steps that panicked (each caught: the running configuration stayed and reloads went on)",
            None,
            MetricType::Counter,
        )?;
    ConstCounter::new(status.reload_panics).encode(reload_panics)?;
    Ok(())
}

/// Each retry budget's deposits, withdrawals, refusals and balance, and each throttle's
/// refusals.
fn encode_budgets_and_throttles(
    status: &RegistryStatus,
    encoder: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let per_budget: [BudgetCounter; 3] = [
        (
            "budget_deposits",
            "Requests deposited in a retry budget, by budget",
            |b| b.deposits,
        ),
        (
            "budget_withdrawals",
            "Retries a budget granted, by budget",
            |b| b.withdrawals,
        ),
        (
            "budget_refusals",
            "Retries a budget refused (RETRY_BUDGET_EXHAUSTED), by budget",
            |b| b.refusals,
        ),
    ];
    for (name, help, count) in per_budget {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
        for budget in &status.budgets {
            let labels = [("budget", budget.name.as_str())];
            ConstCounter::new(count(budget)).encode(family.encode_family(&labels)?)?;
        }
    }
    let mut balance = encoder.encode_descriptor(
        "budget_balance",
        "Retries a budget would grant now, by budget",
        None,
        MetricType::Gauge,
    )?;
    for budget in &status.budgets {
        let labels = [("budget", budget.name.as_str())];
        ConstGauge::new(i64::try_from(budget.balance).unwrap_or(i64::MAX))
            .encode(balance.encode_family(&labels)?)?;
    }
    let mut throttled = encoder.encode_descriptor(
        "throttle_refusals",
        "Retries a throttle refused (RETRY_THROTTLED), by throttle",
        None,
        MetricType::Counter,
    )?;
    for throttle in &status.throttles {
        let labels = [("throttle", throttle.name.as_str())];
        ConstCounter::new(throttle.refusals).encode(throttled.encode_family(&labels)?)?;
    }
    Ok(())
}

/// A counter read from each budget's status: name, help, and how to read it.
type BudgetCounter = (&'static str, &'static str, fn(&BudgetStatus) -> u64);
