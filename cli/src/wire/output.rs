//! A decision as JSON (`rebound eval` lines, `POST /v1/decide` answers, `rebound test`); the schema is
//! documented in `docs/decision-json.md`.

use std::time::Duration;

use rebound::classify::{Classification, FailureKind};
use rebound::{CancelReason, Decision, RetryAction, RetryError, RetryReason};
use rebound::{DecisionId, PolicyFailure};
use serde_json::{json, Map, Value};

/// Milliseconds with microsecond precision.
fn millis(d: Duration) -> f64 {
    (d.as_micros() as f64) / 1000.0
}

/// A reason as the decision JSON's `reason` field takes it: the name, or for a reason with
/// data an object with one key (`{"read_timeout": {...}}`), which `parse_reason` reads back.
pub fn reason(reason: &RetryReason) -> Value {
    let data = |value: Value| {
        let mut object = Map::new();
        object.insert(reason.name().to_ascii_lowercase(), value);
        Value::Object(object)
    };
    match reason {
        RetryReason::ReadTimeout(d) => data(json!(d)),
        RetryReason::WriteTimeout(d) => data(json!(d)),
        RetryReason::Unavailable(d) => data(json!(d)),
        RetryReason::RequestAborted(d) => data(json!(d)),
        RetryReason::ErrorResponse(d) => data(json!(d)),
        RetryReason::Simple(_) | RetryReason::Other(_) => reason.name().into(),
    }
}

/// A request ending with `error`: `cancel` with the error's name, the reason and the context.
fn ended(error: &RetryError, reason: &RetryReason) -> Value {
    let mut out = json!({
        "decision": "cancel",
        "error": error.name(),
        "reason": reason.name(),
    });
    if let RetryError::RequestCanceled { reason: why, .. } = error {
        out["cancel_reason"] = CancelReason::name(why).into();
        if let CancelReason::PolicyFailed(failure, _) = why {
            out["policy_failure"] = failure.kind.name().into();
            out["detail"] = failure.detail.as_str().into();
        }
    }
    out["error_context"] = serde_json::to_value(error.context()).expect("serialisable");
    out
}

/// The orchestrator's `decision` for a request that failed for `reason`, made after
/// `attempts` retries (including this decision's).
pub fn decision(decision: &Decision, reason: &RetryReason, attempts: u32) -> Value {
    // The same names as the library's metrics give (docs/observability.md).
    let name = rebound::telemetry::decision_label(decision);
    match decision {
        Decision::Retry(plan) => json!({
            "decision": name,
            "delay_ms": millis(plan.delay),
            "node": plan.node,
            "consistency": plan.consistency,
            "capped": false,
            "source": match plan.source {
                rebound::DelaySource::ControlledBackoff => "controlled_backoff",
                rebound::DelaySource::Strategy => "strategy",
                _ => "other",
            },
            "reason": reason.name(),
            "retry_attempts": plan.attempt,
        }),
        Decision::Timeout { after, error } => json!({
            "decision": name,
            "error": error.name(),
            "delay_ms": millis(*after),
            "capped": true,
            "reason": reason.name(),
            "retry_attempts": attempts,
            "error_context": error.context(),
        }),
        Decision::Fail(error) => ended(error, reason),
        Decision::Ignore | Decision::AlreadyDone => {
            json!({"decision": name, "reason": reason.name()})
        }
        other => {
            json!({"decision": "other", "detail": format!("{other:?}"), "reason": reason.name()})
        }
    }
}

/// A policy's own answer, before the orchestrator (`rebound test --raw`): `decision` is
/// `retry` (with `delay_ms`, `node`, `consistency`), `no_retry`, `ignore`, `rethrow`, `fail`
/// (with `error`) or `policy_failed` (with `policy_failure` and `detail`).
pub fn action(answer: &Result<RetryAction, PolicyFailure>) -> Value {
    match answer {
        Ok(RetryAction::RetryAfter {
            delay,
            node,
            consistency,
        }) => json!({
            "decision": "retry",
            "delay_ms": millis(*delay),
            "node": node,
            "consistency": consistency,
        }),
        Ok(RetryAction::NoRetry) => json!({"decision": "no_retry"}),
        Ok(RetryAction::Ignore) => json!({"decision": "ignore"}),
        Ok(RetryAction::Rethrow) => json!({"decision": "rethrow"}),
        Ok(RetryAction::Fail(error)) => json!({"decision": "fail", "error": error.to_string()}),
        Ok(RetryAction::PolicyFailed(kind)) => {
            json!({"decision": "policy_failed", "policy_failure": kind.name(), "detail": null})
        }
        Err(failure) => json!({
            "decision": "policy_failed",
            "policy_failure": failure.kind.name(),
            "detail": failure.detail,
        }),
        Ok(other) => json!({"decision": "other", "detail": format!("{other:?}")}),
    }
}

/// A response the classifier settles without the orchestrator: a success, or a failure that is
/// not retried. `None` for a retryable response.
pub fn settled(classification: &Classification) -> Option<Value> {
    match classification {
        Classification::Success => Some(json!({"decision": "success"})),
        Classification::Retry { .. } => None,
        Classification::Fail(failure) => Some(json!({
            "decision": "not_retried",
            "code": failure.code,
            "name": failure.name,
            "kind": failure_kind(failure.kind),
        })),
        other => Some(json!({"decision": "other", "detail": format!("{other:?}")})),
    }
}

/// A classification as `rebound classify --json` and `POST /v1/classify` print it.
pub fn classification(classification: &Classification) -> Value {
    match classification {
        Classification::Success => json!({"classification": "success"}),
        Classification::Retry { reason, retry_spec } => json!({
            "classification": "retry",
            "reason": reason.name(),
            "allows_non_idempotent_retry": reason.allows_non_idempotent_retry(),
            "always_retry": reason.always_retry(),
            "retry_spec": retry_spec,
        }),
        Classification::Fail(failure) => json!({
            "classification": "not_retried",
            "code": failure.code,
            "name": failure.name,
            "kind": failure_kind(failure.kind),
        }),
        other => json!({"classification": "other", "detail": format!("{other:?}")}),
    }
}

/// The JSON name of a failure kind.
pub fn failure_kind(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::NotRetryable => "not_retryable",
        FailureKind::CasMismatch => "cas_mismatch",
        FailureKind::CollectionNotFound => "collection_not_found",
        FailureKind::DcpExcluded => "dcp_excluded",
        FailureKind::ErrorMapNoRetry => "error_map_no_retry",
        FailureKind::UnknownStatus => "unknown_status",
    }
}

/// An input that could not be decided: `{"error": {"field", "message"}}`, plus the line number
/// for `eval`.
pub fn input_error(field: &str, message: &str, line: Option<usize>) -> Value {
    let mut error = Map::new();
    if let Some(line) = line {
        error.insert("line".into(), line.into());
    }
    error.insert("field".into(), field.into());
    error.insert("message".into(), message.into());
    json!({ "error": error })
}

/// Adds which decision this is and which request's trail it belongs to: `decision_id`,
/// unique and time-ordered, and `request_id`, shared by the decisions of one request's retries.
pub fn with_ids(mut out: Value, decision_id: DecisionId, request_id: u64) -> Value {
    out["decision_id"] = decision_id.to_string().into();
    out["request_id"] = request_id.into();
    out
}

/// Adds who decided: the policy and its version.
pub fn with_policy(mut out: Value, policy: &str, version: &str) -> Value {
    out["policy"] = policy.into();
    out["version"] = version.into();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::input::parse_reason;

    /// What `reason` writes, `parse_reason` reads back: every variant a policy can be asked
    /// about (the unknown name aside, which input refuses by design).
    #[test]
    fn reasons_round_trip_through_json() {
        for sample in rebound::grid::every_reason() {
            if matches!(sample, RetryReason::Other(_)) {
                continue;
            }
            let written = reason(&sample);
            assert_eq!(parse_reason(&written).unwrap(), sample, "{written}");
        }
    }
}
