//! A decision as JSON (`rebound eval` lines, `POST /v1/decide` answers, `rebound test`); the schema is
//! documented in `docs/decision-json.md`.

use rebound::classify::{Classification, FailureKind};
use rebound::DecisionId;
use serde_json::{json, Map, Value};

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

/// Adds how long the planned attempt may run before the caller cuts it (`attempt_timeout_ms`,
/// µs precision), when the request's controls cut attempts.
pub fn with_attempt_timeout(mut out: Value, timeout: Option<std::time::Duration>) -> Value {
    if let Some(timeout) = timeout {
        out["attempt_timeout_ms"] = json!((timeout.as_micros() as f64) / 1000.0);
    }
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
    use crate::wire::input::parse_reason;
    use rebound::decision_json::reason;
    use rebound::RetryReason;

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
