//! gRFC A44's conversion of an Envoy `RetryPolicy` into a gRPC (A6) `retryPolicy`, and what
//! Rebound adds where A44 stops: `per_try_timeout` becomes the attempt timeout, and a hedge
//! policy hedging on it becomes `hedge_on_attempt_timeout`. A44's rules, each a test below:
//! `retry_on` keeps the conditions of `x-envoy-retry-grpc-on` and ignores the rest (no
//! condition left: no retry policy); `num_retries` defaults to 1, must not be 0, and gives
//! `maxAttempts = num_retries + 1` (A6 caps it at 5); `retry_back_off` defaults to 25 ms and
//! 250 ms, its `base_interval` is required, `max_interval` defaults to ten times it, each at
//! least 1 ms; the multiplier is 2. A44's text also asks for intervals greater than zero and a
//! maximum no less than the base; gRPC's own client accepts both (its values floored at 1 ms),
//! and Rebound reads the resources as gRPC does (docs/decisions.md "xDS").

use std::time::Duration;

use serde_json::{json, Value};

use super::envoy::{HedgePolicy, RetryPolicy};
use crate::field_error::FieldError;

/// The conditions of `x-envoy-retry-grpc-on`, with the status each retries.
const GRPC_CONDITIONS: [(&str, &str); 5] = [
    ("cancelled", "CANCELLED"),
    ("deadline-exceeded", "DEADLINE_EXCEEDED"),
    ("internal", "INTERNAL"),
    ("resource-exhausted", "RESOURCE_EXHAUSTED"),
    ("unavailable", "UNAVAILABLE"),
];

/// Envoy's retry host predicate that moves a retry off the hosts already tried.
const PREVIOUS_HOSTS: &str = "envoy.retry_host_predicates.previous_hosts";

/// `retry_back_off`'s defaults (Envoy's API, A44).
const DEFAULT_BASE: Duration = Duration::from_millis(25);

/// What a route's retry and hedge policies become.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// The A6 `retryPolicy` (JSON), none when no condition is left to retry on.
    pub retry_policy: Option<Value>,
    /// The attempt timeout (`per_try_timeout`), when set and not zero.
    pub attempt_timeout: Option<Duration>,
    /// Whether an attempt's timeout sends a copy beside it instead of cutting it.
    pub hedge_on_attempt_timeout: bool,
    /// Whether a retry goes to another host than the attempts before (the previous-hosts
    /// predicate).
    pub next_node: bool,
    /// What was read and left unused: ignored `retry_on` conditions and unsupported fields.
    pub ignored: Vec<String>,
}

/// A duration as proto3 JSON writes it (`"0.025s"`).
pub(super) fn proto_duration(d: Duration) -> String {
    match d.subsec_nanos() {
        0 => format!("{}s", d.as_secs()),
        nanos => {
            let fraction = format!("{nanos:09}");
            format!("{}.{}s", d.as_secs(), fraction.trim_end_matches('0'))
        }
    }
}

/// The backoff of `policy`: its initial and maximum delays, each at least 1 ms, as gRPC's
/// clients read them (docs/decisions.md "xDS": a zero or inverted interval is not refused).
fn backoff(policy: &RetryPolicy, at: &str) -> Result<(Duration, Duration), FieldError> {
    let Some(back_off) = &policy.retry_back_off else {
        return Ok((DEFAULT_BASE, DEFAULT_BASE * 10));
    };
    let floor = |d: Duration| d.max(Duration::from_millis(1));
    let Some(base) = back_off.base_interval.map(floor) else {
        return Err(FieldError::new(
            format!("{at}.retry_back_off.base_interval"),
            "required when retry_back_off is set (gRFC A44)",
        ));
    };
    let max = back_off.max_interval.map_or(base * 10, floor);
    Ok((base, max))
}

/// Converts `policy` (at field path `at`) and the hedge policy that applies beside it.
pub fn convert(
    policy: &RetryPolicy,
    hedge: Option<&HedgePolicy>,
    at: &str,
) -> Result<Converted, FieldError> {
    let mut ignored = Vec::new();
    let mut codes = Vec::new();
    for condition in policy
        .retry_on
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
    {
        match GRPC_CONDITIONS.iter().find(|(name, _)| *name == condition) {
            Some((_, code)) if !codes.contains(code) => codes.push(*code),
            Some(_) => {}
            None => ignored.push(format!("retry_on `{condition}`")),
        }
    }
    let retries = match policy.num_retries {
        None => 1,
        Some(0) => {
            return Err(FieldError::new(
                format!("{at}.num_retries"),
                "must be greater than zero (gRFC A44)",
            ))
        }
        Some(n) => n,
    };
    let (initial, max) = backoff(policy, at)?;
    let mut next_node = false;
    for predicate in &policy.retry_host_predicates {
        match predicate.as_str() {
            PREVIOUS_HOSTS => next_node = true,
            other => ignored.push(format!("retry_host_predicate `{other}`")),
        }
    }
    let attempt_timeout = policy.per_try_timeout.filter(|d| !d.is_zero());
    let hedge_on_attempt_timeout =
        hedge.is_some_and(|h| h.hedge_on_per_try_timeout) && attempt_timeout.is_some();
    if hedge
        .and_then(|h| h.initial_requests)
        .is_some_and(|n| n > 1)
    {
        ignored.push("hedge_policy.initial_requests".to_owned());
    }
    let retry_policy = (!codes.is_empty()).then(|| {
        json!({
            "maxAttempts": u64::from(retries) + 1,
            "initialBackoff": proto_duration(initial),
            "maxBackoff": proto_duration(max),
            "backoffMultiplier": 2,
            "retryableStatusCodes": codes,
        })
    });
    Ok(Converted {
        retry_policy,
        attempt_timeout,
        hedge_on_attempt_timeout,
        next_node,
        ignored,
    })
}
