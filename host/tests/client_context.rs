//! docs/adapters.md "Client context": the executor and the tower layer hand a policy the client
//! context the application puts on its `Request` (the layer's `Classifier` describes each
//! call), so the idempotency-key rule of the `context_gate` guest (retry only a request whose
//! context holds `idempotency-key`) decides in-process as `rebound eval` and `serve` decide it
//! (`rebound-cli` `serve::the_client_context_rule_decides_as_in_the_adapters`), against a real server on
//! loopback answering `busy` (an HTTP 503) once, then `ok`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rebound::config::RegistryConfig;
use rebound::executor::{ExecuteError, Executor, Failure};
use rebound::layer::{Classifier, RetryLayer};
use rebound::registry::PolicyRegistry;
use rebound::{HttpMethod, Request, RequestType, RetryReason};
use tower::{service_fn, Layer, ServiceExt};

use crate::line_servers::{exchange, send_line, LineServer};
use crate::wasm_support::guest;

fn context_gate() -> Arc<PolicyRegistry> {
    let text = format!(
        "default_policy = \"p\"\ncache_dir = false\n[watch]\nenabled = false\n[policies.p]\ncomponent = {:?}\n",
        guest("context_gate").display().to_string()
    );
    let config = RegistryConfig::parse(&text, "rebound.toml".as_ref(), ".".as_ref()).unwrap();
    Arc::new(PolicyRegistry::new(config).unwrap())
}

/// A GET, with `key` as its idempotency key if given.
fn get(key: Option<&str>) -> Request {
    let request = Request::new(1, RequestType::Http, Duration::from_secs(30))
        .unwrap()
        .with_method(HttpMethod::Get);
    match key {
        Some(key) => request.with_client_context("idempotency-key", key),
        None => request,
    }
}

/// A server answering `busy` to its first line and `ok` to the others.
async fn busy_once() -> LineServer {
    LineServer::start(|n| Some(if n == 0 { "busy" } else { "ok" })).await
}

/// One attempt: `busy` is a 503, anything else the answer.
async fn attempt(
    attempt: rebound::executor::Attempt,
    addr: SocketAddr,
) -> Result<String, Failure<String>> {
    match send_line(&attempt, addr).await? {
        busy if busy == "busy" => Err(Failure::reason(busy, RetryReason::HttpStatus(503))),
        answer => Ok(answer),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_executor_hands_the_request_s_context_to_the_policy() {
    let executor = Executor::new(context_gate());
    for (key, answered, lines) in [(Some("k-17"), true, 2), (None, false, 1)] {
        let server = busy_once().await;
        let addr = server.addr;
        let result = executor.run(get(key), |a| attempt(a, addr)).await;
        assert_eq!(result.is_ok(), answered, "{key:?}: {result:?}");
        assert_eq!(server.lines(), lines, "{key:?}");
    }
}

/// A call of the layer's service: its idempotency key, if any.
#[derive(Clone)]
struct Call(Option<&'static str>);

/// Why the layer's service failed: the server was busy, or the connection failed.
#[derive(Debug)]
enum LineError {
    Busy,
    Connection,
}

#[derive(Clone)]
struct Describe;

impl Classifier<Call, LineError> for Describe {
    fn request(&self, call: &Call) -> Request {
        get(call.0)
    }
    fn failure(&self, error: LineError) -> Failure<LineError> {
        match error {
            LineError::Busy => Failure::reason(error, RetryReason::HttpStatus(503)),
            LineError::Connection => Failure::final_error(error),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tower_layer_hands_the_described_context_to_the_policy() {
    let layer = RetryLayer::new(Executor::new(context_gate()), Describe);
    for (key, answered, lines) in [(Some("k-17"), true, 2), (None, false, 1)] {
        let server = busy_once().await;
        let addr = server.addr;
        let service = layer.layer(service_fn(move |_: Call| async move {
            match exchange(addr, || {}).await {
                Ok(busy) if busy == "busy" => Err(LineError::Busy),
                Ok(answer) => Ok(answer),
                Err(_) => Err(LineError::Connection),
            }
        }));
        let result: Result<String, ExecuteError<LineError>> = service.oneshot(Call(key)).await;
        assert_eq!(result.is_ok(), answered, "{key:?}: {result:?}");
        assert_eq!(server.lines(), lines, "{key:?}");
    }
}
