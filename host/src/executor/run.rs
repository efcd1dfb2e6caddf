//! The executor: drives the [`RetryLoop`] on tokio — calls the operation, sleeps the planned
//! delays on tokio's timer, and drops an attempt still running at the deadline.

use std::fmt::{self, Debug};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use super::attempt::Attempt;
use super::error::ExecuteError;
use super::failure::Failure;
use super::hedged::Copies;
use super::listener::ExecutorListener;
use super::settle::settle;
use crate::decider::Decider;
use crate::hedge::{HedgeSchedule, Hedging};
use crate::orchestrator::Orchestrator;
use crate::outcome::{CancelReason, RetryError};
use crate::request::Request;
use crate::request_outcome::Outcome;
use crate::retry_loop::{Ending, RetryLoop, Step};
use crate::telemetry::{self, RequestTally};

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
#[derive(Clone)]
pub struct Executor<D = Orchestrator> {
    decider: D,
    listener: Option<Arc<dyn ExecutorListener>>,
}

impl<D: Debug> Debug for Executor<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Executor")
            .field("decider", &self.decider)
            .field("listener", &self.listener.is_some())
            .finish()
    }
}

impl<D: Decider> Executor<D> {
    /// An executor that asks `decider` after every failure. Wrap it in an `Arc` to share one
    /// orchestrator or registry between executors.
    pub fn new(decider: D) -> Self {
        Executor {
            decider,
            listener: None,
        }
    }

    /// The same executor, telling `listener` of every retry, give-up and success after
    /// retries.
    pub fn with_listener(mut self, listener: Arc<dyn ExecutorListener>) -> Self {
        self.listener = Some(listener);
        self
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
        operation: F,
    ) -> Result<T, ExecuteError<E>>
    where
        E: Debug,
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, Failure<E>>>,
    {
        // One span per request, carrying its id; one per attempt inside it.
        let span = tracing::debug_span!(
            "rebound.request",
            request_id = request.id(),
            request_type = %request.request_type(),
        );
        self.drive(request, operation).instrument(span).await
    }

    /// [`run`](Self::run)'s loop, inside the request's span.
    async fn drive<T, E, F, Fut>(
        &self,
        request: Request,
        mut operation: F,
    ) -> Result<T, ExecuteError<E>>
    where
        E: Debug,
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, Failure<E>>>,
    {
        // A timeout past what the clock holds is as good as none: tokio's far future (30 years).
        let deadline = Instant::from_std(request.start())
            .checked_add(request.timeout())
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365 * 30));
        let breakers = self.decider.breakers(&request);
        let hedging = Hedging::may_hedge(&request)
            .then(|| self.decider.hedging(&request, Instant::now().into_std()))
            .flatten();
        let mut retry = RetryLoop::new(request);
        let mut next = retry.next_attempt();
        let mut tally = RequestTally::default();
        // Every end is reported to the decider (retry budgets follow the whole traffic), and
        // to the listener: a give-up, or a success that needed retries.
        let report =
            |retry: &RetryLoop, tally: RequestTally, outcome, error: Option<&RetryError>| {
                self.decider
                    .report(retry.request(), outcome, Instant::now().into_std());
                let throttled = matches!(
                    error,
                    Some(RetryError::RequestCanceled {
                        reason: CancelReason::RetryThrottled(_),
                        ..
                    })
                );
                telemetry::record_request_end(outcome, RequestTally { throttled, ..tally });
                let Some(listener) = &self.listener else {
                    return;
                };
                match outcome {
                    Outcome::Succeeded { attempts } if attempts > 1 => {
                        listener.on_success(retry.request(), attempts)
                    }
                    Outcome::Succeeded { .. } => {}
                    Outcome::Failed { .. } | Outcome::TimedOut { .. } => {
                        listener.on_give_up(retry.request(), outcome, error)
                    }
                }
            };
        loop {
            let attempts = next.number + 1;
            // The attempt's span covers the call (or its copies) and the decision on its
            // failure, which a policy registry records in it.
            let span = telemetry::attempt_span(retry.request(), next.number);
            let schedule = (hedging.as_ref())
                .and_then(|h| HedgeSchedule::start(h, retry.request(), Instant::now().into_std()));
            let call = match schedule {
                Some(schedule) => {
                    let copies = Copies {
                        next: &next,
                        deadline,
                        breakers: breakers.as_ref(),
                        span: &span,
                    };
                    let (call, hedges) = copies.run(schedule, &mut retry, &mut operation).await;
                    tally.hedges += hedges;
                    call
                }
                None => {
                    let attempt = Attempt::new(
                        next.number,
                        0,
                        next.node,
                        next.consistency,
                        deadline,
                        breakers.clone(),
                    );
                    let call = operation(attempt.clone()).instrument(span.clone());
                    let call = tokio::time::timeout_at(deadline, call).await;
                    settle(&mut retry, breakers.as_ref(), call.as_ref().ok(), &attempt);
                    call
                }
            };
            let failure = match call {
                Ok(Ok(value)) => {
                    retry.succeeded();
                    report(&retry, tally, Outcome::Succeeded { attempts }, None);
                    return Ok(value);
                }
                Ok(Err(failure)) => failure,
                Err(_deadline) => {
                    let error = retry.deadline_reached(Instant::now().into_std());
                    report(&retry, tally, Outcome::TimedOut { attempts }, Some(&error));
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
            telemetry::record_failure(&span, cause.reason());
            let now = Instant::now().into_std();
            // The listener hears why a retry was decided.
            let reason = self.listener.as_ref().and(cause.reason().cloned());
            let decided = retry.failed(&self.decider, cause, pushback, now);
            let step = match decided.instrument(span).await {
                Ok(step) => step,
                Err(error) => {
                    report(&retry, tally, Outcome::Failed { attempts }, None);
                    return Err(error.into());
                }
            };
            match step {
                Step::Retry { delay, attempt } => {
                    if let (Some(listener), Some(reason)) = (&self.listener, &reason) {
                        listener.on_retry(retry.request(), reason, delay, attempt.number);
                    }
                    next = attempt;
                    tally.retry_delay += delay;
                    tokio::time::sleep(delay).await;
                }
                Step::End(Ending::Ended { error: end, after }) => {
                    if !after.is_zero() {
                        tally.retry_delay += after;
                        tokio::time::sleep(after).await;
                    }
                    let outcome = if end.is_timeout() {
                        Outcome::TimedOut { attempts }
                    } else {
                        Outcome::Failed { attempts }
                    };
                    report(&retry, tally, outcome, Some(&end));
                    return Err(ExecuteError::Ended {
                        error: end,
                        last: Some(error),
                    });
                }
                // Ignored: the caller gets an error (with an empty result), not a value.
                Step::End(Ending::Ignored(context)) => {
                    report(&retry, tally, Outcome::Failed { attempts }, None);
                    return Err(ExecuteError::Ignored { error, context });
                }
                Step::End(Ending::NotRetried(context)) => {
                    report(&retry, tally, Outcome::Failed { attempts }, None);
                    return Err(ExecuteError::NotRetried { error, context });
                }
            }
        }
    }
}
