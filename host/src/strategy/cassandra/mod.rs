//! The Cassandra driver's retry model (reference 003 "Retries"): a [`CassandraPolicy`] answers
//! the five verdict methods, and [`Cassandra`] adapts it to [`SyncStrategy`], applying the
//! driver's hard-coded rules before the policy is asked.

mod default_policy;
mod downgrading;

pub use default_policy::{aborted_verdict, error_response_verdict, DefaultRetryPolicy};
pub use downgrading::ConsistencyDowngradingRetryPolicy;

use std::fmt::Debug;

use crate::action::{NodeChoice, RetryAction};
use crate::cassandra_types::{AbortKind, ServerErrorKind};
use crate::reason::{ReadTimeout, ReasonKind, RetryReason, Stage, Unavailable, WriteTimeout};
use crate::request::Request;
use crate::strategy::DecisionContext;

use super::{Strategy, SyncStrategy};

/// A driver retry policy: each method returns a verdict as a [`RetryAction`]
/// (`now_on(Same|Next, consistency)`, `Rethrow` or `Ignore`). `retry_count` is the number of
/// retries already made for the request.
pub trait CassandraPolicy: Send + Sync + Debug {
    /// A stable name.
    fn name(&self) -> &str;
    /// READ_TIMEOUT from the coordinator.
    fn on_read_timeout(&self, request: &Request, e: &ReadTimeout, retry_count: u32) -> RetryAction;
    /// WRITE_TIMEOUT from the coordinator (asked for idempotent requests only).
    fn on_write_timeout(
        &self,
        request: &Request,
        e: &WriteTimeout,
        retry_count: u32,
    ) -> RetryAction;
    /// UNAVAILABLE from the coordinator.
    fn on_unavailable(&self, request: &Request, e: &Unavailable, retry_count: u32) -> RetryAction;
    /// Aborted before a response (asked for idempotent requests only).
    fn on_request_aborted(
        &self,
        request: &Request,
        kind: AbortKind,
        retry_count: u32,
    ) -> RetryAction;
    /// Another coordinator error (asked for idempotent requests only).
    fn on_error_response(
        &self,
        request: &Request,
        kind: ServerErrorKind,
        retry_count: u32,
    ) -> RetryAction;
}

/// Adapts a [`CassandraPolicy`] to the strategy trait with the hard-coded rules of reference
/// 003 "Hard-coded rules" and "Behavior":
///
/// - validation, function-failure and protocol errors (and unknown reasons): rethrown;
/// - errors before the network write (pre-dispatch reasons) and a bootstrapping node: retried
///   at once on the next node;
/// - an unprepared statement: re-prepared and retried on the same node;
/// - write timeouts, aborts (including a socket closed in flight) and error responses of a
///   non-idempotent request: rethrown without asking the policy;
/// - any other reason: rethrown (the driver has no verdict for it).
///
/// The policy is handed the number of retries already made, and keeps its own limit (the
/// driver's policies grant at most one retry for a read timeout, a write timeout or an
/// unavailable coordinator: reference 003 "Behavior", "a maximum of one retry").
/// [`with_max_retries`](Self::with_max_retries) sets that limit instead: while fewer retries
/// than it were made, the policy is asked as for its first retry; past it, such a failure is
/// rethrown without asking. Aborted requests and error responses are not counted, as in the
/// driver.
#[derive(Debug, Clone)]
pub struct Cassandra<P> {
    policy: P,
    max_retries: Option<u32>,
}

impl<P: Default> Default for Cassandra<P> {
    fn default() -> Self {
        Cassandra::new(P::default())
    }
}

impl<P> Cassandra<P> {
    /// Wraps `policy`, which keeps its own limit on retries.
    pub fn new(policy: P) -> Self {
        Cassandra {
            policy,
            max_retries: None,
        }
    }

    /// Lets the policy's counted verdicts grant up to `max_retries` retries (0: none).
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = Some(max_retries);
        self
    }
}

/// What the driver does with a failure before any policy is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// A hard-coded verdict: the policy is not asked.
    Fixed(RetryAction),
    /// Ask the policy's verdict method for the reason: READ_TIMEOUT and UNAVAILABLE always;
    /// WRITE_TIMEOUT, REQUEST_ABORTED, ERROR_RESPONSE and a socket closed in flight (asked as
    /// a closed connection) only for idempotent requests.
    AskPolicy,
}

/// The driver's rules of reference 003 "Hard-coded rules" and the idempotence gate of
/// "Behavior", in one place for the native adapter and the guest SDK.
pub fn route(reason: &RetryReason, idempotent: bool) -> Route {
    use ReasonKind as K;
    if reason.never_retry() {
        return Route::Fixed(RetryAction::Rethrow);
    }
    match reason.kind() {
        K::ReadTimeout | K::Unavailable => Route::AskPolicy,
        K::WriteTimeout | K::RequestAborted | K::ErrorResponse | K::SocketClosedWhileInFlight
            if idempotent =>
        {
            Route::AskPolicy
        }
        K::Bootstrapping => Route::Fixed(RetryAction::now_on(NodeChoice::Next, None)),
        K::Unprepared => Route::Fixed(RetryAction::now_on(NodeChoice::Same, None)),
        _ if reason.stage() == Stage::PreDispatch => {
            Route::Fixed(RetryAction::now_on(NodeChoice::Next, None))
        }
        _ => Route::Fixed(RetryAction::Rethrow),
    }
}

impl<P: CassandraPolicy> Strategy for Cassandra<P> {
    fn name(&self) -> &str {
        self.policy.name()
    }
}

impl<P: CassandraPolicy> SyncStrategy for Cassandra<P> {
    fn answer(&self, request: &Request, context: &DecisionContext<'_>) -> RetryAction {
        let reason = context.reason();
        if let Route::Fixed(action) = route(reason, request.is_idempotent()) {
            return action;
        }
        let (policy, retries) = (&self.policy, request.retry_attempts());
        // The three verdicts the driver counts. With a limit set here: past it rethrown (as
        // the driver's policies do past their one retry), below it asked as for the first.
        let counted = match self.max_retries {
            None => Some(retries),
            Some(max) if retries < max => Some(0),
            Some(_) => None,
        };
        match reason {
            RetryReason::ReadTimeout(e) => counted.map_or(RetryAction::Rethrow, |first| {
                policy.on_read_timeout(request, e, first)
            }),
            RetryReason::Unavailable(e) => counted.map_or(RetryAction::Rethrow, |first| {
                policy.on_unavailable(request, e, first)
            }),
            RetryReason::WriteTimeout(e) => counted.map_or(RetryAction::Rethrow, |first| {
                policy.on_write_timeout(request, e, first)
            }),
            // Aborts and error responses are not counted by the driver's policies.
            RetryReason::RequestAborted(kind) => policy.on_request_aborted(request, *kind, retries),
            RetryReason::ErrorResponse(kind) => policy.on_error_response(request, *kind, retries),
            // The only other reason `route` asks about: a socket closed while in flight.
            _ => policy.on_request_aborted(request, AbortKind::ClosedConnection, retries),
        }
    }
}
