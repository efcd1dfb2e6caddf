//! What one attempt of the middleware brought back, and what it says: a success or an answer
//! to hand back as it came, or a failure to decide about (its reason, the server's pushback and
//! the answer kept to hand back should no retry follow). Apart from the retry loop, so that
//! the loop reads as its steps.

use std::time::{Duration, SystemTime};

use rebound::classify::{classify_http_answer, Classification};
use rebound::{reasons, Pushback, Request, RetryReason, Service};

use crate::classify;

/// An attempt the middleware cut because it had not answered within its attempt timeout (the
/// policy's or its route's `attempt_timeout_ms`, docs/executor.md "Timing"): handed back,
/// inside [`reqwest_middleware::Error::Middleware`], when the cut attempt is not retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("rebound-reqwest: the attempt had not answered after {after:?} (its attempt timeout) and was cut")]
pub struct AttemptTimedOut {
    /// How long the attempt ran.
    pub after: Duration,
}

/// What came back from one attempt: the response or the error.
pub(crate) type Attempted = reqwest_middleware::Result<reqwest::Response>;

/// What an attempt brought back, handed to the caller should no retry follow.
pub(crate) enum Answer {
    /// The response or the error as the client gave it.
    AsSent(Attempted),
    /// A response whose body was read to classify it, in parts (made a client response again
    /// only when handed back).
    Read(http::Response<bytes::Bytes>),
}

impl Answer {
    /// The caller's response or error.
    pub(crate) fn hand_back(self) -> Attempted {
        match self {
            Answer::AsSent(attempted) => attempted,
            Answer::Read(response) => Ok(reqwest::Response::from(response)),
        }
    }

    /// Lets the connection go back to the client's pool before the request is sent again: an
    /// answer's body left unread closes its connection.
    pub(crate) async fn finish(self) {
        if let Answer::AsSent(Ok(mut response)) = self {
            // Read chunk by chunk and dropped: nothing is collected.
            while let Ok(Some(_)) = response.chunk().await {}
        }
    }
}

/// Why one attempt failed: the reason, the server's pushback and the answer to hand back should
/// no retry follow.
pub(crate) type Failed = (RetryReason, Option<Pushback>, Answer);

/// What one attempt's outcome says.
pub(crate) enum Told {
    /// A failure that may be retried.
    Failed(Failed),
    /// What to hand back: a success, an answer not retried, an error that is not the
    /// transport's.
    HandBack(Attempted),
}

/// What one attempt's outcome says, told without waiting or not.
pub(crate) enum Triage {
    /// Told without waiting.
    Told(Told),
    /// An answer whose body must be read to classify it, with the server's pushback.
    ReadBody(reqwest::Response, Option<Pushback>),
}

/// What one attempt's outcome says. The middleware's own future holds no future of this step
/// (it is boxed and moved for every request, so it is kept small): reading a body to classify
/// it is [`read_and_classify`], awaited boxed.
pub(crate) fn triage(
    service: Service,
    retry_statuses: &[u16],
    attempted: Attempted,
    request: &mut Request,
) -> Triage {
    let response = match attempted {
        Ok(response) if response.status().is_success() => {
            return Triage::Told(Told::HandBack(Ok(response)))
        }
        Ok(response) => response,
        Err(error) => {
            let reason = match &error {
                reqwest_middleware::Error::Middleware(e) if e.is::<AttemptTimedOut>() => {
                    reasons::ATTEMPT_TIMEOUT
                }
                // Nothing was written: any request may go again.
                reqwest_middleware::Error::Reqwest(e) if e.is_connect() => {
                    reasons::SOCKET_NOT_AVAILABLE
                }
                reqwest_middleware::Error::Reqwest(e) => {
                    request.mark_dispatched(e.url().map(|u| u.to_string()).unwrap_or_default());
                    reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT
                }
                reqwest_middleware::Error::Middleware(_) => {
                    return Triage::Told(Told::HandBack(Err(error)))
                }
            };
            return Triage::Told(Told::Failed((reason, None, Answer::AsSent(Err(error)))));
        }
    };
    request.mark_dispatched(response.url().as_str());
    let status = response.status();
    let pushback = (response.headers().get(http::header::RETRY_AFTER))
        .map(|value| Pushback::from_retry_after(value.to_str().unwrap_or(""), SystemTime::now()));
    if classify::reads_body(service, status.as_u16()) {
        return Triage::ReadBody(response, pushback);
    }
    let classification = match service {
        Service::Http => Some(classify_http_answer(
            status.as_u16(),
            retry_statuses,
            pushback.is_some(),
        )),
        _ => classify::answer(service, status.as_u16(), ""),
    };
    Triage::Told(retried(
        classification,
        pushback,
        Answer::AsSent(Ok(response)),
    ))
}

/// The error of an attempt of `request` (sent to `url`) cut after `after`: it may have been
/// written, so the request counts as dispatched.
pub(crate) fn cut(
    request: &mut Request,
    url: Option<&reqwest::Url>,
    after: Duration,
) -> reqwest_middleware::Error {
    match url {
        Some(url) => request.mark_dispatched(url.as_str()),
        None => request.mark_sent(),
    }
    reqwest_middleware::Error::middleware(AttemptTimedOut { after })
}

/// Reads the body of an answer classified by it (query, analytics, views 404 and 500), then
/// classifies it.
pub(crate) async fn read_and_classify(
    service: Service,
    mut response: reqwest::Response,
    pushback: Option<Pushback>,
) -> Told {
    let status = response.status();
    let version = response.version();
    let headers = std::mem::take(response.headers_mut());
    let body = match response.bytes().await {
        Ok(body) => body,
        Err(error) => {
            let reason = reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT;
            return Told::Failed((reason, None, Answer::AsSent(Err(error.into()))));
        }
    };
    let classification =
        classify::answer(service, status.as_u16(), &String::from_utf8_lossy(&body));
    let mut read = http::Response::new(body);
    *read.status_mut() = status;
    *read.version_mut() = version;
    *read.headers_mut() = headers;
    retried(classification, pushback, Answer::Read(read))
}

/// A failure to decide about if `classification` says the answer may be retried, else the
/// answer to hand back.
fn retried(
    classification: Option<Classification>,
    pushback: Option<Pushback>,
    answer: Answer,
) -> Told {
    match classification {
        Some(Classification::Retry { reason, .. }) => Told::Failed((reason, pushback, answer)),
        _ => Told::HandBack(answer.hand_back()),
    }
}
