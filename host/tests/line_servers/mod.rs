//! Real servers on loopback that the tests start, speaking one line each way: a server reads a
//! line and answers what its script says for that line's number (from 0), or never answers
//! (a node that stalls). A client helper sends one line as one attempt of the executor.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rebound::executor::{Attempt, Failure};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// What a server answers the n-th line it reads (from 0): `None` to never answer.
type ScriptFn = dyn Fn(usize) -> Option<&'static str> + Send + Sync;

/// A running line server: where it listens, and the lines it read.
pub(crate) struct LineServer {
    pub(crate) addr: SocketAddr,
    lines: Arc<Read>,
}

/// The lines a server read: how many were counted (in the order its script answers them), and
/// what they said.
#[derive(Default)]
struct Read {
    count: AtomicUsize,
    said: Mutex<Vec<String>>,
}

impl LineServer {
    /// Starts a server answering as `script` says.
    pub(crate) async fn start(
        script: impl Fn(usize) -> Option<&'static str> + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let lines = Arc::new(Read::default());
        let (counted, script): (_, Arc<ScriptFn>) = (Arc::clone(&lines), Arc::new(script));
        tokio::spawn(async move {
            loop {
                let (socket, _) = listener.accept().await.unwrap();
                tokio::spawn(serve(socket, Arc::clone(&script), Arc::clone(&counted)));
            }
        });
        LineServer { addr, lines }
    }

    /// Lines read so far.
    pub(crate) fn lines(&self) -> usize {
        self.lines.count.load(Ordering::SeqCst)
    }

    /// What the lines read so far said.
    pub(crate) fn said(&self) -> Vec<String> {
        self.lines.said.lock().unwrap().clone()
    }
}

async fn serve(socket: TcpStream, script: Arc<ScriptFn>, lines: Arc<Read>) {
    let (read, mut write) = socket.into_split();
    let mut read = BufReader::new(read).lines();
    while let Ok(Some(line)) = read.next_line().await {
        lines.said.lock().unwrap().push(line);
        let Some(answer) = script(lines.count.fetch_add(1, Ordering::SeqCst)) else {
            return std::future::pending().await;
        };
        if write
            .write_all(format!("{answer}\n").as_bytes())
            .await
            .is_err()
        {
            return;
        }
    }
}

/// Sends a line to `addr` on a new connection and reads the answer back, calling `connected`
/// once connected (before the first byte is written). The error says whether the line may
/// have been sent.
pub(crate) async fn exchange(
    addr: SocketAddr,
    connected: impl FnOnce(),
) -> Result<String, (bool, std::io::Error)> {
    let socket = TcpStream::connect(addr).await.map_err(|e| (false, e))?;
    connected();
    let (read, mut write) = socket.into_split();
    write.write_all(b"request\n").await.map_err(|e| (true, e))?;
    let answer = BufReader::new(read).lines().next_line().await;
    Ok(answer.map_err(|e| (true, e))?.unwrap_or_default())
}

/// One attempt: a line [exchanged](exchange) with `addr`, marked dispatched once connected. A
/// refused connection is `SOCKET_NOT_AVAILABLE` (nothing sent), a lost one
/// `SOCKET_CLOSED_WHILE_IN_FLIGHT`.
pub(crate) async fn send_line(
    attempt: &Attempt,
    addr: SocketAddr,
) -> Result<String, Failure<String>> {
    (exchange(addr, || attempt.dispatched(addr.to_string())).await).map_err(|(sent, e)| {
        let reason = match sent {
            false => rebound::reasons::SOCKET_NOT_AVAILABLE,
            true => rebound::reasons::SOCKET_CLOSED_WHILE_IN_FLIGHT,
        };
        Failure::reason(e.to_string(), reason)
    })
}
