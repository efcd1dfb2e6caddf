//! [`Deciding`]: the orchestrator's answer in progress — ready at once when the strategy
//! answers at once, a boxed future only while an asynchronous strategy works.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::orchestrator::Decision;

/// A decision being made, as [`Orchestrator::decide`](crate::Orchestrator::decide) and its
/// siblings return it. Await it, or take it with [`into_decision`](Self::into_decision) when the
/// strategy answers at once, for the [`Decision`].
///
/// Unlike an `async fn`'s future, the work is done by the call when it needs no waiting: a
/// request already done, an always-retry reason, or a strategy that answers at once (every
/// [`SyncStrategy`](crate::SyncStrategy), native or WebAssembly) is decided before the call
/// returns, and this future is ready on its first poll. Only a strategy whose answer must be
/// awaited is asked when the future is polled, from a boxed future; so the common decision
/// builds, moves and boxes no state machine.
#[must_use = "the decision is in the future's output"]
pub struct Deciding<'a>(State<'a>);

enum State<'a> {
    /// Decided; taken on the first poll.
    Ready(Option<Decision>),
    /// Waiting for the strategy.
    Pending(Pin<Box<dyn Future<Output = Decision> + Send + 'a>>),
}

impl<'a> Deciding<'a> {
    pub(crate) fn ready(decision: Decision) -> Self {
        Deciding(State::Ready(Some(decision)))
    }

    /// The decision, when the call that returned this made it (no strategy to await); else
    /// `self` back, to be awaited. A synchronous caller (a driver's retry hook) takes the
    /// decision with this rather than `now_or_never`, which moves the decision through a
    /// poll and makes a native decision about an eighth dearer (docs/performance.md).
    ///
    /// ```
    /// use std::time::Duration;
    /// use rebound::{reasons, Decision, Orchestrator, Request, RequestType};
    ///
    /// let orchestrator = Orchestrator::default();
    /// let mut request = Request::new(1, RequestType::Get, Duration::from_secs(2)).unwrap();
    /// let decision = orchestrator
    ///     .maybe_retry(&mut request, &reasons::KV_LOCKED)
    ///     .into_decision()
    ///     .expect("the default strategy answers at once");
    /// assert!(matches!(decision, Decision::Retry(_)));
    /// ```
    #[inline]
    pub fn into_decision(self) -> Result<Decision, Self> {
        match self.0 {
            State::Ready(Some(decision)) => Ok(decision),
            state => Err(Deciding(state)),
        }
    }

    pub(crate) fn pending(future: impl Future<Output = Decision> + Send + 'a) -> Self {
        Deciding(State::Pending(Box::pin(future)))
    }
}

impl Future for Deciding<'_> {
    type Output = Decision;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Decision> {
        match &mut self.get_mut().0 {
            State::Ready(decision) => {
                Poll::Ready(decision.take().expect("Deciding polled after completion"))
            }
            State::Pending(future) => future.as_mut().poll(cx),
        }
    }
}

impl std::fmt::Debug for Deciding<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            State::Ready(decision) => f.debug_tuple("Deciding::Ready").field(decision).finish(),
            State::Pending(_) => f.write_str("Deciding::Pending"),
        }
    }
}
