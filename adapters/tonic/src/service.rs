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
use rebound::breaker::{Admission, BreakerOpen, NodeBreakers};
use rebound::hedge::{HedgeSchedule, Hedging};
use rebound::replay_body::{keep_body, KeptBody};
use rebound::{
    reasons, telemetry, ClientContext, Decision, DecisionContext, Outcome, PolicyControls,
    Progress, Pushback, Request, RequestType, RetryReason,
};
use tonic::body::Body as TonicBody;
use tower_service::Service;
use tracing::Instrument;

use crate::attempt::{self, send, settle, BoxError, Failed, Sent};
use crate::hedged::Copies;
use crate::response::{format_timeout, parse_timeout, GRPC_PREVIOUS_RPC_ATTEMPTS, GRPC_TIMEOUT};
use crate::shared::Shared;

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
        .with_route(path)
        .with_idempotent(shared.is_idempotent(path));
    let authority: Option<Arc<str>> = parts.uri.authority().map(|a| Arc::from(a.as_str()));
    if let Some(authority) = &authority {
        request = request.with_authority(Arc::clone(authority));
    }
    request = shared.context_metadata.apply_to(&parts.headers, request);
    if let Some(context) = parts.extensions.get::<ClientContext>() {
        request = context.apply_to(request);
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

/// What a call's attempts are sent under: its policy's controls (asked once, and before each
/// attempt for its attempt timeout, which a policy's answer may set), its hedging, and its
/// breakers with the call's node.
struct CallControls {
    policy: PolicyControls,
    hedging: Option<Hedging>,
    breakers: Option<(Arc<NodeBreakers>, Arc<str>)>,
}

impl CallControls {
    /// The controls of the call `parts` describe, describing it (into `described`) only when
    /// some policy has controls. The node is the authority it goes to, or `CHANNEL_NODE` when
    /// its URI carries none (tonic adds the channel's origin below the layer; one layer
    /// usually serves one channel).
    fn of(
        shared: &Shared,
        parts: &http::request::Parts,
        start: Instant,
        described: &mut Option<Described>,
    ) -> Self {
        if !shared.registry.has_controls() {
            return CallControls {
                policy: PolicyControls::default(),
                hedging: None,
                breakers: None,
            };
        }
        let call = described.insert(describe(shared, parts, start));
        let policy = shared.registry.controls(&call.request);
        let hedging = (shared.is_idempotent(parts.uri.path()))
            .then(|| policy.hedging(&call.request, start))
            .flatten();
        let breakers = policy.breakers().map(|breakers| {
            let node = (call.authority.clone()).unwrap_or_else(|| Arc::from(CHANNEL_NODE));
            (Arc::clone(breakers), node)
        });
        CallControls {
            policy,
            hedging,
            breakers,
        }
    }
}

/// A call's request body, kept whole to send again, or (larger than the replay limit) sent
/// once through `inner` (the call started at `start`) and its answer handed back.
async fn kept_or_sent<S, B>(
    inner: &mut S,
    shared: &Shared,
    (parts, start): (&http::request::Parts, Instant),
    body: TonicBody,
) -> Result<bytes::Bytes, Result<http::Response<B>, BoxError>>
where
    S: Service<http::Request<TonicBody>, Response = http::Response<B>>,
    S::Error: Into<BoxError>,
{
    match keep_body(body, shared.max_replay_bytes).await {
        Err(error) => Err(Err(BoxError::from(error))),
        Ok(KeptBody::Whole(bytes)) => Ok(bytes),
        Ok(KeptBody::Once(body)) => {
            tracing::debug!(
                method = parts.uri.path(),
                limit = shared.max_replay_bytes,
                "call larger than the replay limit: sent once, not retried"
            );
            let req = http::Request::from_parts(parts.clone(), TonicBody::new(body));
            let sent = attempt::sent(inner.call(req).await);
            Err(sent_once(shared, parts, start, sent).await)
        }
    }
}

/// The answer to a call sent once, its body past the replay limit. gRFC A6 "When Retries are
/// Valid" calls a call whose outgoing message overflowed the buffer committed: its failure is
/// decided as such (so the decision log has it), never retried, and handed back.
async fn sent_once<B>(
    shared: &Shared,
    parts: &http::request::Parts,
    start: Instant,
    sent: Sent<B>,
) -> Result<http::Response<B>, BoxError> {
    let (failed, reached) = match sent {
        Sent::Answered(response) => return Ok(response),
        Sent::Failed(failed, reached) => (failed, reached),
    };
    let mut call = describe(shared, parts, start);
    if reached {
        call.dispatched();
    }
    let policy = shared.registry.controls(&call.request);
    let told = (failed.reason(), Progress::Committed);
    let retried = decide(
        shared,
        &policy,
        &mut call.request,
        (told, 0, Duration::ZERO),
    )
    .await;
    debug_assert!(retried.is_none(), "a committed call is never retried");
    match failed {
        Failed::Answered(_, _, response) => Ok(response),
        Failed::Transport(_, error, _) => Err(error),
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
    let start = Instant::now();
    let bytes = match kept_or_sent(&mut inner, &shared, (&parts, start), body).await {
        Ok(bytes) => bytes,
        Err(answered) => return answered,
    };
    // Described when first needed: a call answered at once needs no description unless a
    // retry budget counts it, or its policy hedges it.
    let mut described: Option<Described> = None;
    let controls = CallControls::of(&shared, &parts, start, &mut described);
    let mut attempt: u32 = 0;
    // The time slept between attempts (gRFC A96's retry delay).
    let mut slept = Duration::ZERO;
    loop {
        if attempt > 0 {
            std::future::poll_fn(|cx| inner.poll_ready(cx))
                .await
                .map_err(Into::into)?;
        }
        // gRFC A6 "Exposed Retry Metadata": the attempts before this one that counted, so not
        // the transparent retries.
        let previous = described.as_ref().map_or(0, |c| c.request.retry_attempts());
        let attempt_of = AttemptOf {
            parts: &parts,
            bytes: &bytes,
            previous,
        };
        let sent = attempt_of
            .send(&mut inner, &controls, described.as_ref())
            .await;
        let failed = match sent {
            Sent::Failed(failed, reached) => {
                let call = described.get_or_insert_with(|| describe(&shared, &parts, start));
                if reached {
                    call.dispatched();
                }
                failed
            }
            Sent::Answered(response) => {
                // Reported only for a described call: one whose policy may have controls, or
                // that failed before (else a report is a no-op, and its clock read a cost).
                let outcome = Outcome::Succeeded {
                    attempts: attempt + 1,
                };
                if let Some(call) = &described {
                    (controls.policy).report(&call.request, outcome, Instant::now());
                }
                telemetry::record_retries(outcome, Some(slept));
                return Ok(response);
            }
        };
        let request = &mut described.as_mut().expect("described on a failure").request;
        let asked = ((failed.reason(), failed.progress()), attempt, slept);
        let Some(delay) = decide(&shared, &controls.policy, request, asked).await else {
            return match failed {
                Failed::Answered(_, _, response) => Ok(response),
                Failed::Transport(_, error, _) => Err(error),
            };
        };
        drop(failed);
        Box::pin(tokio::time::sleep(delay)).await;
        slept += delay;
        attempt += 1;
    }
}

/// An attempt of a call after `previous` counted ones: its parts and message as first sent.
struct AttemptOf<'a> {
    parts: &'a http::request::Parts,
    bytes: &'a bytes::Bytes,
    previous: u32,
}

impl AttemptOf<'_> {
    /// Sends this attempt through `inner` under `controls`: refused by an open breaker, as
    /// hedged copies when the policy hedges, else once; counted in the node's breaker. It
    /// carries `grpc-previous-rpc-attempts` after the first, and the deadline shrunk to the time
    /// left when the caller set one (gRFC A6).
    async fn send<S, B>(
        &self,
        inner: &mut S,
        controls: &CallControls,
        described: Option<&Described>,
    ) -> Sent<B>
    where
        S: Service<http::Request<TonicBody>, Response = http::Response<B>> + Clone + Send,
        S::Future: Send,
        S::Error: Into<BoxError>,
    {
        let has_deadline = self.parts.headers.contains_key(GRPC_TIMEOUT);
        let mut parts = self.parts.clone();
        if self.previous > 0 {
            let previous = HeaderValue::from(self.previous);
            parts.headers.insert(GRPC_PREVIOUS_RPC_ATTEMPTS, previous);
        }
        if let (true, Some(described)) = (has_deadline, described) {
            let left = described.request.remaining_at(Instant::now());
            if let Ok(value) = HeaderValue::from_str(&format_timeout(left)) {
                parts.headers.insert(GRPC_TIMEOUT, value);
            }
        }
        let admission = (controls.breakers.as_ref())
            .map(|(breakers, node)| (breakers, node, breakers.admit_at(node, Instant::now())));
        let sending = async {
            match (&controls.hedging, described, &admission) {
                (_, _, Some((_, node, Admission::Refused))) => {
                    let open = BreakerOpen {
                        node: node.to_string(),
                    };
                    let reason = reasons::CIRCUIT_BREAKER_OPEN;
                    let failed = Failed::Transport(reason, Box::new(open), Progress::Processed);
                    Sent::Failed(failed, false)
                }
                (Some(hedging), Some(call), _) => {
                    match HedgeSchedule::start(hedging, &call.request, Instant::now()) {
                        Some(schedule) => {
                            let copies = Copies {
                                parts: &parts,
                                bytes: self.bytes,
                                previous: self.previous,
                                has_deadline,
                                policy: &controls.policy,
                            };
                            copies.run(inner.clone(), schedule, &call.request).await
                        }
                        None => {
                            timed(send(inner, parts, self.bytes.clone()), controls, described).await
                        }
                    }
                }
                _ => timed(send(inner, parts, self.bytes.clone()), controls, described).await,
            }
        };
        let cut_after = described.and_then(|call| {
            let timeout = controls.policy.attempt_timeout(&call.request)?;
            Some(timeout.min(call.request.remaining_at(Instant::now())))
        });
        let sent = match cut_after {
            None => sending.await,
            Some(after) => cut_at_timeout(sending, after).await,
        };
        if let Some((breakers, node, admission)) = admission {
            settle(breakers, node, admission, &sent);
        }
        sent
    }
}

/// `sending`'s end, its latency told to the call's controls when the server answered (a hedged
/// attempt's copies are told one by one).
async fn timed<B>(
    sending: impl Future<Output = Sent<B>>,
    controls: &CallControls,
    described: Option<&Described>,
) -> Sent<B> {
    let started = Instant::now();
    let sent = sending.await;
    if let (true, Some(call)) = (sent.answered(), described) {
        controls
            .policy
            .attempt_answered(&call.request, started.elapsed());
    }
    sent
}

/// `sending`'s end, or the attempt cut if `after` passes first. Only the timer is boxed (only
/// calls whose policy cuts attempts pay for it); the attempt is not moved.
async fn cut_at_timeout<B>(sending: impl Future<Output = Sent<B>>, after: Duration) -> Sent<B> {
    let mut sending = std::pin::pin!(sending);
    let mut timer = Box::pin(tokio::time::sleep(after));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(sent) = sending.as_mut().poll(cx) {
            return Poll::Ready(sent);
        }
        timer.as_mut().poll(cx).map(|()| cut(after))
    })
    .await
}

/// An attempt cut after `after` by its attempt timeout: it may have reached the server; if it
/// is not retried the caller gets DEADLINE_EXCEEDED, as a gRPC client reports an attempt that
/// ran out of time.
fn cut<B>(after: Duration) -> Sent<B> {
    let status = tonic::Status::deadline_exceeded(format!(
        "rebound: the attempt had not answered after {after:?} (its attempt timeout) and was cut"
    ));
    let error: BoxError = Box::new(status);
    let failed = Failed::Transport(reasons::ATTEMPT_TIMEOUT, error, Progress::Processed);
    Sent::Failed(failed, true)
}

/// What a failed attempt tells the decision: its reason and the server's pushback, and how far
/// it got.
type Told<'a> = ((&'a RetryReason, Option<Pushback>), Progress);

/// Asks the registry about `request`'s failed attempt `attempt` (its reason, pushback and
/// progress), after `slept` between attempts: the delay before the next attempt, or `None` when
/// the call ends (reported to its policy's controls, counted).
async fn decide(
    shared: &Shared,
    policy: &PolicyControls,
    request: &mut Request,
    (told, attempt, slept): (Told<'_>, u32, Duration),
) -> Option<Duration> {
    let ((reason, pushback), progress) = told;
    let reason = reason.clone();
    let context = DecisionContext::new(&reason)
        .with_pushback(pushback)
        .with_progress(progress);
    // The failed attempt's span (docs/observability.md), which the registry's decision fills
    // in.
    let span = telemetry::attempt_span(request, attempt);
    telemetry::record_failure(&span, Some(&reason));
    let decided = shared
        .registry
        .decide(request, &context)
        .instrument(span)
        .await;
    let ended = match decided.map(|d| d.decision) {
        Ok(Decision::Retry(plan)) => return Some(plan.delay),
        ended => ended,
    };
    let attempts = attempt + 1;
    let outcome = match ended {
        Ok(Decision::Timeout { .. }) => Outcome::TimedOut { attempts },
        _ => Outcome::Failed { attempts },
    };
    if let Err(error) = &ended {
        tracing::warn!(%error, "no policy decides for the call: not retried");
    }
    policy.report(request, outcome, Instant::now());
    telemetry::record_retries(outcome, Some(slept));
    None
}
