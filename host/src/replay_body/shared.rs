//! A request body a tower stack can copy, so that the retry layer (which copies each request
//! it may send again) can take HTTP requests with streamed bodies: a body within the replay
//! limit is kept whole and every copy sends all of it; one past the limit is shared by its
//! copies and sent once, by whichever copy is polled first.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::{KeptBody, Prefixed};

/// The error of a body: the streamed body's own, or [`BodyAlreadySent`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A copy of a body past the replay limit was polled after another copy took the stream: the
/// request cannot be sent twice. The retry layer never sends such a copy
/// ([`ReplayBody::can_send_again`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the request body was already sent: it was past the replay limit, so it is sent once")]
pub struct BodyAlreadySent;

/// A request body that can be copied, so that the retry layer can take HTTP requests with
/// streamed bodies: one within the replay limit is kept whole and every copy sends all of it;
/// one past the limit is shared by its copies and sent once, by whichever copy is polled first.
/// Made by `KeepBodyLayer` (feature `tower`) or from a [`KeptBody`].
#[derive(Debug)]
pub struct ReplayBody<B> {
    state: State<B>,
}

#[derive(Debug)]
enum State<B> {
    /// The whole body, and whether this copy sent it.
    Whole { bytes: Bytes, sent: bool },
    /// The stream, shared by the copies until one takes it.
    Shared(Arc<Mutex<Option<Prefixed<B>>>>),
    /// The stream this copy took.
    Taken(Prefixed<B>),
}

impl<B> From<KeptBody<B>> for ReplayBody<B> {
    fn from(kept: KeptBody<B>) -> Self {
        let state = match kept {
            KeptBody::Whole(bytes) => State::Whole { bytes, sent: false },
            KeptBody::Once(body) => State::Shared(Arc::new(Mutex::new(Some(body)))),
        };
        ReplayBody { state }
    }
}

impl<B> ReplayBody<B> {
    /// Whether the request may be sent again with this body: it was kept whole.
    pub fn can_send_again(&self) -> bool {
        matches!(self.state, State::Whole { .. })
    }
}

impl<B> Clone for ReplayBody<B> {
    /// A copy from the start: the whole body, or a share of the stream not yet taken. A copy of
    /// a copy that took the stream has nothing to send.
    fn clone(&self) -> Self {
        let state = match &self.state {
            State::Whole { bytes, .. } => State::Whole {
                bytes: bytes.clone(),
                sent: false,
            },
            State::Shared(shared) => State::Shared(Arc::clone(shared)),
            State::Taken(_) => State::Shared(Arc::new(Mutex::new(None))),
        };
        ReplayBody { state }
    }
}

impl<B> Body for ReplayBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut self.state;
        if let State::Shared(shared) = this {
            let taken = shared.lock().unwrap_or_else(|e| e.into_inner()).take();
            match taken {
                Some(body) => *this = State::Taken(body),
                None => return Poll::Ready(Some(Err(BodyAlreadySent.into()))),
            }
        }
        match this {
            State::Whole { sent: true, .. } => Poll::Ready(None),
            State::Whole { bytes, sent } => {
                *sent = true;
                Poll::Ready(Some(Ok(Frame::data(bytes.clone()))))
            }
            State::Taken(body) => Pin::new(body).poll_frame(cx).map_err(Into::into),
            State::Shared(_) => unreachable!("a shared stream is taken above"),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.state {
            State::Whole { bytes, sent } => *sent || bytes.is_empty(),
            State::Shared(_) => false,
            State::Taken(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.state {
            State::Whole { bytes, sent: false } => SizeHint::with_exact(bytes.len() as u64),
            State::Whole { sent: true, .. } => SizeHint::with_exact(0),
            State::Shared(_) => SizeHint::default(),
            State::Taken(body) => body.size_hint(),
        }
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::{BodyExt, Full};

    use super::*;
    use crate::replay_body::keep_body;
    use crate::replay_body::tests::chunks;

    /// Every copy of a body kept whole sends all of it, a copy of a sent copy too.
    #[tokio::test(flavor = "current_thread")]
    async fn every_copy_of_a_whole_body_sends_all_of_it() {
        let kept = keep_body(Full::new(Bytes::from_static(b"abc")), 3);
        let body = ReplayBody::from(kept.await.unwrap());
        assert!(body.can_send_again());
        let copy = body.clone();
        assert_eq!(body.collect().await.unwrap().to_bytes(), "abc");
        assert_eq!(copy.clone().collect().await.unwrap().to_bytes(), "abc");
        assert_eq!(copy.collect().await.unwrap().to_bytes(), "abc");
    }

    /// A body past the limit is sent whole by the first copy polled; another copy fails with
    /// `BodyAlreadySent` and sends nothing.
    #[tokio::test(flavor = "current_thread")]
    async fn a_body_past_the_limit_is_sent_once_by_one_copy() {
        let body = ReplayBody::from(keep_body(chunks(&["ab", "cd", "ef"]), 3).await.unwrap());
        assert!(!body.can_send_again());
        let copy = body.clone();
        assert_eq!(copy.collect().await.unwrap().to_bytes(), "abcdef");
        let error = body.collect().await.unwrap_err();
        assert!(error.is::<BodyAlreadySent>(), "{error}");
    }
}
