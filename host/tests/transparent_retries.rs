//! gRFC A6 "Transparent Retries" and "When Retries are Valid" through the orchestrator: how far
//! a failed attempt got decides before any policy does (docs/decisions.md "gRPC transparent
//! retries and commit"). A call that never left the client is sent again until the deadline, a
//! refused one once, neither counted as an attempt nor in the throttle; a dropped or committed
//! call is never sent again, whatever the policy answers.

use std::time::{Duration, Instant};

use rebound::backoff::controlled_backoff;
use rebound::config::{Builtin, BuiltinPolicy};
use rebound::grpc::GrpcCode;
use rebound::{
    reasons, CancelReason, Decision, DecisionContext, DelaySource, Orchestrator, Progress, Request,
    RequestType, RetryError, RetryReason,
};
use serde_json::{json, Value};

const METHOD: &str = "/shop.Inventory/Get";

/// The `grpc` built-in for `shop.Inventory` with `retry_policy` (none when null) and
/// `throttling` (none when null).
fn orchestrator(retry_policy: Value, throttling: Value) -> Orchestrator {
    let mut method = json!({"name": [{"service": "shop.Inventory"}]});
    if !retry_policy.is_null() {
        method["retryPolicy"] = retry_policy;
    }
    let mut config = json!({"methodConfig": [method]});
    if !throttling.is_null() {
        config["retryThrottling"] = throttling;
    }
    let params = json!({ "service_config": config });
    let policy = BuiltinPolicy::new(Builtin::Grpc, params.as_object().unwrap()).unwrap();
    Orchestrator::new(policy.strategy())
}

/// Up to `attempts` attempts on UNAVAILABLE, 0.1 s doubling to 1 s.
fn retrying(attempts: u32) -> Value {
    json!({"maxAttempts": attempts, "initialBackoff": "0.1s", "maxBackoff": "1s",
        "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]})
}

/// A call of `METHOD` with a deadline of `deadline_ms`, not declared idempotent.
fn call(start: Instant, deadline_ms: u64) -> Request {
    Request::new_at(
        1,
        RequestType::Grpc,
        Duration::from_millis(deadline_ms),
        start,
    )
    .unwrap()
    .with_route(METHOD)
    .with_authority("inventory.internal:443")
}

fn unavailable() -> RetryReason {
    RetryReason::GrpcStatus(GrpcCode::Unavailable)
}

/// The decision on `request`'s failure with `reason`, having got as far as `progress`, at
/// `elapsed` since its start.
fn decide(
    orchestrator: &Orchestrator,
    request: &mut Request,
    (reason, progress): (&RetryReason, Progress),
    elapsed: Duration,
) -> Decision {
    let context = DecisionContext::new(reason)
        .with_progress(progress)
        .at(request.start() + elapsed);
    futures::executor::block_on(orchestrator.decide(request, &context))
}

fn cancel_reason(decision: &Decision) -> &'static str {
    match decision {
        Decision::Fail(RetryError::RequestCanceled { reason, .. }) => reason.name(),
        other => panic!("expected a cancellation, got {other:?}"),
    }
}

/// A6: a call whose pick succeeded but that never left the client "can transparently retry
/// until a success occurs, or the RPC's deadline passes", "regardless of the retry
/// configuration", and such retries "do not count toward the limit of configured RPC
/// attempts". Paced by the controlled backoff, it ends at its deadline as a timeout; a call
/// not declared idempotent is sent again too (the server never saw it).
#[test]
fn a_call_that_never_left_the_client_is_retried_until_its_deadline_uncounted() {
    let orchestrator = orchestrator(Value::Null, Value::Null);
    let start = Instant::now();
    let mut request = call(start, 3_000);
    let mut elapsed = Duration::ZERO;
    let mut retries = 0;
    let ending = loop {
        let failure = (&reasons::SOCKET_NOT_AVAILABLE, Progress::NotSent);
        match decide(&orchestrator, &mut request, failure, elapsed) {
            Decision::Retry(plan) => {
                assert_eq!(plan.source, DelaySource::Transparent);
                assert_eq!(plan.delay, controlled_backoff(retries));
                assert_eq!(plan.attempt, 0, "not counted as a retry");
                elapsed += plan.delay;
                retries += 1;
            }
            other => break other,
        }
    };
    assert!(matches!(ending, Decision::Timeout { .. }), "{ending:?}");
    assert_eq!(request.retry_attempts(), 0);
    assert_eq!(request.transparent_retries(), retries);
    assert!(retries >= 5, "retried until the deadline: {retries}");
}

/// A6: a call that reached the server's transport but not its application (`REFUSED_STREAM`)
/// is retried "immediately ... once. If this fails, then the RPC will be handled by the
/// configured retry policy": with no retry policy it ends; with one, the policy retries it and
/// counts that retry.
#[test]
fn a_refused_call_is_retried_once_at_once_then_its_policy_decides() {
    let refused = (&unavailable(), Progress::Refused);
    let start = Instant::now();
    let without_policy = orchestrator(Value::Null, Value::Null);
    let mut request = call(start, 60_000).with_idempotent(true);
    let first = decide(&without_policy, &mut request, refused, Duration::ZERO);
    let Decision::Retry(plan) = first else {
        panic!("{first:?}")
    };
    assert_eq!(
        (plan.delay, plan.source),
        (Duration::ZERO, DelaySource::Transparent)
    );
    assert!(request.refused_retried());
    let second = decide(&without_policy, &mut request, refused, Duration::ZERO);
    assert_eq!(cancel_reason(&second), "NO_MORE_RETRIES");

    let with_policy = orchestrator(retrying(2), Value::Null);
    let mut request = call(start, 60_000).with_idempotent(true);
    let _ = decide(&with_policy, &mut request, refused, Duration::ZERO);
    let second = decide(&with_policy, &mut request, refused, Duration::ZERO);
    let Decision::Retry(plan) = second else {
        panic!("{second:?}")
    };
    assert_eq!((plan.source, plan.attempt), (DelaySource::Strategy, 1));
    let third = decide(&with_policy, &mut request, refused, Duration::from_secs(1));
    assert_eq!(
        cancel_reason(&third),
        "NO_MORE_RETRIES",
        "maxAttempts 2 reached"
    );
}

/// A6: transparent retries "do not count as failures when deciding whether to throttle retry
/// attempts". With 4 tokens a failure leaves 3 (above the threshold of 2) and a retry goes; had
/// the transparent retries before it taken tokens, it would be throttled.
#[test]
fn transparent_retries_take_no_throttle_token() {
    let throttling = json!({"maxTokens": 4, "tokenRatio": 1});
    let orchestrator = orchestrator(retrying(5), throttling);
    let start = Instant::now();
    let mut unsent = call(start, 60_000).with_idempotent(true);
    for _ in 0..4 {
        let failure = (&unavailable(), Progress::NotSent);
        let decision = decide(&orchestrator, &mut unsent, failure, Duration::ZERO);
        assert!(matches!(decision, Decision::Retry(_)), "{decision:?}");
    }
    let refused = (&unavailable(), Progress::Refused);
    let _ = decide(&orchestrator, &mut unsent, refused, Duration::ZERO);
    let mut seen = call(start, 60_000).with_idempotent(true);
    let failure = (&unavailable(), Progress::Processed);
    let decision = decide(&orchestrator, &mut seen, failure, Duration::ZERO);
    assert!(matches!(decision, Decision::Retry(_)), "{decision:?}");
    let decision = decide(&orchestrator, &mut seen, failure, Duration::ZERO);
    assert!(
        matches!(decision, Decision::Fail(_)),
        "2 tokens left: throttled, {decision:?}"
    );
}

/// A6: "If the pick result type was `DROP`, the RPC will fail immediately, without any
/// retries", whatever the retry policy says.
#[test]
fn a_dropped_call_fails_at_once_whatever_its_policy() {
    let orchestrator = orchestrator(retrying(5), Value::Null);
    let mut request = call(Instant::now(), 60_000).with_idempotent(true);
    let dropped = (&unavailable(), Progress::Dropped);
    let decision = decide(&orchestrator, &mut request, dropped, Duration::ZERO);
    assert_eq!(cancel_reason(&decision), "DROPPED");
    assert_eq!(request.retry_attempts(), 0);
}

/// A6 "When Retries are Valid": once response headers arrived the call is committed, and "the
/// client ... will not make any subsequent attempts, even if the current attempt fails with a
/// retryable status and there are retry attempts remaining"; nor does an always-retry reason
/// of reference 001 send it again.
#[test]
fn a_committed_call_is_never_retried_whatever_the_policy_answers() {
    let orchestrator = orchestrator(retrying(5), Value::Null);
    let mut request = call(Instant::now(), 60_000).with_idempotent(true);
    let committed = (&unavailable(), Progress::Committed);
    let decision = decide(&orchestrator, &mut request, committed, Duration::ZERO);
    assert_eq!(cancel_reason(&decision), "COMMITTED");
    let Decision::Fail(RetryError::RequestCanceled { reason, .. }) = decision else {
        unreachable!()
    };
    assert_eq!(reason, CancelReason::Committed(unavailable()));

    let kv = Orchestrator::default();
    let mut get = Request::new(2, RequestType::Get, Duration::from_secs(2)).unwrap();
    let committed = (&reasons::KV_NOT_MY_VBUCKET, Progress::Committed);
    let decision = decide(&kv, &mut get, committed, Duration::ZERO);
    assert_eq!(cancel_reason(&decision), "COMMITTED");
}

/// Unless said otherwise a failure was processed: the policy decides as it always did.
#[test]
fn a_processed_failure_is_the_policy_s_to_decide() {
    let orchestrator = orchestrator(Value::Null, Value::Null);
    let mut request = call(Instant::now(), 60_000).with_idempotent(true);
    let context = DecisionContext::new(&reasons::SOCKET_NOT_AVAILABLE).at(request.start());
    assert_eq!(context.progress(), Progress::Processed);
    let decision = futures::executor::block_on(orchestrator.decide(&mut request, &context));
    assert_eq!(cancel_reason(&decision), "NO_MORE_RETRIES");
}
