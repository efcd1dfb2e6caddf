//! The tower layer on tokio's paused clock: a request/response service
//! wrapped by `RetryLayer` is retried, refused, timed out and made ready as the executor and
//! tower's conventions say.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rebound::executor::{ExecuteError, Executor, Failure};
use rebound::layer::{Classifier, RetryLayer};
use rebound::{reasons, Orchestrator, Request, RequestType};
use tokio::time::Instant;
use tower::{service_fn, Layer, Service, ServiceBuilder, ServiceExt};

/// A KV-ish call: the operation decides the request type.
#[derive(Debug, Clone)]
struct Call {
    ty: RequestType,
}

#[derive(Debug, Clone, PartialEq)]
enum Error {
    Refused,
    ClosedInFlight,
    NotReady,
}

#[derive(Clone)]
struct Describe;

impl Classifier<Call, Error> for Describe {
    fn request(&self, call: &Call) -> Request {
        Request::new(1, call.ty, Duration::from_millis(500))
            .unwrap()
            .with_start(Instant::now().into_std())
    }
    fn failure(&self, error: Error) -> Failure<Error> {
        match error {
            Error::Refused => Failure::reason(error, reasons::SOCKET_NOT_AVAILABLE),
            Error::ClosedInFlight => Failure::reason(error, reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT),
            Error::NotReady => Failure::final_error(error),
        }
    }
}

fn layer() -> RetryLayer<Arc<Orchestrator>, Describe> {
    RetryLayer::new(Executor::new(Arc::new(Orchestrator::default())), Describe)
}

/// Reference 001 (pre-dispatch reasons may be retried for any request): the inner service is
/// called again, with a request cloned, until it answers.
#[tokio::test(start_paused = true)]
async fn a_refused_call_is_sent_again_until_it_succeeds() {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let service = ServiceBuilder::new()
        .layer(layer())
        .service(service_fn(move |_call: Call| {
            let n = counted.fetch_add(1, Ordering::Relaxed);
            async move {
                if n < 2 {
                    Err(Error::Refused)
                } else {
                    Ok("answer")
                }
            }
        }));
    let answer = service
        .oneshot(Call {
            ty: RequestType::Upsert,
        })
        .await
        .unwrap();
    assert_eq!((answer, calls.load(Ordering::Relaxed)), ("answer", 3));
}

/// Reference 001 (unsafe retries): a request handed to the service counts as dispatched, so a
/// non-idempotent one that fails in flight is not sent again.
#[tokio::test(start_paused = true)]
async fn a_non_idempotent_call_that_failed_in_flight_is_not_sent_again() {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let service = layer().layer(service_fn(move |_call: Call| {
        counted.fetch_add(1, Ordering::Relaxed);
        async { Err::<(), _>(Error::ClosedInFlight) }
    }));
    let error = service
        .oneshot(Call {
            ty: RequestType::Increment,
        })
        .await
        .unwrap_err();
    let ExecuteError::Ended { error, last } = error else {
        panic!("{error:?}")
    };
    assert_eq!(error.name(), "RequestCanceled");
    assert_eq!(last, Some(Error::ClosedInFlight));
    assert_eq!(calls.load(Ordering::Relaxed), 1);
}

/// Reference 002: a service that holds a non-idempotent request past its deadline ends it as
/// an ambiguous timeout, at the deadline exactly.
#[tokio::test(start_paused = true)]
async fn a_call_held_past_the_deadline_is_an_ambiguous_timeout() {
    let service = layer().layer(service_fn(|_call: Call| {
        std::future::pending::<Result<(), Error>>()
    }));
    let start = Instant::now();
    let error = service
        .oneshot(Call {
            ty: RequestType::Upsert,
        })
        .await
        .unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_millis(500));
    assert_eq!(error.retry_error().unwrap().name(), "AmbiguousTimeout");
}

/// A service that is never ready the first time.
#[derive(Clone)]
struct Unready;

impl Service<Call> for Unready {
    type Response = ();
    type Error = Error;
    type Future = std::future::Ready<Result<(), Error>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Err(Error::NotReady))
    }
    fn call(&mut self, _: Call) -> Self::Future {
        unreachable!("never ready")
    }
}

/// tower's convention: readiness errors of the inner service come out of `poll_ready`.
#[tokio::test(start_paused = true)]
async fn a_readiness_error_comes_out_of_poll_ready() {
    let mut service = layer().layer(Unready);
    let error = service.ready().await.err().unwrap();
    assert!(matches!(error, ExecuteError::NotReady(Error::NotReady)));
}

/// docs/hedging.md "In a program": the tower layer runs on the executor, so a decider that
/// hedges hedges the layer's calls: a slow first call of a get loses to the copy sent 20 ms
/// later, each call on a service clone made ready; an upsert is never copied.
#[tokio::test(start_paused = true)]
async fn the_layer_hedges_idempotent_calls_only() {
    let speculative =
        rebound::hedge::ConstantSpeculativeExecution::new(Duration::from_millis(20), 2).unwrap();
    let hedging = Orchestrator::default().with_hedging(Arc::new(speculative));
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(Executor::new(Arc::new(hedging)), Describe))
        .service(service_fn(move |call: Call| {
            let n = counted.fetch_add(1, Ordering::Relaxed);
            async move {
                if n == 0 || call.ty == RequestType::Upsert {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Ok::<_, Error>(n)
            }
        }));
    let start = Instant::now();
    let get = Call {
        ty: RequestType::Get,
    };
    let answer = service.ready().await.unwrap().call(get).await.unwrap();
    assert_eq!(answer, 1, "the copy answered");
    assert_eq!(Instant::now() - start, Duration::from_millis(20));
    calls.store(10, Ordering::Relaxed);
    let upsert = Call {
        ty: RequestType::Upsert,
    };
    let answer = service.ready().await.unwrap().call(upsert).await.unwrap();
    assert_eq!(answer, 10);
    assert_eq!(
        calls.load(Ordering::Relaxed),
        11,
        "one call: an upsert is not hedged"
    );
}

/// docs/executor.md "Timing": the layer cuts an inner call still running at its attempt
/// timeout; an idempotent request is sent again and answers inside its deadline, a
/// non-idempotent one (handed to the service, so dispatched) is never sent twice and ends as
/// an ambiguous timeout (reference 002).
#[tokio::test(start_paused = true)]
async fn the_layer_cuts_a_stalled_call_at_its_attempt_timeout() {
    for (ty, expected_calls) in [(RequestType::Get, 2), (RequestType::Upsert, 1)] {
        let orchestrator = Orchestrator::default().with_attempt_timeout(Duration::from_millis(100));
        let layer = RetryLayer::new(Executor::new(Arc::new(orchestrator)), Describe);
        let calls = Arc::new(AtomicU32::new(0));
        let counted = Arc::clone(&calls);
        let service = ServiceBuilder::new()
            .layer(layer)
            .service(service_fn(move |_call: Call| {
                let n = counted.fetch_add(1, Ordering::Relaxed);
                async move {
                    if n == 0 {
                        std::future::pending::<()>().await;
                    }
                    Ok::<_, Error>("answer")
                }
            }));
        let start = Instant::now();
        let answer = service.oneshot(Call { ty }).await;
        assert_eq!(calls.load(Ordering::Relaxed), expected_calls, "{ty}");
        match answer {
            Ok(answer) => {
                assert_eq!(answer, "answer");
                assert!(
                    start.elapsed() < Duration::from_millis(500),
                    "inside the deadline"
                );
            }
            Err(error) => {
                assert_eq!(ty, RequestType::Upsert);
                assert_eq!(start.elapsed(), Duration::from_millis(100));
                assert_eq!(error.retry_error().unwrap().name(), "AmbiguousTimeout");
            }
        }
    }
}
