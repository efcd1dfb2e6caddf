//! A tower [`Layer`] that runs a request/response service under Rebound's retry handling, in
//! the manner of `tower::retry` (same names: [`RetryLayer`] makes [`Retry`] services).
//!
//! Where `tower::retry::Policy` both decides and clones, here the decision belongs to the
//! [`Executor`] (orchestrator or policy registry, with its safety guard, backoff and deadline),
//! and the [`Classifier`] only describes: which Rebound [`Request`] a service request is (type,
//! timeout, idempotency, policy), and why an error happened ([`Failure`]). As tower's
//! `Policy::retry` sees `Ok` too, a [`ResponseClassifier`] may call a successful response a
//! failure (an HTTP client's 503 arrives as a response): [`RetryLayer::classify_responses`].
//! The executor reports every request's end to what decides (budgets count them).
//!
//! ```
//! use std::time::Duration;
//! use rebound::executor::{Executor, Failure};
//! use rebound::layer::{Classifier, RetryLayer};
//! use rebound::{reasons, Orchestrator, Request, RequestType};
//! use tower::{service_fn, Layer, ServiceExt};
//!
//! #[derive(Clone)]
//! struct Get(&'static str);
//!
//! #[derive(Clone)]
//! struct KvClassifier;
//!
//! impl Classifier<Get, std::io::Error> for KvClassifier {
//!     fn request(&self, _: &Get) -> Request {
//!         Request::new(1, RequestType::Get, Duration::from_millis(2500)).unwrap()
//!     }
//!     fn failure(&self, error: std::io::Error) -> Failure<std::io::Error> {
//!         Failure::reason(error, reasons::SOCKET_NOT_AVAILABLE)
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let layer = RetryLayer::new(Executor::new(std::sync::Arc::new(Orchestrator::default())), KvClassifier);
//! let service = layer.layer(service_fn(|get: Get| async move {
//!     Ok::<_, std::io::Error>(format!("value of {}", get.0))
//! }));
//! assert_eq!(service.oneshot(Get("k")).await.unwrap(), "value of k");
//! # }
//! ```

use std::fmt::Debug;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;

use crate::decider::Decider;
use crate::executor::{Attempt, ExecuteError, Executor, Failure};
use crate::request::Request;

/// Describes a service's requests and errors to the executor.
pub trait Classifier<Req, E> {
    /// The Rebound request for `req`: its type (hence idempotency), timeout, client context
    /// and policy.
    fn request(&self, req: &Req) -> Request;

    /// Why the service failed with `error`: a reason, a raw response to classify, or final.
    fn failure(&self, error: E) -> Failure<E>;

    /// Whether `req` can be sent again. One that cannot (an HTTP request whose `ReplayBody`
    /// is past its limit: `replay_body::ReplayBody::can_send_again`) is sent once, no copy of
    /// it is hedged, and its failure is decided as committed, never retried
    /// ([`Executor::run_once`]). Every request can, unless this says otherwise.
    fn can_send_again(&self, req: &Req) -> bool {
        let _ = req;
        true
    }
}

/// Says whether a successful response is a failure to retry, as tower's `Policy::retry`
/// sees `Ok` results too. Closures `Fn(Res) -> Result<Res, Failure<E>>` are classifiers.
pub trait ResponseClassifier<Res, E> {
    /// `Ok(response)` to return it, or the [`Failure`] it stands for. The failure's error is
    /// what the caller gets back as the last error if the request ends unanswered
    /// ([`ExecuteError::Ended`]), so an error type that can hold the response keeps it.
    fn response(&self, response: Res) -> Result<Res, Failure<E>>;
}

/// Every response is a success: the default [`ResponseClassifier`].
#[derive(Debug, Clone, Copy, Default)]
pub struct EveryResponseSucceeds;

impl<Res, E> ResponseClassifier<Res, E> for EveryResponseSucceeds {
    fn response(&self, response: Res) -> Result<Res, Failure<E>> {
        Ok(response)
    }
}

impl<Res, E, F> ResponseClassifier<Res, E> for F
where
    F: Fn(Res) -> Result<Res, Failure<E>>,
{
    fn response(&self, response: Res) -> Result<Res, Failure<E>> {
        self(response)
    }
}

/// Applies [`Retry`] to services.
#[derive(Debug, Clone)]
pub struct RetryLayer<D, C, R = EveryResponseSucceeds> {
    executor: Executor<D>,
    classifier: C,
    responses: R,
}

impl<D, C> RetryLayer<D, C> {
    /// A layer whose services retry with `executor`, described by `classifier`; every
    /// response is a success.
    pub fn new(executor: Executor<D>, classifier: C) -> Self {
        RetryLayer {
            executor,
            classifier,
            responses: EveryResponseSucceeds,
        }
    }
}

impl<D, C, R> RetryLayer<D, C, R> {
    /// The same layer, with `responses` saying which successful responses are failures.
    pub fn classify_responses<R2>(self, responses: R2) -> RetryLayer<D, C, R2> {
        RetryLayer {
            executor: self.executor,
            classifier: self.classifier,
            responses,
        }
    }
}

impl<S, D: Clone, C: Clone, R: Clone> Layer<S> for RetryLayer<D, C, R> {
    type Service = Retry<S, D, C, R>;

    fn layer(&self, inner: S) -> Self::Service {
        Retry {
            inner,
            executor: self.executor.clone(),
            classifier: self.classifier.clone(),
            responses: self.responses.clone(),
        }
    }
}

/// Runs each request through the inner service under the executor: a failed call (or a
/// response its [`ResponseClassifier`] calls a failure) is classified, the executor decides,
/// and the request (cloned) is sent again after the delay, until a response or the outcome
/// error. The service counts as dispatched once it has been
/// handed the request, since what it does with it cannot be seen from here: a non-idempotent
/// request it fails with or holds past the deadline is not retried unless the reason allows
/// it, and times out as ambiguous.
#[derive(Debug, Clone)]
pub struct Retry<S, D, C, R = EveryResponseSucceeds> {
    inner: S,
    executor: Executor<D>,
    classifier: C,
    responses: R,
}

impl<S, D, C, R> Retry<S, D, C, R> {
    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

/// The node recorded for requests handed to the inner service.
const INNER_SERVICE: &str = "inner service";

impl<S, D, C, R, Req> Service<Req> for Retry<S, D, C, R>
where
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send,
    S::Error: Debug + Send,
    D: Decider + Clone + 'static,
    C: Classifier<Req, S::Error> + Clone + Send + 'static,
    R: ResponseClassifier<S::Response, S::Error> + Clone + Send + 'static,
    Req: Clone + Send + 'static,
{
    type Response = S::Response;
    type Error = ExecuteError<S::Error>;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, ExecuteError<S::Error>>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(ExecuteError::NotReady)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        // The service made ready by poll_ready serves the first attempt (tower's convention);
        // a clone takes its place here.
        let ready = self.inner.clone();
        let mut readied = Some(std::mem::replace(&mut self.inner, ready));
        let template = self.inner.clone();
        let executor = self.executor.clone();
        let classifier = self.classifier.clone();
        let responses = self.responses.clone();
        Box::pin(async move {
            let request = classifier.request(&req);
            let once = !classifier.can_send_again(&req);
            let mut kept = Some(req);
            let operation = move |attempt: Attempt| {
                // A request that cannot be sent again is handed on itself (`run_once`
                // makes one attempt); any other is copied for each.
                let req = match once {
                    true => kept.take(),
                    false => kept.clone(),
                };
                let classifier = classifier.clone();
                let responses = responses.clone();
                // The first attempt takes the service poll_ready readied; a retry clones
                // a fresh one, which must be made ready first.
                let (mut service, must_poll) = match readied.take() {
                    Some(service) => (service, false),
                    None => (template.clone(), true),
                };
                async move {
                    if must_poll {
                        poll_fn(|cx| service.poll_ready(cx))
                            .await
                            .map_err(|e| classifier.failure(e))?;
                    }
                    attempt.dispatched(INNER_SERVICE);
                    let req = req.expect("a request sent once has one attempt");
                    let response = service.call(req).await.map_err(|e| classifier.failure(e))?;
                    responses.response(response)
                }
            };
            match once {
                true => executor.run_once(request, operation).await,
                false => executor.run(request, operation).await,
            }
        })
    }
}
