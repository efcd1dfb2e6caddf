//! docs/adapters.md, `rebound-reqwest`, "Bodies": a streamed body, which `reqwest` cannot copy, is read before the
//! first attempt and kept, up to the replay limit, so that a request the guard lets go again
//! (a PUT, idempotent by RFC 9110 §9.2.2) is sent again with every byte; a body past the limit
//! is sent once, whole, and its failure handed back.

use bytes::Bytes;
use http_body::Frame;
use http_body_util::StreamBody;
use rebound_reqwest::ReboundMiddleware;
use reqwest_middleware::ClientWithMiddleware;

use crate::registries::http_registry;

/// A streamed body of `chunks` chunks of 1 KiB, each filled with its number.
fn streamed(chunks: u8) -> reqwest::Body {
    let frames: Vec<Result<Frame<Bytes>, std::io::Error>> = (0..chunks)
        .map(|n| Ok(Frame::data(Bytes::from(vec![b'a' + n % 26; 1024]))))
        .collect();
    reqwest::Body::wrap(StreamBody::new(futures_util::stream::iter(frames)))
}

fn expected(chunks: u8) -> Vec<u8> {
    (0..chunks)
        .flat_map(|n| vec![b'a' + n % 26; 1024])
        .collect()
}

fn client(max_replay_bytes: usize) -> ClientWithMiddleware {
    let middleware = ReboundMiddleware::new(http_registry()).max_replay_bytes(max_replay_bytes);
    crate::client_with(middleware.unwrap())
}

/// A PUT of a streamed body of `chunks` KiB, with a replay limit of 8 KiB, to a server answering
/// 503 once: the final status and the body of each attempt the server saw.
async fn put_streamed(chunks: u8) -> (u16, Vec<Vec<u8>>) {
    let server = crate::unavailable_once("/items/1").await;
    let url = format!("{}/items/1", server.uri());
    let put = client(8 * 1024).put(&url).body(streamed(chunks));
    let response = put.send().await.unwrap();
    let received = server.received_requests().await.unwrap();
    let bodies = received.into_iter().map(|request| request.body).collect();
    (response.status().as_u16(), bodies)
}

#[tokio::test]
async fn a_streamed_body_within_the_limit_is_sent_again_whole() {
    assert_eq!(put_streamed(8).await, (200, vec![expected(8); 2]));
}

#[tokio::test]
async fn a_streamed_body_past_the_limit_is_sent_once_whole() {
    assert_eq!(put_streamed(9).await, (503, vec![expected(9)]));
}

/// Bad input: a replay limit of zero is refused, naming the setting.
#[test]
fn a_replay_limit_of_zero_is_refused() {
    let error = ReboundMiddleware::new(http_registry())
        .max_replay_bytes(0)
        .unwrap_err();
    assert!(error.to_string().contains("max_replay_bytes"), "{error}");
}
