//! The executor: drives the [`RetryLoop`] on tokio — calls the operation, sleeps the planned
//! delays on tokio's timer, and drops an attempt still running at the deadline.

use std::fmt::Debug;
use std::future::Future;

use tokio::time::Instant;

use super::attempt::Attempt;
use super::error::ExecuteError;
use super::failure::Failure;
use crate::decider::Decider;
use crate::orchestrator::Orchestrator;
use crate::request::Request;
use crate::request_outcome::Outcome;
use crate::retry_loop::{Ending, RetryLoop, Step};

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
        request: Request,
        mut operation: F,
    ) -> Result<T, ExecuteError<E>>
    where
        E: Debug,
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, Failure<E>>>,
    {
        let deadline = Instant::from_std(request.start()) + request.timeout();
        let mut retry = RetryLoop::new(request);
        let mut next = retry.next_attempt();
        // Every end is reported to the decider (retry budgets follow the whole traffic).
        let report = |retry: &RetryLoop, outcome| {
            self.decider
                .report(retry.request(), outcome, Instant::now().into_std());
        };
        loop {
            let attempts = next.number + 1;
            let attempt = Attempt::new(next.number, next.node, next.consistency, deadline);
            let call = tokio::time::timeout_at(deadline, operation(attempt.clone())).await;
            if let Some(to) = attempt.take_dispatched() {
                retry.dispatched(to);
            }
            let failure = match call {
                Ok(Ok(value)) => {
                    retry.succeeded();
                    report(&retry, Outcome::Succeeded { attempts });
                    return Ok(value);
                }
                Ok(Err(failure)) => failure,
                Err(_deadline) => {
                    let error = retry.deadline_reached(Instant::now().into_std());
                    report(&retry, Outcome::TimedOut { attempts });
                    return Err(ExecuteError::Ended { error, last: None });
                }
            };
            let Failure {
                error,
                cause,
                dispatched_to,
                pushback,
            } = failure;
            if let Some(to) = dispatched_to {
                retry.dispatched(to);
            }
            let now = Instant::now().into_std();
            let step = match retry.failed(&self.decider, cause, pushback, now).await {
                Ok(step) => step,
                Err(error) => {
                    report(&retry, Outcome::Failed { attempts });
                    return Err(error.into());
                }
            };
            match step {
                Step::Retry { delay, attempt } => {
                    next = attempt;
                    tokio::time::sleep(delay).await;
                }
                Step::End(Ending::Ended { error: end, after }) => {
                    if !after.is_zero() {
                        tokio::time::sleep(after).await;
                    }
                    let outcome = if end.is_timeout() {
                        Outcome::TimedOut { attempts }
                    } else {
                        Outcome::Failed { attempts }
                    };
                    report(&retry, outcome);
                    return Err(ExecuteError::Ended {
                        error: end,
                        last: Some(error),
                    });
                }
                // Ignored: the caller gets an error (with an empty result), not a value.
                Step::End(Ending::Ignored(context)) => {
                    report(&retry, Outcome::Failed { attempts });
                    return Err(ExecuteError::Ignored { error, context });
                }
                Step::End(Ending::NotRetried(context)) => {
                    report(&retry, Outcome::Failed { attempts });
                    return Err(ExecuteError::NotRetried { error, context });
                }
            }
        }
    }
}
