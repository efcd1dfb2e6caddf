//! Retry strategies (reference 001 "Retry Strategies"): one async-capable trait, so a native,
//! a sandboxed or an I/O-performing strategy all look the same to the orchestrator.

mod aws;
mod best_effort;
pub(crate) mod cassandra;
mod context;
mod exponential;
mod fail_fast;
mod fast_fail_terminal;
mod grpc;
mod grpc_throttle;
mod http;

pub use aws::{AwsRetry, AwsRetryBehavior};
pub use best_effort::BestEffort;
pub use context::{DecisionContext, FailureNote};
pub use exponential::ExponentialRetry;
pub use fail_fast::FailFast;
pub use fast_fail_terminal::FastFailOnTerminalError;
pub use grpc::GrpcRetry;
pub use http::HttpRetry;

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use crate::action::RetryAction;
use crate::decision::ReadyOrBoxed;
use crate::hedge::HedgingPolicy;
use crate::request::Request;
use crate::request_outcome::Outcome;

/// What a strategy is besides its answer: its name, whether it counts how requests ended, and
/// whether it hedges. Every strategy implements it, and one of [`SyncStrategy`] (answers at
/// once, the common case) or [`RetryStrategy`] (may need waiting for), so that a capability
/// is declared once whichever way a strategy answers.
pub trait Strategy: Send + Sync + Debug {
    /// A stable name, used in logs, metrics and the safety guard's exemption list.
    fn name(&self) -> &str;

    /// Whether it keeps count of how requests ended ([`record_outcome`](Self::record_outcome)):
    /// `false`, the default, lets a caller skip reporting.
    fn counts_outcomes(&self) -> bool {
        false
    }

    /// `request`, which this strategy decided for, ended as `outcome` (gRFC A6's retry
    /// throttling counts successes so). Nothing by default.
    fn record_outcome(&self, _request: &Request, _outcome: Outcome) {}

    /// The policy that sends copies of its requests while they are in flight, if it hedges
    /// (the `grpc` built-in with a `hedgingPolicy`). None by default.
    fn hedging(&self) -> Option<Arc<dyn HedgingPolicy>> {
        None
    }

    /// Whether it cuts some requests' attempts ([`attempt_timeout`](Self::attempt_timeout)):
    /// `false`, the default, lets a caller skip asking.
    fn times_attempts(&self) -> bool {
        false
    }

    /// How long an attempt of `request` may run before it is cut, if this strategy cuts it
    /// (the `grpc` built-in: its method config's `perAttemptRecvTimeout`). None by default; a
    /// policy's or a route's `attempt_timeout_ms` takes precedence.
    fn attempt_timeout(&self, _request: &Request) -> Option<Duration> {
        None
    }
}

/// Decides whether and how a request is retried, with an answer that may need waiting for.
///
/// Reference 001 gives `retryAfter` a future so that a strategy may do I/O without blocking
/// the caller; a [`StrategyFuture`] known at once keeps the common, synchronous case free of
/// allocation. Strategies whose answer is always immediate implement [`SyncStrategy`] instead
/// and get this trait for free.
///
/// A strategy is asked only for reasons the orchestrator does not settle itself (always-retry
/// reasons get the controlled backoff first), and whatever it answers, the orchestrator still
/// refuses unsafe retries of non-idempotent requests and caps the delay to the deadline.
/// Extending best effort ("call super", reference 002):
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use rebound::{
///     reasons, BestEffort, Decision, DecisionContext, Orchestrator, ReasonKind, Request,
///     RequestType, RetryAction, Strategy, SyncStrategy,
/// };
///
/// /// Best effort, except that a locked document is not waited for.
/// #[derive(Debug, Default)]
/// struct NoWaitOnLock(BestEffort);
///
/// impl Strategy for NoWaitOnLock {
///     fn name(&self) -> &str {
///         "no-wait-on-lock"
///     }
/// }
///
/// impl SyncStrategy for NoWaitOnLock {
///     fn answer(&self, request: &Request, context: &DecisionContext<'_>) -> RetryAction {
///         match context.reason().kind() {
///             ReasonKind::KvLocked => RetryAction::NoRetry,
///             _ => self.0.answer(request, context),
///         }
///     }
/// }
///
/// let orchestrator = Orchestrator::new(Arc::new(NoWaitOnLock::default()));
/// let mut request = Request::new(1, RequestType::Get, Duration::from_secs(2)).unwrap();
/// let context = DecisionContext::new(&reasons::KV_LOCKED);
/// let decision = futures::executor::block_on(orchestrator.decide(&mut request, &context));
/// assert!(matches!(decision, Decision::Fail(_)));
/// ```
pub trait RetryStrategy: Strategy {
    /// The action for `request`, whose failure `context` describes (its reason, error-map
    /// spec, server pushback and the decision's moment).
    fn retry_after<'a>(
        &'a self,
        request: &'a Request,
        context: &'a DecisionContext<'a>,
    ) -> StrategyFuture<'a>;

    /// This strategy as a [`SyncStrategy`] when it always answers at once (every
    /// `SyncStrategy` is): the orchestrator then asks it directly, without a future. `None`,
    /// the default, for a strategy whose answer may need waiting for.
    fn as_sync(&self) -> Option<&dyn SyncStrategy> {
        None
    }
}

/// A strategy that answers at once.
pub trait SyncStrategy: Strategy {
    /// The action for `request`, whose failure `context` describes.
    fn answer(&self, request: &Request, context: &DecisionContext<'_>) -> RetryAction;
}

impl<T: SyncStrategy> RetryStrategy for T {
    fn retry_after<'a>(
        &'a self,
        request: &'a Request,
        context: &'a DecisionContext<'a>,
    ) -> StrategyFuture<'a> {
        StrategyFuture::ready(self.answer(request, context))
    }

    fn as_sync(&self) -> Option<&dyn SyncStrategy> {
        Some(self)
    }
}

/// The answer of [`RetryStrategy::retry_after`]: ready at once
/// ([`ReadyOrBoxed::ready`]), or a boxed future ([`ReadyOrBoxed::pending`]).
pub type StrategyFuture<'a> = ReadyOrBoxed<'a, RetryAction>;
