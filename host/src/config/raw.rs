//! The configuration file as written: the TOML schema serde reads (unknown fields refused),
//! with the spans errors point at. `validate` turns it into the model.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use super::breakers::RawBreaker;
use super::builtin::Builtin;
use super::throttles::RawThrottle;
use super::{EngineConfig, WatchConfig};
use crate::decision_log::DecisionLogConfig;
use crate::request::{RequestType, Service};
use crate::traffic_budget::BudgetConfig;
use crate::wasm::{FailSafe, QuarantineConfig, SandboxLimits, WasiConfig};

/// A component's parameter value as text: TOML strings, integers, floats and booleans are
/// handed to the policy's `configure` as their text; arrays and tables are refused.
pub(super) fn param_text(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(n) => Some(n.to_string()),
        toml::Value::Float(x) => Some(x.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    pub(super) default_policy: Spanned<String>,
    #[serde(default)]
    pub(super) policy_dir: Option<PathBuf>,
    #[serde(default)]
    pub(super) cache_dir: Option<RawCacheDir>,
    #[serde(default)]
    pub(super) cache_max_mb: Option<Spanned<u64>>,
    #[serde(default)]
    pub(super) watch: WatchConfig,
    #[serde(default)]
    pub(super) engine: EngineConfig,
    pub(super) policies: BTreeMap<String, Spanned<RawPolicy>>,
    #[serde(default)]
    pub(super) profiles: BTreeMap<String, RawProfile>,
    #[serde(default)]
    pub(super) services: BTreeMap<Service, Spanned<String>>,
    #[serde(default)]
    pub(super) request_types: BTreeMap<RequestType, Spanned<String>>,
    #[serde(default)]
    pub(super) routes: Vec<Spanned<RawRoute>>,
    #[serde(default)]
    pub(super) strict_start: bool,
    #[serde(default)]
    pub(super) budgets: BTreeMap<String, Spanned<RawBudget>>,
    #[serde(default)]
    pub(super) throttles: BTreeMap<String, Spanned<RawThrottle>>,
    #[serde(default)]
    pub(super) breakers: BTreeMap<String, Spanned<RawBreaker>>,
    #[serde(default)]
    pub(super) decision_log: Option<Spanned<DecisionLogConfig>>,
    #[serde(default)]
    pub(super) trust: Option<Spanned<RawTrust>>,
    #[serde(default)]
    pub(super) telemetry: Option<Spanned<RawTelemetry>>,
    #[serde(default)]
    pub(super) source: Option<Spanned<RawSource>>,
}

/// `[source]`: where policies come from besides this file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSource {
    pub(super) xds: Option<super::XdsSourceConfig>,
}

/// `[telemetry]`: the OTLP export, read as the `otlp` feature's schema.
#[cfg(feature = "otlp")]
pub(super) type RawTelemetry = crate::otlp::OtlpConfig;

/// `[telemetry]` in a build without the `otlp` feature: refused whatever it holds.
#[cfg(not(feature = "otlp"))]
pub(super) type RawTelemetry = toml::Value;

/// `[trust] keys = ["release.pub"]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTrust {
    #[cfg_attr(not(feature = "oci"), allow(dead_code))]
    pub(super) keys: Vec<Spanned<PathBuf>>,
}

/// A `[[routes]]` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRoute {
    #[serde(default)]
    pub(super) protocol: Option<Service>,
    #[serde(default)]
    pub(super) authority: Option<String>,
    #[serde(default)]
    pub(super) grpc_service: Option<String>,
    #[serde(default)]
    pub(super) grpc_method: Option<String>,
    #[serde(default)]
    pub(super) path: Option<String>,
    #[serde(default)]
    pub(super) client_context: Vec<super::context_match::RawContextMatch>,
    pub(super) policy: Spanned<String>,
    #[serde(
        default,
        deserialize_with = "crate::ranges::within_if_set::<_, _, 1, 86_400_000>"
    )]
    pub(super) attempt_timeout_ms: Option<u64>,
}

/// A `[budgets.NAME]` table: the budget's parameters, and whether it is kept per client.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBudget {
    #[serde(default = "default_percent")]
    pub(super) percent: f64,
    #[serde(
        default = "default_min_per_second",
        deserialize_with = "crate::ranges::within::<_, _, 0, 10_000_000>"
    )]
    pub(super) min_per_second: u32,
    #[serde(
        default = "default_ttl_ms",
        deserialize_with = "crate::ranges::within::<_, _, 10, 86_400_000>"
    )]
    pub(super) ttl_ms: u64,
    #[serde(default)]
    pub(super) per: Option<String>,
    #[serde(default)]
    pub(super) max_clients: Option<usize>,
}

impl RawBudget {
    pub(super) fn config(&self) -> BudgetConfig {
        BudgetConfig {
            percent: self.percent,
            min_per_second: self.min_per_second,
            ttl_ms: self.ttl_ms,
        }
    }
}

fn default_percent() -> f64 {
    BudgetConfig::default().percent
}

fn default_min_per_second() -> u32 {
    BudgetConfig::default().min_per_second
}

fn default_ttl_ms() -> u64 {
    BudgetConfig::default().ttl_ms
}

/// `cache_dir = "path"`, or `cache_dir = false` for no cache.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawCacheDir {
    Enabled(bool),
    Dir(PathBuf),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPolicy {
    #[serde(default)]
    pub(super) builtin: Option<Builtin>,
    #[serde(default)]
    pub(super) component: Option<Spanned<RawComponent>>,
    #[serde(default)]
    pub(super) params: Option<Spanned<BTreeMap<String, Spanned<toml::Value>>>>,
    #[serde(default)]
    pub(super) limits: SandboxLimits,
    #[serde(default)]
    pub(super) fail_safe: FailSafe,
    #[serde(default)]
    pub(super) quarantine: QuarantineConfig,
    #[serde(default)]
    pub(super) wasi: WasiConfig,
    #[serde(default)]
    pub(super) guard_exempt: bool,
    #[serde(default)]
    pub(super) budget: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) throttle: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) breaker: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) speculative_execution: Option<Spanned<RawSpeculative>>,
    #[serde(
        default,
        deserialize_with = "crate::ranges::within_if_set::<_, _, 1, 86_400_000>"
    )]
    pub(super) attempt_timeout_ms: Option<u64>,
    #[serde(default)]
    pub(super) hedge_on_attempt_timeout: Option<Spanned<bool>>,
    #[serde(default)]
    pub(super) record_latencies: bool,
}

/// `speculative_execution = { delay_ms, max_executions }` or `{ percentile, min_delay_ms,
/// max_delay_ms, max_executions }` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSpeculative {
    #[serde(
        default,
        deserialize_with = "crate::ranges::within_if_set::<_, _, 0, 86_400_000>"
    )]
    pub(super) delay_ms: Option<u64>,
    #[serde(default)]
    pub(super) percentile: Option<f64>,
    #[serde(
        default,
        deserialize_with = "crate::ranges::within_if_set::<_, _, 0, 86_400_000>"
    )]
    pub(super) min_delay_ms: Option<u64>,
    #[serde(
        default,
        deserialize_with = "crate::ranges::within_if_set::<_, _, 0, 86_400_000>"
    )]
    pub(super) max_delay_ms: Option<u64>,
    pub(super) max_executions: u32,
}

/// `component = "FILE.wasm"`, `component = { path = "FILE.wasm", sha256 = "…" }` pinned, or
/// `component = { oci = "registry/repository:tag", sha256 = "…", precompiled = "…" }` (the
/// pins optional).
#[derive(Debug, Deserialize)]
#[serde(
    untagged,
    expecting = "a component file (\"FILE.wasm\"), { path = \"FILE.wasm\", sha256 = \"64 hex digits\" } or { oci = \"registry/repository:tag\", sha256 = \"64 hex digits\" }"
)]
pub(super) enum RawComponent {
    Path(PathBuf),
    Pinned(RawPinnedComponent),
    Oci(RawOciComponent),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOciComponent {
    pub(super) oci: String,
    #[serde(default)]
    pub(super) sha256: Option<String>,
    #[serde(default)]
    pub(super) precompiled: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPinnedComponent {
    pub(super) path: PathBuf,
    pub(super) sha256: String,
}

impl RawComponent {
    pub(super) fn sha256(&self) -> Option<&str> {
        match self {
            RawComponent::Path(_) => None,
            RawComponent::Pinned(pinned) => Some(&pinned.sha256),
            RawComponent::Oci(oci) => oci.sha256.as_deref(),
        }
    }

    pub(super) fn precompiled(&self) -> Option<&str> {
        match self {
            RawComponent::Oci(oci) => oci.precompiled.as_deref(),
            RawComponent::Path(_) | RawComponent::Pinned(_) => None,
        }
    }
}

/// Whether `reference` has the shape `registry/repository[:tag]` (the registry a host name,
/// with an optional port): the client parses it fully when it pulls.
pub(super) fn valid_oci_reference(reference: &str) -> bool {
    let Some((registry, repository)) = reference.split_once('/') else {
        return false;
    };
    !registry.is_empty()
        && !repository.is_empty()
        && !reference.chars().any(char::is_whitespace)
        && (registry.contains('.') || registry.contains(':') || registry == "localhost")
}

/// The sha256 digest written as 64 hexadecimal digits (either case), as bytes.
pub(super) fn parse_sha256(text: &str) -> Option<[u8; 32]> {
    let text = text.strip_prefix("sha256:").unwrap_or(text);
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut digest = [0u8; 32];
    for (i, byte) in digest.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(digest)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProfile {
    #[serde(default)]
    pub(super) policy: Option<Spanned<String>>,
}
