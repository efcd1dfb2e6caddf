//! Closing a connection so that its last answer reaches the client. Closing a socket that
//! still holds unread bytes from the client makes the kernel send a reset, and a reset can
//! destroy an answer the client has not read yet; so the server first ends its side (a FIN
//! after the answer), then reads and discards what the client still sends, for a bounded time
//! and a bounded number of bytes, until the client closes too.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest a closing connection waits for its client to close.
pub const LINGER_TIME: Duration = Duration::from_millis(500);

/// The most bytes a closing connection reads and discards.
pub const LINGER_BYTES: usize = 64 * 1024;

/// Ends the server's side of `stream` and reads what the client still sends, within
/// [`LINGER_TIME`] and [`LINGER_BYTES`], then closes it.
pub async fn close(mut stream: TcpStream) {
    let _ = tokio::time::timeout(LINGER_TIME, async {
        let _ = stream.shutdown().await;
        let mut buffer = [0u8; 4096];
        let mut left = LINGER_BYTES;
        while left > 0 {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    })
    .await;
}

/// [`close`] for a second handle on a connection's socket, once the first (hyper's) is done.
pub async fn close_handle(socket: std::net::TcpStream) {
    if let Ok(stream) = TcpStream::from_std(socket) {
        close(stream).await;
    }
}
