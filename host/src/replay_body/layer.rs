//! A tower layer that reads each HTTP request's body before the retry layer sees it, because
//! that layer copies each request it may send again and a streamed body cannot be copied: the
//! request goes on with a [`ReplayBody`], kept whole up to the replay limit and past it sent
//! once.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Body;
use tower_layer::Layer;
use tower_service::Service;

use super::shared::BoxError;
use super::{keep_body, replay_limit, ReplayBody, ZeroReplayLimit, DEFAULT_MAX_REPLAY_BYTES};

/// Makes [`KeepBody`] services: put it in front of a
/// [`RetryLayer`](crate::layer::RetryLayer) whose classifier says which requests can be sent
/// again ([`Classifier::can_send_again`](crate::layer::Classifier::can_send_again), from
/// [`ReplayBody::can_send_again`]).
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use bytes::Bytes;
/// use http_body_util::{BodyExt, Full};
/// use rebound::executor::{Executor, Failure};
/// use rebound::layer::{Classifier, RetryLayer};
/// use rebound::replay_body::{KeepBodyLayer, ReplayBody};
/// use rebound::{reasons, HttpMethod, Orchestrator, Request, RequestType};
/// use tower::{service_fn, ServiceBuilder, ServiceExt};
///
/// type Body = ReplayBody<Full<Bytes>>;
///
/// #[derive(Clone)]
/// struct Puts;
///
/// impl Classifier<http::Request<Body>, std::io::Error> for Puts {
///     fn request(&self, _: &http::Request<Body>) -> Request {
///         Request::new(1, RequestType::Http, Duration::from_secs(5))
///             .unwrap()
///             .with_method(HttpMethod::Put)
///     }
///     fn failure(&self, error: std::io::Error) -> Failure<std::io::Error> {
///         Failure::reason(error, reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT)
///     }
///     // A body past the limit is sent once: its failure is committed, never retried.
///     fn can_send_again(&self, req: &http::Request<Body>) -> bool {
///         req.body().can_send_again()
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let executor = Executor::new(Arc::new(Orchestrator::default()));
/// let service = ServiceBuilder::new()
///     .layer(KeepBodyLayer::new().max_replay_bytes(64 * 1024).unwrap())
///     .layer(RetryLayer::new(executor, Puts))
///     .service(service_fn(|req: http::Request<Body>| async move {
///         let body = req.into_body().collect().await.map_err(std::io::Error::other)?;
///         Ok::<_, std::io::Error>(body.to_bytes().len())
///     }));
/// let put = http::Request::put("/items/1").body(Full::new(Bytes::from("item")));
/// assert_eq!(service.oneshot(put.unwrap()).await.unwrap(), 4);
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct KeepBodyLayer {
    limit: usize,
}

impl Default for KeepBodyLayer {
    fn default() -> Self {
        KeepBodyLayer {
            limit: DEFAULT_MAX_REPLAY_BYTES,
        }
    }
}

impl KeepBodyLayer {
    /// A layer keeping bodies of at most [`DEFAULT_MAX_REPLAY_BYTES`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps bodies of at most `bytes` (zero is refused); a larger one is sent once.
    pub fn max_replay_bytes(mut self, bytes: usize) -> Result<Self, ZeroReplayLimit> {
        self.limit = replay_limit(bytes)?;
        Ok(self)
    }
}

impl<S> Layer<S> for KeepBodyLayer {
    type Service = KeepBody<S>;

    fn layer(&self, inner: S) -> KeepBody<S> {
        KeepBody {
            inner,
            limit: self.limit,
        }
    }
}

/// Reads each request's body ([`keep_body`]) and hands the request on to `S` with a
/// [`ReplayBody`]. A body that fails while read fails the request: it cannot be sent.
#[derive(Debug, Clone)]
pub struct KeepBody<S> {
    inner: S,
    limit: usize,
}

impl<S, B> Service<http::Request<B>> for KeepBody<S>
where
    S: Service<http::Request<ReplayBody<B>>> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send,
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        // The service made ready by poll_ready takes the request (tower's convention); a clone
        // takes its place here.
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let limit = self.limit;
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let kept = keep_body(body, limit).await.map_err(Into::into)?;
            let req = http::Request::from_parts(parts, ReplayBody::from(kept));
            inner.call(req).await.map_err(Into::into)
        })
    }
}
