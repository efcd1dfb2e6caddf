//! The retry loop of one request as a state machine without I/O: attempt → outcome →
//! decision → wait → next attempt or end. It never calls an operation, sleeps or reads a
//! clock; its driver does, and tells it what happened and when. The tokio executor, the tower
//! layer (through the executor), client adapters and `rebound simulate` all drive this one
//! loop, so a simulated request is decided exactly as a production one: same decision
//! context, same node and consistency for the next attempt, same endings.

use std::time::{Duration, Instant};

use crate::action::NodeChoice;
use crate::cassandra_types::ConsistencyLevel;
use crate::classify::Classification;
use crate::decide_error::DecideError;
use crate::decider::Decider;
use crate::decision::Decision;
use crate::outcome::{ErrorContext, RetryError};
use crate::progress::Progress;
use crate::pushback::Pushback;
use crate::reason::RetryReason;
use crate::request::Request;
use crate::strategy::DecisionContext;

/// Why an attempt failed, as the orchestrator needs it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Cause {
    /// A known retry reason (e.g. `SOCKET_NOT_AVAILABLE` when the connection was refused,
    /// `SOCKET_CLOSED_WHILE_IN_FLIGHT` when it closed before the response).
    Reason(RetryReason),
    /// A server response, classified (reference 001 "Response Code Classification"); boxed,
    /// so that a failure stays small on the common path (a known reason).
    Classified(Box<Classification>),
    /// Not retried whatever the policy says: the operation's error is the outcome.
    Final,
}

impl Cause {
    /// The reason a retry would be decided for: the known reason, or the classified
    /// response's; none for a response or error that is not retried.
    pub fn reason(&self) -> Option<&RetryReason> {
        match self {
            Cause::Reason(reason) => Some(reason),
            Cause::Classified(classification) => match &**classification {
                Classification::Retry { reason, .. } => Some(reason),
                _ => None,
            },
            Cause::Final => None,
        }
    }
}

/// The attempt to make next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct NextAttempt {
    /// 0 for the first attempt, then the retry attempts made so far.
    pub number: u32,
    /// Where to send it: [`NodeChoice::Same`] first, then what the policy chose (reference
    /// 003: retry on the same node or the next one in the query plan).
    pub node: NodeChoice,
    /// The consistency level to use (the request's, as the policy may have changed it).
    pub consistency: Option<ConsistencyLevel>,
}

/// What the driver does once a failure is decided.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub enum Step {
    /// Wait `delay`, then make `attempt`.
    Retry {
        /// The wait before the next attempt; always shorter than the time left.
        delay: Duration,
        /// The next attempt.
        attempt: NextAttempt,
    },
    /// The request ends without a value.
    End(Ending),
}

/// How a request ends without a value.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Ending {
    /// The orchestrator ended the request (reference 002): RequestCanceled, a terminal error,
    /// a rethrow, or a timeout. The end takes effect `after` this wait: the time left when a
    /// retry delay reached the deadline (reference 001 "Capping the Retry Duration"), zero
    /// otherwise.
    Ended {
        /// The outcome error, with its error context.
        error: RetryError,
        /// The wait before the request ends.
        after: Duration,
    },
    /// The failure is not retried at all: final, or a response the classification does not
    /// retry (e.g. KEY_NOT_FOUND). The operation's own error is the outcome.
    NotRetried(Box<ErrorContext>),
    /// The policy ignores the failure (Cassandra IGNORE): the request completes with an empty
    /// result, which only the caller can make.
    Ignored(Box<ErrorContext>),
}

/// One request's retry loop: an I/O-free state machine that the executor, the tower layer and
/// `rebound simulate` drive, each with its own clock and timer.
///
/// ```
/// use std::time::{Duration, Instant};
/// use rebound::{reasons, Cause, Orchestrator, Progress, Request, RequestType, RetryLoop, Step};
///
/// # futures::executor::block_on(async {
/// let start = Instant::now();
/// let request = Request::new_at(1, RequestType::Get, Duration::from_secs(2), start)?;
/// let mut retry = RetryLoop::new(request);
/// assert_eq!(retry.next_attempt().number, 0);
///
/// // The first attempt found the socket closed before sending: a retry is planned.
/// let failure = Cause::Reason(reasons::SOCKET_NOT_AVAILABLE);
/// let progress = Progress::Processed; // how far the attempt got: the server may have seen it
/// let step = retry.failed(&Orchestrator::default(), failure, None, progress, start).await?;
/// let Step::Retry { delay, attempt } = step else { panic!("{step:?}") };
/// assert_eq!((delay, attempt.number), (Duration::from_millis(1), 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct RetryLoop {
    request: Request,
    node: NodeChoice,
}

impl RetryLoop {
    /// The loop of `request`, before its first attempt.
    pub fn new(request: Request) -> Self {
        RetryLoop {
            request,
            node: NodeChoice::Same,
        }
    }

    /// The request as it stands.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// The request, once the loop is over.
    pub fn into_request(self) -> Request {
        self.request
    }

    /// The attempt to make next.
    pub fn next_attempt(&self) -> NextAttempt {
        NextAttempt {
            number: self.request.retry_attempts(),
            node: self.node,
            consistency: self.request.consistency(),
        }
    }

    /// The attempt was written to `node`: from now on a non-idempotent request may have had
    /// an effect (reference 001 "Idempotent Operation List", reference 002 ambiguous timeouts).
    pub fn dispatched(&mut self, node: impl Into<std::sync::Arc<str>>) {
        self.request.mark_dispatched(node);
    }

    /// The attempt may have been written, to a node the driver cannot name: a non-idempotent
    /// request is from now on treated as possibly applied.
    pub fn sent(&mut self) {
        self.request.mark_sent();
    }

    /// The attempt succeeded: the request is complete.
    pub fn succeeded(&mut self) {
        self.request.complete();
    }

    /// The deadline passed during an attempt at `now`: the request ends with a timeout,
    /// ambiguous if a non-idempotent request was dispatched (reference 002 "The Ubiquitous
    /// TimeoutException").
    pub fn deadline_reached(&mut self, now: Instant) -> RetryError {
        let error = RetryError::timeout(&self.request, self.request.elapsed_at(now));
        tracing::info!(
            request_id = self.request.id(),
            error = error.name(),
            attempts = self.request.retry_attempts(),
            "deadline reached during an attempt"
        );
        self.request.cancel("TIMEOUT");
        error
    }

    /// The attempt failed for `cause` at `now`, the server pushing back as `pushback` says,
    /// having got as far as `progress` says: `decider` decides with a context built for this
    /// failure alone (its reason, the pushback, the progress and, for a classified response,
    /// its error-map spec), and the loop says what comes next.
    pub async fn failed<D: Decider>(
        &mut self,
        decider: &D,
        cause: Cause,
        pushback: Option<Pushback>,
        progress: Progress,
        now: Instant,
    ) -> Result<Step, DecideError> {
        let retried = match cause {
            Cause::Reason(reason) => Some((reason, None)),
            Cause::Classified(classification) => match *classification {
                Classification::Retry { reason, retry_spec } => Some((reason, retry_spec)),
                _ => None,
            },
            Cause::Final => None,
        };
        let Some((reason, spec)) = retried else {
            return Ok(Step::End(Ending::NotRetried(self.uncancelled_context(now))));
        };
        let context = DecisionContext::new(&reason)
            .with_error_map_spec(spec)
            .with_pushback(pushback)
            .with_progress(progress)
            .at(now);
        let decision = decider.decide(&mut self.request, &context).await?;
        Ok(match decision {
            Decision::Retry(plan) => {
                self.node = plan.node;
                Step::Retry {
                    delay: plan.delay,
                    attempt: self.next_attempt(),
                }
            }
            Decision::Timeout { after, error } => Step::End(Ending::Ended { error, after }),
            Decision::Fail(error) => Step::End(Ending::Ended {
                error,
                after: Duration::ZERO,
            }),
            Decision::Ignore => Step::End(Ending::Ignored(self.uncancelled_context(now))),
            Decision::AlreadyDone => Step::End(Ending::NotRetried(self.uncancelled_context(now))),
        })
    }

    /// The context of a request that ends at `now` without the orchestrator cancelling it.
    fn uncancelled_context(&self, now: Instant) -> Box<ErrorContext> {
        let mut context = ErrorContext::new(&self.request, None, self.request.elapsed_at(now));
        context.cancelled = false;
        Box::new(context)
    }
}
