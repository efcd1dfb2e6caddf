//! The parameters of the built-ins for plain HTTP requests and gRPC calls, read and checked:
//! the `http` built-in's table (RFC 9110's retries), and the `grpc` built-in's service config
//! and client cap (gRFC A6). Apart from the other built-ins because each reads a protocol's own
//! vocabulary (statuses, a service config) rather than a backoff alone.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::params::{backoff, read};
use crate::action::NodeChoice;
use crate::field_error::FieldError;
use crate::grpc::{ServiceConfig, DEFAULT_MAX_ATTEMPTS_LIMIT};
use crate::hedge::QuantileDelay;
use crate::strategy::{GrpcRetry, HttpRetry};

/// The largest `max_attempts_limit` the `grpc` built-in takes: a client may raise gRFC A6's
/// cap of 5, not without bound, since a decision request may name the built-in with its
/// parameters.
pub const MAX_ATTEMPTS_LIMIT: u32 = 100;

/// The `http` built-in's parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpParams {
    #[serde(
        default = "http_max_attempts",
        deserialize_with = "crate::ranges::within::<_, _, 1, 100>"
    )]
    max_attempts: u32,
    #[serde(
        default = "http_initial_ms",
        deserialize_with = "crate::ranges::within::<_, _, 1, 86_400_000>"
    )]
    initial_ms: u64,
    #[serde(
        default = "http_max_ms",
        deserialize_with = "crate::ranges::within::<_, _, 1, 86_400_000>"
    )]
    max_ms: u64,
    #[serde(default = "http_multiplier")]
    multiplier: f64,
    #[serde(default = "http_statuses")]
    statuses: Vec<u16>,
    #[serde(
        default,
        deserialize_with = "crate::ranges::within_if_set::<_, _, 1, 86_400_000>"
    )]
    attempt_timeout_ms: Option<u64>,
    #[serde(default = "http_respect_retry_after")]
    respect_retry_after: bool,
    #[serde(
        default = "http_retry_after_max_ms",
        deserialize_with = "crate::ranges::within::<_, _, 1, 86_400_000>"
    )]
    retry_after_max_ms: u64,
}

fn http_max_attempts() -> u32 {
    3
}
fn http_initial_ms() -> u64 {
    100
}
fn http_max_ms() -> u64 {
    5000
}
fn http_multiplier() -> f64 {
    2.0
}
fn http_statuses() -> Vec<u16> {
    HttpRetry::DEFAULT_STATUSES.to_vec()
}
fn http_respect_retry_after() -> bool {
    true
}
fn http_retry_after_max_ms() -> u64 {
    HttpRetry::DEFAULT_RETRY_AFTER_MAX.as_millis() as u64
}

/// The `grpc` built-in: its service config (an object, or its JSON text) and the client's cap.
pub(super) fn grpc_policy(params: &Map<String, Value>) -> Result<GrpcRetry, FieldError> {
    if let Some(unknown) = params.keys().find(|k| {
        ![
            "service_config",
            "max_attempts_limit",
            "hedging_delay",
            "node",
        ]
        .contains(&k.as_str())
    }) {
        return Err(FieldError::new(
            unknown.as_str(),
            "unknown parameter; expected service_config, max_attempts_limit, hedging_delay or node",
        ));
    }
    let node: NodeChoice = match params.get("node") {
        None => NodeChoice::Same,
        Some(value) => serde_json::from_value(value.clone()).map_err(|_| {
            FieldError::new(
                "node",
                format!("expected \"same\" or \"next\", found `{value}`"),
            )
        })?,
    };
    let limit = match params.get("max_attempts_limit") {
        None => DEFAULT_MAX_ATTEMPTS_LIMIT,
        Some(value) => value
            .as_u64()
            .filter(|n| (2..=u64::from(MAX_ATTEMPTS_LIMIT)).contains(n))
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| {
                FieldError::new(
                    "max_attempts_limit",
                    format!("expected an integer from 2 to {MAX_ATTEMPTS_LIMIT}, found `{value}`"),
                )
            })?,
    };
    let config = match params.get("service_config") {
        None => {
            return Err(FieldError::new(
                "service_config",
                "required: a gRPC service config ({\"methodConfig\": [...]})",
            ))
        }
        Some(Value::String(text)) => serde_json::from_str(text)
            .map_err(|e| FieldError::new("service_config", format!("not JSON: {e}")))?,
        Some(value) => value.clone(),
    };
    let config = ServiceConfig::parse(&config, limit).map_err(|e| e.within("service_config"))?;
    Ok(match params.get("hedging_delay") {
        None => GrpcRetry::new(config),
        Some(delay) => GrpcRetry::with_observed_hedging_delay(config, observed_delay(delay)?),
    }
    .retrying_on(node))
}

/// The `grpc` built-in's `hedging_delay`: `{ percentile, min_delay_ms, max_delay_ms }`, as a
/// `speculative_execution` writes one.
fn observed_delay(value: &Value) -> Result<QuantileDelay, FieldError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Written {
        percentile: f64,
        #[serde(default)]
        min_delay_ms: u64,
        max_delay_ms: u64,
    }
    let written: Written = serde_json::from_value(value.clone()).map_err(|e| {
        FieldError::new(
            "hedging_delay",
            format!("{e}; expected {{ percentile, min_delay_ms, max_delay_ms }}"),
        )
    })?;
    let (min, max) = (written.min_delay_ms, written.max_delay_ms);
    QuantileDelay::new(
        written.percentile,
        Duration::from_millis(min),
        Duration::from_millis(max),
    )
    .map_err(|e| {
        let text = e.to_string();
        let (name, why) = text.split_once(": ").unwrap_or(("percentile", &text));
        FieldError::new(format!("hedging_delay.{name}"), why)
    })
}

/// The `http` built-in from its parameters.
pub(super) fn http_policy(params: &Map<String, Value>) -> Result<HttpRetry, FieldError> {
    let p: HttpParams = read(params)?;
    if p.max_attempts < 1 {
        return Err(FieldError::new(
            "max_attempts",
            "expected at least 1 (the first attempt counts)",
        ));
    }
    let backoff = backoff(
        (p.initial_ms, p.max_ms, p.multiplier, 0.0),
        ["initial_ms", "max_ms", "multiplier", "jitter"],
    )?;
    if let Some(bad) = p.statuses.iter().find(|s| !(400..=599).contains(*s)) {
        return Err(FieldError::new(
            "statuses",
            format!("{bad} is not an error status; expected statuses from 400 to 599"),
        ));
    }
    let strategy = HttpRetry::default()
        .max_attempts(p.max_attempts)
        .backoff(backoff.min(), backoff.max(), backoff.factor())
        .statuses(p.statuses)
        .respect_retry_after(p.respect_retry_after)
        .retry_after_max(Duration::from_millis(p.retry_after_max_ms));
    Ok(match p.attempt_timeout_ms {
        Some(ms) => strategy.attempt_timeout(Duration::from_millis(ms)),
        None => strategy,
    })
}
