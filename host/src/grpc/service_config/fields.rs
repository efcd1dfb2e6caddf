//! Reading a service config's fields: each `methodConfig` entry's names, its `retryPolicy` or
//! `hedgingPolicy`, and `retryThrottling`, checked by A6's validation rules. Apart from the
//! types they build, so that what a config means and how its JSON is refused read separately.

use std::time::Duration;

use serde_json::{Map, Value};

use super::{error, nominal_table, HedgingPolicyConfig, MethodName, RetryPolicy, RetryThrottling};
use crate::field_error::FieldError;
use crate::grpc::proto_json;
use crate::grpc::status::GrpcCode;

/// The proto3 JSON duration at `path`.
fn duration(value: &Value, path: &str, zero: bool) -> Result<Duration, FieldError> {
    proto_json::duration(value, zero).map_err(|e| error(path, e.0))
}

/// The proto3 JSON `uint32` at `path`, at least `least`.
fn uint32(value: &Value, path: &str, least: u32) -> Result<u32, FieldError> {
    match proto_json::uint32(value) {
        Err(e) => Err(error(path, e.0)),
        Ok(n) if n < least => Err(error(
            path,
            format!("expected an integer of at least {least}, found `{value}`"),
        )),
        Ok(n) => Ok(n),
    }
}

/// The proto3 JSON float at `path`, finite and greater than 0.
fn positive_float(value: &Value, path: &str) -> Result<f64, FieldError> {
    let n = proto_json::float(value).map_err(|e| error(path, e.0))?;
    if n > 0.0 && n.is_finite() {
        Ok(n)
    } else {
        Err(error(
            path,
            format!("expected a number greater than 0, found `{value}`"),
        ))
    }
}

pub(super) fn object<'a>(
    value: &'a Value,
    path: &str,
) -> Result<&'a Map<String, Value>, FieldError> {
    value.as_object().ok_or_else(|| {
        error(
            if path.is_empty() { "(root)" } else { path },
            format!("expected a JSON object, found `{value}`"),
        )
    })
}

pub(super) fn names(entry: &Map<String, Value>, at: &str) -> Result<Vec<MethodName>, FieldError> {
    let list = entry
        .get("name")
        .and_then(Value::as_array)
        .filter(|list| !list.is_empty())
        .ok_or_else(|| {
            error(
                format!("{at}.name"),
                "expected a non-empty array of {\"service\": ..., \"method\": ...}",
            )
        })?;
    let text = |name: &Map<String, Value>, key: &str, path: &str| match name.get(key) {
        None => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(error(
            format!("{path}.{key}"),
            format!("expected a string, found `{other}`"),
        )),
    };
    list.iter()
        .enumerate()
        .map(|(j, name)| {
            let path = format!("{at}.name[{j}]");
            let name = object(name, &path)?;
            let service = text(name, "service", &path)?;
            let method = text(name, "method", &path)?;
            if service.is_none() && method.is_some() {
                return Err(error(
                    format!("{path}.method"),
                    "a method name needs its service (`service`: \"package.Service\")",
                ));
            }
            let service = service.unwrap_or_default();
            let matched = match (&method, service.is_empty()) {
                (_, true) => String::new(),
                (Some(method), false) => format!("/{service}/{method}"),
                (None, false) => format!("/{service}/"),
            };
            Ok(MethodName {
                service,
                method,
                matched,
            })
        })
        .collect()
}

pub(super) fn retry_policy(
    value: &Value,
    at: &str,
    max_attempts_limit: u32,
) -> Result<RetryPolicy, FieldError> {
    let policy = object(value, at)?;
    let field = |key: &str| {
        policy
            .get(key)
            .ok_or_else(|| error(format!("{at}.{key}"), "required"))
    };
    let max_attempts = max_attempts(policy, at, max_attempts_limit)?;
    let initial_backoff = duration(
        field("initialBackoff")?,
        &format!("{at}.initialBackoff"),
        false,
    )?;
    let max_backoff = duration(field("maxBackoff")?, &format!("{at}.maxBackoff"), false)?;
    let backoff_multiplier = positive_float(
        field("backoffMultiplier")?,
        &format!("{at}.backoffMultiplier"),
    )?;
    let per_attempt_recv_timeout = (policy.get("perAttemptRecvTimeout"))
        .map(|value| duration(value, &format!("{at}.perAttemptRecvTimeout"), false))
        .transpose()?;
    let codes_at = format!("{at}.retryableStatusCodes");
    // grpc-java: the codes may be empty only when attempts time out (they are then retried).
    let codes = field("retryableStatusCodes")?
        .as_array()
        .filter(|codes| !codes.is_empty() || per_attempt_recv_timeout.is_some())
        .ok_or_else(|| {
            error(
                &codes_at,
                "expected a non-empty array of status codes (empty only with perAttemptRecvTimeout)",
            )
        })?;
    let retryable_status_codes = codes
        .iter()
        .enumerate()
        .map(|(i, code)| {
            GrpcCode::from_json(code).map_err(|e| e.within(&format!("{codes_at}[{i}]")))
        })
        .collect::<Result<_, _>>()?;
    Ok(RetryPolicy {
        max_attempts,
        initial_backoff,
        max_backoff,
        backoff_multiplier,
        retryable_status_codes,
        per_attempt_recv_timeout,
        nominal_nanos: nominal_table(
            initial_backoff,
            max_backoff,
            backoff_multiplier,
            max_attempts,
        ),
    })
}

/// `maxAttempts` of a retry or hedging policy at `at`: an integer greater than 1, capped at
/// the client's limit.
pub(super) fn max_attempts(
    policy: &Map<String, Value>,
    at: &str,
    max_attempts_limit: u32,
) -> Result<u32, FieldError> {
    let value = policy
        .get("maxAttempts")
        .ok_or_else(|| error(format!("{at}.maxAttempts"), "required"))?;
    let n = uint32(value, &format!("{at}.maxAttempts"), 2)?;
    Ok(n.min(max_attempts_limit.max(2)))
}

/// gRFC A6 "Validation of hedgingPolicy".
pub(super) fn hedging_policy(
    value: &Value,
    at: &str,
    max_attempts_limit: u32,
) -> Result<HedgingPolicyConfig, FieldError> {
    let policy = object(value, at)?;
    let max_attempts = max_attempts(policy, at, max_attempts_limit)?;
    let hedging_delay = match policy.get("hedgingDelay") {
        Some(delay) => duration(delay, &format!("{at}.hedgingDelay"), true)?,
        None => Duration::ZERO,
    };
    let codes_at = format!("{at}.nonFatalStatusCodes");
    let non_fatal_status_codes = match policy.get("nonFatalStatusCodes") {
        None => Vec::new(),
        Some(codes) => codes
            .as_array()
            .ok_or_else(|| error(&codes_at, "expected an array of status codes"))?
            .iter()
            .enumerate()
            .map(|(i, code)| {
                GrpcCode::from_json(code).map_err(|e| e.within(&format!("{codes_at}[{i}]")))
            })
            .collect::<Result<_, _>>()?,
    };
    Ok(HedgingPolicyConfig {
        max_attempts,
        hedging_delay,
        non_fatal_status_codes,
    })
}

pub(super) fn throttling(value: &Value) -> Result<RetryThrottling, FieldError> {
    let at = "retryThrottling";
    let throttling = object(value, at)?;
    let tokens = throttling
        .get("maxTokens")
        .ok_or_else(|| error("retryThrottling.maxTokens", "required"))?;
    let max_tokens = uint32(tokens, "retryThrottling.maxTokens", 1)?;
    if max_tokens > 1000 {
        return Err(error(
            "retryThrottling.maxTokens",
            format!("expected an integer from 1 to 1000, found `{tokens}`"),
        ));
    }
    let ratio = throttling
        .get("tokenRatio")
        .ok_or_else(|| error("retryThrottling.tokenRatio", "required"))?;
    let token_ratio = positive_float(ratio, "retryThrottling.tokenRatio")?;
    // Decimal places beyond three are ignored (0.5466 is 0.546). A success never gives back
    // more than the count holds, so a larger ratio is `maxTokens`: nothing is sized or summed
    // from a number past it.
    let token_ratio = (token_ratio.min(f64::from(max_tokens)) * 1000.0).trunc() / 1000.0;
    if token_ratio == 0.0 {
        return Err(error(
            "retryThrottling.tokenRatio",
            format!("`{ratio}` is 0 once cut to three decimal places"),
        ));
    }
    Ok(RetryThrottling {
        max_tokens,
        token_ratio,
    })
}
