//! Rebound as a [`tower::retry::Policy`]: stacks already built on `tower::retry::Retry` (and
//! the clients built on it) ask Rebound whether, and after how long, a failed call goes again,
//! without giving up their own retry middleware. Each request's clone of the policy drives one
//! [`RetryLoop`], so the orchestrator's guard, the backoff, the deadline, budgets and throttles
//! decide exactly as in the executor; [`AttemptOutcomes`] says what a call and its result are.
//!
//! `tower::retry::Policy::retry` must say at once whether the call goes again, so a decision
//! that is not known at once (a WebAssembly policy version the registry runs on its own
//! threads, docs/registry.md) is taken as no retry, with an error log; the
//! [`RetryLayer`](crate::layer::RetryLayer) awaits every decision.
//!
//! ```
//! use std::time::Duration;
//! use rebound::retry_policy::{AttemptOutcomes, ReboundPolicy};
//! use rebound::{reasons, Cause, Orchestrator, Request, RequestType};
//! use tower::{retry::Retry, service_fn, ServiceExt};
//!
//! #[derive(Clone)]
//! struct Get(&'static str);
//!
//! #[derive(Clone)]
//! struct Reads;
//!
//! impl AttemptOutcomes<Get, String, std::io::Error> for Reads {
//!     fn request(&self, _: &Get) -> Request {
//!         Request::new(1, RequestType::Get, Duration::from_millis(2500)).unwrap()
//!     }
//!     fn failure(&self, result: &Result<String, std::io::Error>) -> Option<Cause> {
//!         result.as_ref().err().map(|_| Cause::Reason(reasons::SOCKET_NOT_AVAILABLE))
//!     }
//!     fn clone_request(&self, get: &Get) -> Option<Get> {
//!         Some(get.clone())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let policy = ReboundPolicy::new(std::sync::Arc::new(Orchestrator::default()), Reads);
//! let service = Retry::new(policy, service_fn(|get: Get| async move {
//!     Ok::<_, std::io::Error>(format!("value of {}", get.0))
//! }));
//! assert_eq!(service.oneshot(Get("k")).await.unwrap(), "value of k");
//! # }
//! ```

use std::time::Instant;

use futures_util::FutureExt;

use crate::controls::PolicyControls;
use crate::decider::Decider;
use crate::progress::Progress;
use crate::pushback::Pushback;
use crate::reason::Stage;
use crate::request::Request;
use crate::request_outcome::Outcome;
use crate::retry_loop::{Cause, Ending, RetryLoop, Step};

/// What a call of a `tower::retry::Retry` stack is to Rebound, and what its result says.
pub trait AttemptOutcomes<Req, Res, E> {
    /// The Rebound request for `req`: its type (hence idempotency), timeout, client context
    /// and policy. Asked once per call, at its first result.
    fn request(&self, req: &Req) -> Request;

    /// Why the attempt that ended with `result` failed, or `None` when it succeeded. An
    /// attempt whose reason is not a pre-dispatch one counts as sent, so a non-idempotent call
    /// is not sent again after it.
    fn failure(&self, result: &Result<Res, E>) -> Option<Cause>;

    /// The server's pushback in `result` (a `Retry-After`, `grpc-retry-pushback-ms`), if any.
    fn pushback(&self, result: &Result<Res, E>) -> Option<Pushback> {
        let _ = result;
        None
    }

    /// A copy of `req` to send again, or `None` when it cannot be copied (it is then sent
    /// once).
    fn clone_request(&self, req: &Req) -> Option<Req>;
}

/// A `tower::retry::Policy` deciding with `D` (an orchestrator or a policy registry); see the
/// [module docs](self).
#[derive(Debug, Clone)]
pub struct ReboundPolicy<D, O> {
    decider: D,
    outcomes: O,
    /// When the call was made: set as each call is cloned by the stack's shared policy, kept
    /// by the call's own clone from then on.
    started: Instant,
    /// The call's retry loop and its policy's controls, from its first result on.
    call: Option<(RetryLoop, PolicyControls)>,
}

impl<D: Decider, O> ReboundPolicy<D, O> {
    /// A policy deciding with `decider`, reading calls and results with `outcomes`.
    pub fn new(decider: D, outcomes: O) -> Self {
        ReboundPolicy {
            decider,
            outcomes,
            started: Instant::now(),
            call: None,
        }
    }

    /// The call's retry loop and controls, described from `req` at its first result.
    fn call<Req, Res, E>(&mut self, req: &Req) -> &mut (RetryLoop, PolicyControls)
    where
        O: AttemptOutcomes<Req, Res, E>,
    {
        let (decider, outcomes, started) = (&self.decider, &self.outcomes, self.started);
        self.call.get_or_insert_with(|| {
            let request = outcomes.request(req).with_start(started);
            let controls = decider.controls(&request);
            (RetryLoop::new(request), controls)
        })
    }
}

impl<D, O, Req, Res, E> tower::retry::Policy<Req, Res, E> for ReboundPolicy<D, O>
where
    D: Decider,
    O: AttemptOutcomes<Req, Res, E>,
{
    type Future = tokio::time::Sleep;

    fn retry(&mut self, req: &mut Req, result: &mut Result<Res, E>) -> Option<Self::Future> {
        let now = Instant::now();
        let cause = self.outcomes.failure(result);
        let pushback = self.outcomes.pushback(result);
        self.call::<Req, Res, E>(req);
        let (decider, (retry, controls)) = (&self.decider, self.call.as_mut()?);
        let attempts = retry.request().retry_attempts() + 1;
        let Some(cause) = cause else {
            retry.succeeded();
            controls.report(retry.request(), Outcome::Succeeded { attempts }, now);
            return None;
        };
        if cause
            .reason()
            .is_none_or(|r| r.stage() != Stage::PreDispatch)
        {
            retry.sent();
        }
        let failed = retry.failed(decider, cause, pushback, Progress::Processed, now);
        let decided = failed.now_or_never();
        let ended = match decided {
            Some(Ok(Step::Retry { delay, .. })) => return Some(tokio::time::sleep(delay)),
            Some(Ok(Step::End(Ending::Ended { error, .. }))) if error.is_timeout() => {
                Outcome::TimedOut { attempts }
            }
            Some(Ok(Step::End(_))) => Outcome::Failed { attempts },
            Some(Err(error)) => {
                tracing::warn!(%error, "no policy decides for the call: not retried");
                Outcome::Failed { attempts }
            }
            None => {
                tracing::error!(
                    "the policy did not decide at once (tower::retry::Policy cannot wait): not retried"
                );
                Outcome::Failed { attempts }
            }
        };
        controls.report(retry.request(), ended, now);
        None
    }

    fn clone_request(&mut self, req: &Req) -> Option<Req> {
        if self.call.is_none() {
            // The stack's shared policy, cloning a new call: the clone it makes next is the
            // call's own, and takes this moment as the call's start.
            self.started = Instant::now();
        }
        self.outcomes.clone_request(req)
    }
}
