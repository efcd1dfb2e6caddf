//! A `tower::retry::Retry` stack whose retries Rebound decides: a client sending one line per
//! call to a server on loopback that answers `busy` to its first line and `ok` to the others.
//! `ReboundPolicy` reads each call's result (`busy` is an HTTP 503), and the orchestrator's
//! rules decide: the GET goes again after its backoff and gets `ok`; a POST, not idempotent and
//! already sent, is handed back `busy` (RFC 9110 §9.2.2). `cargo run -p
//! rebound-tower-retry-example` prints both; its test runs the same.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rebound::retry_policy::{AttemptOutcomes, ReboundPolicy};
use rebound::{Cause, HttpMethod, Orchestrator, Request, RequestType, RetryReason};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tower::retry::Retry;
use tower::{service_fn, ServiceExt};

/// One call: the method it stands for.
#[derive(Debug, Clone, Copy)]
struct Call(HttpMethod);

/// How Rebound reads the calls and their results.
#[derive(Debug, Clone)]
struct Lines;

impl AttemptOutcomes<Call, String, String> for Lines {
    fn request(&self, call: &Call) -> Request {
        Request::new(1, RequestType::Http, Duration::from_secs(10))
            .expect("a timeout above zero")
            .with_method(call.0)
    }
    fn failure(&self, result: &Result<String, String>) -> Option<Cause> {
        match result {
            Ok(_) => None,
            Err(busy) if busy == "busy" => Some(Cause::Reason(RetryReason::HttpStatus(503))),
            Err(_) => Some(Cause::Final),
        }
    }
    fn clone_request(&self, call: &Call) -> Option<Call> {
        Some(*call)
    }
}

/// A server answering `busy` to its first line and `ok` to the others; the lines it read.
async fn server() -> std::io::Result<(SocketAddr, Arc<AtomicUsize>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let (addr, lines) = (listener.local_addr()?, Arc::new(AtomicUsize::new(0)));
    let counted = Arc::clone(&lines);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (read, mut write) = socket.into_split();
            let mut read = BufReader::new(read).lines();
            while let Ok(Some(_)) = read.next_line().await {
                let answer = match counted.fetch_add(1, Ordering::SeqCst) {
                    0 => "busy\n",
                    _ => "ok\n",
                };
                if write.write_all(answer.as_bytes()).await.is_err() {
                    break;
                }
            }
        }
    });
    Ok((addr, lines))
}

/// One call: a line to `addr`, its answer `Ok` unless `busy`.
async fn call(addr: SocketAddr) -> Result<String, String> {
    let socket = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let (read, mut write) = socket.into_split();
    write
        .write_all(b"call\n")
        .await
        .map_err(|e| e.to_string())?;
    let answer = BufReader::new(read).lines().next_line().await;
    match answer.map_err(|e| e.to_string())?.unwrap_or_default() {
        busy if busy == "busy" => Err(busy),
        answer => Ok(answer),
    }
}

/// Makes a call with `method` to a fresh server: its result and the attempts the server saw.
async fn run(method: HttpMethod) -> std::io::Result<(Result<String, String>, usize)> {
    let (addr, lines) = server().await?;
    let policy = ReboundPolicy::new(Arc::new(Orchestrator::default()), Lines);
    let service = Retry::new(policy, service_fn(move |_: Call| call(addr)));
    let result = service.oneshot(Call(method)).await;
    Ok((result, lines.load(Ordering::SeqCst)))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    for method in [HttpMethod::Get, HttpMethod::Post] {
        let (result, attempts) = run(method).await?;
        println!("{method:?}: {result:?} after {attempts} attempt(s)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 9110 §9.2.2 through the stack: the GET is sent again and answered, the POST is not.
    #[tokio::test]
    async fn the_get_is_retried_and_the_post_is_not() {
        assert_eq!(run(HttpMethod::Get).await.unwrap(), (Ok("ok".into()), 2));
        assert_eq!(
            run(HttpMethod::Post).await.unwrap(),
            (Err("busy".into()), 1)
        );
    }
}
