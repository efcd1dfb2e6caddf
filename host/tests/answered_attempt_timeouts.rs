//! A policy's answer sets the attempt timeout of the retry it asks for, and a policy reads the
//! attempt timeout that cut the failed attempt (`wit/policy.wit` 0.6.0: `retry.attempt-timeout-ms`,
//! `failure.attempt-timeout-ms`; docs/decisions.md "Attempt timeouts"). The request's deadline
//! still ends every attempt, and a cut attempt of a non-idempotent request is still never sent
//! again (reference 002 "The Ubiquitous TimeoutException"). On tokio's paused clock.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rebound::executor::{Attempt, ExecuteError, Executor, Failure};
use rebound::{DecisionContext, Orchestrator, Request, RequestType, RetryAction, SyncStrategy};
use tokio::time::Instant;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Retries every failure at once, its retry's attempt cut after `next`; records the attempt
/// timeout each decision was told had cut the failed attempt.
#[derive(Debug)]
struct Answering {
    next: Duration,
    told: Mutex<Vec<Option<Duration>>>,
}

impl rebound::Strategy for Answering {
    fn name(&self) -> &str {
        "answering"
    }
}

impl SyncStrategy for Answering {
    fn answer(&self, _: &Request, context: &DecisionContext<'_>) -> RetryAction {
        self.told.lock().unwrap().push(context.attempt_timeout());
        RetryAction::after(Duration::ZERO).with_attempt_timeout(self.next)
    }
}

/// A request started now on tokio's (paused) clock.
fn request(ty: RequestType, timeout_ms: u64) -> Request {
    Request::new(1, ty, MS(timeout_ms))
        .unwrap()
        .with_start(Instant::now().into_std())
}

/// Runs `request` through `executor` with attempts that never answer (dispatched), the last
/// one answering when `answers` is set: the moment each attempt was told it is cut, from the
/// start, and the outcome.
async fn cut_attempts<D: rebound::Decider>(
    executor: &Executor<D>,
    request: Request,
    answers_at: Option<u32>,
) -> (Vec<Duration>, Result<u32, ExecuteError<&'static str>>) {
    let start = Instant::now();
    let cuts = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&cuts);
    let outcome = executor
        .run(request, move |attempt: Attempt| {
            seen.lock().unwrap().push(attempt.cut_at() - start);
            async move {
                attempt.dispatched("node-1:11210");
                if Some(attempt.number()) != answers_at {
                    std::future::pending::<()>().await;
                }
                Ok::<_, Failure<&'static str>>(attempt.number())
            }
        })
        .await;
    let cuts = cuts.lock().unwrap().clone();
    (cuts, outcome)
}

/// The configured attempt timeout (100 ms) cuts the first attempt; the answer sets the next
/// attempt's to 250 ms, and the decision on its failure is told that 250 ms cut it.
#[tokio::test(start_paused = true)]
async fn an_answer_sets_the_next_attempt_timeout_and_is_told_the_one_that_fired() {
    let strategy = Arc::new(Answering {
        next: MS(250),
        told: Mutex::default(),
    });
    let orchestrator = Orchestrator::new(Arc::clone(&strategy) as _).with_attempt_timeout(MS(100));
    let executor = Executor::new(orchestrator);
    let (cuts, outcome) = cut_attempts(&executor, request(RequestType::Get, 2_000), Some(2)).await;
    assert_eq!(outcome.unwrap(), 2);
    assert_eq!(cuts, [MS(100), MS(350), MS(600)]);
    assert_eq!(
        *strategy.told.lock().unwrap(),
        [Some(MS(100)), Some(MS(250))]
    );
}

/// An answered attempt timeout never extends the request: past the deadline, the deadline cuts.
#[tokio::test(start_paused = true)]
async fn an_answered_attempt_timeout_never_extends_the_deadline() {
    let strategy = Arc::new(Answering {
        next: MS(10_000),
        told: Mutex::default(),
    });
    let orchestrator = Orchestrator::new(strategy as _).with_attempt_timeout(MS(100));
    let executor = Executor::new(orchestrator);
    let (cuts, outcome) = cut_attempts(&executor, request(RequestType::Get, 400), None).await;
    assert_eq!(cuts, [MS(100), MS(400)]);
    assert!(
        matches!(outcome, Err(ExecuteError::Ended { .. })),
        "{outcome:?}"
    );
}

/// Reference 002: a cut attempt of a dispatched non-idempotent request is never sent again,
/// whatever attempt timeout the policy's answer sets; the request ends as an ambiguous timeout.
#[tokio::test(start_paused = true)]
async fn an_answered_attempt_timeout_never_sends_a_cut_write_again() {
    let strategy = Arc::new(Answering {
        next: MS(250),
        told: Mutex::default(),
    });
    let orchestrator = Orchestrator::new(strategy as _).with_attempt_timeout(MS(100));
    let executor = Executor::new(orchestrator);
    let (cuts, outcome) = cut_attempts(&executor, request(RequestType::Upsert, 2_000), None).await;
    assert_eq!(cuts, [MS(100)], "one attempt only");
    let Err(ExecuteError::Ended { error, .. }) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(error.name(), "AmbiguousTimeout");
}

/// `wit/policy.wit` 0.6.0 through a WebAssembly policy: the Rust template reads the attempt
/// timeout that fired (`failure.attempt-timeout-ms`) and answers best effort's retry with twice
/// that for the next attempt (`retry.attempt-timeout-ms`): 100 ms, then 200, then 400.
#[tokio::test(start_paused = true)]
async fn a_webassembly_policy_doubles_the_attempt_timeout_that_fired() {
    let template = crate::wasm_support::strategy("template", Default::default());
    let orchestrator = Orchestrator::new(template).with_attempt_timeout(MS(100));
    let executor = Executor::new(orchestrator);
    let (cuts, outcome) = cut_attempts(&executor, request(RequestType::Get, 60_000), Some(2)).await;
    assert_eq!(outcome.unwrap(), 2);
    let lengths: Vec<Duration> = cuts.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(cuts[0], MS(100));
    assert!(lengths[0] >= MS(200) && lengths[0] < MS(300), "{cuts:?}");
    assert!(lengths[1] >= MS(400) && lengths[1] < MS(500), "{cuts:?}");
}
