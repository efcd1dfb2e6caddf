//! The retry loop around `next.run`: send, classify the answer or the error, ask the registry,
//! wait the planned delay, send again — or hand back the last answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http::Extensions;
use rebound::classify::DEFAULT_HTTP_RETRY_STATUSES;
use rebound::registry::PolicyRegistry;
use rebound::replay_body::{
    keep_body, replay_limit, KeptBody, ZeroReplayLimit, DEFAULT_MAX_REPLAY_BYTES,
};
use rebound::{
    telemetry, ClientContext, ContextHeaders, Decision, DecisionContext, HttpMethod,
    InvalidHeaderName, Progress, Request, RequestType, Service,
};
use reqwest_middleware::{Middleware, Next};
use tracing::Instrument;

use crate::answer::{cut, read_and_classify, triage, Told, Triage};

/// Declares a request idempotent (or not), overriding its service's rule (reference 001
/// "Idempotent Operation List": a query is idempotent only when read-only; search and views
/// reads are; a management request when it is a GET; RFC 9110 §9.2.2 for a plain HTTP
/// request: GET, HEAD, OPTIONS, TRACE, PUT and DELETE are). Set it with `with_extension`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Idempotent(pub bool);

/// Names a plain HTTP request's route (a template such as `/v1/items/{id}`, or any name),
/// which policies and the decision log see instead of the URL's path. Set it with
/// `with_extension`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route(pub Arc<str>);

/// A `reqwest-middleware` middleware deciding retries with a policy registry. A request to a
/// Couchbase service names it with `with_extension(rebound::Service::Query)` (or analytics,
/// search, views, management), or the middleware serves one ([`service`](Self::service)); any
/// other request is a plain HTTP request (RFC 9110): idempotent by its method unless declared
/// ([`Idempotent`]), its statuses classified by a table ([`retry_statuses`](Self::retry_statuses)),
/// its authority and route (the URL's path, or [`Route`]) told to the policy.
#[derive(Debug, Clone)]
pub struct ReboundMiddleware {
    registry: Arc<PolicyRegistry>,
    policy: Option<Arc<str>>,
    timeout: Duration,
    /// The service of requests that name none.
    service: Option<Service>,
    /// A plain HTTP request's statuses retried (the others are handed back).
    retry_statuses: Arc<[u16]>,
    /// The header each attempt carries its number in, if any.
    attempt_count_header: Option<http::HeaderName>,
    /// The headers read into the client context.
    context_headers: ContextHeaders,
    /// The answer header in which the callee says how many attempts it made, if any.
    upstream_attempts_header: Option<http::HeaderName>,
    /// The most bytes of a streamed body kept to send it again.
    max_replay_bytes: usize,
}

/// A service refused where an HTTP service was expected (`kv`, `cql`, `grpc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("rebound-reqwest: `{}` is not an HTTP service; expected query, analytics, search, views, management or http", .0.name())]
pub struct NotAnHttpService(pub Service);

/// Request ids for the requests the middleware describes.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl ReboundMiddleware {
    /// The services' default request timeout (75 s), which retries are capped by.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(75);

    /// Decides with `registry`'s routing (the service's or request type's route, else the
    /// default policy).
    pub fn new(registry: Arc<PolicyRegistry>) -> Self {
        ReboundMiddleware {
            registry,
            policy: None,
            timeout: Self::DEFAULT_TIMEOUT,
            service: None,
            retry_statuses: DEFAULT_HTTP_RETRY_STATUSES.into(),
            attempt_count_header: None,
            context_headers: ContextHeaders::new(),
            upstream_attempts_header: None,
            max_replay_bytes: DEFAULT_MAX_REPLAY_BYTES,
        }
    }

    /// Keeps at most `bytes` of a streamed request body (one `reqwest` cannot copy) to send it
    /// again (default 64 KiB): the body is read before the first attempt, and one larger than
    /// this is sent once, what was read followed by the rest, and never retried. A body
    /// `reqwest` can copy (bytes, a string) is sent again whatever its size. Zero is refused.
    pub fn max_replay_bytes(mut self, bytes: usize) -> Result<Self, ZeroReplayLimit> {
        self.max_replay_bytes = replay_limit(bytes)?;
        Ok(self)
    }

    /// Reads the request header `header` into the client-context key `key`, which the policy
    /// reads (`host.client-context`): `context_header("Idempotency-Key", "idempotency-key")`.
    /// A [`ClientContext`](rebound::ClientContext) in the request's extensions adds entries of
    /// its own, which win. A name that is not a header name is refused, naming it
    /// (docs/adapters.md "Client context").
    ///
    /// ```
    /// # fn middleware(registry: std::sync::Arc<rebound::registry::PolicyRegistry>) -> Result<(), rebound::InvalidHeaderName> {
    /// use rebound_reqwest::ReboundMiddleware;
    ///
    /// let middleware =
    ///     ReboundMiddleware::new(registry).context_header("Idempotency-Key", "idempotency-key")?;
    /// # let _ = middleware;
    /// # Ok(())
    /// # }
    /// ```
    pub fn context_header(
        mut self,
        header: &str,
        key: impl Into<String>,
    ) -> Result<Self, InvalidHeaderName> {
        self.context_headers = self.context_headers.with(header, key)?;
        Ok(self)
    }

    /// Each attempt carries its number, the first 1, in the header `name` (Envoy's
    /// `x-envoy-attempt-count`), so a server or a proxy can tell a retry from a first attempt
    /// and the layers behind it need not retry again. Off by default.
    pub fn attempt_count_header(mut self, name: http::HeaderName) -> Self {
        self.attempt_count_header = Some(name);
        self
    }

    /// `req` with its attempt number in the attempt-count header, when the middleware sends one.
    fn counted(&self, mut req: reqwest::Request, request: &Request) -> reqwest::Request {
        if let Some(name) = &self.attempt_count_header {
            let number = request.retry_attempts().saturating_add(1);
            req.headers_mut()
                .insert(name.clone(), http::HeaderValue::from(number));
        }
        req
    }

    /// The statuses of a plain HTTP request's answer that are failures to decide about (the
    /// others are handed back as they came). Default: 408, 429, 500, 502, 503, 504. A 413, 429
    /// or 503 that carries a `Retry-After` is one whatever the table
    /// ([`classify_http_answer`](rebound::classify::classify_http_answer)).
    pub fn retry_statuses(mut self, statuses: impl IntoIterator<Item = u16>) -> Self {
        self.retry_statuses = statuses.into_iter().collect();
        self
    }

    /// Serves `service`: a request that names no service with `with_extension` is taken to
    /// target it (one client per service, as each service has its own port; a request that
    /// names one is still taken at its word). `kv` and `cql` are refused.
    pub fn service(mut self, service: Service) -> Result<Self, NotAnHttpService> {
        request_type(service)?;
        self.service = Some(service);
        Ok(self)
    }

    /// Decides with the registry's policy `name`; an unknown name is refused.
    pub fn policy(mut self, name: &str) -> Result<Self, rebound::registry::RegistryError> {
        self.registry.active(name)?;
        self.policy = Some(name.into());
        Ok(self)
    }

    /// The requests' timeout: no retry is planned past it. Default: 75 s.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        if !timeout.is_zero() {
            self.timeout = timeout;
        }
        self
    }

    /// Rebound's request for an HTTP request `req` to `service`.
    fn request(
        &self,
        service: Service,
        req: &reqwest::Request,
        extensions: &Extensions,
    ) -> Result<Request, reqwest_middleware::Error> {
        let request_type =
            request_type(service).map_err(|e| reqwest_middleware::Error::Middleware(e.into()))?;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let mut request = Request::new(id, request_type, self.timeout).expect("a non-zero timeout");
        if let Some(method) = http_method(req.method()) {
            request = request.with_method(method);
        }
        if service == Service::Http {
            let url = req.url();
            if let Some(host) = url.host_str() {
                request = match url.port() {
                    Some(port) => request.with_authority(format!("{host}:{port}")),
                    None => request.with_authority(host),
                };
            }
            request = match extensions.get::<Route>() {
                Some(Route(route)) => request.with_route(Arc::clone(route)),
                None => request.with_route(url.path()),
            };
        }
        if let Some(Idempotent(idempotent)) = extensions.get::<Idempotent>() {
            request = request.with_idempotent(*idempotent);
        }
        request = self.context_headers.apply_to(req.headers(), request);
        if let Some(context) = extensions.get::<ClientContext>() {
            request = context.apply_to(request);
        }
        if let Some(policy) = &self.policy {
            request = request.with_policy(Arc::clone(policy));
        }
        Ok(request)
    }
}

impl ReboundMiddleware {
    /// Reads, on a failed answer, the header `name` in which the callee says how many attempts
    /// it made for this one (its own retries, or a proxy's: Envoy's `x-envoy-attempt-count`
    /// with `include_attempt_count_in_response`), so that the request's throttle counts the
    /// failure that many times (at most 16; docs/throttling.md "What a failure costs"): a
    /// callee that already retried leaves less room for retries here. Off by default; a
    /// value that is not a whole number counts once.
    pub fn upstream_attempts_header(mut self, name: http::HeaderName) -> Self {
        self.upstream_attempts_header = Some(name);
        self
    }

    /// The attempts the callee says it made for the attempt that brought back `attempted`.
    fn upstream_attempts(&self, attempted: &crate::answer::Attempted) -> u32 {
        let (Some(name), Ok(response)) = (&self.upstream_attempts_header, attempted) else {
            return 1;
        };
        (response.headers().get(name))
            .and_then(|value| value.to_str().ok()?.trim().parse().ok())
            .unwrap_or(1)
    }

    /// `req` with its streamed body read: kept whole, so that it can be copied, when it holds
    /// at most the replay limit; else what was read put back before the rest (sent once). A
    /// body that fails while read is the request's error: it cannot be sent.
    async fn replayable(
        &self,
        mut req: reqwest::Request,
    ) -> reqwest_middleware::Result<reqwest::Request> {
        let Some(body) = req.body_mut().take() else {
            return Ok(req);
        };
        *req.body_mut() = Some(match keep_body(body, self.max_replay_bytes).await? {
            KeptBody::Whole(bytes) => reqwest::Body::from(bytes),
            KeptBody::Once(body) => {
                tracing::debug!(
                    url = %req.url(),
                    limit = self.max_replay_bytes,
                    "streamed body larger than the replay limit: sent once, not retried"
                );
                reqwest::Body::wrap(body)
            }
        });
        Ok(req)
    }
}

/// The next attempt of the request kept in `req`: a copy, or, when its body cannot be copied
/// (a stream past the replay limit), the request itself with its URL (`Some`), sent once. gRFC
/// A6 "When Retries are Valid" calls such a call committed: its failure is decided, and logged,
/// as never retried. `None` once the request itself was sent.
fn next_attempt(
    req: &mut Option<reqwest::Request>,
) -> Option<(reqwest::Request, Option<reqwest::Url>)> {
    match req.as_ref()?.try_clone() {
        Some(attempt) => Some((attempt, None)),
        None => {
            let once = req.take()?;
            let url = once.url().clone();
            Some((once, Some(url)))
        }
    }
}

/// The request type of a request to `service`, an HTTP service.
fn request_type(service: Service) -> Result<RequestType, NotAnHttpService> {
    Ok(match service {
        Service::Query => RequestType::Query,
        Service::Analytics => RequestType::Analytics,
        Service::Search => RequestType::Search,
        Service::Views => RequestType::View,
        Service::Management => RequestType::Management,
        Service::Http => RequestType::Http,
        other => return Err(NotAnHttpService(other)),
    })
}

fn http_method(method: &http::Method) -> Option<HttpMethod> {
    Some(match *method {
        http::Method::GET => HttpMethod::Get,
        http::Method::POST => HttpMethod::Post,
        http::Method::PUT => HttpMethod::Put,
        http::Method::DELETE => HttpMethod::Delete,
        http::Method::HEAD => HttpMethod::Head,
        http::Method::OPTIONS => HttpMethod::Options,
        http::Method::TRACE => HttpMethod::Trace,
        http::Method::PATCH => HttpMethod::Patch,
        http::Method::CONNECT => HttpMethod::Connect,
        _ => return None,
    })
}

/// The trait's `async fn` as `async_trait` makes it, but with the arguments used where they were
/// captured: `async_trait` moves them into variables of the body, so the future held the
/// request twice. This future is boxed and moved for every request, so it is kept small
/// (docs/performance.md "Adapters").
impl Middleware for ReboundMiddleware {
    fn handle<'a, 'b, 'c, 'f>(
        &'a self,
        req: reqwest::Request,
        extensions: &'b mut Extensions,
        next: Next<'c>,
    ) -> Pin<Box<dyn Future<Output = reqwest_middleware::Result<reqwest::Response>> + Send + 'f>>
    where
        'a: 'f,
        'b: 'f,
        'c: 'f,
        Self: 'f,
    {
        Box::pin(async move {
            let service = (extensions.get::<Service>().copied())
                .or(self.service)
                .unwrap_or(Service::Http);
            let mut request = self.request(service, &req, extensions)?;
            let controls = self.registry.controls(&request);
            // Boxed: only a streamed body pays for reading it first.
            let mut req = Some(
                match req.body().is_some_and(|body| body.as_bytes().is_none()) {
                    true => Box::pin(self.replayable(req)).await?,
                    false => req,
                },
            );
            loop {
                // Asked before each attempt: a policy's answer may set the next one's.
                let attempt_timeout = controls.attempt_timeout(&request);
                let Some((attempt, committed)) = next_attempt(&mut req) else {
                    unreachable!("a committed request's failure is never retried");
                };
                let started = std::time::Instant::now();
                let sent = next
                    .clone()
                    .run(self.counted(attempt, &request), extensions);
                let attempted = match attempt_timeout {
                    None => sent.await,
                    // Boxed: only requests whose policy cuts attempts pay for the timer.
                    Some(after) => {
                        let after = after.min(request.remaining_at(std::time::Instant::now()));
                        match Box::pin(tokio::time::timeout(after, sent)).await {
                            Ok(attempted) => attempted,
                            Err(_) => {
                                let url = committed.as_ref().or(req.as_ref().map(|req| req.url()));
                                Err(cut(&mut request, url, after))
                            }
                        }
                    }
                };
                if attempted.is_ok() {
                    // The server answered: how long that took is its latency.
                    controls.attempt_answered(&request, started.elapsed());
                }
                let upstream_attempts = self.upstream_attempts(&attempted);
                // In blocks, so that what one step needs is not kept in the future beside what
                // the next step needs.
                let (reason, pushback, answer) = {
                    let told = match triage(service, &self.retry_statuses, attempted, &mut request)
                    {
                        Triage::Told(told) => told,
                        Triage::ReadBody(response, pushback) => {
                            Box::pin(read_and_classify(service, response, pushback)).await
                        }
                    };
                    match told {
                        Told::Failed(failed) => failed,
                        Told::HandBack(done) => return done,
                    }
                };
                let (delay, answer) = {
                    let mut context = DecisionContext::new(&reason)
                        .with_pushback(pushback)
                        .with_upstream_attempts(upstream_attempts);
                    if committed.is_some() {
                        context = context.with_progress(Progress::Committed);
                    }
                    // The failed attempt's span (docs/observability.md), which the registry's
                    // decision fills in.
                    let span = telemetry::attempt_span(&request, request.retry_attempts());
                    telemetry::record_failure(&span, Some(&reason));
                    // Boxed, as the answer's draining below: the futures that only a failure
                    // needs are not part of every request's.
                    let decided = Box::pin(self.registry.decide(&mut request, &context))
                        .instrument(span)
                        .await;
                    match decided.map(|decided| decided.decision) {
                        Ok(Decision::Retry(plan)) if committed.is_none() => (plan.delay, answer),
                        Ok(_) => return answer.hand_back(),
                        Err(error) => {
                            tracing::warn!(%error, "no policy decides for the request: not retried");
                            return answer.hand_back();
                        }
                    }
                };
                Box::pin(answer.finish()).await;
                tokio::time::sleep(delay).await;
            }
        })
    }
}
