//! What the orchestrator decides — [`Decision`], its [`RetryPlan`] and the plan's
//! [`DelaySource`] — and [`ReadyOrBoxed`], the answer in progress of a decision ([`Deciding`])
//! or of a strategy ([`StrategyFuture`](crate::StrategyFuture)): ready at once when no waiting
//! is needed, a boxed future only while an asynchronous strategy works.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::action::NodeChoice;
use crate::cassandra_types::ConsistencyLevel;
use crate::outcome::RetryError;

/// Where a retry delay came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DelaySource {
    /// The controlled backoff of an always-retry reason; the strategy was not asked.
    ControlledBackoff,
    /// The strategy.
    Strategy,
    /// A transparent retry of an attempt the server's application never saw (gRFC A6): the
    /// strategy was not asked and the retry is not counted.
    Transparent,
}

/// A retry to dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPlan {
    /// Wait this long, then dispatch again. Always shorter than the time left.
    pub delay: Duration,
    /// Where to dispatch.
    pub node: NodeChoice,
    /// The consistency level to use from now on, if the strategy changed it.
    pub consistency: Option<ConsistencyLevel>,
    /// The retry attempts after this decision (so 1 for the first retry).
    pub attempt: u32,
    /// Who chose the delay.
    pub source: DelaySource,
}

/// What the orchestrator decided.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[must_use]
pub enum Decision {
    /// Dispatch again after the plan's delay.
    Retry(RetryPlan),
    /// The retry delay reaches the deadline: wait `after` (the time left), then the request
    /// ends with `error`, a timeout, without being dispatched again.
    Timeout {
        /// The time left until the deadline.
        after: Duration,
        /// The timeout error.
        error: RetryError,
    },
    /// The request ends now with `error`.
    Fail(RetryError),
    /// The error is ignored: the request completes with an empty result (Cassandra IGNORE).
    Ignore,
    /// The request was already completed or cancelled: left alone.
    AlreadyDone,
}

impl Decision {
    /// The decision's name, as the decision JSON's `decision` field and the metrics'
    /// `decision` label give it: `retry`, `timeout`, `cancel`, `ignore` or `already_done`.
    pub const fn name(&self) -> &'static str {
        match self {
            Decision::Retry(_) => "retry",
            Decision::Timeout { .. } => "timeout",
            Decision::Fail(_) => "cancel",
            Decision::Ignore => "ignore",
            Decision::AlreadyDone => "already_done",
        }
    }
}

/// A decision being made, as [`Orchestrator::decide`](crate::Orchestrator::decide) and its
/// siblings return it. Await it, or take it with [`into_ready`](ReadyOrBoxed::into_ready) when
/// the strategy answers at once, for the [`Decision`].
///
/// Unlike an `async fn`'s future, the work is done by the call when it needs no waiting: a
/// request already done, an always-retry reason, or a strategy that answers at once (every
/// [`SyncStrategy`](crate::SyncStrategy), native or WebAssembly) is decided before the call
/// returns, and this future is ready on its first poll. Only a strategy whose answer must be
/// awaited is asked when the future is polled, from a boxed future; so the common decision
/// builds, moves and boxes no state machine.
pub type Deciding<'a> = ReadyOrBoxed<'a, Decision>;

/// A value known at once, or a boxed future of it: what a decision ([`Deciding`]) or a
/// strategy's answer ([`StrategyFuture`](crate::StrategyFuture)) is until it is taken.
#[must_use = "the value is in the future's output"]
pub struct ReadyOrBoxed<'a, T>(State<'a, T>);

enum State<'a, T> {
    /// Known; taken on the first poll.
    Ready(Option<T>),
    /// Waiting for asynchronous work.
    Pending(Pin<Box<dyn Future<Output = T> + Send + 'a>>),
}

impl<'a, T> ReadyOrBoxed<'a, T> {
    /// A value known at once.
    #[inline]
    pub const fn ready(value: T) -> Self {
        ReadyOrBoxed(State::Ready(Some(value)))
    }

    /// A value `future` produces.
    pub fn pending(future: impl Future<Output = T> + Send + 'a) -> Self {
        ReadyOrBoxed(State::Pending(Box::pin(future)))
    }

    /// The value, when it was known at once; else `self` back, to be awaited. A synchronous
    /// caller (a driver's retry hook) takes a decision with this rather than `now_or_never`,
    /// which moves the decision through a poll and makes a native decision about an eighth
    /// dearer (docs/performance.md).
    ///
    /// ```
    /// use std::time::Duration;
    /// use rebound::{reasons, Decision, DecisionContext, Orchestrator, Request, RequestType};
    ///
    /// let orchestrator = Orchestrator::default();
    /// let mut request = Request::new(1, RequestType::Get, Duration::from_secs(2)).unwrap();
    /// let decision = orchestrator
    ///     .decide(&mut request, &DecisionContext::new(&reasons::KV_LOCKED))
    ///     .into_ready()
    ///     .expect("the default strategy answers at once");
    /// assert!(matches!(decision, Decision::Retry(_)));
    /// ```
    #[inline]
    pub fn into_ready(self) -> Result<T, Self> {
        match self.0 {
            State::Ready(Some(value)) => Ok(value),
            state => Err(ReadyOrBoxed(state)),
        }
    }
}

impl<T: Unpin> Future for ReadyOrBoxed<'_, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match &mut self.get_mut().0 {
            State::Ready(value) => Poll::Ready(value.take().expect("polled after completion")),
            State::Pending(future) => future.as_mut().poll(cx),
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for ReadyOrBoxed<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            State::Ready(value) => f.debug_tuple("Ready").field(value).finish(),
            State::Pending(_) => f.write_str("Pending"),
        }
    }
}
