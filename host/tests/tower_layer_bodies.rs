//! docs/executor.md "Streamed bodies in a tower stack": `KeepBodyLayer` in front of the retry
//! layer reads each request's streamed body first. A body within the replay limit is kept
//! whole, so a request the guard lets go again (a PUT, idempotent by RFC 9110 §9.2.2) is sent
//! again with every byte; one past the limit is sent once. gRFC A6 "When Retries are Valid"
//! calls a call whose outgoing message overflowed the buffer committed: its failure is
//! decided so, never retried, and the decision log has its line. Against a real server on
//! loopback that answers `busy` (an HTTP 503) to the first attempt, then `ok`.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use rebound::config::RegistryConfig;
use rebound::decision_log::{DecisionLog, DecisionLogConfig};
use rebound::executor::{Executor, Failure};
use rebound::layer::{Classifier, RetryLayer};
use rebound::registry::PolicyRegistry;
use rebound::replay_body::{KeepBodyLayer, ReplayBody};
use rebound::{HttpMethod, Request, RequestType, RetryReason};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tower::{service_fn, ServiceBuilder, ServiceExt};

use crate::common::LogBuffer;
use crate::line_servers::LineServer;

/// The lines of a body, each one of its frames.
const PARTS: [&str; 3] = ["part-0", "part-1", "part-2"];

type Streamed =
    StreamBody<futures::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, std::io::Error>>>>;

/// A streamed body of `PARTS`, a line each.
fn streamed() -> Streamed {
    let frames: Vec<Result<Frame<Bytes>, std::io::Error>> = (PARTS.iter())
        .map(|part| Ok(Frame::data(Bytes::from(format!("{part}\n")))))
        .collect();
    StreamBody::new(futures::stream::iter(frames))
}

/// The `http` built-in, its decisions logged into `log`.
fn registry(log: &LogBuffer) -> Arc<PolicyRegistry> {
    let text = "default_policy = \"web\"\ncache_dir = false\n[watch]\nenabled = false\n\
                [policies.web]\nbuiltin = \"http\"\nparams = { initial_ms = 1, max_ms = 5 }\n";
    let config = RegistryConfig::parse(text, Path::new("rebound.toml"), Path::new(".")).unwrap();
    let registry = Arc::new(PolicyRegistry::new(config).unwrap());
    let log = DecisionLog::to_writer(&DecisionLogConfig::default(), log.clone());
    registry.set_decision_log(Some(log));
    registry
}

/// Each request a PUT; `busy` a 503; a request whose body is past the replay limit goes once.
#[derive(Clone)]
struct Puts;

impl Classifier<http::Request<ReplayBody<Streamed>>, String> for Puts {
    fn request(&self, _: &http::Request<ReplayBody<Streamed>>) -> Request {
        Request::new(1, RequestType::Http, Duration::from_secs(30))
            .unwrap()
            .with_method(HttpMethod::Put)
    }
    fn failure(&self, error: String) -> Failure<String> {
        Failure::reason(error, RetryReason::HttpStatus(503))
    }
    fn can_send_again(&self, req: &http::Request<ReplayBody<Streamed>>) -> bool {
        req.body().can_send_again()
    }
}

/// Sends `req`'s body to `addr`, a line per frame, and reads the answer to its first line.
async fn send(
    addr: SocketAddr,
    req: http::Request<ReplayBody<Streamed>>,
) -> Result<String, String> {
    let mut socket = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let mut body = req.into_body();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| e.to_string())?;
        let data = frame.into_data().unwrap_or_default();
        socket.write_all(&data).await.map_err(|e| e.to_string())?;
    }
    let mut answer = String::new();
    BufReader::new(socket)
        .read_line(&mut answer)
        .await
        .map_err(|e| e.to_string())?;
    match answer.trim() {
        "busy" => Err("busy".into()),
        answer => Ok(answer.to_owned()),
    }
}

/// A PUT of `streamed()` through `KeepBodyLayer` (keeping `limit` bytes) and the retry layer,
/// to a server answering `busy` to the first attempt's lines: the answer, the lines the server
/// read and the decisions logged.
async fn put(limit: usize) -> (Result<String, String>, Vec<String>, Vec<serde_json::Value>) {
    let server = LineServer::start(|n| Some(if n < PARTS.len() { "busy" } else { "ok" })).await;
    let log = LogBuffer::default();
    let registry = registry(&log);
    let addr = server.addr;
    let service = ServiceBuilder::new()
        .layer(KeepBodyLayer::new().max_replay_bytes(limit).unwrap())
        .layer(RetryLayer::new(Executor::new(Arc::clone(&registry)), Puts))
        .service(service_fn(move |req| send(addr, req)));
    let answer = service
        .oneshot(http::Request::put("/items/1").body(streamed()).unwrap())
        .await;
    registry.set_decision_log(None);
    let logged = (log.text().lines())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (answer.map_err(|e| e.to_string()), server.said(), logged)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_within_the_limit_is_sent_again_whole() {
    // The body is 21 bytes.
    let (answer, said, logged) = put(21).await;
    assert_eq!(answer.as_deref(), Ok("ok"));
    assert_eq!(said, [PARTS, PARTS].concat());
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0]["answer"]["decision"], "retry", "{logged:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_past_the_limit_is_sent_once_and_its_failure_logged_committed() {
    let (answer, said, logged) = put(20).await;
    let error = answer.unwrap_err();
    assert!(error.contains("COMMITTED"), "{error}");
    assert_eq!(said, PARTS);
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0]["input"]["progress"], "committed", "{logged:?}");
    assert_eq!(logged[0]["answer"]["decision"], "cancel", "{logged:?}");
}

/// Bad input: a replay limit of zero is refused, naming the setting.
#[test]
fn a_replay_limit_of_zero_is_refused() {
    let error = KeepBodyLayer::new().max_replay_bytes(0).unwrap_err();
    assert!(error.to_string().contains("max_replay_bytes"), "{error}");
}
