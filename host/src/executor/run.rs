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
use crate::controls::PolicyControls;
use crate::decider::Decider;
use crate::hedge::{HedgeSchedule, Hedging};
use crate::orchestrator::Orchestrator;
use crate::outcome::{CancelReason, RetryError};
use crate::reason::reasons;
use crate::request::Request;
use crate::request_outcome::Outcome;
use crate::retry_loop::{Cause, Ending, NextAttempt, RetryLoop, Step};
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
        let span = request_span(&request);
        self.drive(request, operation, Sending::Again)
            .instrument(span)
            .await
    }

    /// Runs `operation` once for `request`, which cannot be sent again (its body was sent as
    /// it streamed): no copy is hedged, and a failure is decided as
    /// [`Progress::Committed`](crate::Progress::Committed) (gRFC A6 "When Retries are Valid"
    /// calls a call whose outgoing message overflowed the buffer committed), so the decider
    /// records it and the request ends without a retry. Otherwise as [`run`](Self::run).
    pub async fn run_once<T, E, F, Fut>(
        &self,
        request: Request,
        operation: F,
    ) -> Result<T, ExecuteError<E>>
    where
        E: Debug,
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, Failure<E>>>,
    {
        let span = request_span(&request);
        self.drive(request, operation, Sending::Once)
            .instrument(span)
            .await
    }

    /// [`run`](Self::run)'s loop, inside the request's span.
    async fn drive<T, E, F, Fut>(
        &self,
        request: Request,
        mut operation: F,
        sending: Sending,
    ) -> Result<T, ExecuteError<E>>
    where
        E: Debug,
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, Failure<E>>>,
    {
        let mut run = RequestRun::new(self, &request, sending);
        let mut retry = RetryLoop::new(request);
        let mut next = retry.next_attempt();
        loop {
            let attempts = next.number + 1;
            // The attempt's span covers the call (or its copies) and the decision on its
            // failure, which a policy registry records in it.
            let span = telemetry::attempt_span(retry.request(), next.number);
            let failure = match run.call(&next, &mut retry, &mut operation, &span).await {
                Ok(Ok(value)) => {
                    retry.succeeded();
                    run.report(&retry, Outcome::Succeeded { attempts }, None);
                    return Ok(value);
                }
                Ok(Err(failure)) => Failed::from(failure),
                Err(Cut::AttemptTimeout) => Failed::attempt_timeout(),
                Err(Cut::Deadline) => {
                    let error = retry.deadline_reached(Instant::now().into_std());
                    run.report(&retry, Outcome::TimedOut { attempts }, Some(&error));
                    return Err(ExecuteError::Ended { error, last: None });
                }
            };
            let failure = match sending {
                Sending::Again => failure,
                Sending::Once => failure.committed(),
            };
            next = run.decide(&mut retry, failure, attempts, span).await?;
        }
    }
}

/// One span per request, carrying its id; one per attempt inside it.
fn request_span(request: &Request) -> tracing::Span {
    tracing::debug_span!(
        "rebound.request",
        request_id = request.id(),
        request_type = %request.request_type(),
    )
}

/// Whether a request may be sent more than once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sending {
    /// As often as the decider says.
    Again,
    /// Once: it cannot be sent again ([`Executor::run_once`]).
    Once,
}

/// What cut an attempt short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// The request's deadline: the request ends.
    Deadline,
    /// The attempt timeout, before the deadline: a failure decided like any other.
    AttemptTimeout,
}

/// A failed attempt as the loop decides it: the operation's failure, or an attempt the attempt
/// timeout cut, which has no error of the operation's.
struct Failed<E> {
    error: Option<E>,
    cause: Cause,
    dispatched_to: Option<String>,
    pushback: Option<crate::pushback::Pushback>,
    progress: crate::progress::Progress,
}

impl<E> From<Failure<E>> for Failed<E> {
    fn from(failure: Failure<E>) -> Self {
        Failed {
            error: Some(failure.error),
            cause: failure.cause,
            dispatched_to: failure.dispatched_to,
            pushback: failure.pushback,
            progress: failure.progress,
        }
    }
}

impl<E> Failed<E> {
    /// This failure of a call that cannot be sent again: committed (gRFC A6).
    fn committed(self) -> Self {
        Failed {
            progress: crate::progress::Progress::Committed,
            ..self
        }
    }

    /// An attempt cut by its timeout (where it was written, its call said on its `Attempt`).
    fn attempt_timeout() -> Self {
        Failed {
            error: None,
            cause: Cause::Reason(reasons::ATTEMPT_TIMEOUT),
            dispatched_to: None,
            pushback: None,
            progress: crate::progress::Progress::Processed,
        }
    }
}

/// One request's run: what its attempts are sent under (the deadline, its policy's breakers
/// and hedging, asked once; the attempt timeout, asked of the same controls before each
/// attempt, since a policy's answer may set it), and what it tallied.
struct RequestRun<'x, D> {
    executor: &'x Executor<D>,
    deadline: Instant,
    controls: PolicyControls,
    hedging: Option<Hedging>,
    tally: RequestTally,
}

impl<'x, D: Decider> RequestRun<'x, D> {
    fn new(executor: &'x Executor<D>, request: &Request, sending: Sending) -> Self {
        // A timeout past what the clock holds is as good as none: tokio's far future (30 years).
        let deadline = Instant::from_std(request.start())
            .checked_add(request.timeout())
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365 * 30));
        let controls = executor.decider.controls(request);
        RequestRun {
            executor,
            deadline,
            hedging: (Hedging::may_hedge(request) && sending == Sending::Again)
                .then(|| controls.hedging(request, Instant::now().into_std()))
                .flatten(),
            controls,
            tally: RequestTally::default(),
        }
    }

    /// When an attempt of `request` started now is cut, and by what: its attempt timeout, or
    /// the request's deadline when that comes first (an attempt timeout never extends the
    /// request).
    fn cut_at(&self, request: &Request) -> (Instant, Cut) {
        let timeout = self.controls.attempt_timeout(request);
        let timed = timeout.and_then(|timeout| Instant::now().checked_add(timeout));
        match timed {
            Some(at) if at < self.deadline => (at, Cut::AttemptTimeout),
            _ => (self.deadline, Cut::Deadline),
        }
    }

    /// Makes attempt `next`: its copies when the policy hedges the request, else one call,
    /// dropped when its attempt timeout or the deadline passes.
    async fn call<T, E, F, Fut>(
        &mut self,
        next: &NextAttempt,
        retry: &mut RetryLoop,
        operation: &mut F,
        span: &tracing::Span,
    ) -> Result<Result<T, Failure<E>>, Cut>
    where
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<T, Failure<E>>>,
    {
        let (cut_at, cut) = self.cut_at(retry.request());
        let schedule = (self.hedging.as_ref())
            .and_then(|h| HedgeSchedule::start(h, retry.request(), Instant::now().into_std()));
        if let Some(schedule) = schedule {
            let copies = Copies {
                next,
                deadline: self.deadline,
                cut_at,
                controls: &self.controls,
                span,
            };
            let (call, hedges) = copies.run(schedule, retry, operation).await;
            self.tally.hedges += hedges;
            return call.map_err(|_| cut);
        }
        let attempt = Attempt::new(
            next.number,
            0,
            next.node,
            next.consistency,
            (self.deadline, cut_at),
            self.controls.breakers().cloned(),
        );
        let call = operation(attempt.clone()).instrument(span.clone());
        let call = tokio::time::timeout_at(cut_at, call).await;
        settle(retry, &self.controls, call.as_ref().ok(), &attempt);
        call.map_err(|_| cut)
    }

    /// Asks the decider about `failure`, the end of attempt `attempts`: the attempt to make
    /// next once its delay is slept, or how the request ended.
    async fn decide<E: Debug>(
        &mut self,
        retry: &mut RetryLoop,
        failure: Failed<E>,
        attempts: u32,
        span: tracing::Span,
    ) -> Result<NextAttempt, ExecuteError<E>> {
        let Failed {
            error,
            cause,
            dispatched_to,
            pushback,
            progress,
        } = failure;
        if let Some(to) = dispatched_to {
            retry.dispatched(to);
        }
        telemetry::record_failure(&span, cause.reason());
        let now = Instant::now().into_std();
        // The listener hears why a retry was decided.
        let listener = self.executor.listener.as_ref();
        let reason = listener.and(cause.reason().cloned());
        let decided = retry.failed(&self.executor.decider, cause, pushback, progress, now);
        let step = match decided.instrument(span).await {
            Ok(step) => step,
            Err(decide_error) => {
                self.report(retry, Outcome::Failed { attempts }, None);
                return Err(decide_error.into());
            }
        };
        let ending = match step {
            Step::Retry { delay, attempt } => {
                if let (Some(listener), Some(reason)) = (listener, &reason) {
                    listener.on_retry(retry.request(), reason, delay, attempt.number);
                }
                self.tally.retry_delay += delay;
                tokio::time::sleep(delay).await;
                return Ok(attempt);
            }
            Step::End(ending) => ending,
        };
        Err(self.end(retry, ending, error, attempts).await)
    }

    /// The request ends as `ending` after attempt `attempts` failed with `error` (none: the
    /// attempt timeout cut it): at the deadline when the decision capped a delay to it,
    /// reported, handed back.
    async fn end<E: Debug>(
        &mut self,
        retry: &RetryLoop,
        ending: Ending,
        error: Option<E>,
        attempts: u32,
    ) -> ExecuteError<E> {
        let failed = Outcome::Failed { attempts };
        let (end, after, last) = match (ending, error) {
            (Ending::Ended { error: end, after }, last) => (end, after, last),
            // Ignored: the caller gets an error (with an empty result), not a value.
            (Ending::Ignored(context), Some(error)) => {
                self.report(retry, failed, None);
                return ExecuteError::Ignored { error, context };
            }
            (Ending::NotRetried(context), Some(error)) => {
                self.report(retry, failed, None);
                return ExecuteError::NotRetried { error, context };
            }
            // A cut attempt that is ignored or not retried has no result and no error of the
            // operation's to hand back: the request times out.
            (Ending::Ignored(context) | Ending::NotRetried(context), None) => {
                let total = Duration::from_micros(context.timings.total_micros);
                (
                    RetryError::timeout(retry.request(), total),
                    Duration::ZERO,
                    None,
                )
            }
        };
        if !after.is_zero() {
            self.tally.retry_delay += after;
            tokio::time::sleep(after).await;
        }
        let outcome = if end.is_timeout() {
            Outcome::TimedOut { attempts }
        } else {
            failed
        };
        self.report(retry, outcome, Some(&end));
        ExecuteError::Ended { error: end, last }
    }

    /// Reports the request's end to the decider (retry budgets follow the whole traffic), and
    /// to the listener: a give-up, or a success that needed retries.
    fn report(&self, retry: &RetryLoop, outcome: Outcome, error: Option<&RetryError>) {
        let executor = self.executor;
        (self.controls).report(retry.request(), outcome, Instant::now().into_std());
        let throttled = matches!(
            error,
            Some(RetryError::RequestCanceled {
                reason: CancelReason::RetryThrottled(_),
                ..
            })
        );
        telemetry::record_request_end(
            outcome,
            RequestTally {
                throttled,
                ..self.tally
            },
        );
        let Some(listener) = &executor.listener else {
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
    }
}
