//! A simulation scenario (TOML, documented in `docs/simulate.md`): the workload, the cluster,
//! the fault timeline, what counts as recovered and the policies to compare. Refused with the
//! file, line, field and what was expected, also when a sweep sets one of its values.

use std::path::{Path, PathBuf};

use rebound::config::line_column;
use rebound::{HttpMethod, RequestType};
use serde::Deserialize;

pub use super::faults::Fault;
use super::setting;

/// A scenario as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// One line saying what the scenario shows.
    #[serde(default)]
    pub description: String,
    /// Seeds every random draw: the same seed gives the same run.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Requests arrive during this many seconds (the run goes on until the last one ends).
    pub duration_s: f64,
    /// Width of a bar of the chart, in seconds.
    #[serde(default = "default_bucket_s")]
    pub bucket_s: f64,
    /// The policies to compare.
    pub compare: Compare,
    /// The requests.
    pub workload: Workload,
    /// Independent client processes sharing the cluster, each with its own policy state
    /// (budgets, throttles, breakers, hedging windows); arrivals are dealt among them in turn.
    #[serde(default = "default_clients")]
    pub clients: u32,
    /// The nodes that answer them.
    #[serde(default)]
    pub cluster: Cluster,
    /// What counts as recovered after the faults.
    #[serde(default)]
    pub recovery: Recovery,
    /// What goes wrong, and when.
    #[serde(default, rename = "fault")]
    pub faults: Vec<Fault>,
}

fn default_seed() -> u64 {
    1
}

fn default_bucket_s() -> f64 {
    1.0
}

fn default_clients() -> u32 {
    1
}

/// The operational definition of "recovered" (docs/simulate.md "Recovery"): after the last
/// fault ends, the requests that succeeded during `hold_s` seconds are at least `goodput_share`
/// of the requests that arrived during them. A run recovered within `within_s` when such a
/// window starts no later than `within_s` after the last fault ends.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Recovery {
    /// The share of the arrivals that must succeed, 0 to 1.
    pub goodput_share: f64,
    /// How long that must hold, in seconds.
    pub hold_s: f64,
    /// The time allowed after the last fault; until the arrivals end when absent.
    pub within_s: Option<f64>,
}

impl Default for Recovery {
    fn default() -> Self {
        Recovery {
            goodput_share: 0.95,
            hold_s: 5.0,
            within_s: None,
        }
    }
}

/// Policies of a registry configuration, each run alone over the same workload.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compare {
    /// The registry configuration (docs/registry.md), relative to the scenario file.
    pub config: PathBuf,
    /// Names of its policies; each decides every request of its own run.
    pub policies: Vec<String>,
}

/// Request arrivals.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Mean arrivals per second (a Poisson process).
    pub rate_per_s: f64,
    /// Distinct document keys (which node a KV request goes to; which documents are locked).
    #[serde(default = "default_keys")]
    pub keys: u64,
    /// The kinds of request, drawn by weight.
    pub mix: Vec<MixEntry>,
}

fn default_keys() -> u64 {
    10_000
}

/// One kind of request in the mix.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixEntry {
    /// The request type (`get`, `upsert`, `query`, `cql`, ...).
    #[serde(rename = "type")]
    pub request_type: RequestType,
    /// Relative share of arrivals.
    pub weight: f64,
    /// Timeout in milliseconds; the service's default when absent (2500 KV, 2000 CQL, 75000
    /// others).
    pub timeout_ms: Option<u64>,
    /// Declared idempotency (CQL statements); the type's rule when absent.
    pub idempotent: Option<bool>,
    /// A read-only query or analytics request (idempotent).
    #[serde(default)]
    pub readonly: bool,
    /// The method of an `http` request (idempotent by RFC 9110 §9.2.2: GET, HEAD, OPTIONS,
    /// TRACE, PUT, DELETE).
    pub method: Option<HttpMethod>,
    /// The full method name of a `grpc` call (`/package.Service/Method`) or an `http`
    /// request's route, as policies and `[[routes]]` see it.
    pub route: Option<String>,
}

/// The cluster; a key it does not set keeps its default.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Cluster {
    /// Nodes; a request goes to its key's node, or the next ones when a policy asks.
    pub nodes: u32,
    /// Mean time an attempt takes on a node, in milliseconds (exponentially distributed
    /// above a tenth of it).
    pub latency_ms: f64,
    /// Attempts a node serves per second; past it, latency and the failure rate rise with the
    /// load offered (the last second's attempts). None: a node's capacity is unbounded.
    pub capacity_per_s: Option<f64>,
    /// The queue model: a node serves one attempt at a time, in arrival order, each for an
    /// exponentially distributed time of mean `1 / service_rate_per_s` seconds, after its
    /// network latency. None: the load model of `capacity_per_s`, or no limit.
    pub service_rate_per_s: Option<f64>,
    /// Attempts that may wait in a node's queue (the queue model) beside the one it serves.
    /// None: unbounded.
    pub queue: Option<u32>,
    /// What a full queue does with an attempt arriving.
    pub when_full: WhenFull,
}

/// What a node whose queue is full does with an attempt arriving.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WhenFull {
    /// Answers "overloaded" at once.
    #[default]
    Answer,
    /// Drops it unanswered: the client learns only when its attempt timeout or deadline
    /// passes (Metafor's model).
    Drop,
}

impl Default for Cluster {
    fn default() -> Self {
        Cluster {
            nodes: 3,
            latency_ms: 2.0,
            capacity_per_s: None,
            service_rate_per_s: None,
            queue: None,
            when_full: WhenFull::Answer,
        }
    }
}

/// A scenario that was refused.
#[derive(Debug, thiserror::Error)]
#[error("{file}{at}: {field}{message}")]
pub struct ScenarioError {
    file: String,
    at: String,
    field: String,
    message: String,
}

impl ScenarioError {
    fn new(file: &Path, at: Option<(usize, usize)>, field: &str, message: String) -> Self {
        ScenarioError {
            file: file.display().to_string(),
            at: at.map_or_else(String::new, |(l, c)| format!(":{l}:{c}")),
            field: if field.is_empty() {
                String::new()
            } else {
                format!("{field}: ")
            },
            message,
        }
    }
}

impl Scenario {
    /// Reads and validates the scenario at `path`; the configuration it names is resolved
    /// against the scenario's directory.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        Self::load_with(path, &[])
    }

    /// Reads the scenario at `path` with each `(key, value)` of `settings` set in it (a sweep's
    /// cell: `cluster.queue`, `fault[0].cut`), then validates it.
    pub fn load_with(path: &Path, settings: &[(&str, f64)]) -> Result<Self, ScenarioError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScenarioError::new(path, None, "", format!("cannot read it: {e}")))?;
        let mut scenario = if settings.is_empty() {
            Self::parse(path, &text)?
        } else {
            Self::parse_with(path, &text, settings)?
        };
        let base = path.parent().unwrap_or(Path::new("."));
        scenario.compare.config = base.join(&scenario.compare.config);
        scenario
            .validate()
            .map_err(|(field, message)| ScenarioError::new(path, None, &field, message))?;
        Ok(scenario)
    }

    /// The scenario as written, errors at their line and column.
    fn parse(path: &Path, text: &str) -> Result<Self, ScenarioError> {
        let deserializer = toml::Deserializer::parse(text).map_err(|e| {
            let at = e.span().map(|s| line_column(text, s.start));
            ScenarioError::new(path, at, "", e.message().trim().to_owned())
        })?;
        serde_path_to_error::deserialize(deserializer).map_err(|e| {
            let field = e.path().to_string();
            let inner = e.into_inner();
            let at = inner.span().map(|s| line_column(text, s.start));
            ScenarioError::new(path, at, &field, inner.message().trim().to_owned())
        })
    }

    /// The scenario as written with `settings` set in it.
    fn parse_with(
        path: &Path,
        text: &str,
        settings: &[(&str, f64)],
    ) -> Result<Self, ScenarioError> {
        // Parsed once with spans, so that a file error keeps its line and column.
        Self::parse(path, text)?;
        let mut table: toml::Table = toml::from_str(text)
            .map_err(|e| ScenarioError::new(path, None, "", e.message().trim().to_owned()))?;
        for (key, value) in settings {
            setting::set(&mut table, key, *value)
                .map_err(|message| ScenarioError::new(path, None, key, message))?;
        }
        serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
            let field = e.path().to_string();
            ScenarioError::new(
                path,
                None,
                &field,
                e.into_inner().message().trim().to_owned(),
            )
        })
    }

    /// Checks what the types cannot: the field and what was expected.
    fn validate(&self) -> Result<(), (String, String)> {
        let positive = |field: &str, value: f64| {
            if value.is_finite() && value > 0.0 {
                Ok(())
            } else {
                Err((
                    field.to_owned(),
                    format!("expected a positive number, got {value}"),
                ))
            }
        };
        positive("duration_s", self.duration_s)?;
        positive("bucket_s", self.bucket_s)?;
        positive("workload.rate_per_s", self.workload.rate_per_s)?;
        self.validate_model(positive)?;
        if self.workload.keys == 0 {
            return Err(("workload.keys".into(), "expected at least one key".into()));
        }
        if self.compare.policies.is_empty() {
            return Err((
                "compare.policies".into(),
                "name at least one policy of the configuration".into(),
            ));
        }
        if self.workload.mix.is_empty() {
            return Err(("workload.mix".into(), "expected at least one entry".into()));
        }
        for (i, entry) in self.workload.mix.iter().enumerate() {
            positive(&format!("workload.mix[{i}].weight"), entry.weight)?;
            if entry.timeout_ms == Some(0) {
                return Err((
                    format!("workload.mix[{i}].timeout_ms"),
                    "a zero timeout can never be met".into(),
                ));
            }
        }
        for (i, fault) in self.faults.iter().enumerate() {
            fault
                .validate(self.cluster.nodes)
                .map_err(|(name, message)| (format!("fault[{i}].{name}"), message))?;
        }
        Ok(())
    }

    /// Checks the cluster, the clients and the definition of recovery.
    fn validate_model(
        &self,
        positive: impl Fn(&str, f64) -> Result<(), (String, String)>,
    ) -> Result<(), (String, String)> {
        let cluster = &self.cluster;
        positive("cluster.latency_ms", cluster.latency_ms)?;
        if let Some(capacity) = cluster.capacity_per_s {
            positive("cluster.capacity_per_s", capacity)?;
        }
        if let Some(rate) = cluster.service_rate_per_s {
            positive("cluster.service_rate_per_s", rate)?;
            if cluster.capacity_per_s.is_some() {
                return Err((
                    "cluster.service_rate_per_s".into(),
                    "set either capacity_per_s (the load model) or service_rate_per_s (the queue model), not both".into(),
                ));
            }
        } else if cluster.queue.is_some() {
            return Err((
                "cluster.queue".into(),
                "a queue needs the queue model: set cluster.service_rate_per_s too".into(),
            ));
        }
        if cluster.nodes == 0 {
            return Err(("cluster.nodes".into(), "expected at least one node".into()));
        }
        if self.clients == 0 {
            return Err(("clients".into(), "expected at least one client".into()));
        }
        let recovery = &self.recovery;
        if !(recovery.goodput_share > 0.0 && recovery.goodput_share <= 1.0) {
            return Err((
                "recovery.goodput_share".into(),
                format!(
                    "expected a share above 0, at most 1, got {}",
                    recovery.goodput_share
                ),
            ));
        }
        positive("recovery.hold_s", recovery.hold_s)?;
        if let Some(within) = recovery.within_s {
            positive("recovery.within_s", within)?;
        }
        Ok(())
    }
}
