//! One attempt of a call, sent and read: how far it got, the status of a
//! Trailers-Only answer and the server's pushback, and what its node's breaker counts. Both a
//! plain attempt (`service`) and each copy of a hedged one (`hedged`) send this way.

use std::time::Instant;

use rebound::breaker::{self, Admission, NodeBreakers};
use rebound::grpc::GrpcCode;
use rebound::{reasons, Progress, Pushback, RetryReason};
use tonic::body::Body as TonicBody;
use tower_service::Service;

use crate::response::{pushback, trailers_only_status};

/// The errors the layer hands back: the channel's own, or the request body's.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How far a call the transport failed got, read from `error`'s chain: a stream the server
/// refused (`RST_STREAM` with `REFUSED_STREAM`: it reached the server's transport, not its
/// application), a request hyper never started on its connection, a connection that could not
/// be made (a pick that failed transiently: the policy decides), or a call cut in flight. A
/// GOAWAY is not told apart: h2 reports it alike for streams above and below its last stream
/// ID once the connection closes, so such a call is decided as one that may have been seen.
fn transport_failure(error: &BoxError) -> (RetryReason, Progress, bool) {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error.as_ref());
    while let Some(error) = source {
        if let Some(h2) = error.downcast_ref::<h2::Error>() {
            if h2.is_reset() && h2.is_remote() && h2.reason() == Some(h2::Reason::REFUSED_STREAM) {
                let unavailable = RetryReason::GrpcStatus(GrpcCode::Unavailable);
                return (unavailable, Progress::Refused, false);
            }
        }
        if error
            .downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_canceled)
        {
            return (reasons::SOCKET_NOT_AVAILABLE, Progress::NotSent, false);
        }
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            if matches!(
                io.kind(),
                K::ConnectionRefused | K::AddrNotAvailable | K::NotConnected | K::HostUnreachable
            ) {
                return (reasons::SOCKET_NOT_AVAILABLE, Progress::Processed, false);
            }
        }
        source = error.source();
    }
    (
        reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
        Progress::Processed,
        true,
    )
}

/// One attempt's failure: why, the server's pushback, and what to hand back if not retried.
pub(crate) enum Failed<B> {
    Answered(RetryReason, Option<Pushback>, http::Response<B>),
    Transport(RetryReason, BoxError, Progress),
}

impl<B> Failed<B> {
    /// Why it failed, and the server's pushback.
    pub(crate) fn reason(&self) -> (&RetryReason, Option<Pushback>) {
        match self {
            Failed::Answered(reason, pushback, _) => (reason, *pushback),
            Failed::Transport(reason, ..) => (reason, None),
        }
    }

    /// How far it got: a Trailers-Only answer was processed (the server's application sent
    /// it before any header, so the call is not committed).
    pub(crate) fn progress(&self) -> Progress {
        match self {
            Failed::Answered(..) => Progress::Processed,
            Failed::Transport(_, _, progress) => *progress,
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

impl<B> Sent<B> {
    /// Whether the server answered (OK, or a status): how long that took is its latency.
    pub(crate) fn answered(&self) -> bool {
        matches!(
            self,
            Sent::Answered(_) | Sent::Failed(Failed::Answered(..), _)
        )
    }
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
    sent(service.call(http::Request::from_parts(parts, body)).await)
}

/// How an attempt that came back with `result` went: a Trailers-Only answer's status and
/// pushback, or the transport's error (a connection that could not be made: not sent).
pub(crate) fn sent<B, E: Into<BoxError>>(result: Result<http::Response<B>, E>) -> Sent<B> {
    match result {
        Err(error) => {
            let error: BoxError = error.into();
            let (reason, progress, reached) = transport_failure(&error);
            Sent::Failed(Failed::Transport(reason, error, progress), reached)
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
pub(crate) fn settle<B>(breakers: &NodeBreakers, node: &str, admission: Admission, sent: &Sent<B>) {
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
