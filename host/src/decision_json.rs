//! The decision JSON (`docs/decision-json.md`) as the library writes it: a decision request's
//! input (what `rebound eval` reads back), a reason, and the orchestrator's decision. The
//! decision log writes its lines with these, and `rebound eval`/`serve` answer with them, so a
//! logged decision and a replayed one are written alike.

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::action::{PolicyFailure, RetryAction};
use crate::decision::{Decision, DelaySource};
use crate::outcome::{CancelReason, RetryError};
use crate::progress::Progress;
use crate::pushback::Pushback;
use crate::reason::RetryReason;
use crate::request::Request;
use crate::strategy::DecisionContext;

/// Milliseconds with microsecond precision.
fn millis(duration: Duration) -> f64 {
    (duration.as_micros() as f64) / 1000.0
}

/// A reason as the decision JSON's `reason` field takes it: the name, or for a reason with
/// data an object with one key (`{"read_timeout": {...}}`), which `rebound eval` reads back.
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
        RetryReason::HttpStatus(status) => data(json!(status)),
        RetryReason::GrpcStatus(code) => data(json!(code)),
        RetryReason::Aws(error) => data(json!(error)),
        RetryReason::Simple(_) | RetryReason::Other(_) => reason.name().into(),
    }
}

/// The decision request for `request`, whose failure `context` describes, decided at `now`: the
/// request's facts (its `elapsed_ms` counted to `now`, in whole milliseconds), the reason, the
/// error-map spec, the server's pushback (`pushback_ms`, -1 for "do not retry") and how far the
/// attempt got (`progress`, when not `processed`) and the attempt timeout that cut it
/// (`attempt_timeout_ms`). The policy is named only when the request names one itself; `rebound eval` decides it again as given.
pub fn input(request: &Request, context: &DecisionContext<'_>, now: Instant) -> Value {
    let mut fields = Map::new();
    fields.insert("id".into(), request.id().into());
    fields.insert("type".into(), request.request_type().name().into());
    fields.insert("idempotent".into(), request.is_idempotent().into());
    fields.insert("readonly".into(), request.is_readonly().into());
    if let Some(method) = request.method() {
        fields.insert("method".into(), json!(method));
    }
    fields.insert("retry_attempts".into(), request.retry_attempts().into());
    let elapsed = request.elapsed_at(now).as_millis();
    fields.insert("elapsed_ms".into(), json!(elapsed));
    fields.insert("timeout_ms".into(), json!(request.timeout().as_millis()));
    fields.insert("dispatched".into(), request.was_dispatched().into());
    if let Some(node) = request.last_dispatched_to() {
        fields.insert("last_dispatched_to".into(), node.into());
    }
    fields.insert("completed".into(), request.is_done().into());
    if !request.client_context().is_empty() {
        fields.insert("client_context".into(), json!(request.client_context()));
    }
    if let Some(level) = request.consistency() {
        fields.insert("consistency".into(), json!(level));
    }
    if let Some(profile) = request.profile() {
        fields.insert("profile".into(), profile.into());
    }
    if let Some(authority) = request.authority() {
        fields.insert("authority".into(), authority.into());
    }
    if let Some(route) = request.route() {
        fields.insert("route".into(), route.into());
    }
    if request.retries_since_pushback() != request.retry_attempts() {
        let since = request.retries_since_pushback();
        fields.insert("retries_since_pushback".into(), since.into());
    }
    if request.transparent_retries() > 0 {
        let retries = request.transparent_retries();
        fields.insert("transparent_retries".into(), retries.into());
        fields.insert("refused_retried".into(), request.refused_retried().into());
    }
    let mut out = Map::new();
    if let Some(policy) = request.policy() {
        out.insert("policy".into(), policy.into());
    }
    out.insert("request".into(), Value::Object(fields));
    out.insert("reason".into(), reason(context.reason()));
    if let Some(spec) = context.error_map_spec() {
        out.insert("error_map_spec".into(), json!(spec));
    }
    match context.pushback() {
        Some(Pushback::After(delay)) => {
            out.insert("pushback_ms".into(), json!(delay.as_millis()));
        }
        Some(Pushback::Stop) => {
            out.insert("pushback_ms".into(), (-1).into());
        }
        None => {}
    }
    if context.progress() != Progress::Processed {
        out.insert("progress".into(), context.progress().name().into());
    }
    if let Some(timeout) = context.attempt_timeout() {
        out.insert("attempt_timeout_ms".into(), json!(timeout.as_millis()));
    }
    Value::Object(out)
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
    let name = decision.name();
    match decision {
        Decision::Retry(plan) => json!({
            "decision": name,
            "delay_ms": millis(plan.delay),
            "node": plan.node,
            "consistency": plan.consistency,
            "capped": false,
            "source": match plan.source {
                DelaySource::ControlledBackoff => "controlled_backoff",
                DelaySource::Strategy => "strategy",
                DelaySource::Transparent => "transparent",
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
    }
}

/// A policy's own answer, before the orchestrator (`rebound test --raw`; the shadow answers
/// of the decision log): `decision` is `retry` (with `delay_ms`, `node`, `consistency`),
/// `no_retry`, `ignore`, `rethrow`, `fail` (with `error`) or `policy_failed` (with
/// `policy_failure` and `detail`).
pub fn action(answer: &Result<RetryAction, PolicyFailure>) -> Value {
    match answer {
        Ok(RetryAction::RetryAfter {
            delay,
            node,
            consistency,
            attempt_timeout,
        }) => json!({
            "decision": "retry",
            "delay_ms": millis(*delay),
            "node": node,
            "consistency": consistency,
            "attempt_timeout_ms": attempt_timeout.map(millis),
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
    }
}
