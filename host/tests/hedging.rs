//! Spec: hedged requests (docs/hedging.md) through the executor on tokio's paused clock: gRFC
//! A6 "Hedging Policy" and "Summary of Retry and Hedging Logic", the Cassandra drivers'
//! constant speculative execution, and the host's own rules (only idempotent requests, copies
//! paid from the throttle and budget, the deadline over every copy).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use rebound::config::RegistryConfig;
use rebound::executor::{Attempt, ExecuteError, Executor, Failure};
use rebound::grpc::{GrpcCode, ServiceConfig, DEFAULT_MAX_ATTEMPTS_LIMIT};
use rebound::hedge::ConstantSpeculativeExecution;
use rebound::registry::PolicyRegistry;
use rebound::throttle::{ScopedThrottle, ThrottleConfig, ThrottleKind};
use rebound::{GrpcRetry, NodeChoice, Orchestrator, Pushback, Request, RequestType, RetryReason};
use serde_json::json;

const METHOD: &str = "/shop.Inventory/Get";

fn service_config(max_attempts: u32, delay: &str) -> ServiceConfig {
    let config = json!({"methodConfig": [{
        "name": [{"service": "shop.Inventory"}],
        "hedgingPolicy": {
            "maxAttempts": max_attempts,
            "hedgingDelay": delay,
            "nonFatalStatusCodes": ["UNAVAILABLE", "INTERNAL", "ABORTED"]
        }
    }]});
    ServiceConfig::parse(&config, DEFAULT_MAX_ATTEMPTS_LIMIT).unwrap()
}

fn grpc(max_attempts: u32, delay: &str) -> Orchestrator {
    Orchestrator::new(Arc::new(GrpcRetry::new(service_config(
        max_attempts,
        delay,
    ))))
}

fn call(timeout: Duration) -> Request {
    Request::new(1, RequestType::Grpc, timeout)
        .unwrap()
        .with_route(METHOD)
        .with_authority("inventory:443")
        .with_idempotent(true)
        .with_start(tokio::time::Instant::now().into_std())
}

/// When each copy was sent, in ms since the request started, with its copy number.
#[derive(Clone, Default)]
struct Sent(Arc<Mutex<Vec<(u32, u128)>>>);

impl Sent {
    fn record(&self, attempt: &Attempt, start: tokio::time::Instant) {
        let at = (tokio::time::Instant::now() - start).as_millis();
        self.0.lock().unwrap().push((attempt.copy(), at));
    }
    fn get(&self) -> Vec<(u32, u128)> {
        self.0.lock().unwrap().clone()
    }
}

/// Sets its flag when dropped: a copy's call dropped before it ended was cancelled.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

fn status(code: GrpcCode) -> Failure<&'static str> {
    Failure::reason("status", RetryReason::GrpcStatus(code)).dispatched_to("inventory-1")
}

/// gRFC A6 "Hedging Policy", its example: with `maxAttempts` 4 and `hedgingDelay` 0.5 s, the
/// copies go at 0, 500, 1000 and 1500 ms while none answers; the deadline ends them all.
#[tokio::test(start_paused = true)]
async fn copies_go_every_hedging_delay_up_to_max_attempts() {
    let executor = Executor::new(grpc(4, "0.5s"));
    let sent = Sent::default();
    let start = tokio::time::Instant::now();
    let result: Result<(), _> = executor
        .run(call(Duration::from_secs(3)), |attempt| {
            sent.record(&attempt, start);
            async move {
                attempt.dispatched("inventory-1");
                std::future::pending::<Result<(), Failure<&str>>>().await
            }
        })
        .await;
    assert!(
        matches!(result, Err(ExecuteError::Ended { last: None, .. })),
        "{result:?}"
    );
    assert_eq!(sent.get(), [(0, 0), (1, 500), (2, 1000), (3, 1500)]);
    assert_eq!(tokio::time::Instant::now() - start, Duration::from_secs(3));
}

/// A6: "When a non-error response is received (in response to any of the hedged requests), all
/// outstanding hedged requests are canceled": a slow first copy loses to the hedge, and its
/// call is dropped.
#[tokio::test(start_paused = true)]
async fn the_first_answer_wins_and_the_slow_copy_is_cancelled() {
    let executor = Executor::new(grpc(2, "0.2s"));
    let cancelled = Arc::new(AtomicBool::new(false));
    let start = tokio::time::Instant::now();
    let value = executor
        .run(call(Duration::from_secs(5)), |attempt| {
            let cancelled = Arc::clone(&cancelled);
            async move {
                attempt.dispatched(format!("inventory-{}", attempt.copy()));
                if attempt.copy() == 0 {
                    let _flag = DropFlag(cancelled);
                    tokio::time::sleep(Duration::from_secs(4)).await;
                    Ok::<_, Failure<&str>>("slow")
                } else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Ok("hedge")
                }
            }
        })
        .await
        .unwrap();
    assert_eq!(value, "hedge");
    assert_eq!(
        tokio::time::Instant::now() - start,
        Duration::from_millis(250)
    );
    assert!(
        cancelled.load(Ordering::Relaxed),
        "the slow copy was dropped"
    );
}

/// A6 "Summary of Retry and Hedging Logic" 3: a non-fatal status sends the next copy at once;
/// the ones after it resume at `hedgingDelay`.
#[tokio::test(start_paused = true)]
async fn a_non_fatal_status_sends_the_next_copy_at_once() {
    let executor = Executor::new(grpc(3, "0.5s"));
    let sent = Sent::default();
    let start = tokio::time::Instant::now();
    let _: Result<(), _> = executor
        .run(call(Duration::from_secs(2)), |attempt| {
            sent.record(&attempt, start);
            async move {
                if attempt.copy() == 0 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Err(status(GrpcCode::Unavailable))
                } else {
                    std::future::pending().await
                }
            }
        })
        .await;
    assert_eq!(sent.get(), [(0, 0), (1, 100), (2, 600)]);
}

/// A6 "Summary" 2: a fatal status cancels the other copies and ends the call; a hedged method
/// has no retry policy, so nothing is retried.
#[tokio::test(start_paused = true)]
async fn a_fatal_status_ends_every_copy() {
    let executor = Executor::new(grpc(3, "0.1s"));
    let cancelled = Arc::new(AtomicBool::new(false));
    let sent = Sent::default();
    let start = tokio::time::Instant::now();
    let result: Result<(), _> = executor
        .run(call(Duration::from_secs(2)), |attempt| {
            sent.record(&attempt, start);
            let cancelled = Arc::clone(&cancelled);
            async move {
                if attempt.copy() == 0 {
                    let _flag = DropFlag(cancelled);
                    std::future::pending().await
                } else {
                    Err(status(GrpcCode::InvalidArgument))
                }
            }
        })
        .await;
    assert!(result.is_err());
    assert_eq!(sent.get(), [(0, 0), (1, 100)]);
    assert!(cancelled.load(Ordering::Relaxed));
    assert_eq!(
        tokio::time::Instant::now() - start,
        Duration::from_millis(100)
    );
}

/// A6 "Pushback": a pushback saying stop ends the sending of copies (the copies out go on); a
/// pushback with a delay sends the next copy after it.
#[tokio::test(start_paused = true)]
async fn pushback_stops_or_delays_the_next_copy() {
    let sent = Sent::default();
    let start = tokio::time::Instant::now();
    let executor = Executor::new(grpc(4, "0.5s"));
    let value = executor
        .run(call(Duration::from_secs(3)), |attempt| {
            sent.record(&attempt, start);
            async move {
                match attempt.copy() {
                    0 => {
                        tokio::time::sleep(Duration::from_millis(1_200)).await;
                        Ok("first")
                    }
                    _ => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        Err(status(GrpcCode::Unavailable).with_pushback(Pushback::Stop))
                    }
                }
            }
        })
        .await
        .unwrap();
    assert_eq!(value, "first");
    assert_eq!(sent.get(), [(0, 0), (1, 500)], "no copy after the stop");

    let sent = Sent::default();
    let start = tokio::time::Instant::now();
    let _: Result<(), _> = executor
        .run(call(Duration::from_secs(2)), |attempt| {
            sent.record(&attempt, start);
            async move {
                if attempt.copy() == 0 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    let after = Pushback::After(Duration::from_millis(300));
                    Err(status(GrpcCode::Unavailable).with_pushback(after))
                } else {
                    std::future::pending().await
                }
            }
        })
        .await;
    assert_eq!(sent.get(), [(0, 0), (1, 400), (2, 900), (3, 1400)]);
}

/// The Cassandra drivers' constant speculative execution: executions `delay` apart, each on the
/// next node of the query plan, at most `max_executions`; a failed one does not end the others.
#[tokio::test(start_paused = true)]
async fn speculative_executions_go_to_the_next_node() {
    let policy = ConstantSpeculativeExecution::new(Duration::from_millis(100), 3).unwrap();
    let executor = Executor::new(Orchestrator::default().with_hedging(Arc::new(policy)));
    let nodes = Arc::new(Mutex::new(Vec::new()));
    let request = Request::new(1, RequestType::Get, Duration::from_secs(1))
        .unwrap()
        .with_start(tokio::time::Instant::now().into_std());
    let value = executor
        .run(request, |attempt| {
            nodes.lock().unwrap().push((attempt.copy(), attempt.node()));
            async move {
                match attempt.copy() {
                    0 => std::future::pending().await,
                    1 => Err(Failure::reason(
                        "down",
                        rebound::reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
                    )),
                    _ => Ok("third"),
                }
            }
        })
        .await
        .unwrap();
    assert_eq!(value, "third");
    assert_eq!(
        *nodes.lock().unwrap(),
        [
            (0, NodeChoice::Same),
            (1, NodeChoice::Next),
            (2, NodeChoice::Next)
        ]
    );
}

/// The copies `executor` sends of a call none of whose copies answers within its 1 s deadline.
async fn copies_of_a_hanging_call(executor: &Executor) -> Vec<(u32, u128)> {
    let sent = Sent::default();
    let start = tokio::time::Instant::now();
    let _: Result<(), _> = executor
        .run(call(Duration::from_secs(1)), |attempt| {
            sent.record(&attempt, start);
            async move { std::future::pending::<Result<(), Failure<&str>>>().await }
        })
        .await;
    sent.get()
}

/// docs/decisions.md "Who pays for a hedge": a copy after the first goes only while the throttle
/// allows a retry (A6: "hedged RPCs will only be sent if `token_count` is greater than the
/// threshold"); a throttle at its threshold sends none.
#[tokio::test(start_paused = true)]
async fn a_throttle_at_its_threshold_sends_no_copy() {
    let throttle = ScopedThrottle::new(
        ThrottleConfig::new(ThrottleKind::Tokens {
            max_tokens: 2.0,
            token_ratio: 1.0,
        }),
        "policy".parse().unwrap(),
        16,
        Instant::now(),
    )
    .unwrap();
    throttle
        .for_value("", None, Instant::now())
        .failed_at(rebound::throttle::FailureClass::Other, Instant::now());
    let executor = Executor::new(grpc(4, "0.1s").with_throttle(Arc::new(throttle)));
    assert_eq!(copies_of_a_hanging_call(&executor).await, [(0, 0)]);
}

/// gRFC A6 "Throttling Retry Attempts and Hedged RPCs": with the service config's own
/// `retryThrottling` (4 tokens, threshold 2), each copy that fails with a non-fatal status takes
/// a token, and a copy after the first goes only while the count is above the threshold: the
/// first call's copies fail at once (4, then 3), the third copy finds the count at 2 and is not
/// sent, and the call's last failure takes one more; the next call's first copy hangs and no
/// hedge follows it (docs/decisions.md "Who pays for a hedge").
#[tokio::test(start_paused = true)]
async fn the_service_config_s_own_throttling_gates_hedged_copies() {
    let config = json!({
        "methodConfig": [{
            "name": [{"service": "shop.Inventory"}],
            "hedgingPolicy": {
                "maxAttempts": 4,
                "hedgingDelay": "0.1s",
                "nonFatalStatusCodes": ["UNAVAILABLE"]
            }
        }],
        "retryThrottling": {"maxTokens": 4, "tokenRatio": 1}
    });
    let config = ServiceConfig::parse(&config, DEFAULT_MAX_ATTEMPTS_LIMIT).unwrap();
    let executor = Executor::new(Orchestrator::new(Arc::new(GrpcRetry::new(config))));
    let sent = Sent::default();
    let start = tokio::time::Instant::now();
    let failed: Result<(), _> = executor
        .run(call(Duration::from_secs(1)), |attempt| {
            sent.record(&attempt, start);
            async move { Err(status(GrpcCode::Unavailable)) }
        })
        .await;
    assert!(failed.is_err());
    assert_eq!(sent.get(), [(0, 0), (1, 0)]);
    assert_eq!(copies_of_a_hanging_call(&executor).await, [(0, 0)]);
}

/// docs/decisions.md "Which requests are hedged", over the grid of reasons and every
/// request type: a request that is not idempotent never gets a second copy, whatever its
/// failures and however eagerly the policy hedges.
#[test]
fn a_non_idempotent_request_never_gets_a_second_copy() {
    let types: Vec<RequestType> = RequestType::ALL.to_vec();
    let reasons = rebound::grid::every_reason();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    proptest!(ProptestConfig::with_cases(64), |(
        type_at in 0..types.len(),
        reason_at in 0..reasons.len(),
        dispatched in any::<bool>(),
    )| {
        let request_type = types[type_at];
        let reason = reasons[reason_at].clone();
        let request = Request::new(1, request_type, Duration::from_millis(300))
            .unwrap()
            .with_idempotent(false);
        let policy = ConstantSpeculativeExecution::new(Duration::ZERO, 5).unwrap();
        let executor = Executor::new(Orchestrator::default().with_hedging(Arc::new(policy)));
        let copies = Arc::new(Mutex::new(Vec::new()));
        runtime.block_on(async {
            let request = request.with_start(tokio::time::Instant::now().into_std());
            let _: Result<(), _> = executor
                .run(request, |attempt| {
                    copies.lock().unwrap().push(attempt.copy());
                    let reason = reason.clone();
                    async move {
                        if dispatched {
                            attempt.dispatched("node-1");
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        Err::<(), _>(Failure::reason("failed", reason))
                    }
                })
                .await;
        });
        prop_assert!(copies.lock().unwrap().iter().all(|copy| *copy == 0));
    });
}

/// docs/registry.md: the `grpc` built-in hedges the methods whose service config has a
/// `hedgingPolicy`, and its requests are hedged through a registry as through an orchestrator.
#[test]
fn the_grpc_built_in_hedges_through_the_registry() {
    let config = r#"
default_policy = "inventory"
[watch]
enabled = false
[policies.inventory]
builtin = "grpc"
params.service_config = '''
{"methodConfig": [{"name": [{"service": "shop.Inventory"}],
  "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.05s", "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}
'''
"#;
    let config = RegistryConfig::parse(config, Path::new("rebound.toml"), Path::new(".")).unwrap();
    let registry = PolicyRegistry::new(config).unwrap();
    let request = Request::new(1, RequestType::Grpc, Duration::from_secs(1))
        .unwrap()
        .with_route(METHOD)
        .with_idempotent(true);
    let hedging = registry
        .controls(&request)
        .hedging(&request, Instant::now())
        .expect("it hedges");
    assert_eq!(hedging.policy().name(), "grpc");
}

/// docs/hedging.md "gRPC: `hedgingPolicy`": the documented configuration is valid and hedges
/// the method it names.
#[test]
fn the_documented_example_hedges() {
    let block = super::common::toml_block_after(
        include_str!("../../docs/hedging.md"),
        "## gRPC: `hedgingPolicy`",
    );
    let text = format!("default_policy = \"inventory\"\n[watch]\nenabled = false\n{block}");
    let config = RegistryConfig::parse(&text, Path::new("hedging.md"), Path::new("."))
        .unwrap_or_else(|e| panic!("{e}"));
    let registry = PolicyRegistry::new(config).unwrap();
    let request = Request::new(1, RequestType::Grpc, Duration::from_secs(1))
        .unwrap()
        .with_route(METHOD)
        .with_idempotent(true);
    assert!(registry
        .controls(&request)
        .hedging(&request, Instant::now())
        .is_some());
}

/// docs/decisions.md "Which requests are hedged" and docs/hedging.md "The host's rules": a
/// hedging policy for a route of requests that are not idempotent is a configuration warning and
/// never hedges them: a request type whose requests are not idempotent unless declared, routed to a
/// policy that hedges, is logged at WARN; such a request is never hedged.
#[test]
fn a_hedging_policy_routed_non_idempotent_requests_is_a_warning() {
    let config = r#"
default_policy = "inventory"
[watch]
enabled = false
[request_types]
upsert = "inventory"
[policies.inventory]
builtin = "grpc"
params.service_config = '{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 2}}]}'
"#;
    let log = super::common::logged_at(tracing::Level::WARN, || {
        let config =
            RegistryConfig::parse(config, Path::new("rebound.toml"), Path::new(".")).unwrap();
        let registry = PolicyRegistry::new(config).unwrap();
        let upsert = Request::new(1, RequestType::Upsert, Duration::from_secs(1)).unwrap();
        assert!(registry
            .controls(&upsert)
            .hedging(&upsert, Instant::now())
            .is_some());
        assert!(!rebound::hedge::Hedging::may_hedge(&upsert), "never hedged");
    });
    assert!(
        log.contains("request_type=upsert") && log.contains("never hedged"),
        "{log}"
    );
}

/// docs/hedging.md "Cassandra: constant speculative execution": a policy's
/// `speculative_execution` hedges its idempotent requests through a registry (instead of its
/// strategy's hedging); a `max_executions` out of range is refused naming the field.
#[test]
fn a_policy_s_speculative_execution_hedges_through_the_registry() {
    let config = |table: &str| {
        format!("default_policy = \"reads\"\n[watch]\nenabled = false\n[policies.reads]\nbuiltin = \"best-effort\"\n{table}\n")
    };
    let parse =
        |text: String| RegistryConfig::parse(&text, Path::new("rebound.toml"), Path::new("."));
    let registry = PolicyRegistry::new(
        parse(config(
            "speculative_execution = { delay_ms = 20, max_executions = 2 }",
        ))
        .unwrap(),
    )
    .unwrap();
    let get = Request::new(1, RequestType::Get, Duration::from_secs(1)).unwrap();
    let hedging = registry
        .controls(&get)
        .hedging(&get, Instant::now())
        .expect("it hedges");
    assert_eq!(hedging.policy().name(), "speculative-execution");
    let e = parse(config(
        "speculative_execution = { delay_ms = 20, max_executions = 9 }",
    ))
    .unwrap_err();
    assert_eq!(
        e.field, "policies.reads.speculative_execution.max_executions",
        "{e}"
    );
    assert!(e.message.contains("expected 1 to 5"), "{e}");
    let e = parse(config("speculative_execution = { delay_ms = 20 }")).unwrap_err();
    assert!(e.to_string().contains("max_executions"), "{e}");
}

/// `hedge_echo` (the world `hedging-policy` of the current `rebound:policy`) configured to send
/// a copy every `delay_ms` to the next node while fewer than `copies` are out.
fn hedge_echo(delay_ms: u64, copies: u32) -> Orchestrator {
    hedge_echo_built("hedge_echo", delay_ms, copies)
}

/// [`hedge_echo`], the component `guest` (the current one, or a released version's fixture).
fn hedge_echo_built(guest: &str, delay_ms: u64, copies: u32) -> Orchestrator {
    let params = [
        ("delay_ms".to_owned(), delay_ms.to_string()),
        ("copies".to_owned(), copies.to_string()),
    ];
    let strategy = crate::wasm_support::strategy(
        guest,
        rebound::wasm::WasmStrategyConfig::default().with_params(params),
    );
    Orchestrator::new(strategy)
}

/// docs/hedging.md "WebAssembly policies": a component exporting `hedging` is asked when each
/// copy goes and where; the executor sends them as it says (here every 100 ms to the next node,
/// three at most) and the first answer wins. The same for one built for 0.5.0, the first
/// version with `hedging` (docs/wit-versions.md "The rule").
#[tokio::test(start_paused = true)]
async fn a_webassembly_policy_hedges_through_the_executor() {
    use rebound::wasm::WitVersion;
    let released = crate::wasm_support::released(WitVersion::V0_5_0, "hedge_echo");
    for guest in ["hedge_echo", released.as_str()] {
        hedges_through_the_executor(Executor::new(hedge_echo_built(guest, 100, 3))).await;
    }
}

async fn hedges_through_the_executor(executor: Executor<Orchestrator>) {
    let start = tokio::time::Instant::now();
    let sent = Sent::default();
    let nodes = Arc::new(Mutex::new(Vec::new()));
    let value = executor
        .run(call(Duration::from_secs(5)), |attempt| {
            sent.record(&attempt, start);
            nodes.lock().unwrap().push(attempt.node());
            async move {
                match attempt.copy() {
                    2 => Ok::<_, Failure<&str>>("third"),
                    _ => std::future::pending().await,
                }
            }
        })
        .await
        .unwrap();
    assert_eq!(value, "third");
    assert_eq!(sent.get(), [(0, 0), (1, 100), (2, 200)]);
    assert_eq!(
        *nodes.lock().unwrap(),
        [NodeChoice::Same, NodeChoice::Next, NodeChoice::Next]
    );
}

/// docs/hedging.md "What no policy overrides": however eagerly a WebAssembly policy hedges, a
/// request that is not idempotent gets one copy; and the policy reads the request in flight
/// through `failure` (its client context `hedge=no` stops it).
#[tokio::test(start_paused = true)]
async fn a_webassembly_policy_hedges_no_write_and_reads_the_request_in_flight() {
    let executor = Executor::new(hedge_echo(10, 5));
    for request in [
        call(Duration::from_millis(500)).with_idempotent(false),
        call(Duration::from_millis(500)).with_client_context("hedge", "no"),
    ] {
        let copies = Arc::new(Mutex::new(0));
        let outcome = executor
            .run(request, |_| {
                *copies.lock().unwrap() += 1;
                std::future::pending::<Result<&str, Failure<&str>>>()
            })
            .await;
        assert!(outcome.is_err());
        assert_eq!(*copies.lock().unwrap(), 1);
    }
}

/// docs/hedging.md "WebAssembly policies": `hedging.is-fatal` decides which failures end the
/// request: `hedge_echo` makes INVALID_ARGUMENT fatal (no copy after it), UNAVAILABLE not (the
/// next copy goes).
#[tokio::test(start_paused = true)]
async fn a_webassembly_policy_says_which_failures_are_fatal() {
    let executor = Executor::new(hedge_echo(50, 3));
    for (code, copies) in [(GrpcCode::InvalidArgument, 1), (GrpcCode::Unavailable, 2)] {
        let sent = Arc::new(Mutex::new(0));
        let _ = executor
            .run(call(Duration::from_millis(500)), |attempt| {
                *sent.lock().unwrap() += 1;
                async move {
                    match attempt.copy() {
                        0 => Err(status(code)),
                        _ => Ok("copy"),
                    }
                }
            })
            .await;
        assert_eq!(*sent.lock().unwrap(), copies, "{code:?}");
    }
}

/// docs/wit-versions.md: hedging is an optional export; a component built for the world
/// `retry-policy` of 0.5.0, or for an earlier version, does not hedge.
#[test]
fn components_without_the_hedging_export_do_not_hedge() {
    use rebound::wasm::WitVersion;
    use rebound::Strategy;
    let strategy = |name: &str| crate::wasm_support::strategy(name, Default::default());
    assert!(strategy("hedge_echo").component().hedges());
    assert!(strategy("hedge_echo").hedging().is_some());
    for name in [
        "best_effort".to_owned(),
        crate::wasm_support::released(WitVersion::V0_4_0, "best_effort"),
    ] {
        let strategy = strategy(&name);
        assert!(!strategy.component().hedges(), "{name}");
        assert!(strategy.hedging().is_none(), "{name}");
    }
}
