//! The accept loop of `rebound serve`: at most `max_connections` connections at once (one
//! past it is answered 503 at once, unread, and closed so that the answer is delivered;
//! counted and logged at most once a second), and
//! the drain on SIGTERM/SIGINT: take the connections the kernel had already accepted (closing
//! the socket would reset them), stop accepting, let every connection answer what its client
//! sent, then exit — when all are done, when the drain timeout passes, or at a second signal.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

use super::connection;
use super::limits::Limits;
use super::linger;
use super::metrics::ConnectionMetrics;

/// What a connection past the cap is told before it is closed.
const REFUSAL: &str =
    r#"{"error":{"field":"","message":"too many connections open; try again in a moment"}}"#;

/// Refused connections lingering at once (each holds its descriptor up to
/// [`linger::LINGER_TIME`], within the open-file reserve); past it, a refused socket is closed
/// right after its answer, which resets a connection whose client sends more after that.
pub const REFUSING_AT_ONCE: usize = 32;

/// The pause after a failed accept (the open-file limit, say), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(20);

/// How a drain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drained {
    /// Every connection answered what it had received.
    AllAnswered,
    /// The drain timeout passed first.
    TimedOut,
    /// A second stop signal came first.
    SecondSignal,
}

/// What an accepted connection needs: the cap's slots, the router, the limits, the drain
/// signal and the metrics.
struct Accepting {
    slots: Arc<Semaphore>,
    refusing: Arc<Semaphore>,
    router: Router,
    limits: Arc<Limits>,
    drain: watch::Receiver<bool>,
    metrics: ConnectionMetrics,
    refused: AtomicU64,
}

impl Accepting {
    /// Takes the connections the kernel completed before the stop, waiting in the socket's
    /// backlog (closing the socket would reset them): one that has sent a request is served,
    /// one that has sent nothing yet is told 503 (the server is going away). How many were
    /// queued, and how many were told 503.
    async fn take_queued(
        &self,
        listener: &TcpListener,
        connections: &mut JoinSet<()>,
    ) -> (u64, u64) {
        let (mut queued, mut told_503) = (0_u64, 0_u64);
        while let Ok(Ok((stream, peer))) =
            tokio::time::timeout(Duration::ZERO, listener.accept()).await
        {
            queued += 1;
            let mut byte = [0u8; 1];
            let sent = tokio::time::timeout(Duration::ZERO, stream.peek(&mut byte)).await;
            if matches!(sent, Ok(Ok(n)) if n > 0) {
                self.take(connections, stream, peer);
            } else {
                refuse(stream, &self.refusing);
                self.metrics.refused();
                told_503 += 1;
            }
        }
        (queued, told_503)
    }

    /// Serves `stream` on a task of `connections`, or refuses it with a 503 past the cap.
    fn take(&self, connections: &mut JoinSet<()>, stream: TcpStream, peer: std::net::SocketAddr) {
        match Arc::clone(&self.slots).try_acquire_owned() {
            Ok(slot) => {
                // Answers are small and wanted at once.
                let _ = stream.set_nodelay(true);
                let (router, limits, drain, metrics) = (
                    self.router.clone(),
                    Arc::clone(&self.limits),
                    self.drain.clone(),
                    self.metrics.clone(),
                );
                metrics.opened();
                connections.spawn(async move {
                    connection::serve(stream, peer, router, limits, drain, metrics.clone()).await;
                    metrics.ended();
                    drop(slot);
                });
            }
            Err(_) => {
                refuse(stream, &self.refusing);
                self.metrics.refused();
                let total = self.refused.fetch_add(1, Ordering::Relaxed) + 1;
                if let Some(left_out) = self.metrics.line_allowed() {
                    tracing::warn!(%peer, max_connections = self.limits.max_connections,
                        refused_total = total, left_out,
                        "connection refused: too many connections open");
                }
            }
        }
    }
}

/// Serves `router` on `listener` within `limits` until `stop` resolves, then drains; `stop`
/// resolving again during the drain (a second signal) ends it at once. Says how the drain
/// ended, and what is left of the drain timeout.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    metrics: ConnectionMetrics,
    mut stop: impl FnMut() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
) -> (Drained, Duration) {
    let limits = Arc::new(limits);
    let (draining, drain) = watch::channel(false);
    let accepting = Accepting {
        slots: Arc::new(Semaphore::new(limits.max_connections as usize)),
        refusing: Arc::new(Semaphore::new(REFUSING_AT_ONCE)),
        router,
        limits: Arc::clone(&limits),
        drain,
        metrics: metrics.clone(),
        refused: AtomicU64::new(0),
    };
    let mut connections = JoinSet::new();
    let first_stop = stop();
    tokio::pin!(first_stop);
    loop {
        tokio::select! {
            // A stop signal first: once one came, nothing more is taken by this loop.
            biased;
            () = &mut first_stop => break,
            Some(_) = connections.join_next() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => accepting.take(&mut connections, stream, peer),
                Err(error) => {
                    if let Some(left_out) = metrics.line_allowed() {
                        tracing::warn!(%error, left_out, "cannot accept a connection");
                    }
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }
    let stopped = std::time::Instant::now();
    let answers_before = metrics.answers();
    let (queued, told_503) = accepting.take_queued(&listener, &mut connections).await;
    drop(listener);
    let open = connections.len();
    tracing::info!(
        open,
        queued,
        told_503,
        drain_timeout_ms = limits.drain_timeout_ms,
        "stopped accepting (the connections already queued taken); answering the requests received"
    );
    let _ = draining.send(true);
    let all_done = async { while connections.join_next().await.is_some() {} };
    // How the drain ended; the requests answered during it are counted on every connection.
    let ended = tokio::select! {
        () = all_done => Drained::AllAnswered,
        () = tokio::time::sleep(limits.drain_timeout()) => Drained::TimedOut,
        () = stop() => Drained::SecondSignal,
    };
    log_drain(ended, metrics.answers() - answers_before, connections.len());
    connections.abort_all();
    (
        ended,
        limits.drain_timeout().saturating_sub(stopped.elapsed()),
    )
}

/// Says how the drain `ended`, with the requests `answered` during it and the connections
/// still open (`cut`).
fn log_drain(ended: Drained, answered: u64, cut: usize) {
    match ended {
        Drained::AllAnswered => {
            tracing::info!(answered, "stopped: every request received was answered");
        }
        Drained::TimedOut => {
            tracing::warn!(
                answered,
                cut,
                "drain timeout: closing the connections still open"
            );
        }
        Drained::SecondSignal => {
            tracing::warn!(answered, cut, "second signal: closing every connection now");
        }
    }
}

/// Tells a connection past the cap so and closes it: what its client has sent is read and
/// discarded, the answer written, and the close made off the accept loop, lingering so that the
/// answer is delivered, while fewer than [`REFUSING_AT_ONCE`] are; else at once.
fn refuse(stream: TcpStream, refusing: &Arc<Semaphore>) {
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\nretry-after: 1\r\ncontent-length: {}\r\n\r\n{REFUSAL}",
        REFUSAL.len()
    );
    // What the client has sent already is read, so that closing does not reset the connection;
    // the answer is smaller than any socket's send buffer: one write takes it whole.
    let mut unread = [0u8; 4096];
    let mut left = linger::LINGER_BYTES;
    while left > 0 {
        match stream.try_read(&mut unread) {
            Ok(n) if n > 0 => left = left.saturating_sub(n),
            _ => break,
        }
    }
    let _ = stream.try_write(answer.as_bytes());
    if let Ok(permit) = Arc::clone(refusing).try_acquire_owned() {
        tokio::spawn(async move {
            linger::close(stream).await;
            drop(permit);
        });
    }
}
