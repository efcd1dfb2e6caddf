//! [`Rebound`]: the service around a tonic channel. Per unary call it keeps the request to send
//! it again, asks the circuit breaker of the call's authority (when its policy has breakers),
//! sends it, reads a Trailers-Only answer's status and pushback (or the transport's error),
//! asks the registry, and waits and sends again — with `grpc-previous-rpc-attempts` and the
//! deadline shrunk to the time left (gRFC A6) — or hands back the last answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::header::HeaderValue;
use rebound::breaker::{self, Admission, BreakerOpen, NodeBreakers};
use rebound::grpc::GrpcCode;
use rebound::hedge::HedgeSchedule;
use rebound::{
    reasons, telemetry, Decision, DecisionContext, Outcome, Pushback, Request, RequestType,
    RetryReason,
};
use tonic::body::Body as TonicBody;
use tower_service::Service;
use tracing::Instrument;

use crate::hedged::Copies;
use crate::layer::Shared;
use crate::replay_body::{keep, Kept};
use crate::response::{
    format_timeout, parse_timeout, pushback, trailers_only_status, GRPC_PREVIOUS_RPC_ATTEMPTS,
    GRPC_TIMEOUT,
};

/// The errors the layer hands back: the channel's own, or the request body's.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A tonic channel (or any `http` service of tonic bodies) whose calls Rebound retries; made
/// by [`ReboundLayer`](crate::ReboundLayer).
#[derive(Debug, Clone)]
pub struct Rebound<S> {
    pub(crate) inner: S,
    pub(crate) shared: Arc<Shared>,
}

/// The node of a call whose URI names no authority, for its policy's breakers: the channel
/// below the layer.
const CHANNEL_NODE: &str = "channel";

/// Request ids for the calls the layer describes.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl<S, B> Service<http::Request<TonicBody>> for Rebound<S>
where
    S: Service<http::Request<TonicBody>, Response = http::Response<B>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
    B: Send + 'static,
{
    type Response = http::Response<B>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<http::Response<B>, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: http::Request<TonicBody>) -> Self::Future {
        // The service made ready sends the first attempt; the clone stays for the next call.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(call(inner, Arc::clone(&self.shared), req))
    }
}

/// A call described: Rebound's request, and the authority it goes to (kept to mark each
/// attempt sent without copying it).
struct Described {
    request: Request,
    authority: Option<Arc<str>>,
}

/// Rebound's request for the call `parts` describe, started at `start`.
fn describe(shared: &Shared, parts: &http::request::Parts, start: Instant) -> Described {
    let path = parts.uri.path();
    let deadline = (parts.headers.get(GRPC_TIMEOUT))
        .and_then(|v| v.to_str().ok())
        .and_then(parse_timeout)
        .filter(|d| !d.is_zero())
        .unwrap_or(shared.timeout);
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let mut request = Request::new_at(id, RequestType::Grpc, deadline, start)
        .expect("a deadline above zero")
        .route(path)
        .idempotent(shared.is_idempotent(path));
    let authority: Option<Arc<str>> = parts.uri.authority().map(|a| Arc::from(a.as_str()));
    if let Some(authority) = &authority {
        request = request.authority(Arc::clone(authority));
    }
    Described { request, authority }
}

impl Described {
    /// Marks the request written to its authority (once: it is the same for every attempt),
    /// or to no named node when the URI carries none.
    fn dispatched(&mut self) {
        if self.request.was_dispatched() {
            return;
        }
        match &self.authority {
            Some(authority) => self.request.mark_dispatched(Arc::clone(authority)),
            None => self.request.mark_sent(),
        }
    }
}

/// Whether `error` says the call never left the client: its connection could not be made.
fn never_sent(error: &BoxError) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error.as_ref());
    while let Some(error) = source {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            if matches!(
                io.kind(),
                K::ConnectionRefused | K::AddrNotAvailable | K::NotConnected | K::HostUnreachable
            ) {
                return true;
            }
        }
        source = error.source();
    }
    false
}

/// One attempt's failure: why, the server's pushback, and what to hand back if not retried.
pub(crate) enum Failed<B> {
    Answered(RetryReason, Option<Pushback>, http::Response<B>),
    Transport(RetryReason, BoxError),
}

impl<B> Failed<B> {
    /// Why it failed, and the server's pushback.
    pub(crate) fn reason(&self) -> (&RetryReason, Option<Pushback>) {
        match self {
            Failed::Answered(reason, pushback, _) => (reason, *pushback),
            Failed::Transport(reason, _) => (reason, None),
        }
    }
}

/// How one attempt (or one copy of it) went.
pub(crate) enum Sent<B> {
    /// OK, or an answer whose messages follow (the call is committed).
    Answered(http::Response<B>),
    /// It failed; `true` if it may have reached the server.
    Failed(Failed<B>, bool),
}

/// Sends one attempt of the call with `parts` and `bytes` through `service` (made ready),
/// and reads how it went: a Trailers-Only answer's status and pushback, or the transport's
/// error (a connection that could not be made: not sent).
pub(crate) async fn send<S, B>(
    service: &mut S,
    parts: http::request::Parts,
    bytes: bytes::Bytes,
) -> Sent<B>
where
    S: Service<http::Request<TonicBody>, Response = http::Response<B>>,
    S::Error: Into<BoxError>,
{
    let body = TonicBody::new(http_body_util::Full::new(bytes));
    match service.call(http::Request::from_parts(parts, body)).await {
        Err(error) => {
            let error: BoxError = error.into();
            if never_sent(&error) {
                Sent::Failed(
                    Failed::Transport(reasons::SOCKET_NOT_AVAILABLE, error),
                    false,
                )
            } else {
                let reason = reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT;
                Sent::Failed(Failed::Transport(reason, error), true)
            }
        }
        Ok(response) => match trailers_only_status(response.headers()) {
            Some(code) if code != GrpcCode::Ok => {
                let pushback = pushback(response.headers());
                let reason = RetryReason::GrpcStatus(code);
                Sent::Failed(Failed::Answered(reason, pushback, response), true)
            }
            _ => Sent::Answered(response),
        },
    }
}

/// Counts how an attempt admitted by `node`'s breaker as `admission` went (docs/breakers.md
/// "What counts as a failure"): an answer as an answer, a failure as
/// [`breaker::failure_counts`] says; a refused attempt counts nothing.
fn settle<B>(breakers: &NodeBreakers, node: &str, admission: Admission, sent: &Sent<B>) {
    if !admission.allows() {
        return;
    }
    let failed = match sent {
        Sent::Answered(_) => Some(false),
        Sent::Failed(failed, _) => {
            let (reason, pushback) = failed.reason();
            breaker::failure_counts(reason, pushback)
        }
    };
    if let Some(failed) = failed {
        breakers.record_at(node, admission, failed, Instant::now());
    }
}

async fn call<S, B>(
    mut inner: S,
    shared: Arc<Shared>,
    req: http::Request<TonicBody>,
) -> Result<http::Response<B>, BoxError>
where
    S: Service<http::Request<TonicBody>, Response = http::Response<B>> + Clone + Send,
    S::Future: Send,
    S::Error: Into<BoxError>,
{
    let (parts, body) = req.into_parts();
    let bytes = match keep(body, shared.max_replay_bytes)
        .await
        .map_err(BoxError::from)?
    {
        Kept::Whole(bytes) => bytes,
        Kept::Once(body) => {
            tracing::debug!(
                method = parts.uri.path(),
                limit = shared.max_replay_bytes,
                "call larger than the replay limit: sent once, not retried"
            );
            let req = http::Request::from_parts(parts, body);
            return inner.call(req).await.map_err(Into::into);
        }
    };
    // Described when first needed: a call answered at once needs no description unless a
    // retry budget counts it, or its policy hedges it.
    let start = Instant::now();
    let mut described: Option<Described> = None;
    let hedging = if shared.registry.hedges() && shared.is_idempotent(parts.uri.path()) {
        let call = described.insert(describe(&shared, &parts, start));
        shared.registry.hedging(&call.request, start)
    } else {
        None
    };
    // The breakers of the call's policy, and its node: the authority it goes to, or
    // `CHANNEL_NODE` when its URI carries none (tonic adds the channel's origin below the
    // layer; one layer usually serves one channel).
    let breakers = if shared.registry.has_breakers() {
        let call = described.get_or_insert_with(|| describe(&shared, &parts, start));
        let node = (call.authority.clone()).unwrap_or_else(|| Arc::from(CHANNEL_NODE));
        (shared.registry.breakers(&call.request)).map(|breakers| (breakers, node))
    } else {
        None
    };
    let has_deadline = parts.headers.contains_key(GRPC_TIMEOUT);
    let mut attempt: u32 = 0;
    // The time slept between attempts (gRFC A96's retry delay).
    let mut slept = Duration::ZERO;
    loop {
        if attempt > 0 {
            std::future::poll_fn(|cx| inner.poll_ready(cx))
                .await
                .map_err(Into::into)?;
        }
        let mut sent_parts = parts.clone();
        if attempt > 0 {
            (sent_parts.headers).insert(GRPC_PREVIOUS_RPC_ATTEMPTS, HeaderValue::from(attempt));
        }
        if let (true, Some(described)) = (has_deadline, &described) {
            let left = described.request.remaining_at(Instant::now());
            if let Ok(value) = HeaderValue::from_str(&format_timeout(left)) {
                sent_parts.headers.insert(GRPC_TIMEOUT, value);
            }
        }
        let admission = (breakers.as_ref())
            .map(|(breakers, node)| (breakers, node, breakers.admit_at(node, Instant::now())));
        let sent = match (&hedging, &described, &admission) {
            (_, _, Some((_, node, Admission::Refused))) => {
                let open = BreakerOpen {
                    node: node.to_string(),
                };
                let reason = reasons::CIRCUIT_BREAKER_OPEN;
                Sent::Failed(Failed::Transport(reason, Box::new(open)), false)
            }
            (Some(hedging), Some(call), _) => {
                let started = Instant::now();
                match HedgeSchedule::start(hedging, &call.request, started) {
                    Some(schedule) => {
                        let copies = Copies {
                            parts: &sent_parts,
                            bytes: &bytes,
                            previous: attempt,
                            has_deadline,
                        };
                        copies.run(inner.clone(), schedule, &call.request).await
                    }
                    None => send(&mut inner, sent_parts, bytes.clone()).await,
                }
            }
            _ => send(&mut inner, sent_parts, bytes.clone()).await,
        };
        if let Some((breakers, node, admission)) = admission {
            settle(breakers, node, admission, &sent);
        }
        let failed = match sent {
            Sent::Failed(failed, reached) => {
                let call = described.get_or_insert_with(|| describe(&shared, &parts, start));
                if reached {
                    call.dispatched();
                }
                failed
            }
            Sent::Answered(response) => {
                // Reported only where a budget or the policy counts outcomes (else a report
                // is a no-op, and its clock read a cost).
                if shared.registry.counts_outcomes() {
                    let call = described.get_or_insert_with(|| describe(&shared, &parts, start));
                    let attempts = attempt + 1;
                    let outcome = Outcome::Succeeded { attempts };
                    shared
                        .registry
                        .report(&call.request, outcome, Instant::now());
                }
                let outcome = Outcome::Succeeded {
                    attempts: attempt + 1,
                };
                telemetry::record_retries(outcome, Some(slept));
                return Ok(response);
            }
        };
        let request = &mut described.as_mut().expect("described on a failure").request;
        let (reason, pushback) = failed.reason();
        let reason = reason.clone();
        let context = DecisionContext::new(&reason).with_pushback(pushback);
        // The failed attempt's span (docs/observability.md), which the registry's decision
        // fills in.
        let span = telemetry::attempt_span(request, attempt);
        telemetry::record_failure(&span, Some(&reason));
        // Boxed, as the wait below: the futures only a failure needs are not part of every
        // call's.
        let decided = shared
            .registry
            .decide(request, &context)
            .instrument(span)
            .await;
        let delay = match decided.map(|d| d.decision) {
            Ok(Decision::Retry(plan)) => plan.delay,
            ended => {
                let attempts = attempt + 1;
                let outcome = match ended {
                    Ok(Decision::Timeout { .. }) => Outcome::TimedOut { attempts },
                    _ => Outcome::Failed { attempts },
                };
                if let Err(error) = &ended {
                    tracing::warn!(%error, "no policy decides for the call: not retried");
                }
                if shared.registry.counts_outcomes() {
                    shared.registry.report(request, outcome, Instant::now());
                }
                telemetry::record_retries(outcome, Some(slept));
                return match failed {
                    Failed::Answered(_, _, response) => Ok(response),
                    Failed::Transport(_, error) => Err(error),
                };
            }
        };
        drop(failed);
        Box::pin(tokio::time::sleep(delay)).await;
        slept += delay;
        attempt += 1;
    }
}
