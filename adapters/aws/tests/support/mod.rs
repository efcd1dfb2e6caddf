//! A real AWS-compatible server for the tests (moto's server, which
//! `scripts/test-services.sh` installs into `.tools/moto`), behind a loopback proxy that
//! answers chosen operations with the faults a test queues and forwards everything else.

use std::collections::VecDeque;
use std::net::{SocketAddr, TcpListener as StdListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// moto's server on a port of its own, stopped when dropped.
pub(crate) struct Moto {
    child: Child,
    pub(crate) addr: SocketAddr,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn moto_server() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = root.join(".tools/moto/bin/moto_server");
    assert!(
        path.exists(),
        "{} is missing: run scripts/test-services.sh, which installs moto's server",
        path.display()
    );
    path
}

impl Moto {
    /// Starts moto's server and waits (at most 60 s) until it accepts connections.
    pub(crate) fn start() -> Moto {
        let port = StdListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(moto_server())
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server starts");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let moto = Moto { child, addr };
        let until = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(addr).is_err() {
            assert!(
                Instant::now() < until,
                "moto_server did not listen on {addr} within 60 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        moto
    }
}

/// A fault the proxy answers an operation's attempt with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Fault {
    /// DynamoDB's throttling error (HTTP 400, `ProvisionedThroughputExceededException`), with an
    /// `x-amz-retry-after` in milliseconds when set.
    Throttled(Option<u64>),
    /// HTTP 503 with no error code: transient for the SDK.
    Unavailable,
}

impl Fault {
    fn response(&self) -> Response<Full<Bytes>> {
        let (status, body) = match self {
            Fault::Throttled(_) => (
                400,
                r#"{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"injected"}"#,
            ),
            Fault::Unavailable => (503, r#"{"message":"injected"}"#),
        };
        let mut response = Response::builder()
            .status(status)
            .header("content-type", "application/x-amz-json-1.0");
        if let Fault::Throttled(Some(ms)) = self {
            response = response.header("x-amz-retry-after", ms.to_string());
        }
        response
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap()
    }
}

/// What the proxy does and saw.
#[derive(Default)]
struct Script {
    /// Faults to answer with, each for the next attempt of its operation.
    faults: VecDeque<(String, Fault)>,
    /// Every attempt's operation, in order.
    seen: Vec<String>,
}

/// The proxy in front of moto.
#[derive(Clone)]
pub(crate) struct Proxy {
    pub(crate) url: String,
    script: Arc<Mutex<Script>>,
}

impl Proxy {
    /// A proxy on loopback forwarding to `moto`.
    pub(crate) async fn start(moto: &Moto) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let script = Arc::new(Mutex::new(Script::default()));
        let upstream = format!("http://{}", moto.addr);
        let client = reqwest::Client::new();
        let shared = Arc::clone(&script);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (script, upstream, client) =
                    (Arc::clone(&shared), upstream.clone(), client.clone());
                tokio::spawn(async move {
                    let serve = service_fn(move |req| {
                        handle(req, Arc::clone(&script), upstream.clone(), client.clone())
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), serve)
                        .await;
                });
            }
        });
        Proxy { url, script }
    }

    /// Answers the next attempts of `operation` (`PutItem`) with `faults`, in order.
    pub(crate) fn inject(&self, operation: &str, faults: impl IntoIterator<Item = Fault>) {
        let mut script = self.script.lock().unwrap();
        script
            .faults
            .extend(faults.into_iter().map(|f| (operation.to_owned(), f)));
    }

    /// How many attempts of `operation` reached the proxy.
    pub(crate) fn attempts(&self, operation: &str) -> usize {
        self.script
            .lock()
            .unwrap()
            .seen
            .iter()
            .filter(|op| *op == operation)
            .count()
    }
}

async fn handle(
    req: Request<Incoming>,
    script: Arc<Mutex<Script>>,
    upstream: String,
    client: reqwest::Client,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let operation = (req.headers().get("x-amz-target"))
        .and_then(|v| v.to_str().ok())
        .and_then(|target| target.rsplit('.').next())
        .unwrap_or("")
        .to_owned();
    let fault = {
        let mut script = script.lock().unwrap();
        script.seen.push(operation.clone());
        match script.faults.iter().position(|(op, _)| *op == operation) {
            Some(at) => script.faults.remove(at).map(|(_, fault)| fault),
            None => None,
        }
    };
    if let Some(fault) = fault {
        return Ok(fault.response());
    }
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let mut forward = client.request(parts.method, format!("{upstream}{}", parts.uri));
    for (name, value) in &parts.headers {
        if name != "host" {
            forward = forward.header(name, value);
        }
    }
    let answer = forward.body(body).send().await.expect("moto answers");
    let mut response = Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if name != "content-length" && name != "transfer-encoding" {
            response = response.header(name, value);
        }
    }
    let body = answer.bytes().await.unwrap_or_default();
    Ok(response.body(Full::new(body)).unwrap())
}
