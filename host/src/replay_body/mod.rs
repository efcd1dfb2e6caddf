//! A request body kept to send again: a streamed body can be sent only once, so an HTTP or
//! gRPC adapter reads it first, whole if it holds at most a limit (64 KiB by default, as
//! linkerd2-proxy keeps), and past it sends what was read followed by the rest, once. One
//! implementation for every adapter that sends bodies (docs/adapters.md, `rebound-reqwest`,
//! "Bodies"), and, for a tower stack of one's own, `KeepBodyLayer` in front of the retry
//! layer (feature `tower`) with bodies that can be copied (`ReplayBody`).

#[cfg(feature = "tower")]
mod layer;
mod shared;

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;

#[cfg(feature = "tower")]
pub use layer::{KeepBody, KeepBodyLayer};
pub use shared::{BodyAlreadySent, BoxError, ReplayBody};

/// The most bytes of a request body kept to send it again, unless an adapter is told otherwise.
pub const DEFAULT_MAX_REPLAY_BYTES: usize = 64 * 1024;

/// A replay limit of zero, refused: no body could be sent again, not even an empty one's first
/// byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("max_replay_bytes must be at least 1 (0 would keep no request body to send again; the default is 64 KiB)")]
pub struct ZeroReplayLimit;

/// `bytes` as a replay limit: refused when zero.
pub fn replay_limit(bytes: usize) -> Result<usize, ZeroReplayLimit> {
    match bytes {
        0 => Err(ZeroReplayLimit),
        bytes => Ok(bytes),
    }
}

/// A request body as read by [`keep_body`].
#[derive(Debug)]
pub enum KeptBody<B> {
    /// All of it, to send as often as needed.
    Whole(Bytes),
    /// Too large to keep (or carrying trailers): what was read and the rest, to send once.
    Once(Prefixed<B>),
}

/// Reads `body` whole if it holds at most `limit` bytes and no trailers. A body of one frame
/// is kept as it came, without a copy. A read error is handed back: the body cannot be sent.
pub async fn keep_body<B>(mut body: B, limit: usize) -> Result<KeptBody<B>, B::Error>
where
    B: Body<Data = Bytes> + Unpin,
{
    let mut first: Option<Bytes> = None;
    let mut more = BytesMut::new();
    let mut read = 0;
    while let Some(frame) = body.frame().await {
        let data = match frame?.into_data() {
            Ok(data) => data,
            Err(trailers) => {
                let head = read_so_far(first, more);
                return Ok(KeptBody::Once(Prefixed::new(head, Some(trailers), body)));
            }
        };
        read += data.len();
        match first.take() {
            None if more.is_empty() => first = Some(data),
            held => {
                if let Some(held) = held {
                    more.extend_from_slice(&held);
                }
                more.extend_from_slice(&data);
            }
        }
        if read > limit {
            let head = read_so_far(first, more);
            return Ok(KeptBody::Once(Prefixed::new(head, None, body)));
        }
    }
    Ok(KeptBody::Whole(read_so_far(first, more)))
}

fn read_so_far(first: Option<Bytes>, more: BytesMut) -> Bytes {
    first.unwrap_or_else(|| more.freeze())
}

/// What was read of a body (and a trailers frame met), then the rest of it.
#[derive(Debug)]
pub struct Prefixed<B> {
    head: Option<Bytes>,
    trailers: Option<Frame<Bytes>>,
    rest: B,
}

impl<B> Prefixed<B> {
    fn new(head: Bytes, trailers: Option<Frame<Bytes>>, rest: B) -> Self {
        Prefixed {
            head: (!head.is_empty()).then_some(head),
            trailers,
            rest,
        }
    }
}

impl<B: Body<Data = Bytes> + Unpin> Body for Prefixed<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        if let Some(head) = self.head.take() {
            return Poll::Ready(Some(Ok(Frame::data(head))));
        }
        if let Some(trailers) = self.trailers.take() {
            return Poll::Ready(Some(Ok(trailers)));
        }
        Pin::new(&mut self.rest).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.head.is_none() && self.trailers.is_none() && self.rest.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let mut hint = self.rest.size_hint();
        let head = self.head.as_ref().map_or(0, |h| h.len() as u64);
        hint.set_lower(hint.lower() + head);
        if let Some(upper) = hint.upper() {
            hint.set_upper(upper + head);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::{BodyExt, Full, StreamBody};

    use super::*;

    /// A streamed body of `parts`, a frame each.
    pub(super) fn chunks(
        parts: &[&'static str],
    ) -> impl Body<Data = Bytes, Error = std::io::Error> + Unpin {
        let frames: Vec<Result<Frame<Bytes>, std::io::Error>> = parts
            .iter()
            .map(|part| Ok(Frame::data(Bytes::from_static(part.as_bytes()))))
            .collect();
        StreamBody::new(futures::stream::iter(frames))
    }

    /// A body within the limit is kept whole; one past it is sent once, every byte in order.
    #[tokio::test(flavor = "current_thread")]
    async fn a_body_within_the_limit_is_kept_whole_and_a_larger_one_is_sent_once_entire() {
        let kept = keep_body(Full::new(Bytes::from_static(b"abc")), 3)
            .await
            .unwrap();
        assert!(
            matches!(kept, KeptBody::Whole(ref b) if b == "abc"),
            "{kept:?}"
        );
        let kept = keep_body(chunks(&["ab", "cd", "ef"]), 3).await.unwrap();
        let KeptBody::Once(body) = kept else {
            panic!("a body past the limit is sent once")
        };
        assert!(!body.is_end_stream());
        let all = body.collect().await.unwrap().to_bytes();
        assert_eq!(all, "abcdef");
    }
}
