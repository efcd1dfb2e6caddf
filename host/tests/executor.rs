//! The retry executor on tokio's paused clock, so every wait is exact and
//! no test sleeps for real. Each test names the rule it checks.

use crate::common::{self, Answer};

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rebound::cassandra::ConsistencyLevel;
use rebound::classify::{KvOpcode, Response};
use rebound::executor::{ExecuteError, Executor, Failure};
use rebound::DecisionContext;
use rebound::ReadTimeout;
use rebound::{
    reasons, NodeChoice, Orchestrator, Request, RequestType, RetryAction, RetryError, RetryReason,
    SyncStrategy,
};
use tokio::time::Instant;

/// Retries after a fixed delay on the node and at the consistency it is given.
#[derive(Debug)]
struct Fixed {
    delay: Duration,
    node: NodeChoice,
    consistency: Option<ConsistencyLevel>,
}

impl Fixed {
    fn after(delay: Duration) -> Arc<Self> {
        Arc::new(Fixed {
            delay,
            node: NodeChoice::Same,
            consistency: None,
        })
    }
}

impl rebound::Strategy for Fixed {
    fn name(&self) -> &str {
        "fixed"
    }
}

impl SyncStrategy for Fixed {
    fn answer(&self, _: &Request, _: &DecisionContext<'_>) -> RetryAction {
        RetryAction::RetryAfter {
            delay: self.delay,
            node: self.node,
            consistency: self.consistency,
            attempt_timeout: None,
        }
    }
}

/// A request started now on tokio's (paused) clock.
fn request(ty: RequestType, timeout_ms: u64) -> Request {
    Request::new(1, ty, Duration::from_millis(timeout_ms))
        .unwrap()
        .with_start(Instant::now().into_std())
}

fn fixed(strategy: Arc<Fixed>) -> Executor {
    Executor::new(Orchestrator::new(strategy))
}

/// Reference 001 "Retry Orchestration": after each failure the strategy's delay is slept,
/// then the request is dispatched again, until it succeeds.
#[tokio::test(start_paused = true)]
async fn retries_after_the_planned_delay_until_the_operation_succeeds() {
    let executor = fixed(Fixed::after(Duration::from_millis(10)));
    let start = Instant::now();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&calls);
    let value = executor
        .run(request(RequestType::Upsert, 1000), move |attempt| {
            let seen = Arc::clone(&seen);
            async move {
                seen.lock()
                    .unwrap()
                    .push((attempt.number(), start.elapsed()));
                if attempt.number() < 3 {
                    // Connection refused: nothing was sent (pre-dispatch).
                    Err(Failure::reason("refused", reasons::SOCKET_NOT_AVAILABLE))
                } else {
                    attempt.dispatched("node-1:11210");
                    Ok(42)
                }
            }
        })
        .await
        .unwrap();
    assert_eq!(value, 42);
    let ms = Duration::from_millis;
    assert_eq!(
        *calls.lock().unwrap(),
        vec![(0, ms(0)), (1, ms(10)), (2, ms(20)), (3, ms(30))]
    );
}

/// Reference 002 "The Ubiquitous TimeoutException" and reference 001 (a delay is never planned
/// past the deadline): a request that keeps failing ends exactly at its deadline, as an
/// unambiguous timeout when it is idempotent, with its attempts and reasons in the context.
#[tokio::test(start_paused = true)]
async fn a_request_that_keeps_failing_ends_exactly_at_its_deadline() {
    let executor = fixed(Fixed::after(Duration::from_millis(30)));
    let start = Instant::now();
    let calls = AtomicU32::new(0);
    let error = executor
        .run(request(RequestType::Get, 100), |attempt| {
            calls.fetch_add(1, Ordering::Relaxed);
            async move {
                attempt.dispatched("node-1:11210");
                Err::<(), _>(Failure::reason("busy", reasons::KV_TEMPORARY_FAILURE))
            }
        })
        .await
        .unwrap_err();
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(100),
        "ends at the deadline"
    );
    assert_eq!(
        calls.load(Ordering::Relaxed),
        4,
        "calls at 0, 30, 60 and 90 ms"
    );
    let ExecuteError::Ended { error, last } = error else {
        panic!("{error:?}")
    };
    assert_eq!(error.name(), "UnambiguousTimeout");
    assert_eq!(last, Some("busy"));
    let context = error.context();
    // Reference 001 "Retry Orchestration": the attempt is counted before the delay is capped,
    // so the retry planned at 90 ms that the deadline ends counts too.
    assert_eq!(context.retried, 4);
    assert_eq!(context.retry_reasons, vec!["KV_TEMPORARY_FAILURE"]);
    assert_eq!(context.timings.total_micros, 100_000);
    assert_eq!(context.last_dispatched_to.as_deref(), Some("node-1:11210"));
}

/// Reference 002: a request cut short by its deadline while in flight is an ambiguous timeout
/// if it was dispatched and is not idempotent, unambiguous otherwise; the call is dropped at
/// the deadline exactly.
#[tokio::test(start_paused = true)]
async fn an_attempt_in_flight_at_the_deadline_is_dropped_and_times_out() {
    let executor = Executor::new(Orchestrator::default());
    for (ty, dispatched, expected) in [
        (RequestType::Upsert, true, "AmbiguousTimeout"),
        (RequestType::Upsert, false, "UnambiguousTimeout"),
        (RequestType::Get, true, "UnambiguousTimeout"),
    ] {
        let start = Instant::now();
        let error = executor
            .run(request(ty, 250), |attempt| async move {
                if dispatched {
                    attempt.dispatched("node-2:11210");
                }
                std::future::pending::<Result<(), Failure<()>>>().await
            })
            .await
            .unwrap_err();
        assert_eq!(start.elapsed(), Duration::from_millis(250));
        let error = error.retry_error().expect("an outcome error");
        assert_eq!(error.name(), expected, "{ty} dispatched={dispatched}");
        assert_eq!(error.context().reason.as_deref(), Some("TIMEOUT"));
    }
}

/// Reference 001 "Retry Orchestration" (unsafe retries): a non-idempotent request whose socket
/// closed while it was in flight is never sent again; an idempotent one is retried.
#[tokio::test(start_paused = true)]
async fn a_non_idempotent_request_that_failed_in_flight_is_never_sent_again() {
    let executor = Executor::new(Orchestrator::default());
    for (ty, expected_calls) in [(RequestType::Increment, 1), (RequestType::Get, 2)] {
        let calls = AtomicU32::new(0);
        let result = executor
            .run(request(ty, 2500), |attempt| {
                let n = calls.fetch_add(1, Ordering::Relaxed);
                async move {
                    attempt.dispatched("node-1:11210");
                    if n == 0 {
                        Err(Failure::reason(
                            "closed",
                            reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
                        ))
                    } else {
                        Ok(n)
                    }
                }
            })
            .await;
        assert_eq!(calls.load(Ordering::Relaxed), expected_calls, "{ty}");
        if ty == RequestType::Increment {
            let error = result.unwrap_err();
            let error = error.retry_error().unwrap();
            assert_eq!(error.name(), "RequestCanceled");
            assert!(error.to_string().contains("SOCKET_CLOSED_WHILE_IN_FLIGHT"));
            assert!(!error.context().idempotent);
            assert_eq!(
                error.context().last_dispatched_to.as_deref(),
                Some("node-1:11210")
            );
        } else {
            assert_eq!(result.unwrap(), 1);
        }
    }
}

/// Reference 001 "Response Code Classification": a raw KV status is classified by the
/// executor; TMPFAIL (0x86) is retried even for a non-idempotent upsert, KEY_NOT_FOUND (0x01)
/// is not retried and hands back the operation's error.
#[tokio::test(start_paused = true)]
async fn raw_responses_are_classified() {
    let executor = Executor::new(Orchestrator::default());
    let upsert = KvOpcode::of(RequestType::Upsert).unwrap();
    let calls = AtomicU32::new(0);
    let value = executor
        .run(request(RequestType::Upsert, 2500), |attempt| {
            let n = calls.fetch_add(1, Ordering::Relaxed);
            async move {
                attempt.dispatched("node-1:11210");
                if n < 2 {
                    let tmpfail = Response::Kv {
                        opcode: upsert,
                        status: 0x86,
                    };
                    Err(Failure::response("tmpfail", tmpfail, None))
                } else {
                    Ok("stored")
                }
            }
        })
        .await
        .unwrap();
    assert_eq!((value, calls.load(Ordering::Relaxed)), ("stored", 3));

    let get = KvOpcode::of(RequestType::Get).unwrap();
    let error = executor
        .run(request(RequestType::Get, 2500), |_| async move {
            let not_found = Response::Kv {
                opcode: get,
                status: 0x01,
            };
            Err::<(), _>(Failure::response("not found", not_found, None))
        })
        .await
        .unwrap_err();
    let ExecuteError::NotRetried { error, context } = error else {
        panic!("{error:?}")
    };
    assert_eq!(error, "not found");
    assert_eq!((context.retried, context.cancelled), (0, false));
}

/// The executor spawns nothing: dropping its future (here by a `select!` timeout) stops the
/// request, and the operation is never called again.
#[tokio::test(start_paused = true)]
async fn dropping_the_future_stops_the_request() {
    let executor = fixed(Fixed::after(Duration::from_millis(10)));
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let run = executor.run(request(RequestType::Get, 10_000), move |_| {
        counted.fetch_add(1, Ordering::Relaxed);
        async { Err::<(), _>(Failure::reason((), reasons::SOCKET_NOT_AVAILABLE)) }
    });
    tokio::select! {
        _ = run => panic!("the request cannot end before its deadline"),
        () = tokio::time::sleep(Duration::from_millis(45)) => {}
    }
    let after_drop = calls.load(Ordering::Relaxed);
    assert_eq!(after_drop, 5, "calls at 0, 10, 20, 30, 40 ms");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(calls.load(Ordering::Relaxed), after_drop);
}

/// Reference 003 "retry on the same or next node, consistency downgrade": the next attempt is
/// told where to go and at which consistency.
#[tokio::test(start_paused = true)]
async fn the_next_attempt_is_told_the_node_and_consistency_the_policy_chose() {
    let executor = Executor::new(Orchestrator::new(Arc::new(Fixed {
        delay: Duration::ZERO,
        node: NodeChoice::Next,
        consistency: Some(ConsistencyLevel::One),
    })));
    let request = request(RequestType::Cql, 2500)
        .with_idempotent(true)
        .with_consistency(ConsistencyLevel::Quorum);
    let attempts = executor
        .run(request, |attempt| async move {
            if attempt.number() == 0 {
                let timeout = RetryReason::ReadTimeout(ReadTimeout {
                    consistency: ConsistencyLevel::Quorum,
                    block_for: 2,
                    received: 1,
                    data_present: false,
                });
                Err(Failure::reason((), timeout).dispatched_to("10.0.0.1:9042"))
            } else {
                Ok((attempt.node(), attempt.consistency()))
            }
        })
        .await
        .unwrap();
    assert_eq!(attempts, (NodeChoice::Next, Some(ConsistencyLevel::One)));
}

/// Reference 003 IGNORE and RETHROW, reference 001 terminal errors: each ends the request with
/// its own outcome.
#[tokio::test(start_paused = true)]
async fn ignore_rethrow_and_terminal_answers_end_the_request() {
    let run = |action| async move {
        Executor::new(Orchestrator::new(Arc::new(Answer(action))))
            .run(request(RequestType::Get, 2500), |_| async {
                Err::<(), _>(Failure::reason("kv locked", reasons::KV_LOCKED))
            })
            .await
            .unwrap_err()
    };
    assert!(matches!(
        run(RetryAction::Ignore).await,
        ExecuteError::Ignored {
            error: "kv locked",
            ..
        }
    ));
    let rethrown = run(RetryAction::Rethrow).await;
    assert!(matches!(
        rethrown.retry_error(),
        Some(RetryError::Rethrown { .. })
    ));
    let terminal = run(RetryAction::Fail(
        rebound::TerminalError::AuthenticationFailureException,
    ))
    .await;
    assert_eq!(
        terminal.retry_error().unwrap().name(),
        "AuthenticationFailureException"
    );
}

/// A failure the operation calls final is never retried, whatever the policy would say.
#[tokio::test(start_paused = true)]
async fn a_final_failure_is_not_retried() {
    let executor = fixed(Fixed::after(Duration::ZERO));
    let calls = AtomicU32::new(0);
    let error = executor
        .run(request(RequestType::Get, 2500), |_| {
            calls.fetch_add(1, Ordering::Relaxed);
            async { Err::<(), _>(Failure::final_error("bad key")) }
        })
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        ExecuteError::NotRetried {
            error: "bad key",
            ..
        }
    ));
    assert_eq!(calls.load(Ordering::Relaxed), 1);
}

/// Reference 002 "global and per-request strategies" through the registry: the request's
/// policy name picks the policy (fail-fast: one call), the default applies otherwise, and an
/// unknown name is an error before anything is retried.
#[tokio::test(start_paused = true)]
async fn a_registry_decides_with_the_policy_the_request_names() {
    use rebound::config::RegistryConfig;
    use rebound::registry::PolicyRegistry;
    let config = RegistryConfig::parse(
        "default_policy = \"best\"\n\
         [policies.best]\nbuiltin = \"best-effort\"\n\
         [policies.ff]\nbuiltin = \"fail-fast\"\n",
        std::path::Path::new("inline.toml"),
        std::path::Path::new("."),
    )
    .unwrap();
    let executor = Executor::new(Arc::new(PolicyRegistry::new(config).unwrap()));
    let calls_with = |request: Request| {
        let executor = executor.clone();
        async move {
            let calls = AtomicU32::new(0);
            let result = executor
                .run(request, |_| {
                    let n = calls.fetch_add(1, Ordering::Relaxed);
                    async move {
                        if n < 2 {
                            Err(Failure::reason((), reasons::SOCKET_NOT_AVAILABLE))
                        } else {
                            Ok(())
                        }
                    }
                })
                .await;
            (calls.load(Ordering::Relaxed), result)
        }
    };
    let (calls, result) = calls_with(request(RequestType::Get, 2500)).await;
    assert_eq!((calls, result.is_ok()), (3, true), "best-effort by default");
    let (calls, result) = calls_with(request(RequestType::Get, 2500).with_policy("ff")).await;
    assert_eq!(calls, 1, "fail-fast by name");
    assert_eq!(
        result.unwrap_err().retry_error().unwrap().name(),
        "RequestCanceled"
    );
    let (_, result) = calls_with(request(RequestType::Get, 2500).with_policy("nope")).await;
    let error = result.unwrap_err();
    assert!(matches!(error, ExecuteError::Decide(_)), "{error:?}");
    assert!(
        error.to_string().contains("no policy named `nope`"),
        "{error}"
    );
}

/// Reference 001 "KV Error Map Handling": the retry spec belongs to the failure whose status
/// the error map classified. A later failure for a plain reason (here KV_LOCKED) carries no
/// spec: a policy must never be handed the spec of an earlier, different failure.
#[tokio::test(start_paused = true)]
async fn an_error_map_spec_is_given_only_to_the_failure_it_classified() {
    let map = common::error_map_with_spec();
    let strategy = Arc::new(common::SeesSpec::default());
    let executor = Executor::new(Orchestrator::new(strategy.clone()));
    let get = KvOpcode::of(RequestType::Get).unwrap();
    let calls = AtomicU32::new(0);
    let value = executor
        .run(request(RequestType::Get, 2500), |attempt| {
            let n = calls.fetch_add(1, Ordering::Relaxed);
            let map = &map;
            async move {
                attempt.dispatched("node-1:11210");
                match n {
                    0 => Err(Failure::response(
                        "unknown status",
                        Response::Kv {
                            opcode: get,
                            status: 0x7ff0,
                        },
                        Some(map),
                    )),
                    1 => Err(Failure::reason("locked", reasons::KV_LOCKED)),
                    _ => Ok("value"),
                }
            }
        })
        .await
        .unwrap();
    assert_eq!(value, "value");
    let seen = strategy.0.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen[0].is_some(), "the classified failure carries its spec");
    assert_eq!(seen[1], None, "KV_LOCKED was handed a stale spec: {seen:?}");
}

/// gRFC A6 "Transparent Retries" and "When Retries are Valid" through the executor, whose
/// policy never retries: an attempt the server refused is sent again at once, one that never
/// left the client after the controlled backoff's 1 ms, neither counted as a retry; an
/// attempt that failed once committed is never sent again, whatever the policy.
#[tokio::test(start_paused = true)]
async fn how_far_an_attempt_got_decides_before_the_policy() {
    use rebound::Progress;
    let executor = Executor::new(Orchestrator::new(Arc::new(rebound::FailFast)));
    for (progress, expected_calls) in [
        (Progress::Refused, 2),
        (Progress::NotSent, 2),
        (Progress::Committed, 1),
    ] {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&calls);
        let start = Instant::now();
        let result = executor
            .run(request(RequestType::Upsert, 1000), move |attempt| {
                let seen = Arc::clone(&seen);
                async move {
                    seen.lock()
                        .unwrap()
                        .push((attempt.number(), start.elapsed()));
                    if seen.lock().unwrap().len() == 1 {
                        let failure = Failure::reason("failed", reasons::SOCKET_NOT_AVAILABLE);
                        Err(failure.with_progress(progress))
                    } else {
                        Ok(7)
                    }
                }
            })
            .await;
        let calls = calls.lock().unwrap().clone();
        assert_eq!(calls.len(), expected_calls, "{progress}: {calls:?}");
        if progress == Progress::Committed {
            let error = result.unwrap_err();
            assert!(error.to_string().contains("COMMITTED"), "{error}");
            continue;
        }
        assert_eq!(result.unwrap(), 7);
        let waited = if progress == Progress::Refused { 0 } else { 1 };
        assert_eq!(calls[1], (0, Duration::from_millis(waited)), "{progress}");
    }
}
