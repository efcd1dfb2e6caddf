//! The middleware end to end against real HTTP servers started by the test: wiremock scripting the services' answers, and a bare TCP server that drops the
//! connection after reading the request (a connection reset mid-flight).

#[path = "../../test_support.rs"]
mod test_support;

mod attempt_timeouts;
mod bodies;
mod client_context;
mod registries;
mod upstream_attempts;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rebound::registry::PolicyRegistry;
use rebound::Service;
use rebound_reqwest::{Idempotent, ReboundMiddleware};
use registries::{builtin_registry, http_registry};
use reqwest_middleware::ClientWithMiddleware;
use test_support::WatchedPolicy;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Respond, ResponseTemplate};

/// Mounts `first` for the first request to path `at`, `then` for every later one.
async fn once_then(server: &MockServer, at: &str, first: ResponseTemplate, then: ResponseTemplate) {
    Mock::given(path(at))
        .respond_with(first)
        .up_to_n_times(1)
        .mount(server)
        .await;
    Mock::given(path(at)).respond_with(then).mount(server).await;
}

/// A registry deciding with the built-in best effort.
fn registry() -> Arc<PolicyRegistry> {
    builtin_registry("best-effort", "{}")
}

/// A client with the middleware; redirects are answers to classify (views), not followed.
fn client(registry: Arc<PolicyRegistry>) -> ClientWithMiddleware {
    client_with(ReboundMiddleware::new(registry))
}

/// A client with `middleware`, following no redirect.
fn client_with(middleware: ReboundMiddleware) -> ClientWithMiddleware {
    let inner = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    reqwest_middleware::ClientBuilder::new(inner)
        .with(middleware)
        .build()
}

/// A server answering 503 to the first request to `at` and 200 to the later ones.
async fn unavailable_once(at: &str) -> MockServer {
    let server = MockServer::start().await;
    let (first, then) = (ResponseTemplate::new(503), ResponseTemplate::new(200));
    once_then(&server, at, first, then).await;
    server
}

/// Reference 001 "Response Code Retry List", views: a 503 is a VIEWS_TEMPORARY_FAILURE, retried
/// (best effort); the second answer, a 200, is the response.
#[tokio::test]
async fn a_views_503_then_200_is_retried_once() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/view"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/view"))
        .respond_with(ResponseTemplate::new(200).set_body_string("rows"))
        .mount(&server)
        .await;
    let response = client(registry())
        .get(format!("{}/view", server.uri()))
        .with_extension(Service::Views)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "rows");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

/// Search 429 is SEARCH_TOO_MANY_REQUESTS; its `Retry-After: 1` is honoured (best effort's
/// own first delay is 1 ms): the retry waits at least a second.
#[tokio::test]
async fn a_search_429_waits_its_retry_after() {
    let server = MockServer::start().await;
    once_then(
        &server,
        "/api/index/i/query",
        ResponseTemplate::new(429).insert_header("Retry-After", "1"),
        ResponseTemplate::new(200),
    )
    .await;
    let started = Instant::now();
    let response = client(registry())
        .post(format!("{}/api/index/i/query", server.uri()))
        .body("{}")
        .with_extension(Service::Search)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

/// Query 4040 (a prepared statement the node lost) is QUERY_PREPARED_STATEMENT_FAILURE, which
/// may be retried even for a query that is not read-only; a 5000 without
/// `queryport.indexNotFound` is not retried, and its answer comes back whole.
#[tokio::test]
async fn query_error_codes_are_read_from_the_body() {
    let server = MockServer::start().await;
    let lost = r#"{"errors":[{"code":4040,"msg":"No such prepared statement: p1"}]}"#;
    once_then(
        &server,
        "/query/service",
        ResponseTemplate::new(404).set_body_string(lost),
        ResponseTemplate::new(200).set_body_string(r#"{"results":[]}"#),
    )
    .await;
    let client = client(registry());
    let response = client
        .post(format!("{}/query/service", server.uri()))
        .body(r#"{"prepared":"p1"}"#)
        .with_extension(Service::Query)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(server.received_requests().await.unwrap().len(), 2);

    let other = MockServer::start().await;
    let internal = r#"{"errors":[{"code":5000,"msg":"General error"}]}"#;
    Mock::given(path("/query/service"))
        .respond_with(
            ResponseTemplate::new(500)
                .insert_header("x-couchbase", "yes")
                .set_body_string(internal),
        )
        .mount(&other)
        .await;
    let response = client
        .post(format!("{}/query/service", other.uri()))
        .body("{}")
        .with_extension(Service::Query)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 500);
    assert_eq!(response.headers()["x-couchbase"], "yes");
    assert_eq!(response.text().await.unwrap(), internal);
    assert_eq!(other.received_requests().await.unwrap().len(), 1);
}

/// Reference 001 "Response Code Retry List": a search 400 is not retried. Classified by its
/// status alone, it comes back as the server sent it — body unread, its URL kept.
#[tokio::test]
async fn an_answer_classified_by_its_status_comes_back_untouched() {
    let server = MockServer::start().await;
    Mock::given(path("/api/index/travel/query"))
        .respond_with(ResponseTemplate::new(400).set_body_string("bad query"))
        .mount(&server)
        .await;
    let url = format!("{}/api/index/travel/query", server.uri());
    let response = client(registry())
        .post(&url)
        .body("{}")
        .with_extension(Service::Search)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(response.url().as_str(), url);
    assert_eq!(response.text().await.unwrap(), "bad query");
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

/// A server that reads each request and drops the first `resets` connections without an
/// answer, then answers 200; returns its address and the count of connections accepted.
async fn resetting_server(resets: u64) -> (String, Arc<AtomicU64>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicU64::new(0));
    let count = Arc::clone(&accepted);
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let n = count.fetch_add(1, Ordering::SeqCst);
            let mut buf = vec![0; 4096];
            let _ = socket.read(&mut buf).await;
            if n >= resets {
                let answer = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";
                let _ = socket.write_all(answer.as_bytes()).await;
            }
            // Dropped: closed without an answer when n < resets.
        }
    });
    (address, accepted)
}

/// A connection closed after the request was written (reference 001: SOCKET_CLOSED_WHILE_IN_FLIGHT)
/// is retried for an idempotent search request.
#[tokio::test]
async fn a_connection_reset_mid_flight_is_retried_when_idempotent() {
    let (address, accepted) = resetting_server(1).await;
    let response = client(registry())
        .get(format!("{address}/api/index/i"))
        .with_extension(Service::Search)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

/// Unsafe retries lose data (reference 001 "Idempotent Operation List", the safety guard): a
/// query that is not read-only, written and then cut off, is never sent again — the old rule,
/// held through the middleware. Declared idempotent, the same request is retried.
#[tokio::test]
async fn a_written_post_that_is_not_idempotent_is_never_sent_again() {
    let (address, accepted) = resetting_server(1).await;
    let result = client(registry())
        .post(format!("{address}/query/service"))
        .body(r#"{"statement":"UPDATE b SET x = x + 1"}"#)
        .with_extension(Service::Query)
        .send()
        .await;
    assert!(result.is_err(), "{result:?}");
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "sent once");

    let (address, accepted) = resetting_server(1).await;
    let response = client(registry())
        .post(format!("{address}/query/service"))
        .body(r#"{"statement":"SELECT 1"}"#)
        .with_extension(Service::Query)
        .with_extension(Idempotent(true))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

/// A request that names no Couchbase service is a plain HTTP request (docs/http-and-grpc.md):
/// a GET answered 503 is retried and its 200 handed back; a POST answered 503 was sent and is
/// not idempotent (RFC 9110 §9.2.2), so it is handed back after one attempt; a 404 is not in
/// the status table and comes back at once; a POST declared idempotent is retried.
#[tokio::test]
async fn a_request_naming_no_service_is_decided_as_a_plain_http_request() {
    let server = MockServer::start().await;
    Mock::given(path("/items"))
        .respond_with(Alternating(AtomicU64::new(0)))
        .mount(&server)
        .await;
    Mock::given(path("/orders"))
        .respond_with(Alternating(AtomicU64::new(0)))
        .mount(&server)
        .await;
    Mock::given(path("/missing"))
        .respond_with(ResponseTemplate::new(404))
        .mount(&server)
        .await;
    let client = client(http_registry());
    let url = format!("{}/items", server.uri());
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
    let response = client.post(&url).body("{}").send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
    let missing = format!("{}/missing", server.uri());
    let response = client.get(&missing).send().await.unwrap();
    assert_eq!(response.status(), 404);
    assert_eq!(server.received_requests().await.unwrap().len(), 4);
    let orders = format!("{}/orders", server.uri());
    let response = (client.post(&orders).body("{}"))
        .with_extension(Idempotent(true))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(server.received_requests().await.unwrap().len(), 6);
}

/// docs/adapters.md "reqwest": with `attempt_count_header`, each attempt carries its number
/// (Envoy's `x-envoy-attempt-count`: the first 1, its retry 2), so the server can tell a retry;
/// without it, no attempt carries the header.
#[tokio::test]
async fn each_attempt_carries_its_number_when_asked() {
    let server = MockServer::start().await;
    once_then(
        &server,
        "/counted",
        ResponseTemplate::new(503),
        ResponseTemplate::new(200),
    )
    .await;
    let header = reqwest::header::HeaderName::from_static("x-attempt-count");
    let counting = ReboundMiddleware::new(http_registry()).attempt_count_header(header.clone());
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(counting)
        .build();
    let url = format!("{}/counted", server.uri());
    assert_eq!(client.get(&url).send().await.unwrap().status(), 200);
    let plain = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(ReboundMiddleware::new(http_registry()))
        .build();
    assert_eq!(plain.get(&url).send().await.unwrap().status(), 200);
    let seen: Vec<Option<String>> = (server.received_requests().await.unwrap().iter())
        .map(|r| {
            r.headers
                .get(&header)
                .map(|v| v.to_str().unwrap().to_owned())
        })
        .collect();
    assert_eq!(seen, [Some("1".into()), Some("2".into()), None]);
}

/// RFC 9110 §15.5.14 and urllib3's `respect_retry_after_header` (docs/decisions.md "A
/// `Retry-After` on a status outside the table"): a 413 is in no status table, but one that
/// carries `Retry-After: 1` says the condition is temporary: the GET is retried a second later
/// and its 200 handed back; a 413 without the header comes back at once.
#[tokio::test]
async fn a_413_with_retry_after_is_retried_when_the_server_says() {
    let server = MockServer::start().await;
    once_then(
        &server,
        "/upload",
        ResponseTemplate::new(413).insert_header("Retry-After", "1"),
        ResponseTemplate::new(200),
    )
    .await;
    Mock::given(path("/too-large"))
        .respond_with(ResponseTemplate::new(413))
        .mount(&server)
        .await;
    let client = client(http_registry());
    let started = Instant::now();
    let response = (client.get(format!("{}/upload", server.uri())))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(started.elapsed() >= Duration::from_secs(1));
    let response = (client.get(format!("{}/too-large", server.uri())))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

/// RFC 9110 §10.2.3: a plain HTTP request's 503 with `Retry-After: 1` is retried no sooner
/// than a second later; the middleware's status table replaces the default (a 502 it does not
/// list comes back at once); one naming a service that is not HTTP is refused, naming it.
#[tokio::test]
async fn a_plain_http_retry_waits_its_retry_after_and_the_table_is_the_middleware_s() {
    let server = MockServer::start().await;
    once_then(
        &server,
        "/busy",
        ResponseTemplate::new(503).insert_header("Retry-After", "1"),
        ResponseTemplate::new(200),
    )
    .await;
    Mock::given(path("/gateway"))
        .respond_with(ResponseTemplate::new(502))
        .mount(&server)
        .await;
    let started = Instant::now();
    let response = client(http_registry())
        .get(format!("{}/busy", server.uri()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    let only_503 = ReboundMiddleware::new(http_registry()).retry_statuses([503]);
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(only_503)
        .build();
    let response = client
        .get(format!("{}/gateway", server.uri()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 502);
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
    let error = client
        .get(format!("{}/gateway", server.uri()))
        .with_extension(Service::Kv)
        .send()
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("`kv` is not an HTTP service"), "{error}");
}

/// A middleware that serves one service retries requests that name none as requests to it
/// (reference 001 "Response Code Retry List", views 503), and a request that names another is
/// taken at its word (a management 503 is never retried); `kv` is refused when the middleware
/// is built.
#[tokio::test]
async fn a_middleware_serving_one_service_retries_requests_that_name_none() {
    let server = MockServer::start().await;
    Mock::given(path("/view"))
        .respond_with(Alternating(AtomicU64::new(0)))
        .mount(&server)
        .await;
    let inner = reqwest::Client::new();
    let views = ReboundMiddleware::new(registry())
        .service(Service::Views)
        .unwrap();
    let client = reqwest_middleware::ClientBuilder::new(inner)
        .with(views)
        .build();
    let url = format!("{}/view", server.uri());
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
    let response = (client.get(&url))
        .with_extension(Service::Management)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
    let refused = ReboundMiddleware::new(registry())
        .service(Service::Kv)
        .unwrap_err();
    assert!(
        refused.to_string().contains("`kv` is not an HTTP service"),
        "{refused}"
    );
}

/// Answers 503 and 200 in turn, whoever asks.
struct Alternating(AtomicU64);

impl Respond for Alternating {
    fn respond(&self, _: &wiremock::Request) -> ResponseTemplate {
        match self.0.fetch_add(1, Ordering::SeqCst) % 2 {
            0 => ResponseTemplate::new(503),
            _ => ResponseTemplate::new(200),
        }
    }
}

/// The policy file is replaced (best effort built from Rust, then from C)
/// while requests flow; every request ends with its 200, and the decision log shows both
/// versions deciding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_policy_file_decides_while_requests_flow() {
    let policy = WatchedPolicy::new("best_effort");
    let server = MockServer::start().await;
    Mock::given(path("/view"))
        .respond_with(Alternating(AtomicU64::new(0)))
        .mount(&server)
        .await;
    let client = client(Arc::clone(&policy.registry));
    let url = format!("{}/view", server.uri());
    let stop = Arc::new(AtomicBool::new(false));
    let flows: Vec<_> = (0..3)
        .map(|_| {
            let (client, url, stop) = (client.clone(), url.clone(), Arc::clone(&stop));
            tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    let response = client
                        .get(&url)
                        .with_extension(Service::Views)
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(response.status(), 200, "a request failed");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    tokio::task::block_in_place(|| policy.replace_with("c_best_effort"));
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::SeqCst);
    for flow in flows {
        flow.await.unwrap();
    }
    policy.assert_both_versions_decided();
}
