//! Attempt timeouts through the middleware (docs/executor.md "Timing", docs/adapters.md)
//! against a real HTTP server the test starts: one that stalls its first answer and answers
//! the next at once. Timeouts leave a slow machine room: an attempt is cut after 1 s, the
//! stalled answer would take a minute.

use std::time::{Duration, Instant};

use crate::registries::builtin_registry;
use rebound_reqwest::{AttemptTimedOut, ReboundMiddleware};
use reqwest_middleware::ClientWithMiddleware;
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A client whose policy is the `http` built-in cutting each attempt after 1 s.
fn client() -> ClientWithMiddleware {
    let params = "{ attempt_timeout_ms = 1000, initial_ms = 1, max_ms = 1 }";
    let registry = builtin_registry("http", params);
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(ReboundMiddleware::new(registry))
        .build()
}

/// A server whose first answer to `/item` stalls a minute and whose later ones are at once.
async fn stalling_once() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(path("/item"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(60)))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(path("/item"))
        .respond_with(ResponseTemplate::new(200).set_body_string("item"))
        .mount(&server)
        .await;
    server
}

/// An idempotent GET whose first attempt stalls is cut after its attempt timeout and sent
/// again: it answers inside its deadline (75 s by default), long before the stalled answer.
#[tokio::test]
async fn a_stalled_get_is_cut_and_answered_by_its_retry() {
    let server = stalling_once().await;
    let start = Instant::now();
    let response = client()
        .get(format!("{}/item", server.uri()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.text().await.unwrap(), "item");
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "one attempt was cut"
    );
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "not the stalled answer"
    );
    assert!(server.received_requests().await.unwrap().len() >= 2);
}

/// Reference 001 (unsafe retries) and docs/http-and-grpc.md: a POST that stalls may have been
/// applied, so once cut it is never sent again; the caller gets `AttemptTimedOut`.
#[tokio::test]
async fn a_stalled_post_is_never_sent_twice() {
    let server = stalling_once().await;
    let error = client()
        .post(format!("{}/item", server.uri()))
        .body("order")
        .send()
        .await
        .unwrap_err();
    let reqwest_middleware::Error::Middleware(error) = error else {
        panic!("{error:?}");
    };
    let cut = error
        .downcast_ref::<AttemptTimedOut>()
        .expect("an attempt timeout");
    assert_eq!(cut.after, Duration::from_secs(1));
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

/// docs/hedging.md "Delays from observed latency": the middleware tells a policy that hedges by
/// a percentile how long each answered attempt took, under the request's authority, so the
/// registry keeps a sketch for it (a cut attempt is not counted).
#[tokio::test]
async fn answered_attempts_are_recorded_under_their_authority() {
    let text = "default_policy = \"web\"\ncache_dir = false\n[watch]\nenabled = false\n\
         [policies.web]\nbuiltin = \"http\"\nparams = { initial_ms = 1, max_ms = 1 }\n\
         speculative_execution = { percentile = 95, max_delay_ms = 100, max_executions = 2 }\n";
    let config =
        rebound::config::RegistryConfig::parse(text, "rebound.toml".as_ref(), ".".as_ref())
            .unwrap();
    let registry = std::sync::Arc::new(rebound::registry::PolicyRegistry::new(config).unwrap());
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(ReboundMiddleware::new(std::sync::Arc::clone(&registry)))
        .build();
    let server = MockServer::start().await;
    Mock::given(path("/item"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    assert_eq!(registry.status().latencies.keys, 0);
    for _ in 0..3 {
        let answer = client.get(format!("{}/item", server.uri())).send().await;
        assert_eq!(answer.unwrap().status(), 200);
    }
    assert_eq!(registry.status().latencies.keys, 1);
}
