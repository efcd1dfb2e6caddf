//! Server pushback — HTTP `Retry-After` (delay-seconds and HTTP-date,
//! RFC 9110 §10.2.3) and gRPC's pushback in milliseconds (gRFC A6: negative or unreadable
//! means do not retry). The built-ins never retry sooner than asked and stop when told; the
//! deadline caps the delay.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use common::request;
use rebound::config::{Builtin, BuiltinPolicy};
use rebound::{
    reasons, BestEffort, Decision, DecisionContext, FailFast, Orchestrator, Pushback, RequestType,
    RetryAction, RetryStrategy,
};

#[test]
fn retry_after_reads_seconds_and_http_dates_and_refuses_the_rest() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
    let cases = [
        ("120", Pushback::After(Duration::from_secs(120))),
        (" 0 ", Pushback::After(Duration::ZERO)),
        // Too large to hold: as long as anything can be (the deadline caps it).
        (
            "99999999999999999999999",
            Pushback::After(Duration::from_secs(u64::MAX)),
        ),
        (
            "Sun, 06 Nov 1994 08:49:47 GMT",
            Pushback::After(Duration::from_secs(10)),
        ),
        // A date already past asks for no delay.
        (
            "Sun, 06 Nov 1994 08:00:00 GMT",
            Pushback::After(Duration::ZERO),
        ),
        ("-5", Pushback::Stop),
        ("1.5", Pushback::Stop),
        ("soon", Pushback::Stop),
        ("", Pushback::Stop),
    ];
    for (value, expected) in cases {
        assert_eq!(
            Pushback::from_retry_after(value, now),
            expected,
            "{value:?}"
        );
    }
    assert_eq!(
        Pushback::from_millis(250),
        Pushback::After(Duration::from_millis(250))
    );
    assert_eq!(Pushback::from_millis(-1), Pushback::Stop);
}

/// gRFC A6 "Pushback": `grpc-retry-pushback-ms` is "an ASCII encoded signed 32-bit
/// integer"; "if the value for pushback is negative or unparseble, then it will be seen as the
/// server asking the client not to retry at all". Read as received: absent is no pushback; one
/// value in 32 bits is a delay when not negative; a negative, empty, non-numeric or too large
/// value says stop, and so does a header sent twice (grpc-go: "specified multiple values ...;
/// not retrying").
#[test]
fn grpc_pushback_text_is_read_as_a6_and_grpc_s_clients_read_it() {
    let none: [&str; 0] = [];
    assert_eq!(Pushback::from_grpc_header(none), None);
    let cases: [(&[&str], Pushback); 10] = [
        (&["200"], Pushback::After(Duration::from_millis(200))),
        (&["0"], Pushback::After(Duration::ZERO)),
        (&[" 150 "], Pushback::After(Duration::from_millis(150))),
        (
            &["2147483647"],
            Pushback::After(Duration::from_millis(2_147_483_647)),
        ),
        (&["-1"], Pushback::Stop),
        (&[""], Pushback::Stop),
        (&["soon"], Pushback::Stop),
        (&["1.5"], Pushback::Stop),
        (&["2147483648"], Pushback::Stop),
        (&["200", "300"], Pushback::Stop),
    ];
    for (values, expected) in cases {
        let read = Pushback::from_grpc_header(values.iter().copied());
        assert_eq!(read, Some(expected), "{values:?}");
    }
}

fn ask(strategy: &dyn RetryStrategy, pushback: Option<Pushback>) -> RetryAction {
    let request = request(RequestType::Get, 10_000, Instant::now());
    let context =
        DecisionContext::new(&reasons::SERVICE_RESPONSE_CODE_INDICATED).with_pushback(pushback);
    futures::executor::block_on(strategy.retry_after(&request, &context))
}

/// The built-ins honour a pushback: never sooner, never when told to stop; without one they
/// answer as before.
#[test]
fn the_builtins_honour_the_pushback() {
    let exponential = BuiltinPolicy::new(
        Builtin::Exponential,
        serde_json::json!({"max_attempts": 3, "initial_ms": 10, "max_ms": 10, "multiplier": 1})
            .as_object()
            .unwrap(),
    )
    .unwrap()
    .strategy();
    let fast_fail = BuiltinPolicy::new(Builtin::FastFailOnTerminalError, &Default::default())
        .unwrap()
        .strategy();
    let best_effort: Arc<dyn RetryStrategy> =
        Arc::new(BestEffort::<rebound::backoff::ExponentialBackoff>::default());
    for strategy in [&best_effort, &fast_fail, &exponential] {
        let plain = ask(&**strategy, None);
        assert!(plain.is_retry(), "{plain:?}");
        assert_eq!(
            ask(&**strategy, Some(Pushback::After(Duration::from_secs(3)))),
            RetryAction::after(Duration::from_secs(3)),
            "{}",
            strategy.name()
        );
        // A shorter pushback than the strategy's own delay changes nothing.
        assert_eq!(
            ask(&**strategy, Some(Pushback::After(Duration::ZERO))),
            plain
        );
        assert_eq!(ask(&**strategy, Some(Pushback::Stop)), RetryAction::NoRetry);
    }
    // A strategy that does not retry is not made to by a pushback.
    assert_eq!(
        ask(&FailFast, Some(Pushback::After(Duration::from_secs(1)))),
        RetryAction::NoRetry
    );
}

/// Reference 001 "Capping the Retry Duration" applies to a pushback as to any delay: past the
/// deadline the request times out instead of waiting.
#[test]
fn a_pushback_past_the_deadline_is_a_timeout() {
    let orchestrator = Orchestrator::default();
    let start = Instant::now();
    let mut request = request(RequestType::Get, 2_000, start);
    let context = DecisionContext::new(&reasons::SERVICE_RESPONSE_CODE_INDICATED)
        .with_pushback(Some(Pushback::After(Duration::from_secs(5))))
        .at(start + Duration::from_millis(500));
    let decision = futures::executor::block_on(orchestrator.decide(&mut request, &context));
    match decision {
        Decision::Timeout { after, .. } => assert_eq!(after, Duration::from_millis(1500)),
        other => panic!("expected a timeout, got {other:?}"),
    }
}

/// A failure the executor (and so the tower layer) hears of may carry the
/// server's pushback (`Failure::with_pushback`): best effort then waits at least as long as
/// the server asked before the next attempt, and a pushback that says stop ends the request
/// after one attempt.
#[tokio::test(start_paused = true)]
async fn the_executor_hands_a_failures_pushback_to_the_policy() {
    use rebound::executor::{ExecuteError, Executor, Failure};
    let executor = Executor::new(Orchestrator::default());
    let search = || {
        rebound::Request::new(1, RequestType::Search, Duration::from_secs(10))
            .unwrap()
            .with_start(tokio::time::Instant::now().into_std())
    };
    let mut started = Vec::new();
    let hits = executor
        .run(search(), |attempt| {
            started.push(tokio::time::Instant::now());
            async move {
                if attempt.number() == 0 {
                    let pushback = Pushback::from_retry_after("2", SystemTime::now());
                    Err(Failure::reason("429", reasons::SEARCH_TOO_MANY_REQUESTS)
                        .with_pushback(pushback))
                } else {
                    Ok("hits")
                }
            }
        })
        .await
        .unwrap();
    assert_eq!(hits, "hits");
    assert!(
        started[1] - started[0] >= Duration::from_secs(2),
        "retried after {:?}",
        started[1] - started[0]
    );

    let mut attempts = 0;
    let stopped = executor
        .run(search(), |_| {
            attempts += 1;
            async {
                Err::<(), _>(
                    Failure::reason("429", reasons::SEARCH_TOO_MANY_REQUESTS)
                        .with_pushback(Pushback::Stop),
                )
            }
        })
        .await;
    assert!(
        matches!(stopped, Err(ExecuteError::Ended { .. })),
        "{stopped:?}"
    );
    assert_eq!(attempts, 1);
}
