//! One client connection of `rebound serve`, from accept to close: HTTP/1.1 through hyper,
//! watched so that it is closed when it idles past the idle timeout or takes longer than the
//! header timeout to send a request's headers, and drained at shutdown without losing a
//! request the client has already sent, pipelined ones included, and closed so that its last
//! answer is delivered (`linger`); hyper's own answer to a head it cannot parse goes out
//! as the API's JSON error object.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{watch, Notify};
use tower::ServiceExt;

use super::limits::Limits;
use super::linger;
use super::metrics::ConnectionMetrics;
use super::parse_error;

/// How often a draining connection looks again for a request being received.
const DRAIN_POLL: Duration = Duration::from_millis(5);

/// What a connection is doing, kept by its I/O and its requests and read by its watcher.
struct Activity {
    base: Instant,
    /// Requests started and not yet answered.
    in_flight: AtomicUsize,
    /// Answers the routes have made (each then written by hyper).
    answers: AtomicU64,
    /// Bytes arrived that no request has started from yet: a request head being received.
    receiving: AtomicBool,
    /// When the head being received began (ns since `base`).
    head_since: AtomicU64,
    /// When the connection last became idle (ns since `base`).
    idle_since: AtomicU64,
    /// hyper asked the socket for bytes, found none, and has started no request since: with
    /// no request in flight, its buffer holds no whole request (it reads only to complete one).
    exhausted: AtomicBool,
    /// Wakes the watcher when a deadline starts: a head begins to arrive, an answer is ready.
    changed: Notify,
}

impl Activity {
    fn new() -> Self {
        Activity {
            base: Instant::now(),
            in_flight: AtomicUsize::new(0),
            answers: AtomicU64::new(0),
            receiving: AtomicBool::new(false),
            head_since: AtomicU64::new(0),
            idle_since: AtomicU64::new(0),
            exhausted: AtomicBool::new(false),
            changed: Notify::new(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn at(&self, nanos: u64) -> Instant {
        self.base + Duration::from_nanos(nanos)
    }

    /// Bytes arrived.
    fn received(&self) {
        self.exhausted.store(false, Ordering::Release);
        if self.in_flight.load(Ordering::Acquire) == 0
            && !self.receiving.swap(true, Ordering::AcqRel)
        {
            self.head_since.store(self.now(), Ordering::Release);
            self.changed.notify_one();
        }
    }

    /// A request's head was read: it is in flight until its answer is ready.
    fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.receiving.store(false, Ordering::Release);
        self.exhausted.store(false, Ordering::Release);
        InFlight(Arc::clone(self))
    }

    /// hyper found no bytes to read.
    fn found_none(&self) {
        if self.in_flight.load(Ordering::Acquire) == 0 {
            self.exhausted.store(true, Ordering::Release);
        }
    }

    /// Whether everything the client has sent is answered: no request in flight, none being
    /// received, none left in hyper's buffer, and no byte unread on the socket.
    fn all_answered(&self, socket: &std::net::TcpStream) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
            && !self.receiving.load(Ordering::Acquire)
            && self.exhausted.load(Ordering::Acquire)
            && !has_unread_bytes(socket)
    }

    /// When the connection is due to be closed for waiting on its client, and why: `None`
    /// while a request is in flight.
    fn deadline(&self, limits: &Limits) -> Option<(Instant, &'static str)> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        if self.receiving.load(Ordering::Acquire) {
            let since = self.at(self.head_since.load(Ordering::Acquire));
            return Some((since + limits.header_timeout(), "header_timeout"));
        }
        let since = self.at(self.idle_since.load(Ordering::Acquire));
        Some((since + limits.idle_timeout(), "idle_timeout"))
    }
}

/// A request in flight; its drop marks the answer ready.
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.answers.fetch_add(1, Ordering::AcqRel);
        self.0.idle_since.store(self.0.now(), Ordering::Release);
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.0.changed.notify_one();
    }
}

/// The socket, telling the connection's [`Activity`] when bytes arrive, and replacing an answer
/// of hyper's own (a head it could not parse) with the JSON error object.
struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
    /// Final response heads written for the routes' answers.
    heads: u64,
    /// hyper's own answer being replaced: the replacement and how much of it is written.
    replacing: Option<(Vec<u8>, usize)>,
}

impl Watched {
    fn new(stream: TcpStream, activity: Arc<Activity>) -> Self {
        Watched {
            stream,
            activity,
            heads: 0,
            replacing: None,
        }
    }

    /// Writes what is left of the replacement.
    fn poll_replacement(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some((bytes, written)) = &mut self.replacing {
            while *written < bytes.len() {
                let n = ready!(Pin::new(&mut self.stream).poll_write(cx, &bytes[*written..]))?;
                if n == 0 {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                *written += n;
            }
        }
        Poll::Ready(Ok(()))
    }

    /// A write hyper makes (`first`, its first bytes; `len` in all) if it is, or follows, an
    /// answer of hyper's own: a final head written when every route's answer already has its
    /// head. `None`: write it as it is.
    fn poll_replaced(
        &mut self,
        cx: &mut Context<'_>,
        first: &[u8],
        len: usize,
    ) -> Option<Poll<io::Result<usize>>> {
        if self.replacing.is_none() {
            let status = parse_error::final_head_status(first)?;
            if self.heads < self.activity.answers.load(Ordering::Acquire) {
                return None;
            }
            tracing::debug!(
                status,
                "a request head hyper could not parse: answered with the error object"
            );
            self.replacing = Some((parse_error::json_answer(status), 0));
        }
        Some(self.poll_replacement(cx).map_ok(|()| len))
    }

    /// Counts a route's answer whose head `first` begins, once written.
    fn count_head(&mut self, first: &[u8], polled: &Poll<io::Result<usize>>) {
        if matches!(polled, Poll::Ready(Ok(n)) if *n > 0)
            && parse_error::final_head_status(first).is_some()
        {
            self.heads += 1;
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        match polled {
            Poll::Ready(Ok(())) if buf.filled().len() > before => self.activity.received(),
            Poll::Pending => self.activity.found_none(),
            _ => {}
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(polled) = this.poll_replaced(cx, buf, buf.len()) {
            return polled;
        }
        let polled = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.count_head(buf, &polled);
        polled
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_replacement(cx))?;
        Pin::new(&mut this.stream).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_replacement(cx))?;
        Pin::new(&mut this.stream).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let first: &[u8] = bufs.iter().find(|b| !b.is_empty()).map_or(&[], |b| b);
        let len = bufs.iter().map(|b| b.len()).sum();
        if let Some(polled) = this.poll_replaced(cx, first, len) {
            return polled;
        }
        let polled = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.count_head(first, &polled);
        polled
    }
    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// Whether the client has sent bytes nobody has read yet.
fn has_unread_bytes(socket: &std::net::TcpStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(socket.peek(&mut byte), Ok(n) if n > 0)
}

/// Serves `stream` from `peer` with `router` until the client or a timeout closes it, or,
/// once `shutdown` turns true, until the requests the client has sent are answered.
pub async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    limits: Arc<Limits>,
    mut shutdown: watch::Receiver<bool>,
    metrics: ConnectionMetrics,
) {
    // A second handle on the socket, to see whether a request is arriving when the drain
    // begins (the first belongs to hyper).
    let peeker = match std::os::fd::AsFd::as_fd(&stream).try_clone_to_owned() {
        Ok(fd) => std::net::TcpStream::from(fd),
        Err(error) => {
            if let Some(left_out) = metrics.line_allowed() {
                tracing::warn!(%peer, %error, left_out, "cannot watch a connection; closing it");
            }
            return;
        }
    };
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched::new(stream, Arc::clone(&activity)));
    let requests = Arc::clone(&activity);
    let counted = metrics.clone();
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        let in_flight = requests.begin();
        let (router, counted) = (router.clone(), counted.clone());
        async move {
            let answer = router.oneshot(request).await;
            drop(in_flight);
            counted.answered();
            answer
        }
    });
    let mut connection = Box::pin(
        hyper::server::conn::http1::Builder::new()
            .keep_alive(true)
            .serve_connection(io, service),
    );
    let mut draining = *shutdown.borrow();
    let mut closing = false;
    loop {
        let wake = if draining && !closing {
            Some(Instant::now() + DRAIN_POLL)
        } else {
            activity.deadline(&limits).map(|(at, _)| at)
        };
        tokio::select! {
            // The connection first: an answer ready is written before the checks below.
            biased;
            result = connection.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%peer, %error, "connection ended with an error");
                }
                break;
            }
            _ = shutdown.changed(), if !draining => draining = true,
            () = activity.changed.notified() => {}
            () = sleep_until(wake) => {}
        }
        if let Some((at, why)) = activity.deadline(&limits) {
            if Instant::now() >= at {
                tracing::debug!(%peer, why, "closing a connection that waited too long on its client");
                metrics.closed(why);
                break;
            }
        }
        if draining && !closing && activity.all_answered(&peeker) {
            // hyper closes an idle connection at once; one still being written, after it.
            connection.as_mut().graceful_shutdown();
            closing = true;
        }
    }
    drop(connection);
    linger::close_handle(peeker).await;
}

/// Sleeps until `at`, or for good.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
