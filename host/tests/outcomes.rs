//! Outcomes reach the host. The executor and the tower layer, which
//! runs on it, report every request's end — success after N attempts, give-up, timeout —
//! to the controls of what decides (a strategy that counts outcomes, a budget), and a budget
//! counts the requests that never failed. On tokio's paused
//! clock, so no test sleeps for real.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rebound::executor::{ExecuteError, Executor, Failure};
use rebound::layer::{Classifier, RetryLayer};
use rebound::{
    reasons, BestEffort, BudgetConfig, DecisionContext, FailFast, Orchestrator, Outcome, Request,
    RequestType, RetryAction, Strategy, SyncStrategy, TrafficBudget,
};
use tower::{Layer, ServiceExt};

/// A strategy that counts outcomes (as gRFC A6's throttling does) and keeps those reported to
/// it; it answers as `inner` does.
#[derive(Debug)]
struct Recording<S> {
    inner: S,
    outcomes: Mutex<Vec<Outcome>>,
}

impl<S> Recording<S> {
    fn new(inner: S) -> Arc<Self> {
        Arc::new(Recording {
            inner,
            outcomes: Mutex::default(),
        })
    }

    fn outcomes(&self) -> Vec<Outcome> {
        self.outcomes.lock().unwrap().clone()
    }
}

impl<S: SyncStrategy> Strategy for Recording<S> {
    fn name(&self) -> &str {
        "recording"
    }

    fn counts_outcomes(&self) -> bool {
        true
    }

    fn record_outcome(&self, _: &Request, outcome: Outcome) {
        self.outcomes.lock().unwrap().push(outcome);
    }
}

impl<S: SyncStrategy> SyncStrategy for Recording<S> {
    fn answer(&self, request: &Request, context: &DecisionContext<'_>) -> RetryAction {
        self.inner.answer(request, context)
    }
}

/// An executor the tower layer can clone, deciding with `strategy`.
fn layer_executor(strategy: &Arc<Recording<BestEffort>>) -> Executor<Arc<Orchestrator>> {
    Executor::new(Arc::new(Orchestrator::new(strategy.clone())))
}

/// A best-effort strategy that keeps the outcomes reported to it.
fn best_effort() -> Arc<Recording<BestEffort>> {
    Recording::new(BestEffort::default())
}

fn get(timeout_ms: u64) -> Request {
    Request::new(1, RequestType::Get, Duration::from_millis(timeout_ms))
        .unwrap()
        .with_start(tokio::time::Instant::now().into_std())
}

/// Fails with a connection refused (retried by best effort) until attempt `succeeds_at`.
async fn run(executor: &Executor<Orchestrator>, request: Request, succeeds_at: Option<u32>) {
    let _ = executor
        .run(request, |attempt| async move {
            match succeeds_at {
                Some(n) if attempt.number() >= n => Ok(()),
                _ => Err(Failure::reason("refused", reasons::SOCKET_NOT_AVAILABLE)),
            }
        })
        .await;
}

#[tokio::test(start_paused = true)]
async fn the_executor_reports_every_end() {
    let recording = best_effort();
    let executor = Executor::new(Orchestrator::new(recording.clone()));
    // Success at once, success after two retries, a timeout (never succeeds).
    run(&executor, get(1000), Some(0)).await;
    run(&executor, get(1000), Some(2)).await;
    run(&executor, get(100), None).await;
    // A give-up: fail fast answers no retry.
    let fail_fast = Recording::new(FailFast);
    let result = Executor::new(Orchestrator::new(fail_fast.clone()))
        .run(get(1000), |_| async {
            Err::<(), _>(Failure::reason("locked", reasons::KV_LOCKED))
        })
        .await;
    assert!(
        matches!(result, Err(ExecuteError::Ended { .. })),
        "{result:?}"
    );

    let outcomes = recording.outcomes();
    assert_eq!(outcomes[0], Outcome::Succeeded { attempts: 1 });
    assert_eq!(outcomes[1], Outcome::Succeeded { attempts: 3 });
    assert!(
        matches!(outcomes[2], Outcome::TimedOut { attempts } if attempts > 1),
        "{outcomes:?}"
    );
    assert_eq!(outcomes.len(), 3);
    assert_eq!(fail_fast.outcomes(), [Outcome::Failed { attempts: 1 }]);
}

/// An orchestrator with a budget counts requests that
/// succeeded at once (reported by the executor) and requests that failed (at their first
/// decision) once each, and its retries draw from it.
#[tokio::test(start_paused = true)]
async fn a_budget_counts_each_request_once_and_pays_for_retries() {
    let budget = Arc::new(TrafficBudget::new(BudgetConfig::new(50.0, 0, 60_000)).unwrap());
    let executor = Executor::new(Orchestrator::default().with_budget(Arc::clone(&budget)));
    for _ in 0..4 {
        run(&executor, get(1000), Some(0)).await;
    }
    // Four requests deposited: 50 % is two retries. A request failing twice then succeeding
    // deposits once more (three requests' worth of share: 2.5 retries) and takes two.
    run(&executor, get(1000), Some(2)).await;
    let stats = budget.stats_at(tokio::time::Instant::now().into_std());
    assert_eq!(
        (stats.deposits, stats.withdrawals, stats.refusals),
        (5, 2, 0)
    );
    // The next one is refused its retry: the half-retry left is not enough.
    let result = executor
        .run(get(1000), |_| async {
            Err::<(), _>(Failure::reason("refused", reasons::SOCKET_NOT_AVAILABLE))
        })
        .await;
    match result {
        Err(ExecuteError::Ended { error, .. }) => {
            assert!(
                error.to_string().contains("RETRY_BUDGET_EXHAUSTED"),
                "{error}"
            )
        }
        other => panic!("expected RETRY_BUDGET_EXHAUSTED, got {other:?}"),
    }
}

/// What the layer's inner service answers: an HTTP-like status, an error for a refusal.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    Status(u16),
}

/// A call through the tower layer: its request type (hence idempotency), its timeout.
#[derive(Clone)]
struct Call(RequestType, u64);

#[derive(Clone)]
struct Describe;

impl Classifier<Call, Answer> for Describe {
    fn request(&self, call: &Call) -> Request {
        Request::new(1, call.0, Duration::from_millis(call.1))
            .unwrap()
            .with_start(tokio::time::Instant::now().into_std())
    }
    fn failure(&self, error: Answer) -> Failure<Answer> {
        Failure::reason(error, reasons::SOCKET_NOT_AVAILABLE)
    }
}

/// Reference 001: a 503 is a failure the service indicated by its response code
/// (SERVICE_RESPONSE_CODE_INDICATED: the service did not run the request, so even a
/// non-idempotent one may be sent again); a 504 is a gateway that lost the answer, whose
/// outcome is unknown (as SOCKET_CLOSED_WHILE_IN_FLIGHT); any other response is a success.
fn classify_status(response: Answer) -> Result<Answer, Failure<Answer>> {
    match response {
        Answer::Status(503) => Err(Failure::reason(
            response,
            reasons::SERVICE_RESPONSE_CODE_INDICATED,
        )),
        Answer::Status(504) => Err(Failure::reason(
            response,
            reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
        )),
        _ => Ok(response),
    }
}

/// A service answering `status` for its first `failing` calls, then 200; and how many calls.
fn answering(
    status: u16,
    failing: u32,
) -> (
    impl tower::Service<Call, Response = Answer, Error = Answer, Future: Send> + Clone + Send,
    Arc<Mutex<u32>>,
) {
    let calls = Arc::new(Mutex::new(0));
    let counted = Arc::clone(&calls);
    let service = tower::service_fn(move |_: Call| {
        let n = {
            let mut calls = counted.lock().unwrap();
            *calls += 1;
            *calls
        };
        async move { Ok::<_, Answer>(Answer::Status(if n <= failing { status } else { 200 })) }
    });
    (service, calls)
}

/// Through the tower layer, a successful response may be classified as a
/// retryable failure (tower's `Policy::retry` sees `Ok` too) — a 503 is sent again until the
/// 200 — and the layer reports every request's end: success after N attempts, give-up,
/// timeout. Reference 001's safety rule holds for responses as for errors: a non-idempotent
/// request answered with a response of unknown outcome (504) is not sent again, since it was
/// handed over, and the caller gets the 504 back; an idempotent one is.
#[tokio::test(start_paused = true)]
async fn the_layer_retries_a_classified_response_and_reports_every_end() {
    let recording = best_effort();
    let layer =
        RetryLayer::new(layer_executor(&recording), Describe).classify_responses(classify_status);
    let send = |status, failing, call| {
        let (service, calls) = answering(status, failing);
        let result = layer.layer(service).oneshot(call);
        async move { (result.await, *calls.lock().unwrap()) }
    };

    let (answer, calls) = send(503, 2, Call(RequestType::Upsert, 1000)).await;
    assert_eq!((answer.unwrap(), calls), (Answer::Status(200), 3));

    let (answer, calls) = send(504, 1, Call(RequestType::Upsert, 1000)).await;
    match answer {
        Err(ExecuteError::Ended { last, .. }) => assert_eq!(last, Some(Answer::Status(504))),
        other => panic!("a 504 upsert must end unanswered, got {other:?}"),
    }
    assert_eq!(calls, 1, "the upsert of unknown outcome was sent again");
    let (answer, calls) = send(504, 1, Call(RequestType::Get, 1000)).await;
    assert_eq!((answer.unwrap(), calls), (Answer::Status(200), 2));

    let (answer, _) = send(503, u32::MAX, Call(RequestType::Get, 100)).await;
    assert!(
        matches!(answer, Err(ExecuteError::Ended { .. })),
        "{answer:?}"
    );

    // Without a response classifier, a 503 is an answer like any other.
    let (service, calls) = answering(503, u32::MAX);
    let plain = RetryLayer::new(layer_executor(&recording), Describe);
    let answer = plain
        .layer(service)
        .oneshot(Call(RequestType::Get, 1000))
        .await
        .unwrap();
    assert_eq!((answer, *calls.lock().unwrap()), (Answer::Status(503), 1));

    let outcomes = recording.outcomes();
    assert_eq!(outcomes[0], Outcome::Succeeded { attempts: 3 });
    assert_eq!(outcomes[1], Outcome::Failed { attempts: 1 });
    assert_eq!(outcomes[2], Outcome::Succeeded { attempts: 2 });
    assert!(
        matches!(outcomes[3], Outcome::TimedOut { attempts } if attempts > 1),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[4], Outcome::Succeeded { attempts: 1 });
    assert_eq!(outcomes.len(), 5);
}

/// What a listener heard, in order.
#[derive(Default)]
struct Heard(Mutex<Vec<String>>);

impl rebound::executor::ExecutorListener for Heard {
    fn on_retry(
        &self,
        request: &Request,
        reason: &rebound::RetryReason,
        delay: Duration,
        next_attempt: u32,
    ) {
        self.0.lock().unwrap().push(format!(
            "retry {} {reason} {delay:?} {next_attempt}",
            request.id()
        ));
    }
    fn on_give_up(&self, request: &Request, outcome: Outcome, error: Option<&rebound::RetryError>) {
        self.0.lock().unwrap().push(format!(
            "give-up {} {outcome:?} {}",
            request.id(),
            error.map_or("-".to_owned(), |e| e.name().to_owned())
        ));
    }
    fn on_success(&self, request: &Request, attempts: u32) {
        self.0
            .lock()
            .unwrap()
            .push(format!("success {} {attempts}", request.id()));
    }
}

/// An application's listener hears every retry (why, how long, which
/// attempt comes next), every give-up (how it ended, with the outcome error when the
/// orchestrator ended the request) and every success that needed retries — not a first
/// attempt's success.
#[tokio::test(start_paused = true)]
async fn a_listener_hears_retries_give_ups_and_successes_after_retries() {
    let heard = Arc::new(Heard::default());
    let executor = Executor::new(Orchestrator::new(best_effort())).with_listener(heard.clone());
    let numbered = |id: u64, timeout_ms: u64| {
        Request::new(id, RequestType::Get, Duration::from_millis(timeout_ms))
            .unwrap()
            .with_start(tokio::time::Instant::now().into_std())
    };
    run(&executor, numbered(1, 1000), Some(0)).await;
    run(&executor, numbered(2, 1000), Some(2)).await;
    let _ = executor
        .run(numbered(3, 1000), |_| async {
            Err::<(), _>(Failure::final_error("bad request"))
        })
        .await;
    let fail_fast =
        Executor::new(Orchestrator::new(Arc::new(FailFast))).with_listener(heard.clone());
    let _ = fail_fast
        .run(numbered(4, 1000), |_| async {
            Err::<(), _>(Failure::reason("locked", reasons::KV_LOCKED))
        })
        .await;
    assert_eq!(
        *heard.0.lock().unwrap(),
        [
            "retry 2 SOCKET_NOT_AVAILABLE 1ms 1",
            "retry 2 SOCKET_NOT_AVAILABLE 2ms 2",
            "success 2 3",
            "give-up 3 Failed { attempts: 1 } -",
            "give-up 4 Failed { attempts: 1 } RequestCanceled",
        ]
    );
}
