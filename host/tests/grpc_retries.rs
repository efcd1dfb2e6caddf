//! gRPC calls decided by the `grpc` built-in as gRFC A6 specifies its retry policy (sections
//! "Maximum Number of Retries", "Exponential Backoff" in its current text, "Retryable Status
//! Codes", "Pushback", "Limits on Retries and Hedges"), through the orchestrator, and the
//! safety guard for calls not declared idempotent (docs/decisions.md "Retries of HTTP requests
//! and gRPC calls").

use crate::common;

use std::time::{Duration, Instant};

use rebound::config::{Builtin, BuiltinPolicy};
use rebound::grpc::GrpcCode;
use rebound::{
    reasons, Decision, DecisionContext, Orchestrator, Pushback, Request, RequestType, RetryReason,
};
use serde_json::json;

const METHOD: &str = "/shop.Inventory/Get";

/// The `grpc` built-in with A6's example policy (4 attempts, 0.1 s doubling to 1 s,
/// UNAVAILABLE) for `shop.Inventory`, `max_attempts` replaced by `attempts`.
fn orchestrator(attempts: u32) -> Orchestrator {
    let params = json!({"service_config": {"methodConfig": [{
        "name": [{"service": "shop.Inventory"}],
        "retryPolicy": {
            "maxAttempts": attempts,
            "initialBackoff": "0.1s",
            "maxBackoff": "1s",
            "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE"]
        }
    }]}});
    let policy = BuiltinPolicy::new(Builtin::Grpc, params.as_object().unwrap()).unwrap();
    Orchestrator::new(policy.strategy())
}

/// An idempotent call of `METHOD` with a 60 s deadline, already sent.
fn call(start: Instant) -> Request {
    let mut request = Request::new_at(1, RequestType::Grpc, Duration::from_secs(60), start)
        .unwrap()
        .with_route(METHOD)
        .with_authority("inventory.internal:443")
        .with_idempotent(true);
    request.mark_dispatched("inventory-1");
    request
}

fn unavailable() -> RetryReason {
    RetryReason::GrpcStatus(GrpcCode::Unavailable)
}

fn decide(
    orchestrator: &Orchestrator,
    request: &mut Request,
    reason: &RetryReason,
    pushback: Option<Pushback>,
) -> Decision {
    let context = DecisionContext::new(reason)
        .with_pushback(pushback)
        .at(request.start() + Duration::from_millis(10));
    futures::executor::block_on(orchestrator.decide(request, &context))
}

fn delay(decision: &Decision) -> Option<Duration> {
    match decision {
        Decision::Retry(plan) => Some(plan.delay),
        _ => None,
    }
}

/// The retries granted in a row for UNAVAILABLE, until the first refusal.
fn retries_in_a_row(orchestrator: &Orchestrator) -> u32 {
    let mut request = call(Instant::now());
    let mut retries = 0;
    while delay(&decide(orchestrator, &mut request, &unavailable(), None)).is_some() {
        retries += 1;
        assert!(retries < 100, "never stopped");
    }
    retries
}

/// A6 "Maximum Number of Retries": `maxAttempts` counts the original attempt (4 attempts are
/// 3 retries); "Limits on Retries and Hedges": above the client's cap of 5 it is 5.
#[test]
fn max_attempts_counts_the_original_and_is_capped_at_five() {
    assert_eq!(retries_in_a_row(&orchestrator(4)), 3);
    assert_eq!(retries_in_a_row(&orchestrator(2)), 1);
    assert_eq!(retries_in_a_row(&orchestrator(9)), 4);
}

/// A6 "Exponential Backoff" (its text since the 2024 revision): the first retry after
/// `initialBackoff × random(0.8, 1.2)`, the n-th after
/// `min(initialBackoff × backoffMultiplier^(n−1), maxBackoff) × random(0.8, 1.2)`. Over many
/// calls each retry's delay stays in its band and spreads over it.
#[test]
fn backoff_is_exponential_with_a_fifth_of_jitter_either_way() {
    let orchestrator = orchestrator(5);
    let nominal_ms = [100.0, 200.0, 400.0, 800.0];
    let mut seen: Vec<Vec<f64>> = vec![Vec::new(); 4];
    for _ in 0..300 {
        let mut request = call(Instant::now());
        for (n, delays) in seen.iter_mut().enumerate() {
            let decision = decide(&orchestrator, &mut request, &unavailable(), None);
            let ms = delay(&decision).expect("a retry").as_secs_f64() * 1000.0;
            assert!(
                ms >= nominal_ms[n] * 0.8 - 1e-6 && ms <= nominal_ms[n] * 1.2 + 1e-6,
                "retry {}: {ms} ms",
                n + 1
            );
            delays.push(ms);
        }
    }
    for (n, delays) in seen.iter().enumerate() {
        let low = delays.iter().cloned().fold(f64::MAX, f64::min);
        let high = delays.iter().cloned().fold(0.0, f64::max);
        assert!(
            low < nominal_ms[n] * 0.9 && high > nominal_ms[n] * 1.1,
            "retry {}: {low}..{high} ms",
            n + 1
        );
    }
    // maxBackoff bounds the nominal delay: 0.1 s × 2^4 is past 1 s.
    let capped = orchestrator_with_backoff("0.1s", "1s", 4.0);
    let mut request = call(Instant::now());
    let _ = decide(&capped, &mut request, &unavailable(), None);
    let second = delay(&decide(&capped, &mut request, &unavailable(), None)).unwrap();
    assert!(second >= Duration::from_millis(320) && second <= Duration::from_millis(480));
    let third = delay(&decide(&capped, &mut request, &unavailable(), None)).unwrap();
    assert!(third >= Duration::from_millis(800) && third <= Duration::from_millis(1200));
}

fn orchestrator_with_backoff(initial: &str, max: &str, multiplier: f64) -> Orchestrator {
    let params = json!({"service_config": {"methodConfig": [{
        "name": [{}],
        "retryPolicy": {
            "maxAttempts": 5,
            "initialBackoff": initial,
            "maxBackoff": max,
            "backoffMultiplier": multiplier,
            "retryableStatusCodes": [14]
        }
    }]}});
    let policy = BuiltinPolicy::new(Builtin::Grpc, params.as_object().unwrap()).unwrap();
    Orchestrator::new(policy.strategy())
}

/// A6 "Retryable Status Codes": a status is retried only if the policy lists it; a call
/// whose method no method config names, or whose config has no retry policy, is not retried.
/// A failure before the call was sent is handled by the policy (A6 "Transparent Retries": a
/// pick that failed transiently); a connection lost in flight counts as UNAVAILABLE.
#[test]
fn only_listed_statuses_are_retried() {
    let orchestrator = orchestrator(4);
    for code in GrpcCode::ALL {
        let mut request = call(Instant::now());
        let reason = RetryReason::GrpcStatus(code);
        let retried = delay(&decide(&orchestrator, &mut request, &reason, None)).is_some();
        assert_eq!(retried, code == GrpcCode::Unavailable, "{code}");
    }
    let mut other = call(Instant::now()).with_route("/shop.Orders/Get");
    assert!(delay(&decide(&orchestrator, &mut other, &unavailable(), None)).is_none());
    let mut not_sent = Request::new(2, RequestType::Grpc, Duration::from_secs(60))
        .unwrap()
        .with_route(METHOD);
    let refused_connection = reasons::SOCKET_NOT_AVAILABLE;
    assert!(delay(&decide(
        &orchestrator,
        &mut not_sent,
        &refused_connection,
        None
    ))
    .is_some());
    // A connection lost in flight is UNAVAILABLE to a gRPC client: retried where UNAVAILABLE
    // is listed (this call is declared idempotent).
    let lost = reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT;
    assert!(delay(&decide(
        &orchestrator,
        &mut call(Instant::now()),
        &lost,
        None
    ))
    .is_some());
    let only_exhausted = orchestrator_listing(json!(["RESOURCE_EXHAUSTED"]));
    assert!(delay(&decide(
        &only_exhausted,
        &mut call(Instant::now()),
        &lost,
        None
    ))
    .is_none());
}

/// The `grpc` built-in for `shop.Inventory` retrying only `codes`.
fn orchestrator_listing(codes: serde_json::Value) -> Orchestrator {
    let params = json!({"service_config": {"methodConfig": [{
        "name": [{"service": "shop.Inventory"}],
        "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
            "backoffMultiplier": 2, "retryableStatusCodes": codes}
    }]}});
    let policy = BuiltinPolicy::new(Builtin::Grpc, params.as_object().unwrap()).unwrap();
    Orchestrator::new(policy.strategy())
}

/// A6 "Pushback": a pushback of n ms is a retry after exactly n ms (even past maxBackoff);
/// the retry after it starts again from `initialBackoff`; a negative pushback ends retries;
/// and a pushback never grants an attempt past `maxAttempts`.
#[test]
fn pushback_times_the_retry_exactly_and_resets_the_backoff() {
    let orchestrator = orchestrator(5);
    let mut request = call(Instant::now());
    for _ in 0..2 {
        let _ = decide(&orchestrator, &mut request, &unavailable(), None);
    }
    let pushed = Some(Pushback::After(Duration::from_millis(2500)));
    let exact = decide(&orchestrator, &mut request, &unavailable(), pushed);
    assert_eq!(delay(&exact), Some(Duration::from_millis(2500)));
    assert_eq!(request.retries_since_pushback(), 0);
    let next = delay(&decide(&orchestrator, &mut request, &unavailable(), None)).unwrap();
    assert!(
        next >= Duration::from_millis(80) && next <= Duration::from_millis(120),
        "after a pushback: {next:?}"
    );
    // The fifth attempt was the last: a pushback does not grant a sixth.
    let past = decide(&orchestrator, &mut request, &unavailable(), pushed);
    assert_eq!(delay(&past), None);

    let mut stopped = call(Instant::now());
    let stop = decide(
        &orchestrator,
        &mut stopped,
        &unavailable(),
        Some(Pushback::Stop),
    );
    assert_eq!(delay(&stop), None);
    assert_eq!(Pushback::from_millis(-1), Pushback::Stop);
}

/// docs/decisions.md "Retries of HTTP requests and gRPC calls": a call not declared
/// idempotent that was sent is never retried, whatever a policy answers; one that was never
/// sent may be.
#[test]
fn a_call_not_declared_idempotent_is_retried_only_if_never_sent() {
    let always = common::always_retry(5);
    let grpc = orchestrator(5);
    for orchestrator in [&always, &grpc] {
        let mut sent = Request::new(3, RequestType::Grpc, Duration::from_secs(60))
            .unwrap()
            .with_route(METHOD);
        sent.mark_dispatched("inventory-1");
        assert!(delay(&decide(orchestrator, &mut sent, &unavailable(), None)).is_none());
        let mut never_sent = Request::new(4, RequestType::Grpc, Duration::from_secs(60))
            .unwrap()
            .with_route(METHOD);
        let reason = reasons::SOCKET_NOT_AVAILABLE;
        assert!(delay(&decide(orchestrator, &mut never_sent, &reason, None)).is_some());
    }
}

/// A6 "Throttling Retry Attempts and Hedged RPCs": with `retryThrottling {maxTokens: 4,
/// tokenRatio: 1}`, each failed attempt to a server name takes a token and nothing is retried
/// at or below 2; another server name keeps its own count; successful calls reported to the
/// orchestrator give tokens back, and retries come back.
#[test]
fn throttling_per_server_name_engages_and_releases() {
    use rebound::{Decider, Outcome};
    let params = json!({"service_config": {
        "methodConfig": [{
            "name": [{"service": "shop.Inventory"}],
            "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.1s", "maxBackoff": "1s",
                "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}
        }],
        "retryThrottling": {"maxTokens": 4, "tokenRatio": 1}
    }});
    let policy = BuiltinPolicy::new(Builtin::Grpc, params.as_object().unwrap()).unwrap();
    let orchestrator = Orchestrator::new(policy.strategy());
    let to = |server: &str| call(Instant::now()).with_authority(server.to_owned());
    let mut first = to("inventory:443");
    assert!(delay(&decide(&orchestrator, &mut first, &unavailable(), None)).is_some());
    assert!(delay(&decide(&orchestrator, &mut first, &unavailable(), None)).is_none());
    let mut second = to("inventory:443");
    assert!(delay(&decide(&orchestrator, &mut second, &unavailable(), None)).is_none());
    let mut elsewhere = to("catalog:443");
    assert!(delay(&decide(&orchestrator, &mut elsewhere, &unavailable(), None)).is_some());
    for _ in 0..3 {
        let done = to("inventory:443");
        let succeeded = Outcome::Succeeded { attempts: 1 };
        (orchestrator.controls(&done)).report(&done, succeeded, Instant::now());
    }
    let mut after = to("inventory:443");
    assert!(delay(&decide(&orchestrator, &mut after, &unavailable(), None)).is_some());
}

/// docs/http-and-grpc.md "Attempt timeouts": an attempt cut by the policy's
/// `perAttemptRecvTimeout` is retried under the policy whatever its codes list (gRPC clients
/// retry it so); one cut by another attempt timeout counts as DEADLINE_EXCEEDED, retried only
/// when that code is listed; a call not declared idempotent is still never sent again.
#[test]
fn attempts_cut_by_their_timeout_are_retried_as_grpc_clients_retry_them() {
    let with = |codes: serde_json::Value, per_attempt: Option<&str>| {
        let mut policy = json!({
            "maxAttempts": 3,
            "initialBackoff": "0.1s",
            "maxBackoff": "1s",
            "backoffMultiplier": 2,
            "retryableStatusCodes": codes
        });
        if let Some(timeout) = per_attempt {
            policy["perAttemptRecvTimeout"] = json!(timeout);
        }
        let params = json!({"service_config": {"methodConfig": [{
            "name": [{"service": "shop.Inventory"}],
            "retryPolicy": policy
        }]}});
        let policy = BuiltinPolicy::new(Builtin::Grpc, params.as_object().unwrap()).unwrap();
        Orchestrator::new(policy.strategy())
    };
    let retried = |orchestrator: &Orchestrator, idempotent: bool| {
        let mut request = call(Instant::now()).with_idempotent(idempotent);
        delay(&decide(
            orchestrator,
            &mut request,
            &reasons::ATTEMPT_TIMEOUT,
            None,
        ))
        .is_some()
    };
    let per_attempt = with(json!([]), Some("0.2s"));
    assert!(
        retried(&per_attempt, true),
        "perAttemptRecvTimeout, no codes"
    );
    assert!(!retried(&per_attempt, false), "not declared idempotent");
    assert!(retried(&with(json!(["DEADLINE_EXCEEDED"]), None), true));
    assert!(!retried(&with(json!(["UNAVAILABLE"]), None), true));
    let strategy = with(json!([]), Some("0.2s"));
    let request = call(Instant::now());
    let controls = rebound::Decider::controls(&strategy, &request);
    assert_eq!(
        controls.attempt_timeout(&request),
        Some(Duration::from_millis(200)),
        "the executor cuts the call's attempts after perAttemptRecvTimeout"
    );
    let other = call(Instant::now()).with_route("/shop.Orders/Place");
    assert_eq!(
        controls.attempt_timeout(&other),
        None,
        "a method it does not name"
    );
}

/// docs/http-and-grpc.md "Attempt timeouts": a `perAttemptRecvTimeout` not shorter than its
/// method config's `timeout` can never fire; it is accepted and warned of (the registry logs
/// the warning with the file, line and field), one shorter is not.
#[test]
fn an_attempt_timeout_that_can_never_fire_is_warned_of() {
    let config = |per_attempt: &str| {
        json!({"service_config": {"methodConfig": [{
            "name": [{"service": "shop.Inventory"}],
            "timeout": "1s",
            "retryPolicy": {
                "maxAttempts": 3,
                "initialBackoff": "0.1s",
                "maxBackoff": "1s",
                "backoffMultiplier": 2,
                "retryableStatusCodes": ["UNAVAILABLE"],
                "perAttemptRecvTimeout": per_attempt
            }
        }]}})
    };
    let warnings = |per_attempt: &str| {
        let params = config(per_attempt);
        let policy = BuiltinPolicy::new(Builtin::Grpc, params.as_object().unwrap()).unwrap();
        policy.warnings()
    };
    let never = warnings("1s");
    assert_eq!(never.len(), 1);
    assert_eq!(
        never[0].field,
        "service_config.methodConfig[0].retryPolicy.perAttemptRecvTimeout"
    );
    assert!(never[0].message.contains("never fire"), "{}", never[0]);
    assert!(warnings("0.5s").is_empty());
}
