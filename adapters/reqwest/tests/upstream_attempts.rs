//! docs/throttling.md "What a failure costs": with `upstream_attempts_header`, a failed answer
//! that says the callee made N attempts counts N times in the request's throttle, so a callee
//! that already retries leaves less room for retries here. Against wiremock answering 503 with
//! `x-envoy-attempt-count: 4`: a token throttle of 10 (retries while above 5) lets one retry
//! through instead of four.

use std::sync::Arc;

use rebound::config::RegistryConfig;
use rebound::registry::PolicyRegistry;
use rebound_reqwest::ReboundMiddleware;
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, ResponseTemplate};

fn throttled_registry() -> Arc<PolicyRegistry> {
    let text = "default_policy = \"web\"\ncache_dir = false\n[watch]\nenabled = false\n\
                [throttles.backend]\nkind = \"tokens\"\nmax_tokens = 10\ntoken_ratio = 0.1\n\
                [policies.web]\nbuiltin = \"best-effort\"\nthrottle = \"backend\"\n";
    let config = RegistryConfig::parse(text, "rebound.toml".as_ref(), ".".as_ref()).unwrap();
    Arc::new(PolicyRegistry::new(config).unwrap())
}

/// Attempts a GET makes against a server that always answers 503 saying it made 4 attempts,
/// with the middleware reading that header or not.
async fn attempts(read_header: bool) -> usize {
    let server = MockServer::start().await;
    Mock::given(path("/items"))
        .respond_with(ResponseTemplate::new(503).insert_header("x-envoy-attempt-count", "4"))
        .mount(&server)
        .await;
    let mut middleware = ReboundMiddleware::new(throttled_registry());
    if read_header {
        middleware = middleware
            .upstream_attempts_header(http::HeaderName::from_static("x-envoy-attempt-count"));
    }
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(middleware)
        .build();
    let url = format!("{}/items", server.uri());
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 503);
    server.received_requests().await.unwrap().len()
}

#[tokio::test]
async fn a_callee_s_attempts_count_in_the_throttle() {
    assert_eq!(attempts(false).await, 5, "each failure costs one token");
    assert_eq!(attempts(true).await, 2, "each failure costs four tokens");
}
