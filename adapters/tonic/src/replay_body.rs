//! A call's request body kept to send it again: read whole up to a limit, or, past it, what
//! was read followed by the rest, sent once.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use tonic::body::Body as TonicBody;

/// A request body as read.
pub(crate) enum Kept {
    /// All of it, to send as often as needed.
    Whole(Bytes),
    /// Too large to keep: what was read and the rest, to send once.
    Once(TonicBody),
}

/// Reads `body` whole if it holds at most `limit` bytes. A body of one frame (a unary call's
/// usual one) is kept as it came, without a copy.
pub(crate) async fn keep(mut body: TonicBody, limit: usize) -> Result<Kept, tonic::Status> {
    let mut first: Option<Bytes> = None;
    let mut more = BytesMut::new();
    let mut read = 0;
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| tonic::Status::internal(format!("reading the request: {e}")))?;
        let Ok(data) = frame.into_data() else {
            // Trailers on a request: not something a unary call sends.
            continue;
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
            let head = first.take().unwrap_or_else(|| more.split().freeze());
            return Ok(Kept::Once(TonicBody::new(Chained {
                head: Some(head),
                rest: body,
            })));
        }
    }
    Ok(Kept::Whole(first.unwrap_or_else(|| more.freeze())))
}

/// What was read, then the rest of the body.
struct Chained {
    head: Option<Bytes>,
    rest: TonicBody,
}

impl Body for Chained {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        if let Some(head) = self.head.take() {
            return Poll::Ready(Some(Ok(Frame::data(head))));
        }
        Pin::new(&mut self.rest).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.head.is_none() && self.rest.is_end_stream()
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
