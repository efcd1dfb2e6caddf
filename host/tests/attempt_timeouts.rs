//! Attempt timeouts (docs/executor.md "Timing", docs/decisions.md "Attempt timeouts"): each
//! attempt is cut after its timeout and decided as an `ATTEMPT_TIMEOUT` failure; the request's
//! deadline still ends the request; a cut attempt of a non-idempotent request is never sent
//! again, and one that ends the request is a timeout, ambiguous when it was dispatched
//! (reference 002 "The Ubiquitous TimeoutException"). On tokio's paused clock: every wait is
//! exact and nothing sleeps for real.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rebound::config::RegistryConfig;
use rebound::executor::{Executor, Failure};
use rebound::hedge::ConstantSpeculativeExecution;
use rebound::registry::PolicyRegistry;
use rebound::{
    reasons, Decider, DecisionContext, NodeChoice, Orchestrator, ReasonKind, Request, RequestType,
    RetryAction, SyncStrategy,
};
use tokio::time::Instant;

use crate::common::{self, Answer};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Retries any failure after 10 ms, recording the reasons it was asked about.
#[derive(Debug, Default)]
struct Recording(Mutex<Vec<ReasonKind>>);

impl rebound::Strategy for Recording {
    fn name(&self) -> &str {
        "recording"
    }
}

impl SyncStrategy for Recording {
    fn answer(&self, _: &Request, context: &DecisionContext<'_>) -> RetryAction {
        self.0.lock().unwrap().push(context.reason().kind());
        RetryAction::RetryAfter {
            delay: MS(10),
            node: NodeChoice::Same,
            consistency: None,
            attempt_timeout: None,
        }
    }
}

/// An executor whose strategy retries every failure after 10 ms and whose attempts are cut
/// after `ms`.
fn cutting_after(ms: u64) -> Executor {
    Executor::new(Orchestrator::new(Arc::new(Recording::default())).with_attempt_timeout(MS(ms)))
}

/// A request started now on tokio's (paused) clock.
fn request(ty: RequestType, timeout_ms: u64) -> Request {
    Request::new(1, ty, MS(timeout_ms))
        .unwrap()
        .with_start(Instant::now().into_std())
}

/// One call of an operation answering its attempt number.
type Call = futures::future::BoxFuture<'static, Result<u32, Failure<&'static str>>>;

/// An operation whose first `stalls` calls never answer (dispatched when `dispatched`), and
/// whose later calls answer their attempt number; with the calls made.
fn stalling(
    stalls: u32,
    dispatched: bool,
) -> (
    Arc<AtomicU32>,
    impl FnMut(rebound::executor::Attempt) -> Call,
) {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let operation = move |attempt: rebound::executor::Attempt| {
        let n = counted.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            if dispatched {
                attempt.dispatched("node-1:11210");
            }
            if n < stalls {
                std::future::pending::<()>().await;
            }
            Ok(attempt.number())
        }) as Call
    };
    (calls, operation)
}

/// An attempt that stalls is cut at its timeout and retried: the request succeeds inside its
/// deadline after one attempt timeout and the strategy's delay, and the strategy was asked
/// about `ATTEMPT_TIMEOUT`.
#[tokio::test(start_paused = true)]
async fn a_stalled_attempt_is_cut_at_its_timeout_and_retried() {
    let strategy = Arc::new(Recording::default());
    let executor =
        Executor::new(Orchestrator::new(Arc::clone(&strategy) as _).with_attempt_timeout(MS(100)));
    let start = Instant::now();
    let (calls, operation) = stalling(1, true);
    let value = executor
        .run(request(RequestType::Get, 1000), operation)
        .await
        .unwrap();
    assert_eq!(value, 1, "the second attempt answered");
    assert_eq!(
        start.elapsed(),
        MS(110),
        "cut at 100 ms, retried 10 ms later"
    );
    assert_eq!(calls.load(Ordering::Relaxed), 2);
    assert_eq!(*strategy.0.lock().unwrap(), [ReasonKind::AttemptTimeout]);
}

/// An attempt timeout never extends the request: one longer than the time left leaves the
/// deadline to cut the attempt, and the request ends as a timeout at its deadline exactly.
#[tokio::test(start_paused = true)]
async fn an_attempt_timeout_never_extends_the_deadline() {
    let executor = cutting_after(500);
    let start = Instant::now();
    let (calls, operation) = stalling(u32::MAX, false);
    let error = executor
        .run(request(RequestType::Get, 300), operation)
        .await
        .unwrap_err();
    assert_eq!(start.elapsed(), MS(300));
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    let error = error.retry_error().unwrap();
    assert_eq!(error.name(), "UnambiguousTimeout");
    assert_eq!(error.context().reason.as_deref(), Some("TIMEOUT"));
}

/// An idempotent request whose attempts all stall is cut and retried until the deadline, which
/// ends it: attempts at 0, 110, 220 ms; the third is cut by the deadline at 300 ms.
#[tokio::test(start_paused = true)]
async fn attempts_that_keep_stalling_are_retried_until_the_deadline() {
    let executor = cutting_after(100);
    let start = Instant::now();
    let (calls, operation) = stalling(u32::MAX, true);
    let error = executor
        .run(request(RequestType::Get, 300), operation)
        .await
        .unwrap_err();
    assert_eq!(start.elapsed(), MS(300));
    assert_eq!(calls.load(Ordering::Relaxed), 3);
    let error = error.retry_error().unwrap();
    assert_eq!(error.name(), "UnambiguousTimeout");
    assert_eq!(error.context().retry_reasons, ["ATTEMPT_TIMEOUT"]);
}

/// Reference 001 "Retry Orchestration" (unsafe retries) and reference 002 "The Ubiquitous
/// TimeoutException": a non-idempotent request whose attempt is cut is never sent again, and
/// it ends at the attempt timeout as a timeout: ambiguous when the attempt was dispatched (it
/// may have been applied), unambiguous when it was not.
#[tokio::test(start_paused = true)]
async fn a_cut_non_idempotent_attempt_is_never_sent_again_and_ends_as_a_timeout() {
    let executor = cutting_after(100);
    for (dispatched, expected) in [(true, "AmbiguousTimeout"), (false, "UnambiguousTimeout")] {
        let start = Instant::now();
        let (calls, operation) = stalling(1, dispatched);
        let error = executor
            .run(request(RequestType::Upsert, 1000), operation)
            .await
            .unwrap_err();
        assert_eq!(calls.load(Ordering::Relaxed), 1, "dispatched={dispatched}");
        assert_eq!(start.elapsed(), MS(100), "ends when the attempt is cut");
        let error = error.retry_error().unwrap();
        assert_eq!(error.name(), expected, "dispatched={dispatched}");
        let why = error.context().reason.clone().unwrap();
        assert!(why.contains("ATTEMPT_TIMEOUT"), "{why}");
    }
}

/// A cut attempt that the policy does not retry, ignores or rethrows has no error of the
/// operation's to hand back: it ends as a timeout (`last` is none), never as a value.
#[tokio::test(start_paused = true)]
async fn a_cut_attempt_the_policy_does_not_retry_ends_as_a_timeout() {
    for action in [RetryAction::NoRetry, RetryAction::Ignore] {
        let executor =
            Executor::new(Orchestrator::new(Arc::new(Answer(action))).with_attempt_timeout(MS(50)));
        let start = Instant::now();
        let (calls, operation) = stalling(1, true);
        let error = executor
            .run(request(RequestType::Get, 1000), operation)
            .await
            .unwrap_err();
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        assert_eq!(start.elapsed(), MS(50), "ends when the attempt is cut");
        let ended = error.retry_error().expect("ended by the orchestrator");
        assert_eq!(ended.name(), "UnambiguousTimeout", "{action:?}");
        assert!(matches!(
            error,
            rebound::executor::ExecuteError::Ended { last: None, .. }
        ));
    }
}

/// The attempt is told when it is cut: its attempt timeout from its start, at the latest the
/// request's deadline.
#[tokio::test(start_paused = true)]
async fn an_attempt_is_told_when_it_is_cut() {
    let executor = cutting_after(100);
    let start = Instant::now();
    let cuts = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&cuts);
    executor
        .run(request(RequestType::Get, 150), move |attempt| {
            let seen = Arc::clone(&seen);
            async move {
                seen.lock().unwrap().push(attempt.cut_at() - start);
                std::future::pending::<Result<(), Failure<()>>>().await
            }
        })
        .await
        .unwrap_err();
    // The first at 0 + 100 ms; the second, sent at 110 ms, at the deadline (150 ms).
    assert_eq!(*cuts.lock().unwrap(), [MS(100), MS(150)]);
}

/// docs/registry.md: `attempt_timeout_ms` on a route wins over the policy's, which wins over
/// the built-in's own parameter; a request no route matches takes its policy's.
#[tokio::test(start_paused = true)]
async fn a_route_s_attempt_timeout_wins_over_its_policy_s_over_the_built_in_s() {
    let config = RegistryConfig::parse(
        r#"
default_policy = "web"
cache_dir = false
[watch]
enabled = false
[policies.web]
builtin = "http"
params = { attempt_timeout_ms = 300 }
[policies.orders]
builtin = "http"
params = { attempt_timeout_ms = 300 }
attempt_timeout_ms = 200
[[routes]]
path = "/v1/orders/*"
policy = "orders"
attempt_timeout_ms = 50
[[routes]]
path = "/v1/carts/*"
policy = "orders"
"#,
        Path::new("inline.toml"),
        Path::new("."),
    )
    .unwrap();
    let registry = PolicyRegistry::new(config).unwrap();
    let http = |route: &str| {
        Request::new(1, RequestType::Http, MS(1000))
            .unwrap()
            .with_route(route)
    };
    let timeout = |route: &str| {
        let request = http(route);
        Decider::controls(&registry, &request).attempt_timeout(&request)
    };
    assert_eq!(timeout("/v1/orders/7"), Some(MS(50)), "the route's");
    assert_eq!(timeout("/v1/carts/7"), Some(MS(200)), "the policy's");
    assert_eq!(timeout("/v1/other"), Some(MS(300)), "the built-in's");
}

/// docs/registry.md "Ranges of the numeric settings": a route's `attempt_timeout_ms` of 0 is
/// refused with the file, line and field.
#[test]
fn a_zero_route_attempt_timeout_is_refused_naming_the_field() {
    let error = RegistryConfig::parse(
        "default_policy = \"p\"\n[policies.p]\nbuiltin = \"http\"\n[[routes]]\npath = \"/a\"\npolicy = \"p\"\nattempt_timeout_ms = 0\n",
        Path::new("rebound.toml"),
        Path::new("."),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("rebound.toml:7"), "{error}");
    assert!(error.contains("attempt_timeout_ms"), "{error}");
}

/// The `http` built-in's `attempt_timeout_ms` (docs/http-and-grpc.md): cut attempts of an
/// idempotent request are retried like a connection lost in flight, and a POST's never.
#[tokio::test(start_paused = true)]
async fn the_http_built_in_retries_a_cut_get_and_never_a_cut_post() {
    let config = RegistryConfig::parse(
        "default_policy = \"web\"\ncache_dir = false\n[watch]\nenabled = false\n[policies.web]\nbuiltin = \"http\"\nparams = { attempt_timeout_ms = 100, initial_ms = 1, max_ms = 1 }\n",
        Path::new("inline.toml"),
        Path::new("."),
    )
    .unwrap();
    let executor = Executor::new(Arc::new(PolicyRegistry::new(config).unwrap()));
    for (method, expected_calls) in [
        (rebound::HttpMethod::Get, 2),
        (rebound::HttpMethod::Post, 1),
    ] {
        let (calls, operation) = stalling(1, true);
        let request = request(RequestType::Http, 1000).with_method(method);
        let result = executor.run(request, operation).await;
        assert_eq!(calls.load(Ordering::Relaxed), expected_calls, "{method:?}");
        assert_eq!(result.is_ok(), expected_calls == 2, "{method:?}");
    }
}

/// The orchestrator's reason table: `ATTEMPT_TIMEOUT` arises in flight, is asked about, and
/// does not allow a non-idempotent retry.
#[test]
fn attempt_timeout_is_an_in_flight_reason_without_non_idempotent_retry() {
    let kind = reasons::ATTEMPT_TIMEOUT.kind();
    assert_eq!(kind, ReasonKind::AttemptTimeout);
    assert_eq!(kind.name(), "ATTEMPT_TIMEOUT");
    assert_eq!(kind.stage(), rebound::Stage::InFlight);
    assert!(!kind.allows_non_idempotent_retry());
    assert!(!kind.always_retry());
}

/// docs/hedging.md with an attempt timeout: the timeout bounds the attempt and every copy of
/// it. Copies go at 0, 40 and 80 ms; all are cut at 100 ms; the retry, sent 10 ms later,
/// answers.
#[tokio::test(start_paused = true)]
async fn an_attempt_timeout_cuts_every_copy_of_a_hedged_attempt() {
    let hedging = ConstantSpeculativeExecution::new(MS(40), 3).unwrap();
    let executor = Executor::new(
        Orchestrator::new(Arc::new(Recording::default()))
            .with_hedging(Arc::new(hedging))
            .with_attempt_timeout(MS(100)),
    );
    let start = Instant::now();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&sent);
    let value = executor
        .run(request(RequestType::Get, 1000), move |attempt| {
            let at = start.elapsed();
            seen.lock()
                .unwrap()
                .push((attempt.number(), attempt.copy(), at));
            async move {
                if attempt.number() == 0 {
                    std::future::pending::<()>().await;
                }
                Ok::<_, Failure<()>>(attempt.copy())
            }
        })
        .await
        .unwrap();
    assert_eq!(value, 0, "the retry's first copy answered at once");
    assert_eq!(
        *sent.lock().unwrap(),
        [
            (0, 0, MS(0)),
            (0, 1, MS(40)),
            (0, 2, MS(80)),
            (1, 0, MS(110))
        ]
    );
}

/// What one call of the operation does in the property below.
#[derive(Debug, Clone)]
enum Behaviour {
    /// Never answers (cut by the attempt timeout or the deadline).
    Stall,
    /// Fails after `.0` ms for `.1`.
    Fail(u64, rebound::RetryReason),
    /// Answers after `.0` ms.
    Answer(u64),
}

fn any_behaviour() -> impl proptest::strategy::Strategy<Value = Behaviour> {
    use proptest::prelude::*;
    // AWS_THROTTLING is the one reason after which a written non-idempotent HTTP request may go
    // again (the service refused it unprocessed: docs/decisions.md "The AWS SDK"), held by
    // `strategy::aws::tests::a_non_idempotent_request_is_retried_only_after_throttling`.
    let reasons: Vec<_> = (rebound::grid::every_reason().into_iter())
        .filter(|r| r.name() != "AWS_THROTTLING")
        .collect();
    prop_oneof![
        Just(Behaviour::Stall),
        (0u64..150, proptest::sample::select(reasons)).prop_map(|(ms, r)| Behaviour::Fail(ms, r)),
        (0u64..150).prop_map(Behaviour::Answer),
    ]
}

/// Reference 001 "Retry Orchestration" (unsafe retries), over every combination of attempt
/// timeouts, hedging, calls that stall, fail or answer (for any reason but the AWS SDK's
/// throttling, the one that says the request was not processed), and strategies that always
/// retry: once a call of a non-idempotent HTTP request or gRPC call said it was dispatched, no
/// call is ever made again (no retry, no copy).
#[test]
fn no_attempt_timeout_hedging_or_answer_sends_a_non_idempotent_request_twice() {
    use proptest::prelude::*;
    let runtime = common::paused_runtime();
    proptest!(ProptestConfig::with_cases(128), |(
        timeout_ms in 1u64..200,
        hedge in proptest::option::of((0u64..60, 2u32..=5)),
        grpc in any::<bool>(),
        dispatch in proptest::collection::vec(any::<bool>(), 8),
        calls in proptest::collection::vec(any_behaviour(), 8),
    )| {
        let mut orchestrator = Orchestrator::new(Arc::new(Recording::default()))
            .with_attempt_timeout(MS(timeout_ms));
        if let Some((delay, copies)) = hedge {
            let policy = ConstantSpeculativeExecution::new(MS(delay), copies).unwrap();
            orchestrator = orchestrator.with_hedging(Arc::new(policy));
        }
        let executor = Executor::new(orchestrator);
        let made = Arc::new(Mutex::new(Vec::<bool>::new()));
        runtime.block_on(async {
            let request = if grpc {
                request(RequestType::Grpc, 2000).with_route("/shop.Orders/Place")
            } else {
                request(RequestType::Http, 2000).with_method(rebound::HttpMethod::Post)
            };
            let _ = executor
                .run(request.with_idempotent(false), |attempt| {
                    let mut made = made.lock().unwrap();
                    let n = made.len() % calls.len();
                    made.push(dispatch[n]);
                    let call = calls[n].clone();
                    let dispatched = dispatch[n];
                    async move {
                        if dispatched {
                            attempt.dispatched("node-1:443");
                        }
                        match call {
                            Behaviour::Stall => std::future::pending().await,
                            Behaviour::Fail(ms, reason) => {
                                tokio::time::sleep(MS(ms)).await;
                                Err(Failure::reason((), reason))
                            }
                            Behaviour::Answer(ms) => {
                                tokio::time::sleep(MS(ms)).await;
                                Ok(())
                            }
                        }
                    }
                })
                .await;
        });
        let made = made.lock().unwrap();
        let first_dispatched = made.iter().position(|dispatched| *dispatched);
        if let Some(at) = first_dispatched {
            prop_assert_eq!(at + 1, made.len(), "calls after a dispatched one: {:?}", made);
        }
    });
}

/// Envoy's `hedge_on_per_try_timeout` as `hedge_on_attempt_timeout` (docs/hedging.md): an
/// idempotent request's attempt that outlives its timeout is not cut; a copy goes beside it
/// (to the next node, paid like any hedge) and the first answer wins. A non-idempotent request
/// is never copied: its attempt is cut as without the setting, and never sent twice.
#[tokio::test(start_paused = true)]
async fn a_policy_hedging_on_attempt_timeouts_sends_a_copy_beside_the_slow_attempt() {
    let config = RegistryConfig::parse(
        "default_policy = \"p\"\ncache_dir = false\n[watch]\nenabled = false\n\
         [policies.p]\nbuiltin = \"best-effort\"\nattempt_timeout_ms = 100\n\
         hedge_on_attempt_timeout = true\n",
        Path::new("inline.toml"),
        Path::new("."),
    )
    .unwrap();
    let executor = Executor::new(Arc::new(PolicyRegistry::new(config).unwrap()));
    for (ty, expected) in [(RequestType::Get, Some(1)), (RequestType::Upsert, None)] {
        let start = Instant::now();
        let sent = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&sent);
        let result = executor
            .run(request(ty, 1000), move |attempt| {
                seen.lock().unwrap().push((
                    attempt.number(),
                    attempt.copy(),
                    attempt.node(),
                    start.elapsed(),
                ));
                async move {
                    attempt.dispatched("node-1:11210");
                    if attempt.copy() == 0 && attempt.number() == 0 {
                        // Answers, but only after two attempt timeouts.
                        tokio::time::sleep(MS(250)).await;
                    }
                    Ok::<_, Failure<()>>(attempt.copy())
                }
            })
            .await;
        let sent = sent.lock().unwrap().clone();
        match expected {
            Some(copy) => {
                assert_eq!(result.unwrap(), copy, "{ty}: the copy answered first");
                assert_eq!(
                    sent,
                    [
                        (0, 0, NodeChoice::Same, MS(0)),
                        (0, 1, NodeChoice::Next, MS(100))
                    ]
                );
                assert_eq!(start.elapsed(), MS(100));
            }
            None => {
                let error = result.unwrap_err();
                assert_eq!(error.retry_error().unwrap().name(), "AmbiguousTimeout");
                assert_eq!(sent, [(0, 0, NodeChoice::Same, MS(0))], "{ty}: one call");
                assert_eq!(start.elapsed(), MS(100), "{ty}: cut at its attempt timeout");
            }
        }
    }
}

/// docs/registry.md: a policy hedges one way; `hedge_on_attempt_timeout` beside a
/// `speculative_execution` is refused naming the field.
#[test]
fn hedging_on_attempt_timeouts_beside_speculative_execution_is_refused() {
    let error = RegistryConfig::parse(
        "default_policy = \"p\"\n[policies.p]\nbuiltin = \"best-effort\"\nattempt_timeout_ms = 100\nspeculative_execution = { delay_ms = 10, max_executions = 2 }\nhedge_on_attempt_timeout = true\n",
        Path::new("rebound.toml"),
        Path::new("."),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("rebound.toml:6"), "{error}");
    assert!(
        error.contains("policies.p.hedge_on_attempt_timeout"),
        "{error}"
    );
}
