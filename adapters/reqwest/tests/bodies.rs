//! docs/adapters.md, `rebound-reqwest`, "Bodies": a streamed body, which `reqwest` cannot copy, is read before the
//! first attempt and kept, up to the replay limit, so that a request the guard lets go again
//! (a PUT, idempotent by RFC 9110 §9.2.2) is sent again with every byte; a body past the limit
//! is sent once, whole, and its failure handed back: gRFC A6 "When Retries are Valid" calls a
//! call whose outgoing message overflowed the buffer committed, and the decision log says so.

use bytes::Bytes;
use http_body::Frame;
use http_body_util::StreamBody;
use rebound_reqwest::ReboundMiddleware;
use reqwest_middleware::ClientWithMiddleware;

use crate::registries::http_registry;
use crate::test_support::LoggedDecisions;

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

#[tokio::test]
async fn a_body_sent_once_is_decided_committed_and_logged() {
    let registry = http_registry();
    let logged = LoggedDecisions::of(&registry);
    let server = crate::unavailable_once("/items/1").await;
    let url = format!("{}/items/1", server.uri());
    let middleware = ReboundMiddleware::new(registry.clone()).max_replay_bytes(8 * 1024);
    let client = crate::client_with(middleware.unwrap());
    let response = client.put(&url).body(streamed(9)).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
    let logged = logged.lines();
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0]["input"]["progress"], "committed", "{logged:?}");
    assert_eq!(logged[0]["answer"]["decision"], "cancel", "{logged:?}");
}

/// Bad input: a replay limit of zero is refused, naming the setting.
#[test]
fn a_replay_limit_of_zero_is_refused() {
    let error = ReboundMiddleware::new(http_registry())
        .max_replay_bytes(0)
        .unwrap_err();
    assert!(error.to_string().contains("max_replay_bytes"), "{error}");
}
