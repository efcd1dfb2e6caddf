//! The retry loop around `next.run`: send, classify the answer or the error, ask the registry,
//! wait the planned delay, send again — or hand back the last answer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::Extensions;
use rebound::classify::Classification;
use rebound::registry::PolicyRegistry;
use rebound::{
    reasons, Decision, DecisionContext, HttpMethod, Pushback, Request, RequestType, RetryReason,
    Service,
};
use reqwest_middleware::{Middleware, Next};

use crate::classify;

/// Declares a request idempotent (or not), overriding its service's rule (reference 001
/// "Idempotent Operation List": a query is idempotent only when read-only; search and views
/// reads are; a management request when it is a GET). Set it with `with_extension`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Idempotent(pub bool);

/// A `reqwest-middleware` middleware deciding retries with a policy registry. A request names
/// its service with `with_extension(rebound::Service::Query)` (or analytics, search, views,
/// management); one that names none is sent once and never retried.
#[derive(Debug, Clone)]
pub struct ReboundMiddleware {
    registry: Arc<PolicyRegistry>,
    policy: Option<Arc<str>>,
    timeout: Duration,
}

/// Request ids for the requests the middleware describes.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// What came back from one attempt: the response or the error.
type Attempted = reqwest_middleware::Result<reqwest::Response>;

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
        }
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

    /// Rebound's request for an HTTP request to `service`.
    fn request(
        &self,
        service: Service,
        method: &http::Method,
        extensions: &Extensions,
    ) -> Result<Request, reqwest_middleware::Error> {
        let request_type = match service {
            Service::Query => RequestType::Query,
            Service::Analytics => RequestType::Analytics,
            Service::Search => RequestType::Search,
            Service::Views => RequestType::View,
            Service::Management => RequestType::Management,
            other => {
                return Err(reqwest_middleware::Error::Middleware(anyhow::anyhow!(
                    "rebound-reqwest: `{}` is not an HTTP service; expected query, analytics, search, views or management",
                    other.name()
                )))
            }
        };
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let mut request = Request::new(id, request_type, self.timeout).expect("a non-zero timeout");
        if let Some(method) = http_method(method) {
            request = request.method(method);
        }
        if let Some(Idempotent(idempotent)) = extensions.get::<Idempotent>() {
            request = request.idempotent(*idempotent);
        }
        if let Some(policy) = &self.policy {
            request = request.policy(Arc::clone(policy));
        }
        Ok(request)
    }
}

fn http_method(method: &http::Method) -> Option<HttpMethod> {
    Some(match *method {
        http::Method::GET => HttpMethod::Get,
        http::Method::POST => HttpMethod::Post,
        http::Method::PUT => HttpMethod::Put,
        http::Method::DELETE => HttpMethod::Delete,
        _ => return None,
    })
}

/// What an attempt brought back, handed to the caller should no retry follow.
enum Answer {
    /// The response or the error as the client gave it.
    AsSent(Attempted),
    /// A response whose body was read to classify it, in parts (made a client response again
    /// only when handed back).
    Read(http::Response<bytes::Bytes>),
}

impl Answer {
    /// The caller's response or error.
    fn hand_back(self) -> Attempted {
        match self {
            Answer::AsSent(attempted) => attempted,
            Answer::Read(response) => Ok(reqwest::Response::from(response)),
        }
    }

    /// Lets the connection go back to the client's pool before the request is sent again: an
    /// answer's body left unread closes its connection.
    async fn finish(self) {
        if let Answer::AsSent(Ok(response)) = self {
            let _ = response.bytes().await;
        }
    }
}

/// Why one attempt failed, if it did: the reason and the server's pushback, with the attempt's
/// answer to hand back should no retry follow.
async fn failure(
    service: Service,
    attempted: Attempted,
    request: &mut Request,
) -> Result<(RetryReason, Option<Pushback>, Answer), Attempted> {
    let mut response = match attempted {
        Ok(response) if response.status().is_success() => return Err(Ok(response)),
        Ok(response) => response,
        Err(error) => {
            let reason = match &error {
                // Nothing was written: any request may go again.
                reqwest_middleware::Error::Reqwest(e) if e.is_connect() => {
                    reasons::SOCKET_NOT_AVAILABLE
                }
                reqwest_middleware::Error::Reqwest(e) => {
                    request.mark_dispatched(e.url().map(|u| u.to_string()).unwrap_or_default());
                    reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT
                }
                reqwest_middleware::Error::Middleware(_) => return Err(Err(error)),
            };
            return Ok((reason, None, Answer::AsSent(Err(error))));
        }
    };
    request.mark_dispatched(response.url().as_str());
    let status = response.status();
    let pushback = (response.headers().get(http::header::RETRY_AFTER))
        .map(|value| Pushback::from_retry_after(value.to_str().unwrap_or(""), SystemTime::now()));
    let (classification, answer) = if classify::reads_body(service, status.as_u16()) {
        let version = response.version();
        let headers = std::mem::take(response.headers_mut());
        let body = match response.bytes().await {
            Ok(body) => body,
            Err(error) => {
                let reason = reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT;
                return Ok((reason, None, Answer::AsSent(Err(error.into()))));
            }
        };
        let classification =
            classify::answer(service, status.as_u16(), &String::from_utf8_lossy(&body));
        let mut read = http::Response::new(body);
        *read.status_mut() = status;
        *read.version_mut() = version;
        *read.headers_mut() = headers;
        (classification, Answer::Read(read))
    } else {
        let classification = classify::answer(service, status.as_u16(), "");
        (classification, Answer::AsSent(Ok(response)))
    };
    match classification {
        Some(Classification::Retry { reason, .. }) => Ok((reason, pushback, answer)),
        _ => Err(answer.hand_back()),
    }
}

#[async_trait::async_trait]
impl Middleware for ReboundMiddleware {
    async fn handle(
        &self,
        req: reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let Some(service) = extensions.get::<Service>().copied() else {
            tracing::debug!(url = %req.url(), "no service named: sent once, not retried");
            return next.run(req, extensions).await;
        };
        let mut request = self.request(service, req.method(), extensions)?;
        loop {
            // A body that cannot be copied (a stream) cannot be sent again: sent once.
            let Some(attempt) = req.try_clone() else {
                return next.run(req, extensions).await;
            };
            let attempted = next.clone().run(attempt, extensions).await;
            let (reason, pushback, answer) = match failure(service, attempted, &mut request).await {
                Ok(failed) => failed,
                Err(done) => return done,
            };
            let context = DecisionContext::new(&reason).with_pushback(pushback);
            let decided = match self.registry.decide(&mut request, &context).await {
                Ok(decided) => decided,
                Err(error) => {
                    tracing::warn!(%error, "no policy decides for the request: not retried");
                    return answer.hand_back();
                }
            };
            match decided.decision {
                Decision::Retry(plan) => {
                    answer.finish().await;
                    tokio::time::sleep(plan.delay).await;
                }
                _ => return answer.hand_back(),
            }
        }
    }
}
