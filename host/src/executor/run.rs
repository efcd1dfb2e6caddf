//! The retry loop: call, classify, decide, sleep, call again, until a value, an outcome error
//! or the deadline.

use std::fmt::Debug;
use std::future::Future;

use tokio::time::Instant;

use super::attempt::Attempt;
use super::decider::Decider;
use super::error::ExecuteError;
use super::failure::{Cause, Failure};
use crate::action::NodeChoice;
use crate::classify::Classification;
use crate::orchestrator::{Decision, Orchestrator};
use crate::outcome::{ErrorContext, RetryError};
use crate::request::Request;

/// Runs operations under retry handling (see the [module docs](super)).
///
/// ```
/// use std::time::Duration;
/// use rebound::executor::{Executor, Failure};
/// use rebound::{reasons, Orchestrator, Request, RequestType};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let executor = Executor::new(Orchestrator::default());
/// let request = Request::new(7, RequestType::Get, Duration::from_millis(500)).unwrap();
/// let value = executor
///     .run(request, |attempt| async move {
///         if attempt.number() < 2 {
///             // Connection refused: nothing was sent, so any request may be retried.
///             Err(Failure::reason("refused", reasons::SOCKET_NOT_AVAILABLE))
///         } else {
///             attempt.dispatched("10.0.0.1:11210");
///             Ok("value")
///         }
///     })
///     .await
///     .unwrap();
/// assert_eq!(value, "value");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Executor<D = Orchestrator> {
    decider: D,
}

impl<D: Decider> Executor<D> {
    /// An executor that asks `decider` after every failure. Wrap it in an `Arc` to share one
    /// orchestrator or registry between executors.
    pub fn new(decider: D) -> Self {
        Executor { decider }
    }

    /// What decides.
    pub fn decider(&self) -> &D {
        &self.decider
    }

    /// Runs `operation` for `request` until it returns a value or the request ends.
    ///
    /// Each call gets an [`Attempt`]; the call must report with [`Attempt::dispatched`] (or
    /// [`Failure::dispatched_to`]) once the request may have reached the server. A call still
    /// running at the deadline is dropped and the request ends with a timeout, ambiguous if it
    /// was dispatched and is not idempotent (reference 002 "The Ubiquitous TimeoutException").
    /// Retry delays are slept on tokio's timer; the orchestrator never plans a delay past the
    /// deadline, and a delay that would reach it becomes a timeout at the deadline exactly.
    pub async fn run<T, E, F, Fut>(
        &self,
        mut request: Request,
        mut operation: F,
    ) -> Result<T, ExecuteError<E>>
    where
        E: Debug,
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, Failure<E>>>,
    {
        let started = Instant::from_std(request.start());
        let deadline = started + request.timeout();
        let mut node = NodeChoice::Same;
        loop {
            let attempt = Attempt::new(
                request.retry_attempts(),
                node,
                request.consistency_level(),
                deadline,
            );
            let call = tokio::time::timeout_at(deadline, operation(attempt.clone())).await;
            if let Some(to) = attempt.take_dispatched() {
                request.mark_dispatched(to);
            }
            let failure = match call {
                Ok(Ok(value)) => {
                    request.complete();
                    return Ok(value);
                }
                Ok(Err(failure)) => failure,
                Err(_deadline) => {
                    let error = RetryError::timeout(&request, started.elapsed());
                    tracing::info!(
                        request_id = request.id(),
                        error = error.name(),
                        attempts = request.retry_attempts(),
                        "deadline reached during an attempt"
                    );
                    request.cancel("TIMEOUT");
                    return Err(ExecuteError::Ended { error, last: None });
                }
            };
            let Failure {
                error,
                cause,
                dispatched_to,
            } = failure;
            if let Some(to) = dispatched_to {
                request.mark_dispatched(to);
            }
            let reason = match cause {
                Cause::Reason(reason) => reason,
                Cause::Classified(Classification::Retry { reason, retry_spec }) => {
                    request.set_error_map_spec(retry_spec);
                    reason
                }
                Cause::Classified(_) | Cause::Final => {
                    return Err(ExecuteError::NotRetried {
                        error,
                        context: context(&request, started),
                    })
                }
            };
            let now = Instant::now().into_std();
            match self.decider.decide(&mut request, &reason, now).await? {
                Decision::Retry(plan) => {
                    node = plan.node;
                    tokio::time::sleep(plan.delay).await;
                }
                Decision::Timeout { after, error: end } => {
                    tokio::time::sleep(after).await;
                    return Err(ExecuteError::Ended {
                        error: end,
                        last: Some(error),
                    });
                }
                Decision::Fail(end) => {
                    return Err(ExecuteError::Ended {
                        error: end,
                        last: Some(error),
                    })
                }
                Decision::Ignore => {
                    return Err(ExecuteError::Ignored {
                        error,
                        context: context(&request, started),
                    })
                }
                Decision::AlreadyDone => {
                    return Err(ExecuteError::NotRetried {
                        error,
                        context: context(&request, started),
                    })
                }
            }
        }
    }
}

/// The context of a request that ends now without the orchestrator cancelling it.
fn context(request: &Request, started: Instant) -> Box<ErrorContext> {
    let mut context = ErrorContext::new(request, None, started.elapsed());
    context.cancelled = false;
    Box::new(context)
}
