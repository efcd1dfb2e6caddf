//! A simulation scenario (TOML, documented in `docs/simulate.md`): the workload, the cluster,
//! the fault timeline and the policies to compare. Refused with the file, line, field and
//! what was expected.

use std::path::{Path, PathBuf};

use rebound::config::line_column;
use rebound::{HttpMethod, RequestType};
use serde::Deserialize;

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
    /// The nodes that answer them.
    #[serde(default)]
    pub cluster: Cluster,
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
}

impl Default for Cluster {
    fn default() -> Self {
        Cluster {
            nodes: 3,
            latency_ms: 2.0,
            capacity_per_s: None,
        }
    }
}

/// A time window, in seconds from the start.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// Start.
    pub from_s: f64,
    /// End (exclusive).
    pub until_s: f64,
}

impl Window {
    /// Whether `t_us` (microseconds from the start) falls in the window.
    pub fn contains(&self, t_us: u64) -> bool {
        let t = t_us as f64 / 1e6;
        self.from_s <= t && t < self.until_s
    }
}

/// A fault.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// A node is down: attempts sent to it fail at once (SOCKET_NOT_AVAILABLE, never
    /// dispatched); attempts on it when it goes down fail as SOCKET_CLOSED_WHILE_IN_FLIGHT.
    NodeDown {
        /// The node (0-based).
        node: u32,
        /// When it goes down (seconds from the start).
        from_s: f64,
        /// When it is back.
        until_s: f64,
    },
    /// A node is slow: attempts on it take `factor` times their drawn latency.
    SlowNode {
        /// The node (0-based).
        node: u32,
        /// How many times slower, at least 1.
        factor: f64,
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
    /// A rebalance: this share of KV attempts is answered NOT_MY_VBUCKET (0x07).
    Rebalance {
        /// Share of attempts, 0 to 1.
        rate: f64,
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
    /// This share of KV attempts is answered TMPFAIL (0x86).
    Tmpfail {
        /// Share of attempts, 0 to 1.
        rate: f64,
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
    /// This share of attempts loses its connection while in flight
    /// (SOCKET_CLOSED_WHILE_IN_FLIGHT).
    SocketClose {
        /// Share of attempts, 0 to 1.
        rate: f64,
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
    /// This share of the documents is locked: KV attempts on them are answered LOCKED (0x09).
    Locked {
        /// Share of the keys, 0 to 1.
        share: f64,
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
    /// This share of plain HTTP and gRPC attempts is answered 503 or UNAVAILABLE
    /// (HTTP_STATUS, GRPC_STATUS).
    Unavailable {
        /// Share of attempts, 0 to 1.
        rate: f64,
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
    /// This share of gRPC attempts is refused by its node's transport before its application
    /// sees it (HTTP/2 `REFUSED_STREAM`: UNAVAILABLE, progress `refused`), costing the node
    /// nothing; gRFC A6 sends such an attempt again once, transparently.
    RefusedStreams {
        /// Share of attempts, 0 to 1.
        rate: f64,
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
    /// The credentials are wrong: connections fail authentication and no attempt is
    /// dispatched (AUTHENTICATION_ERROR).
    AuthFailure {
        /// Start (seconds from the start of the run).
        from_s: f64,
        /// End (exclusive).
        until_s: f64,
    },
}

impl Fault {
    /// The fault's name as written in the scenario.
    pub fn name(&self) -> &'static str {
        match self {
            Fault::NodeDown { .. } => "node_down",
            Fault::SlowNode { .. } => "slow_node",
            Fault::Rebalance { .. } => "rebalance",
            Fault::Tmpfail { .. } => "tmpfail",
            Fault::SocketClose { .. } => "socket_close",
            Fault::Locked { .. } => "locked",
            Fault::Unavailable { .. } => "unavailable",
            Fault::RefusedStreams { .. } => "refused_streams",
            Fault::AuthFailure { .. } => "auth_failure",
        }
    }

    /// When it happens.
    pub fn window(&self) -> Window {
        let (from_s, until_s) = match *self {
            Fault::NodeDown {
                from_s, until_s, ..
            }
            | Fault::SlowNode {
                from_s, until_s, ..
            }
            | Fault::Rebalance {
                from_s, until_s, ..
            }
            | Fault::Tmpfail {
                from_s, until_s, ..
            }
            | Fault::SocketClose {
                from_s, until_s, ..
            }
            | Fault::Locked {
                from_s, until_s, ..
            }
            | Fault::Unavailable {
                from_s, until_s, ..
            }
            | Fault::RefusedStreams {
                from_s, until_s, ..
            }
            | Fault::AuthFailure { from_s, until_s } => (from_s, until_s),
        };
        Window { from_s, until_s }
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
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScenarioError::new(path, None, "", format!("cannot read it: {e}")))?;
        let deserializer = toml::Deserializer::parse(&text).map_err(|e| {
            let at = e.span().map(|s| line_column(&text, s.start));
            ScenarioError::new(path, at, "", e.message().trim().to_owned())
        })?;
        let mut scenario: Scenario =
            serde_path_to_error::deserialize(deserializer).map_err(|e| {
                let field = e.path().to_string();
                let inner = e.into_inner();
                let at = inner.span().map(|s| line_column(&text, s.start));
                ScenarioError::new(path, at, &field, inner.message().trim().to_owned())
            })?;
        let base = path.parent().unwrap_or(Path::new("."));
        scenario.compare.config = base.join(&scenario.compare.config);
        scenario
            .validate()
            .map_err(|(field, message)| ScenarioError::new(path, None, &field, message))?;
        Ok(scenario)
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
        positive("cluster.latency_ms", self.cluster.latency_ms)?;
        if let Some(capacity) = self.cluster.capacity_per_s {
            positive("cluster.capacity_per_s", capacity)?;
        }
        if self.workload.keys == 0 {
            return Err(("workload.keys".into(), "expected at least one key".into()));
        }
        if self.cluster.nodes == 0 {
            return Err(("cluster.nodes".into(), "expected at least one node".into()));
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
}

impl Fault {
    /// Checks the fault's window and values on a cluster of `nodes`: the field (of the fault)
    /// and what was expected.
    fn validate(&self, nodes: u32) -> Result<(), (&'static str, String)> {
        let window = self.window();
        if !(window.from_s >= 0.0 && window.from_s < window.until_s) {
            return Err((
                "until_s",
                format!(
                    "expected 0 <= from_s < until_s, got from_s = {} and until_s = {}",
                    window.from_s, window.until_s
                ),
            ));
        }
        match self {
            Fault::NodeDown { node, .. } | Fault::SlowNode { node, .. } if *node >= nodes => Err((
                "node",
                format!("the cluster has nodes 0 to {}, not {node}", nodes - 1),
            )),
            Fault::Rebalance { rate, .. }
            | Fault::Tmpfail { rate, .. }
            | Fault::SocketClose { rate, .. }
            | Fault::Unavailable { rate, .. }
            | Fault::RefusedStreams { rate, .. }
                if !(0.0..=1.0).contains(rate) =>
            {
                Err(("rate", format!("expected 0 to 1, got {rate}")))
            }
            Fault::SlowNode { factor, .. } if !(factor.is_finite() && *factor >= 1.0) => {
                Err(("factor", format!("expected at least 1, got {factor}")))
            }
            Fault::Locked { share, .. } if !(0.0..=1.0).contains(share) => {
                Err(("share", format!("expected 0 to 1, got {share}")))
            }
            _ => Ok(()),
        }
    }
}
